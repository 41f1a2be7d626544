"""Sweep time of the production CGS-PFA kernel against an earlier kernel file, interleaved.

Issue 14 compiled the mutation switches into the production sweep (``build_sweep``); this
times ``sweep_positions`` of ``OLD_KERNEL`` (e.g. ``mkdir -p runs/old && git show
4695731:bayesfa/samplers/_cgs_pfa_kernel.py > runs/old/k_before.py``, the kernel before the
switches; the kernels were under ``bayesfa/samplers/`` before ``cc3927b``) and of the current module on the
same chain states and uniforms, in turn, best of ``--repeats`` rounds of CPU time of the
thread. Run on a quiet machine; prints ns per N*T and the ratio new / old.

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/kernel_before_after_speed.py runs/old/k_before.py [--states 10 30 90]

(a fresh numba cache: numba cannot reload the cache of a module loaded from a file path)
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cgs_pfa_speed import DEFAULT_DATA, corpora  # noqa: E402

from bayesfa.samplers.pfa import _cgs_pfa_kernel as new  # noqa: E402
from bayesfa.samplers.pfa.cgs_pfa import new_counts  # noqa: E402
from bayesfa.samplers.chains import free_positions  # noqa: E402


def load(path: str):
    spec = importlib.util.spec_from_file_location("old_cgs_pfa_kernel", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's on-disk cache looks the module up by name
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_kernel")
    parser.add_argument("--states", type=int, nargs="+", default=[10, 30, 90])
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args(argv)
    old = load(args.old_kernel)
    name, corpus = corpora(DEFAULT_DATA, [100_000])[0]
    tokens = corpus.tokens
    positions = free_positions(tokens)
    n_symbols = corpus.alphabet_size + 1
    print(f"# {name}, T={tokens.size}, beta={args.beta}, best of {args.repeats} interleaved rounds, "
          f"CPU time; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'N':>4} {'old ns/NT':>10} {'new ns/NT':>10} {'new/old':>8}")
    for n_states in args.states:
        rng = np.random.default_rng(0)
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        c, ct, ci, recip = new_counts(n_states, n_symbols)
        new.fill_counts(tokens, z, c, ct, ci, recip, args.beta)
        new.sweeps(args.warmup, positions, tokens, z, c, ct, ci, recip, rng, args.beta)
        g = np.zeros(c.shape[2], dtype=np.float32)
        best = {"old": np.inf, "new": np.inf}
        for _ in range(args.repeats):
            uniforms = rng.random(positions.size)
            for label, module in (("old", old), ("new", new)):  # same start, same uniforms
                zz, cc, cct, cci, rr = z.copy(), c.copy(), ct.copy(), ci.copy(), recip.copy()
                module.sweep_positions(positions[:10], uniforms[:10], tokens, zz, cc, cct, cci, rr, g,
                                       args.beta)  # compiled before timing
                zz, cc, cct, cci, rr = z.copy(), c.copy(), ct.copy(), ci.copy(), recip.copy()
                t0 = time.thread_time()
                module.sweep_positions(positions, uniforms, tokens, zz, cc, cct, cci, rr, g, args.beta)
                best[label] = min(best[label], time.thread_time() - t0)
            new.sweeps(1, positions, tokens, z, c, ct, ci, recip, rng, args.beta)
        units = n_states * tokens.size
        o, n = best["old"] * 1e9 / units, best["new"] * 1e9 / units
        print(f"{n_states:>4} {o:>10.3f} {n:>10.3f} {n / o:>8.3f}")


if __name__ == "__main__":
    main()
