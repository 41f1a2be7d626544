"""Exact check of the iPFA's weak-limit split-merge proposal
(:mod:`bayesfa.samplers.pfa._ipfa_split_kernel`): accepted by its ratio, the move leaves
``Pr(z | beta, alpha, data)`` invariant.

Toy: :data:`bayesfa.validation.pfa.ipfa_blocked.TOY` (``ab ba a ε`` over 2 letters, 5 free
positions) with ``L = 4`` states (1,024 labelled paths; paths with 1, 2 and 3 states in use,
hence 3, 2 and 1 empty states, all carry mass) and fixed, unequal weights :data:`BETA` and
:data:`ALPHA_VALUE`. :func:`exact_path_posterior` enumerates ``Pr(z | beta, alpha)`` from the
model alone (Eq. 4 with the Dirichlet parameters ``alpha H(a, j)``, ``H(a, j) = beta_j / A``,
``H(0, 0) = 1 / A``, written here with ``scipy.special.gammaln`` on
:func:`~bayesfa.validation.pfa.reference.batch_counts`; nothing of the kernel).

:func:`invariance` draws ``n_chains`` paths from that posterior (fixed seed), applies ONE move
to each (:func:`~bayesfa.samplers.pfa._ipfa_split_kernel.build_propose`, not dry) and compares
the end paths with the posterior by a Pearson chi-square (cells pooled to expected counts >= 5
by :func:`~bayesfa.validation.checks.chi2_row`). A move in detailed balance with the posterior
leaves it invariant, so the correct move fails with probability :data:`ALPHA` (1e-3) at a
fixed seed; the mutants of :data:`~bayesfa.samplers.pfa._ipfa_split_kernel.MUTATIONS` must
fail.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.special import gammaln, logsumexp

from bayesfa.samplers.pfa import _ipfa_split_kernel as sk
from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions, padded_width
from bayesfa.samplers.pfa._ipfa_kernel import refresh_weights
from bayesfa.exact import free_positions
from bayesfa.validation.checks import chi2_row
from bayesfa.validation.pfa.ipfa_blocked import TOY
from bayesfa.validation.pfa.reference import all_paths, batch_counts, path_codes

ALPHA = 1e-3
L_STATES = 4
#: the fixed weights beta_1..beta_L and alpha of the check
BETA = np.array([0.45, 0.3, 0.2, 0.05])
ALPHA_VALUE = 1.5


def exact_path_posterior(tokens, n_states: int, beta, alpha: float, n_sym: int) -> np.ndarray:
    """``Pr(z | beta, alpha, data)`` over :func:`all_paths` (module docstring)."""
    paths = all_paths(tokens, n_states)
    cnt = batch_counts(tokens, paths, n_states, n_sym).astype(np.float64)
    x = np.zeros((n_sym, n_states + 1))
    x[0, 0] = alpha / n_sym
    x[1:, 1:] = alpha * np.asarray(beta)[None, :] / n_sym
    used = x > 0
    n_i = cnt.sum(axis=(2, 3))
    logp = (gammaln(alpha) - gammaln(n_i + alpha)).sum(axis=1)
    cells = cnt[:, :, used]
    logp += (gammaln(cells + x[used][None, None]) - gammaln(x[used])[None, None]).sum(axis=(1, 2))
    return np.exp(logp - logsumexp(logp))


@njit
def _one_move_each(propose, starts, positions, tokens, c, ct, ci, recip, bk, beta, alpha, rng,
                   scans, choice, launch, pairs, ends, kinds):
    members = np.zeros(positions.shape[0], np.int64)
    saved = np.zeros(positions.shape[0], np.int32)
    out = np.zeros(sk.OUT)
    n_sym = c.shape[1]
    for d in range(starts.shape[0]):
        z = starts[d].copy()
        count_transitions(tokens, z, c, ct, ci)
        refresh_weights(ci, recip, bk, beta, np.zeros(2, np.int64), alpha, n_sym, True)
        kinds[d] = propose(positions, tokens, z, c, ct, ci, recip, bk, beta, alpha, 1.0, rng,
                           scans, choice, False, members, saved, out, -1, -1, launch, pairs)
        if out[sk.ACCEPTED] > 0:
            kinds[d] += 10
        ends[d] = z


def invariance(mutation: str | None = None, *, choice: int = sk.CHOICE_UNIFORM,
               launch: int = sk.LAUNCH_RANDOM, pairs: int = sk.PAIRS_UNIFORM, scans: int = 2,
               n_chains: int = 200_000,
               seed: int = 0, alpha: float = ALPHA) -> dict:
    """One move from each of ``n_chains`` exact posterior draws; the chi-square row of the end
    paths against the posterior, with the moves proposed and accepted."""
    tokens = np.ascontiguousarray(TOY.tokens, dtype=np.int32)
    n_sym = TOY.alphabet_size + 1
    post = exact_path_posterior(tokens, L_STATES, BETA, ALPHA_VALUE, n_sym)
    paths = all_paths(tokens, L_STATES).astype(np.int32)
    rng = np.random.default_rng(seed)
    starts = np.ascontiguousarray(paths[rng.choice(post.size, size=n_chains, p=post)])
    w = padded_width(L_STATES)
    c = np.zeros((L_STATES + 1, n_sym, w), np.float64)
    ct = np.zeros((n_sym, L_STATES + 1, w), np.float64)
    ci = np.zeros(L_STATES + 1, np.int32)
    recip = np.zeros(w)
    bk = np.zeros(w)
    beta = np.zeros(L_STATES + 1)
    beta[1:] = BETA
    ends = np.zeros_like(starts)
    kinds = np.zeros(n_chains, np.int64)
    _one_move_each(sk.build_propose(mutation), starts, free_positions(tokens).astype(np.int64),
                   tokens, c, ct, ci, recip, bk, beta, ALPHA_VALUE, rng, scans, choice, launch,
                   pairs, ends, kinds)
    observed = np.bincount(path_codes(ends, tokens, L_STATES), minlength=post.size)
    row = chi2_row(f"ipfa-split{'' if mutation is None else ':' + mutation} choice={choice} "
                   f"launch={launch} pairs={pairs} scans={scans}", observed, post, alpha)
    row.update(splits_tried=int(np.sum(kinds % 10 == 1)), splits_accepted=int(np.sum(kinds == 11)),
               merges_tried=int(np.sum(kinds % 10 == 2)), merges_accepted=int(np.sum(kinds == 12)))
    return row


def split_merge_check(*, seed: int = 0, alpha: float = ALPHA):
    """``blocked-split-merge`` of ``bayesfa validate ipfa``: :func:`invariance` with the pairs,
    launch and choice of the empty state that ``--split-merge`` runs (anchors followed by
    different letters, the letter launch, the empty state in proportion to beta), seed
    ``seed``; false-alarm rate ``alpha``. Its mutants
    (:data:`~bayesfa.samplers.pfa._ipfa_split_kernel.MUTATIONS`) are shown failing by
    tests/test_ipfa_split.py."""
    import time

    from bayesfa.validation.checks import Check

    t0 = time.perf_counter()
    row = invariance(None, choice=sk.CHOICE_BETA, launch=sk.LAUNCH_LETTER, pairs=sk.PAIRS_LETTERS,
                     seed=seed, alpha=alpha)
    return Check(
        name="blocked-split-merge", passed=bool(row["pass"]),
        description=("ipfa --split-merge: one split-merge move (Jain & Neal's restricted Gibbs "
                     f"launch, the sampler's pairs and choice) from each of {200_000} exact "
                     f"posterior draws on the toy ab ba a ε with L = {L_STATES}, beta and alpha "
                     "fixed; end paths vs the enumerated Pr(z | beta, alpha, data), Pearson "
                     "chi-square"),
        alpha=alpha, columns=["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"],
        rows=[{k: row[k] for k in ("test", "cells", "chi2", "dof", "p_value", "threshold", "pass")}],
        summary={"splits_accepted": row["splits_accepted"], "merges_accepted": row["merges_accepted"],
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g}"])
