"""PDIA-MAP's perplexity against the number of draw sets of its unvisited transitions.

A single posterior sample reads the test data with each unvisited transition drawn just in
time from the CRF predictive (:func:`bayesfa.samplers.pdia.pdfa.per_sample_log_prob`): one reading
estimates ``p(test | sample)`` without bias, but its log is biased low (Jensen), badly so for
a lone sample whose test pass draws many transitions. ``bayesfa perplexity RUN TEST --map
--draw-sets K`` integrates them out with a particle filter of ``K`` particles (the default
mixture), or with ``--per-symbol`` averages each symbol's predictive over ``K`` independent
readings with equal weights (the authors' estimator applied to the draws). This script prints
both for each ``K`` with the time each took, to show where they settle.

    python benchmarks/pdia_map_draws.py RUN_DIR TEST [--draw-sets 1,10,30,100,300,1000]
        [--all-symbols]

Measured on the paper's AIW split at the paper's budget (``benchmarks/RESULTS.md``, "The PDIA
at the paper's budget").
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("test")
    ap.add_argument("--draw-sets", default="1,10,30,100,300,1000",
                    help="comma-separated K to compare")
    ap.add_argument("--all-symbols", action="store_true",
                    help="count the sentence ends too (default: letters only, the paper's count)")
    args = ap.parse_args(argv)

    from bayesfa.methods import get_method
    from bayesfa.pautomac import read_sample
    from bayesfa.rundir import load_run

    run = load_run(args.run)
    if run.method not in ("pdia", "pdia-smoothed", "pdfa"):
        raise SystemExit("a pdfa, pdia or pdia-smoothed run is needed")
    test = read_sample(args.test)
    method = get_method(run.method)
    sequence = bool(run.options.get("sequence"))
    letters = not args.all_symbols and not sequence
    n = test.n_letters if letters or sequence else test.n_tokens
    print(f"{run.method} MAP sample, {n} symbols counted"
          f"{' (letters only)' if letters else ''}")
    print(f"{'K':>6} | {'particle filter':>15} {'s':>6} | {'per symbol':>10} {'s':>6}")
    for k in (int(x) for x in args.draw_sets.split(",")):
        row = []
        for per_symbol in (False, True):
            t0 = time.perf_counter()
            lp = method.perplexity_log_prob(run.arrays, run.options, test, continuation=sequence,
                                            map=True, per_symbol=per_symbol, draw_sets=k,
                                            **({"letters_only": True} if letters else {}))
            row += [float(np.exp(-lp / n)), time.perf_counter() - t0]
        print(f"{k:6d} | {row[0]:15.4f} {row[1]:6.1f} | {row[2]:10.4f} {row[3]:6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
