"""The infinite PFA (``bayesfa fit --method ipfa``) on PAutomaC problems, scored against the
solutions, beside CGS-PFA at N = 30 (benchmarks/results/pautomac48/summary.csv) and, when it
exists, CGS-PFA ``--auto`` (benchmarks/results/pautomac47-auto/summary.csv and the later
run pautomac47-auto-4h) (issue 23, item 5).

Each problem is one process,

    bayesfa fit P.pautomac.train --method ipfa --iterations I --burn-in B --period D \\
        --chains C --seed S --predict P.pautomac.test --max-draws 1 --quiet --force --out RUNS/pP

(Eq. 6 over every draw, each draw's plug-in with the new-state mass, folded in as the draw is
made: memory stays at one chain's state whatever I). Its CPU seconds are the process's
(``getrusage`` of the child: imports and reading included). The run sets the sweeps one of
two ways:

- ``--sweeps I``: I sweeps per chain (burn-in ``--burn-in-fraction`` of them);
- ``--budget SECONDS``: CPU seconds per problem (all chains); or ``--budget-auto F``: F times
  the CPU seconds that CGS-PFA ``--auto`` took on the same problem in the committed all-47
  run (benchmarks/results/pautomac47-auto, the whole procedure: N and beta chosen, then its
  chains), so each problem gets its own budget; or ``--budget-table3 F``: F times the CPU
  seconds of CGS-PFA's one fit at the paper's N (benchmarks/results/pautomac_table3.json, the
  median seed), whose 10-fold cross-validation cost at least 10 such fits (F < 10: less CPU
  than the selection that chose that N). Two pilot fits of one chain,
  of ``P = --pilot`` and ``2P`` sweeps (each its own process, the same options), measure the
  CPU seconds of a sweep (Eq. 6 of its draws included) as the difference of their CPU over
  ``P``, and the fixed cost of a process (imports, reading, loading the compiled kernels) as
  the rest of the first pilot's; I = (budget - fixed cost) / chains / (seconds per sweep).
  The manifests' ``chain_seconds`` are wall seconds, which on a loaded machine say nothing
  of CPU, hence the two processes. A difference below a fifth of the first pilot's CPU is
  noise (the fixed cost varies by a few tenths of a second): the script stops and asks for a
  longer ``--pilot``. The states in use keep growing after the pilots (a sweep costs about
  linearly in them), so the budget is approximate: the table reports the CPU the fit took,
  the pilots excluded (listed apart).

Writes OUT/summary.json (every row, the commit, this script's command and each fit's) and
OUT/summary.md. A finished problem (RUNS/pP.result.json) is not fitted again.

    .venv/bin/python benchmarks/ipfa_pautomac.py --problems 1 --sweeps 40 --chains 1 \\
        --runs runs/ipfa-pautomac-runs --out runs/ipfa-pautomac
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402

from bayesfa.provenance import portable_command  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXED = ROOT / "benchmarks/results/pautomac48/summary.csv"
AUTO = ROOT / "benchmarks/results/pautomac47-auto/summary.csv"
#: The later all-47 ``--auto --budget 14400`` run (other code, other per-problem results).
AUTO4H = ROOT / "benchmarks/results/pautomac47-auto-4h/summary.csv"
TABLE3 = ROOT / "benchmarks/results/pautomac_table3.json"
CV_FOLDS = 10


def _bayesfa() -> str:
    return str(Path(sys.executable).parent / "bayesfa")


def _fit_command(problem: str, args, out: Path, sweeps: int, chains: int) -> list[str]:
    data = Path(args.data)
    burn_in = int(sweeps * args.burn_in_fraction)
    period = max(1, min(args.period, sweeps - burn_in))
    return [_bayesfa(), "fit", str(data / f"{problem}.pautomac.train"), "--method", "ipfa",
            "--iterations", str(sweeps), "--burn-in", str(burn_in), "--period", str(period),
            "--chains", str(chains), "--seed", str(args.seed), *args.ipfa_options,
            "--predict", str(data / f"{problem}.pautomac.test"), "--max-draws", "1",
            "--quiet", "--force", "--out", str(out)]


def _run(cmd: list[str]) -> float:
    """Run ``cmd``; its CPU seconds (user + system of the child)."""
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited with status {status}")
    return usage.ru_utime + usage.ru_stime


class BudgetError(Exception):
    """A problem's sweeps cannot be set from its budget (no --auto row, pilots too short)."""


def _budget(problem: str, args) -> float:
    """CPU seconds for ``problem``: ``--budget``, or ``--budget-auto`` times --auto's CPU."""
    if args.budget is not None:
        return args.budget
    if args.budget_table3 is not None:
        t = _table3().get(problem)
        if t is None:
            raise BudgetError(f"--budget-table3: problem {problem} is not in {TABLE3.relative_to(ROOT)}")
        return args.budget_table3 * t["cpu_seconds"]
    auto = _reference(AUTO).get(problem)
    if auto is None:
        raise BudgetError(f"--budget-auto: problem {problem} is not in {AUTO.relative_to(ROOT)}")
    return args.budget_auto * auto["seconds"]


def _sweeps(problem: str, args) -> tuple[int, dict | None]:
    """Sweeps per chain: ``--sweeps``, or from the budget by a pilot fit (module docstring)."""
    if args.sweeps is not None:
        return args.sweeps, None
    budget = _budget(problem, args)
    cmds = [_fit_command(problem, args, Path(args.runs) / f"p{problem}-pilot{n}", n, 1)
            for n in (args.pilot, 2 * args.pilot)]
    cpu = [_run(c) for c in cmds]
    if cpu[1] - cpu[0] < 0.2 * cpu[0]:
        raise BudgetError(f"problem {problem}: pilots of {args.pilot} and {2 * args.pilot} sweeps "
                         f"took {cpu[0]:.2f} and {cpu[1]:.2f} CPU s, too close to measure a sweep; "
                         f"give a longer --pilot")
    per_sweep = (cpu[1] - cpu[0]) / args.pilot
    fixed = max(0.0, cpu[0] - args.pilot * per_sweep)
    sweeps = max(args.pilot, int((budget - fixed) / args.chains / per_sweep))
    return sweeps, {"budget": budget, "commands": [portable_command(c) for c in cmds], "cpu_process": cpu,
                    "seconds_per_sweep": per_sweep, "fixed_seconds": fixed,
                    "sweeps": [args.pilot, 2 * args.pilot]}


def _true_states(problem: str, args) -> int | None:
    path = Path(args.data) / f"{problem}.pautomac_model.txt"
    if not path.exists():
        return None
    from bayesfa.pautomac import read_model

    return int(read_model(path).init.size)


def run_one(problem: str, args) -> dict:
    """Fit (unless ``RUNS/pP.result.json`` exists) and return the problem's row."""
    done = Path(args.runs) / f"p{problem}.result.json"
    if done.exists():
        row = json.loads(done.read_text())
        out = Path(args.runs) / f"p{problem}"
        if "states_draws" not in row and (out / "manifest.json").exists():
            # a row of an earlier version of this script: the per-draw states read again
            row["states_draws"] = _states_draws(out)
        if row.get("states_draws"):  # the max over every draw (rows before this read the kept ones)
            row["states_max"] = max(max(chain) for chain in row["states_draws"])
        return row
    Path(args.runs).mkdir(parents=True, exist_ok=True)
    sweeps, pilot = _sweeps(problem, args)
    out = Path(args.runs) / f"p{problem}"
    cmd = _fit_command(problem, args, out, sweeps, args.chains)
    cpu = _run(cmd)
    row = record(problem, args, out, cmd, cpu)
    row["pilot"] = pilot
    done.write_text(json.dumps(row, indent=1) + "\n")
    return row


def _states_draws(out: Path) -> list[list[int]]:
    """The states in use at each draw (after burn-in), chain by chain: the posterior of K."""
    import bayesfa

    k = bayesfa.load(out).trace.posterior["n_states"].values
    return [[int(x) for x in chain] for chain in k]


def record(problem: str, args, out: Path, cmd: list[str], cpu_process: float) -> dict:
    """The row of the finished run in ``out``: score, states in use, hyperparameters, CPU."""
    import bayesfa
    from bayesfa.online import PREDICTIONS
    from bayesfa.pautomac import read_solution
    from bayesfa.scoring import score_all_log

    manifest = json.loads((out / "manifest.json").read_text())
    with np.load(out / PREDICTIONS) as npz:
        log_pred, n_draws = npz["log_mean"], int(npz["n_draws"])
    sol = read_solution(Path(args.data) / f"{problem}.pautomac_solution.txt", log=True)
    score = score_all_log(np.minimum(log_pred, 0.0), sol).as_dict()
    stats = bayesfa.load(out).trace.posterior
    k = np.asarray(stats["n_states"].values, dtype=float)
    info = manifest["info"]
    opts = manifest["options"]
    return {"problem": problem, "score": score["score"], "min_score": score["min_score"],
            "ratio_minus_one": score["ratio"] - 1,
            "positive": bool(np.isfinite(log_pred).all()),
            "sweeps": opts["iterations"], "burn_in": opts["burn_in"], "period": opts["period"],
            "chains": opts["chains"], "draws": n_draws,
            "states_mean": float(k.mean()), "states_last": [int(x) for x in k[:, -1]],
            "states_draws": _states_draws(out),
            "states_max": int(k.max()),
            "true_states": _true_states(problem, args),
            "alpha_mean": float(np.mean(stats["alpha"].values)),
            "gamma_mean": float(np.mean(stats["gamma"].values)),
            "cpu_process": cpu_process, "cpu_chains": float(sum(info["chain_seconds"])),
            "command": portable_command(cmd)}


def _reference(path: Path) -> dict[str, dict]:
    """``problem -> {"ratio_minus_one", "seconds", "states"}`` of a CGS-PFA summary.csv
    (pautomac48: ``ratio``, ``seconds``; pautomac47-auto: ``ratio``, ``cpu_seconds``;
    pautomac_auto: ``ratio_minus_one``, ``cpu_process``)."""
    if not path.exists():
        return {}
    out = {}
    for r in csv.DictReader(path.open()):
        ratio = (float(r["ratio_minus_one"]) if r.get("ratio_minus_one") not in (None, "")
                 else float(r["ratio"]) - 1)
        seconds = next((float(r[c]) for c in ("cpu_process", "cpu_fit", "cpu_seconds", "seconds")
                        if r.get(c) not in (None, "")), None)
        out[str(r["problem"])] = {"ratio_minus_one": ratio, "seconds": seconds,
                                  "states": r.get("states")}
    return out


def _table3() -> dict[str, dict]:
    """``problem -> {"ratio_minus_one", "cpu_seconds"}``: the median seed of CGS-PFA at the
    paper's N, one chain of 10,000 sweeps (benchmarks/pautomac_table3.py), by score."""
    if not TABLE3.exists():
        return {}
    by_problem: dict[str, list] = {}
    for r in json.loads(TABLE3.read_text())["rows"].values():
        by_problem.setdefault(str(r["problem"]), []).append(r)
    out = {}
    for k, rows in by_problem.items():
        rows = sorted(rows, key=lambda r: r["excess"])
        mid = rows[len(rows) // 2]
        out[k] = {"ratio_minus_one": mid["excess"] / mid["min_score"],
                  "cpu_seconds": mid["cpu_seconds"], "states": mid["states"]}
    return out


def _reaches(r: dict, key: str) -> bool:
    """Row ``r``'s ratio - 1 at most the reference ``key``'s, with less CPU than it."""
    return (r.get(f"{key}_ratio_minus_one") is not None
            and r["ratio_minus_one"] <= r[f"{key}_ratio_minus_one"]
            and r["cpu_process"] < r[f"{key}_seconds"])


def _reached(rows: list[dict], *keys: str) -> str:
    """``"k of n (problems)"``: the rows that reach (:func:`_reaches`) any of the references
    ``keys``."""
    hit = [r["problem"] for r in rows if any(_reaches(r, k) for k in keys)]
    return f"{len(hit)} of {len(rows)} ({', '.join(hit) or 'none'})"


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT.parent / "shared/data/pautomac"))
    p.add_argument("--problems", default="1")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--sweeps", type=int, help="sweeps per chain")
    how.add_argument("--budget", type=float, help="CPU seconds per problem (all chains)")
    how.add_argument("--budget-auto", type=float, metavar="F",
                     help="F x the CPU seconds of CGS-PFA --auto on each problem (all chains)")
    how.add_argument("--budget-table3", type=float, metavar="F",
                     help="F x the CPU seconds of CGS-PFA's fit at the paper's N (Table 3, "
                          f"10,000 sweeps) on each problem; its cross-validation cost {CV_FOLDS} x")
    p.add_argument("--pilot", type=int, default=200,
                   help="sweeps of the shorter --budget pilot fit (the other has twice as many)")
    p.add_argument("--burn-in-fraction", type=float, default=0.5)
    p.add_argument("--period", type=int, default=10)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ipfa-options", default="",
                   help="more options of --method ipfa, quoted "
                        "(e.g. \"--states 30 --alpha-prior 1,0.1\")")
    p.add_argument("--parallel", type=int, default=1, help="problems fitted at once")
    p.add_argument("--runs", default=str(ROOT / "runs/ipfa-pautomac-runs"))
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/ipfa-pautomac"))
    args = p.parse_args()
    args.ipfa_options = shlex.split(args.ipfa_options)
    out = Path(args.out)
    check_out(out / "summary.json", out / "summary.md")
    problems = [s.strip() for s in args.problems.split(",") if s.strip()]
    failed = []  # every problem runs; one whose budget cannot be set is reported at the end
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        futures = [pool.submit(run_one, q, args) for q in problems]
        rows = []
        for fut in futures:
            try:
                rows.append(fut.result())
            except BudgetError as err:
                failed.append(str(err))
    fixed, auto, table3 = _reference(FIXED), _reference(AUTO), _table3()
    auto4h = _reference(AUTO4H)
    for r in rows:
        f, a = fixed.get(r["problem"], {}), auto.get(r["problem"], {})
        a4 = auto4h.get(r["problem"], {})
        r["auto4h_ratio_minus_one"], r["auto4h_seconds"] = a4.get("ratio_minus_one"), a4.get("seconds")
        t = table3.get(r["problem"], {})
        r["table3_ratio_minus_one"], r["table3_cpu_seconds"] = t.get("ratio_minus_one"), t.get("cpu_seconds")
        r["table3_states"] = t.get("states")
        # the 10-fold cross-validation that chose the paper's N fitted 10 such chains at that N
        # alone, each on nine tenths of the data (about 9 full fits), and more at the other
        # points of its grid: 10 full fits stands for it (the runs in RESULTS stay under 4)
        r["cv_ratio_minus_one"] = t.get("ratio_minus_one")
        r["cv_seconds"] = None if t.get("cpu_seconds") is None else CV_FOLDS * t["cpu_seconds"]
        r["cgs30_ratio_minus_one"], r["cgs30_seconds"] = f.get("ratio_minus_one"), f.get("seconds")
        r["auto_ratio_minus_one"], r["auto_seconds"] = a.get("ratio_minus_one"), a.get("seconds")
        r["auto_states"] = a.get("states")
    command = portable_command([sys.executable, *sys.argv])
    commit = git_commit()
    write_out_text(out / "summary.json", json.dumps(
        {"commit": commit, "command": command, "cpu": cpu_name(), "rows": rows,
         "references": {"cgs30": str(FIXED.relative_to(ROOT)),
                        "auto": str(AUTO.relative_to(ROOT)) if AUTO.exists() else None,
                        "auto4h": str(AUTO4H.relative_to(ROOT)) if AUTO4H.exists() else None}},
        indent=1) + "\n")
    lines = ["# iPFA on PAutomaC (issue 23)", "", f"Commit: {commit}; CPU: {cpu_name()}", "",
             "Command:", "", "```", command, "```", "",
             "| problem | ratio - 1 | CPU s | sweeps x chains | states mean (max) | true states | "
             "alpha | gamma | CGS N=30 ratio - 1 | CGS N=30 s | auto ratio - 1 | auto s | auto N | "
             "Table 3 ratio - 1 | Table 3 s | Table 3 N | auto-4h ratio - 1 | auto-4h s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
             "---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['problem']} | {r['ratio_minus_one']:.5f} | {r['cpu_process']:.1f} | "
            f"{r['sweeps']} x {r['chains']} | {r['states_mean']:.1f} ({r['states_max']}) | "
            f"{_fmt(r['true_states'], 'd')} | {r['alpha_mean']:.3g} | {r['gamma_mean']:.3g} | "
            f"{_fmt(r['cgs30_ratio_minus_one'], '.5f')} | {_fmt(r['cgs30_seconds'], '.1f')} | "
            f"{_fmt(r['auto_ratio_minus_one'], '.5f')} | {_fmt(r['auto_seconds'], '.1f')} | "
            f"{r['auto_states'] or '-'} | {_fmt(r['table3_ratio_minus_one'], '.5f')} | "
            f"{_fmt(r['table3_cpu_seconds'], '.1f')} | {_fmt(r['table3_states'], 'd')} | "
            f"{_fmt(r['auto4h_ratio_minus_one'], '.5f')} | {_fmt(r['auto4h_seconds'], '.1f')} |")
    lines += ["", "Reached (ratio - 1 at most the reference's, with less CPU): "
              + "; ".join(f"{name} {_reached(rows, *keys)}" for name, keys in
                          (("auto", ("auto",)), ("auto-4h", ("auto4h",)),
                           ("Table 3 at the paper's cross-validated N", ("cv",)),
                           ("auto or the paper's N", ("auto", "cv")),
                           ("auto-4h or the paper's N", ("auto4h", "cv"))))
              + f" (auto's CPU is its whole procedure, N and beta chosen; the cross-validation's "
                f"is taken as {CV_FOLDS} x the Table 3 fit's, one fit per fold at the chosen N alone, "
                f"each on nine tenths of the data; the other grid points add more)."]
    lines += ["", "CPU s: the fit process's user + system seconds (the budget's pilots excluded, "
                  "listed below). CGS N=30: " + str(FIXED.relative_to(ROOT)) + " (2 chains x "
                  "3000 sweeps, N = 30, beta = 0.05; its seconds are its units' compute time as "
                  "`pautomac run` measures it, perf_counter in the worker: wall, not CPU); auto: "
              + (str(AUTO.relative_to(ROOT)) + " (its CPU seconds column)" if AUTO.exists()
                 else "not available yet") + "; auto-4h: " + str(AUTO4H.relative_to(ROOT))
              + " (the later run, `--budget 14400`, its CPU seconds column); Table 3: " + str(TABLE3.relative_to(ROOT))
              + " (CGS-PFA at the paper's N and beta = 0.05, one chain of 10,000 sweeps: the "
                "median of its three seeds by score, with that seed's CPU seconds).",
              "", "Each problem's fit:", ""]
    for r in rows:
        lines.append(f"- {r['problem']}: `{r['command']}`"
                     + (f" (pilots of {r['pilot']['sweeps']} sweeps: "
                        f"{sum(r['pilot']['cpu_process']):.1f} CPU s; "
                        f"{r['pilot']['seconds_per_sweep']:.3f} s/sweep, "
                        f"{r['pilot']['fixed_seconds']:.1f} s fixed)" if r.get("pilot") else ""))
    bad = [r["problem"] for r in rows if not r["positive"]]
    if bad:
        lines += ["", f"Test strings without a positive probability on problems {bad}."]
    if failed:
        lines += ["", "Not fitted:", "", *(f"- {e}" for e in failed)]
    write_out_text(out / "summary.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    for err in failed:
        print(f"ipfa_pautomac.py: {err}", file=sys.stderr)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
