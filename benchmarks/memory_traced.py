"""A method's ``estimate_memory`` against the ``tracemalloc`` peak of its fits over a grid
(issue 39: hmm-em's, HPYP's and CVB's estimates were under the peaks they promise to cover).

    python benchmarks/memory_traced.py --method hmm-em --out benchmarks/results/memory-traced/hmm-em.json

Random strings (a fixed seed) over a grid of alphabets, numbers of strings and the method's
size (``--method``): hmm-em K = 2-300 states on 2, 10 and 40 letters, 50-3,000 strings,
sentences and (3,000 strings, K <= 100) one sequence, 3 EM iterations of one restart; hpyp
orders 2, 3, 5 on 2, 4 and 20 letters, 200-8,000 strings, 12 sweeps of 2 chains; cvb0 and
cvb2 N = 2-40 on 3 and 20 letters, 300-6,000 strings, 3 iterations. Each fit runs once to warm
numba and numpy up and once traced (``tests/conftest.py``'s ``traced_peak``). Written: each
fit's peak, the estimate and their ratio, with the least and the largest ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's modules)
from machine import git_commit  # noqa: E402

#: per method: (alphabets, (strings, longest + 1) pairs, sizes, the size's option, fixed options)
GRIDS = {
    "hmm-em": ((2, 10, 40), ((50, 3), (400, 6), (3000, 20)), (2, 5, 20, 50, 100, 200, 300),
               "--states", ["--n-iter", "3", "--restarts", "1"]),
    "hpyp": ((2, 4, 20), ((200, 15), (3000, 15), (8000, 30)), (2, 3, 5),
             "--order", ["--iterations", "12", "--burn-in", "4", "--period", "2", "--chains", "2",
                         "--holdout", "0"]),
    "cvb0": ((3, 20), ((300, 10), (2000, 15), (6000, 15)), (2, 10, 40), "--states",
             ["--iterations", "3"]),
    "cvb2": ((3, 20), ((300, 10), (2000, 15), (6000, 15)), (2, 10, 40), "--states",
             ["--iterations", "3"]),
}


def main(argv=None) -> int:
    from bayesfa.corpus import Corpus
    from bayesfa.methods import get_method
    from conftest import traced_peak

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", choices=sorted(GRIDS), required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    command = f"python benchmarks/{Path(__file__).name} {shown}"
    check_out(args.out)  # a file bayesfa did not write is refused before any work
    method = get_method(args.method)
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    alphabets, shapes, sizes, size_option, fixed = GRIDS[args.method]
    rng = np.random.default_rng(0)
    rows = []
    for letters in alphabets:
        for n, longest in shapes:
            train = Corpus.from_strings([rng.integers(0, letters, size=rng.integers(0, longest)).tolist()
                                         for _ in range(n)], letters)
            for size in sizes:
                for sequence in (False, True):
                    if sequence and (args.method != "hmm-em" or n != 3000 or size > 100):
                        continue
                    opts = vars(parser.parse_args([size_option, str(size), *fixed,
                                                   *(["--sequence"] if sequence else [])]))
                    method.fit(train, opts, 0, False)
                    _, peak = traced_peak(method.fit, train, opts, 0, False)
                    est = method.estimate_memory(train, opts)
                    rows.append({"letters": letters, "strings": n, "tokens": int(train.n_tokens),
                                 "size": size, "sequence": sequence, "peak": int(peak),
                                 "estimate": int(est), "ratio": est / peak})
                    print(rows[-1], flush=True)
    ratios = [r["ratio"] for r in rows]
    out = {"command": command, "commit": git_commit(),
           "method": args.method, "size_option": size_option, "ratio_min": min(ratios),
           "ratio_max": max(ratios), "rows": rows}
    write_out_text(args.out, json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("ratio_min", "ratio_max")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
