"""Exact checks of CGS-PFA's blocked whole-string move (:mod:`bayesfa.samplers.pfa._ffbs_kernel`).

All run on :data:`TOY` (the split-merge toy: 5 strings, ε a aaa bb ab, 8 letters, ``N = 4``:
65,536 paths, whose posterior :class:`~bayesfa.validation.pfa.reference.PathPosterior`
enumerates); the references here are written from the model (Eq. 1-4 of Shibata &
Yoshinaka 2013), never from the kernel, and never call it.

:func:`ffbs_given_theta` -- (a) the paths FFBS draws given a fixed ``theta`` against the exact
    conditional ``Pr(z | alpha, theta) ∝ prod_{iaj} theta_iaj^{C_iaj(z)}`` (Eq. 3) enumerated
    over every path, for two ``theta`` drawn by numpy's own Dirichlet (one from the prior of
    Eq. 2, one from the posterior given an exact posterior path): Pearson chi-square on the
    labelled paths, and ``log Pr(alpha | theta)`` returned by the kernel against the
    enumerated sum to 1e-10.

:func:`invariance` -- (b) exact posterior draws of ``z``, one blocked move each (no Gibbs
    sweep), end states against ``Pr(z | alpha)`` of Eq. 4: chi-square on the labelled paths
    and on the partitions of the positions. An exact Gibbs step of the uncollapsed joint
    leaves the posterior invariant.

:func:`chain_of_moves` -- (c) chains of blocked moves only, from uniformly random paths, end
    states against ``Pr(z | alpha)``: the moves alone reach the exact posterior.

Each check's false-alarm rate is ``alpha`` (Bonferroni-split over its sub-tests), with fixed
seeds. The move's mutants (:data:`~bayesfa.samplers.pfa._ffbs_kernel.MUTATIONS`) must fail
them; what each was seen to do on seeds 0-4 is recorded in ``tests/test_blocked.py``.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit
from scipy.special import logsumexp

from bayesfa.exact import free_positions, prior_matrix
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
from bayesfa.samplers.pfa import _ffbs_kernel as ffbs
from bayesfa.validation.checks import Check, chi2_row
from bayesfa.validation.pfa.reference import all_paths, batch_counts, path_codes, path_posterior
from bayesfa.validation.pfa.split_merge import TOY, canonical_codes

ALPHA = 1e-3
_COLUMNS = ["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"]


# -- references (independent of the kernel) ---------------------------------------------------

def exact_theta_conditional(tokens, n_states: int, theta: np.ndarray) -> tuple[np.ndarray, float]:
    """``(Pr(z | alpha, theta) [P], log Pr(alpha | theta))`` over :func:`all_paths`, by Eq. 3:
    ``log Pr(alpha, z | theta) = sum_{iaj} C_iaj(z) log theta_iaj`` for every path."""
    n_symbols = theta.shape[1]
    paths = all_paths(tokens, n_states)
    counts = batch_counts(tokens, paths, n_states, n_symbols)
    with np.errstate(divide="ignore"):
        log_theta = np.log(theta)
    used = counts > 0
    lj = np.where(used, counts * np.where(used, log_theta[None], 0.0), 0.0).sum(axis=(1, 2, 3))
    total = float(logsumexp(lj))
    return np.exp(lj - total), total


def reference_thetas(pp, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two ``theta [N+1, A, N+1]`` by numpy's Dirichlet (each row over the cells of Eq. 2):
    one from the prior, one from the posterior given a path drawn from ``Pr(z | alpha)``."""
    n_states, n_symbols = pp.n_states, pp.n_symbols
    prior = prior_matrix(n_states, n_symbols, pp.beta)
    allowed = prior > 0
    z = pp.sample_paths(1, rng)[0]
    counts = batch_counts(pp.train.tokens, z[None], n_states, n_symbols)[0]
    out = {}
    for label, shape in (("theta from the prior", prior), ("theta from the posterior", prior + counts)):
        theta = np.zeros_like(prior)
        for i in range(n_states + 1):
            theta[i][allowed[i]] = rng.dirichlet(shape[i][allowed[i]])
        out[label] = theta
    return out


# -- the kernel side ---------------------------------------------------------------------------

@njit
def _ffbs_repeat(paths, n, theta, tokens, z, filt, rng, ends):
    log_lik = 0.0
    for r in range(n):
        log_lik = paths(theta, tokens, z, filt, rng)
        ends[r] = z
    return log_lik


@njit
def _moves_from_starts(move, n_moves, starts, tokens, c, ct, ci, recip, rng, beta, theta, filt, ends):
    for r in range(starts.shape[0]):
        z = starts[r].copy()
        gibbs.fill_counts(tokens, z, c, ct, ci, recip, beta)
        for _ in range(n_moves):
            move(tokens, z, c, ct, ci, recip, rng, beta, theta, filt)
        ends[r] = z


def run_moves(starts, n_moves: int, rng, variant: str | None = None, toy=TOY) -> np.ndarray:
    """End paths ``[R, T + 1]`` of ``n_moves`` blocked moves (no sweep) from each path of
    ``starts``, on one Generator; ``variant`` a mutation of the move or None."""
    tokens = toy.train.tokens
    n_states, n_symbols = toy.n_states, toy.train.alphabet_size + 1
    width = gibbs.padded_width(n_states)
    state = (np.zeros((n_states + 1, n_symbols, width), dtype=np.float32),
             np.zeros((n_symbols, n_states + 1, width), dtype=np.float32),
             np.zeros(n_states + 1, dtype=np.int32), np.zeros(width, dtype=np.float32))
    starts = np.ascontiguousarray(starts, dtype=np.int32)
    ends = np.empty_like(starts)
    _moves_from_starts(ffbs.build_blocked(variant), n_moves, starts, tokens, *state, rng,
                       float(toy.beta), *ffbs.scratch(tokens, n_states, n_symbols), ends)
    return ends


def _label(variant):
    return "cgs-pfa blocked move" if variant is None else f"mutant blocked move {variant!r}"


def ffbs_given_theta(variant: str | None = None, *, n_draws: int = 200_000, seed: int = 0,
                     alpha: float = ALPHA) -> Check:
    """(a): ``n_draws`` FFBS passes over :data:`TOY` for each ``theta`` of
    :func:`reference_thetas`, the paths against :func:`exact_theta_conditional`."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    tokens = TOY.train.tokens
    thetas = reference_thetas(pp, rng)
    paths = ffbs.build_ffbs(variant)
    each = alpha / len(thetas)
    rows, log_liks = [], {}
    _, filt = ffbs.scratch(tokens, TOY.n_states, pp.n_symbols)
    for label, theta in thetas.items():
        exact, log_lik = exact_theta_conditional(tokens, TOY.n_states, theta)
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        ends = np.empty((n_draws, z.size), dtype=np.int32)
        got = _ffbs_repeat(paths, n_draws, theta, tokens, z, filt, rng, ends)
        observed = np.bincount(path_codes(ends, tokens, TOY.n_states), minlength=exact.size)
        row = chi2_row(f"paths given {label}", observed, exact, each)
        log_liks[label] = {"kernel": float(got), "exact": log_lik}
        if not abs(got - log_lik) <= 1e-10 * max(1.0, abs(log_lik)):
            row = {**row, "test": row["test"] + f" (log Pr(alpha | theta) {got!r} != {log_lik!r})",
                   "pass": False}
        rows.append(row)
    return Check(
        name="ffbs-given-theta", passed=all(r["pass"] for r in rows),
        description=(f"{_label(variant)}: FFBS given theta, {n_draws} passes over toy "
                     f"{TOY.name!r} for each of {len(thetas)} theta, paths vs Pr(z | alpha, theta) "
                     f"enumerated (Eq. 3; Pearson chi-square), and log Pr(alpha | theta) exact"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"toy": TOY.name, "n_draws": n_draws, "log_lik": log_liks,
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


@njit
def _slice_from_starts(paths, theta, tokens, starts, filt, rng, ends):
    for r in range(starts.shape[0]):
        z = starts[r].copy()
        paths(theta, tokens, z, filt, rng)
        ends[r] = z


def slice_given_theta(variant: str | None = None, *, n_draws: int = 200_000, seed: int = 0,
                      alpha: float = ALPHA) -> Check:
    """The slice-sampled FFBS (:func:`~bayesfa.samplers.pfa._ffbs_kernel.build_slice`, the iPFA's
    ``--paths slice``; ``variant`` one of its ``SLICE_MUTATIONS`` or None) keeps ``Pr(z |
    alpha, theta)`` invariant: for each ``theta`` of :func:`reference_thetas`, ``n_draws``
    paths drawn exactly from :func:`exact_theta_conditional` (numpy's ``choice`` over the
    enumerated paths), one slice step each, the end paths against the same conditional
    (Pearson chi-square on the labelled paths; Bonferroni over the two ``theta``). Unlike
    the dense draw, the step depends on its start, so a start from the target is what makes
    this exact. The fraction of starts it moves is reported."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    tokens = TOY.train.tokens
    thetas = reference_thetas(pp, rng)
    every = all_paths(tokens, TOY.n_states)
    paths = ffbs.build_slice(variant)
    _, filt = ffbs.scratch(tokens, TOY.n_states, pp.n_symbols)
    each = alpha / len(thetas)
    rows, moved = [], {}
    for label, theta in thetas.items():
        exact, _ = exact_theta_conditional(tokens, TOY.n_states, theta)
        starts = np.ascontiguousarray(every[rng.choice(exact.size, size=n_draws, p=exact)],
                                      dtype=np.int32)
        ends = np.empty_like(starts)
        _slice_from_starts(paths, theta, tokens, starts, filt, rng, ends)
        observed = np.bincount(path_codes(ends, tokens, TOY.n_states), minlength=exact.size)
        rows.append(chi2_row(f"one slice step from exact paths given {label}", observed, exact, each))
        moved[label] = float(np.mean(np.any(ends != starts, axis=1)))
    name = "slice FFBS" if variant is None else f"mutant slice FFBS {variant!r}"
    return Check(
        name="slice-given-theta", passed=all(r["pass"] for r in rows),
        description=(f"{name}: {n_draws} exact draws of Pr(z | alpha, theta) on the toy "
                     f"(5 strings, N = {TOY.n_states}), one slice-sampled FFBS step each, against "
                     f"the same enumerated conditional, for a theta from the prior and one from a "
                     f"posterior (Pearson chi-square on the labelled paths)"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"n_draws": n_draws, "moved": moved, "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


def _posterior_rows(pp, ends, each: float, suffix: str) -> list[dict]:
    """Chi-square rows of end paths ``ends`` against ``Pr(z | alpha)``: labelled paths and
    partitions of the positions (:func:`canonical_codes`)."""
    tokens = pp.train.tokens
    codes = path_codes(ends, tokens, pp.n_states)
    parts_all = canonical_codes(pp.paths, tokens, pp.n_states)
    _, parts_all = np.unique(parts_all, return_inverse=True)
    return [chi2_row(f"labelled paths{suffix}", np.bincount(codes, minlength=pp.prob.size), pp.prob, each),
            chi2_row(f"partition of the positions{suffix}",
                     np.bincount(parts_all[codes], minlength=parts_all.max() + 1),
                     np.bincount(parts_all, weights=pp.prob), each)]


def invariance(variant: str | None = None, *, n_draws: int = 200_000, seed: int = 0,
               alpha: float = ALPHA) -> Check:
    """(b): ``n_draws`` exact posterior draws of ``z`` on :data:`TOY`, one blocked move each
    (no Gibbs sweep), end states against ``Pr(z | alpha)``."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    starts = pp.sample_paths(n_draws, rng)
    ends = run_moves(starts, 1, rng, variant)
    rows = _posterior_rows(pp, ends, alpha / 2, " after one move from exact draws")
    return Check(
        name="blocked-invariance", passed=all(r["pass"] for r in rows),
        description=(f"{_label(variant)}: {n_draws} exact posterior draws of z on toy "
                     f"{TOY.name!r}, one blocked move each (no Gibbs sweep), end states vs "
                     f"Pr(z | alpha) (Eq. 4; Pearson chi-square)"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"toy": TOY.name, "n_draws": n_draws,
                 "moved": float(np.mean((ends != starts).any(axis=1))),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


#: Blocked moves per chain in :func:`chain_of_moves`.
CHAIN_MOVES = 20


def chain_of_moves(variant: str | None = None, *, n_chains: int = 100_000, n_moves: int = CHAIN_MOVES,
                   seed: int = 0, alpha: float = ALPHA) -> Check:
    """(c): ``n_chains`` chains of ``n_moves`` blocked moves only (no Gibbs sweep) from
    uniformly random paths of :data:`TOY`, end states against ``Pr(z | alpha)``."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    tokens = TOY.train.tokens
    starts = np.zeros((n_chains, tokens.size + 1), dtype=np.int32)
    free = free_positions(tokens)
    starts[:, free] = rng.integers(1, TOY.n_states + 1, size=(n_chains, free.size))
    ends = run_moves(starts, n_moves, rng, variant)
    rows = _posterior_rows(pp, ends, alpha / 2, f" after {n_moves} moves from uniform paths")
    return Check(
        name="blocked-chain", passed=all(r["pass"] for r in rows),
        description=(f"{_label(variant)}: {n_chains} chains of {n_moves} blocked moves only on toy "
                     f"{TOY.name!r} from uniformly random paths, end states vs Pr(z | alpha) "
                     f"(Eq. 4; Pearson chi-square)"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"toy": TOY.name, "n_chains": n_chains, "n_moves": n_moves,
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


#: The names of :func:`blocked_checks`'s checks, in order (``bayesfa validate --list``).
CHECK_NAMES = ("ffbs-given-theta", "blocked-invariance", "blocked-chain")


def blocked_checks(variant: str | None = None, *, seed: int = 0, alpha: float = ALPHA) -> list[Check]:
    """The blocked-move checks ``bayesfa validate cgs-pfa`` runs (CI settings)."""
    return [ffbs_given_theta(variant, seed=seed, alpha=alpha), invariance(variant, seed=seed, alpha=alpha),
            chain_of_moves(variant, seed=seed, alpha=alpha)]
