"""PDIA-MAP's perplexity and the just-in-time draws of its unvisited transitions.

A single posterior sample reads the test data with each unvisited transition drawn once, just
in time, from the CRF predictive (:func:`bayesfa.samplers.pdfa.per_sample_log_prob`), so its
log predictive is the log of a one-draw Monte Carlo estimate: biased low (Jensen). This script
reads one run's MAP sample K times with independent draw sets (``predict_entropy`` 1000..
1000+K-1) and prints the single-draw perplexity (mean, min, max over the K sets: what
``bayesfa perplexity RUN TEST --map --letters-only`` reports for one of them) beside the
perplexity of each symbol's predictive averaged over the K draw sets (the authors' per-symbol
estimator applied to the draws of one sample instead of to the samples).

    python benchmarks/pdia_map_draws.py RUN_DIR TEST [--draws 60] [--all-symbols]

Measured on the paper's AIW split at the paper's budget (``benchmarks/RESULTS.md``, "The PDIA
at the paper's budget").
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("test")
    ap.add_argument("--draws", type=int, default=60, help="independent draw sets K")
    ap.add_argument("--all-symbols", action="store_true",
                    help="count the sentence ends too (default: letters only, the paper's count)")
    args = ap.parse_args(argv)

    from bayesfa.forward import log_mean_exp
    from bayesfa.pautomac import read_sample
    from bayesfa.rundir import load_run
    from bayesfa.samplers.pdfa import CRF, per_sample_log_prob

    run = load_run(args.run)
    if run.method != "pdia" or run.options.get("sequence"):
        raise SystemExit("a pdia run on sentences is needed")
    test = read_sample(args.test)
    arrays, options = dict(run.arrays), run.options
    lj = np.asarray(arrays["log_joint"])
    c, d = (int(i) for i in np.unravel_index(int(np.argmax(lj)), lj.shape))
    keep = np.ones(test.tokens.size, bool) if args.all_symbols else np.asarray(test.tokens) != 0
    lps = []
    for k in range(args.draws):
        arrays["predict_entropy"] = np.array([1000 + k])
        lps.append(per_sample_log_prob(CRF, arrays, options, test, draws=[(c, d)],
                                       per_symbol=True)[0][keep])
    lps = np.array(lps)
    n = int(keep.sum())
    single = np.exp(-lps.sum(axis=1) / n)
    averaged = float(np.exp(-log_mean_exp(lps, axis=0).sum() / n))
    print(f"MAP sample (chain {c}, draw {d}), {n} symbols counted, {args.draws} draw sets: "
          f"single-draw perplexity {single.mean():.3f} (min {single.min():.3f}, max "
          f"{single.max():.3f}); each symbol's predictive averaged over the draw sets: {averaged:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
