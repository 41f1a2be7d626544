"""``bayesfa fit --method cgs-pfa --auto --budget B`` on PAutomaC problems, scored against the
solutions and compared with the fixed setting (N = 30, beta = 0.05, 2 x 3000 sweeps) of
benchmarks/results/pautomac48/summary.csv (issue 22, item 1).

Each problem is one ``bayesfa fit ... --auto --budget B --predict TEST`` process (the test file
is only predicted, after the fit; N and beta are chosen from held-out training strings); its
CPU seconds are the process's (``getrusage`` of the child: imports and reading included), its
choices come from the run's manifest (``info.auto``).

    .venv/bin/python benchmarks/pautomac_auto.py --problems 1,26,34,13 --budget 300 --seed 1 \\
        --parallel 2 --runs runs/pautomac-auto-runs --out benchmarks/results/pautomac-auto-trial
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from bayesfa.provenance import portable_command

ROOT = Path(__file__).resolve().parents[1]
FIXED = ROOT / "benchmarks/results/pautomac48/summary.csv"


def _command(problem: str, args) -> list[str]:
    data, out = Path(args.data), Path(args.runs) / f"p{problem}"
    return [str(Path(sys.executable).parent / "bayesfa"), "fit", str(data / f"{problem}.pautomac.train"),
           "--method", "cgs-pfa", "--auto", "--budget", str(args.budget), "--chains", str(args.chains),
           "--seed", str(args.seed), "--predict", str(data / f"{problem}.pautomac.test"),
           "--max-draws", "1", "--quiet", "--force", "--out", str(out)]


def run_one(problem: str, args) -> dict:
    """Fit (unless ``runs/pP.result.json`` exists) and return the problem's row."""
    done = Path(args.runs) / f"p{problem}.result.json"
    if done.exists():
        return json.loads(done.read_text())
    if args.summarize_only:
        raise SystemExit(f"problem {problem}: no {done}")
    cmd = _command(problem, args)
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"problem {problem}: {' '.join(cmd)} exited with {status}")
    return record(problem, args, usage.ru_utime + usage.ru_stime)


def record(problem: str, args, cpu_process: float) -> dict:
    """The row of a finished run (``runs/pP``), written to ``runs/pP.result.json``."""
    from bayesfa.online import PREDICTIONS
    from bayesfa.pautomac import read_solution
    from bayesfa.scoring import score_all_log

    data, out = Path(args.data), Path(args.runs) / f"p{problem}"
    cmd = _command(problem, args)
    manifest = json.loads((out / "manifest.json").read_text())
    auto = manifest["info"]["auto"]
    with np.load(out / PREDICTIONS) as npz:
        log_pred = npz["log_mean"]
    sol = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    score = score_all_log(np.minimum(log_pred, 0.0), sol).as_dict()
    row = {"problem": problem, "states": auto["winner"]["states"], "beta": auto["winner"]["beta"],
            "score": score["score"], "min_score": score["min_score"], "ratio_minus_one": score["ratio"] - 1,
            "cpu_fit": auto["cpu_seconds"], "cpu_process": cpu_process,
            "budget": args.budget, "final_chains": auto["final"]["chains"],
            "final_sweeps": auto["final"]["sweeps"], "ladder_sweeps": auto["ladder_sweeps"],
            "ladder": [(r["states"], round(r["heldout"], 2), round(r.get("gain", 0.0), 2),
                        round(r.get("gain_se", 0.0), 2)) for r in auto["ladder"]],
            "betas": [(r.get("round"), r.get("beta"), round(r.get("heldout", 0.0), 2)) for r in auto["betas"]],
            "command": portable_command(cmd)}
    row = {**row, "schedule": auto["schedule"], "final": auto["final"]}
    (Path(args.runs) / f"p{problem}.result.json").write_text(json.dumps(row, indent=1) + "\n")
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT.parent / "shared/data/pautomac"))
    p.add_argument("--problems", default="1,26,34,13")
    p.add_argument("--budget", type=float, default=300.0)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--parallel", type=int, default=1, help="problems fitted at once")
    p.add_argument("--runs", default=str(ROOT / "runs/pautomac-auto-runs"))
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/pautomac-auto-trial"))
    p.add_argument("--summarize-only", action="store_true",
                   help="fit nothing: build the summary from runs/pP.result.json")
    p.add_argument("--record", action="append", default=[], metavar="P=CPU",
                   help="record the finished run of problem P whose process took CPU seconds "
                        "(measured outside, e.g. from /proc/PID/stat) and exit")
    args = p.parse_args()
    if args.record:
        for item in args.record:
            problem, cpu = item.split("=")
            print(json.dumps(record(problem, args, float(cpu)))[:300])
        return 0
    problems = [s.strip() for s in args.problems.split(",") if s.strip()]
    fixed = {r["problem"]: r for r in csv.DictReader(FIXED.open())}
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        rows = list(pool.map(lambda q: run_one(q, args), problems))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cols = ["problem", "states", "beta", "score", "min_score", "ratio_minus_one", "cpu_fit",
            "cpu_process", "budget", "final_chains", "final_sweeps", "ladder_sweeps",
            "fixed_ratio_minus_one", "fixed_seconds"]
    for r in rows:
        f = fixed.get(r["problem"], {})
        r["fixed_ratio_minus_one"] = float(f["ratio"]) - 1 if f else None
        r["fixed_seconds"] = float(f["seconds"]) if f else None
    with (out / "summary.csv").open("w") as fh:
        w = csv.DictWriter(fh, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (out / "decisions.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "schedules").mkdir(exist_ok=True)
    for r in rows:  # `bayesfa fit ... --auto --schedule schedules/P.json` reproduces the fit
        (out / "schedules" / f"{r['problem']}.json").write_text(json.dumps(r["schedule"], indent=1) + "\n")
    lines = ["# CGS-PFA --auto --budget on PAutomaC (issue 22, item 1)", "",
             "Commit: COMMIT", "", "Command:", "", "```",
             f".venv/bin/python benchmarks/pautomac_auto.py --problems {args.problems} --budget {args.budget:g} "
             f"--chains {args.chains} --seed {args.seed} --parallel {args.parallel}", "```", "",
             "Each problem ran as:", "", "```", rows[0]["command"] if rows else "", "```", "",
             "| problem | N | beta | score - min | ratio - 1 | CPU s (fit) | CPU s (process) | "
             "fixed N=30 ratio - 1 | fixed s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['states']} | {r['beta']} | {r['score'] - r['min_score']:.4f} | "
                     f"{r['ratio_minus_one']:.5f} | {r['cpu_fit']:.1f} | {r['cpu_process']:.1f} | "
                     f"{r['fixed_ratio_minus_one']:.5f} | {r['fixed_seconds']:.1f} |")
    scored = [r for r in rows if r["fixed_ratio_minus_one"] is not None]
    if scored:
        lines += ["", f"Mean ratio - 1 over these {len(scored)}: --auto "
                      f"{np.mean([r['ratio_minus_one'] for r in scored]):.5f}, fixed N = 30 "
                      f"{np.mean([r['fixed_ratio_minus_one'] for r in scored]):.5f}."]
    lines += ["", "Each fit's calibration is in schedules/P.json: the same command with `--schedule "
                  "schedules/P.json` in place of `--budget` reproduces it bit for bit.",
              "", "Ladder (N, held-out log predictive, gain over the best smaller rung, its SE):", ""]
    lines += [f"- {r['problem']}: {r['ladder']}; beta rounds {r['betas']}" for r in rows]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
