"""Numba kernels of CGS-PFA, the collapsed Gibbs sampler of Shibata & Yoshinaka (2013), Sect. 2.3.

Chain state (C-contiguous arrays, mutated in place; states ``0..N``, letters ``0..A-1`` with 0
the end marker, ``T`` tokens in the layout of :mod:`bayesfa.corpus`, ``W`` = :func:`padded_width`
``(N)``, a multiple of 32 that is at least ``N + 1``):

- ``z`` int32 ``[T + 1]``: ``z[t]`` is the state before token ``t``; 0 at ``t = 0``, at
  ``t = T`` and after every end marker (Algorithm 1, line 1).
- ``c`` float32 ``[N+1, A, W]``: ``c[i, a, j] = C_iaj`` of Definition 2 (0 for ``j > N``).
- ``ct`` float32 ``[A, N+1, W]``: the same counts transposed, ``ct[a, j, i] = C_iaj``, so that
  both factors of Eq. 9, ``C_{k a_t z_{t+1}}`` and ``C_{z_{t-1} a_{t-1} k}``, are read
  contiguously over ``k`` (``ct[a_t, z_{t+1}, :]`` and ``c[z_{t-1}, a_{t-1}, :]``).
- ``ci`` int32 ``[N+1]``: ``C_i``, visits of state ``i`` (transitions out of ``i``).
- ``recip`` float32 ``[W]``: ``1 / (C_k + N A beta)`` for ``k = 1..N`` and 0 elsewhere, so the
  weight of state 0 and of the padding is 0.

Counts are whole numbers stored in float32, which holds every integer up to 2**24 exactly. No
count exceeds T, so for T < 2**24 (16.7 million tokens; the largest PAutomaC training set has
1.6 million) the counts, the recorded ``C_iaj``, the plug-in ``xi~`` and the log joint (Eq. 4,
float64) are exact, and the sampled conditional is exact up to float32 rounding of the weights
(relative error ~1e-7). A larger corpus gets float64 ``c``, ``ct`` and ``recip``
(:func:`bayesfa.samplers.pfa.cgs_pfa.count_dtype`, exact to 2**53), for which numba compiles
the same sweep; the plain ``gibbs`` sweep runs them, one chain at a time.

Callers of the sweep (:func:`sweeps`, :func:`tempered_sweeps`, :func:`sample_draws`, and the
like in the split-merge and multi-chain kernels) are compiled in each process (``cache=False``),
the sweep itself is cached on disk: disk-cached callers did not run the same code as the sweep
compiled on its own, so the first run of a fresh clone and later runs gave different chains
for one seed on large alphabets (``tests/test_reproducible_compiles.py``).

The sweep is built by :func:`build_sweep`, which can also compile it with one deliberate error
(:data:`MUTATIONS`) for the validation suite's mutants; the production sweep,
:func:`sweep_positions`, has every such switch off, and numba folds them away.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

LANES = 32  # the weight loop is vectorised 8 wide and unrolled 4 times


def padded_width(n_states: int) -> int:
    """Row length ``W`` of ``c``/``ct``: ``N + 1`` rounded up to a multiple of :data:`LANES`."""
    return -(-(n_states + 1) // LANES) * LANES


@njit(cache=True)
def count_transitions(tokens, z, c, ct, ci):
    """Recompute ``c, ct, ci`` in place from ``tokens [T]`` and ``z [T + 1]`` (Definition 2):
    ``c[i, a, j] = ct[a, j, i] = C_{iaj}``, ``ci[i] = C_i``. Shared by CGS-PFA and CGS-SG."""
    c[:] = 0
    ct[:] = 0
    ci[:] = 0
    for t in range(tokens.shape[0]):
        i = z[t]
        a = tokens[t]
        j = z[t + 1]
        c[i, a, j] += 1
        ct[a, j, i] += 1
        ci[i] += 1


@njit(cache=True)
def fill_counts(tokens, z, c, ct, ci, recip, beta):
    """Recompute ``c, ct, ci, recip`` in place from ``tokens [T]`` and ``z [T + 1]`` (Definition 2)."""
    n_states = c.shape[0] - 1
    n_symbols = c.shape[1]
    count_transitions(tokens, z, c, ct, ci)
    recip[:] = 0
    nab = n_states * n_symbols * beta
    for i in range(1, n_states + 1):
        recip[i] = 1.0 / (ci[i] + nab)


#: Deliberate errors that :func:`build_sweep` can compile into the sweep, one at a time, so
#: that the validation suite can show that it catches them (:mod:`bayesfa.validation.pfa.mutants`;
#: ``bayesfa validate cgs-pfa:mutant-NAME``). The production sweep has none of them: the
#: switches are closure constants that numba folds away.
MUTATIONS: dict[str, str] = {
    "no-correction": "Eq. 9 without its delta term (the self-loop read twice with the same letter)",
    "skip-current-correction": "g_k at k = z_t left as computed from C (the first exact-weight correction skipped)",
    "skip-next-correction": "g_k at k = z_{t+1} left as computed from C (the second correction skipped)",
    "skip-previous-correction": "g_k at k = z_{t-1} left as computed from C (the third correction skipped)",
    "full-out": "C_{k a_t z_{t+1}} instead of C^{-t} in the first factor of the exact weights",
    "full-in": "C_{z_{t-1} a_{t-1} k} instead of C^{-t} in the second factor of the exact weights",
    "full-denominator": "C_k instead of C_k^{-t} in the denominator of the exact weights",
    "no-denominator": "g_k without its denominator 1 / (C_k^{-t} + N A beta)",
    "end-beta": "beta instead of N beta as the prior of the end transition (k, 0, 0)",
    "skip-end-positions": "z_t never resampled where a_t = 0 (the last state of each string)",
    "keep-below": "the current state kept whenever u falls below the top of its interval",
    "frozen": "a kernel that never changes z",
}


@njit(cache=True, inline="always")
def _exact_weight(k, p, ap, a, n, old, c, ct, ci, nab, b_out, beta,
                  minus_out, minus_in, minus_den, delta_term, den_term):
    """``g_k`` of Eq. 9 with ``C^{-t}`` derived from the full counts ``C`` (float32).

    ``C^{-t} = C - e(p, a_{t-1}, old) - e(old, a_t, n)``, where ``old`` is the current ``z_t``;
    the delta term is 1 when ``(p, a_{t-1}, k) = (k, a_t, n)``. The switches (all True in
    production) drop one piece each, for the mutants of :data:`MUTATIONS`.
    """
    c_in = c[p, ap, k]
    if minus_in:
        c_in = c_in - np.float32(k == old) - np.float32(p == old and ap == a and k == n)
    c_out = ct[a, n, k]
    if minus_out:
        c_out = c_out - np.float32(k == old) - np.float32(k == p and a == ap and n == old)
    delta = np.float32(k == n and p == n and ap == a) if delta_term else np.float32(0.0)
    den = np.float32(ci[k] - (k == old)) if minus_den else np.float32(ci[k])
    den = den + np.float32(nab) if den_term else np.float32(1.0)
    return (c_out + b_out) * (c_in + beta + delta) / den


@njit(cache=True, fastmath=True, boundscheck=False, inline="always")
def move_state(t, k, old, p, ap, a, n, z, c, ct, ci, recip, nab):
    """``z_t: old -> k`` with the counts of its two transitions moved (Definition 2):
    ``(p, a_{t-1}, old) -> (p, a_{t-1}, k)`` and ``(old, a_t, n) -> (k, a_t, n)``, in ``c``,
    ``ct``, ``ci`` and ``recip`` (``nab = N A beta``). Shared by every one-chain CGS-PFA kernel.

    Inlined into the sweep at numba IR level; ``np.true_divide`` (numpy's error model: the
    same IEEE quotient, no ``ZeroDivisionError`` branch, as ``ci + nab >= nab > 0``) keeps the
    inlined code free of raise paths, which would otherwise make numba reference-count the
    arrays on every move (``benchmarks/kernel_codegen.py``)."""
    c[p, ap, old] -= 1
    c[p, ap, k] += 1
    ct[ap, old, p] -= 1
    ct[ap, k, p] += 1
    c[old, a, n] -= 1
    c[k, a, n] += 1
    ct[a, n, old] -= 1
    ct[a, n, k] += 1
    ci[old] -= 1
    ci[k] += 1
    recip[old] = recip.dtype.type(np.true_divide(1.0, ci[old] + nab))  # float32 or float64
    recip[k] = recip.dtype.type(np.true_divide(1.0, ci[k] + nab))
    z[t] = k


_BUILT: dict = {}


def build_sweep(mutation: str | None = None):
    """The sweep of Algorithm 1 (lines 13-17), compiled with ``mutation`` (a key of
    :data:`MUTATIONS`) or, for ``None``, without any: that one is :func:`sweep_positions`.

    Every variant is this one source; the switches are closure constants, so numba removes
    the branches they guard and the production sweep carries none of them (its speed is
    measured in ``benchmarks/RESULTS.md``). Built once per process and variant (and cached
    on disk by numba: the closure holds only booleans, whose pickles are stable).
    """
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if mutation in _BUILT:
        return _BUILT[mutation]
    no_delta = mutation == "no-correction"
    skip_current = mutation == "skip-current-correction"
    skip_next = mutation == "skip-next-correction"
    skip_previous = mutation == "skip-previous-correction"
    minus_out = mutation != "full-out"
    minus_in = mutation != "full-in"
    minus_den = mutation != "full-denominator"
    den_term = mutation != "no-denominator"
    end_beta = mutation == "end-beta"
    skip_end = mutation == "skip-end-positions"
    keep_below = mutation == "keep-below"
    frozen = mutation == "frozen"
    delta_term = not no_delta

    @njit(cache=True, fastmath=True, boundscheck=False)
    def sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta, b=1.0):
        """Resample ``z[t]`` for each ``t`` of ``positions`` in order (Algorithm 1, lines 13-17).

        For ``t`` with ``tokens[t-1] != 0``: ``g_k`` of Eq. 9 for ``k = 1..N`` (all three cases:
        an end marker at ``t`` gives ``z_{t+1} = 0`` and the prior ``N beta`` of the end
        transition; the delta correction when ``(z_{t-1}, a_{t-1}, k) = (k, a_t, z_{t+1})``),
        then ``z[t] = k`` with probability ``g_k / sum_i g_i`` by inversion of ``uniforms[m]``.

        The weights are first computed from the full counts ``C`` in one vectorised pass (which
        also sums them below the current state) and then corrected at the (at most three) ``k``
        where ``C`` and ``C^{-t}`` differ. The inversion first tests whether ``u`` falls on the
        current state; only if not does it scan, and only then are the counts written. The map
        from ``u`` to ``k`` is the inverse CDF over ``k = 1..N`` in increasing order either way;
        ``u * sum_i g_i`` is taken in float64, so that ``u < 1`` never reaches the top of the
        CDF (in float32, ``u >= 1 - 2**-25`` would round to 1).

        ``b`` (float64 in (0, 1], default 1): the inverse temperature. With ``b != 1`` each
        ``z_t`` is drawn with probability ``g_k^b / sum_i g_i^b`` instead, the exact Gibbs
        conditional of the tempered target ``Pr(alpha, z)^b`` (Eq. 4 raised to ``b``: the
        conditional of Eq. 8-9 is the ratio of two joints, so tempering the joint raises it to
        ``b``); the powers are taken in float64 after the corrections. With ``b == 1`` (or
        omitted) that branch is never entered and the sweep is the untempered one bit for bit.

        positions int64 ``[M]``, uniforms float64 ``[M]`` in [0, 1), g float32 ``[W]`` scratch;
        the rest is the chain state described in the module docstring. Returns how many of the
        positions changed state (int64; the sampler statistic ``moved`` of
        :data:`bayesfa.rundir.SAMPLE_STATS` before it is divided by ``M``): one integer
        increment a position that moves, so the sweep's arithmetic is unchanged.
        """
        moves = 0
        n_states = c.shape[0] - 1
        n_symbols = c.shape[1]
        width = c.shape[2]
        nab = n_states * n_symbols * beta
        beta32 = np.float32(beta)
        nbeta32 = np.float32(beta) if end_beta else np.float32(n_states * beta)
        for m in range(positions.shape[0]):
            if frozen:
                continue
            t = positions[m]
            ap = tokens[t - 1]  # a_{t-1} != 0
            a = tokens[t]  # a_t
            if skip_end and a == 0:
                continue
            p = z[t - 1]  # z_{t-1}
            n = z[t + 1]  # z_{t+1}, 0 when a_t = 0
            old = z[t]
            b_out = nbeta32 if a == 0 else beta32  # prior of (k, a_t, z_{t+1}), Eq. 2
            # g_k with C in place of C^{-t}: (C_{k a n} + b_out)(C_{p a' k} + beta) / (C_k + NA beta)
            total = np.float32(0.0)
            below = np.float32(0.0)  # sum of g_k over k < old
            for k in range(width):
                if den_term:
                    w = (ct[a, n, k] + b_out) * (c[p, ap, k] + beta32) * recip[k]
                else:
                    w = (ct[a, n, k] + b_out) * (c[p, ap, k] + beta32) * np.float32(recip[k] > 0)
                g[k] = w
                total += w
                below += w if k < old else np.float32(0.0)
            # exact g_k where C^{-t} differs from C, or where the delta term of Eq. 9 applies
            if not skip_current:
                w = _exact_weight(old, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                                  minus_out, minus_in, minus_den, delta_term, den_term)
                total += w - g[old]
                g[old] = w
            if not skip_next and n != 0 and n != old and ap == a and (p == old or p == n):
                w = _exact_weight(n, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                                  minus_out, minus_in, minus_den, delta_term, den_term)
                total += w - g[n]
                if n < old:
                    below += w - g[n]
                g[n] = w
            if not skip_previous and p != 0 and p != old and p != n and a == ap and n == old:
                w = _exact_weight(p, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                                  minus_out, minus_in, minus_den, delta_term, den_term)
                total += w - g[p]
                if p < old:
                    below += w - g[p]
                g[p] = w
            if b != 1.0:  # tempered: g_k^b (state 0 and the padding stay 0)
                total = np.float32(0.0)
                below = np.float32(0.0)
                for k in range(1, n_states + 1):
                    w = np.float32(math.pow(np.float64(g[k]), b))
                    g[k] = w
                    total += w
                    below += w if k < old else np.float32(0.0)
            # inversion of the CDF over k = 1..N at u * total: [below, below + g_old) keeps z_t,
            # which needs no scan and no count update (most positions once the chain has mixed)
            target = uniforms[m] * np.float64(total)
            above = below + g[old]
            if keep_below and target < above:
                continue
            if target < below:
                k = old - 1  # reached only through rounding, with probability ~1e-7
                acc = np.float32(0.0)
                for kk in range(1, old):
                    acc += g[kk]
                    if target < acc:
                        k = kk
                        break
            elif target < above:
                continue
            else:
                k = n_states  # idem
                acc = above
                for kk in range(old + 1, n_states + 1):
                    acc += g[kk]
                    if target < acc:
                        k = kk
                        break
            # (k == old is possible here only through rounding; the updates then cancel)
            moves += k != old
            move_state(t, k, old, p, ap, a, n, z, c, ct, ci, recip, nab)
        return moves

    _BUILT[mutation] = sweep_positions
    return sweep_positions


#: The production sweep (no mutation); see :func:`build_sweep` for its documentation.
sweep_positions = build_sweep(None)


@njit(cache=False)  # see the module docstring: callers of the sweep are compiled per process
def sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta):
    """``n_sweeps`` single iterations (Algorithm 1, lines 12-18) over ``positions`` in order.

    positions int64 ``[M]`` (the ``t`` with ``tokens[t-1] != 0``, increasing); one
    ``rng.random(M)`` per sweep supplies the uniforms. Returns the positions moved, summed
    over the sweeps (int64, :func:`sweep_positions`).
    """
    g = np.zeros(c.shape[2], dtype=np.float32)
    moves = 0
    for _ in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        moves += sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta)
    return moves


@njit(cache=False, nogil=True)  # see the module docstring: callers of the sweep are compiled per process
def tempered_sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta, b):
    """:func:`sweeps` at inverse temperature ``b`` (float64 in (0, 1]): each sweep the Gibbs
    sweep of ``Pr(alpha, z)^b`` (Eq. 4 tempered; see :func:`sweep_positions`), on the same
    ``rng.random(M)`` per sweep. ``b == 1`` runs the untempered sweep (the same numbers as
    :func:`sweeps`); the front's ``--anneal`` runs these during burn-in only. Returns the
    positions moved, summed over the sweeps (as :func:`sweeps`). It releases the GIL, so the
    replicas of ``--replicas`` sweep in threads at once (each on its own state and Generator:
    :class:`bayesfa.samplers.pfa._replica_kernel.Replicas`)."""
    if b == 1.0:
        return sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta)
    g = np.zeros(c.shape[2], dtype=np.float32)
    moves = 0
    for _ in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        moves += sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta, b)
    return moves


#: Deliberate errors in what the front *records* (not in the sweep): :func:`build_log_joint`
#: compiles one into the log joint written to the trace, so that ``bayesfa validate`` shows it
#: recomputes every recorded quantity (issue 39). Sampling is untouched by these.
RECORD_MUTATIONS: dict[str, str] = {
    "log-joint-end-prior": "the recorded log joint (Eq. 4) with beta instead of N beta as the "
                           "end transition's prior (sampling untouched)",
}


def build_log_joint(mutation: str | None = None):
    """:func:`log_joint`, compiled with ``mutation`` (a key of :data:`RECORD_MUTATIONS`) or,
    for ``None``, without any: that one is :func:`log_joint`. The switch is a closure
    constant that numba folds away, as in :func:`build_sweep`."""
    if mutation is not None and mutation not in RECORD_MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(RECORD_MUTATIONS)}")
    end_beta = mutation == "log-joint-end-prior"

    @njit(cache=True)
    def log_joint(c, beta):
        """``log Pr(alpha, z)`` of Eq. 4 (with ``R(beta)`` of Eq. 2) from ``C_iaj``.

        c ``[N+1, A, W]`` with ``W >= N + 1`` (columns past ``N`` ignored), any numeric dtype.
        """
        n_states = c.shape[0] - 1
        n_symbols = c.shape[1]
        nbeta = beta if end_beta else n_states * beta
        nab = n_states * n_symbols * beta
        lg_beta = math.lgamma(beta)
        lg_nbeta = math.lgamma(nbeta)
        lg_nab = math.lgamma(nab)
        out = 0.0
        for i in range(n_states + 1):
            total = 0.0
            for a in range(n_symbols):
                for j in range(n_states + 1):
                    cnt = float(c[i, a, j])
                    if cnt == 0.0:
                        continue
                    total += cnt
                    if a == 0:  # only (i, 0, 0) is possible
                        out += math.lgamma(cnt + nbeta) - lg_nbeta
                    else:
                        out += math.lgamma(cnt + beta) - lg_beta
            out += lg_nab - math.lgamma(total + nab)
        return out

    return log_joint


#: The production log joint (no mutation); see :func:`build_log_joint`.
log_joint = build_log_joint(None)


@njit(cache=True)
def n_states_used(ci):
    """Number of states ``i >= 1`` with ``C_i > 0``; ci ``[N+1]``."""
    out = 0
    for i in range(1, ci.shape[0]):
        if ci[i] > 0:
            out += 1
    return out


@njit(cache=True)
def n_edges(c):
    """Number of transitions ``(i, a, j)`` with ``C_iaj > 0``; c ``[N+1, A, W]``."""
    out = 0
    for i in range(c.shape[0]):
        for a in range(c.shape[1]):
            for j in range(c.shape[0]):
                if c[i, a, j] > 0:
                    out += 1
    return out


@njit(cache=True)
def record(c, out):
    """``out[i, a, j] = C_iaj`` as int32; out ``[N+1, A, N+1]``, c ``[N+1, A, W]``."""
    for i in range(out.shape[0]):
        for a in range(out.shape[1]):
            for j in range(out.shape[2]):
                out[i, a, j] = np.int32(c[i, a, j])


#: Columns of the ``out_stats`` int64 ``[D, STATS]`` of every one-chain CGS-PFA kernel's
#: ``sample_draws``, counted over each draw's ``period`` sweeps: 0, the positions whose state
#: changed (summed over the sweeps); 1 and 2, the Metropolis-Hastings proposals of another
#: state and those accepted (the alias-mh and bucket-mh kernels; 0 for Gibbs). The front
#: turns them into the sampler statistics ``moved`` (column 0 over ``period * M``) and
#: ``accept_mh`` (column 2 over column 1) of :data:`bayesfa.rundir.SAMPLE_STATS`.
STATS = 3


@njit(cache=True, inline="always")
def record_draw(d, c, ci, beta, out_counts, out_log_joint, out_n_states, out_n_edges):
    """Draw ``d`` of the outputs of :func:`sample_draws` from the chain's counts ``c``, ``ci``.
    Shared by every one-chain CGS-PFA kernel."""
    record(c, out_counts[d])
    out_log_joint[d] = log_joint(c, beta)
    out_n_states[d] = n_states_used(ci)
    out_n_edges[d] = n_edges(c)


@njit(cache=False)  # see the module docstring: callers of the sweep are compiled per process
def sample_draws(period, positions, tokens, z, c, ct, ci, recip, rng, beta,
                 out_counts, out_log_joint, out_n_states, out_n_edges, out_stats):
    """For each draw ``d``: ``period`` sweeps, then record the counts and trace values.

    out_counts int32 ``[D, N+1, A, N+1]``; out_log_joint float64 ``[D]`` (Eq. 4);
    out_n_states, out_n_edges int32 ``[D]`` (Algorithm 1, lines 5-10); out_stats int64
    ``[D, STATS]``, the sampler's own counts in the draw's ``period`` sweeps (:data:`STATS`;
    this kernel makes no Metropolis-Hastings step and leaves columns 1 and 2 as they are).
    """
    for d in range(out_counts.shape[0]):
        out_stats[d, 0] = sweeps(period, positions, tokens, z, c, ct, ci, recip, rng, beta)
        record_draw(d, c, ci, beta, out_counts, out_log_joint, out_n_states, out_n_edges)
