"""Exact checks of the iPFA's weak-limit blocked sampler (:mod:`bayesfa.samplers.pfa._ipfa_blocked_kernel`).

The model is the weak limit with ``L`` states: ``beta ~ Dir(gamma/L, ..)``, ``theta_i ~
Dir(alpha H)`` with ``H(a, j) = beta_j / A``, ``H(0, 0) = 1 / A``, ``alpha`` and ``gamma`` fixed
or under Gamma hyperpriors. On :data:`TOY` (``L = 3`` states, 4 strings ``ab ba a ε`` over 2
letters: 5 free positions, 243 labelled paths) :func:`exact_posterior` computes from the model
alone (nothing of the sampler) the joint posterior of the path ``z`` and ``(alpha, gamma)``:

- ``theta`` integrated out: ``Pr(z | beta, alpha)`` is Eq. 4 of Shibata & Yoshinaka (2013)
  with the Dirichlet parameters ``alpha H(a, j)``;
- ``beta`` integrated out exactly: each ``Gamma(x beta_j + C) / Gamma(x beta_j)`` (``x =
  alpha / A``) is the rising factorial ``sum_m s(C, m) (x beta_j)^m`` (unsigned Stirling
  numbers of the first kind), so that column ``j``'s cells make a polynomial in ``beta_j``
  and ``E prod_j beta_j^{t_j}`` under ``Dir(gamma/L, ..)`` is ``Gamma(gamma) / Gamma(gamma +
  t.) prod_j Gamma(gamma/L + t_j) / Gamma(gamma/L)``;
- ``alpha`` and ``gamma`` integrated by Gauss-Legendre quadrature in the quantile of each
  Gamma prior, :data:`BINS` bins of equal prior mass with :data:`NODES` nodes each, which
  also gives the posterior mass of each bin.

:func:`posterior_check` runs ``n_chains`` independent chains of :data:`SWEEPS` blocked sweeps
each, from uniformly random paths, ``beta`` uniform and ``(alpha, gamma)`` drawn from their
priors, and compares the end states with the exact posterior: Pearson chi-square on the
labelled paths and, when sampled, on the prior-decile bins of ``alpha`` and of ``gamma``.
With both sampled this checks the hyperparameter updates (the auxiliary-variable draws of
``alpha``, of ``gamma`` with its top-level tables) as well as the paths and ``beta``. The
check's false-alarm rate is ``alpha`` (Bonferroni over its tests), at a fixed seed, up to
the chains' distance from stationarity after :data:`SWEEPS` sweeps. That distance is not
negligible at fewer sweeps: ``beta`` mixes slowly from its uniform start (a state of small
``beta_k`` is rarely visited, so its ``m_.k`` stays 0 and ``beta_k ~ Gamma(gamma/L)`` stays
small): with 25 sweeps the fixed-hyperparameter check failed the correct sampler at seeds 0
and 1 (p = 1.6e-4 and < 1e-6, 50,000 chains); with 100 it passed at both (p = 0.28, 0.22).

The mutants (:data:`bayesfa.samplers.pfa._ipfa_blocked_kernel.MUTATIONS`) must fail; what they
did on seeds 0-4 is recorded in ``tests/test_ipfa_blocked.py``.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit
from scipy import stats as sps
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus
from bayesfa.exact import free_positions
from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions, padded_width
from bayesfa.samplers.pfa._ipfa_kernel import refresh_weights
from bayesfa.samplers.pfa import _ipfa_blocked_kernel as kern
from bayesfa.samplers.pfa._ffbs_kernel import SLICE_MUTATIONS
from bayesfa.validation.checks import Check, chi2_row
from bayesfa.validation.pfa.reference import all_paths, batch_counts, path_codes

ALPHA = 1e-3
#: The toy: ``ab ba a ε`` over 2 letters, ``L = 3``.
TOY = Corpus.from_strings([[0, 1], [1, 0], [0], []], 2)
TOY_STATES = 3
#: Hyperpriors (shape, rate) of the sampled check, and the fixed values of the other.
PRIORS = ((2.0, 1.0), (1.0, 1.0))
FIXED = (1.5, 0.6)
BINS, NODES = 10, 16
SWEEPS = 100
N_CHAINS = 30_000
_COLUMNS = ["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"]


# -- the reference (from the model alone) -------------------------------------------------------

def _nodes(spec):
    """``(values, log weights, bin)`` of the quadrature of a Gamma ``(shape, rate)`` prior in
    its quantile (:data:`BINS` x :data:`NODES`), or the one fixed value ``spec``."""
    if np.isscalar(spec):
        return np.array([float(spec)]), np.zeros(1), np.zeros(1, dtype=np.int64)
    shape, rate = spec
    x, w = np.polynomial.legendre.leggauss(NODES)
    u = ((np.arange(BINS)[:, None] + (x[None] + 1.0) / 2.0) / BINS).ravel()
    return (sps.gamma.ppf(u, shape, scale=1.0 / rate), np.log(np.tile(w / (2.0 * BINS), BINS)),
            np.repeat(np.arange(BINS), NODES))


def _conv_rows(e, d):
    """Row-wise convolution of ``e [G, m]`` and ``d [G, n]``."""
    out = np.zeros((e.shape[0], e.shape[1] + d.shape[1] - 1))
    for u in range(e.shape[1]):
        out[:, u:u + d.shape[1]] += e[:, u:u + 1] * d
    return out


def exact_posterior(train: Corpus, n_states: int, alpha, gamma):
    """``(paths [P], alpha bins [BINS] or None, gamma bins [BINS] or None)``: the posterior of
    the labelled path (in :func:`~bayesfa.validation.pfa.reference.all_paths` order) and of
    the prior-quantile bins of ``alpha`` and ``gamma`` when they are ``(shape, rate)``
    hyperpriors (a float: fixed), under the weak-limit model of the module docstring."""
    tokens = np.asarray(train.tokens)
    n_sym = train.alphabet_size + 1
    paths = all_paths(tokens, n_states)
    counts = batch_counts(tokens, paths, n_states, n_sym)
    a_val, a_lw, a_bin = _nodes(alpha)
    g_val, g_lw, g_bin = _nodes(gamma)
    x = a_val / n_sym
    g_l = g_val / n_states
    logw = np.empty((paths.shape[0], a_val.size, g_val.size))
    for p in range(paths.shape[0]):
        cnt = counts[p]
        n_i = cnt.sum(axis=(1, 2))
        base = (gammaln(a_val)[:, None] - gammaln(a_val[:, None] + n_i[None])).sum(axis=1)
        base += (gammaln(x[:, None] + cnt[None, :, 0, 0]) - gammaln(x)[:, None]).sum(axis=1)
        e = np.ones((g_val.size, 1))
        for j in range(1, n_states + 1):
            poly = np.ones(1)
            for c in cnt[:, 1:, j].ravel():
                if c:
                    # y (y + 1) .. (y + c - 1): coefficients s(c, 0..c), lowest first
                    poly = np.convolve(poly, np.poly(-np.arange(c))[::-1])
            t = np.arange(poly.size)
            d = poly[None] * np.exp(gammaln(g_l[:, None] + t[None]) - gammaln(g_l)[:, None])
            e = _conv_rows(e, d)
        t = np.arange(e.shape[1])
        top = e * np.exp(gammaln(g_val)[:, None] - gammaln(g_val[:, None] + t[None]))
        val = (x[:, None] ** t[None]) @ top.T
        logw[p] = base[:, None] + np.log(val)
    logw += a_lw[:, None] + g_lw[None, :]
    post = np.exp(logw - logsumexp(logw))
    by_path = post.sum(axis=(1, 2))
    a_bins = None if np.isscalar(alpha) else np.bincount(a_bin, weights=post.sum(axis=(0, 2)),
                                                         minlength=BINS)
    g_bins = None if np.isscalar(gamma) else np.bincount(g_bin, weights=post.sum(axis=(0, 1)),
                                                         minlength=BINS)
    return by_path / by_path.sum(), a_bins, g_bins


# -- the sampler side ---------------------------------------------------------------------------

def _steps_1_to_6(blocked):
    """The blocked sweep without step 0, called as :func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_hybrid`'s."""
    key = id(blocked)
    if key not in _ALONE:
        @njit
        def alone(n_sweeps, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta, mcol,
                  mrow, hyper, priors, rng, theta, filt):
            return blocked(n_sweeps, tokens, z, c, ct, ci, beta, meta, mcol, mrow, hyper, priors,
                           rng, theta, filt)
        _ALONE[key] = alone
    return _ALONE[key]


_ALONE: dict = {}


@njit
def _run(sweeps, n_sweeps, starts, hyper0, positions, uniforms, tokens, c, ct, ci, recip, bk,
         beta, meta, mcol, mrow, hyper, priors, rng, theta, filt, ends, hyper_end):
    n_st = beta.shape[0] - 1
    for r in range(starts.shape[0]):
        z = starts[r].copy()
        count_transitions(tokens, z, c, ct, ci)
        beta[0] = 0.0
        beta[1:] = 1.0 / n_st
        hyper[0] = hyper0[r, 0]
        hyper[1] = hyper0[r, 1]
        refresh_weights(ci, recip, bk, beta, meta, hyper[0], c.shape[1], True)
        sweeps(n_sweeps, positions, uniforms, tokens, z, c, ct, ci, recip, bk, beta, meta, mcol,
               mrow, hyper, priors, rng, theta, filt)
        ends[r] = z
        hyper_end[r] = hyper


def run_chains(n_chains: int, n_sweeps: int, priors, fixed, rng, variant: str | None = None,
               train: Corpus = TOY, n_states: int = TOY_STATES, step0: bool = True,
               paths: str = "dense"):
    """End states ``(z [R, T + 1], (alpha, gamma) [R, 2])`` of ``n_chains`` chains of
    ``n_sweeps`` sweeps of the blocked sampler (:func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_hybrid`:
    step 0 then steps 1-6; ``step0`` False: steps 1-6 alone, :func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_sweeps`;
    ``variant``: a mutation or None; ``paths``: step 2's draw, ``dense`` or ``slice``) from uniformly random
    paths, ``beta`` uniform, each hyperparameter from its prior (``priors`` a pair of
    ``(shape, rate)`` or None: that one fixed at ``fixed``)."""
    tokens = np.ascontiguousarray(train.tokens, dtype=np.int32)
    n_sym = train.alphabet_size + 1
    free = free_positions(tokens)
    starts = np.zeros((n_chains, tokens.size + 1), dtype=np.int32)
    starts[:, free] = rng.integers(1, n_states + 1, size=(n_chains, free.size))
    hyper0 = np.empty((n_chains, 2))
    flat = np.zeros(4)
    for h in range(2):
        if priors[h] is None:
            hyper0[:, h] = fixed[h]
        else:
            hyper0[:, h] = rng.gamma(priors[h][0], 1.0 / priors[h][1], size=n_chains)
            flat[2 * h:2 * h + 2] = priors[h]
    w = padded_width(n_states)
    c = np.zeros((n_states + 1, n_sym, w), dtype=np.float32)
    ct = np.zeros((n_sym, n_states + 1, w), dtype=np.float32)
    ci = np.zeros(n_states + 1, dtype=np.int32)
    beta = np.zeros(n_states + 1)
    meta = np.array([n_states, n_states], dtype=np.int64)
    mcol = np.zeros(n_states + 1, dtype=np.int64)
    mrow = np.zeros(n_states + 1, dtype=np.int64)
    recip = np.zeros(w, dtype=np.float32)
    bk = np.zeros(w, dtype=np.float32)
    theta, filt = kern.scratch(tokens, n_states, n_sym)
    ends = np.empty_like(starts)
    hyper_end = np.empty((n_chains, 2))
    sweeps = (kern.build_hybrid(variant, paths=paths) if step0
              else _steps_1_to_6(kern.build_sweeps(variant, paths)))
    _run(sweeps, n_sweeps, starts, hyper0,
         np.ascontiguousarray(free, dtype=np.int64), np.zeros(free.size), tokens,
         c, ct, ci, recip, bk, beta, meta, mcol, mrow, np.zeros(2), flat, rng, theta, filt, ends,
         hyper_end)
    return ends, hyper_end


def _bin_of(values, prior):
    """The prior-quantile bin (of :data:`BINS`) of each value."""
    u = sps.gamma.cdf(values, prior[0], scale=1.0 / prior[1])
    return np.minimum((u * BINS).astype(np.int64), BINS - 1)


def posterior_check(variant: str | None = None, *, sampled: bool = True, seed: int = 0,
                    alpha: float = ALPHA, n_chains: int = N_CHAINS, n_sweeps: int = SWEEPS,
                    step0: bool = True, paths: str = "dense") -> Check:
    """Chains of the blocked sampler against :func:`exact_posterior` on :data:`TOY` (module
    docstring): ``alpha`` and ``gamma`` under :data:`PRIORS` (``sampled``) or fixed at
    :data:`FIXED`; the whole sweep (``step0``, checks ``blocked-step0-...``) or steps 1-6
    alone (``blocked-posterior...``: step 0 redraws beta and alpha too, so it would hide a
    slip of steps 4-6); step 2 by ``paths`` (``slice``: the checks are named ``blocked-slice-...``)."""
    t0 = time.perf_counter()
    priors = PRIORS if sampled else (None, None)
    ref = exact_posterior(TOY, TOY_STATES, *(PRIORS if sampled else FIXED))
    rng = np.random.default_rng(seed)
    ends, hyper = run_chains(n_chains, n_sweeps, priors, FIXED, rng, variant, step0=step0,
                             paths=paths)
    tests = [("labelled paths", np.bincount(path_codes(ends, TOY.tokens, TOY_STATES),
                                            minlength=ref[0].size), ref[0])]
    if sampled:
        tests += [(f"{name} in its prior's deciles",
                   np.bincount(_bin_of(hyper[:, h], PRIORS[h]), minlength=BINS), ref[1 + h])
                  for h, name in enumerate(("alpha", "gamma"))]
    rows = [chi2_row(name, obs, probs, alpha / len(tests)) for name, obs, probs in tests]
    label = (("ipfa --sampler blocked" + (" --paths slice" if paths == "slice" else ""))
             if variant is None else f"ipfa:mutant-{variant}")
    hyper_text = (f"alpha ~ Gamma{PRIORS[0]}, gamma ~ Gamma{PRIORS[1]} sampled" if sampled else
                  f"alpha = {FIXED[0]:g}, gamma = {FIXED[1]:g} fixed")
    return Check(
        name=("blocked-" + ("slice-" if paths == "slice" else "") + ("step0-" if step0 else "")
              + ("posterior-hyper" if sampled else "posterior")),
        passed=all(r["pass"] for r in rows),
        description=(f"{label}: {n_chains} chains of {n_sweeps} blocked sweeps "
                     f"({'step 0 then steps 1-6' if step0 else 'steps 1-6 alone'}; weak limit, "
                     f"L = {TOY_STATES}) on the toy ab ba a ε from uniform paths, {hyper_text}; "
                     f"end states vs the truncated model's exact posterior (beta and theta "
                     f"integrated exactly, hyperparameters by quadrature; Pearson chi-square)"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"n_chains": n_chains, "n_sweeps": n_sweeps, "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


def blocked_checks(variant: str | None = None, *, seed: int = 0, alpha: float = ALPHA,
                   paths: str | None = None) -> list[Check]:
    """The blocked sampler's checks ``bayesfa validate ipfa`` runs: steps 1-6 alone, then the
    whole sweep (step 0, the direct-assignment sweep, first), each with the hyperparameters
    fixed (seed ``seed``) and both sampled (seed ``seed + 1``), step 2 by ``paths`` (None:
    ``slice`` for a mutant of the slice FFBS, else ``dense``). With ``slice`` the slice FFBS is
    first checked alone given ``theta``
    (:func:`bayesfa.validation.pfa.blocked.slice_given_theta`, seed ``seed``)."""
    if paths is None:
        paths = "slice" if variant in SLICE_MUTATIONS else "dense"
    first = []
    if paths == "slice":
        from bayesfa.validation.pfa.blocked import slice_given_theta

        first = [slice_given_theta(variant if variant in SLICE_MUTATIONS else None,
                                   seed=seed, alpha=alpha)]
    return first + [
        posterior_check(variant, sampled=False, seed=seed, alpha=alpha, step0=False, paths=paths),
        posterior_check(variant, sampled=True, seed=seed + 1, alpha=alpha, step0=False, paths=paths),
        posterior_check(variant, sampled=False, seed=seed, alpha=alpha, paths=paths),
        posterior_check(variant, sampled=True, seed=seed + 1, alpha=alpha, paths=paths)]
