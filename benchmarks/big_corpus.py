"""CGS-PFA on generated corpora of 1, 10 and 100 million tokens (issue 41 items 1-3): the read
time, the count type, ns per N*T of a sweep at N = 10 and 50, and the sweep's ratio to the
memory floor.

    python benchmarks/big_corpus.py --tokens 1000000 10000000 100000000 --states 10 50 \\
        --out benchmarks/results/big_corpus.json

For each size: a corpus of random strings over 8 letters (geometric lengths, mean 19 letters,
about one in twenty empty; benchmarks/read_speed.generate) and a 20,000-token test file are
written to a scratch folder; ``read_sample`` is timed in this process, then, at the first N of
``--states``, ``bayesfa fit TRAIN --method cgs-pfa --states N --iterations 10 --burn-in 5
--period 1 --chains 1 --kernel gibbs --predict TEST`` runs in a child process; its manifest
gives the count type, and the prediction file must have one row per test string.

The sweep (``_cgs_pfa_kernel.sweeps``, the kernel every CGS-PFA fit runs, with the counts in
the type the fit chooses: ``cgs_pfa.count_dtype``) is timed in this process for each N, from a
uniformly random path: one sweep that compiles and warms up, then ``--sweeps`` sweeps, each
timed alone in CPU seconds (``time.process_time``; the machine is shared, so wall time would
count other processes' turns); the least of them gives ns per N*T (T tokens, end markers
included, as before).

The memory floor of a sweep is the time to move, at the machine's memory bandwidth, the bytes
it must touch. Bandwidth: a copy of a 512 MiB float64 array, its bytes read and written over
its CPU seconds, the best of 3, measured in this process just before the sweeps of each size.
Bytes a sweep streams per free position (M of them): the position (int64, 8), its uniform
(float64, written by ``rng.random`` then read: 16), the letters (int32, 4) and the path
(int32, read and written back: 8), 36 bytes; ``floor_stream = 36 M / bandwidth``. The count
rows the kernel reads at each position (``ct[a, n, :]``, ``c[p, ap, :]`` and ``recip``, W
values each, W = ``padded_width(N)``, 4 or 8 bytes a value) stay in cache at these N; counted
as memory traffic too they give ``floor_touched = (36 + 3 W itemsize) M / bandwidth``, the
floor were they read from memory. The ratios are the sweep's CPU time over each floor."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_json  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402
from read_speed import generate  # noqa: E402

from bayesfa.pautomac import read_sample, read_solution  # noqa: E402
from bayesfa.provenance import portable_command  # noqa: E402


#: Bytes a sweep streams from memory per free position (see the module docstring).
STREAM_BYTES = 8 + 16 + 4 + 8


def bandwidth(n_bytes: int = 1 << 29, repeats: int = 3) -> float:
    """Bytes a CPU second a large copy moves (read and written), the best of ``repeats``."""
    a = np.ones(n_bytes // 8)
    b = np.empty_like(a)
    np.copyto(b, a)  # pages touched
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        np.copyto(b, a)
        best = min(best, time.process_time() - t)
    return 2 * a.nbytes / best


def sweep_seconds(corpus, states: int, sweeps: int, seed: int) -> tuple[float, str]:
    """The least CPU seconds of one sweep over ``corpus`` at ``states`` states (after one
    sweep that compiles and warms up), and the counts' type."""
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern
    from bayesfa.samplers.pfa.cgs_pfa import count_dtype, new_counts

    rng = np.random.default_rng(seed)
    tokens = corpus.tokens
    positions = free_positions(tokens)
    z = random_path(tokens, states, rng)
    dtype = count_dtype(corpus.n_tokens)
    state = new_counts(states, corpus.alphabet_size + 1, dtype)
    kern.fill_counts(tokens, z, *state, 0.05)
    kern.sweeps(1, positions, tokens, z, *state, rng, 0.05)
    best = float("inf")
    for _ in range(sweeps):
        t = time.process_time()
        kern.sweeps(1, positions, tokens, z, *state, rng, 0.05)
        best = min(best, time.process_time() - t)
    return best, np.dtype(dtype).name


def one_size(folder: Path, tokens: int, states: list[int], sweeps: int, seed: int) -> list[dict]:
    from bayesfa.samplers.chains import free_positions
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    train, test = folder / f"t{tokens}.train", folder / f"t{tokens}.test"
    generate(train, tokens, 8, seed)
    generate(test, 20_000, 8, seed + 1)
    t = time.process_time()
    corpus = read_sample(train)
    read_s = time.process_time() - t
    run, pred = folder / f"run{tokens}", folder / f"pred{tokens}.txt"
    cmd = [sys.executable, "-m", "bayesfa.cli", "fit", str(train), "--method", "cgs-pfa",
           "--states", str(states[0]), "--iterations", "10", "--burn-in", "5", "--period", "1",
           "--chains", "1", "--kernel", "gibbs", "--seed", "1", "--predict", str(test), "--quiet",
           "--out", str(run)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    fit_wall = time.perf_counter() - t
    subprocess.run([sys.executable, "-m", "bayesfa.cli", "predict", str(run), str(test),
                    "--out", str(pred)], check=True)
    rows = read_solution(pred).size
    n_test = read_sample(test).n_strings
    manifest = json.loads((run / "manifest.json").read_text())
    shutil.rmtree(run)
    common = {"tokens": corpus.n_tokens, "strings": corpus.n_strings, "read_cpu_s": read_s,
              "read_mtokens_per_cpu_s": corpus.n_tokens / read_s / 1e6, "fit_states": states[0],
              "fit_wall_s": fit_wall, "fit_count_dtype": manifest.get("info", {}).get("count_dtype"),
              "prediction_rows": rows, "test_strings": n_test}
    m = int(free_positions(corpus.tokens).size)
    out = []
    for n in states:
        load = os.getloadavg()
        bw = bandwidth()
        seconds, dtype = sweep_seconds(corpus, n, sweeps, seed)
        touched = STREAM_BYTES + 3 * padded_width(n) * np.dtype(dtype).itemsize
        out.append({**common, "states": n, "count_dtype": dtype, "free_positions": m,
                    "sweep_cpu_s": seconds,
                    "ns_per_state_token": seconds / (n * corpus.n_tokens) * 1e9,
                    "bandwidth_bytes_per_s": bw,
                    "floor_stream_s": STREAM_BYTES * m / bw, "floor_touched_s": touched * m / bw,
                    "ratio_to_stream_floor": seconds / (STREAM_BYTES * m / bw),
                    "ratio_to_touched_floor": seconds / (touched * m / bw),
                    "load_average_before": load, "load_average_after": os.getloadavg()})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1_000_000, 10_000_000, 100_000_000])
    ap.add_argument("--states", type=int, nargs="+", default=[10, 50])
    ap.add_argument("--sweeps", type=int, default=3, help="timed sweeps per size and N")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.out:  # refused before any work when bayesfa did not write it
        check_out(args.out)
    commit = git_commit()  # the code that runs, read before the checkout can change
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tokens in args.tokens:
            for r in one_size(Path(tmp), tokens, args.states, args.sweeps, args.seed):
                rows.append(r)
                print(f"{r['tokens']:>12,} tokens, N = {r['states']}: read {r['read_cpu_s']:.1f} CPU s "
                      f"({r['read_mtokens_per_cpu_s']:.1f} M/s); sweep {r['ns_per_state_token']:.2f} ns "
                      f"per N*T ({r['count_dtype']}), {r['ratio_to_stream_floor']:.1f} x the stream "
                      f"floor, {r['ratio_to_touched_floor']:.2f} x the touched floor (bandwidth "
                      f"{r['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s); load "
                      f"{r['load_average_before'][0]:.1f}; fit at N = {r['fit_states']}: "
                      f"{r['fit_wall_s']:.0f} s wall, {r['fit_count_dtype']} counts, "
                      f"{r['prediction_rows']} rows for {r['test_strings']} test strings", flush=True)
    for n in args.states:
        at = [r for r in rows if r["states"] == n]
        for r in at:
            r["sweep_cost_over_smallest"] = r["ns_per_state_token"] / at[0]["ns_per_state_token"]
    result = {"commit": commit, "command": portable_command([sys.executable, *sys.argv]),
              "cpu": cpu_name(), "states": args.states, "rows": rows}
    if args.out:
        write_out_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
