"""``--auto`` replayed from a recorded run's schedule with one option changed (issue 37: a
paired comparison of final-chain strategies on one PAutomaC problem).

    nice -n 10 python benchmarks/pautomac_auto_replay.py --runs benchmarks/results/p1-search-blocked/base
        --problem 1 [--seeds 1,2,3,4,5] [--set final_blocked_every=0 ...]
        [--data ../shared/data/pautomac] [--fresh-final] [--measured-ceiling] [--beta-extend K]
        [--final-chains C] [--constant NAME=VALUE ...] --out benchmarks/results/p1-final-replay/k0.json

A timed ``--auto`` fit decides from its calibration (the schedule), which differs from run to
run with the machine's load, so two timed runs of one seed can end in different N and beta
and a comparison of their final chains mixes in phases 1-2's luck. Replayed from the schedule
a ``pautomac run`` recorded (``RUNS/seedS/problems/P/auto.json``), phases 1-2 are pure
functions of the schedule and the seed (``auto`` module docstring): every replay of a seed
makes the same ladder and beta choices, and ``--set KEY=VALUE`` (an option of the cgs-pfa
method, e.g. ``final_blocked_every=0``) changes what follows them only. With no ``--set`` the
replay is the recorded run itself (its ratio is checked against the recorded one).

``--fresh-final`` drops phase 3's recorded costs from the schedule, so that they are measured
at the replay's winner (an arm whose N may differ from the record's needs that, and its
baseline then takes it too); ``--measured-ceiling`` (with ``--fresh-final``) gives a schedule of
bayesfa before ``ladder_scales`` an empty one, so that the ladder prices rungs above its
planned ceiling by the CPU measured on the rung below (``auto.run_ladder``): the paired
comparison of that rule against the planned ceiling alone. ``--beta-extend K`` sets
``auto.BETA_EXTEND`` (phase 2's candidates past a winning edge of the beta grid) for the replay.
``--final-chains C`` runs phase 3's money as C final chains instead of the run's ``--chains``
(phases 1-2, which the ``--chains`` option also sizes, stay as recorded): fewer, longer chains
or more, shorter ones, the prediction averaging all their draws. ``--constant NAME=VALUE`` sets a
constant of the ``auto`` module (e.g. ``LADDER_SHARE=0.6``) for the replay: phases 1-2 are then
a new plan, still a pure function of the schedule and the seed, that the baseline does not share
(use it with ``--fresh-final`` when the winner's N may change).

Each seed's fit is the production unit's: the run's options (``run.json``), the unit seed
``production.unit_seed(S, P, final role, 0)``, Eq. 6 of the test strings folded online; the
test ratio - 1 (Eq. 19 over the solution's) is reported and chooses nothing. The output
(``--out`` and its ``.md``) holds the commit and the command; a rerun skips finished seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import run_script_seeds  # noqa: E402  (this folder's module)


def parse_set(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key.replace("-", "_")] = json.loads(value)
    return out


def run_seed(args, seed: int) -> dict:
    from bayesfa.online import fit_and_predict
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.production import _ROLE_FINAL, final_options, unit_seed
    from bayesfa.scoring import score_all_log

    problem = str(args.problem)
    run = Path(args.runs) / f"seed{seed}{args.suffix}"
    identity = json.loads((run / "run.json").read_text())["identity"]
    recorded = json.loads((run / "problems" / problem / "auto.json").read_text())
    recorded = recorded.get("auto", recorded)
    data = Path(args.data)
    train = read_sample(data / f"{problem}.pautomac.train")
    test = read_sample(data / f"{problem}.pautomac.test")
    solution = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    changes = parse_set(args.set)
    from bayesfa.samplers.pfa import auto as auto_module

    if args.beta_extend is not None:
        auto_module.BETA_EXTEND = args.beta_extend
    constants = parse_set(args.constant)  # set on auto once, in main
    plan = dict(recorded["schedule"])
    if args.fresh_final:
        for key in (*auto_module._FINAL_COSTS, *auto_module._BLOCKED_COSTS):
            plan.pop(key, None)
    if args.measured_ceiling:
        plan.setdefault("ladder_scales", {})
    with tempfile.TemporaryDirectory() as tmp:
        schedule = Path(tmp) / "schedule.json"
        schedule.write_text(json.dumps(plan))
        options = {k: v for k, v in identity["options"].items() if k not in ("budget", "shares")}
        options = final_options("cgs-pfa", {**options, "schedule": str(schedule), **changes})
        t0 = time.process_time()
        pred = fit_and_predict(identity["method"], train, options,
                               unit_seed(int(identity["seed"]), problem, _ROLE_FINAL, 0), test)
        cpu = time.process_time() - t0
    auto = pred.info["fit"]["auto"]
    ratio = score_all_log(np.asarray(pred.log_mean, dtype=np.float64), solution).ratio
    # an unfinished run has no summary.csv: its problem's answer is scored here
    answers = run / "answers" / f"{problem}.pautomac.predict"
    if (run / "summary.csv").is_file():
        summary = [r for r in (run / "summary.csv").read_text().splitlines()[1:] if r.split(",")[0] == problem]
        recorded_ratio = float(summary[0].split(",")[6]) if summary else None
    elif answers.is_file():
        recorded_ratio = score_all_log(read_solution(answers, log=True), solution).ratio
    else:
        recorded_ratio = None
    return {"seed": seed, "set": changes, "fresh_final": bool(args.fresh_final),
            "final_chains": args.final_chains,
            "measured_ceiling": bool(args.measured_ceiling), "beta_extend": auto_module.BETA_EXTEND,
            "constants": constants,
            "betas": auto["betas"],
            "ladder": [r["states"] for r in auto["ladder"]], "ladder_ceiling": auto["ladder_ceiling"],
            "ladder_scales": auto["schedule"].get("ladder_scales"),
            "test_ratio_minus_1": float(ratio - 1),
            "recorded_ratio_minus_1": None if recorded_ratio is None else recorded_ratio - 1,
            "winner": auto["winner"], "final": auto["final"], "cpu_seconds": cpu,
            "cpu_planned": auto.get("cpu_planned")}


def table(result: dict) -> str:
    lines = [f"Command: `{result['command']}` at {result['commit']}", "",
             "Replayed from each seed's recorded schedule (phases 1-2 as recorded); test ratio - 1 "
             "reported, chooses nothing; the recorded run's beside it.", "",
             "| seed | N, beta | final chains | final sweeps a chain | blocked moves | ratio - 1 | recorded run's | CPU s |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for s in result["seeds"]:
        rec = s["recorded_ratio_minus_1"]
        lines.append(f"| {s['seed']} | {s['winner']['states']}, {s['winner']['beta']} | {s['final']['chains']} | {s['final']['sweeps']} | "
                     f"{s['final'].get('blocked_moves', 0)} | {s['test_ratio_minus_1']:.5f} | "
                     f"{'' if rec is None else f'{rec:.5f}'} | {s['cpu_seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", required=True, help="a folder of pautomac runs seed1, seed2, ...")
    p.add_argument("--problem", type=int, default=1)
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--suffix", default="", help="the runs' folders are seedS followed by this")
    p.add_argument("--fresh-final", action="store_true",
                   help="measure phase 3's costs at the replay's winner instead of reading them")
    p.add_argument("--measured-ceiling", action="store_true",
                   help="price rungs above the planned ceiling by measured CPU (needs --fresh-final)")
    p.add_argument("--beta-extend", type=int, default=None, metavar="K",
                   help="auto.BETA_EXTEND for this replay (phase 2's steps past a winning edge)")
    p.add_argument("--final-chains", type=int, default=None, metavar="C",
                   help="phase 3's money as C final chains (phases 1-2 as the run's --chains)")
    p.add_argument("--constant", nargs="*", default=[], metavar="NAME=VALUE",
                   help="set auto.NAME to the JSON VALUE for this replay (e.g. LADDER_SHARE=0.6)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    from bayesfa.samplers.pfa import auto as auto_module

    for item in args.constant:
        name = item.partition("=")[0]
        if not (name.isupper() and hasattr(auto_module, name)):
            p.error(f"--constant {item}: auto has no constant {name}")
    for name, value in parse_set(args.constant).items():  # for every seed of this process
        setattr(auto_module, name, value)
    if args.final_chains is not None and args.final_chains < 1:
        p.error("--final-chains: at least 1")
    if args.measured_ceiling and not args.fresh_final:
        p.error("--measured-ceiling needs --fresh-final (the winner's N may change)")
    if args.final_chains is not None:  # phase 3 only, for every seed of this process
        plan_of = auto_module.final_plan

        def final_plan(costs, money, chains, *rest, **kw):
            return plan_of(costs, money, args.final_chains, *rest, **kw)

        auto_module.final_plan = final_plan
    return run_script_seeds(__file__, args, argv, run_seed, table)


if __name__ == "__main__":
    sys.exit(main())
