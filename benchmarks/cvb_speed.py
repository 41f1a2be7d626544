"""Cost of one CVB0 iteration, one GCVB0 evaluation and one CVB2 iteration, beside a floor loop
and CGS-PFA sweeps measured in the same run.

- CVB0 (Shibata & Yoshinaka 2013, Sect. 2.4): one sweep of Eq. 12 over every free position,
  ns per N^2 T. The paper's order is O(N^2 T).
- GCVB0 (Sect. 2.5): one evaluation of D0 and its gradient (Eq. 17), ns per N^2 T (the
  L-BFGS-B step itself is O(N T) and not timed).
- CVB2 (appendix): one sweep of the second-order update, ns per N^2 T and per N^3 T (the
  paper's order is O(N^3 T); this implementation's is O(N^2 T), see
  ``bayesfa/learners/_cvb_kernel.py``).
- floor: for every free position, the two products that any O(N^2) update needs -- row
  ``E_q[C_{k a_t .}]`` times ``q_{t+1}`` for every ``k`` and ``q_{t-1}`` times
  ``E_q[C_{. a_{t-1} .}]`` -- reading the same arrays in the same order, writing nothing.
- CGS-PFA: one sweep of Algorithm 1 (``benchmarks/cgs_pfa_speed.py``), so that "CVB0 / (N x
  sweep)" says how many N-sweeps of CGS-PFA one CVB0 iteration costs.

The per-iteration recording of the fronts (D0 and the training log likelihood by the forward
algorithm) is timed separately ("record").

Data: the first strings of PAutomaC problem 47 up to ~1e5 tokens (15 letters) from
../shared/data/pautomac when present, else random strings over 15 letters.

    python benchmarks/cvb_speed.py [--quick] [--states 10 30 90] [--cvb2-states 5 10 30]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cgs_pfa_speed import DEFAULT_DATA, bench as cgs_bench, read_pautomac, synthetic  # noqa: E402
from machine import best_of, cpu_name  # noqa: E402

from bayesfa.learners import _cvb_kernel as kernel  # noqa: E402
from bayesfa.learners import cvb  # noqa: E402


@njit(cache=True, fastmath=True)
def floor_pass(positions, tokens, q, ec):
    """The two ``O(N^2)`` products of every position (module docstring); no writes."""
    n1 = q.shape[1]
    acc = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        a = tokens[t]
        ap = tokens[t - 1]
        for k in range(n1):
            s = 0.0
            for j in range(n1):
                s += ec[k, a, j] * q[t + 1, j]
            acc += s
        for i in range(n1):
            w = q[t - 1, i]
            for k in range(n1):
                acc += w * ec[i, ap, k]
    return acc


def _best(fn, repeats):
    return best_of(fn, repeats, time.perf_counter)  # wall time, as this benchmark always measured


def bench_vb(corpus, n_states, beta, repeats, warmup, cvb2: bool, seed=0):
    tokens = corpus.tokens
    positions = cvb.free_positions(tokens)
    n_symbols = corpus.alphabet_size + 1
    q = cvb.initial_q(tokens, n_states, np.random.default_rng(seed))
    ec, eci = cvb.expected_counts(tokens, q, n_symbols)
    for _ in range(warmup):
        kernel.cvb0_sweep(positions, tokens, q, ec, eci, beta)
    units = n_states ** 2 * tokens.size
    out = {}
    out["cvb0"] = _best(lambda: kernel.cvb0_sweep(positions, tokens, q, ec, eci, beta), repeats)
    out["floor"] = _best(lambda: floor_pass(positions, tokens, q, ec), repeats)
    out["record"] = _best(lambda: (cvb.d0_value(ec, eci, q, positions, beta),
                                   cvb.predict_log_prob(ec, beta, corpus).sum()), max(1, repeats // 2))
    fun = cvb.D0Objective(corpus, n_states, beta)
    x = fun.x_from_q(q)
    out["gcvb0"] = _best(lambda: fun(x), repeats)
    if cvb2:
        n1 = n_states + 1
        sums = ([np.zeros((n1, n_symbols, n1)) for _ in range(3)]
                + [np.zeros((n1, n_symbols)), np.zeros(n1), np.zeros(n1)])
        kernel.cvb2_sums(tokens, q, *sums)
        out["cvb2"] = _best(lambda: kernel.cvb2_sweep(positions, tokens, q, *sums, beta),
                            max(1, repeats // 2))
    return {k: v * 1e9 / units for k, v in out.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--states", type=int, nargs="+", default=[10, 30, 90])
    parser.add_argument("--cvb2-states", type=int, nargs="+", default=[5, 10, 30])
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    repeats, warmup = (3, 2) if args.quick else (5, 5)
    path = args.data / "47.pautomac.train"
    if path.is_file():
        name, corpus = "PAutomaC 47 (prefix)", read_pautomac(path, args.tokens)
    else:
        name, corpus = "synthetic", synthetic(args.tokens)
    small = synthetic(300)
    bench_vb(small, 3, args.beta, 1, 1, True)  # compile (or load from cache) before timing
    cgs_bench(small, 3, args.beta, 1, 1)
    cpu = cpu_name()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# CVB cost: {cpu}, {os.cpu_count()} cores, one thread, beta={args.beta}, best of "
          f"{repeats}, {time.strftime('%Y-%m-%d %H:%M')}, load average {load:.1f}")
    print(f"# {name}: T = {corpus.n_tokens}, A = {corpus.alphabet_size + 1}; all figures in ns per "
          f"N^2 T except 'cvb2/N3T' and 'cgs/NT'")
    print(f"{'N':>4} {'cvb0':>8} {'floor':>8} {'ratio':>6} {'gcvb0':>8} {'record':>8} {'cvb2':>8} "
          f"{'cvb2/N3T':>9} {'cgs/NT':>8} {'cvb0/(N*cgs)':>13} {'s/cvb0 it':>10}")
    for n_states in sorted(set(args.states) | set(args.cvb2_states)):
        r = bench_vb(corpus, n_states, args.beta, repeats, warmup, n_states in args.cvb2_states)
        sweep, _, _ = cgs_bench(corpus, n_states, args.beta, repeats, 20)
        cvb2 = r.get("cvb2", np.nan)
        print(f"{n_states:>4} {r['cvb0']:>8.2f} {r['floor']:>8.2f} {r['cvb0'] / r['floor']:>6.2f} "
              f"{r['gcvb0']:>8.2f} {r['record']:>8.2f} {cvb2:>8.2f} {cvb2 / n_states:>9.3f} "
              f"{sweep:>8.2f} {r['cvb0'] / sweep:>13.2f} "
              f"{r['cvb0'] * n_states ** 2 * corpus.n_tokens * 1e-9:>10.3f}", flush=True)


if __name__ == "__main__":
    main()
