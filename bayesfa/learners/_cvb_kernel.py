"""Numba kernels of the collapsed variational methods of Shibata & Yoshinaka (2013), Sect. 2.4-2.5
and the appendix: CVB0 (Eq. 12, 14-16), the objective D0 of GCVB0 and its gradient (Eq. 17),
and CVB2 (second-order Taylor expansion of Eq. 12).

State (C-contiguous float64 arrays, mutated in place; states ``0..N``, letters ``0..A-1`` with
0 the end marker, ``T`` tokens in the layout of :mod:`bayesfa.corpus`):

- ``q`` ``[T + 1, N + 1]``: the mean-field factors ``q_t(k)`` of Sect. 2.4. At a *fixed*
  position (``t = 0``, ``t = T`` and every ``t`` after an end marker) ``q_t`` is the point
  mass on state 0; at a *free* position (``tokens[t-1] != 0``) ``q_t(0) = 0`` and
  ``q_t(1..N)`` sums to 1. Treating the fixed positions as point masses lets one formula
  cover the three cases of Eq. 9 (Lemma 1 with a deterministic ``z_s``).
- ``ec`` ``[N+1, A, N+1]``: ``E_q[C_iaj] = sum_{s<T} q_s(i) q_{s+1}(j) [a_s = a]``.
- ``eci`` ``[N+1]``: ``E_q[C_i] = sum_{s<T} q_s(i)``.

CVB2 keeps, besides ``ec`` and ``eci`` (and for the same ``q``):

- ``e2`` ``[N+1, A, N+1]``: ``sum_{s<T} [a_s = a] q_s(i)^2 q_{s+1}(j)^2``;
- ``f2`` ``[N+1, A, N+1]``: ``sum_{s<T-1} [a_s = a_{s+1} = a] q_s(x) q_{s+1}(x) q_{s+1}(y) q_{s+2}(y)``;
- ``d1`` ``[N+1, A]``: ``sum_{s<T-1} [a_s = a_{s+1} = a] q_s(k) q_{s+1}(k) q_{s+2}(k)``;
- ``qq`` ``[N+1]``: ``sum_{s<T} q_s(k)^2``.

Invariant: after every kernel call these sums equal their definitions for the current ``q``
(up to float64 rounding; the sweeps update them incrementally, the front recomputes them
from ``q`` every few iterations so that rounding cannot accumulate).

CVB2 here uses the exact variances under ``q`` of the three counts of Eq. 9. The paper's
appendix factorises ``E_q[delta(..u..) delta(..v..)]`` for ``|u - v| > 1`` although both
deltas contain ``z_{t+1}`` (Lemma 1 puts them in one class), which is what makes its sums
``O(N^3)``; conditioning on the shared neighbour instead (law of total variance: given
``z_{t+1}``, resp. ``z_{t-1}``, the count is a sum along a chain of independent ``z_s``
whose only covariances are between adjacent terms) needs only the ``O(N^2 A)`` sums above
and ``O(N^2)`` work per position. The test suite checks these moments against enumeration
of every path under ``q``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# No reassociation or contraction: with them LLVM chose the order of the O(N^2) float64 sums
# by the compile context, and a kernel numba compiled in the process gave other bits than the
# same kernel loaded from its on-disk cache (tests/test_cvb.py: fresh and cached compiles
# agree). Signed zeros are the only licence taken; no assumption about inf / nan is made.
FAST = {"nsz"}


# -- shared ---------------------------------------------------------------------------------
@njit(cache=True, fastmath=FAST)
def expected_counts(tokens, q, ec, eci):
    """Recompute ``ec`` and ``eci`` from ``q`` (definitions in the module docstring)."""
    n1 = q.shape[1]
    ec[:] = 0.0
    eci[:] = 0.0
    for s in range(tokens.shape[0]):
        a = tokens[s]
        for i in range(n1):
            qi = q[s, i]
            if qi == 0.0:
                continue
            eci[i] += qi
            for j in range(n1):
                ec[i, a, j] += qi * q[s + 1, j]


@njit(cache=True, inline="always", fastmath=FAST)
def _dot(q, s, r):
    out = 0.0
    for i in range(q.shape[1]):
        out += q[s, i] * q[r, i]
    return out


#: Deliberately wrong updates (compile-time switches of the kernels below, ``variant``),
#: for :mod:`bayesfa.validation.learners.cvb`: method -> mutant name -> variant.
MUTATIONS: dict[str, dict[str, int]] = {
    "cvb0": {"no-delta-term": 1, "no-lemma1-correction": 2},
    "cvb2": {"no-half-in-taylor": 1, "no-variance": 2},
    "gcvb0": {"grad-no-log-q": 1, "grad-no-incoming": 2},
}


# -- CVB0 (Eq. 12, 14-16) ---------------------------------------------------------------------
@njit(cache=True, boundscheck=False, fastmath=FAST)
def cvb0_means(t, tokens, q, ec, eci, out_m, in_m, den_m, variant=0):
    """The three expectations of Eq. 14 at the free position ``t``, for ``k = 1..N``.

    ``out_m[k] = E_q[C^{-t}_{k a_t z_{t+1}}]``, ``in_m[k] = E_q[C^{-t}_{z_{t-1} a_{t-1} k}
    + delta(z_{t-1}, a_{t-1}, k; k, a_t, z_{t+1})]``, ``den_m[k] = E_q[C^{-t}_k]`` (Sect. 2.4.1):
    the maintained ``E_q[C]`` minus the transitions ``s = t-1, t`` that contain ``z_t``, with
    the terms that share a ``z`` with ``z_{t+1}`` (resp. ``z_{t-1}``) replaced by their exact
    expectation (Lemma 1). ``O(N^2)``: one product of ``E_q[C_{.a.}]`` with ``q_{t+1}`` and
    one with ``q_{t-1}``. Arrays ``[N+1]``; index 0 is left untouched.

    ``variant`` (validation mutants of :data:`MUTATIONS`, a compile-time constant; 0 is
    the method): 1 drops the delta term of Eq. 9 from ``in_m``; 2 drops the Lemma 1
    corrections of the transitions ``t+1`` and ``t-2`` that share ``z_{t+1}`` resp.
    ``z_{t-1}`` (their expectations taken as if the ``z`` were independent).
    """
    n1 = q.shape[1]
    big_t = tokens.shape[0]
    a = tokens[t]
    ap = tokens[t - 1]
    # out: sum_j q_{t+1}(j) E[C_{k a j}] ...
    if a == 0:  # z_{t+1} = 0
        for k in range(1, n1):
            out_m[k] = ec[k, 0, 0]
    else:
        for k in range(1, n1):
            acc = 0.0
            for j in range(n1):
                acc += ec[k, a, j] * q[t + 1, j]
            out_m[k] = acc
    d_prev = _dot(q, t, t + 1) if ap == a else 0.0  # s = t-1 (a_{t-1} = a_t)
    d_self = _dot(q, t + 1, t + 1)  # s = t
    has_next = t + 1 <= big_t - 1 and tokens[t + 1] == a  # s = t+1 shares z_{t+1}
    d_next = _dot(q, t + 1, t + 2) if has_next else 0.0
    for k in range(1, n1):
        v = out_m[k] - q[t - 1, k] * d_prev - q[t, k] * d_self
        if has_next and variant != 2:
            v += q[t + 1, k] * (q[t + 2, k] - d_next)
        out_m[k] = v
    # in: sum_i q_{t-1}(i) E[C_{i a_{t-1} k}] ...
    for k in range(1, n1):
        in_m[k] = 0.0
    for i in range(n1):
        w = q[t - 1, i]
        if w == 0.0:
            continue
        for k in range(1, n1):
            in_m[k] += w * ec[i, ap, k]
    has_pp = t - 2 >= 0 and tokens[t - 2] == ap  # s = t-2 shares z_{t-1}
    d_pp = _dot(q, t - 1, t - 2) if has_pp else 0.0
    d_p = _dot(q, t - 1, t - 1)  # s = t-1
    d_s = _dot(q, t - 1, t) if a == ap else 0.0  # s = t
    for k in range(1, n1):
        v = in_m[k] - d_p * q[t, k]
        if has_pp and variant != 2:
            v += q[t - 1, k] * (q[t - 2, k] - d_pp)
        if a == ap:
            if variant == 1:
                v -= d_s * q[t + 1, k]
            else:
                v += q[t - 1, k] * q[t + 1, k] - d_s * q[t + 1, k]  # delta term, minus s = t
        in_m[k] = v
        den_m[k] = eci[k] - q[t, k]


@njit(cache=True, boundscheck=False, fastmath=FAST)
def _apply_delta(t, tokens, q, ec, eci, dq):
    """``q_t += dq`` with the matching changes of ``ec`` (``s = t-1, t``) and ``eci``."""
    n1 = q.shape[1]
    a = tokens[t]
    ap = tokens[t - 1]
    for i in range(n1):
        w = q[t - 1, i]
        if w == 0.0:
            continue
        for k in range(1, n1):
            ec[i, ap, k] += w * dq[k]
    if a == 0:
        for k in range(1, n1):
            ec[k, 0, 0] += dq[k]
    else:
        for k in range(1, n1):
            d = dq[k]
            for j in range(n1):
                ec[k, a, j] += d * q[t + 1, j]
    for k in range(1, n1):
        eci[k] += dq[k]
        q[t, k] += dq[k]


@njit(cache=True, boundscheck=False)
def cvb0_update_weights(t, tokens, q, ec, eci, beta, out_m, in_m, den_m, w, variant=0):
    """Normalised right-hand side of Eq. 12 with the 0th-order Eq. 15/16 into ``w[1..N]``."""
    n1 = q.shape[1]
    n_states = n1 - 1
    nab = n_states * ec.shape[1] * beta
    b_out = n_states * beta if tokens[t] == 0 else beta
    cvb0_means(t, tokens, q, ec, eci, out_m, in_m, den_m, variant)
    total = 0.0
    w[0] = 0.0
    for k in range(1, n1):
        v = (out_m[k] + b_out) * (in_m[k] + beta) / (den_m[k] + nab)
        w[k] = v
        total += v
    for k in range(1, n1):
        w[k] /= total


@njit(cache=True, boundscheck=False)
def cvb0_sweep(positions, tokens, q, ec, eci, beta, variant=0):
    """One CVB0 iteration: ``q_t`` <- Eq. 12 (0th order, Eq. 15/16) for each free ``t`` of
    ``positions`` in order, keeping ``ec``/``eci`` up to date (Sect. 2.4.1). ``O(N^2 T)``.

    Returns the largest ``|q_t(k)^new - q_t(k)^old|`` of the sweep. ``variant``: as
    :func:`cvb0_means` (0, the method).
    """
    n1 = q.shape[1]
    out_m = np.zeros(n1)
    in_m = np.zeros(n1)
    den_m = np.zeros(n1)
    w = np.zeros(n1)
    dq = np.zeros(n1)
    change = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        cvb0_update_weights(t, tokens, q, ec, eci, beta, out_m, in_m, den_m, w, variant)
        for k in range(1, n1):
            d = w[k] - q[t, k]
            dq[k] = d
            if abs(d) > change:
                change = abs(d)
        _apply_delta(t, tokens, q, ec, eci, dq)
    return change


# -- GCVB0 (Sect. 2.5, Eq. 17) ---------------------------------------------------------------
@njit(cache=True)
def q_from_x(x, positions, q):
    """``q_t(k) = x_t(k)^2 / sum_i x_t(i)^2`` (Sect. 4.2) at the free positions.

    x ``[M, N]``, positions int64 ``[M]``; returns the penalty ``sum_t (1 - sum_k q_t(k))^2``,
    which vanishes up to rounding with this parameterisation (the paper adds it anyway).
    """
    penalty = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        s = 0.0
        for k in range(x.shape[1]):
            s += x[m, k] * x[m, k]
        tot = 0.0
        q[t, 0] = 0.0
        for k in range(x.shape[1]):
            v = x[m, k] * x[m, k] / s
            q[t, k + 1] = v
            tot += v
        penalty += (1.0 - tot) * (1.0 - tot)
    return penalty


@njit(cache=True)
def neg_entropy(positions, q):
    """``E_q[log q(z)] = sum_t sum_k q_t(k) log q_t(k)`` (fixed positions contribute 0)."""
    out = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        for k in range(1, q.shape[1]):
            v = q[t, k]
            if v > 0.0:
                out += v * math.log(v)
    return out


@njit(cache=True, boundscheck=False, fastmath=FAST)
def d0_grad_x(positions, tokens, q, x, psi, psi_state, grad_x, variant=0):
    """Gradient of ``D0 + penalty`` with respect to ``x`` (Eq. 17 and the chain rule).

    ``dD0/dq_t(k) = - sum_j q_{t+1}(j) psi[k, a_t, j] - sum_i q_{t-1}(i) psi[i, a_{t-1}, k]
    + psi_state[k] + 1 + log q_t(k)`` with ``psi[i, a, j] = digamma(E_q[C_iaj] + prior_iaj)``
    (0 on the impossible cells) and ``psi_state[k] = digamma(E_q[C_k] + N A beta)``; the
    penalty adds ``-2 (1 - sum_k q_t(k))``. Then
    ``dF/dx_t(j) = 2 x_t(j) / S_t (g_t(j) - sum_k q_t(k) g_t(k))``, ``S_t = sum_i x_t(i)^2``.
    x, grad_x ``[M, N]``. ``variant`` (validation mutants, 0 is the method): 1 drops the
    ``log q_t(k)`` of the entropy term, 2 drops the incoming term ``sum_i q_{t-1}(i) psi[i, a_{t-1}, k]``.
    """
    n1 = q.shape[1]
    g = np.zeros(n1)
    for m in range(positions.shape[0]):
        t = positions[m]
        a = tokens[t]
        ap = tokens[t - 1]
        tot = 0.0
        for k in range(1, n1):
            tot += q[t, k]
        pen = -2.0 * (1.0 - tot)
        for k in range(1, n1):
            acc = 0.0
            if a == 0:
                acc = psi[k, 0, 0]
            else:
                for j in range(n1):
                    acc += psi[k, a, j] * q[t + 1, j]
            if variant == 1:
                g[k] = -acc + psi_state[k] + 1.0 + pen
            else:
                g[k] = -acc + psi_state[k] + 1.0 + math.log(q[t, k]) + pen
        for i in range(n1):
            if variant == 2:
                break
            w = q[t - 1, i]
            if w == 0.0:
                continue
            for k in range(1, n1):
                g[k] -= w * psi[i, ap, k]
        s = 0.0
        mean = 0.0
        for k in range(1, n1):
            s += x[m, k - 1] * x[m, k - 1]
            mean += q[t, k] * g[k]
        for k in range(1, n1):
            grad_x[m, k - 1] = 2.0 * x[m, k - 1] / s * (g[k] - mean)


# -- CVB2 (appendix) ---------------------------------------------------------------------------
@njit(cache=True, boundscheck=False)
def _add_pair(s, sign, tokens, q, ec, e2, eci, qq):
    """Add ``sign`` times the terms of transition ``s`` to ``ec``, ``e2``, ``eci``, ``qq``."""
    n1 = q.shape[1]
    a = tokens[s]
    for i in range(n1):
        qi = q[s, i]
        if qi == 0.0:
            continue
        eci[i] += sign * qi
        qq[i] += sign * qi * qi
        for j in range(n1):
            v = qi * q[s + 1, j]
            ec[i, a, j] += sign * v
            e2[i, a, j] += sign * v * v


@njit(cache=True, boundscheck=False)
def _add_triple(s, sign, tokens, q, f2, d1):
    """Add ``sign`` times the terms of the adjacent transitions ``(s, s+1)`` to ``f2``, ``d1``."""
    a = tokens[s]
    if tokens[s + 1] != a:
        return
    n1 = q.shape[1]
    for x in range(n1):
        u = q[s, x] * q[s + 1, x]
        if u == 0.0:
            continue
        d1[x, a] += sign * u * q[s + 2, x]
        for y in range(n1):
            f2[x, a, y] += sign * u * q[s + 1, y] * q[s + 2, y]


@njit(cache=True)
def cvb2_sums(tokens, q, ec, e2, f2, d1, eci, qq):
    """Recompute every CVB2 sum (module docstring) from ``q``."""
    ec[:] = 0.0
    e2[:] = 0.0
    f2[:] = 0.0
    d1[:] = 0.0
    eci[:] = 0.0
    qq[:] = 0.0
    big_t = tokens.shape[0]
    for s in range(big_t):
        _add_pair(s, 1.0, tokens, q, ec, e2, eci, qq)
        if s + 1 <= big_t - 1:
            _add_triple(s, 1.0, tokens, q, f2, d1)


@njit(cache=True, inline="always")
def _has(s, letter, tokens):
    """Transition ``s`` exists and emits ``letter``."""
    return s >= 0 and s <= tokens.shape[0] - 1 and tokens[s] == letter


@njit(cache=True, inline="always")
def _has2(s, letter, tokens):
    """Transitions ``s`` and ``s + 1`` exist and both emit ``letter``."""
    return s >= 0 and s + 1 <= tokens.shape[0] - 1 and tokens[s] == letter and tokens[s + 1] == letter


@njit(cache=True, boundscheck=False)
def cvb2_moments(t, tokens, q, ec, e2, f2, d1, eci, qq, mean, var):
    """Mean and variance under ``q`` of the three counts of Eq. 9 at free position ``t``.

    Rows of mean, var ``[3, N+1]``: 0 ``C^{-t}_{k a_t z_{t+1}}``; 1 ``C^{-t}_{z_{t-1} a_{t-1} k}
    + delta(z_{t-1}, a_{t-1}, k; k, a_t, z_{t+1})``; 2 ``C^{-t}_k``; for ``k = 1..N``. Law of
    total variance over the shared neighbour (``z_{t+1}`` for row 0, ``z_{t-1}`` for row 1);
    given it, a sum along a chain whose terms covary only when adjacent (module docstring):
    the running sums minus the terms near ``t`` plus their conditional values. ``O(N^2)``.
    The means are those of CVB0 (:func:`cvb0_means`).
    """
    n1 = q.shape[1]
    a = tokens[t]
    ap = tokens[t - 1]
    # row 0: transitions t-1, t are removed; t+1 shares z_{t+1}. Pairs (s, s+1) starting at
    # t-2 .. t+1 are removed; (t+1, t+2) is put back with z_{t+1} fixed.
    o_m1 = 1.0 if a == ap else 0.0  # transition t-1
    o_p1 = 1.0 if _has(t + 1, a, tokens) else 0.0
    o_c2 = 1.0 if _has2(t - 2, a, tokens) else 0.0
    o_c1 = 1.0 if _has2(t - 1, a, tokens) else 0.0
    o_c0 = 1.0 if _has2(t, a, tokens) else 0.0
    o_cp = 1.0 if _has2(t + 1, a, tokens) else 0.0
    tp2 = min(t + 2, q.shape[0] - 1)  # rows only read when the flags above are set
    tp3 = min(t + 3, q.shape[0] - 1)
    tm2 = max(t - 2, 0)
    tm3 = max(t - 3, 0)
    # row 1: transitions t-1, t are removed; t-2 shares z_{t-1}. Pairs starting at t-3 .. t
    # are removed; (t-3, t-2) is put back with z_{t-1} fixed.
    i_m2 = 1.0 if _has(t - 2, ap, tokens) else 0.0
    i_0 = 1.0 if a == ap else 0.0  # transition t
    i_c3 = 1.0 if _has2(t - 3, ap, tokens) else 0.0
    i_c2 = 1.0 if _has2(t - 2, ap, tokens) else 0.0
    i_c1 = 1.0 if _has2(t - 1, ap, tokens) else 0.0
    i_c0 = 1.0 if _has2(t, ap, tokens) else 0.0
    i_next = 1.0 if _has(t + 1, ap, tokens) else 0.0
    for k in range(1, n1):
        m1 = 0.0
        m2 = 0.0
        for n in range(n1):
            wn = q[t + 1, n]
            if wn == 0.0:
                continue
            kn = 1.0 if k == n else 0.0
            u1 = o_m1 * q[t - 1, k] * q[t, n]
            u0 = q[t, k] * q[t + 1, n]
            up = o_p1 * q[t + 1, k] * q[tp2, n]
            uf = o_p1 * kn * q[tp2, n]
            m = ec[k, a, n] - u1 - u0 - up + uf
            sq = e2[k, a, n] - u1 * u1 - u0 * u0 - up * up + uf * uf
            cov = kn * d1[k, a] - f2[k, a, n]
            cov -= o_c2 * q[tm2, k] * q[t - 1, k] * q[t, n] * (kn - q[t - 1, n])
            cov -= o_c1 * q[t - 1, k] * q[t, k] * q[t + 1, n] * (kn - q[t, n])
            cov -= o_c0 * q[t, k] * q[t + 1, k] * q[tp2, n] * (kn - q[t + 1, n])
            cov -= o_cp * q[t + 1, k] * q[tp2, k] * q[tp3, n] * (kn - q[tp2, n])
            cov += o_cp * kn * q[tp2, k] * q[tp3, k] * (1.0 - q[tp2, k])
            v = m - sq + 2.0 * cov
            m1 += wn * m
            m2 += wn * (v + m * m)
        mean[0, k] = m1
        var[0, k] = m2 - m1 * m1
        m1 = 0.0
        m2 = 0.0
        for p in range(n1):
            wp = q[t - 1, p]
            if wp == 0.0:
                continue
            pk = 1.0 if k == p else 0.0
            u2 = i_m2 * q[tm2, p] * q[t - 1, k]
            u1 = q[t - 1, p] * q[t, k]
            u0 = i_0 * q[t, p] * q[t + 1, k]
            uf = i_m2 * q[tm2, p] * pk
            m = ec[p, ap, k] - u2 - u1 - u0 + uf
            sq = e2[p, ap, k] - u2 * u2 - u1 * u1 - u0 * u0 + uf * uf
            cov = pk * d1[p, ap] - f2[p, ap, k]
            cov -= i_c3 * q[tm3, p] * q[tm2, p] * q[t - 1, k] * (pk - q[tm2, k])
            cov -= i_c2 * q[tm2, p] * q[t - 1, p] * q[t, k] * (pk - q[t - 1, k])
            cov -= i_c1 * q[t - 1, p] * q[t, p] * q[t + 1, k] * (pk - q[t, k])
            cov -= i_c0 * q[t, p] * q[t + 1, p] * q[tp2, k] * (pk - q[t + 1, k])
            cov += i_c3 * pk * q[tm3, k] * q[tm2, k] * (1.0 - q[tm2, k])
            v = m - sq + 2.0 * cov
            if i_0 * pk == 1.0:  # the delta term of Eq. 9, delta(z_{t+1} = k)
                r = q[t + 1, k]
                m += r
                v += r * (1.0 - r) * (1.0 + 2.0 * i_next * q[tp2, k])  # shares z_{t+1} with t+1
            m1 += wp * m
            m2 += wp * (v + m * m)
        mean[1, k] = m1
        var[1, k] = m2 - m1 * m1
        c = eci[k] - q[t, k]
        mean[2, k] = c
        var[2, k] = c - (qq[k] - q[t, k] * q[t, k])


@njit(cache=True, boundscheck=False)
def cvb2_update_weights(t, tokens, q, ec, e2, f2, d1, eci, qq, beta, mean, var, w, variant=0):
    """Normalised CVB2 update into ``w[1..N]``: Eq. 12 with
    ``E[log(X + c)] ~ log(E X + c) - V X / (2 (E X + c)^2)`` for the three factors of Eq. 9.
    ``variant`` (validation mutants, 0 is the method): 1 drops the 1/2 (the paper's Eq. 13 as
    printed), 2 drops the variance terms (the update of CVB0)."""
    n1 = q.shape[1]
    n_states = n1 - 1
    nab = n_states * ec.shape[1] * beta
    b_out = n_states * beta if tokens[t] == 0 else beta
    cvb2_moments(t, tokens, q, ec, e2, f2, d1, eci, qq, mean, var)
    top = -np.inf
    w[0] = 0.0
    for k in range(1, n1):
        xo = mean[0, k] + b_out
        xi = mean[1, k] + beta
        xd = mean[2, k] + nab
        if variant == 0:
            v = (math.log(xo) - var[0, k] / (2.0 * xo * xo) + math.log(xi) - var[1, k] / (2.0 * xi * xi)
                 - math.log(xd) + var[2, k] / (2.0 * xd * xd))
        elif variant == 1:
            v = (math.log(xo) - var[0, k] / (xo * xo) + math.log(xi) - var[1, k] / (xi * xi)
                 - math.log(xd) + var[2, k] / (xd * xd))
        else:
            v = math.log(xo) + math.log(xi) - math.log(xd)
        w[k] = v
        if v > top:
            top = v
    total = 0.0
    for k in range(1, n1):
        w[k] = math.exp(w[k] - top)
        total += w[k]
    for k in range(1, n1):
        w[k] /= total


@njit(cache=True, boundscheck=False)
def cvb2_sweep(positions, tokens, q, ec, e2, f2, d1, eci, qq, beta, variant=0):
    """One CVB2 iteration over ``positions`` in order, keeping every sum up to date (the
    transitions ``t-1, t`` and adjacent pairs starting at ``t-2, t-1, t`` contain ``z_t``).
    Returns the largest ``|q_t(k)^new - q_t(k)^old|``. ``variant``: as
    :func:`cvb2_update_weights` (0, the method)."""
    n1 = q.shape[1]
    big_t = tokens.shape[0]
    mean = np.zeros((3, n1))
    var = np.zeros((3, n1))
    w = np.zeros(n1)
    change = 0.0
    for m in range(positions.shape[0]):
        t = positions[m]
        cvb2_update_weights(t, tokens, q, ec, e2, f2, d1, eci, qq, beta, mean, var, w, variant)
        for s in range(t - 1, t + 1):
            _add_pair(s, -1.0, tokens, q, ec, e2, eci, qq)
        for s in range(max(0, t - 2), min(t, big_t - 2) + 1):
            _add_triple(s, -1.0, tokens, q, f2, d1)
        for k in range(1, n1):
            d = abs(w[k] - q[t, k])
            if d > change:
                change = d
            q[t, k] = w[k]
        for s in range(t - 1, t + 1):
            _add_pair(s, 1.0, tokens, q, ec, e2, eci, qq)
        for s in range(max(0, t - 2), min(t, big_t - 2) + 1):
            _add_triple(s, 1.0, tokens, q, f2, d1)
    return change
