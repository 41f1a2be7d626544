"""Numba kernel of the infinite PFA (iPFA): collapsed direct-assignment Gibbs sampling of a
fully connected PFA under a hierarchical Dirichlet process prior (issue 23).

Model (Shibata & Yoshinaka 2013, Sect. 2.1, with the finite Dirichlet prior of Eq. 2 replaced
by an HDP as their Sect. 5 proposes; Teh, Jordan, Beal & Blei 2006, Sect. 5.3 and 7):
``beta ~ GEM(gamma)`` over the states ``1, 2, ...``; for each state ``i`` (the initial state 0
included) ``xi_i ~ DP(alpha, H)`` over the pairs ``(a, j)`` with

    ``H(a, j) = beta_j / A`` for a letter ``a != 0`` and a state ``j >= 1``,
    ``H(0, 0) = 1 / A`` (the end marker, which goes to the initial state 0),

``A`` the alphabet size *with* the end marker. With ``beta_j = 1/N`` on ``N`` states the
prior of each ``xi_i`` is the Dirichlet of Eq. 2 with ``alpha = N A beta_cgs``: ``alpha H``
puts ``beta_cgs`` on every ``(a != 0, j != 0)`` and ``N beta_cgs`` on ``(0, 0)``, so the
finite model with ``N`` states (the weak limit ``beta ~ Dir(gamma/N, ...)``, ``gamma -> oo``)
is CGS-PFA's. ``q0`` is state 0. ``alpha ~ Gamma``, ``gamma ~ Gamma`` (shape, rate).

With ``xi`` integrated out, ``z`` given ``beta`` has the joint of Eq. 4 with the prior
``alpha H`` (:func:`log_joint`), and ``z_t`` given the rest has the weights of Eq. 9,

    ``g_k = (C^{-t}_{k a_t z_{t+1}} + alpha H(a_t, z_{t+1}))
            (C^{-t}_{z_{t-1} a_{t-1} k} + delta + alpha beta_k / A) / (C^{-t}_k + alpha)``

(``delta`` the same-state correction of Eq. 9), over the states in use, and for a new state
``g_new = alpha H(a_t, z_{t+1}) beta_u / A`` with ``beta_u`` the mass of all states not in
use (the direct-assignment sampler of Teh et al. 2006, Sect. 5.3, with the transition read
twice as in Eq. 9). A state emptied by removing
``z_t`` is dropped first and its ``beta`` joins ``beta_u``; a new state takes
``b beta_u``, ``b ~ Beta(1, gamma)``. After each sweep: the table counts of the Chinese
restaurant franchise given ``z`` and ``beta`` (``m_iaj``: ``C_iaj`` customers, each opening a
table with probability ``x / (x + l)``, ``x = alpha H(a, j)``, Teh et al. Sect. 5.3), then
``gamma`` given the tables (``beta`` integrated out; Escobar & West 1995), then
``(beta_1..beta_K, beta_u) ~ Dir(m_.1, .., m_.K, gamma)`` with ``m_.k`` the tables serving
``(a != 0, k)``, then ``alpha`` given the tables (Teh et al. 2006, App. A), then the labels
compacted to ``1..K``.

``--truncate L`` (``truncated`` True) is the weak-limit model instead: the ``L`` states are
always there, ``beta ~ Dir(gamma/L, ..)`` given tables ``Dir(gamma/L + m_.k)``, no new state.

Chain state (C-contiguous arrays mutated in place; labels ``0..Kc``, ``Kc`` the capacity, ``W =
padded_width(Kc)``; a label ``k >= 1`` is *instantiated* when it is in use, ``C_k > 0``, or,
truncated, always):

- ``z`` int32 ``[T + 1]``: as in :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`.
- ``c`` ``[Kc+1, A, W]``, ``ct`` ``[A, Kc+1, W]``, ``ci`` int32 ``[Kc+1]``: ``C_iaj``, its
  transpose, ``C_i``. ``c`` and ``ct`` are float32 below 2**24 tokens (exact there, as in
  CGS-PFA) and float64 from 2**24 tokens on (exact to 2**53;
  :func:`bayesfa.samplers.pfa.cgs_pfa.count_dtype`, chosen by the front).
- ``recip`` ``[W]``: ``1 / (C_k + alpha)`` for instantiated ``k``, 0 elsewhere.
- ``bk`` ``[W]``: ``alpha beta_k / A`` for instantiated ``k``, 0 elsewhere.

``recip`` and ``bk`` have the counts' type, and so does every weight the sweep computes: the
kernels take their float type from the arrays (``c.dtype.type``), so numba compiles one
specialisation per count type, and the float32 one is the code it always was.
- ``beta`` float64 ``[Kc+1]``: ``beta[k]`` for instantiated ``k``, 0 for the others, and
  ``beta[0] = beta_u`` (state 0 takes no ``beta`` mass). Sums to 1.
- ``meta`` int64 ``[2]`` or ``[3]``: ``K`` instantiated states, the highest instantiated
  label and, where there is a third entry, a running count of the positions whose state
  changed (a move to another state or to a new one; never a relabelling by ``compact``):
  the front's sampler statistic ``moved`` (:data:`bayesfa.rundir.SAMPLE_STATS`).
- ``mcol`` int64 ``[Kc+1]``: ``m_.k`` of the last table draw; ``mrow`` int64 ``[Kc+1]``:
  tables of restaurant ``i`` (its end tables included).
- ``hyper`` float64 ``[2]``: ``(alpha, gamma)``; ``priors`` float64 ``[4]``: Gamma shape and
  rate of ``alpha`` then of ``gamma`` (shape <= 0: that one is fixed).

After every whole sweep the instantiated labels are ``1..K``. A sweep that needs a new state
when ``K = Kc`` stops before that position and returns it; the front then grows the arrays
(the same labels, more room) and resumes there. Growth changes no result: the weight loop runs
over a multiple of :data:`LANES` labels past the highest in use, whose extra weights are 0.

Mutants (:data:`MUTATIONS`) are compile-time switches of this one source
(:func:`build_sweeps`); production has none.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import LANES, count_transitions, move_state, padded_width

__all__ = ["LANES", "padded_width", "MUTATIONS", "RECORDING_MUTATIONS", "build_sweeps",
           "fill_state", "log_joint", "ALPHA_AUX_ITERATIONS", "PRIOR_WEIGHT_FLOOR",
           "floored"]

#: Auxiliary-variable updates of ``alpha`` and of ``gamma`` per sweep.
ALPHA_AUX_ITERATIONS = 10

#: Deliberate errors :func:`build_sweeps` can compile in, for ``bayesfa validate
#: ipfa:mutant-NAME`` (:mod:`bayesfa.validation.pfa.ipfa`).
MUTATIONS: dict[str, str] = {
    "no-new-state": "g_new = 0: z_t is drawn among the states in use only",
    "no-beta-update": "beta never resampled from the table counts (kept at its initial value "
                      "and split at new states only)",
    "no-correction": "Eq. 9 without its delta term (the self-loop read twice with the same letter)",
    "no-merge": "a state emptied by removing z_t does not give its beta to the new-state weight",
    "log-joint-end-prior": "the recorded log joint (log_joint) with alpha instead of alpha / A "
                           "as the end marker's parameter; the sweeps are production's",
}
#: mutants that slip only in what a draw records (the front's :func:`log_joint` call), not in
#: the sweeps: :func:`build_sweeps` gives them production's
RECORDING_MUTATIONS = ("log-joint-end-prior",)

#: A prior weight ``bk[k] = alpha beta_k / A`` below ``2**-100`` (7.9e-31) is stored as 0.
#: Under the weak limit (``--truncate`` and the blocked sampler's step 0) the states not in use
#: draw ``beta_k ~ Gamma(gamma / L)`` shares, many below 1e-38, and a label's weight
#: ``(C + h) (C + bk[k]) / (C_k + alpha)`` was then a subnormal float: x86 multiplies those
#: some hundred times slower, and step 0 on PAutomaC's problem 5 (L = 200, 10 states in use)
#: took 0.20 CPU s a sweep instead of 0.012 (``benchmarks/ipfa_slice.py``'s step-0 profile).
#: The floor leaves the draws as they were: a label whose ``bk`` it zeroes weighs below
#: ``2 * 2**-100`` where its counts ``C_{p a_{t-1} k}`` are 0 (``(C_out + h) / (C_k + alpha)
#: <= 2``) and is unchanged otherwise, and adding ``2**-99`` to a float32 total above
#: ``2**-75`` changes nothing. On problem 5, three sweeps from one state gave the same ``z``,
#: ``beta`` and hyperparameters bit for bit with and without it.
PRIOR_WEIGHT_FLOOR = 2.0 ** -100


@njit(cache=True, inline="always")
def floored(x):
    """``x``, or 0 below :data:`PRIOR_WEIGHT_FLOOR` (a prior weight ``alpha beta_k / A``)."""
    return x if x >= PRIOR_WEIGHT_FLOOR else 0.0


@njit(cache=True)
def refresh_weights(ci, recip, bk, beta, meta, alpha, n_symbols, truncated):
    """Recompute ``recip``, ``bk``, ``meta`` from ``ci``, ``beta`` and ``alpha``."""
    cap = ci.shape[0] - 1
    ft = recip.dtype.type
    recip[:] = 0
    bk[:] = 0
    k_used = 0
    hi = 0
    for k in range(1, cap + 1):
        if truncated or ci[k] > 0:
            recip[k] = ft(1.0 / (ci[k] + alpha))
            bk[k] = ft(floored(alpha * beta[k] / n_symbols))
            k_used += 1
            hi = k
    meta[0] = k_used
    meta[1] = hi


@njit(cache=True)
def fill_state(tokens, z, c, ct, ci, recip, bk, beta, meta, alpha, truncated):
    """Counts (Definition 2), ``recip``, ``bk``, ``meta`` from ``z`` and ``beta``."""
    count_transitions(tokens, z, c, ct, ci)
    refresh_weights(ci, recip, bk, beta, meta, alpha, c.shape[1], truncated)


@njit(cache=True, fastmath=True, boundscheck=False, inline="always")
def _raw_weight(k, p, ap, a, n, c, ct, recip, bk, h_out):
    """``g_k`` from the full counts ``C`` (0 for a label not instantiated: ``recip[k] = 0``)."""
    return (ct[a, n, k] + h_out) * (c[p, ap, k] + bk[k]) * recip[k]


@njit(cache=True, fastmath=True, boundscheck=False, inline="always")
def _exact_weight(k, p, ap, a, n, old, c, ct, ci, bk, alpha_w, h_out, delta_term):
    """``g_k`` with ``C^{-t}`` (Eq. 9 with the prior ``alpha H``), in the counts' type (as
    ``alpha_w``, ``alpha`` in that type): ``C^{-t} = C - e(p, a_{t-1}, old) - e(old, a_t, n)``;
    the delta term is 1 when ``(p, a_{t-1}, k) = (k, a_t, n)``."""
    ft = c.dtype.type
    c_in = c[p, ap, k] - ft(k == old) - ft(p == old and ap == a and k == n)
    c_out = ct[a, n, k] - ft(k == old) - ft(k == p and a == ap and n == old)
    delta = ft(k == n and p == n and ap == a) if delta_term else ft(0.0)
    den = ft(ci[k] - (k == old)) + alpha_w
    return (c_out + h_out) * (c_in + bk[k] + delta) / den


@njit(cache=True, inline="always")
def _free_label(ci, beta):
    """The lowest label ``>= 1`` not instantiated (-1 if none). Inlined: as a call it made
    numba reference-count the arrays at every position (the sweep ran 1.6x slower)."""
    for k in range(1, ci.shape[0]):
        if ci[k] == 0:
            return k
    return -1


@njit(cache=True)
def sample_tables(c, ci, beta, meta, mcol, mrow, alpha, rng):
    """Table counts of the franchise given ``z`` (through ``C``) and ``beta`` (Teh et al.
    2006, Sect. 5.3): cell ``(i, a, j)`` seats ``C_iaj`` customers, the ``l``-th opening a new
    table with probability ``x / (x + l)``, ``x = alpha H(a, j)``. ``mcol[k] = m_.k`` (tables
    of ``(a != 0, k)``), ``mrow[i]``: tables of restaurant ``i``. Returns ``sum_k m_.k``."""
    n_symbols = c.shape[1]
    hi = meta[1]
    mcol[:] = 0
    mrow[:] = 0
    x_end = alpha / n_symbols
    total = 0
    for i in range(hi + 1):
        if ci[i] == 0:
            continue
        for a in range(n_symbols):
            for j in range(hi + 1):
                cnt = int(c[i, a, j])
                if cnt == 0:
                    continue
                x = x_end if a == 0 else alpha * beta[j] / n_symbols
                m = 0
                for l in range(cnt):
                    if rng.random() * (x + l) < x:
                        m += 1
                mrow[i] += m
                if a != 0:
                    mcol[j] += m
                    total += m
    return total


@njit(cache=True)
def resample_alpha(ci, mrow, meta, alpha, shape, rate, rng, n_iter):
    """``alpha | tables`` by the auxiliary variables of Teh et al. (2006), App. A: per
    restaurant ``w_i ~ Beta(alpha + 1, n_i)``, ``s_i ~ Bernoulli(n_i / (n_i + alpha))``, then
    ``alpha ~ Gamma(shape + m - sum s, rate - sum log w)``; ``n_iter`` rounds."""
    hi = meta[1]
    m_tot = 0
    for i in range(hi + 1):
        m_tot += mrow[i]
    for _ in range(n_iter):
        slog = 0.0
        s = 0
        for i in range(hi + 1):
            n_i = ci[i]
            if n_i == 0:
                continue
            slog += math.log(rng.beta(alpha + 1.0, n_i))
            if rng.random() * (n_i + alpha) < n_i:
                s += 1
        alpha = rng.gamma(shape + m_tot - s, 1.0 / (rate - slog))
    return alpha


@njit(cache=True)
def resample_gamma(k_used, m_total, gamma, shape, rate, rng, n_iter):
    """``gamma | K, m..`` by Escobar & West (1995), Sect. 6: ``eta ~ Beta(gamma + 1, m..)``,
    then ``gamma ~ pi Gamma(shape + K, rate - log eta) + (1 - pi) Gamma(shape + K - 1, ..)``,
    ``pi / (1 - pi) = (shape + K - 1) / (m.. (rate - log eta))``; the prior if ``m.. = 0``."""
    if m_total == 0:
        return rng.gamma(shape, 1.0 / rate)
    for _ in range(n_iter):
        eta = rng.beta(gamma + 1.0, m_total)
        r = rate - math.log(eta)
        odds = (shape + k_used - 1.0) / (m_total * r)
        sh = shape + k_used if rng.random() * (1.0 + odds) < odds else shape + k_used - 1.0
        gamma = rng.gamma(sh, 1.0 / r)
    return gamma


@njit(cache=True)
def compact(tokens, z, c, ct, ci, beta, mcol, meta):
    """Relabel the instantiated states ``1..K`` in their order (``z``, ``beta``, ``mcol``),
    then recount ``c, ct, ci``; nothing to do when there is no hole."""
    if meta[1] == meta[0]:
        return
    cap = ci.shape[0] - 1
    new = np.zeros(cap + 1, dtype=np.int32)
    k2 = 0
    for k in range(1, cap + 1):
        if ci[k] > 0:
            k2 += 1
            new[k] = k2
            beta[k2] = beta[k]
            mcol[k2] = mcol[k]
    for k in range(k2 + 1, cap + 1):
        beta[k] = 0.0
        mcol[k] = 0
    for t in range(z.shape[0]):
        z[t] = new[z[t]]
    count_transitions(tokens, z, c, ct, ci)
    meta[1] = k2


def build_sweeps(mutation: str | None = None):
    """The kernel's ``sweeps`` (see its docstring), compiled with ``mutation`` (a key of
    :data:`MUTATIONS`) or, for None, without: :func:`sweeps`. Built once per variant."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if mutation in RECORDING_MUTATIONS:
        return build_sweeps(None)
    if mutation in _BUILT:
        return _BUILT[mutation]
    no_new = mutation == "no-new-state"
    no_beta = mutation == "no-beta-update"
    delta_term = mutation != "no-correction"
    no_merge = mutation == "no-merge"

    @njit(cache=True, fastmath=True, boundscheck=False)
    def sweep_positions(start, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta,
                        rng, alpha, gamma, truncated):
        """Resample ``z[t]`` for ``t = positions[start:]`` in order (Eq. 9 with the HDP's
        prior, over the states in use and a new one), ``z[t]`` by inversion of ``uniforms[m]``
        (a new state's ``Beta(1, gamma)`` split from ``rng``). Returns the index reached: the
        end, or the first position met with no free label left (``K = Kc``, not truncated)."""
        cap = c.shape[0] - 1
        n_symbols = c.shape[1]
        width = c.shape[2]
        inv_a = 1.0 / n_symbols
        ft = c.dtype.type  # float32 or float64: the counts' type (module docstring)
        alpha_w = ft(alpha)
        h_end = ft(alpha * inv_a)
        zero = ft(0.0)
        counting = meta.shape[0] > 2  # meta[2]: positions moved (module docstring)
        for mi in range(start, positions.shape[0]):
            if not truncated and meta[0] >= cap:
                return mi
            t = positions[mi]
            ap = tokens[t - 1]  # a_{t-1} != 0
            a = tokens[t]
            p = z[t - 1]
            n = z[t + 1]
            old = z[t]
            h_out = h_end if a == 0 else ft(alpha * beta[n] * inv_a)  # alpha H(a_t, n)
            hi = meta[1]
            lim = min(width, ((hi + LANES) // LANES) * LANES)
            total = zero
            below = zero
            # sum of g_k from the full counts C; nothing stored (a scratch row written here
            # made the loop up to 1.6x slower, depending on where the arrays were allocated)
            for k in range(lim):
                w = (ct[a, n, k] + h_out) * (c[p, ap, k] + bk[k]) * recip[k]
                total += w
                below += w if k < old else zero
            # exact g_k where C^{-t} differs from C (or the delta applies): old, and n or p
            w_old = _exact_weight(old, p, ap, a, n, old, c, ct, ci, bk, alpha_w, h_out, delta_term)
            total += w_old - _raw_weight(old, p, ap, a, n, c, ct, recip, bk, h_out)
            n_fix = -1
            w_n = zero
            if n != 0 and n != old and ap == a and (p == old or p == n):
                n_fix = n
                w_n = _exact_weight(n, p, ap, a, n, old, c, ct, ci, bk, alpha_w, h_out, delta_term)
                d = w_n - _raw_weight(n, p, ap, a, n, c, ct, recip, bk, h_out)
                total += d
                if n < old:
                    below += d
            p_fix = -1
            w_p = zero
            if p != 0 and p != old and p != n and a == ap and n == old:
                p_fix = p
                w_p = _exact_weight(p, p, ap, a, n, old, c, ct, ci, bk, alpha_w, h_out, delta_term)
                d = w_p - _raw_weight(p, p, ap, a, n, c, ct, recip, bk, h_out)
                total += d
                if p < old:
                    below += d
            singleton = (not truncated) and ci[old] == 1  # z_t is old's only visit
            new_mass = 0.0
            g_new = zero
            if not truncated:
                new_mass = beta[0]
                if singleton:  # old is dropped: its beta joins beta_u (Teh et al. Sect. 5.3)
                    total -= w_old
                    w_old = zero
                    if not no_merge:
                        new_mass += beta[old]
                if not no_new:
                    g_new = ft(h_out * new_mass * inv_a)
                    total += g_new
            target = uniforms[mi] * np.float64(total)
            above = below + w_old
            if target >= below and target < above:
                continue  # z_t stays (w_old > 0)
            k = -1
            last = -1
            # the scan recomputes g_k (the exact value at n_fix, p_fix)
            if target < below:
                acc = zero
                for kk in range(1, old):
                    if kk == n_fix:
                        w = w_n
                    elif kk == p_fix:
                        w = w_p
                    else:
                        w = _raw_weight(kk, p, ap, a, n, c, ct, recip, bk, h_out)
                    if w > zero:
                        last = kk
                    acc += w
                    if target < acc:
                        k = kk
                        break
                if k < 0:
                    k = last  # rounding only
            else:
                acc = above
                for kk in range(old + 1, lim):
                    if kk == n_fix:
                        w = w_n
                    elif kk == p_fix:
                        w = w_p
                    else:
                        w = _raw_weight(kk, p, ap, a, n, c, ct, recip, bk, h_out)
                    if w > zero:
                        last = kk
                    acc += w
                    if target < acc:
                        k = kk
                        break
                if k < 0:
                    if g_new > zero:
                        k = 0  # a new state
                    elif last > 0:
                        k = last  # rounding only
                    else:
                        continue
            if k < 0 or k == old:
                continue
            if counting:
                meta[2] += 1
            if k == 0:  # a new state: b beta_u, b ~ Beta(1, gamma)
                b = rng.beta(1.0, gamma)
                if singleton:  # old's label, emptied, is the new state: no count moves
                    mass = beta[0] + beta[old]
                    beta[old] = b * mass
                    beta[0] = (1.0 - b) * mass
                    bk[old] = ft(floored(alpha * beta[old] * inv_a))
                    continue
                k = _free_label(ci, beta)
                beta[k] = b * beta[0]
                beta[0] = (1.0 - b) * beta[0]
                bk[k] = ft(floored(alpha * beta[k] * inv_a))
                meta[0] += 1
                if k > meta[1]:
                    meta[1] = k
            move_state(t, k, old, p, ap, a, n, z, c, ct, ci, recip, alpha)
            if singleton:  # old is empty now: drop it
                beta[0] += beta[old]
                beta[old] = 0.0
                bk[old] = zero
                recip[old] = zero
                meta[0] -= 1
                if old == meta[1]:
                    h = old - 1
                    while h > 0 and ci[h] == 0:
                        h -= 1
                    meta[1] = h
        return positions.shape[0]

    def sweeps(n_sweeps, start, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta,
               mcol, mrow, hyper, priors, rng, truncated):
        """Up to ``n_sweeps`` sweeps, the first from ``positions[start]``: each resamples every
        ``z_t`` (:func:`sweep_positions`), then the tables, ``gamma``, ``beta``, ``alpha``
        (module docstring) and compacts the labels. Returns ``(sweeps done, position
        reached)``: ``(n_sweeps, 0)``, or fewer when the capacity ran out at that position.
        A sweep draws its ``uniforms [M]`` (one per position, scratch kept by the caller) when
        it starts, so a sweep resumed after growth uses the same ones."""
        n_symbols = c.shape[1]
        for s in range(n_sweeps):
            if start == 0:
                if not truncated and meta[0] >= c.shape[0] - 1:
                    return s, 0  # no room: grow before this sweep draws anything
                uniforms[:] = rng.random(positions.shape[0])
            m = sweep_positions(start, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta,
                                meta, rng, hyper[0], hyper[1], truncated)
            if m < positions.shape[0]:
                return s, m
            start = 0
            alpha = hyper[0]
            gamma = hyper[1]
            m_total = sample_tables(c, ci, beta, meta, mcol, mrow, alpha, rng)
            hi = meta[1]
            # gamma | m (beta integrated out), then beta | m, gamma: a blocked draw of
            # (gamma, beta); gamma drawn after beta would keep a beta drawn under the old gamma
            if priors[2] > 0 and not truncated:
                gamma = resample_gamma(meta[0], m_total, gamma, priors[2], priors[3], rng,
                                       ALPHA_AUX_ITERATIONS)
            if not no_beta:  # (beta_1..beta_K, beta_u) ~ Dir(m_.1, .., m_.K, gamma)
                if truncated:
                    s_b = 0.0
                    for k in range(1, hi + 1):
                        beta[k] = rng.gamma(gamma / hi + mcol[k], 1.0)
                        s_b += beta[k]
                    beta[0] = 0.0
                else:
                    beta[0] = rng.gamma(gamma, 1.0)
                    s_b = beta[0]
                    for k in range(1, hi + 1):
                        if ci[k] > 0:
                            beta[k] = rng.gamma(float(mcol[k]), 1.0)
                            s_b += beta[k]
                for k in range(hi + 1):
                    beta[k] /= s_b
            if priors[0] > 0:  # alpha | m, n (beta factors out of Pr(z, m | alpha, beta))
                alpha = resample_alpha(ci, mrow, meta, alpha, priors[0], priors[1], rng,
                                       ALPHA_AUX_ITERATIONS)
            hyper[0] = alpha
            hyper[1] = gamma
            if not truncated:
                compact(tokens, z, c, ct, ci, beta, mcol, meta)
            refresh_weights(ci, recip, bk, beta, meta, alpha, n_symbols, truncated)
        return n_sweeps, 0

    # compiled in each process (cache=False), like the callers of the CGS-PFA sweep: a
    # disk-cached caller of the fastmath ``sweep_positions`` did not run the same code as one
    # compiled here, so a fresh clone's first fit and later fits gave different chains for
    # one seed (tests/test_reproducible_compiles.py)
    _BUILT[mutation] = njit(cache=False)(sweeps)
    return _BUILT[mutation]


_BUILT: dict = {}


@njit(cache=True)
def log_joint(c, ci, beta, meta, alpha, end_slip):
    """``log Pr(alpha_data, z | beta, alpha)``: Eq. 4 with the Dirichlet parameters ``alpha
    H(a, j)`` of the module docstring, over the instantiated states (float64). With ``beta_k
    = 1/N`` on ``N`` states and ``alpha = N A beta_cgs`` it is Eq. 4 itself. ``end_slip``
    (the validation mutant ``log-joint-end-prior`` of :data:`RECORDING_MUTATIONS`; False in
    production): the end marker's parameter written ``alpha`` instead of ``alpha / A``."""
    hi = meta[1]
    lg_alpha = math.lgamma(alpha)
    out = 0.0
    for i in range(hi + 1):
        if ci[i] != 0:
            out += row_log_joint(c, ci, i, beta, alpha, lg_alpha, hi, end_slip)
    return out


@njit(cache=True, inline="always")
def row_log_joint(c, ci, i, beta, alpha, lg_alpha, hi, end_slip):
    """Row ``i``'s factor of :func:`log_joint` (states ``0..hi``; ``lg_alpha = lgamma(alpha)``):
    ``lgamma(alpha) - lgamma(C_i + alpha) + sum_{a, j} [lgamma(C_iaj + alpha H(a, j)) -
    lgamma(alpha H(a, j))]`` over the nonzero cells."""
    n_symbols = c.shape[1]
    out = lg_alpha - math.lgamma(ci[i] + alpha)
    for a in range(n_symbols):
        for j in range(hi + 1):
            cnt = float(c[i, a, j])
            if cnt == 0.0:
                continue
            if a == 0:
                x = alpha if end_slip else alpha / n_symbols
            else:
                x = alpha * beta[j] / n_symbols
            out += math.lgamma(cnt + x) - math.lgamma(x)
    return out


#: The production sweeps (no mutation); see :func:`build_sweeps`.
sweeps = build_sweeps(None)
