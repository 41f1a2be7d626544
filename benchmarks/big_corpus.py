"""CGS-PFA on generated corpora of 1, 10 and 100 million tokens (issue 41 items 1-3): the read
time, ns per N*T of a sweep and the count type, through the command line.

    python benchmarks/big_corpus.py --tokens 1000000 10000000 100000000 --states 20 \\
        --out benchmarks/results/big_corpus.json

For each size: a corpus of random strings over 8 letters (geometric lengths, mean 19 letters,
about one in twenty empty; benchmarks/read_speed.generate) and a 1,000-string test file are
written to a scratch folder; `read_sample` is timed in this process, then `bayesfa fit TRAIN
--method cgs-pfa --states N --iterations 10 --burn-in 5 --period 1 --chains 1 --kernel gibbs --predict
TEST` runs in a child process; its manifest gives the count type and the sweep's ns per N*T
and the prediction file must have one row per test string. The sweep's cost, ns per N*T, is
measured in this process as the difference of two fits' chain seconds (12 and 2 sweeps, after a
warm-up fit that compiles the kernels), so that neither compilation nor the chain's set-up
counts."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_json  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402
from read_speed import generate  # noqa: E402

import bayesfa  # noqa: E402
from bayesfa.pautomac import read_sample, read_solution  # noqa: E402
from bayesfa.provenance import portable_command  # noqa: E402


def one_size(folder: Path, tokens: int, states: int, seed: int) -> dict:
    train, test = folder / f"t{tokens}.train", folder / f"t{tokens}.test"
    generate(train, tokens, 8, seed)
    generate(test, 20_000, 8, seed + 1)
    t = time.process_time()
    corpus = read_sample(train)
    read_s = time.process_time() - t
    run, pred = folder / f"run{tokens}", folder / f"pred{tokens}.txt"
    cmd = [sys.executable, "-m", "bayesfa.cli", "fit", str(train), "--method", "cgs-pfa",
           "--states", str(states), "--iterations", "10", "--burn-in", "5", "--period", "1", "--chains", "1",
           "--kernel", "gibbs", "--seed", "1", "--predict", str(test), "--quiet", "--out", str(run)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    fit_wall = time.perf_counter() - t
    subprocess.run([sys.executable, "-m", "bayesfa.cli", "predict", str(run), str(test),
                    "--out", str(pred)], check=True)
    rows = read_solution(pred).size
    n_test = read_sample(test).n_strings
    manifest = json.loads((run / "manifest.json").read_text())
    info = manifest.get("info", {})
    seconds = {}
    for sweeps in (2, 2, 12):  # the first fit compiles
        fit = bayesfa.fit(corpus, method="cgs-pfa", states=states, iterations=sweeps, burn_in=1,
                          period=1, chains=1, kernel="gibbs", seed=1)
        seconds[sweeps] = fit.info["chain_seconds"][0]
    sweep_ns = (seconds[12] - seconds[2]) / (10 * states * corpus.n_tokens) * 1e9
    return {"tokens": corpus.n_tokens, "strings": corpus.n_strings, "read_cpu_s": read_s,
            "read_mtokens_per_cpu_s": corpus.n_tokens / read_s / 1e6, "fit_wall_s": fit_wall,
            "count_dtype": info.get("count_dtype"), "ns_per_state_token": sweep_ns,
            "prediction_rows": rows, "test_strings": n_test}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1_000_000, 10_000_000, 100_000_000])
    ap.add_argument("--states", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.out:  # refused before any work when bayesfa did not write it
        check_out(args.out)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tokens in args.tokens:
            r = one_size(Path(tmp), tokens, args.states, args.seed)
            rows.append(r)
            print(f"{r['tokens']:>12,} tokens: read {r['read_cpu_s']:.1f} CPU s "
                  f"({r['read_mtokens_per_cpu_s']:.1f} M/s); fit {r['fit_wall_s']:.0f} s wall, "
                  f"{r['count_dtype']} counts, sweep {r['ns_per_state_token']:.2f} ns per N*T; "
                  f"{r['prediction_rows']} rows for {r['test_strings']} test strings", flush=True)
    base = rows[0]["ns_per_state_token"]
    for r in rows:
        r["sweep_cost_over_smallest"] = r["ns_per_state_token"] / base
    result = {"commit": git_commit(), "command": portable_command([sys.executable, *sys.argv]),
              "cpu": cpu_name(), "states": args.states, "rows": rows}
    if args.out:
        write_out_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
