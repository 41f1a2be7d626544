"""The screen a user decides from (issue 40, item 3): per method, its mean and median ratio - 1
over the PAutomaC problems, the problems on which it is best, its CPU, and an
accuracy-against-CPU plot, made from ``benchmarks/results/peers/summary.csv`` (the rows of
``benchmarks/peers.py``: one per problem and method, a failed unit a row that says why).

    python benchmarks/front.py            # writes benchmarks/results/front/{summary.md,summary.json,accuracy_cpu.png}
    python benchmarks/front.py --results benchmarks/RESULTS.md   # and puts the table in RESULTS

With ``--results FILE``, the table replaces what stands between the lines :data:`BEGIN` and
:data:`END` of FILE (written atomically; FILE without both lines is an error), so RESULTS'
opening screen is always the table of the committed summary.csv.

Definitions (each printed under the table):

- a method's *ok* problems are those where its row has a ratio (``status`` ok); a failed row
  (zero probability for some test string, time-out, error) is counted apart, never averaged;
- *mean* and *median* of ratio - 1 are over the ok problems; *median (failures as worst)*
  counts each failed problem as an infinite ratio, so a method cannot look better by failing;
- *best on*: among the methods with a row (ok or failed) on every problem, the problems where
  this method's ratio is the smallest (a failure is never best; ties count for each); a
  method run on some problems only (a partial run) is not ranked;
- *CPU*: the median and the total over the ok problems of the row's ``cpu_seconds``;
- *auto ahead on*: the problems both this method and ``auto`` have a row for where ``auto``'s
  ratio is smaller (this method's failure counts as ``auto`` ahead, ``auto``'s as behind);
  *mean / auto's*: this method's mean ratio - 1 over the problems both are ok on, divided by
  ``auto``'s mean over the same problems (the issue's goal: ``auto`` ahead of every peer on
  at least 44 of 47 problems and ahead on the mean by at least 5x).

The test strings' solution enters only through the ratios the rows already hold; nothing here
chooses anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_json, write_out_text  # noqa: E402
from machine import git_commit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks/results/peers/summary.csv"
OUT = ROOT / "benchmarks/results/front"
#: The lines of RESULTS.md between which ``--results`` writes the table.
BEGIN = "<!-- front table: made by benchmarks/front.py -->"
END = "<!-- end of the front table -->"
#: Who made each method, for the table (bayesfa's own methods and the peers a user could pick).
ORIGIN = {"auto": "bayesfa (cgs-pfa --auto)", "ipfa": "bayesfa", "cvb0": "bayesfa",
          "estatemerge": "bayesfa", "spectral": "peer (Balle et al. 2014)",
          "alergia": "peer (AALpy)", "hmm-em": "peer (hmmlearn)"}


def read_rows(path: Path) -> list[dict]:
    """The rows of a peers ``summary.csv``; a row of a unit never run (status ``not run yet``,
    or ``not run: why``) is left out: it is no failure of the method."""
    rows = []
    for r in csv.DictReader(path.open()):
        if r["status"].startswith("not run"):
            continue
        r["ratio_minus_one"] = float(r["ratio_minus_one"]) if r["ratio_minus_one"] else None
        r["cpu_seconds"] = float(r["cpu_seconds"]) if r["cpu_seconds"] else None
        rows.append(r)
    return rows


def summarize(rows: list[dict]) -> dict:
    """Per method: problems, ok problems, failures, mean / median ratio - 1, best-on count
    over the problems every method has a row for, CPU (see the module docstring)."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {(r["problem"], r["method"]): r for r in rows}
    problems = sorted({r["problem"] for r in rows}, key=int)
    # 'best on' among the methods with a row on every problem: one run on a few problems only
    # (a partial run) would otherwise shrink the problems compared to those few
    complete = [m for m in methods if all((p, m) in by for p in problems)] or methods
    common = [p for p in problems if all((p, m) in by for m in complete)]
    best = {m: (0 if m in complete else None) for m in methods}
    for p in common:
        vals = {m: by[p, m]["ratio_minus_one"] for m in complete}
        ok = [v for v in vals.values() if v is not None]
        if ok:
            low = min(ok)
            for m, v in vals.items():
                best[m] += v is not None and v == low
    out = {}
    for m in methods:
        mine = [by[p, m] for p in problems if (p, m) in by]
        ok = [r for r in mine if r["ratio_minus_one"] is not None]
        vals = np.array([r["ratio_minus_one"] for r in ok])
        worst = np.concatenate([vals, np.full(len(mine) - len(ok), np.inf)])
        cpu = np.array([r["cpu_seconds"] for r in ok if r["cpu_seconds"] is not None])
        out[m] = {"problems": len(mine), "ok": len(ok), "failed": len(mine) - len(ok),
                  "mean": float(vals.mean()) if len(vals) else None,
                  "median": float(np.median(vals)) if len(vals) else None,
                  "median_failures_worst": float(np.median(worst)) if len(worst) else None,
                  "best_on": best[m], "cpu_median": float(np.median(cpu)) if len(cpu) else None,
                  "cpu_total": float(cpu.sum()) if len(cpu) else None,
                  # a row run with a cheaper grid than the peer's documented practice
                  # (peers.py --grid trimmed) says so in its chosen_by
                  "trimmed": sum("grid trimmed" in (r.get("chosen_by") or "") for r in mine),
                  **_against(by, problems, m)}
    return {"methods": methods, "problems": problems, "common": common, "complete": complete,
            "per_method": out}


def _against(by: dict, problems: list[str], m: str, ref: str = "auto") -> dict:
    """``auto ahead on`` and ``mean / auto's`` of ``m`` (see the module docstring)."""
    both = [p for p in problems if (p, m) in by and (p, ref) in by]
    if m == ref or not both:
        return {"ref_ahead": None, "ref_compared": len(both), "mean_over_ref": None}
    inf = float("inf")
    ahead = sum((by[p, ref]["ratio_minus_one"] if by[p, ref]["ratio_minus_one"] is not None else inf)
                < (by[p, m]["ratio_minus_one"] if by[p, m]["ratio_minus_one"] is not None else inf)
                for p in both)
    ok = [p for p in both if by[p, m]["ratio_minus_one"] is not None
          and by[p, ref]["ratio_minus_one"] is not None]
    ratio = (float(np.mean([by[p, m]["ratio_minus_one"] for p in ok])
                   / np.mean([by[p, ref]["ratio_minus_one"] for p in ok])) if ok else None)
    return {"ref_ahead": int(ahead), "ref_compared": len(both), "mean_over_ref": ratio}


def _num(x, fmt="{:.5f}"):
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else fmt.format(x)


def table(s: dict) -> str:
    """The summary as a markdown table, best median (failures as worst) first."""
    order = sorted(s["methods"], key=lambda m: (s["per_method"][m]["median_failures_worst"] is None,
                                                s["per_method"][m]["median_failures_worst"] or 0))
    lines = ["| method | from | problems (ok / failed) | mean ratio - 1 | median | "
             "median, failures as worst | best on | CPU s median / total | auto ahead on | "
             "mean / auto's |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in order:
        r = s["per_method"][m]
        best = f"{r['best_on']} of {len(s['common'])}" if r["best_on"] is not None else "- (partial)"
        against = (f"{r['ref_ahead']} of {r['ref_compared']} | {_num(r['mean_over_ref'], '{:.1f}')}"
                   if r["ref_ahead"] is not None else "- | -")
        origin = ORIGIN.get(m, "")
        if r.get("trimmed"):
            origin += (" - trimmed grid" if r["trimmed"] == r["problems"]
                       else f" - trimmed grid on {r['trimmed']}")
        lines.append(f"| {m} | {origin} | {r['problems']} ({r['ok']} / {r['failed']}) "
                     f"| {_num(r['mean'])} | {_num(r['median'])} | "
                     f"{_num(r['median_failures_worst'])} | {best} | "
                     f"{_num(r['cpu_median'], '{:.1f}')} / {_num(r['cpu_total'], '{:.0f}')} | "
                     f"{against} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], s: dict, path: Path) -> None:
    """Accuracy against CPU: each (problem, method) ok row a faint point, each method's
    median over its ok problems a large one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, m in enumerate(s["methods"]):
        ok = [r for r in rows if r["method"] == m and r["ratio_minus_one"] is not None
              and r["cpu_seconds"]]
        if not ok:
            continue
        x = np.array([r["cpu_seconds"] for r in ok])
        y = np.maximum(np.array([r["ratio_minus_one"] for r in ok]), 1e-7)
        color = f"C{i}"
        ax.scatter(x, y, s=8, alpha=0.25, color=color)
        st = s["per_method"][m]
        ax.scatter([np.median(x)], [max(st["median"], 1e-7)], s=90, color=color, edgecolor="k",
                   label=f"{m} ({st['ok']} ok, {st['failed']} failed)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPU seconds per problem")
    ax.set_ylabel("PAutomaC score / minimum - 1")
    ax.set_title("PAutomaC problems: accuracy against CPU (large: median per method)")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    tmp = path.with_name("." + path.name + ".tmp")
    fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    tmp.replace(path)


def put_table(text: str, md: str) -> str:
    """``text`` with what stands between its :data:`BEGIN` and :data:`END` lines replaced by
    ``md``; ``ValueError`` when either line is missing or they are out of order."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"needs the lines {BEGIN!r} and {END!r}, in that order")
    return text[:i + len(BEGIN)] + "\n" + md.rstrip("\n") + "\n" + text[j:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peers", default=str(PEERS), help="a peers summary.csv")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--results", default=None,
                   help="a markdown file (benchmarks/RESULTS.md) whose front-table lines get the table")
    args = p.parse_args(argv)
    rows = read_rows(Path(args.peers))
    if not rows:
        p.error(f"--peers: {args.peers} has no finished rows")
    s = summarize(rows)
    out = Path(args.out)
    check_out(out / "summary.md", out / "summary.json")
    out.mkdir(parents=True, exist_ok=True)
    peers_meta = json.loads(Path(args.peers).with_suffix(".json").read_text()) \
        if Path(args.peers).with_suffix(".json").exists() else {}
    from bayesfa.provenance import portable_command

    command = portable_command([sys.executable] + sys.argv)
    partial = [m for m in s["methods"] if m not in s["complete"]]
    note = (f" ({', '.join(partial)}: a partial run, not ranked; its other columns are over "
            f"its own problems)" if partial else "")
    md = (f"{table(s)}\n{len(s['problems'])} problems have rows; 'best on' ranks the methods "
          f"with a row on every problem{note}. Made by `{command}` at {git_commit()} from the "
          f"peers' summary.csv (summarised at {peers_meta.get('commit', '?')}; each row's command "
          f"and commit columns name what made it).\n")
    write_out_text(out / "summary.md", md)
    write_out_json(out / "summary.json", {"commit": git_commit(), "command": command,
                                          "peers_commit": peers_meta.get("commit"), **s})
    plot(rows, s, out / "accuracy_cpu.png")
    if args.results:
        results = Path(args.results)
        try:
            text = put_table(results.read_text(encoding="utf-8"), md)
        except (OSError, ValueError) as e:
            p.error(f"--results: {results}: {e}")
        tmp = results.with_name("." + results.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(results)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
