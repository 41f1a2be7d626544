"""Cost of one CGS-PFA sweep in ns per (N x T), beside a memory-floor loop over the same arrays.

The floor loop reads, for every free position, the same two count rows and the reciprocals
that the sampler reads (Eq. 9 of Shibata & Yoshinaka 2013), in the same order, and sums their
products -- without removing/adding counts, drawing or scanning. The ratio sweep/floor is the
price of the sampling itself. "moved" is the fraction of positions whose state changed in a
timed sweep: positions that keep their state cost less (no scan, no count update), so the
figures are taken after a warm-up, in the regime where a chain spends its time.

Data: PAutomaC problem 47 (15 letters, 1.1e6 tokens) from ../shared/data/pautomac when present
(its first strings up to ~1e5 tokens for the small size), else random strings over 15 letters.

    python benchmarks/cgs_pfa_speed.py [--quick] [--states 10 30 90] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus
from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel
from bayesfa.samplers.pfa.cgs_pfa import new_counts
from bayesfa.samplers.chains import free_positions
from machine import cpu_name  # benchmarks/machine.py: this script's folder is on sys.path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "pautomac"


@njit(cache=True, fastmath=True)
def floor_sweep(positions, tokens, z, c, ct, recip, beta):
    """Touch what one sweep touches (tokens, z, rows ``ct[a_t, z_{t+1}]``, ``c[z_{t-1}, a_{t-1}]``,
    ``recip``) in the same order, with the same arithmetic, but no updates or draws."""
    width = c.shape[2]
    b = np.float32(beta)
    acc = np.float32(0.0)
    for m in range(positions.shape[0]):
        t = positions[m]
        ap = tokens[t - 1]
        a = tokens[t]
        p = z[t - 1]
        n = z[t + 1]
        s = np.float32(0.0)
        for k in range(width):
            s += (ct[a, n, k] + b) * (c[p, ap, k] + b) * recip[k]
        acc += s
    return acc


def read_pautomac(path: Path, max_tokens: int | None = None) -> Corpus:
    """A PAutomaC ``.train`` file (``count alphabet`` then ``length letters...`` per line)."""
    with open(path) as f:
        _, alphabet = map(int, f.readline().split())
        strings, total = [], 0
        for line in f:
            fields = line.split()
            if not fields:
                continue
            s = [int(x) for x in fields[1:]]
            if max_tokens is not None and total + len(s) + 1 > max_tokens:
                break
            strings.append(s)
            total += len(s) + 1
    return Corpus.from_strings(strings, alphabet)


def synthetic(n_tokens: int, alphabet: int = 15, seed: int = 0) -> Corpus:
    rng = np.random.default_rng(seed)
    strings, total = [], 0
    while total < n_tokens:
        s = rng.integers(0, alphabet, size=rng.geometric(1 / 9) - 1)
        strings.append(s)
        total += s.size + 1
    return Corpus.from_strings(strings, alphabet)


def corpora(data: Path, sizes):
    path = data / "47.pautomac.train"
    out = []
    for size in sizes:
        if path.is_file():
            corpus = read_pautomac(path, None if size >= 1_000_000 else size)
            out.append((f"PAutomaC 47{'' if size >= 1_000_000 else ' (prefix)'}", corpus))
        else:
            out.append(("synthetic", synthetic(size)))
    return out


def bench(corpus: Corpus, n_states: int, beta: float, repeats: int, warmup: int, seed: int = 0):
    """``(sweep, floor, moved)``: ns per N*T of one sweep and of the floor loop (best of
    ``repeats``, after ``warmup`` sweeps from a random path), and the fraction of free
    positions whose state changed per timed sweep."""
    rng = np.random.default_rng(seed)
    tokens = corpus.tokens
    positions = free_positions(tokens)
    n_symbols = corpus.alphabet_size + 1
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
    c, ct, ci, recip = new_counts(n_states, n_symbols)
    kernel.fill_counts(tokens, z, c, ct, ci, recip, beta)
    kernel.sweeps(warmup, positions, tokens, z, c, ct, ci, recip, rng, beta)
    units = n_states * tokens.size
    best_sweep = best_floor = np.inf
    moved = 0
    for _ in range(repeats):
        before = z.copy()
        t0 = time.perf_counter()
        kernel.sweeps(1, positions, tokens, z, c, ct, ci, recip, rng, beta)
        best_sweep = min(best_sweep, time.perf_counter() - t0)
        moved += np.count_nonzero(z != before)
        t0 = time.perf_counter()
        floor_sweep(positions, tokens, z, c, ct, recip, beta)
        best_floor = min(best_floor, time.perf_counter() - t0)
    return best_sweep * 1e9 / units, best_floor * 1e9 / units, moved / (repeats * max(1, positions.size))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T ~ 1e5 only, fewer repeats")
    parser.add_argument("--states", type=int, nargs="+", default=[10, 30, 90])
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    sizes = [100_000] if args.quick else [100_000, 1_000_000]
    repeats, warmup = (5, 20) if args.quick else (10, 50)
    # compile (or load from cache) before timing
    bench(synthetic(200), 3, args.beta, 1, 1)
    cpu = cpu_name()
    print(f"# CGS-PFA sweep cost: {cpu}, {os.cpu_count()} cores, one thread, beta={args.beta}, "
          f"{warmup} warm-up sweeps, best of {repeats}, {time.strftime('%Y-%m-%d')}")
    print(f"{'data':<22} {'T':>9} {'A':>3} {'N':>4} {'sweep ns/NT':>12} {'floor ns/NT':>12} "
          f"{'ratio':>6} {'ms/sweep':>9} {'moved':>6}")
    for name, corpus in corpora(args.data, sizes):
        for n_states in args.states:
            sweep, floor, moved = bench(corpus, n_states, args.beta, repeats, warmup)
            ms = sweep * n_states * corpus.n_tokens * 1e-6
            print(f"{name:<22} {corpus.n_tokens:>9} {corpus.alphabet_size + 1:>3} {n_states:>4} "
                  f"{sweep:>12.2f} {floor:>12.2f} {sweep / floor:>6.2f} {ms:>9.1f} {moved:>6.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
