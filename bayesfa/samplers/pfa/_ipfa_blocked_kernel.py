"""Numba kernel of the iPFA's weak-limit blocked sampler (issue 38, item 1; Fox, Sudderth,
Jordan & Willsky 2011, Sect. 4 and App.).

Model: the weak limit of :mod:`bayesfa.samplers.pfa._ipfa_kernel`'s HDP-PFA with ``L`` states
(the same model as the direct sampler's ``--truncate L``): ``beta ~ Dir(gamma/L, .., gamma/L)``
over the states ``1..L``; each state's row ``theta_i ~ Dir(alpha H)`` over ``(a, j)`` with
``H(a, j) = beta_j / A`` for a letter ``a != 0`` and ``j >= 1`` and ``H(0, 0) = 1 / A`` (the end
marker back to state 0); ``alpha ~ Gamma``, ``gamma ~ Gamma`` (shape, rate; shape <= 0: fixed).

One sweep (:func:`build_sweeps`), each step an exact draw from its conditional:

1. ``theta_i ~ Dir(alpha H + C_i)`` for ``i = 0..L`` (gammas in log space, each row normalised
   by its largest, as :func:`bayesfa.samplers.pfa._ffbs_kernel.draw_theta`);
2. every string's path ``z ~ Pr(z | theta)`` by forward filtering-backward sampling
   (:func:`bayesfa.samplers.pfa._ffbs_kernel.ffbs_paths`, CGS-PFA's blocked move's kernel),
   or (``--paths slice``) by the slice-sampled FFBS of the same kernel family
   (:func:`bayesfa.samplers.pfa._ffbs_kernel.build_slice`: slices ``u`` given ``z``, then
   ``z`` given ``u`` on the trellis of the cells above them; Van Gael et al. 2008), a Gibbs
   step that keeps ``Pr(z | theta)`` invariant at a cost of the cells above their slices a
   token instead of ``O(L^2)``; ``theta`` is then dropped and the counts ``C`` rebuilt from
   ``z``;
3. the franchise's table counts ``m | z, beta, alpha`` (``theta`` integrated out;
   :func:`bayesfa.samplers.pfa._ipfa_kernel.sample_tables`);
4. ``gamma | m`` with ``beta`` integrated out: ``Pr(gamma | m) ∝ Pr(gamma) Gamma(gamma) /
   Gamma(gamma + m..) prod_k Gamma(gamma/L + m_.k) / Gamma(gamma/L)``. Expanding each
   ``Gamma(gamma/L + m_.k) / Gamma(gamma/L) = sum_r s(m_.k, r) (gamma/L)^r`` (top-level tables
   ``r_k``, drawn as ``r_k ~ CRT(m_.k, gamma/L)``: ``m_.k`` customers, the ``l``-th opening a
   table with probability ``(gamma/L) / (gamma/L + l)``), ``gamma`` given ``R = sum_k r_k`` has
   the density of Escobar & West (1995) with ``K = R`` and ``n = m..``, which
   :func:`bayesfa.samplers.pfa._ipfa_kernel.resample_gamma` draws;
5. ``beta | m, gamma ~ Dir(gamma/L + m_.1, .., gamma/L + m_.L)`` (steps 4-5: a blocked draw of
   ``(gamma, beta)``);
6. ``alpha | m, C`` by Teh et al. (2006), App. A
   (:func:`bayesfa.samplers.pfa._ipfa_kernel.resample_alpha`; ``beta`` factors out).

Steps 1-2 are Gibbs steps of ``Pr(z, theta | beta, alpha)``; 3-6 of ``Pr(z, m, beta, alpha,
gamma)`` with ``theta`` integrated out, each drawing a block whose old value no later step
reads before it is redrawn (a partially collapsed Gibbs sampler whose stationary law is the
truncated model's posterior).

Chain state: as the truncated direct sampler's (:mod:`bayesfa.samplers.pfa._ipfa_kernel`:
``z``, ``c``, ``ct``, ``ci``, ``beta [L+1]`` with ``beta[0] = 0``, ``meta = (L, L)``, ``mcol``,
``mrow``, ``hyper``, ``priors``), plus scratch ``theta`` float64 ``[L+1, A, L+1]`` and ``filt``
float64 ``[max letters, L+1]``. A sweep's state at its boundary is ``(z, beta, alpha,
gamma)`` and the Generator: ``theta``, the counts and the tables are recomputed from them.

:data:`MUTATIONS` are compile-time switches of this one source (:func:`build_sweeps`);
production has none. :mod:`bayesfa.validation.pfa.ipfa_blocked` checks it exactly on toys.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions, n_states_used
from bayesfa.samplers.pfa._ffbs_kernel import (SLICE_MUTATIONS, _log_gamma, build_slice, ffbs_paths,
                                               max_letters)
from bayesfa.samplers.pfa._ipfa_kernel import (ALPHA_AUX_ITERATIONS, resample_alpha,
                                               resample_gamma, sample_tables)

__all__ = ["MUTATIONS", "PATHS", "STEP0_MUTATIONS", "build_hybrid", "build_sweeps", "draw_theta",
           "scratch", "sweeps"]

#: Deliberate errors for ``bayesfa validate ipfa:mutant-NAME`` (all named ``blocked-...``).
MUTATIONS: dict[str, str] = {
    "blocked-no-beta": "blocked sampler: the weights beta never resampled (kept at their "
                       "initial uniform 1/L)",
    "blocked-untruncated-prior": "blocked sampler: truncation ignored in the prior, beta | m "
                                 "~ Dir(gamma + m_.k) instead of Dir(gamma/L + m_.k)",
    "blocked-no-top-tables": "blocked sampler: gamma's update without its auxiliary top-level "
                             "tables r_k ~ CRT(m_.k, gamma/L), the states in use standing for "
                             "their sum (the HDP's formula)",
    "blocked-step0-gamma-for-alpha": "step 0's weights refreshed with gamma in alpha's place "
                                     "(recip = 1 / (C_k + gamma), bk = gamma beta_k / A)",
}
#: Mutants of step 0 only (the blocked sweep of steps 1-6 is production's).
STEP0_MUTATIONS = ("blocked-step0-gamma-for-alpha",)
#: How step 2 redraws the paths (``--paths``, the first the default): ``slice``,
#: :func:`~bayesfa.samplers.pfa._ffbs_kernel.build_slice`'s slice-sampled FFBS (the beam
#: sampler's step on the weak limit: the cells above their slices a token); ``dense``,
#: :func:`~bayesfa.samplers.pfa._ffbs_kernel.ffbs_paths` (``O(L^2)`` a token).
PATHS = ("slice", "dense")
#: The slice FFBS's mutants, run with ``paths="slice"`` (``bayesfa validate ipfa:mutant-slice-...``).
MUTATIONS.update(SLICE_MUTATIONS)


@njit(cache=True)
def draw_theta(c, beta, alpha, rng, theta):
    """Step 1: ``theta_i ~ Dir(alpha H + C_i)`` for ``i = 0..L``, rows in order ``i``, each
    ``(0, 0)`` first then ``(a, j)`` in row-major order; cells outside Sect. 2.1's constraints
    are 0, and so is a cell of shape 0. c float32 ``[L+1, A, W]``, beta ``[L+1]``, theta float64 ``[L+1, A, L+1]``."""
    n_st = theta.shape[0]
    n_sym = theta.shape[1]
    x = alpha / n_sym
    theta[:] = 0.0
    for i in range(n_st):
        theta[i, 0, 0] = _log_gamma(rng, x + c[i, 0, 0])
        top = theta[i, 0, 0]
        for a in range(1, n_sym):
            for j in range(1, n_st):
                shape = x * beta[j] + c[i, a, j]
                # Gamma(0) is the point mass at 0 (beta_j underflowed to 0, no count)
                v = _log_gamma(rng, shape) if shape > 0.0 else -math.inf
                theta[i, a, j] = v
                top = max(top, v)
        total = 0.0
        for a in range(n_sym):
            for j in range(n_st):
                if (a == 0) != (j == 0):
                    continue
                v = math.exp(theta[i, a, j] - top)
                theta[i, a, j] = v
                total += v
        for a in range(n_sym):
            for j in range(n_st):
                theta[i, a, j] /= total


def scratch(tokens: np.ndarray, truncation: int, n_symbols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, filt)``: the sweep's scratch for ``tokens`` with ``L = truncation``."""
    return (np.zeros((truncation + 1, n_symbols, truncation + 1)),
            np.zeros((max(1, int(max_letters(tokens))), truncation + 1)))


_BUILT: dict = {}


def build_sweeps(mutation: str | None = None, paths: str = "dense"):
    """``sweeps(n_sweeps, tokens, z, c, ct, ci, beta, meta, mcol, mrow, hyper, priors, rng,
    theta, filt)``: ``n_sweeps`` sweeps of the module docstring, compiled with ``mutation`` (a
    key of :data:`MUTATIONS`) or, for None, without, step 2 by ``paths`` (:data:`PATHS`;
    ``slice``: :func:`~bayesfa.samplers.pfa._ffbs_kernel.build_slice`, a Gibbs step of the
    paths and their slices given ``theta``, which keeps ``Pr(z | theta)`` invariant as the
    dense draw does; a slice mutation implies it). Returns ``log Pr(data | theta)`` of the
    last sweep's ``theta`` (step 2; NaN with ``slice``, which does not compute it). With a fifth entry ``b`` in ``priors`` (the front's
    ``anneal``, burn-in only) and ``b != 1``, step 2 draws the paths of ``Pr(z | theta)^b``
    (each cell of ``theta`` raised to ``b``, rows not renormalised: FFBS draws paths in
    proportion to the product of their cells): flatter paths that visit rows the data
    support less, such as the empty states' rows drawn from the prior. Steps 1 and 3-6 are
    unchanged, so such a sweep is not a step of any one tempered target: a start of the
    burn-in only, after which every sweep is the untempered one. ``priors`` of four entries,
    or ``b == 1``, runs the untempered sweep bit for bit. With a third entry in ``meta`` (the
    front's chains), the positions whose state step 2 changed are added to ``meta[2]`` (the
    sampler statistic
    ``moved``; one comparison a token, against a copy of ``z`` made before the step)."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if paths not in PATHS:
        raise ValueError(f"unknown paths {paths!r}; choose from {', '.join(PATHS)}")
    if mutation in SLICE_MUTATIONS:
        paths = "slice"
    key = (mutation, paths)
    if key in _BUILT:
        return _BUILT[key]
    if mutation in STEP0_MUTATIONS:
        return build_sweeps(None, paths)
    dense = paths == "dense"
    draw_paths = ffbs_paths if dense else build_slice(mutation if mutation in SLICE_MUTATIONS
                                                      else None)
    no_beta = mutation == "blocked-no-beta"
    untruncated = mutation == "blocked-untruncated-prior"
    no_top = mutation == "blocked-no-top-tables"

    @njit(cache=True)
    def sweeps(n_sweeps, tokens, z, c, ct, ci, beta, meta, mcol, mrow, hyper, priors, rng,
               theta, filt):
        n_st = c.shape[0] - 1
        log_lik = 0.0
        counting = meta.shape[0] > 2
        tempered = priors.shape[0] > 4 and priors[4] != 1.0
        before = np.empty(z.shape[0] if counting else 0, dtype=z.dtype)
        for _ in range(n_sweeps):
            alpha = hyper[0]
            gamma = hyper[1]
            draw_theta(c, beta, alpha, rng, theta)
            if tempered:  # burn-in's annealing: the paths of Pr(z | theta)^b
                b = priors[4]
                for i in range(theta.shape[0]):
                    for a in range(theta.shape[1]):
                        for j in range(theta.shape[2]):
                            if theta[i, a, j] > 0.0:
                                theta[i, a, j] = theta[i, a, j] ** b
            if counting:
                before[:] = z
            if dense:
                log_lik = draw_paths(theta, tokens, z, filt, rng)
            else:
                draw_paths(theta, tokens, z, filt, rng)
                log_lik = math.nan
            if counting:
                moved = 0
                for t in range(z.shape[0]):
                    moved += z[t] != before[t]
                meta[2] += moved
            count_transitions(tokens, z, c, ct, ci)
            m_total = sample_tables(c, ci, beta, meta, mcol, mrow, alpha, rng)
            if priors[2] > 0:
                if no_top:
                    r_total = n_states_used(ci)
                else:  # r_k ~ CRT(m_.k, gamma / L)
                    g = gamma / n_st
                    r_total = 0
                    for k in range(1, n_st + 1):
                        for l in range(mcol[k]):
                            if rng.random() * (g + l) < g:
                                r_total += 1
                gamma = resample_gamma(r_total, m_total, gamma, priors[2], priors[3], rng,
                                       ALPHA_AUX_ITERATIONS)
            if not no_beta:  # beta ~ Dir(gamma / L + m_.k), in log space
                base = gamma if untruncated else gamma / n_st
                top = -math.inf
                for k in range(1, n_st + 1):
                    beta[k] = _log_gamma(rng, base + mcol[k])
                    top = max(top, beta[k])
                s_b = 0.0
                for k in range(1, n_st + 1):
                    beta[k] = math.exp(beta[k] - top)
                    s_b += beta[k]
                beta[0] = 0.0
                for k in range(1, n_st + 1):
                    beta[k] /= s_b
            if priors[0] > 0:
                alpha = resample_alpha(ci, mrow, meta, alpha, priors[0], priors[1], rng,
                                       ALPHA_AUX_ITERATIONS)
            hyper[0] = alpha
            hyper[1] = gamma
        return log_lik

    _BUILT[key] = sweeps
    return sweeps


#: The production sweeps (no mutation); see :func:`build_sweeps`.
sweeps = build_sweeps(None)

_HYBRID: dict = {}


def build_hybrid(mutation: str | None = None, split_rate: float = 0.0,
                 split_scans: int | None = None, paths: str = "dense"):
    """``hybrid(n_sweeps, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta,
    mcol, mrow, hyper, priors, rng, theta, filt)``: ``n_sweeps`` sweeps, each step 0 then the
    blocked sweep of :func:`build_sweeps` (steps 1-6). Step 0 is one sweep of the collapsed
    direct-assignment sampler of the same truncated model
    (:func:`bayesfa.samplers.pfa._ipfa_kernel.build_sweeps` with ``truncated``: every free
    position ``z_t`` drawn in turn from Eq. 9 with the prior ``alpha H`` over the ``L``
    states, then the tables, ``beta ~ Dir(gamma/L + m_.k)`` and ``alpha``; ``gamma`` held),
    on ``recip``, ``bk`` refreshed from the current ``beta`` and ``alpha`` first. Each step
    leaves the truncated posterior invariant, so their composition does. Step 0 is what
    opens states: its weight for an empty state is the prior predictive ``alpha H`` (its row
    integrated out), where step 2's is a row drawn from the prior, which rarely fits the
    letters that follow (issue 38; benchmarks/RESULTS.md). ``positions`` int64 ``[M]`` the
    free positions, ``uniforms`` float64 ``[M]`` scratch, ``recip`` and ``bk`` ``[W]`` as in
    :mod:`bayesfa.samplers.pfa._ipfa_kernel`. Compiled in each process (``cache=False``), as
    every caller of the direct sweep. Returns step 2's ``log Pr(data | theta)`` of the last
    sweep (NaN with ``paths="slice"``). ``paths``: step 2's draw (:func:`build_sweeps`).

    ``split_rate > 0``: after step 6 of each sweep, ``n_moves_now(split_rate)`` split-merge
    moves on ``z`` given ``(beta, alpha)`` with ``theta`` integrated out
    (:func:`bayesfa.samplers.pfa._ipfa_split_kernel.propose`: Jain & Neal 2004's restricted
    Gibbs move with ``split_scans`` launch scans, anchors followed by different letters, the
    letter launch, the empty state drawn in proportion to ``beta``; a split fills an empty
    state of the truncation, a merge empties one). Each move leaves ``Pr(z | beta, alpha,
    data)`` invariant (:mod:`bayesfa.validation.pfa.ipfa_split`), hence the truncated
    posterior; the number of moves is drawn independently of the chain."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    from bayesfa.samplers.pfa import _ipfa_split_kernel as sk
    from bayesfa.samplers.pfa._split_merge_kernel import n_moves_now

    split_scans = sk.SCANS if split_scans is None else int(split_scans)
    split_rate = float(split_rate)
    if paths not in PATHS:
        raise ValueError(f"unknown paths {paths!r}; choose from {', '.join(PATHS)}")
    key = (mutation, split_rate, split_scans, paths)
    if key in _HYBRID:
        return _HYBRID[key]
    from bayesfa.samplers.pfa._ipfa_kernel import build_sweeps as build_direct
    from bayesfa.samplers.pfa._ipfa_kernel import refresh_weights

    propose = sk.propose
    choice, launch, pairs = sk.CHOICE_BETA, sk.LAUNCH_LETTER, sk.PAIRS_LETTERS
    moving = split_rate > 0.0
    n_out = sk.OUT

    blocked = build_sweeps(mutation, paths)
    direct = build_direct(None)
    slip = mutation == "blocked-step0-gamma-for-alpha"

    def plain(n_sweeps, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta, mcol,
              mrow, hyper, priors, rng, theta, filt):
        n_sym = c.shape[1]
        log_lik = 0.0
        for _ in range(n_sweeps):
            refresh_weights(ci, recip, bk, beta, meta, hyper[1] if slip else hyper[0], n_sym, True)
            direct(1, 0, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta, mcol,
                   mrow, hyper, priors, rng, True)
            log_lik = blocked(1, tokens, z, c, ct, ci, beta, meta, mcol, mrow, hyper, priors,
                              rng, theta, filt)
        return log_lik

    def with_moves(n_sweeps, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta,
                   mcol, mrow, hyper, priors, rng, theta, filt):
        n_sym = c.shape[1]
        members = np.empty(positions.shape[0], dtype=np.int64)
        saved = np.empty(positions.shape[0], dtype=np.int32)
        out = np.zeros(n_out)
        log_lik = 0.0
        for _ in range(n_sweeps):
            log_lik = inner(1, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta,
                            mcol, mrow, hyper, priors, rng, theta, filt)
            refresh_weights(ci, recip, bk, beta, meta, hyper[0], n_sym, True)
            for _m in range(n_moves_now(split_rate, rng)):
                propose(positions, tokens, z, c, ct, ci, recip, bk, beta, hyper[0], hyper[1],
                        rng, split_scans, choice, False, members, saved, out, -1, -1, launch,
                        pairs)
        return log_lik

    if not moving:  # production's default: the moves' code is not compiled in
        _HYBRID[key] = njit(cache=False)(plain)
        return _HYBRID[key]
    inner = build_hybrid(mutation, paths=paths)
    _HYBRID[key] = njit(cache=False)(with_moves)
    return _HYBRID[key]
