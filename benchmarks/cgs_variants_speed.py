"""Cost of one sweep of CGS-SG and of CGS-HMM in ns per (N x T), beside floor loops (same run).

Each floor loop reads, for every free position, the same count rows the sampler reads for its
conditional, in the same order, and sums their products -- no count updates, no draws, no scan:

- CGS-HMM (Sect. 4.4): ``et[a_t]``, ``mv[z_{t-1}]``, ``mvt[z_{t+1}]``, ``ci``, ``cm``;
- CGS-SG (Sect. 3, Algorithm 2): ``gr[z_{t-1}, a_{t-1}]``, ``grt[a_t, z_{t+1}]``, ``c``, ``ct``
  rows, ``ci``, ``v``.

CGS-SG is timed twice: with the update of ``G`` every ``N A`` positions (the default, Sect. 3)
and with ``G`` fixed (``z`` moves only), so the share of the graph updates is visible. The
graph update visits every edge of the full NFA, ``E = (N+1)((A-1)N+1)``, per ``N A``
positions: about ``N`` edge visits (one uniform each) per position, against ``N`` weights.

Data: PAutomaC problem 47 (15 letters) from ../shared/data/pautomac when present (its first
strings up to ~1e5 tokens), else random strings over 15 letters. Times are CPU time of the
thread (not wall time, which other jobs on a shared machine inflate); they still vary by tens
of percent with load (caches, frequency): take the ratios to the floor loop of the same run.

    python benchmarks/cgs_variants_speed.py [--states 10 30 90] [--tokens 100000] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cgs_pfa_speed import DEFAULT_DATA, read_pautomac, synthetic  # noqa: E402
from machine import best_of, cpu_name  # noqa: E402

from bayesfa.samplers.pfa import _cgs_hmm_kernel as hmm_kernel  # noqa: E402
from bayesfa.samplers.pfa import _cgs_sg_kernel as sg_kernel  # noqa: E402
from bayesfa.samplers.pfa import cgs_hmm, cgs_sg  # noqa: E402


@njit(cache=True)
def floor_hmm(positions, tokens, z, et, mv, mvt, ci, cm, alpha, beta):
    n_states = ci.shape[0] - 1
    acc = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        a = tokens[t]
        p = z[t - 1]
        n = z[t + 1]
        s = 0.0
        for k in range(1, n_states + 1):
            s += (et[a, k] + alpha) * (mv[p, k] + beta) * (mvt[n, k] + beta) / ((ci[k] + 1.0) * (cm[k] + 1.0))
        acc += s
    return acc


@njit(cache=True)
def floor_sg(positions, tokens, z, c, ct, ci, gr, grt, v, beta):
    n_states = c.shape[0] - 1
    acc = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        ap = tokens[t - 1]
        a = tokens[t]
        p = z[t - 1]
        n = z[t + 1]
        s = 0.0
        for k in range(1, n_states + 1):
            if gr[p, ap, k] and grt[a, n, k]:
                s += (ct[a, n, k] + beta) * (c[p, ap, k] + beta) / (ci[k] + v[k] * beta)
        acc += s
    return acc


def bench_hmm(corpus, n_states, alpha, beta, repeats, warmup, seed=0):
    rng = np.random.default_rng(seed)
    tokens = corpus.tokens
    positions = cgs_hmm.free_positions(tokens)
    z = cgs_hmm.random_path(tokens, n_states, rng)
    state = cgs_hmm.new_state(n_states, corpus.alphabet_size + 1)
    hmm_kernel.fill_counts(tokens, z, *state)
    hmm_kernel.sweeps(warmup, positions, tokens, z, *state, rng, alpha, beta, 0)
    units = n_states * tokens.size
    sweep = best_of(lambda: hmm_kernel.sweeps(1, positions, tokens, z, *state, rng, alpha, beta, 0), repeats)
    floor = best_of(lambda: floor_hmm(positions, tokens, z, *state, alpha, beta), repeats)
    return sweep * 1e9 / units, floor * 1e9 / units


def bench_sg(corpus, n_states, beta, repeats, warmup, seed=0):
    rng = np.random.default_rng(seed)
    tokens = corpus.tokens
    positions = cgs_hmm.free_positions(tokens)
    n_symbols = corpus.alphabet_size + 1
    z = cgs_hmm.random_path(tokens, n_states, rng)
    st = cgs_sg.new_state(n_states, n_symbols)
    c, ct, ci, gr, grt, v, meta = st
    sg_kernel.fill_counts(tokens, z, c, ct, ci)
    sg_kernel.set_graph(gr, grt, v, meta, True)
    interval = n_states * n_symbols
    sg_kernel.sweeps(warmup, positions, tokens, z, *st, rng, beta, interval, 0)
    units = n_states * tokens.size
    with_g = best_of(lambda: sg_kernel.sweeps(1, positions, tokens, z, *st, rng, beta, interval, 0), repeats)
    z_only = best_of(lambda: sg_kernel.sweeps(1, positions, tokens, z, *st, rng, beta, 1 << 62, 0), repeats)
    floor = best_of(lambda: floor_sg(positions, tokens, z, c, ct, ci, gr, grt, v, beta), repeats)
    return with_g * 1e9 / units, z_only * 1e9 / units, floor * 1e9 / units, int(meta[0]), int(meta[2])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, nargs="+", default=[10, 30, 90])
    parser.add_argument("--tokens", type=int, default=100_000, help="prefix of problem 47; default 1e5")
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    path = args.data / "47.pautomac.train"
    corpus = read_pautomac(path, args.tokens) if path.is_file() else synthetic(args.tokens)
    name = "PAutomaC 47 (prefix)" if path.is_file() else "synthetic"
    small = synthetic(200)  # compile (or load from cache) before timing
    bench_hmm(small, 3, args.alpha, args.beta, 1, 1)
    bench_sg(small, 3, args.beta, 1, 1)
    cpu = cpu_name()
    print(f"# CGS-HMM / CGS-SG sweep cost: {cpu}, {os.cpu_count()} cores (shared, noisy), one thread, "
          f"alpha={args.alpha}, beta={args.beta}, {args.warmup} warm-up sweeps, thread CPU time, best of "
          f"{args.repeats}, {time.strftime('%Y-%m-%d')}; {name}, T={corpus.n_tokens}, "
          f"A={corpus.alphabet_size + 1}")
    print(f"{'N':>4} {'HMM ns/NT':>10} {'floor':>7} {'ratio':>6} | {'SG ns/NT':>9} {'z only':>7} "
          f"{'floor':>7} {'ratio':>6} {'|G|/E':>14}")
    for n in args.states:
        h, hf = bench_hmm(corpus, n, args.alpha, args.beta, args.repeats, args.warmup)
        s, sz, sf, size, full = bench_sg(corpus, n, args.beta, args.repeats, args.warmup)
        print(f"{n:>4} {h:>10.2f} {hf:>7.2f} {h / hf:>6.2f} | {s:>9.2f} {sz:>7.2f} {sf:>7.2f} "
              f"{s / sf:>6.2f} {f'{size}/{full}':>14}", flush=True)


if __name__ == "__main__":
    main()
