"""Cost of one iPFA sweep (issue 23, item 6) beside a CGS-PFA Gibbs sweep at N = K, in one process.

The iPFA sweep (:mod:`bayesfa.samplers.pfa._ipfa_kernel`) resamples every ``z_t`` among the
``K`` states in use and a new one, then the franchise's tables, ``beta``, ``alpha``/``gamma``
and the labels; the CGS-PFA sweep (:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`, Algorithm 1)
resamples every ``z_t`` among ``N`` states. Both are reported in ns per (state x token): the
iPFA's per (K x T) with K the mean number of states in use over its timed sweeps, CGS-PFA's
per (N x T) with N the states in use over 10 sweeps after the warm-up, rounded (K, the
mean over the timed sweeps, is printed beside it). Target: iPFA <= 1.5 x CGS-PFA.

``K`` is steered by the fixed concentrations (``--gammas``, alpha fixed at ``--alpha``): each
gamma gives one row. Each chain is first run ``--warmup`` sweeps (the regime where a chain
spends its time: most positions keep their state). The machine is shared, so the two are
interleaved: each repeat times a block of sweeps of one, then of the other; the table shows
the best repeat of each (thread CPU time), their ratio, and the load average.

Data: the bundled PAutomaC problem 24 training set (5 letters, 20,000 strings).

    python benchmarks/ipfa_speed.py [--quick] [--gammas 1 20 100] [--alpha 10]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bayesfa.datasets import pautomac_path
from bayesfa.pautomac import read_sample
from bayesfa.samplers.chains import free_positions
from bayesfa.samplers.pfa import _cgs_pfa_kernel as cgs
from bayesfa.samplers.pfa import _ipfa_kernel as ikern
from bayesfa.samplers.pfa.cgs_pfa import new_counts
from bayesfa.samplers.pfa.ipfa import _Chain


def _best(times):
    return min(times)


def run(gamma: float, alpha: float, warmup: int, block: int, repeats: int, seed: int = 0):
    corpus = read_sample(pautomac_path(24, "train"))
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    n_symbols = corpus.alphabet_size + 1
    rng = np.random.default_rng(seed)
    chain = _Chain(tokens, n_symbols, 10, rng, alpha, gamma, 0)
    priors = np.zeros(4)
    chain.run(warmup, rng, priors, ikern.sweeps)
    probe = []
    for _ in range(10):  # N = the states in use over 10 more sweeps, rounded
        chain.run(1, rng, priors, ikern.sweeps)
        probe.append(int(chain.meta[0]))
    n = max(1, int(round(float(np.mean(probe)))))
    crng = np.random.default_rng(seed + 1)
    beta_cgs = alpha / (n * n_symbols)  # the weak limit's beta
    positions = free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = crng.integers(1, n + 1, size=positions.size, dtype=np.int32)
    c, ct, ci, recip = new_counts(n, n_symbols)
    cgs.fill_counts(tokens, z, c, ct, ci, recip, beta_cgs)
    cgs.sweeps(warmup, positions, tokens, z, c, ct, ci, recip, crng, beta_cgs)
    t_ipfa, t_cgs, ks = [], [], []
    for _ in range(repeats):
        t0 = time.thread_time()
        chain.run(block, rng, priors, ikern.sweeps)
        t_ipfa.append((time.thread_time() - t0) / block)
        ks.append(int(chain.meta[0]))
        t0 = time.thread_time()
        cgs.sweeps(block, positions, tokens, z, c, ct, ci, recip, crng, beta_cgs)
        t_cgs.append((time.thread_time() - t0) / block)
    k_mean = float(np.mean(ks))
    ns_ipfa = _best(t_ipfa) * 1e9 / (k_mean * tokens.size)
    ns_cgs = _best(t_cgs) * 1e9 / (n * tokens.size)
    return {"gamma": gamma, "K": k_mean, "N": n, "T": int(tokens.size),
            "ipfa_ns": ns_ipfa, "cgs_ns": ns_cgs, "ratio": ns_ipfa / ns_cgs,
            "ipfa_ms_per_sweep": _best(t_ipfa) * 1e3, "cgs_ms_per_sweep": _best(t_cgs) * 1e3}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sweeps (a smoke run)")
    parser.add_argument("--gammas", type=float, nargs="+", default=[1.0, 20.0, 100.0])
    parser.add_argument("--alpha", type=float, default=10.0)
    args = parser.parse_args(argv)
    warmup, block, repeats = (5, 2, 2) if args.quick else (100, 2, 15)
    load0 = os.getloadavg()[0]
    rows = [run(g, args.alpha, warmup, block, repeats) for g in args.gammas]
    load1 = os.getloadavg()[0]
    print(f"ipfa vs cgs-pfa sweep, PAutomaC 24 train, alpha={args.alpha:g} fixed, "
          f"warmup {warmup}, best of {repeats} blocks of {block} sweeps (thread CPU time)")
    print(f"{'gamma':>7} {'K':>7} {'N':>4} {'ipfa ns/KT':>11} {'cgs ns/NT':>10} {'ratio':>6} "
          f"{'ipfa ms':>8} {'cgs ms':>7}")
    for r in rows:
        print(f"{r['gamma']:7.3g} {r['K']:7.1f} {r['N']:4d} {r['ipfa_ns']:11.3f} {r['cgs_ns']:10.3f} "
              f"{r['ratio']:6.2f} {r['ipfa_ms_per_sweep']:8.2f} {r['cgs_ms_per_sweep']:7.2f}")
    print(f"load average {load0:.2f} -> {load1:.2f}")


if __name__ == "__main__":
    main()
