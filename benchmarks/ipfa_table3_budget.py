"""The default iPFA on Table 3's nine PAutomaC problems at ``--auto``'s CPU (issue 38, item 2).

    python benchmarks/ipfa_table3_budget.py \
        [--runs benchmarks/results/ipfa-table3-budget] \
        [--auto benchmarks/results/pautomac47-auto-seeds-d944b04/seed1] \
        --out benchmarks/results/ipfa-table3-budget/summary.json

Reads two ``bayesfa pautomac run --method ipfa --budget TOTAL`` folders, ``RUNS/start10`` and
``RUNS/start100`` (default options but ``--states``; README in RUNS gives their commands), and
the ``--auto`` run it is set against (its ``summary.csv``: ratio and CPU per problem). For each
problem and start: the score ratio - 1 (test strings: they chose nothing), the states in use
over every draw of both chains (``trace_n_states`` of the unit files: median and the 5-95 %
range), the sweeps each chain's budget bought and the CPU it took
(``problems/NAME/final/budget-CCCC.json``), each chain's median log joint over its draws
(``trace_log_joint``: the training strings' collapsed joint, the same target for every arm of
one truncation, so a training-only measure of the plateau each reached). Two of the issue's bars are computed: the ranges of
states in use from 10 and from 100 overlap (asked on at least 8 of 9), and each start's ratio -
1 is at most ``--auto``'s with at most ``--auto``'s CPU (asked on at least 6 of 9).
Writes ``--out`` and its ``.md`` (the commit of this script and of each run).

``--arms LABEL=FOLDER ...`` reads other runs instead (e.g. ``--paths`` dense and slice from 10
states): the same columns per arm, ``--auto`` reached per arm, and the overlap bar across them
only with ``--overlap`` (arms that are starts).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's scripts)
from machine import git_commit  # noqa: E402

STARTS = (10, 100)


def _rows(folder: Path) -> dict[str, dict]:
    with open(folder / "summary.csv") as f:
        return {r["problem"]: r for r in csv.DictReader(f)}


def _code(folder: Path) -> str:
    for line in (folder / "summary.md").read_text().splitlines():
        if line.startswith("Code:"):
            return line.split("git", 1)[-1].strip(" .")
    return "?"


def problem_start(folder: Path, name: str) -> dict:
    """One start's figures on one problem (its two chains' unit files and plans)."""
    final = folder / "problems" / name / "final"
    states, plans, joints = [], [], []
    for unit in sorted(final.glob("chain-*.npz")):
        with np.load(unit) as npz:
            states.append(np.asarray(npz["trace_n_states"]).ravel())
            joints.append(float(np.median(npz["trace_log_joint"])))
    for plan in sorted(final.glob("budget-*.json")):
        plans.append(json.loads(plan.read_text()))
    k = np.concatenate(states) if states else np.zeros(0)
    row = _rows(folder).get(name)
    return {"ratio_minus_1": None if row is None else float(row["ratio"]) - 1,
            "states_median": float(np.median(k)) if k.size else None,
            "states_q05": float(np.quantile(k, 0.05)) if k.size else None,
            "states_q95": float(np.quantile(k, 0.95)) if k.size else None,
            "log_joint_median_per_chain": joints,
            "sweeps": [p["iterations"] for p in plans],
            "cpu_seconds": float(sum(p["cpu_seconds"] for p in plans)) if plans else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="benchmarks/results/ipfa-table3-budget")
    ap.add_argument("--auto", default="benchmarks/results/pautomac47-auto-seeds-d944b04/seed1")
    ap.add_argument("--problems", default="43,5,15,11,32,41,47,36,18")
    ap.add_argument("--arms", nargs="+", metavar="LABEL=FOLDER",
                    help="runs to set side by side, in place of RUNS/start10 and RUNS/start100 "
                         "(the overlap bar only with --overlap)")
    ap.add_argument("--overlap", action="store_true",
                    help="with --arms: the arms are starts (e.g. 10=FOLDER 100=FOLDER); "
                         "compute the overlap bar across them")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    check_out(out, out.with_suffix(".md"))
    runs, auto = Path(args.runs), _rows(Path(args.auto))
    if args.arms:
        folders = {label: Path(f) for label, f in (arm.split("=", 1) for arm in args.arms)}
    else:
        folders = {str(s): runs / f"start{s}" for s in STARTS}
    arms = list(folders)
    starts = not args.arms or args.overlap  # the arms are starts: the overlap bar applies
    problems = args.problems.split(",")
    table, overlap, reach = [], 0, {s: 0 for s in arms}
    for name in problems:
        cells = {s: problem_start(folders[s], name) for s in arms}
        a = auto[name]
        a_ratio, a_cpu = float(a["ratio"]) - 1, float(a["cpu_seconds"])
        lo = [cells[s]["states_q05"] for s in arms]
        hi = [cells[s]["states_q95"] for s in arms]
        meets = starts and None not in lo + hi and max(lo) <= min(hi)
        overlap += bool(meets)
        row = {"problem": name, "auto_ratio_minus_1": a_ratio, "auto_cpu_seconds": a_cpu,
               "overlap": bool(meets), "starts": {str(s): cells[s] for s in arms}}
        for s in arms:
            c = cells[s]
            ok = (c["ratio_minus_1"] is not None and c["ratio_minus_1"] <= a_ratio
                  and c["cpu_seconds"] is not None and c["cpu_seconds"] <= a_cpu)
            c["reaches_auto"] = bool(ok)
            reach[s] += bool(ok)
        table.append(row)
    command = "python benchmarks/ipfa_table3_budget.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    doc = {"command": command, "commit": git_commit(),
           "runs": {str(s): {"folder": str(folders[s]), "code": _code(folders[s])} for s in arms},
           "auto": {"folder": args.auto, "code": _code(Path(args.auto))},
           "overlap": overlap, "reaches_auto": {str(s): reach[s] for s in arms}, "rows": table}
    write_out_text(out, json.dumps(doc, indent=1) + "\n")
    lines = ["# The default iPFA on Table 3's problems at --auto's CPU (issue 38)", "",
             f"`{command}` at `{doc['commit']}`; runs at "
             + ", ".join(f"{'arm' if args.arms else 'start'} {s}: `{doc['runs'][str(s)]['code']}`"
                         for s in arms)
             + f"; --auto: `{args.auto}` at `{doc['auto']['code']}`. Ratio - 1 on the test strings "
             "(they chose nothing); states in use over every draw of both chains.", "",
             f"| problem | --auto ratio - 1 | --auto CPU s | {'arm' if args.arms else 'start'} | ratio - 1 | states in use (q05-median-q95) "
             "| sweeps per chain | CPU s | log joint per chain (median of its draws) | reaches --auto "
             "| ranges overlap |",
             "|---|---:|---:|---:|---:|---|---|---:|---|---|---|"]
    for row in table:
        for s in arms:
            c = row["starts"][str(s)]
            fmt = (lambda x: "-" if x is None else f"{x:.0f}")
            ratio = "-" if c["ratio_minus_1"] is None else f"{c['ratio_minus_1']:.5f}"
            cpu = "-" if c["cpu_seconds"] is None else f"{c['cpu_seconds']:.0f}"
            lines.append(f"| {row['problem']} | {row['auto_ratio_minus_1']:.5f} | {row['auto_cpu_seconds']:.0f} "
                         f"| {s} | {ratio} | {fmt(c['states_q05'])}-{fmt(c['states_median'])}-"
                         f"{fmt(c['states_q95'])} | {', '.join(map(str, c['sweeps'])) or '-'} | {cpu} "
                         f"| {', '.join(f'{j:.0f}' for j in c['log_joint_median_per_chain']) or '-'} "
                         f"| {'yes' if c['reaches_auto'] else 'no'} | {'-' if not starts else 'yes' if row['overlap'] else 'no'} |")
    overlaps = ("" if not starts else
                f"Ranges of states in use overlap on {overlap} of {len(table)} (the issue asks 8 of 9); ")
    lines += ["", overlaps
              + "; ".join(f"{f'arm {s}:' if args.arms else f'from {s}'} the iPFA reaches --auto's ratio - 1 "
                          f"within its CPU on {reach[s]} of {len(table)}" for s in arms)
              + " (the issue asks 6 of 9)."]
    write_out_text(out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
