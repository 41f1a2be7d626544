"""Power of simulation-based calibration against the CGS-PFA mutants, and its false alarms.

Runs :func:`bayesfa.validation.pfa.kernel_tests.sbc` for each kernel (``none`` = the production
kernel, else a mutant of ``bayesfa.samplers.pfa._cgs_pfa_kernel.MUTATIONS``) at seeds
``0..SEEDS-1`` with the given settings (JSON of ``sbc`` keyword arguments; ``{}`` = its
default) and prints, per run, whether the check passed and the p-value of each statistic.

    python benchmarks/sbc_power.py '{}' 6 no-correction end-beta none
    python benchmarks/sbc_power.py '{"n_replicates": 1500, "n_posterior": 99, "bins": 10, "burn_in": 100}' 4 no-correction
"""

from __future__ import annotations

import json
import sys
import time

from bayesfa.validation.pfa import kernel_tests


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    config, seeds, kernels = json.loads(argv[0]), int(argv[1]), argv[2:]
    for name in kernels:
        variant = None if name == "none" else name
        caught = 0
        for seed in range(seeds):
            t0 = time.process_time()
            check = kernel_tests.sbc(variant, seed=seed, **config)
            caught += not check.passed
            print(f"{name:16s} seed {seed}  {'pass' if check.passed else 'FAIL'}  p = "
                  + " ".join(f"{r['p_value']:.1e}" for r in check.rows)
                  + f"  ({time.process_time() - t0:.1f} CPU s)", flush=True)
        print(f"{name}: failed {caught} of {seeds}")


if __name__ == "__main__":
    main()
