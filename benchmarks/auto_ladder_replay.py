"""The ladder (phase 1) of a recorded ``pautomac run --auto`` replayed from its schedule, each
rung's held-out score beside the recorded one (issue 37: where a replay departs from its run).

    python benchmarks/auto_ladder_replay.py --run benchmarks/results/p1-search-blocked/base/seed4
        --problem 1 [--max-states 22] [--data ../shared/data/pautomac]

The plan (sweeps a rung, ceiling, money) is recomputed from the recorded schedule and checked
against the record, then the rungs up to ``--max-states`` are run with the production unit's
seed. Prints one line a rung: N, sweeps, held-out total log-likelihood here and recorded.
Numba compiles for the CPU it runs on; ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` (with a
``NUMBA_CACHE_DIR`` of their own) compile for another (README of
``benchmarks/results/p1-final-replay``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="a pautomac run folder (run.json, problems/P/auto.json)")
    p.add_argument("--problem", default="1")
    p.add_argument("--max-states", type=int, default=22)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    args = p.parse_args(argv)

    from bayesfa.pautomac import read_sample
    from bayesfa.production import _ROLE_FINAL, unit_seed
    from bayesfa.provenance import compile_target
    from bayesfa.samplers.chains import free_positions
    from bayesfa.samplers.pfa import auto, cgs_pfa

    run = Path(args.run)
    identity = json.loads((run / "run.json").read_text())["identity"]
    rec = json.loads((run / "problems" / args.problem / "auto.json").read_text())
    rec = rec.get("auto", rec)
    schedule = auto.check_schedule(rec["schedule"], run / "problems" / args.problem / "auto.json")
    corpus = read_sample(Path(args.data) / f"{args.problem}.pautomac.train")
    seed = unit_seed(int(identity["seed"]), args.problem, _ROLE_FINAL, 0)
    kept_idx, held_idx = cgs_pfa.holdout_split(corpus.n_strings, auto.HOLDOUT, np.random.SeedSequence(seed))
    kept, held = corpus.subset(kept_idx), corpus.subset(held_idx)
    money = schedule["budget"] * auto.SAFETY - schedule["overhead_seconds"]
    m, size = free_positions(kept.tokens).size, auto._forward_size(held)
    sweeps, _ = auto.rung_sweeps(schedule, money * auto.LADDER_SHARE, m, size)
    ceiling = auto.ladder_ceiling(schedule, money, int(identity["options"]["chains"]), m,
                                  free_positions(corpus.tokens).size, size, sweeps)
    assert (sweeps, ceiling) == (rec["ladder_sweeps"], rec["ladder_ceiling"]), "the plan differs from the record"
    print(f"compiled for {compile_target()}; plan as recorded: {sweeps} sweeps a rung, ceiling {ceiling}")
    with auto.front_session(cgs_pfa):
        rungs, *_ = auto.run_ladder(kept, held, schedule, money * auto.LADDER_SHARE, seed,
                                    auto._Ledger(money), max_states=min(ceiling, args.max_states))
    recorded = {r["states"]: r["heldout"] for r in rec["ladder"]}
    for r in rungs:
        print(f"N = {r['states']:4d}  sweeps {r['sweeps']}  held-out {r['heldout']:.1f}  recorded "
              f"{recorded.get(r['states'], float('nan')):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
