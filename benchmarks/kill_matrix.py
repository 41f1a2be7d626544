"""The kill matrix of ``bayesfa validate``: every method and every one of its mutants, on several
seeds, with each check's verdict and statistic (issue 21, item 6).

A correct method should pass on every seed (each check's false-alarm rate is 1e-3, so a
report of k checks fails a correct sampler with probability at most k x 1e-3); a mutant should
fail on every seed. The table says, per (method, variant), on how many seeds it passed, which
checks failed, and the range of each check's statistic over the seeds.

Margins (issue 39, item 4). Each check's statistic over its threshold
(:func:`bayesfa.validation.checks.margin`: ``|z| / z*``, ``log p / log p*``, difference over
tolerance; above 1 when the check fails) is recorded per cell. A mutant's *catch margin* on a
seed is the largest margin among the checks it fails there; the table gives its smallest
over the seeds, and flags ``WEAK`` a mutant caught with a margin below :data:`WEAK_MARGIN`
on some seed (it needs a stronger check), ``?`` where no failing check states a margin.

    python benchmarks/kill_matrix.py [--methods cgs-sg,pdia | --names cgs-pfa,hpyp:mutant-X]
        [--seeds 0-4] [--jobs 2] [--out benchmarks/results/kill_matrix.json]

Each cell (method or mutant, seed) is written to ``OUT.cells/`` as it finishes, so a run
interrupted and started again redoes only the unfinished cells. The JSON records the commit
(``git rev-parse HEAD``, with ``+dirty`` when the tree has changes) and the command; the
markdown table printed at the end (and written beside the JSON as ``.md``) is what
``benchmarks/RESULTS.md`` quotes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from guarded_out import check_out, write_out_text  # noqa: E402

#: a mutant caught with a smaller statistic-over-threshold on some seed needs a stronger check
WEAK_MARGIN = 1.5
#: summary keys read as a check's statistic, first found wins
STAT_KEYS = ("max_abs_z", "max_z", "z", "abs_z", "statistic", "chi2", "p_value", "min_p_value", "p")


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def _statistic(summary: dict):
    for key in STAT_KEYS:
        value = summary.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return key, float(value)
    return None, None


def run_cell(name: str, seed: int, toy: str) -> dict:
    """``bayesfa validate NAME --seed SEED`` as a row of the matrix."""
    from bayesfa.validation.checks import margin
    from bayesfa.validation.harness import validate

    start = time.process_time()
    report = validate(name, toy, seed)
    checks = {}
    for c in report.checks:
        key, value = _statistic(c.summary)
        m = margin(c)
        checks[c.name] = {"passed": bool(c.passed), "stat": key, "value": value,
                          "margin": None if m is None else (m if math.isfinite(m) else "inf")}
    return {"name": name, "seed": seed, "toy": toy, "passed": report.passed, "checks": checks,
            "cpu_seconds": round(time.process_time() - start, 2)}


def _cells(methods: list[str], seeds: list[int], mutants: bool = True) -> list[tuple[str, int]]:
    from bayesfa.validation.harness import mutant_names_of

    out = []
    for m in methods:
        for name in [m] + (list(mutant_names_of(m)) if mutants else []):
            out += [(name, s) for s in seeds]
    return out


def _cell_path(cells_dir: Path, name: str, seed: int, toy: str) -> Path:
    return cells_dir / f"{name.replace(':', '__')}.{toy}.seed{seed}.json"


def _range(values: list[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return f"{lo:.3g}" if lo == hi else f"{lo:.3g}–{hi:.3g}"


def _margin_value(check: dict) -> float | None:
    m = check.get("margin")
    return math.inf if m == "inf" else m


def catch_margin(row: dict) -> float | None:
    """A mutant's catch margin in one cell: the largest margin among its failing checks
    (None when no failing check states one)."""
    values = [_margin_value(c) for c in row["checks"].values() if not c["passed"]]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _fmt_margin(v) -> str:
    return "-" if v is None else ("inf" if v == math.inf else f"{v:.3g}")


def markdown(rows: list[dict], n_seeds: int) -> str:
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    lines = ["| method or mutant | passed (of seeds) | verdict | catch margin (min over seeds) | checks that failed (seeds; margin range) | statistics (range over seeds) |",
             "|---|---:|---|---:|---|---|"]
    for name, rs in by.items():
        is_mutant = ":mutant-" in name or name.startswith("cgs-pfa-mutant")
        passed = sum(r["passed"] for r in rs)
        ok = (passed == len(rs)) if not is_mutant else (passed == 0)
        verdict = ("caught on every seed" if is_mutant else "passes on every seed") if ok else \
            ("MISSED on some seed" if is_mutant else "FAILED on some seed")
        names = sorted({c for r in rs for c in r["checks"]})
        failed = []
        for c in names:
            fails = [r["checks"][c] for r in rs if c in r["checks"] and not r["checks"][c]["passed"]]
            if fails:
                ms = [_margin_value(x) for x in fails]
                ms = [m for m in ms if m is not None]
                span = (_fmt_margin(min(ms)) if min(ms) == max(ms) else
                        f"{_fmt_margin(min(ms))}–{_fmt_margin(max(ms))}") if ms else "?"
                failed.append(f"{c} ({len(fails)}; {span})")
        catch = "-"
        if is_mutant:
            per_seed = [catch_margin(r) for r in rs if not r["passed"]]
            if per_seed and all(m is not None for m in per_seed):
                low = min(per_seed)
                catch = _fmt_margin(low) + (" WEAK" if low < WEAK_MARGIN else "")
            elif per_seed:
                catch = "?"
        stats = [f"{c}: {rs[0]['checks'][c]['stat'] or '-'} {_range([r['checks'][c]['value'] for r in rs if c in r['checks']])}"
                 for c in names if c in rs[0]["checks"]]
        lines.append(f"| `{name}` | {passed}/{len(rs)} | {verdict} | {catch} | {', '.join(failed) or '-'} | {'; '.join(stats)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from bayesfa.methods import method_names

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", default=None, help="comma-separated methods; default every method")
    p.add_argument("--names", default=None,
                   help="comma-separated cells to run instead: methods or mutants "
                        "(METHOD:mutant-NAME), each on its own (no mutants added)")
    p.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 or 0,3; default 0-4")
    p.add_argument("--toy", default="tiny")
    p.add_argument("--jobs", type=int, default=max(1, os.cpu_count() or 1))
    p.add_argument("--out", default=str(HERE / "results" / "kill_matrix.json"))
    p.add_argument("--no-mutants", action="store_true",
                   help="the correct methods only (does each pass on every seed?)")
    args = p.parse_args(argv)
    methods = args.methods.split(",") if args.methods else method_names()
    seeds = _seeds(args.seeds)
    out = Path(args.out)
    check_out(out, out.with_suffix(".md"))  # before any work: refuse a foreign file
    cells_dir = out.with_suffix(".cells")
    cells_dir.mkdir(parents=True, exist_ok=True)
    if args.names:
        cells = [(n, s) for n in args.names.split(",") for s in seeds]
    else:
        cells = _cells(methods, seeds, not args.no_mutants)
    todo = [(n, s) for n, s in cells if not _cell_path(cells_dir, n, s, args.toy).is_file()]
    print(f"{len(todo)} cells to run ({len(cells)} in all)", file=sys.stderr)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_cell, n, s, args.toy): (n, s) for n, s in todo}
        for done, fut in enumerate(as_completed(futures), 1):
            n, s = futures[fut]
            try:
                row = fut.result()
            except Exception as err:  # noqa: BLE001 - recorded as a failed cell, run goes on
                row = {"name": n, "seed": s, "toy": args.toy, "passed": False,
                       "checks": {"error": {"passed": False, "stat": None, "value": None}},
                       "error": f"{type(err).__name__}: {err}"}
            path = _cell_path(cells_dir, n, s, args.toy)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(row))
            os.replace(tmp, path)
            print(f"[{done}/{len(todo)}] {n} seed {s}: {'passed' if row['passed'] else 'FAILED'}",
                  file=sys.stderr)
    rows = [json.loads(_cell_path(cells_dir, n, s, args.toy).read_text()) for n, s in cells]
    table = markdown(rows, len(seeds))
    from machine import git_commit

    record = {"commit": git_commit(), "command": "python " + " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seeds": seeds,
              "toy": args.toy, "rows": rows}
    write_out_text(out, json.dumps(record, indent=1))
    write_out_text(out.with_suffix(".md"), f"Commit {record['commit']}, {record['date']}: "
                   f"`{record['command']}`\n\n{table}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
