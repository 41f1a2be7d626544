"""hmm-em's ``estimate_memory`` against the ``tracemalloc`` peak of fits over a grid (issue 39:
the estimate's terms fitted and checked).

    python benchmarks/hmm_em_memory.py --out benchmarks/results/hmm_em_memory.json

Random strings (a fixed seed) of 2, 10 and 40 letters: 50 strings of 0-2 letters, 400 of 0-5
and 3,000 of 0-19; K = 2, 5, 20, 50, 100, 200, 300 states; sentences, and the 3,000 strings as
one sequence at K <= 100 (its lattices are ``[T, K]``). Each fit runs 3 EM iterations of one
restart, once to warm hmmlearn and numpy up and once traced (``tests/conftest.py``'s
``traced_peak``). Written: each fit's peak and the estimate, the ratio, and the non-negative
least-squares fit (relative error) of the peak to ``1, strings, tokens, L K, K^2, K S`` over
the sentences (``L`` the longest string's tokens).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import git_commit  # noqa: E402  (this folder's module)


def main(argv=None) -> int:
    from scipy.optimize import nnls

    from bayesfa.corpus import Corpus
    from bayesfa.methods import get_method
    from conftest import traced_peak

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    method = get_method("hmm-em")
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    rng = np.random.default_rng(0)
    rows = []
    for letters in (2, 10, 40):
        for n, longest in ((50, 3), (400, 6), (3000, 20)):
            train = Corpus.from_strings([rng.integers(0, letters, size=rng.integers(0, longest)).tolist()
                                         for _ in range(n)], letters)
            for k in (2, 5, 20, 50, 100, 200, 300):
                for sequence in (False, True):
                    if sequence and (n != 3000 or k > 100):
                        continue
                    opts = vars(parser.parse_args(["--states", str(k), "--n-iter", "3", "--restarts", "1",
                                                   *(["--sequence"] if sequence else [])]))
                    method.fit(train, opts, 0, False)
                    _, peak = traced_peak(method.fit, train, opts, 0, False)
                    est = method.estimate_memory(train, opts)
                    lmax = train.n_tokens if sequence else int(np.diff(train.offsets).max())
                    rows.append({"letters": letters, "strings": n, "tokens": int(train.n_tokens),
                                 "longest": lmax, "states": k, "sequence": sequence,
                                 "peak": int(peak), "estimate": int(est), "ratio": est / peak})
                    print(rows[-1], flush=True)
    sent = [r for r in rows if not r["sequence"]]
    a = np.array([[1, r["strings"], r["tokens"], r["longest"] * r["states"], r["states"] ** 2,
                   r["states"] * (r["letters"] + 1)] for r in sent], dtype=float)
    y = np.array([r["peak"] for r in sent], dtype=float)
    coef, _ = nnls(a / y[:, None], np.ones_like(y))
    ratios = [r["ratio"] for r in rows]
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    out = {"command": f"python benchmarks/{Path(__file__).name} {shown}", "commit": git_commit(),
           "fit_terms": ["1", "strings", "tokens", "longest * K", "K^2", "K * S"],
           "fit_bytes": [float(c) for c in coef], "ratio_min": min(ratios), "ratio_max": max(ratios),
           "rows": rows}
    tmp = Path(args.out).with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    os.replace(tmp, args.out)
    print(json.dumps({k: out[k] for k in ("fit_bytes", "ratio_min", "ratio_max")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
