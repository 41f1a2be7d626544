"""The accuracy-compute frontier of CGS-PFA on PAutomaC (issue 22, item 4): the mean score
ratio - 1 over the problems of each committed ``bayesfa pautomac run`` against the CPU-hours
it spent, beside the paper's 0.00129 (PAutomaC I, 10-fold CV + 10 chains x 20,000 sweeps).

Each run is ``LABEL=DIR`` (a ``pautomac run --out`` folder with ``summary.csv``): its CPU is
the sum over problems of ``cpu_seconds`` (``--auto`` runs: what each problem's fit measured,
calibration included) or else ``seconds`` (unit compute seconds). Only problems scored in
every run are compared (the mean over a common set).

    .venv/bin/python benchmarks/pautomac_frontier.py \\
        --run "fixed N=30=benchmarks/results/pautomac48" \\
        --run "auto 1 CPU-h=benchmarks/results/pautomac47-auto-1h" \\
        --run "auto 4 CPU-h=benchmarks/results/pautomac47-auto" \\
        --out benchmarks/results/pautomac_frontier.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import git_commit  # noqa: E402

PAPER_MEAN = 0.00129  # Shibata & Yoshinaka (2013), Fig. 11 / Sect. 4.1, PAutomaC I


def read_run(folder: Path) -> dict[str, dict]:
    """``{problem: row}`` of ``folder/summary.csv`` (scored rows only)."""
    with open(folder / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {r["problem"]: r for r in rows if r.get("ratio")}


def _code(folder: Path) -> str | None:
    """The ``Code:`` line of the run's summary.md, if it has one."""
    md = folder / "summary.md"
    for line in md.read_text().splitlines() if md.is_file() else ():
        if line.startswith("Code: "):
            return line[len("Code: "):].rstrip(".")
    return None


def frontier(runs: list[tuple[str, Path]]) -> dict:
    tables = {label: read_run(folder) for label, folder in runs}
    common = sorted(set.intersection(*(set(t) for t in tables.values())), key=int)
    points = []
    for label, folder in runs:
        t = tables[label]
        cpu_key = "cpu_seconds" if all(t[p].get("cpu_seconds") for p in common) else "seconds"
        ratios = [float(t[p]["ratio"]) - 1.0 for p in common]
        cpu = sum(float(t[p][cpu_key]) for p in common)
        points.append({"label": label, "folder": str(folder), "code": _code(folder),
                       "problems": len(common), "mean_ratio_minus_one": sum(ratios) / len(ratios),
                       "median_ratio_minus_one": sorted(ratios)[len(ratios) // 2],
                       "worst": max(zip(ratios, common))[1], "cpu_hours": cpu / 3600.0,
                       "cpu_from": cpu_key,
                       "per_problem": {p: r for p, r in zip(common, ratios)}})
    return {"paper_mean_ratio_minus_one": PAPER_MEAN, "problems": common, "points": points}


def table(result: dict) -> str:
    lines = ["| run | problems | CPU-hours | mean ratio - 1 | median | worst problem | x paper |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for p in result["points"]:
        lines.append(f"| {p['label']} | {p['problems']} | {p['cpu_hours']:.2f} | "
                     f"{p['mean_ratio_minus_one']:.5f} | {p['median_ratio_minus_one']:.5f} | "
                     f"{p['worst']} ({p['per_problem'][p['worst']]:.4f}) | "
                     f"{p['mean_ratio_minus_one'] / PAPER_MEAN:.1f} |")
    lines.append(f"| paper (PAutomaC I, CV + 10 x 20,000 sweeps) | 50 | thousands | {PAPER_MEAN} | | | 1.0 |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", action="append", required=True, metavar="LABEL=DIR",
                   help="a pautomac run folder (summary.csv); repeat, in order of CPU")
    p.add_argument("--out", help="JSON of the points (with the commit and command)")
    args = p.parse_args(argv)
    runs = []
    for spec in args.run:
        label, sep, folder = spec.rpartition("=")
        if not sep or not label:
            p.error(f"--run {spec!r}: expected LABEL=DIR")
        if not (Path(folder) / "summary.csv").is_file():
            p.error(f"--run {spec!r}: {folder}/summary.csv does not exist")
        runs.append((label, Path(folder)))
    result = frontier(runs)
    print(table(result))
    if args.out:
        from bayesfa.rundir import write_output_text

        result.update(commit=git_commit(), command=" ".join(["python"] + sys.argv))
        write_output_text(args.out, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
