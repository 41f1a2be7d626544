"""Table 1 of Pfau, Bartlett & Wood (2010) from runs here: PDIA, PDIA-MAP, HMM-EM, HPYP n-grams
(bigram ... 6-gram) and the sequence memoizer on Alice in Wonderland (AIW) and mouse DNA.

    python benchmarks/pdia_table1.py [--splits aiw-paper,dna,aiw-r1,...] [--methods pdia,hmm-em,...]
        [--budget paper|today|quick] [--out benchmarks/results/pdia_table1_NAME.json]
        [--runs runs/pdia_table1] [--table-only] [--traces] [--hmm-states K1,K2,...]

Everything goes through the command line a user would type: ``bayesfa data alice|dna``
writes each split (``aiw-paper``: the paper's own 100/50 sentences; ``aiw-rS``: ``--resplit
--seed S``; ``dna``: the first 150,000 bases of the bundled mouse region for training, the
remaining 28,393 for testing -- the paper's own 194,173 bp fragment of chromosome 2 is not
available), ``bayesfa fit`` learns, ``bayesfa perplexity RUN TEST --json`` scores under the
paper's conventions (sentence resets for AIW, continuation for DNA, the test data integrated
into the model as read; ends of sentences are predicted and counted, see
:mod:`bayesfa.methods`). Each finished job is written into the JSON file at once (atomically)
and skipped when the script runs again (``bayesfa fit`` also leaves a finished run alone), so
the script is resumable: run it niced in the background and read the file as it grows.

PDIA budget (``--budget paper``): AIW 15,000 burn-in sweeps then 3,500 sweeps keeping every
fifth (700 draws), DNA 1,000 burn-in then 900 keeping every tenth (90 draws): our reading of
"we ran 15,000 burn-in samples and used 3,500 samples for predictive inference" and "every
fifth sample for AIW and every tenth sample for DNA after burn-in was used for prediction";
one chain per split, hyperparameters sampled under the paper's priors (the ``pdia`` defaults).
``--budget today`` (the default): AIW 80 burn-in sweeps then 40 keeping every fourth (10
draws), DNA 50 then 30 keeping every third (10 draws): 0.6 % and 4 % of the paper's sweeps,
what fitted a heavily shared machine on 2026-11-23 with the sweep of then (0.37 CPU-s at the
paper's AIW size). Since the incremental sweep (0.015 CPU-s, ``benchmarks/RESULTS.md``) the
paper's budget fits: an AIW chain takes 4-10 minutes, a DNA chain about 30 (``--budget
paper``, 2026-11-25). ``--budget quick``: a smoke run. ``--methods pdia-smoothed`` runs the
smoothed PDIA at the same budget. AIW PDIA rows also record ``perplexity_letters_only``
(``bayesfa perplexity --letters-only``: the sentence ends left out of the count, the paper's
count). The PDIA-MAP rows are ``bayesfa perplexity --map --draw-sets 300``: the lone MAP
sample's unvisited transitions integrated out by a particle filter (one reading of them, the
value before ``--draw-sets``, is biased low: AIW 7.26 on the paper's split), and the joint
(Bayesian) mixture rows ``--draw-sets 10`` (10 particles per sample); an entry scored with
other draw sets is scored again, its fit kept.

Several processes may run at once on different splits: give each its own ``--out`` file
named ``benchmarks/results/pdia_table1*.json``; ``--table-only`` merges all of them.

HMM-EM: ``--method hmm-em --states K`` for K on a grid (:data:`HMM_GRID`, or the K given by
``--hmm-states``, e.g. the paper's K on the resplits); the number of states is then chosen
by the perplexity on the *test* data, as the paper does ("a procedure used here to produce
optimistic HMM performance for comparison purposes only"): :func:`hmm_states_by_test`.

HPYP n-grams and the sequence memoizer: ``--methods hpyp,memoizer`` runs them the same way
(``--order 2..6``); the table also reads ``benchmarks/hpyp_memoizer_table1.py``'s saved
``benchmarks/results/hpyp_memoizer*.json`` for the rows it has not run itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bayesfa.methods import method_names
from bayesfa.provenance import portable_command, portable_path
from guarded_out import check_out, write_out_json

ROOT = Path(__file__).resolve().parents[1]
BAYESFA = [sys.executable, "-m", "bayesfa.cli"]

#: Table 1 of the paper: perplexity and number of states (PDIA: average over samples).
PAPER = {
    "aiw": {"pdia": (5.13, 365.6), "pdia-joint": (None, None), "pdia-map": (5.46, 379),
            "hmm-em": (7.89, 52), "2-gram": (9.71, 28), "3-gram": (6.45, 382), "4-gram": (5.13, 2023),
            "5-gram": (4.80, 5592), "6-gram": (4.69, 10838), "memoizer": (4.78, 19358),
            "pdia-smoothed": (None, None), "pdia-smoothed-joint": (None, None)},
    "dna": {"pdia": (3.72, 64.7), "pdia-joint": (None, None), "pdia-map": (3.72, 54),
            "hmm-em": (3.76, 19), "2-gram": (3.77, 5), "3-gram": (3.75, 21), "4-gram": (3.74, 85),
            "5-gram": (3.73, 341), "6-gram": (3.72, 1365), "memoizer": (3.56, 314166),
            "pdia-smoothed": (None, None), "pdia-smoothed-joint": (None, None)},
}
#: pdia-smoothed (beyond the paper, issue 10 item 5) has no paper figure.
ROWS = ("pdia", "pdia-joint", "pdia-map", "hmm-em", "2-gram", "3-gram", "4-gram", "5-gram",
        "6-gram", "memoizer", "pdia-smoothed", "pdia-smoothed-joint")

#: PDIA-MAP: particles of ``bayesfa perplexity --map --draw-sets K --proposal prior``, which
#: integrate the lone sample's unvisited transitions out (one reading: AIW 7.26 where 300
#: give 5.49); the table was made with these blind filters, so ``--proposal prior`` keeps
#: what it measured (``--draw-sets``' filters have taken the adapted proposal by default since)
MAP_DRAW_SETS = 300
#: the joint (Bayesian) mixture rows: particles per sample (700 samples on AIW; one reading
#: each gave 6.48 on the paper's split where 10 particles give 5.64, letters only)
JOINT_DRAW_SETS = 10
#: the filters of the committed table: blind draws from the prior (see MAP_DRAW_SETS)
BLIND = ("--proposal", "prior")

PDIA_BUDGET = {
    "paper": {"aiw": ["--iterations", "18500", "--burn-in", "15000", "--period", "5"],
              "dna": ["--iterations", "1900", "--burn-in", "1000", "--period", "10"]},
    # what fitted the shared 2 cores on 2026-11-23 (load average 30-40: module docstring)
    "today": {"aiw": ["--iterations", "120", "--burn-in", "80", "--period", "4"],
              "dna": ["--iterations", "80", "--burn-in", "50", "--period", "3"]},
    "quick": {"aiw": ["--iterations", "300", "--burn-in", "200", "--period", "5"],
              "dna": ["--iterations", "100", "--burn-in", "50", "--period", "10"]},
}
#: HMM-EM state grids. The paper names no grid, only the K it chose by test perplexity
#: (Table 1: 52 on AIW, 19 on DNA), so each grid brackets that K and contains it.
HMM_GRID = {"aiw": (10, 20, 30, 40, 52, 60, 80), "dna": (2, 5, 10, 19, 30)}
#: EM budget: AIW 3 restarts of up to 200 iterations; DNA (15 times the data, one sequence)
#: 2 restarts of up to 100, what fitted the shared machine (RESULTS.md says so beside the row).
HMM_OPTIONS = {"aiw": ["--restarts", "3", "--n-iter", "200"],
               "dna": ["--restarts", "2", "--n-iter", "100"]}


def dataset(split: str) -> str:
    return "dna" if split.startswith("dna") else "aiw"


def split_files(split: str, runs: Path) -> tuple[Path, Path]:
    """Write the split with ``bayesfa data`` (once) and return ``(train, test)`` paths."""
    folder = runs / "data" / split
    name = "dna" if dataset(split) == "dna" else "alice"
    train, test = folder / f"{name}.train", folder / f"{name}.test"
    if not (train.is_file() and test.is_file()):
        cmd = BAYESFA + ["data", name, "--out", str(folder)]
        if split.startswith("aiw-r"):
            cmd += ["--resplit", "--seed", split[len("aiw-r"):]]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return train, test


def jobs(split: str, methods: list[str], budget: str,
         hmm_states: tuple[int, ...] | None = None) -> list[dict]:
    """The jobs of one split: ``{"key", "row", "run", "args" (of fit), "perplexity" (its extra
    options)}``; jobs with the same ``run`` share one fit. ``hmm_states``: the HMM-EM state
    counts to fit (default: the split's whole :data:`HMM_GRID`)."""
    ds = dataset(split)
    seq = ["--sequence"] if ds == "dna" else []
    out = []
    if "pdia" in methods:
        args = ["--method", "pdia", "--chains", "1", *PDIA_BUDGET[budget][ds], *seq]
        # the paper's PDIA row: the authors' per-symbol mixture; beside it the Bayesian mixture
        out.append({"key": f"{split}/pdia", "row": "pdia", "run": "pdia", "args": args,
                    "perplexity": ["--per-symbol"], "letters": ds == "aiw"})
        out.append({"key": f"{split}/pdia-joint", "row": "pdia-joint", "run": "pdia", "args": args,
                    "perplexity": ["--draw-sets", str(JOINT_DRAW_SETS), *BLIND],
                    "letters": ds == "aiw"})
        out.append({"key": f"{split}/pdia-map", "row": "pdia-map", "run": "pdia", "args": args,
                    "perplexity": ["--map", "--draw-sets", str(MAP_DRAW_SETS), *BLIND],
                    "letters": ds == "aiw"})
    if "pdia-smoothed" in methods:  # the same budget and conventions as the PDIA's rows
        args = ["--method", "pdia-smoothed", "--chains", "1", *PDIA_BUDGET[budget][ds], *seq]
        out.append({"key": f"{split}/pdia-smoothed", "row": "pdia-smoothed", "run": "pdia-smoothed",
                    "args": args, "perplexity": ["--per-symbol"], "letters": ds == "aiw"})
        out.append({"key": f"{split}/pdia-smoothed-joint", "row": "pdia-smoothed-joint",
                    "run": "pdia-smoothed", "args": args,
                    "perplexity": ["--draw-sets", str(JOINT_DRAW_SETS), *BLIND],
                    "letters": ds == "aiw"})
    if "hmm-em" in methods:
        for k in hmm_states or HMM_GRID[ds]:
            out.append({"key": f"{split}/hmm-em-{k}", "row": "hmm-em", "run": f"hmm-em-{k}",
                        "args": ["--method", "hmm-em", "--states", str(k), *HMM_OPTIONS[ds], *seq],
                        "perplexity": [], "letters": ds == "aiw"})
    registered = set(method_names())
    if "hpyp" in methods and "hpyp" in registered:
        for order in range(2, 7):
            out.append({"key": f"{split}/{order}-gram", "row": f"{order}-gram",
                        "run": f"hpyp-{order}", "perplexity": [],
                        "args": ["--method", "hpyp", "--order", str(order),
                                 *_if_supported("hpyp", seq)]})
    if "memoizer" in methods and "memoizer" in registered:
        out.append({"key": f"{split}/memoizer", "row": "memoizer", "run": "memoizer", "perplexity": [],
                    "args": ["--method", "memoizer", *_if_supported("memoizer", seq)]})
    return out


def _if_supported(method: str, extra: list[str]) -> list[str]:
    """The options of ``extra`` (e.g. ``--sequence``) that ``bayesfa fit --method METHOD`` has."""
    from bayesfa.methods import get_method

    parser = argparse.ArgumentParser()
    get_method(method).add_arguments(parser)
    return [e for e in extra if e in parser._option_string_actions]


def n_states(run: Path, map_: bool) -> float | None:
    """PDIA: the average number of states over the draws (``map_``: of the MAP draw); other
    methods: the manifest's ``info["n_states"]`` if they record one."""
    from bayesfa.rundir import read_manifest, read_trace

    manifest = read_manifest(run / "manifest.json")
    trace_path = run / "trace.nc"
    if manifest["method"] in ("pdia", "pdfa", "pdia-smoothed") and trace_path.is_file():
        trace = read_trace(trace_path)
        ns = np.asarray(trace["n_states"], dtype=float)
        if map_:
            lj = np.asarray(trace["log_joint"])
            return float(ns.reshape(-1)[int(np.argmax(lj.reshape(-1)))])
        return float(ns.mean())
    value = manifest.get("info", {}).get("n_states")
    return None if value is None else float(value)


def letters_only(job: dict, split: str, runs: Path) -> float:
    """The job's perplexity over the letters alone (``bayesfa perplexity ... --letters-only``:
    the same test pass, the sentence ends' predictions left out of the count), how the paper
    counts AIW (``benchmarks/RESULTS.md``, "HPYP n-grams and the sequence memoizer")."""
    _, test = split_files(split, runs)
    cmd = BAYESFA + ["perplexity", str(runs / split / job["run"]), str(test), "--json",
                     *job["perplexity"], "--letters-only"]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return out["perplexity"]


def _draw_sets(options: list[str]) -> int:
    return int(options[options.index("--draw-sets") + 1]) if "--draw-sets" in options else 1


def _scored_as(entry: dict, job: dict) -> bool:
    """Whether a finished entry was scored with the job's draw sets (entries from before
    ``--draw-sets`` had one); one that was not is scored again (its fit is kept)."""
    return (entry.get("draw_sets") or 1) == _draw_sets(job["perplexity"])


def run_job(job: dict, split: str, runs: Path) -> dict:
    train, test = split_files(split, runs)
    run = runs / split / job["run"]
    fit_cmd = BAYESFA + ["fit", str(train), *job["args"], "--seed", "0", "--out", str(run),
                         "--quiet"]
    t0 = time.perf_counter()
    subprocess.run(fit_cmd, check=True)
    wall = time.perf_counter() - t0
    from bayesfa.rundir import read_manifest

    manifest = read_manifest(run / "manifest.json")
    perp_cmd = BAYESFA + ["perplexity", str(run), str(test), "--json", *job["perplexity"]]
    t0 = time.perf_counter()
    res = json.loads(subprocess.run(perp_cmd, check=True, capture_output=True, text=True).stdout)
    score_seconds = time.perf_counter() - t0
    info = manifest.get("info", {})
    return {"split": split, "dataset": dataset(split), "row": job["row"], "run": portable_path(str(run)),
            "fit_command": portable_command(["bayesfa", *fit_cmd[len(BAYESFA):]]),
            "perplexity_command": portable_command(["bayesfa", *perp_cmd[len(BAYESFA):]]),
            **{k: res.get(k) for k in ("perplexity", "n_symbols", "n_letters", "log_prob",
                                       "incremental", "data_shape", "mixture", "draw_sets")},
            "n_states": n_states(run, "--map" in job["perplexity"]),
            "fit_seconds": info.get("seconds"), "fit_wall_seconds_this_call": round(wall, 1),
            "seconds_per_sweep": info.get("seconds_per_sweep"),
            "score_seconds": round(score_seconds, 1), "options": manifest.get("options"),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def hmm_states_by_test(entries: dict, split: str) -> dict | None:
    """The paper's HMM-EM row: among the ``hmm-em-K`` fits of ``split``, the one of lowest
    *test* perplexity (cross-validation on the test data: optimistic, "for comparison
    purposes only", as in the paper); None if there is none."""
    cands = [e for k, e in entries.items() if k.startswith(f"{split}/hmm-em-")
             and e.get("perplexity") is not None]
    return min(cands, key=lambda e: e["perplexity"]) if cands else None


def table(entries: dict) -> dict:
    """``{dataset: {row: {"paper": (perp, states), "splits": {split: (perp, states)},
    "mean", "sd", "min", "max"}}}`` from the finished entries."""
    out: dict = {}
    splits = sorted({e["split"] for e in entries.values()})
    for ds in ("aiw", "dna"):
        out[ds] = {}
        for row in ROWS:
            per, letters = {}, {}
            for split in splits:
                if dataset(split) != ds:
                    continue
                e = (hmm_states_by_test(entries, split) if row == "hmm-em"
                     else entries.get(f"{split}/{row}"))
                if e is not None and e.get("perplexity") is not None:
                    per[split] = (e["perplexity"], e.get("n_states"))
                    if e.get("perplexity_letters_only") is not None:
                        letters[split] = e["perplexity_letters_only"]
            vals = np.array([p for p, _ in per.values()], dtype=float)
            out[ds][row] = {"paper": PAPER[ds][row], "splits": per,
                            "mean": float(vals.mean()) if vals.size else None,
                            "sd": float(vals.std(ddof=1)) if vals.size > 1 else None,
                            "min": float(vals.min()) if vals.size else None,
                            "max": float(vals.max()) if vals.size else None,
                            "letters_only": letters}
    return out


def _paper(perp, states) -> str:
    return "  -- (--)" if perp is None else f"{perp:5.2f} ({states})"


def format_table(tab: dict, registered: set[str]) -> str:
    lines = []
    for ds in ("aiw", "dna"):
        lines.append(f"{ds.upper()}: row | paper perplexity (states) | ours per split | mean ± sd")
        for row in ROWS:
            r = tab[ds][row]
            pp, ps = r["paper"]
            if not r["splits"]:
                why = ("pending (method not registered yet)"
                       if (row.endswith("gram") and "hpyp" not in registered)
                       or (row == "memoizer" and "memoizer" not in registered) else "not run yet")
                lines.append(f"  {row:19s} | {_paper(pp, ps)} | {why}")
                continue
            cells = ", ".join(f"{s} {p:.3f} ({'' if n is None else f'{n:.0f}'})"
                              for s, (p, n) in sorted(r["splits"].items()))
            spread = f"{r['mean']:.3f}" + (f" ± {r['sd']:.3f}" if r["sd"] is not None else "")
            lines.append(f"  {row:19s} | {_paper(pp, ps)} | {cells} | {spread}")
            if r.get("letters_only"):
                lv = np.array(list(r["letters_only"].values()))
                cells = ", ".join(f"{s} {v:.3f}" for s, v in sorted(r["letters_only"].items()))
                lines.append(f"  {'  letters only':19s} | {_paper(pp, ps)} | {cells} | {lv.mean():.3f}"
                             + (f" ± {lv.std(ddof=1):.3f}" if lv.size > 1 else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", default="aiw-paper,dna,aiw-r1,aiw-r2,aiw-r3,aiw-r4")
    ap.add_argument("--methods", default="pdia,hmm-em,hpyp,memoizer")
    ap.add_argument("--budget", choices=tuple(PDIA_BUDGET), default="today")
    ap.add_argument("--hmm-states", default=None,
                    help="comma-separated HMM-EM state counts instead of the grid (e.g. the K "
                         "the grid chose on the paper's split, for the resplits)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pdia_table1.json"))
    ap.add_argument("--runs", default=str(ROOT / "runs" / "pdia_table1"))
    ap.add_argument("--table-only", action="store_true", help="print the table of finished jobs")
    ap.add_argument("--traces", action="store_true",
                    help="also write the PDIA runs' traces to pdia_table1_traces.json beside --out")
    args = ap.parse_args(argv)
    out, runs = Path(args.out), Path(args.runs)
    check_out(out)  # before reading it: refuse a file bayesfa did not write
    if args.traces:
        check_out(out.parent / "pdia_table1_traces.json", option="--traces")
    doc = json.loads(out.read_text()) if out.is_file() else {}
    entries = doc.setdefault("entries", {})
    doc["budget"] = args.budget
    doc["machine"] = f"{os.cpu_count()} cores (shared with other jobs; timings noisy)"
    methods = [m for m in args.methods.split(",") if m]
    hmm_states = tuple(int(k) for k in args.hmm_states.split(",")) if args.hmm_states else None
    if not args.table_only:
        for split in [s for s in args.splits.split(",") if s]:
            for job in jobs(split, methods, args.budget, hmm_states):
                if job["key"] in entries and _scored_as(entries[job["key"]], job):
                    e = entries[job["key"]]
                    if job.get("letters") and "perplexity_letters_only" not in e:
                        e["perplexity_letters_only"] = letters_only(job, split, runs)
                        write_out_json(out, doc)
                    continue
                print(f"[{time.strftime('%H:%M:%S')}] {job['key']}", flush=True)
                try:
                    entries[job["key"]] = run_job(job, split, runs)
                except subprocess.CalledProcessError as err:
                    print(f"  failed: {err}", flush=True)
                    continue
                e = entries[job["key"]]
                if job.get("letters"):
                    e["perplexity_letters_only"] = letters_only(job, split, runs)
                print(f"  perplexity {e['perplexity']:.4f}  states {e['n_states']}  "
                      f"fit {e['fit_seconds']} s", flush=True)
                doc["table"] = table(entries)
                write_out_json(out, doc)
    if entries:
        doc["table"] = table(entries)
        write_out_json(out, doc)
    merged = load_entries(out.parent)
    if args.traces:
        collect_traces(merged, out.parent / "pdia_table1_traces.json")
    print(format_table(table(merged), set(method_names())))
    return 0


def collect_traces(entries: dict, out: Path) -> dict:
    """The PDIA runs' traces (log joint, states in use, hyperparameters per draw) and fit
    facts, from the run directories of the finished entries, into ``out`` (for the notebook,
    which then needs no run directory)."""
    from bayesfa.rundir import read_manifest, read_trace

    traces = {}
    for key, e in entries.items():
        if e["row"] != "pdia" or "run" not in e or not (Path(e["run"]) / "trace.nc").is_file():
            continue
        run = Path(e["run"])
        trace = read_trace(run / "trace.nc")
        info = read_manifest(run / "manifest.json").get("info", {})
        traces[e["split"]] = {
            **{k: np.asarray(v, dtype=float).reshape(-1).tolist() for k, v in trace.items()},
            "period": e["options"]["period"], "burn_in": e["options"]["burn_in"],
            "seconds": info.get("seconds"), "seconds_per_sweep": info.get("seconds_per_sweep"),
            "acceptance": info.get("acceptance")}
    write_out_json(out, traces, "--traces")
    return traces


def load_entries(folder: Path = ROOT / "benchmarks" / "results") -> dict:
    """The finished jobs of every ``pdia_table1*.json`` in ``folder``, merged, plus the n-gram
    and memoizer rows of ``benchmarks/hpyp_memoizer_table1.py --json hpyp_memoizer*.json``
    (the same registry calls, seed 0, on the paper's AIW split and the DNA split) where this
    script has not run them itself."""
    merged: dict = {}
    for path in sorted(Path(folder).glob("hpyp_memoizer*.json")):
        doc = json.loads(path.read_text())
        for r in doc["rows"] if isinstance(doc, dict) else doc:  # later rows win
            row = f"{r['order']}-gram" if r["method"] == "hpyp" else "memoizer"
            split = "aiw-paper" if r["data"] == "aiw" else "dna"
            merged[f"{split}/{row}"] = {
                "split": split, "dataset": r["data"], "row": row, "perplexity": r["perplexity"],
                "n_symbols": r["n_symbols"], "n_states": r.get("n_states"),
                "fit_seconds": r.get("fit_seconds"), "source": path.name,
                "budget": (f"{r['burn_in']} + {r['iterations'] - r['burn_in']}"
                           if r.get("iterations") else "one particle")}
    for path in sorted(Path(folder).glob("pdia_table1*.json")):
        merged.update(json.loads(path.read_text()).get("entries", {}))
    return merged


if __name__ == "__main__":
    sys.exit(main())
