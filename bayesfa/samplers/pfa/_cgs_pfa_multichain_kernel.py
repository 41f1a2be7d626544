"""Several CGS-PFA chains in one numba kernel, interleaved position by position (issue 12).

The sweep of Algorithm 1 (Shibata & Yoshinaka 2013, lines 13-17; the conditional of Eq. 9) run
for ``H`` independent chains at once: for each free position ``t``, every chain first computes
its weights, the exact corrections and where its uniform falls (no branch that depends on the
draw), and only then do the chains whose state changes scan and update their counts. The
chains share nothing but the data, so one chain's arithmetic can proceed while another's loads,
divisions and branches are pending. (Measured: on the shared 2-core machine this did not pay;
per chain it was 1.1-1.8x slower than the one-chain kernel at N = 10 and 30 in 39 of 40
timings, so the front uses it only when asked, ``--interleave``; benchmarks/RESULTS.md,
"CGS-PFA multi-chain kernel".)

Chain state (C-contiguous, mutated in place; ``N``, ``A``, ``T``, ``W`` as in
:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`, whose per-chain arrays these stack):

- ``z`` int32 ``[T + 1, H]``: ``z[t, h]`` is chain ``h``'s state before token ``t`` (chain-minor,
  so that the chains' states at one position share a cache line); 0 at ``t = 0``, ``t = T``
  and after every end marker.
- ``c`` float32 ``[H, N+1, A, W]``, ``ct`` float32 ``[H, A, N+1, W]``, ``ci`` int32 ``[H, N+1]``,
  ``recip`` float32 ``[H, W]``: chain ``h``'s ``c``, ``ct``, ``ci``, ``recip`` of the one-chain
  kernel, with the same invariants (counts exact in float32 below 2**24 tokens; ``recip`` 0 at
  state 0 and on the padding).
- ``rngs``: a ``numba.typed.List`` of ``H`` ``np.random.Generator``, chain ``h``'s own stream
  (its ``SeedSequence`` child, as the front spawns them); one compiled kernel serves any ``H``.
- ``uniforms`` float64 ``[M, H]`` (scratch): the sweep's uniforms, chain-minor.

**Bit-identical to the one-chain kernel.** Before each sweep chain ``h`` draws ``M`` doubles
``rngs[h].random()`` into ``uniforms[:, h]``: the numbers that ``_cgs_pfa_kernel.sweeps`` draws
as one ``rng.random(M)`` (numba and numpy produce the same doubles either way), so after
every sweep each Generator is in the state the one-chain kernel leaves it in. The arithmetic of
each chain is that of :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.build_sweep`'s production sweep,
line for line with a chain index added, in the same
float32 order (the same weight loop, padded and vectorised alike, the same corrections, the
same inversion): ``z``, the counts and the Generators end bit for bit as if each chain had run
alone. ``tests/test_cgs_pfa_multichain.py`` asserts this against the production kernel, which
``bayesfa validate cgs-pfa`` checks by exact enumeration, Geweke's test and SBC; a change to
either sweep that breaks the identity fails that test. (Vectorised float32 sums depend on the
instructions LLVM picks for the host, so the identity holds between the two kernels on one
machine, as does the one-chain kernel's reproducibility.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import log_joint, n_edges, n_states_used, record


@njit(cache=True, inline="always")
def _exact_weight(h, k, p, ap, a, n, old, c, ct, ci, nab, b_out, beta):
    """``g_k`` of Eq. 9 for chain ``h`` with ``C^{-t}`` derived from its full counts: the
    production ``_cgs_pfa_kernel._exact_weight`` with every switch on, indexed by chain (passing
    it the views ``c[h]``, ``ct[h]``, ``ci[h]`` would cost reference counting per position)."""
    c_in = c[h, p, ap, k] - np.float32(k == old) - np.float32(p == old and ap == a and k == n)
    c_out = ct[h, a, n, k] - np.float32(k == old) - np.float32(k == p and a == ap and n == old)
    delta = np.float32(k == n and p == n and ap == a)
    den = np.float32(ci[h, k] - (k == old)) + np.float32(nab)
    return (c_out + b_out) * (c_in + beta + delta) / den


@njit(cache=True, fastmath=True, boundscheck=False)
def sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, target, below, above, beta,
                    moves):
    """Resample ``z[t, h]`` for each ``t`` of ``positions`` in order and every chain ``h``
    (Algorithm 1, lines 13-17, Eq. 9), chain ``h`` inverting ``uniforms[m, h]``.

    positions int64 ``[M]``, uniforms float64 ``[M, H]`` in [0, 1); scratch: g float32 ``[H, W]``, target float64 ``[H]``, below and
    above float32 ``[H]``; the rest is the chain state of the module docstring. Per chain, the
    same operations as the one-chain sweep (see its docstring): weights from the full counts,
    the at most three exact corrections, inversion of ``u * sum_k g_k`` (float64) that first
    tests the current state's interval. ``moves`` int64 ``[H]``: each chain's positions that
    changed state are added to it (the one-chain sweep's return value).
    """
    n_chains = z.shape[1]
    n_states = c.shape[1] - 1
    n_symbols = c.shape[2]
    width = c.shape[3]
    nab = n_states * n_symbols * beta
    beta32 = np.float32(beta)
    nbeta32 = np.float32(n_states * beta)
    for m in range(positions.shape[0]):
        t = positions[m]
        ap = tokens[t - 1]  # a_{t-1} != 0
        a = tokens[t]  # a_t
        b_out = nbeta32 if a == 0 else beta32  # prior of (k, a_t, z_{t+1}), Eq. 2
        # phase 1: each chain's weights and where its uniform falls
        for h in range(n_chains):
            p = z[t - 1, h]
            n = z[t + 1, h]
            old = z[t, h]
            total = np.float32(0.0)
            low = np.float32(0.0)  # sum of g_k over k < old
            for k in range(width):
                w = (ct[h, a, n, k] + b_out) * (c[h, p, ap, k] + beta32) * recip[h, k]
                g[h, k] = w
                total += w
                low += w if k < old else np.float32(0.0)
            w = _exact_weight(h, old, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32)
            total += w - g[h, old]
            g[h, old] = w
            if n != 0 and n != old and ap == a and (p == old or p == n):
                w = _exact_weight(h, n, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32)
                total += w - g[h, n]
                if n < old:
                    low += w - g[h, n]
                g[h, n] = w
            if p != 0 and p != old and p != n and a == ap and n == old:
                w = _exact_weight(h, p, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32)
                total += w - g[h, p]
                if p < old:
                    low += w - g[h, p]
                g[h, p] = w
            target[h] = uniforms[m, h] * np.float64(total)
            below[h] = low
            above[h] = low + g[h, old]
        # phase 2: the chains whose uniform falls outside the current state's interval move
        for h in range(n_chains):
            u = target[h]
            if u >= below[h] and u < above[h]:
                continue
            p = z[t - 1, h]
            n = z[t + 1, h]
            old = z[t, h]
            if u < below[h]:
                k = old - 1  # reached only through rounding
                acc = np.float32(0.0)
                for kk in range(1, old):
                    acc += g[h, kk]
                    if u < acc:
                        k = kk
                        break
            else:
                k = n_states  # idem
                acc = above[h]
                for kk in range(old + 1, n_states + 1):
                    acc += g[h, kk]
                    if u < acc:
                        k = kk
                        break
            moves[h] += k != old
            c[h, p, ap, old] -= 1
            c[h, p, ap, k] += 1
            ct[h, ap, old, p] -= 1
            ct[h, ap, k, p] += 1
            c[h, old, a, n] -= 1
            c[h, k, a, n] += 1
            ct[h, a, n, old] -= 1
            ct[h, a, n, k] += 1
            ci[h, old] -= 1
            ci[h, k] += 1
            recip[h, old] = np.float32(1.0 / (ci[h, old] + nab))
            recip[h, k] = np.float32(1.0 / (ci[h, k] + nab))
            z[t, h] = k


@njit(cache=False)  # a caller of the sweep: compiled per process (_cgs_pfa_kernel docstring)
def sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rngs, beta):
    """``n_sweeps`` sweeps of every chain (Algorithm 1, lines 12-18) over ``positions`` (the
    ``t`` with ``tokens[t-1] != 0``, increasing): for each chain what ``_cgs_pfa_kernel.sweeps``
    does, with the same random numbers. Returns each chain's positions moved, summed over the
    sweeps (int64 ``[H]``)."""
    n_chains = z.shape[1]
    g = np.zeros((n_chains, c.shape[3]), dtype=np.float32)
    target = np.zeros(n_chains)
    below = np.zeros(n_chains, dtype=np.float32)
    above = np.zeros(n_chains, dtype=np.float32)
    uniforms = np.empty((positions.shape[0], n_chains))
    moves = np.zeros(n_chains, dtype=np.int64)
    for _ in range(n_sweeps):
        for h in range(n_chains):
            rng = rngs[h]
            for m in range(positions.shape[0]):
                uniforms[m, h] = rng.random()
        sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, target, below, above, beta,
                        moves)
    return moves


@njit(cache=False)  # a caller of the sweep: compiled per process (_cgs_pfa_kernel docstring)
def sample_draws(period, positions, tokens, z, c, ct, ci, recip, rngs, beta,
                 out_counts, out_log_joint, out_n_states, out_n_edges, out_stats):
    """For each draw ``d``: ``period`` sweeps of every chain, then record each chain's counts
    and trace values, as ``_cgs_pfa_kernel.sample_draws`` does per chain.

    out_counts int32 ``[H, D, N+1, A, N+1]``; out_log_joint float64 ``[H, D]`` (Eq. 4);
    out_n_states, out_n_edges int32 ``[H, D]``; out_stats int64 ``[H, D, STATS]`` (column 0,
    the positions moved, as ``_cgs_pfa_kernel.STATS``; the others untouched).
    """
    for d in range(out_counts.shape[1]):
        moves = sweeps(period, positions, tokens, z, c, ct, ci, recip, rngs, beta)
        for h in range(z.shape[1]):
            out_stats[h, d, 0] = moves[h]
            record(c[h], out_counts[h, d])
            out_log_joint[h, d] = log_joint(c[h], beta)
            out_n_states[h, d] = n_states_used(ci[h])
            out_n_edges[h, d] = n_edges(c[h])
