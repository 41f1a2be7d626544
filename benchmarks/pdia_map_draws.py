"""PDIA-MAP's perplexity against the number of draw sets of its unvisited transitions.

A single posterior sample reads the test data with each unvisited transition drawn just in
time from the CRF predictive (:func:`bayesfa.samplers.pdia.pdfa.per_sample_log_prob`): one reading
estimates ``p(test | sample)`` without bias, but its log is biased low (Jensen), badly so for
a lone sample whose test pass draws many transitions. ``bayesfa perplexity RUN TEST --map
--draw-sets K`` integrates them out with a particle filter of ``K`` particles (the default
mixture), or with ``--per-symbol`` averages each symbol's predictive over ``K`` independent
readings with equal weights (the authors' estimator applied to the draws). This script prints
both for each ``K`` with the CPU time each took, to show where they settle. ``--default``:
also the default of ``bayesfa perplexity`` (no ``--draw-sets``: per-sample particle filters
with the adapted proposal, particles doubled until the Monte Carlo standard error and the
change on doubling are at most 0.002 nats per symbol),
its particles and standard error; ``--joint``: all samples (the joint posterior mixture)
instead of the MAP sample.

    python benchmarks/pdia_map_draws.py RUN_DIR TEST [--draw-sets 1,10,30,100,300,1000]
        [--all-symbols] [--default] [--joint] [--proposal prior|adapted]

``--proposal``: the particle filters' draws (``bayesfa perplexity --proposal``); default
``prior``, the blind draws this script measured for ``benchmarks/RESULTS.md``.

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
    ap.add_argument("--proposal", choices=("prior", "adapted"), default="prior",
                    help="the particle filters' draws (default: prior, the blind draws)")
    ap.add_argument("--all-symbols", action="store_true",
                    help="count the sentence ends too (default: letters only, the paper's count)")
    ap.add_argument("--default", action="store_true",
                    help="also the default estimator of bayesfa perplexity, with its s.e.")
    ap.add_argument("--joint", action="store_true",
                    help="all samples (the joint posterior mixture), not the MAP sample")
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
    which = {} if args.joint else {"map": True}
    extra = {"letters_only": True} if letters else {}
    print(f"{run.method} {'all samples' if args.joint else 'MAP sample'}, {n} symbols counted"
          f"{' (letters only)' if letters else ''}; CPU seconds")
    if args.default:
        details: dict = {}
        t0 = time.process_time()
        lp = method.perplexity_log_prob(run.arrays, run.options, test, continuation=sequence,
                                        details=details, **which, **extra)
        print(f"default: {float(np.exp(-lp / n)):.4f} ({details['estimator']}, "
              f"{details['particles']} particles x {details['replicates']} replicates, "
              f"s.e. {details['se'] / n:.4f} nats per symbol, converged "
              f"{details['converged']}, {time.process_time() - t0:.1f} s)", flush=True)
    print(f"{'K':>6} | {'particle filter':>15} {'s':>6} | {'per symbol':>10} {'s':>6}")
    for k in (int(x) for x in args.draw_sets.split(",") if x):
        row = []
        for per_symbol in (False, True):
            t0 = time.process_time()
            lp = method.perplexity_log_prob(run.arrays, run.options, test, continuation=sequence,
                                            per_symbol=per_symbol, draw_sets=k, **which, **extra,
                                            **({} if per_symbol else
                                               {"proposal": args.proposal}))
            row += [float(np.exp(-lp / n)), time.process_time() - t0]
        print(f"{k:6d} | {row[0]:15.4f} {row[1]:6.1f} | {row[2]:10.4f} {row[3]:6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
