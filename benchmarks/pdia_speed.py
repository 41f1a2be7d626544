"""Seconds per sweep of the PDIA sampler (``--method pdia``) on the paper's Alice in Wonderland
training set, and the ratio to the authors' Java sampler (3.3 s per sweep, issue 9).

Data: ``../shared/data/text/aiw.train`` (100 sentences, one a line, letters a-z and space: 27
letters, 9,986 characters), read with :func:`bayesfa.textdata.load_lines`; the state resets
to q0 at each sentence and the end of a sentence is a symbol back to q0 (28 symbols).

What is timed. The sampler is driven only through the registry (``get_method("pdia").fit``).
A chain's first sweeps are cheaper than later ones (the automaton grows from a few states to
a few hundred), so besides the sampler's own average (``info["seconds_per_sweep"]`` over all
sweeps of a fit) we report the *marginal* cost of sweeps ``I1+1 .. I2``: with the same seed a
fit of ``I2`` sweeps repeats the ``I1`` sweeps of the shorter fit exactly (same seed, same
chain, bit for bit), so ``(t(I2) - t(I1)) / (I2 - I1)`` is the cost of the later sweeps.

Floor loop beside it: one pass of the deterministic automaton of the final sample over the
training data (``q = delta[q, x]``, counting ``c[q, x]``), the work of one full likelihood
evaluation. A sweep proposes a new value for every instantiated transition and re-walks the
data that the proposal affects; "passes/sweep" = sweep / floor says how many full passes one
sweep costs, i.e. how much of a sweep is path re-evaluation.

    python benchmarks/pdia_speed.py [--quick] [--method pdia] [--data FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
from numba import njit

from bayesfa.methods import get_method
from bayesfa.textdata import LOWERCASE_AND_SPACE, load_lines

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "text" / "aiw.train"
JAVA_SECONDS_PER_SWEEP = 3.3     # the authors' Java sampler on this data and machine type (issue 9)


@njit(cache=True)
def path_pass(tokens, delta, counts):
    """Walk the sentences through ``delta`` (symbol 0 ends a sentence, back to q0) and count
    the emissions; returns the number of transitions that were missing (-1)."""
    counts[:] = 0
    q = 0
    missing = 0
    for t in range(tokens.shape[0]):
        x = tokens[t]
        counts[q, x] += 1
        if x == 0:
            q = 0
        else:
            r = delta[q, x]
            if r < 0:
                missing += 1
                r = 0
            q = r
    return missing


def floor_seconds(tokens: np.ndarray, delta: np.ndarray, repeats: int) -> float:
    counts = np.zeros(delta.shape, dtype=np.int64)
    delta = np.ascontiguousarray(delta, dtype=np.int64)
    path_pass(tokens, delta, counts)                      # compile / load from cache
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        path_pass(tokens, delta, counts)
        best = min(best, time.perf_counter() - t0)
    return best


def fit(method, corpus, iterations: int, seed: int):
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    options = vars(parser.parse_args(["--iterations", str(iterations), "--burn-in", "0",
                                      "--period", str(iterations), "--chains", "1"]))
    t0 = time.perf_counter()
    result = method.fit(corpus, options, seed, False)
    return time.perf_counter() - t0, result


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="I1 = 10, I2 = 30 sweeps")
    parser.add_argument("--sweeps", type=int, nargs=2, default=None, metavar=("I1", "I2"),
                        help="the two fit lengths; default 50 150 (--quick: 10 30)")
    parser.add_argument("--method", default="pdia", help="registry name; default pdia")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    i1, i2 = args.sweeps or ((10, 30) if args.quick else (50, 150))
    if not 0 < i1 < i2:
        raise SystemExit("need 0 < I1 < I2")
    if not args.data.is_file():
        raise SystemExit(f"{args.data} not found (the shared data folder is needed)")
    corpus, _ = load_lines(args.data, LOWERCASE_AND_SPACE)
    method = get_method(args.method)
    fit(method, corpus.subset(np.arange(5)), 3, args.seed)        # compile (or load the cache)
    t1, _ = fit(method, corpus, i1, args.seed)
    t2, result = fit(method, corpus, i2, args.seed)
    marginal = (t2 - t1) / (i2 - i1)
    average = float(result.info["seconds_per_sweep"])
    delta = result.arrays["delta"][0, -1]
    floor = floor_seconds(corpus.tokens, delta, repeats=20)
    n_states = int(result.trace["n_states"][0, -1])
    print(f"# {args.method} sweep cost on {args.data.name}: {cpu_name()}, {os.cpu_count()} cores, "
          f"one thread, seed {args.seed}, {time.strftime('%Y-%m-%d')} (shared machine: noisy)")
    print(f"# {corpus.n_strings} sentences, {corpus.n_tokens - corpus.n_strings} characters, "
          f"{corpus.alphabet_size} letters + end; Java sampler: {JAVA_SECONDS_PER_SWEEP} s/sweep")
    print(f"{'sweeps':>9} {'states':>6} {'s/sweep':>9} {'Java/ours':>9} {'floor ms':>9} "
          f"{'passes/sweep':>12}")
    print(f"{'1-' + str(i2):>9} {n_states:>6} {average:>9.4f} {JAVA_SECONDS_PER_SWEEP / average:>9.1f} "
          f"{floor * 1e3:>9.3f} {average / floor:>12.0f}   (sampler's average over all sweeps)")
    print(f"{f'{i1 + 1}-{i2}':>9} {n_states:>6} {marginal:>9.4f} {JAVA_SECONDS_PER_SWEEP / marginal:>9.1f} "
          f"{floor * 1e3:>9.3f} {marginal / floor:>12.0f}   (marginal: later sweeps only)")


if __name__ == "__main__":
    main()
