"""How well ``--auto``'s cost model predicts a CGS-PFA sweep at each N of its ladder (issue 37).

    python benchmarks/auto_calibration.py [--problems 47,18] [--repeats 2]
        [--data ../shared/data/pautomac] [--out benchmarks/results/auto_calibration.json]

``bayesfa.samplers.pfa.auto.calibrate`` models a sweep's CPU for ``--auto``'s plan (the ladder,
its ceiling and phase 2, out to N = 384). Under ``RUNG_TABLE_BUDGET`` it is the line ``M
(position_seconds + W lane_seconds)`` (M positions, W the padded width of N states) through the
fastest of 3 timings at N = 31 and N = 127; from that budget on (every problem's share of the
all-47 runs), a table of a sweep timed at every N of the ladder (``rung_seconds``). This script
calls ``calibrate`` ``--repeats`` times as such a budget does (``rungs=True``; ``--line``: as
a small budget does) and, on each problem's first ``CALIBRATION_POSITIONS`` free positions
(the strings ``calibrate`` times; the first 200 strings held out as ``fit_auto`` does), times a
sweep at every N of the ladder by its own loop (the fastest of 3 windows of
``TIMING_WINDOW`` CPU seconds of this thread, on a random path; the N interleaved within each
window round, so that a change of the machine's load falls on all of them alike). It reports,
per N, the measured CPU ns per position and the model's (each call), and so how far the model
errs and how much it moves between calls. Nothing is scored; no test string is read.

The machine's load is part of the measurement (the costs are CPU seconds, which on a shared
machine rise with what runs beside: caches are shared); the output records the load average
before and after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's scripts)
from machine import cpu_name, git_commit  # noqa: E402

from bayesfa.pautomac import read_sample  # noqa: E402
from bayesfa.provenance import portable_command  # noqa: E402
from bayesfa.samplers.chains import free_positions  # noqa: E402
from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern  # noqa: E402
from bayesfa.samplers.pfa import auto, cgs_pfa  # noqa: E402

HELD = 200  # fit_auto's held-out strings come first; calibrate times the kept ones


def measure(path: Path, repeats: int, rungs: bool = True) -> dict:
    corpus = read_sample(path)
    kept = corpus.subset(np.arange(min(HELD, corpus.n_strings), corpus.n_strings))
    held = corpus.subset(np.arange(min(HELD, corpus.n_strings)))
    with auto.front_session(cgs_pfa):
        fitted = [auto.calibrate(kept, held, rungs=rungs) for _ in range(repeats)]
        dtype = cgs_pfa.count_dtype(kept.n_tokens)
        n_strings = int(np.searchsorted(kept.offsets, auto.CALIBRATION_POSITIONS)) or 1
        part = kept.subset(np.arange(min(n_strings, kept.n_strings)))
        tokens, n_symbols = part.tokens, part.alphabet_size + 1
        positions = free_positions(tokens)
        rng = np.random.default_rng(0)
        rungs = auto.ladder()
        states = {}
        for n in rungs:
            z = np.zeros(tokens.size + 1, dtype=np.int32)
            z[positions] = rng.integers(1, n + 1, size=positions.size, dtype=np.int32)
            state = cgs_pfa.new_counts(n, n_symbols, dtype)
            kern.fill_counts(tokens, z, *state, 0.05)
            kern.sweeps(1, positions, tokens, z, *state, rng, 0.05)  # compiled / from cache
            states[n] = (z, state)
        best = {n: math.inf for n in rungs}
        for _ in range(3):
            for n in rungs:
                z, state = states[n]
                best[n] = min(best[n], auto._min_time(  # one window, as calibrate's
                    lambda: kern.sweeps(1, positions, tokens, z, *state, rng, 0.05), repeats=1))
    per_position = {n: best[n] / max(1, positions.size) for n in rungs}
    rows = []
    for n in rungs:
        model = [auto.sweep_cost(f, n, 1) for f in fitted]
        rows.append({"states": n, "padded_width": int(kern.padded_width(n)),
                     "measured_ns_per_position": per_position[n] * 1e9,
                     "model_ns_per_position": [m * 1e9 for m in model],
                     "measured_over_model": [per_position[n] / m for m in model]})
    return {"positions_timed": int(positions.size), "calibrate": fitted, "rows": rows}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="47,18")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/pautomac"))
    ap.add_argument("--line", action="store_true",
                    help="calibrate as a budget under RUNG_TABLE_BUDGET does (the line, no table)")
    ap.add_argument("--out", default="benchmarks/results/auto_calibration.json")
    args = ap.parse_args(argv)
    out = Path(args.out)
    check_out(out, out.with_suffix(".md"))
    result = {"commit": git_commit(), "cpu": cpu_name(),
              "command": portable_command(["python", "benchmarks/auto_calibration.py",
                                           *(sys.argv[1:] if argv is None else argv)]),
              "load_average_before": list(os.getloadavg()), "problems": {}}
    for p in (int(x) for x in args.problems.split(",")):
        result["problems"][str(p)] = measure(Path(args.data) / f"{p}.pautomac.train", args.repeats,
                                               rungs=not args.line)
        print(f"problem {p} done", flush=True)
    result["load_average_after"] = list(os.getloadavg())
    write_out_text(out, json.dumps(result, indent=1) + "\n")
    lines = [f"Command: `{result['command']}` at {result['commit']} ({result['cpu']}); load average "
             f"(1 min) {result['load_average_before'][0]:.1f} before, "
             f"{result['load_average_after'][0]:.1f} after.", ""]
    for p, r in result["problems"].items():
        fits = "; ".join(f"position {f['position_seconds']:.2e} s, lane {f['lane_seconds']:.2e} s"
                         + (" (the model: its table of every N)" if "rung_seconds" in f else "")
                         for f in r["calibrate"])
        lines += [f"Problem {p} ({r['positions_timed']} positions timed). `calibrate` over "
                  f"{len(r['calibrate'])} calls: {fits}.", "",
                  "| N | W | measured ns / position | model ns / position (each call) | measured / model |",
                  "|---|---|---|---|---|"]
        for row in r["rows"]:
            lines.append(f"| {row['states']} | {row['padded_width']} | "
                         f"{row['measured_ns_per_position']:.1f} | "
                         + ", ".join(f"{m:.1f}" for m in row["model_ns_per_position"]) + " | "
                         + ", ".join(f"{x:.2f}" for x in row["measured_over_model"]) + " |")
        lines.append("")
    write_out_text(out.with_suffix(".md"), "\n".join(lines))
    return result


if __name__ == "__main__":
    main()
