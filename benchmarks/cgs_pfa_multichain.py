"""Cost per chain of several CGS-PFA chains in one interleaved kernel, beside the one-chain kernel.

For each N: 8 chains (children of one SeedSequence) are warmed up by the one-chain kernel
(``_cgs_pfa_kernel.sweeps``), then one sweep is timed, in the same process and in turn, for
the one-chain kernel (chain 0), the floor loop of ``cgs_pfa_speed.py`` (chain 0's arrays: the
weight loop of Eq. 9 alone, no draws, no updates) and the interleaved kernel
(``_cgs_pfa_multichain_kernel.sweeps``) on copies of the first H chains' states, H = 1, 2, 4,
8, and the uniforms alone (one chain's ``M`` draws per sweep, as both kernels draw them: a
lower bound of any bit-identical kernel besides the floor). Figures are ns per N*T per sweep per chain, the best of ``--repeats`` rounds, in CPU time
of the thread (``time.thread_time``: the machine is shared) and in wall time.

Data: PAutomaC problem 47's first strings up to ~1e5 tokens (as ``cgs_pfa_speed.py --quick``),
else random strings over 15 letters.

    python benchmarks/cgs_pfa_multichain.py [--states 10 30] [--chains 1 2 4 8] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit
from numba.typed import List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cgs_pfa_speed import DEFAULT_DATA, corpora, floor_sweep  # noqa: E402
from pdia_speed import cpu_name  # noqa: E402

from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel  # noqa: E402
from bayesfa.samplers.pfa import _cgs_pfa_multichain_kernel as multi  # noqa: E402
from bayesfa.samplers.pfa.cgs_pfa import new_counts  # noqa: E402
from bayesfa.samplers.chains import free_positions  # noqa: E402


@njit(cache=True)
def draw_uniforms(rng, out):
    """``out[m] = rng.random()`` for every ``m``: one sweep's uniforms of one chain."""
    for m in range(out.shape[0]):
        out[m] = rng.random()


def warm_chains(corpus, n_states: int, n_chains: int, beta: float, warmup: int, seed: int = 0):
    """``n_chains`` chain states ``(z, c, ct, ci, recip, rng)`` after ``warmup`` one-chain sweeps
    from a uniformly random path (the front's initialisation)."""
    tokens = corpus.tokens
    positions = free_positions(tokens)
    chains = []
    for child in np.random.SeedSequence(seed).spawn(n_chains):
        rng = np.random.default_rng(child)
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        c, ct, ci, recip = new_counts(n_states, corpus.alphabet_size + 1)
        kernel.fill_counts(tokens, z, c, ct, ci, recip, beta)
        kernel.sweeps(warmup, positions, tokens, z, c, ct, ci, recip, rng, beta)
        chains.append((z, c, ct, ci, recip, rng))
    return positions, chains


def stacked(chains):
    """The interleaved kernel's state of ``chains`` (copies): ``z [T+1, H]``, ``c``, ``ct``,
    ``ci``, ``recip`` with a leading ``H``, and the typed list of Generators (the same objects)."""
    z = np.stack([ch[0] for ch in chains], axis=1)
    c, ct, ci, recip = (np.stack([ch[i] for ch in chains]) for i in (1, 2, 3, 4))
    return z, c, ct, ci, recip, List([ch[5] for ch in chains])


def bench(corpus, n_states: int, counts: list[int], beta: float, repeats: int, warmup: int):
    """``{name: (cpu, wall)}``: ns per N*T per sweep per chain, best of ``repeats`` rounds;
    names ``one-chain``, ``floor``, ``uniforms`` and the chain counts of ``counts``."""
    tokens = corpus.tokens
    positions, chains = warm_chains(corpus, n_states, max(counts), beta, warmup)
    z0, c0, ct0, ci0, recip0, rng0 = chains[0]
    states = {h: stacked(chains[:h]) for h in counts}
    units = n_states * tokens.size
    scratch = np.empty(positions.size)
    draw_rng = np.random.default_rng(0)
    best: dict = {}

    def timed(name, per, fn):
        c0_, w0 = time.thread_time(), time.perf_counter()
        fn()
        cpu, wall = time.thread_time() - c0_, time.perf_counter() - w0
        old = best.get(name, (np.inf, np.inf))
        best[name] = (min(old[0], cpu * 1e9 / (units * per)), min(old[1], wall * 1e9 / (units * per)))

    for _ in range(repeats):
        timed("one-chain", 1, lambda: kernel.sweeps(1, positions, tokens, z0, c0, ct0, ci0, recip0, rng0, beta))
        timed("floor", 1, lambda: floor_sweep(positions, tokens, z0, c0, ct0, recip0, beta))
        timed("uniforms", 1, lambda: draw_uniforms(draw_rng, scratch))
        for h in counts:
            z, c, ct, ci, recip, rngs = states[h]
            timed(h, h, lambda: multi.sweeps(1, positions, tokens, z, c, ct, ci, recip, rngs, beta))
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--chains", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    (name, corpus), = corpora(args.data, [args.tokens])
    small = corpora(args.data, [300])[0][1]
    bench(small, 3, args.chains, args.beta, 1, 1)  # compile (or load from the cache) first
    print(f"# CGS-PFA chains per kernel: {cpu_name()}, {os.cpu_count()} cores, one thread, {name}, "
          f"T={corpus.n_tokens}, beta={args.beta}, {args.warmup} warm-up sweeps, best of "
          f"{args.repeats}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average before {os.getloadavg()[0]:.1f}")
    print(f"{'N':>4} {'kernel':>14} {'cpu ns/NT/chain':>16} {'wall ns/NT/chain':>17} "
          f"{'/ one-chain':>11} {'/ floor':>8}")
    for n_states in args.states:
        best = bench(corpus, n_states, args.chains, args.beta, args.repeats, args.warmup)
        one, floor = best["one-chain"][0], best["floor"][0]
        for key, (cpu_ns, wall_ns) in best.items():
            label = key if isinstance(key, str) else f"{key} interleaved"
            print(f"{n_states:>4} {label:>14} {cpu_ns:>16.2f} {wall_ns:>17.2f} {cpu_ns / one:>11.2f} "
                  f"{cpu_ns / floor:>8.2f}", flush=True)
    print(f"# load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
