"""The iPFA (direct and blocked samplers) and ``cgs-pfa --auto`` on a corpus of 2**24 tokens or
more, where their counts are float64 (issue 41 item 1): each runs, its ``info`` names the count
type, and the last draw's counts add up to the corpus's tokens exactly.

    python benchmarks/wide_counts.py --budget 240 --out benchmarks/results/wide_counts.json
    python benchmarks/wide_counts.py --budget 240 --parts auto --out benchmarks/results/wide_counts_auto.json

The corpus is PAutomaC 24's training set tiled until it has 2**24 tokens or more (16,802,370
tokens, 2,340,000 strings). Each part runs in a child process (its peak resident memory by
``resource.getrusage``): ``ipfa`` with ``--states 5``, two sweeps (one
burn-in, one draw), one chain, for each sampler; then ``cgs-pfa --auto --budget B --chains 1
--seed 1`` through :func:`bayesfa.fit`, which checks the memory estimate against the memory
available (:func:`bayesfa.memory.check_fits`, the check of ``bayesfa fit``): each row gives
the estimate, the memory available then and the real peak. Until 4e30cd5 the ``--auto``
estimate held a forward pass over every string of a test set the size of the training corpus
at N = 384 (24.2 GB), and this script raised ``BAYESFA_AVAILABLE_MEMORY`` to let it through;
``--raise-available`` still does."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_json  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402


PARTS = ("direct", "blocked", "auto")


def big_corpus():
    """PAutomaC 24's training strings repeated until there are 2**24 tokens or more."""
    import dataclasses

    import numpy as np

    from bayesfa.datasets import pautomac_path
    from bayesfa.pautomac import read_sample

    base = read_sample(pautomac_path(24, "train"))
    reps = (1 << 24) // base.n_tokens + 1
    offsets = np.concatenate([[0], np.cumsum(np.tile(np.diff(base.offsets), reps))])
    return dataclasses.replace(base, tokens=np.tile(base.tokens, reps), offsets=offsets)


def part(name: str, budget: float) -> dict:
    """One part, in this (child) process."""
    import bayesfa
    from bayesfa.methods import get_method

    from bayesfa.memory import available_memory

    corpus = big_corpus()
    available = available_memory()
    t0, c0 = time.perf_counter(), time.process_time()
    if name == "auto":
        opts = {"auto": True, "budget": budget, "chains": 1}
        estimate = get_method("cgs-pfa").estimate_memory(corpus, opts)
        run = bayesfa.fit(corpus, method="cgs-pfa", seed=1, **opts)
        extra = {"winner": run.info["auto"]["winner"],
                 "ladder": [r["states"] for r in run.info["auto"]["ladder"]],
                 "final_sweeps": run.info["auto"]["final"]["sweeps"],
                 "blocked_off": run.info["auto"]["final"].get("blocked_off"),
                 "overshoot": run.info["auto"]["overshoot"]}
    else:
        opts = dict(states=5, iterations=2, burn_in=1, period=1, chains=1, sampler=name)
        estimate = get_method("ipfa").estimate_memory(corpus, opts)
        run = bayesfa.fit(corpus, method="ipfa", seed=1, **opts)
        extra = {"states_in_use": int(run._trace_arrays()["n_states"][0, -1])}
    counts = run.arrays["counts"][0, -1]
    return {"part": name, "n_tokens": int(corpus.n_tokens), "count_dtype": run.info["count_dtype"],
            "last_draw_counts_sum": int(counts.sum()), "exact": int(counts.sum()) == corpus.n_tokens,
            "wall_seconds": round(time.perf_counter() - t0, 1),
            "cpu_seconds": round(time.process_time() - c0, 1),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "memory_estimate_bytes": int(estimate), "memory_available_bytes": int(available),
            "available_raised": "BAYESFA_AVAILABLE_MEMORY" in os.environ, **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=240.0, help="--auto's CPU seconds")
    parser.add_argument("--out", type=Path, default=None, help="a JSON file of the results")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS,
                        help="which parts to run (default: all)")
    parser.add_argument("--raise-available", action="store_true",
                        help="run with BAYESFA_AVAILABLE_MEMORY at 64 GiB (the memory check off)")
    parser.add_argument("--part", default=None, help=argparse.SUPPRESS)  # a child's part
    args = parser.parse_args()
    if args.part is not None:
        print(json.dumps(part(args.part, args.budget)))
        return
    if args.out is not None:
        check_out(args.out)
    commit = git_commit()  # the code that runs, read before the checkout can change
    rows = []
    env = dict(os.environ)
    if args.raise_available:
        env["BAYESFA_AVAILABLE_MEMORY"] = str(64 << 30)
    for name in args.parts:
        load = os.getloadavg()
        child = subprocess.run([sys.executable, __file__, "--part", name, "--budget", str(args.budget)],
                               env=env, capture_output=True, text=True)
        if child.returncode != 0:  # e.g. refused by the memory check: its one line
            sys.exit(f"wide_counts.py: part {name} failed: {child.stderr.strip().splitlines()[-1:]}")
        rows.append({**json.loads(child.stdout.strip().splitlines()[-1]),
                     "load_average_before": load, "load_average_after": os.getloadavg()})
        print(json.dumps(rows[-1]), flush=True)
    if args.out is not None:
        command = ["python", "benchmarks/wide_counts.py", "--budget", str(args.budget)]
        if args.parts != list(PARTS):
            command += ["--parts", *args.parts]
        if args.raise_available:
            command.append("--raise-available")
        write_out_json(args.out, {"command": " ".join(command),
                                  "commit": commit, "cpu": cpu_name(), "rows": rows})


if __name__ == "__main__":
    main()
