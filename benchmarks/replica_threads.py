"""Replica exchange on threads (``--replica-threads``, issue 37 item 1): wall time of one
replica-exchange chain with its R tempered sweeps a round run one after the other and on T
threads, in the same process and in turn, and the check that both end in the same state.

Each round is timed as the whole chain runs it (R tempered sweeps, then a swap round), from
the same start: ``--rounds`` rounds after ``--warmup`` rounds that compile the kernels, the
best of ``--repeats``. Printed: wall and process-CPU seconds a round for T = 1 and for T, and
their ratio (1-thread wall over T-thread wall: the speed-up; at most min(R, T, idle cores)).
The final paths and swap counts of the two runs must be identical (exit 1 otherwise).

Data: the bundled PAutomaC problem 24's training strings (``bayesfa/data/pautomac``).

    python benchmarks/replica_threads.py [--states 20] [--replicas 4] [--threads 2]
        [--rounds 20] [--repeats 3] [--out benchmarks/results/replica_threads.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's scripts)
from machine import cpu_name, git_commit  # noqa: E402

from bayesfa.pautomac import read_sample  # noqa: E402
from bayesfa.samplers.chains import free_positions, random_path  # noqa: E402
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs  # noqa: E402
from bayesfa.samplers.pfa._replica_kernel import Replicas  # noqa: E402
from bayesfa.samplers.pfa.cgs_pfa import new_counts  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "bayesfa" / "data" / "pautomac" / "24.pautomac.train"


def chain(corpus, n_states: int, n_replicas: int, beta: float, threads: int, seed: int) -> Replicas:
    """A replica chain on ``corpus`` (burn-in 0: the ladder stays geometric), every slot from a
    uniformly random path drawn by the chain's Generator, as the front starts one."""
    tokens = corpus.tokens
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    states = []
    for _ in range(n_replicas):
        z = random_path(tokens, n_states, rng)
        counts = new_counts(n_states, corpus.alphabet_size + 1)
        gibbs.fill_counts(tokens, z, *counts, beta)
        states.append((z, *counts))
    return Replicas(tokens, free_positions(tokens), states, beta, rng, 0, threads=threads)


def timed(corpus, args, threads: int) -> tuple[float, float, Replicas]:
    """(wall, CPU) seconds a round, best of ``args.repeats`` chains from the same seed, and the
    last chain."""
    best_wall = best_cpu = float("inf")
    for _ in range(args.repeats):
        rex = chain(corpus, args.states, args.replicas, args.beta, threads, args.seed)
        rex.sweeps(args.warmup)
        w, c = time.perf_counter(), time.process_time()
        rex.sweeps(args.rounds)
        best_wall = min(best_wall, (time.perf_counter() - w) / args.rounds)
        best_cpu = min(best_cpu, (time.process_time() - c) / args.rounds)
    return best_wall, best_cpu, rex


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", type=int, default=20)
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--beta", type=float, default=0.1)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.out:
        check_out(args.out)
    corpus = read_sample(DATA)
    one_wall, one_cpu, one = timed(corpus, args, 1)
    many_wall, many_cpu, many = timed(corpus, args, args.threads)
    same = (all(np.array_equal(a[0], b[0]) for a, b in zip(one.states, many.states))
            and one.stats() == many.stats())
    row = {"commit": git_commit(), "cpu": cpu_name(), "cores": os.cpu_count(),
           "load_average": os.getloadavg(), "n_tokens": int(corpus.n_tokens),
           "command": "python benchmarks/replica_threads.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "settings": vars(args), "same_chain": bool(same),
           "one_thread": {"wall": one_wall, "cpu": one_cpu},
           "threads": {"wall": many_wall, "cpu": many_cpu},
           "wall_ratio": one_wall / many_wall}
    print(f"PAutomaC 24 ({corpus.n_tokens} tokens), N = {args.states}, R = {args.replicas}: a round "
          f"(R tempered sweeps + a swap round) on 1 thread {one_wall * 1e3:.1f} ms wall "
          f"({one_cpu * 1e3:.1f} ms CPU), on {args.threads} threads {many_wall * 1e3:.1f} ms wall "
          f"({many_cpu * 1e3:.1f} ms CPU): speed-up {one_wall / many_wall:.2f}; "
          f"same chain: {same}; load average {os.getloadavg()[0]:.2f}")
    if args.out:
        write_out_text(args.out, json.dumps(row, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
