"""Cost of one CGS-PFA sweep per kernel in ns per (N x T), beside the floor loop, in one process.

Kernels: ``gibbs`` (:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`, O(N) per token), ``alias-mh``
(:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel`, O(1) alias-table proposals, two
Metropolis-Hastings steps per position), ``bucket-mh`` (:mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`,
O(1) table-free proposals, one step per position), ``bucket-mh-2step`` (the same with two
steps per position, ``build_sweep(None, 2)``), with ``--before FILE`` ``alias-before``: the
``sweeps`` of an earlier copy of the alias kernel's file (e.g. ``mkdir -p runs/old && git show
REV:bayesfa/samplers/pfa/_cgs_pfa_alias_kernel.py > runs/old/alias_before.py``), and the multi-chain kernel
of issue 12 item 2 when ``bayesfa.samplers.pfa._cgs_pfa_multichain_kernel`` exists (``--multichain``
chains in one call, 8 by default; its figures are per chain). The floor is :func:`benchmarks.cgs_pfa_speed.floor_sweep` (the reads of one Gibbs
sweep, no draws, no updates). The machine is shared, so the kernels are interleaved: each
repeat times one sweep of every kernel and of the floor back to back, and the table shows the
best of the repeats, in wall time and in CPU time of the thread, with the ratios to the Gibbs
sweep and to the floor, and the load average before and after.

Every kernel starts from the same state: a random path after ``--warmup`` Gibbs sweeps (the
regime where a chain spends its time); each then runs on its own copy of it.

    python benchmarks/cgs_pfa_kernels.py [--quick] [--states 10 30 90 200] [--data DIR] [--before FILE]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cgs_pfa_speed import DEFAULT_DATA, corpora, floor_sweep  # noqa: E402

from bayesfa.samplers.pfa import _cgs_pfa_alias_kernel as alias  # noqa: E402
from bayesfa.samplers.pfa import _cgs_pfa_bucket_kernel as bucket  # noqa: E402
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs  # noqa: E402
from bayesfa.samplers.pfa.cgs_pfa import new_counts  # noqa: E402
from bayesfa.samplers.chains import free_positions  # noqa: E402


def multichain_module():
    """``bayesfa.samplers.pfa._cgs_pfa_multichain_kernel`` (issue 12 item 2) if it exists, else None."""
    try:
        return importlib.import_module("bayesfa.samplers.pfa._cgs_pfa_multichain_kernel")
    except ImportError:
        return None


#: The one-chain kernels' ``sweeps`` by name (:func:`load_before` adds ``alias-before``).
SWEEPS = {"gibbs": gibbs.sweeps, "alias-mh": alias.sweeps, "bucket-mh": bucket.sweeps,
          "bucket-mh-2step": bucket.build_sweep(None, 2)}


def load_before(path) -> None:
    """Add ``alias-before``: the ``sweeps`` of the alias-kernel file ``path`` (an earlier copy)."""
    spec = importlib.util.spec_from_file_location("alias_kernel_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's on-disk cache looks the module up by name
    spec.loader.exec_module(module)
    SWEEPS["alias-before"] = module.sweeps


def add_kernel_arguments(parser) -> None:
    """``--before FILE`` and ``--kernels NAME...`` (shared with cgs_pfa_score_time.py)."""
    parser.add_argument("--before", type=Path, default=None,
                        help="an earlier copy of _cgs_pfa_alias_kernel.py, run as alias-before")
    parser.add_argument("--kernels", nargs="+", default=None,
                        help=f"run only these of {', '.join([*SWEEPS, 'alias-before', 'multichain'])} "
                             f"(gibbs always runs)")


def select_kernels(args) -> None:
    """Apply :func:`add_kernel_arguments`' options to :data:`SWEEPS`."""
    if args.before is not None:
        load_before(args.before)
    if args.kernels is not None:
        for name in [*SWEEPS]:
            if name != "gibbs" and name not in args.kernels:
                del SWEEPS[name]
        if "multichain" not in args.kernels:
            EXCLUDED.add("multichain")


#: Kernels left out by ``--kernels``, besides those removed from :data:`SWEEPS`.
EXCLUDED: set[str] = set()


def kernel_names() -> list[str]:
    multi = multichain_module() is not None and "multichain" not in EXCLUDED
    return [*SWEEPS] + (["multichain"] if multi else [])


class Chains:
    """``H`` chains of one kernel on the same data: ``run(n)`` gives each ``n`` sweeps (the
    one-chain kernels one chain after the other, the multi-chain kernel all at once, through
    its public ``sweeps``); ``counts(h)`` is chain ``h``'s ``c``."""

    def __init__(self, name, positions, tokens, zs, states, rngs, beta):
        self.name, self.positions, self.tokens, self.beta = name, positions, tokens, beta
        if name == "multichain":
            from numba.typed import List

            self.module = multichain_module()
            self.z = np.ascontiguousarray(np.stack(zs, axis=1))
            self.state = tuple(np.ascontiguousarray(np.stack([s[i] for s in states])) for i in range(4))
            self.rngs = List(rngs)
        else:
            self.sweeps = SWEEPS[name]
            self.zs, self.states, self.rngs = zs, states, rngs

    @property
    def n_chains(self) -> int:
        return len(self.rngs)

    def run(self, n: int) -> None:
        if self.name == "multichain":
            self.module.sweeps(n, self.positions, self.tokens, self.z, *self.state, self.rngs, self.beta)
            return
        for z, state, rng in zip(self.zs, self.states, self.rngs):
            self.sweeps(n, self.positions, self.tokens, z, *state, rng, self.beta)

    def counts(self, h: int) -> np.ndarray:
        return self.state[0][h] if self.name == "multichain" else self.states[h][0]

    def paths(self) -> np.ndarray:
        return self.z.T.copy() if self.name == "multichain" else np.stack(self.zs)


def random_start(tokens, positions, n_states: int, n_symbols: int, beta: float, rng):
    """``(z, (c, ct, ci, recip))``: a uniformly random path (Algorithm 1, line 1, the random
    numbers the front uses) and its counts."""
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
    state = new_counts(n_states, n_symbols)
    gibbs.fill_counts(tokens, z, *state, beta)
    return z, state


def bench(corpus, n_states: int, beta: float, repeats: int, warmup: int, seed: int = 0,
          multichain: int = 8):
    """``{name: (wall ns/NT, cpu ns/NT, moved)}`` per chain for every kernel and ``"floor"``.
    The one-chain kernels run one chain; the multi-chain kernel ``multichain`` chains (copies
    of the same warm state with their own Generators), its time divided by their number."""
    rng = np.random.default_rng(seed)
    tokens = corpus.tokens
    positions = free_positions(tokens)
    z, state = random_start(tokens, positions, n_states, corpus.alphabet_size + 1, beta, rng)
    gibbs.sweeps(warmup, positions, tokens, z, *state, rng, beta)
    runs = {}
    for name in kernel_names():
        if name == "multichain" and multichain < 1:
            continue
        h = multichain if name == "multichain" else 1
        children = np.random.SeedSequence(seed + 1).spawn(h)
        runs[name] = Chains(name, positions, tokens, [z.copy() for _ in range(h)],
                            [tuple(a.copy() for a in state) for _ in range(h)],
                            [np.random.default_rng(s) for s in children], beta)
    units = n_states * tokens.size
    best = {name: [np.inf, np.inf, 0] for name in [*runs, "floor"]}
    for _ in range(repeats):
        for name, chains in runs.items():
            before = chains.paths()
            w0, c0 = time.perf_counter(), time.thread_time()
            chains.run(1)
            wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
            b = best[name]
            b[0], b[1] = min(b[0], wall / chains.n_chains), min(b[1], cpu / chains.n_chains)
            b[2] += np.count_nonzero(chains.paths() != before) / chains.n_chains
        w0, c0 = time.perf_counter(), time.thread_time()
        floor_sweep(positions, tokens, z, state[0], state[1], state[3], beta)
        b = best["floor"]
        b[0], b[1] = min(b[0], time.perf_counter() - w0), min(b[1], time.thread_time() - c0)
    return {name: (w * 1e9 / units, c * 1e9 / units, moved / (repeats * max(1, positions.size)))
            for name, (w, c, moved) in best.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T ~ 1e5 only, fewer repeats")
    parser.add_argument("--states", type=int, nargs="+", default=[10, 30, 90, 200])
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--multichain", type=int, default=8, help="chains in the multi-chain kernel")
    parser.add_argument("--multichain-max-states", type=int, default=90,
                        help="time the multi-chain kernel (meant for small N) up to this N only")
    parser.add_argument("--repeats", type=int, default=None, help="default 10 (--quick: 5)")
    parser.add_argument("--warmup", type=int, default=None, help="default 50 (--quick: 20)")
    add_kernel_arguments(parser)
    args = parser.parse_args(argv)
    select_kernels(args)
    sizes = [100_000] if args.quick else [1_000_000]
    repeats, warmup = (5, 20) if args.quick else (10, 50)
    repeats, warmup = args.repeats or repeats, args.warmup or warmup
    from cgs_pfa_speed import synthetic

    bench(synthetic(200), 3, args.beta, 1, 1, multichain=2)  # compile (or load from cache) first
    print(f"# CGS-PFA kernels, one thread, beta={args.beta}, {warmup} Gibbs warm-up sweeps, best of "
          f"{repeats} interleaved repeats, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average before {os.getloadavg()[0]:.1f}")
    print(f"{'data':<22} {'T':>9} {'N':>4} {'kernel':<10} {'wall ns/NT':>10} {'cpu ns/NT':>10} "
          f"{'/gibbs':>7} {'/floor':>7} {'ns/token':>9} {'moved':>6}")
    for name, corpus in corpora(args.data, sizes):
        for n_states in args.states:
            res = bench(corpus, n_states, args.beta, repeats, warmup,
                        multichain=args.multichain if n_states <= args.multichain_max_states else 0)
            g = res["gibbs"][1]
            floor = res["floor"][1]
            for kernel, (wall, cpu, moved) in res.items():
                print(f"{name:<22} {corpus.n_tokens:>9} {n_states:>4} {kernel:<10} {wall:>10.3f} "
                      f"{cpu:>10.3f} {cpu / g:>7.2f} {cpu / floor:>7.2f} {cpu * n_states:>9.1f} "
                      f"{'' if kernel == 'floor' else f'{moved:.3f}':>6}", flush=True)
    print(f"# load average after {os.getloadavg()[0]:.1f}; ratios from CPU time")


if __name__ == "__main__":
    main()
