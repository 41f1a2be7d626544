"""One problem of a ``pautomac run --auto`` folder fitted again by today's code, from that run's
calibration: what a change to ``--auto``'s decisions does to a problem, with the timing noise
of a fresh calibration taken out (issue 37; made for the ladder's ceiling, benchmarks/RESULTS.md,
"The ladder's ceiling").

    python benchmarks/auto_rerun.py --run benchmarks/results/pautomac47-auto-seeds-30f74f0/seed3 \\
        --problem 21 [--data ../shared/data/pautomac] \\
        [--out benchmarks/results/auto-ceiling/seed3-p21.json]

The unit is the run's own (``run.json``'s options and seed, the problem's ``--budget`` share
from its ``auto.json``, the unit seed of :func:`bayesfa.production.unit_seed`, so the same
held-out slice and the same Generators). Phases 1-2 are sized by the calibration recorded in
``auto.json`` (``position_seconds``, ``lane_seconds``, ``forward_seconds``,
``overhead_seconds``: a pure function of these, so a ladder that today's code runs as the run
did gives the same rungs bit for bit), or with ``--rung-table`` by that calibration and a table
of a sweep timed now at every N of the ladder (``rung_seconds``, as a fresh run of a budget of
a minute or more plans from); phase 3's costs are measured afresh at the winner's N, as a
fresh run measures them (the recorded ones are the run's winner's, which a changed decision
may not share). The recorded calibration's own CPU is not spent again, so phase 3 gets about
that much more (a few seconds of a share of 306); the ``--rung-table`` timing (1-2 CPU s) is
spent within the problem's budget, as in a fresh run. The test strings are scored against the
solution file after the fit (``ratio_minus_1``, Eq. 19); nothing is chosen on them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))


def rerun(run: Path, problem: str, data: Path, rung_table: bool = False) -> dict:
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.production import _ROLE_FINAL, _final_unit, final_options, unit_seed
    from bayesfa.samplers.pfa import auto
    from bayesfa.scoring import score_all_log

    recorded = json.loads((run / "problems" / problem / "auto.json").read_text())
    identity = json.loads((run / "run.json").read_text())["identity"]
    seed = int(identity["seed"])
    options = final_options("cgs-pfa", {**identity["options"], "budget": recorded["budget"]})
    schedule = {k: v for k, v in recorded["schedule"].items()
                if k not in auto._FINAL_COSTS + auto._BLOCKED_COSTS}
    if rung_table:  # the recorded calibration and today's table of every rung, timed here
        def timed(options, kept, held, start):
            return {**schedule, "rung_seconds": auto.calibrate(kept, held, rungs=True)["rung_seconds"]}
        auto._schedule = timed
    else:
        auto._schedule = lambda options, kept, held, start: dict(schedule)  # phases 1-2 as recorded
    train = read_sample(data / f"{problem}.pautomac.train")
    test = read_sample(data / f"{problem}.pautomac.test").with_alphabet(train.alphabet_size)
    solution = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    res = _final_unit("cgs-pfa", train, test, options, unit_seed(seed, problem, _ROLE_FINAL, 0))
    new = res["auto"]

    def brief(a: dict) -> dict:
        return {"winner": a["winner"], "rungs": [r["states"] for r in a["ladder"]],
                "ladder_ceiling": a.get("ladder_ceiling"), "beta_phase_skipped": "skipped" in a["betas"][0],
                "final_sweeps": a["final"]["sweeps"], "cpu_seconds": a["cpu_seconds"]}

    old_answer = run / "answers" / f"{problem}.pautomac.predict"
    old_ratio = (score_all_log(read_solution(old_answer, log=True), solution).ratio - 1
                 if old_answer.exists() else None)
    return {"problem": problem, "seed": seed, "budget": recorded["budget"],
            "schedule": new["schedule"] if rung_table else schedule,
            "recorded": {**brief(recorded), "ratio_minus_1": old_ratio},
            "rerun": {**brief(new), "ratio_minus_1": score_all_log(res["log_mean"], solution).ratio - 1},
            "auto": new}


def main(argv=None) -> int:
    from guarded_out import check_out, write_out_json
    from machine import git_commit, missing_pautomac_file

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="a pautomac run --auto folder (run.json, problems/P/auto.json)")
    p.add_argument("--problem", type=int, required=True)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--rung-table", action="store_true",
                   help="plan phases 1-2 from a table of a sweep timed here at every N of the ladder "
                        "(auto.calibrate(rungs=True), as a fresh run of a budget of a minute or more "
                        "does) beside the recorded calibration, instead of the recorded line")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    run = Path(args.run)
    if not (run / "problems" / str(args.problem) / "auto.json").is_file() or not (run / "run.json").is_file():
        p.error(f"--run {args.run}: no run.json or problems/{args.problem}/auto.json")
    missing = missing_pautomac_file(args.data, args.problem)
    if missing:
        p.error(f"--data {args.data}: no file {missing}")
    out = Path(args.out or ROOT / "benchmarks" / "results" / "auto-ceiling" /
               f"{run.name}-p{args.problem}.json")
    check_out(out)
    result = rerun(run, str(args.problem), Path(args.data), rung_table=args.rung_table)
    command = "python benchmarks/auto_rerun.py " + " ".join(
        str(a) for a in (argv if argv is not None else sys.argv[1:]))
    result.update(commit=git_commit(), command=command)
    write_out_json(out, result)
    r, n = result["recorded"], result["rerun"]
    print(f"problem {args.problem} seed {result['seed']}: recorded {r['winner']} ratio - 1 "
          f"{r['ratio_minus_1']}; rerun {n['winner']} ratio - 1 {n['ratio_minus_1']:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
