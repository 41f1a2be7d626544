"""Statistical tests of the CGS-PFA Gibbs kernel itself (toy sizes, exact references).

All three take ``variant``: ``None`` tests the real kernel
:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweeps`, a name of
:data:`bayesfa.validation.pfa.mutants.MUTANTS` tests the production sweep compiled with one
deliberate error (they must fail). ``kernel="alias-mh"`` tests the alias-MH kernel
(:func:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel.sweeps`) instead, whose mutants are
:data:`bayesfa.validation.pfa.mutants.ALIAS_MUTANTS`; its uniform-start reference is
:func:`alias_sweep_distribution`, the exact distribution after its own sweeps; likewise
``kernel="bucket-mh"`` (:mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`,
:data:`~bayesfa.validation.pfa.mutants.BUCKET_MUTANTS`, :func:`bucket_sweep_distribution`).
Each returns a :class:`bayesfa.validation.harness.Check` whose false-alarm rate (probability of
failing a correct kernel) is ``alpha`` (default 1e-3), Bonferroni-split over its sub-tests.

:func:`path_gof` -- exact stationarity test at fixed data.
    Draw ``R`` independent paths ``z`` from the exact posterior ``Pr(z | alpha)``
    (enumeration), apply ``k`` sweeps of the kernel to each (fresh random numbers), and test
    the ``R`` end states against ``Pr(z | alpha)`` with Pearson chi-square tests, on the count
    classes ``C(alpha, z)`` and on the paths themselves. A correct Gibbs kernel leaves its
    target invariant, so under H0 the end states are exactly i.i.d. ``Pr(z | alpha)`` and the
    test is exact up to the chi-square approximation (cells with expectation < 5 pooled).
    This is the exact-posterior counterpart, at toy sizes, of Geweke's joint test. With
    ``start="uniform"`` the chains start from uniformly random paths instead (Algorithm 1,
    line 1) and the end states are tested against the exact distribution after ``k`` sweeps
    of the exact Gibbs kernel (:func:`sweep_distribution`): this also fails kernels that
    leave the posterior invariant without moving as Algorithm 1 does (a frozen kernel, a
    position never resampled), which no test started from the posterior can see.

:func:`geweke` -- Geweke's (2004) joint distribution test.
    Target: the joint ``Pr(alpha, z | L)`` of Eq. 4 over letter strings ``alpha`` of fixed
    lengths ``L`` and their paths (CGS conditions on ``alpha``, so the data must be
    resampled too). The *successive-conditional* simulator alternates ``k`` kernel sweeps of
    ``z | alpha`` with one Gibbs sweep of the letters, ``a_t | alpha^{-t}, z`` with
    probability proportional to ``C^{-t}_{z_t a z_{t+1}} + beta`` (the end markers, hence
    ``L``, never move: both updates preserve ``Pr(alpha, z | L)``). The *marginal-conditional*
    side is exact: ``E[g(alpha, z) | L]`` by enumerating every ``(alpha, z)``. Test functions
    ``g`` are label-invariant (log joint, self-loops, repeated self-loops, end-transition
    concentration, states used, letter frequency); the chains start from exact draws, the
    Monte Carlo standard error comes from ArviZ's ESS, and each ``g`` gets a two-sided
    z-test at ``alpha / n_g``.

:func:`sbc` -- simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018).
    Per replicate: ``xi ~`` the prior of Eq. 2, ``m`` strings (and their true path ``z*``)
    from ``xi`` (replicates with more than ``max_letters`` letters are redrawn: conditioning
    on the data keeps SBC valid); run the kernel from a random start (burn-in, then ``L``
    draws ``period`` sweeps apart); the rank of ``f(z*)`` among the ``f(z_s)`` (ties broken
    at random) is uniform on ``0..L`` for a correct sampler. ``f``: the log joint of Eq. 4,
    the number of self-loop transitions, of repeated self-loops and the end-transition
    concentration (label-invariant, like Geweke's). Uniformity: chi-square over ``bins``
    equal rank bins, each ``f`` at ``alpha / 4``. Power comes from replicates, not from
    posterior draws, so the default spends the budget on many replicates (3,000) with few
    draws (``L = 19``, 4 bins): it catches ``no-correction`` and ``end-beta`` at every seed
    tried (``benchmarks/RESULTS.md``), where 400 replicates of 99 draws missed
    ``no-correction``. It is still the weakest check here for the other mutants.
    Autocorrelated draws would also skew the ranks; ``period`` is set so that this is
    negligible at these sizes (a failure could in principle mean "thin more" rather than
    "wrong kernel").
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np
from numba import njit
from scipy import stats as sps

from bayesfa.corpus import Corpus
from bayesfa.validation.checks import Check, chi2_row, pooled_chi2  # noqa: F401 (pooled_chi2 re-exported)
from bayesfa.validation.pfa.mutants import Kernel
from bayesfa.exact import free_positions, prior_matrix
from bayesfa.validation.pfa.reference import (all_paths, batch_counts, batch_log_joint, path_codes,
                                          path_posterior)

ALPHA = 1e-3


def _check(**kwargs) -> Check:
    return Check(**kwargs)


def _free(tokens) -> np.ndarray:
    return (np.flatnonzero(tokens[:-1] != 0) + 1).astype(np.int64)


# -- exact stationarity at fixed data ------------------------------------------------------

def sweep_distribution(pp, start: np.ndarray, n_sweeps: int) -> np.ndarray:
    """Exact distribution ``[P]`` of the path after ``n_sweeps`` sweeps of an exact Gibbs
    kernel (systematic scan over the free positions in increasing ``t``, as Algorithm 1),
    from the distribution ``start`` ``[P]`` over the paths of ``pp``
    (:class:`bayesfa.validation.pfa.reference.PathPosterior`, paths in
    :func:`bayesfa.validation.pfa.reference.all_paths` order).

    One update of position ``f`` maps ``p(z)`` to ``sum_{z'_f} p(z^{-f}, z'_f) Pr(z_f | z^{-f},
    alpha)``; over the grid ``[N] * F`` of paths that is a sum along axis ``f`` times the
    conditional, the posterior normalised along that axis (Eq. 9 is that conditional)."""
    from scipy.special import logsumexp

    n_free = int(free_positions(pp.train.tokens).size)
    shape = (pp.n_states,) * n_free
    lj = pp.log_joint.reshape(shape)
    p = np.asarray(start, dtype=np.float64).reshape(shape)
    conds = [np.exp(lj - logsumexp(lj, axis=f, keepdims=True)) for f in range(n_free)]
    for _ in range(n_sweeps):
        for f in range(n_free):
            p = p.sum(axis=f, keepdims=True) * conds[f]
    return p.reshape(-1)


def _mh_matrix(q, pi):
    """``[..., o, k]``: one Metropolis-Hastings step from proposal ``q`` ``[..., k]`` (normalised,
    independent of the current state ``o``) for the target ``pi`` ``[..., k]``:
    ``q_k min(1, pi_k q_o / (pi_o q_k))`` off the diagonal."""
    ratio = (pi[..., None, :] * q[..., :, None]) / (pi[..., :, None] * q[..., None, :])
    k = q[..., None, :] * np.minimum(1.0, ratio)
    idx = np.arange(q.shape[-1])
    k[..., idx, idx] = 0.0
    k[..., idx, idx] = 1.0 - k.sum(axis=-1)
    return k


def _mh_sweep_distribution(pp, start, n_sweeps: int, position_kernel) -> np.ndarray:
    """Exact distribution ``[P]`` after ``n_sweeps`` sweeps of a two-block Metropolis-Hastings
    kernel (:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel` and its bucket variant) from
    ``start``: position ``t``'s update is ``position_kernel(q_out, q_in, pi)`` ``[..., o, k]``,
    ``q_out ~ C'_{k a_t z_{t+1}} + b`` and ``q_in ~ C'_{z_{t-1} a_{t-1} k} + beta`` the
    normalised factors of the other block's counts ``C'`` and ``pi`` the conditional of Eq. 9
    (the posterior normalised along the position's axis), for each ``z^{-t}``."""
    from scipy.special import logsumexp

    from bayesfa.samplers.pfa._cgs_pfa_alias_kernel import _block_split

    tokens = np.asarray(pp.train.tokens)
    free = free_positions(tokens)
    n_states, n_symbols = pp.n_states, pp.n_symbols
    beta = pp.beta
    shape = (n_states,) * free.size
    lj = pp.log_joint.reshape(shape)
    h = int(_block_split(tokens.astype(np.int32)))
    other = {0: batch_counts(tokens[h:], pp.paths[:, h:], n_states, n_symbols),
             1: batch_counts(tokens[:h], pp.paths[:, :h + 1], n_states, n_symbols)}
    kernels = []
    for f, t in enumerate(free):
        co = other[0 if t < h else 1]
        rows = np.arange(pp.paths.shape[0])
        ap, a = tokens[t - 1], tokens[t]
        n, prev = pp.paths[:, t + 1], pp.paths[:, t - 1]
        b_out = n_states * beta if a == 0 else beta
        pi = np.exp(lj - logsumexp(lj, axis=f, keepdims=True))
        pi = np.moveaxis(pi, f, -1)  # [..., k] for each z^{-t}
        qs = []
        for w in (co[rows, 1:, a, n] + b_out, co[rows, prev, ap, 1:] + beta):
            q = np.take(w.reshape(shape + (n_states,)), 0, axis=f)  # independent of z_t
            qs.append(q / q.sum(axis=-1, keepdims=True))
        denominator = co[:, 1:].sum(axis=(2, 3)) + n_states * n_symbols * beta
        kernels.append(position_kernel(qs[0], qs[1], pi,
                                       np.take(denominator.reshape(shape + (n_states,)), 0, axis=f)))
    p = np.asarray(start, dtype=np.float64).reshape(shape)
    for _ in range(n_sweeps):
        for f in range(free.size):
            moved = np.einsum("...o,...ok->...k", np.moveaxis(p, f, -1), kernels[f])
            p = np.moveaxis(moved, -1, f)
    return p.reshape(-1)


def alias_sweep_distribution(pp, start: np.ndarray, n_sweeps: int) -> np.ndarray:
    """Exact distribution ``[P]`` of the path after ``n_sweeps`` sweeps of the alias-MH
    kernel (:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel`) from the distribution ``start``
    over the paths of ``pp``, as :func:`sweep_distribution` does for the Gibbs kernel.

    The kernel is a Markov chain on ``z`` alone (its tables live within a block's phase and
    hold the other block's counts), so position ``t``'s update is the ``N x N`` matrix
    ``K = K_out K_in`` of ``z^{-t}`` (:func:`_mh_sweep_distribution`): an MH step from the out
    table, ``~ (C'_{k a_t z_{t+1}} + b) / (C'_k + N A beta)``, then one from the in table,
    ``~ C'_{z_{t-1} a_{t-1} k} + beta``. Proposal probabilities are the exact weights (the
    kernel's float32 tables realise them up to ~1e-7)."""
    def position_kernel(q_out, q_in, pi, denominator):
        q = q_out / denominator
        return _mh_matrix(q / q.sum(axis=-1, keepdims=True), pi) @ _mh_matrix(q_in, pi)

    return _mh_sweep_distribution(pp, start, n_sweeps, position_kernel)


def bucket_sweep_distribution(pp, start: np.ndarray, n_sweeps: int, steps: int | None = None) -> np.ndarray:
    """Exact distribution ``[P]`` of the path after ``n_sweeps`` sweeps of the bucket-MH
    kernel (:mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`, ``steps`` Metropolis-Hastings steps
    per position, default its ``STEPS``) from the distribution ``start`` over the paths of
    ``pp`` (:func:`_mh_sweep_distribution`). Its proposals are the normalised factors
    ``q_out ~ C'_{k a_t z_{t+1}} + b`` (no denominator) and ``q_in``; ``steps=2``: an MH step
    from each, ``K_out K_in``; ``steps=1``: one from the mixture ``(q_out + q_in) / 2``. Exact
    proposal probabilities (the kernel realises them up to the float resolution of its
    uniforms)."""
    from bayesfa.samplers.pfa._cgs_pfa_bucket_kernel import STEPS

    steps = STEPS if steps is None else steps

    def position_kernel(q_out, q_in, pi, denominator):
        if steps == 1:
            return _mh_matrix(0.5 * (q_out + q_in), pi)
        return _mh_matrix(q_out, pi) @ _mh_matrix(q_in, pi)

    return _mh_sweep_distribution(pp, start, n_sweeps, position_kernel)


def path_gof(toy="tiny", variant: str | None = None, *, n_draws: int = 20_000, n_sweeps: int | None = None,
             start: str = "posterior", seed: int = 0, alpha: float = ALPHA, kernel: str = "gibbs"):
    """Exact-start stationarity test of the kernel on ``toy``'s data (module docstring).

    ``start="posterior"``: the ``n_draws`` chains start from exact posterior draws and their
    end states are tested against ``Pr(z | alpha)`` (invariance; ``n_sweeps`` default 5).
    ``start="uniform"``: they start from uniformly random paths (Algorithm 1, line 1) and are
    tested against the exact distribution after ``n_sweeps`` sweeps (default 2) of the exact
    kernel, :func:`sweep_distribution`. This one also fails a kernel that leaves the posterior
    invariant but does not move as Algorithm 1 does (a frozen kernel, positions never
    resampled), which the invariance test cannot see. For the alias-MH kernel
    (``kernel="alias-mh"`` or an alias mutant) the uniform-start reference is
    :func:`alias_sweep_distribution`, for the bucket-MH kernel :func:`bucket_sweep_distribution`.
    """
    from bayesfa.validation.pfa.mutants import kernel_of
    from bayesfa.validation.toys import get_toy

    if start not in ("posterior", "uniform"):
        raise ValueError(f"start must be 'posterior' or 'uniform', got {start!r}")
    if n_sweeps is None:
        n_sweeps = 5 if start == "posterior" else 2
    toy = get_toy(toy) if isinstance(toy, str) else toy
    t0 = time.perf_counter()
    n_states, beta = toy.n_states, toy.beta
    tokens = toy.train.tokens
    n_symbols = toy.train.alphabet_size + 1
    pp = path_posterior(toy.train, n_states, beta)
    rng = np.random.default_rng(seed)
    positions = _free(tokens)
    if start == "posterior":
        starts = pp.sample_paths(n_draws, rng).astype(np.int32)
        target = pp.prob
        what = (f"{n_draws} exact posterior draws of z, {n_sweeps} sweeps each, end states vs "
                f"Pr(z | alpha)")
    else:
        starts = np.zeros((n_draws, tokens.size + 1), dtype=np.int32)
        starts[:, positions] = rng.integers(1, n_states + 1, size=(n_draws, positions.size),
                                            dtype=np.int32)
        uniform = np.full(pp.prob.size, 1.0 / pp.prob.size)
        if kernel_of(variant, kernel) == "alias-mh":
            target = alias_sweep_distribution(pp, uniform, n_sweeps)
            exact_kernel = "alias-MH"
        elif kernel_of(variant, kernel) == "bucket-mh":
            target = bucket_sweep_distribution(pp, uniform, n_sweeps)
            exact_kernel = "bucket-MH"
        else:
            target = sweep_distribution(pp, uniform, n_sweeps)
            exact_kernel = "Gibbs"
        what = (f"{n_draws} uniformly random paths z, {n_sweeps} sweeps each, end states vs the "
                f"exact distribution after {n_sweeps} exact {exact_kernel} sweeps")
    kern = Kernel(variant, kernel)
    ends = kern.run_from(starts, n_sweeps, positions, tokens, n_states, n_symbols, rng, beta)
    codes = path_codes(ends, tokens, n_states)
    by_path = np.bincount(codes, minlength=pp.prob.size)
    by_class = np.bincount(pp.classes[codes], minlength=pp.class_prob.size)
    class_target = np.bincount(pp.classes, weights=target, minlength=pp.class_prob.size)
    each = alpha / 2
    rows = [chi2_row(name, observed, probs, each)
            for name, observed, probs in (("count classes C(alpha, z)", by_class, class_target),
                                          ("paths z", by_path, target))]
    # the class whose frequency is most off, for the reader
    expected = n_draws * class_target
    zc = (by_class - expected) / np.sqrt(np.maximum(expected * (1 - class_target), 1e-12))
    worst = int(np.argmax(np.abs(zc)))
    return _check(
        name="path-gof" if start == "posterior" else "path-gof-uniform-start",
        passed=all(r["pass"] for r in rows),
        description=f"{kern.label}: {what} (Pearson chi-square)",
        alpha=alpha, columns=["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"],
        rows=rows,
        summary={"toy": toy.name, "start": start, "n_draws": n_draws, "n_sweeps": n_sweeps,
                 "n_paths": int(pp.prob.size), "n_classes": int(pp.class_prob.size),
                 "worst_class_z": float(zc[worst]), "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the 2 chi-square tests)"])


# -- Geweke's joint distribution test -------------------------------------------------------

@njit(cache=True)
def gated_letter_sweep(tokens, z, c, gate, rng, prior, use_next):
    """One Gibbs sweep of the letters at fixed ``z``, the move of every Geweke test here: for
    each ``t`` with ``a_t != 0``, ``a_t = b`` (``b = 1..A-1``) with probability proportional to
    ``gate[i, b, j] (C^{-t}_{i b j} + prior)``, ``i = z_t``, ``j = z_{t+1}`` if ``use_next``
    else 0. ``c`` ``[N+1, A, N+1 or 1]`` (any numeric dtype) holds the counts of the current
    letters and is kept up to date; ``gate`` bool of the same shape. One ``rng.random()`` per
    letter, inverted over ``b`` in increasing order."""
    n_symbols = c.shape[1]
    w = np.zeros(n_symbols)
    for t in range(tokens.shape[0]):
        a = tokens[t]
        if a == 0:
            continue
        i = z[t]
        j = z[t + 1] if use_next else 0
        c[i, a, j] -= 1
        total = 0.0
        last = a
        for b in range(1, n_symbols):
            w[b] = (c[i, b, j] + prior) if gate[i, b, j] else 0.0
            total += w[b]
            if w[b] > 0:
                last = b
        u = rng.random() * total
        new = last  # reached only through rounding
        acc = 0.0
        for b in range(1, n_symbols):
            acc += w[b]
            if u < acc and w[b] > 0:
                new = b
                break
        c[i, new, j] += 1
        tokens[t] = new


@njit(cache=True)
def letter_sweep(tokens, z, c, rng, beta):
    """One Gibbs sweep of the letters under the PFA: ``a_t | alpha^{-t}, z`` for every ``t``
    with ``a_t != 0``, with probability proportional to ``C^{-t}_{z_t a z_{t+1}} + beta``
    (``C_i`` is unchanged by the move, so Eq. 4 reduces to that). ``c`` int64
    ``[N+1, A, N+1]`` scratch: recomputed from ``tokens`` and ``z`` here, kept up to date."""
    c[:] = 0
    for t in range(tokens.shape[0]):
        c[z[t], tokens[t], z[t + 1]] += 1
    gated_letter_sweep(tokens, z, c, np.ones(c.shape, dtype=np.bool_), rng, beta, True)


def _statistics(tokens: np.ndarray, z: np.ndarray, beta: float, n_states: int,
                n_symbols: int) -> dict[str, np.ndarray]:
    """Label-invariant test functions of ``(alpha, z)``; tokens ``[P, T]``, z ``[P, T+1]``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    z = np.asarray(z, dtype=np.int64)
    n = tokens.shape[0]
    k = (n_states + 1) * n_symbols * (n_states + 1)
    cells = (z[:, :-1] * n_symbols + tokens) * (n_states + 1) + z[:, 1:]
    flat = np.bincount((cells + k * np.arange(n)[:, None]).ravel(), minlength=n * k)
    c = flat.reshape(n, n_states + 1, n_symbols, n_states + 1)
    diag = np.einsum("piai->pi", c[:, 1:, 1:, 1:]).sum(axis=1)
    rep = ((tokens[:, 1:] != 0) & (tokens[:, 1:] == tokens[:, :-1])
           & (z[:, :-2] == z[:, 1:-1]) & (z[:, 1:-1] == z[:, 2:])).sum(axis=1)
    end = c[:, 1:, 0, 0].astype(np.float64)
    return {
        "log_joint": batch_log_joint(c, beta),
        "self_loops": diag.astype(np.float64),
        "repeated_self_loops": rep.astype(np.float64),
        "end_concentration": (end ** 2).sum(axis=1),
        "states_used": (c[:, 1:].sum(axis=(2, 3)) > 0).sum(axis=1).astype(np.float64),
        "letter_a": (tokens == 1).sum(axis=1).astype(np.float64),
    }


GEWEKE_LENGTHS = (0, 1, 2, 2, 3)
SBC_STATISTICS = ("log_joint", "self_loops", "repeated_self_loops", "end_concentration")


def _shape_tokens(lengths) -> np.ndarray:
    return Corpus.from_strings([[0] * n for n in lengths], 2).tokens


def geweke_exact(lengths, n_states: int, beta: float, n_letters: int = 2):
    """``(tokens [P, T], z [P, T+1], prob [P])``: every ``(alpha, z)`` with string lengths
    ``lengths`` and its probability ``Pr(alpha, z | L)`` (Eq. 4, normalised)."""
    base = _shape_tokens(lengths).astype(np.int64)
    letter_pos = np.flatnonzero(base != 0)
    paths = all_paths(base, n_states)
    n_symbols = n_letters + 1
    assignments = np.array(list(itertools.product(range(1, n_symbols), repeat=letter_pos.size)),
                           dtype=np.int64).reshape(-1, letter_pos.size)
    toks = np.repeat(base[None, :], assignments.shape[0], axis=0)
    toks[:, letter_pos] = assignments
    ta = np.repeat(toks, paths.shape[0], axis=0)
    zz = np.tile(paths, (toks.shape[0], 1))
    k = (n_states + 1) * n_symbols * (n_states + 1)
    cells = (zz[:, :-1] * n_symbols + ta) * (n_states + 1) + zz[:, 1:]
    n = ta.shape[0]
    c = np.bincount((cells + k * np.arange(n)[:, None]).ravel(), minlength=n * k)
    lj = batch_log_joint(c.reshape(n, n_states + 1, n_symbols, n_states + 1), beta)
    prob = np.exp(lj - lj.max())
    return ta, zz, prob / prob.sum()


def geweke(variant: str | None = None, *, lengths=GEWEKE_LENGTHS, n_states: int = 2,
           beta: float = 0.5, n_chains: int = 4, n_iterations: int = 5_000, z_sweeps: int = 1,
           seed: int = 0, alpha: float = ALPHA, kernel: str = "gibbs"):
    """Geweke's joint distribution test of the kernel (module docstring)."""
    from bayesfa.validation.diagnostics import ess_mean

    t0 = time.perf_counter()
    n_symbols = 3
    ta, zz, prob = geweke_exact(lengths, n_states, beta)
    exact_stats = _statistics(ta, zz, beta, n_states, n_symbols)
    rng = np.random.default_rng(seed)
    starts = rng.choice(prob.size, size=n_chains, p=prob)
    kern = Kernel(variant, kernel)
    positions = _free(_shape_tokens(lengths))
    scratch = np.zeros((n_states + 1, n_symbols, n_states + 1), dtype=np.int64)
    rec_tokens = np.empty((n_chains, n_iterations, ta.shape[1]), dtype=np.int32)
    rec_z = np.empty((n_chains, n_iterations, zz.shape[1]), dtype=np.int32)
    for ch, s in enumerate(starts):
        tokens = ta[s].astype(np.int32)
        z = zz[s].astype(np.int32)
        state = kern.init(tokens, z, n_states, n_symbols, beta)
        for it in range(n_iterations):
            kern.sweeps(z_sweeps, positions, tokens, z, state, rng, beta)
            letter_sweep(tokens, z, scratch, rng, float(beta))
            kern.refill(tokens, z, state, beta)
            rec_tokens[ch, it] = tokens
            rec_z[ch, it] = z
    chain_stats = _statistics(rec_tokens.reshape(-1, ta.shape[1]), rec_z.reshape(-1, zz.shape[1]),
                              beta, n_states, n_symbols)
    n_g = len(exact_stats)
    crit = float(sps.norm.isf(alpha / (2 * n_g)))
    rows = []
    for name, values in exact_stats.items():
        mean = float(prob @ values)
        sd = float(np.sqrt(max(prob @ (values - mean) ** 2, 0.0)))
        x = chain_stats[name].reshape(n_chains, n_iterations)
        est = float(x.mean())
        if sd == 0:
            se, zscore = 0.0, 0.0 if abs(est - mean) < 1e-9 else math.inf
        else:
            ess = ess_mean(x)
            se = float(np.std(x, ddof=1) / math.sqrt(ess)) if ess > 0 else math.nan
            zscore = (est - mean) / se if se > 0 else (0.0 if abs(est - mean) < 1e-9 else math.inf)
        rows.append({"statistic": name, "exact": mean, "successive": est, "mcse": se, "z": zscore,
                     "pass": bool(abs(zscore) <= crit)})
    return _check(
        name="geweke", passed=all(r["pass"] for r in rows),
        description=(f"{kern.label}: Geweke joint test on Pr(alpha, z | lengths "
                     f"{list(lengths)}), N={n_states}, beta={beta}; successive-conditional "
                     f"chain ({z_sweeps} z-sweep + 1 letter sweep per step) vs exact enumeration"),
        alpha=alpha, columns=["statistic", "exact", "successive", "mcse", "z", "pass"], rows=rows,
        summary={"n_chains": n_chains, "n_iterations": n_iterations, "critical_z": crit,
                 "n_configurations": int(prob.size), "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over {n_g} statistics; "
               f"MC standard errors from ArviZ ESS)"])


# -- simulation-based calibration -----------------------------------------------------------

def sample_prior_xi(rng: np.random.Generator, n_states: int, n_letters: int, beta: float) -> np.ndarray:
    """``xi [N+1, A, N+1]`` from the prior of Eq. 2."""
    prior = prior_matrix(n_states, n_letters + 1, beta)
    xi = np.zeros_like(prior)
    for i in range(n_states + 1):
        mask = prior[i] > 0
        xi[i][mask] = rng.dirichlet(prior[i][mask])
    return xi


def simulate(xi: np.ndarray, n_strings: int, rng: np.random.Generator, max_letters: int):
    """``(tokens, z)`` of ``n_strings`` strings from ``xi`` with their true path, or ``None``
    if more than ``max_letters`` letters come out."""
    n_q, n_symbols, _ = xi.shape
    cdf = np.cumsum(xi.reshape(n_q, -1), axis=1)
    cdf /= cdf[:, -1:]
    tokens, z = [], [0]
    letters = 0
    for _ in range(n_strings):
        q = 0
        while True:
            k = min(int(np.searchsorted(cdf[q], rng.random(), side="right")), cdf.shape[1] - 1)
            a, q = divmod(k, n_q)
            tokens.append(a)
            z.append(q)
            if a == 0:
                break
            letters += 1
            if letters > max_letters:
                return None
    return np.array(tokens, dtype=np.int32), np.array(z, dtype=np.int32)


#: The default SBC setting and what it was seen to catch (benchmarks/RESULTS.md, issue 14).
SBC_DEFAULT = (3000, 19, 4, 2, 0.5, 2)
SBC_POWER = ("measured power of this setting: it failed mutants no-correction and end-beta at "
             "each of seeds 0-5, and passed the correct kernel at each of seeds 0-5")


def sbc(variant: str | None = None, *, n_replicates: int = 3000, n_states: int = 2, beta: float = 0.5,
        n_strings: int = 6, max_letters: int = 14, burn_in: int = 50, n_posterior: int = 19,
        period: int = 5, bins: int = 4, n_letters: int = 2, seed: int = 0, alpha: float = ALPHA,
        kernel: str = "gibbs"):
    """Simulation-based calibration of the kernel (module docstring)."""
    t0 = time.perf_counter()
    if (n_posterior + 1) % bins:
        raise ValueError("n_posterior + 1 must be a multiple of bins")
    rng = np.random.default_rng(seed)
    n_symbols = n_letters + 1
    ranks: dict[str, list[int]] = {name: [] for name in SBC_STATISTICS}
    kern = Kernel(variant, kernel)
    redrawn = 0
    for _ in range(n_replicates):
        while True:
            xi = sample_prior_xi(rng, n_states, n_letters, beta)
            sim = simulate(xi, n_strings, rng, max_letters)
            if sim is not None:
                break
            redrawn += 1
        tokens, z_true = sim
        positions = _free(tokens)
        truth = _statistics(tokens[None], z_true[None], beta, n_states, n_symbols)
        z = np.zeros_like(z_true)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        state = kern.init(tokens, z, n_states, n_symbols, beta)
        path_draws = kern.draw_paths(burn_in, n_posterior, period, positions, tokens, z, state,
                                     rng, beta)
        post = _statistics(np.broadcast_to(tokens, (n_posterior, tokens.size)), path_draws, beta,
                           n_states, n_symbols)
        for name in SBC_STATISTICS:
            draws = post[name]
            t = float(truth[name][0])
            tol = 1e-9 * max(1.0, abs(t))
            below = int(np.sum(draws < t - tol))
            ties = int(np.sum(np.abs(draws - t) <= tol))
            ranks[name].append(below + int(rng.integers(0, ties + 1)))
    rows = []
    each = alpha / len(ranks)
    per_bin = (n_posterior + 1) // bins
    for name, r in ranks.items():
        hist = np.bincount(np.asarray(r) // per_bin, minlength=bins)
        chi2, dof, p, _ = pooled_chi2(hist, np.full(bins, 1.0 / bins))
        rows.append({"statistic": name, "histogram": hist.tolist(), "chi2": chi2, "dof": dof,
                     "p_value": p, "threshold": each, "pass": bool(p >= each)})
    return _check(
        name="sbc", passed=all(r["pass"] for r in rows),
        description=(f"{kern.label}: SBC, {n_replicates} replicates of xi ~ Eq. 2 "
                     f"(N={n_states}, beta={beta}), {n_strings} strings (<= {max_letters} letters), "
                     f"{n_posterior} draws {period} sweeps apart after {burn_in}"),
        alpha=alpha, columns=["statistic", "histogram", "chi2", "dof", "p_value", "threshold", "pass"],
        rows=rows,
        summary={"n_replicates": n_replicates, "redrawn": redrawn, "bins": bins,
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (chi-square uniformity of ranks, Bonferroni over "
               f"{len(ranks)} statistics)"]
        + ([SBC_POWER] if (n_replicates, n_posterior, bins, n_states, beta, n_letters) == SBC_DEFAULT
           else []))


# -- the kernel checks of ``bayesfa validate cgs-pfa`` --------------------------------------

def _cgs_pfa_plan(toy, variant: str | None, kernel: str) -> list[tuple[tuple[str, ...], Any]]:
    """What :func:`cgs_pfa_checks` runs, as ``(check names, run(seed, alpha) -> list of
    checks)`` pairs: one source for the checks and for their names (:func:`cgs_pfa_check_names`,
    ``bayesfa validate --list``; the names do not depend on ``toy``)."""
    from bayesfa.validation.pfa import blocked, replica, split_merge
    from bayesfa.validation.pfa.mutants import (BLOCKED_MUTANTS, REPLICA_MUTANTS, SPLIT_MERGE_MUTANTS,
                                                kernel_of)

    plan = [(("path-gof",), lambda seed, alpha: [
                path_gof(toy, variant, seed=seed, alpha=alpha, kernel=kernel)]),
            (("path-gof-uniform-start",), lambda seed, alpha: [
                path_gof(toy, variant, start="uniform", seed=seed, alpha=alpha, kernel=kernel)]),
            (("geweke",), lambda seed, alpha: [geweke(variant, seed=seed, alpha=alpha, kernel=kernel)]),
            (("sbc",), lambda seed, alpha: [sbc(variant, seed=seed, alpha=alpha, kernel=kernel)])]
    moves = (None, "control", *SPLIT_MERGE_MUTANTS, *BLOCKED_MUTANTS, *REPLICA_MUTANTS)
    if kernel_of(variant, kernel) == "gibbs" and variant in moves:
        for names, checks, own in ((split_merge.CHECK_NAMES, split_merge.split_merge_checks,
                                    SPLIT_MERGE_MUTANTS),
                                   (blocked.CHECK_NAMES, blocked.blocked_checks, BLOCKED_MUTANTS),
                                   (replica.CHECK_NAMES, replica.replica_checks, REPLICA_MUTANTS)):
            plan.append((names, lambda seed, alpha, checks=checks, own=own: checks(
                variant if variant in own else None, seed=seed, alpha=alpha)))
    return plan


def cgs_pfa_check_names(variant: str | None = None, kernel: str = "gibbs") -> list[str]:
    """The names of the checks :func:`cgs_pfa_checks` returns, in order, without running them."""
    return [name for names, _ in _cgs_pfa_plan(None, variant, kernel) for name in names]


def cgs_pfa_checks(toy, variant: str | None = None, *, seed: int = 0, alpha: float = ALPHA,
                   kernel: str = "gibbs"):
    """The kernel checks that :func:`bayesfa.validation.harness.validate` runs for ``cgs-pfa``
    (``variant`` None) and its mutants, in their default (CI) settings: path GOF from exact
    posterior draws (invariance) and from uniformly random paths (the exact distribution after
    two sweeps: a kernel must move as Algorithm 1 does), Geweke's joint test, and SBC; with the
    ``gibbs`` kernel, for the production kernel and the split-merge mutants, also the two exact
    checks of the split-merge move (``--split-merge``,
    :func:`bayesfa.validation.pfa.split_merge.split_merge_checks`) and the three of the blocked
    move (``--blocked-every``, :func:`bayesfa.validation.pfa.blocked.blocked_checks`) and the
    three of replica exchange (``--replicas``, with and without ``--blocked-every``,
    :func:`bayesfa.validation.pfa.replica.replica_checks`), each with the move's mutant when
    ``variant`` is one. Their names, without running them: :func:`cgs_pfa_check_names`."""
    return [check for _, run in _cgs_pfa_plan(toy, variant, kernel) for check in run(seed, alpha)]
