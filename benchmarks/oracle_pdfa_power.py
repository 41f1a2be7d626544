"""Power of oracle-pdfa's gibbs-chain rows at the distinct hyperparameters of
``bayesfa.validation.pdia.oracle.FIXED`` against wrong stationary laws: an ideal chain
(multinomial draws, as many as the row's chains, from an alternative's exact posterior) tested
by the row's chi-square against the reference at ``FIXED``, ``--reps`` repetitions (seed 0).
Alternatives: one hyperparameter x1.5 or x2, two swapped, all 1 (the old setting); for
gibbs-chain-hyper, the fixed-hyperparameter posterior at ``FIXED`` (the hyperpriors ignored).

    nice -n 10 python benchmarks/oracle_pdfa_power.py --reps 1000
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from scipy import stats as sps


def main() -> None:
    from bayesfa.validation.pdia import oracle

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--fixed", type=float, nargs=3, metavar=("ALPHA", "BETA", "GAMMA"),
                    help="the reference's hyperparameters (default: oracle.FIXED)")
    ap.add_argument("--rows", default="small,three,hyper")
    args = ap.parse_args()
    a, b, g = args.fixed or (oracle.FIXED[k] for k in ("alpha", "beta", "gamma"))
    alts = {"alpha x1.5": (1.5 * a, b, g), "beta x1.5": (a, 1.5 * b, g),
            "gamma x1.5": (a, b, 1.5 * g), "alpha x2": (2 * a, b, g), "beta x2": (a, 2 * b, g),
            "gamma x2": (a, b, 2 * g), "alpha<->beta": (b, a, g), "alpha<->gamma": (g, b, a),
            "beta<->gamma": (a, g, b), "all 1": (1.0, 1.0, 1.0)}
    rows = [("small", [list(s) for s in oracle.SMALL_TOY[0]], oracle.posterior_two_states,
             oracle.CHAINS["chains"], oracle.ALPHA / 2),
            ("three", [list(s) for s in oracle.THREE_TOY[0]], oracle.posterior_three_states,
             oracle.CHAINS["chains_three"], oracle.ALPHA / 2)]

    def power(ref, law, n, crit, seed):
        rng = np.random.default_rng(seed)
        rej = 0
        for _ in range(args.reps):
            stat, df = oracle.chi_square(rng.multinomial(n, law), n * ref)
            rej += sps.chi2.sf(stat, df) < crit
        return rej / args.reps

    for name, strings, post, n, crit in rows:
        if name not in args.rows.split(","):
            continue
        ref = post(strings, 2, a, b, g)
        print(json.dumps({"row": name, "tables": ref.size, "largest": float(ref.max()),
                          "smallest": float(ref.min())}), flush=True)
        for alt, (aa, bb, gg) in alts.items():
            law = post(strings, 2, aa, bb, gg)
            print(json.dumps({"row": name, "chains": n, "p_threshold": crit, "alternative": alt,
                              "alpha": aa, "beta": bb, "gamma": gg,
                              "tv": 0.5 * float(np.abs(law - ref).sum()),
                              "power": power(ref, law, n, crit, 0)}), flush=True)
    if "hyper" not in args.rows.split(","):
        return
    strings = [list(s) for s in oracle.SMALL_TOY[0]]
    ref = oracle.posterior_two_states_hyper(strings, 2)
    law = oracle.posterior_two_states(strings, 2, a, b, g)
    for n in (oracle.CHAINS["chains_hyper"], 1000):
        print(json.dumps({"row": "hyper", "chains": n, "p_threshold": oracle.ALPHA,
                          "alternative": "hyperpriors ignored (FIXED)", "alpha": a, "beta": b,
                          "gamma": g, "tv": 0.5 * float(np.abs(law - ref).sum()),
                          "power": power(ref, law, n, oracle.ALPHA, 0)}), flush=True)


if __name__ == "__main__":
    main()
