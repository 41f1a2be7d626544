"""Vectorised exact references of the collapsed PFA model for the toy data sets.

The same quantities as :mod:`bayesfa.exact` (which is the readable definition and
the one these are tested against), computed with numpy over all ``N ** n_letters`` paths at
once so that toys with up to ~10^5 paths take well under a second:

- :class:`PathPosterior`: every path ``z`` with its count vector and ``Pr(z | alpha)``;
- :meth:`PathPosterior.plugin_predictive`: ``log sum_z Pr(z | alpha) Pr(b | xi~(z))``, the
  limit of CGS-PFA's estimator of Eq. 6 with the plug-in of Sect. 2.3 (footnote 2);
- :meth:`PathPosterior.exact_predictive`: ``log Pr(b | alpha)`` (Eq. 5), computed as
  ``sum_z Pr(z | alpha) sum_{z_b} Pr(b, z_b | alpha, z)`` with the collapsed (Polya urn)
  predictive of the extra string given the counts of ``z``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob, xi_to_pfa
from bayesfa.exact import free_positions, prior_matrix

MAX_PATHS = 2_000_000


def cell_index(z_from, tokens, z_to, n_states: int, n_symbols: int):
    """Flat index of the cell ``(i, a, j)`` in a ``[N+1, A, N+1]`` count array."""
    return (np.asarray(z_from) * n_symbols + np.asarray(tokens)) * (n_states + 1) + np.asarray(z_to)


def all_paths(tokens: np.ndarray, n_states: int) -> np.ndarray:
    """Every allowed path ``z`` ``[N ** F, T + 1]`` (int64), in the order of
    :func:`bayesfa.exact.enumerate_paths` (last free position fastest)."""
    tokens = np.asarray(tokens)
    free = free_positions(tokens)
    n_paths = n_states ** free.size
    if n_paths > MAX_PATHS:
        raise ValueError(f"{n_paths} paths: too many to enumerate")
    idx = np.arange(n_paths, dtype=np.int64)
    powers = n_states ** np.arange(free.size - 1, -1, -1, dtype=np.int64)
    z = np.zeros((n_paths, tokens.size + 1), dtype=np.int64)
    z[:, free] = (idx[:, None] // powers[None, :]) % n_states + 1
    return z


def path_codes(z: np.ndarray, tokens: np.ndarray, n_states: int) -> np.ndarray:
    """Index of each path ``z`` ``[..., T + 1]`` in :func:`all_paths` (inverse map)."""
    free = free_positions(tokens)
    powers = n_states ** np.arange(free.size - 1, -1, -1, dtype=np.int64)
    return ((np.asarray(z)[..., free].astype(np.int64) - 1) * powers).sum(axis=-1)


def batch_counts(tokens: np.ndarray, z: np.ndarray, n_states: int, n_symbols: int) -> np.ndarray:
    """``C[p, i, a, j]`` of every path ``z[p]`` (int64 ``[P, N+1, A, N+1]``)."""
    z = np.asarray(z, dtype=np.int64)
    n_paths = z.shape[0]
    k = (n_states + 1) * n_symbols * (n_states + 1)
    cells = cell_index(z[:, :-1], np.asarray(tokens, dtype=np.int64)[None, :], z[:, 1:],
                       n_states, n_symbols)
    flat = np.bincount((cells + k * np.arange(n_paths)[:, None]).ravel(), minlength=n_paths * k)
    return flat.reshape(n_paths, n_states + 1, n_symbols, n_states + 1)


def batch_log_joint(c: np.ndarray, beta: float) -> np.ndarray:
    """``log Pr(alpha, z)`` of Eq. 4 for count arrays ``c`` ``[..., N+1, A, N+1]``."""
    c = np.asarray(c)
    n_states, n_symbols = c.shape[-3] - 1, c.shape[-2]
    prior = prior_matrix(n_states, n_symbols, beta)
    allowed = prior > 0
    total = prior.sum(axis=(1, 2))
    cells = gammaln(c[..., allowed] + prior[allowed]) - gammaln(prior[allowed])
    states = gammaln(total) - gammaln(c.sum(axis=(-2, -1)) + total)
    return cells.sum(axis=-1) + states.sum(axis=-1)


@dataclass
class PathPosterior:
    """The exact posterior ``Pr(z | alpha)`` over all paths of ``train``.

    paths ``[P, T+1]``; prob ``[P]``; log_joint ``[P]`` (Eq. 4); classes ``[P]``, index of
    each path's count vector in ``class_counts`` ``[U, N+1, A, N+1]`` with ``class_prob [U]``.
    """

    train: Corpus
    n_states: int
    beta: float
    paths: np.ndarray
    log_joint: np.ndarray
    prob: np.ndarray
    classes: np.ndarray
    class_counts: np.ndarray
    class_prob: np.ndarray

    @classmethod
    def build(cls, train: Corpus, n_states: int, beta: float) -> "PathPosterior":
        n_symbols = train.alphabet_size + 1
        paths = all_paths(train.tokens, n_states)
        c = batch_counts(train.tokens, paths, n_states, n_symbols)
        flat = np.ascontiguousarray(c.reshape(c.shape[0], -1).astype(np.int16))
        rows = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).reshape(-1)
        _, first, classes = np.unique(rows, return_index=True, return_inverse=True)
        classes = classes.reshape(-1)
        class_counts = c[first]
        class_lj = batch_log_joint(class_counts, beta)
        lj = class_lj[classes]
        prob = np.exp(lj - logsumexp(lj))
        class_prob = np.bincount(classes, weights=prob, minlength=first.size)
        return cls(train, n_states, beta, paths, lj, prob, classes, class_counts, class_prob)

    @property
    def n_symbols(self) -> int:
        return self.train.alphabet_size + 1

    @property
    def log_marginal(self) -> float:
        """``log Pr(alpha)``."""
        return float(logsumexp(self.log_joint))

    def sample_paths(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent paths ``[n, T+1]`` from ``Pr(z | alpha)``."""
        idx = rng.choice(self.prob.size, size=n, p=self.prob)
        return self.paths[idx]

    def plugin_xi(self) -> np.ndarray:
        """``xi~`` of every count class ``[U, N+1, A, N+1]``."""
        alpha = self.class_counts + prior_matrix(self.n_states, self.n_symbols, self.beta)
        return alpha / alpha.sum(axis=(-2, -1), keepdims=True)

    def plugin_predictive(self, test: Corpus) -> np.ndarray:
        """``log sum_z Pr(z | alpha) Pr(b | xi~(z))`` per test string ``[n]``."""
        test = test.with_alphabet(self.train.alphabet_size)
        logp = forward_log_prob(*xi_to_pfa(self.plugin_xi()), test)  # [U, n]
        return logsumexp(logp, axis=0, b=self.class_prob[:, None])

    def plugin_per_class(self, test: Corpus) -> np.ndarray:
        """``Pr(b | xi~(z))`` ``[U, n]`` of every count class."""
        test = test.with_alphabet(self.train.alphabet_size)
        return np.exp(forward_log_prob(*xi_to_pfa(self.plugin_xi()), test))

    def exact_predictive(self, test: Corpus) -> np.ndarray:
        """``log Pr(b | alpha)`` per test string ``[n]`` (Eq. 5)."""
        test = test.with_alphabet(self.train.alphabet_size)
        n_states, n_symbols = self.n_states, self.n_symbols
        prior = prior_matrix(n_states, n_symbols, self.beta).reshape(-1)
        state_total = prior.reshape(n_states + 1, -1).sum(axis=1)
        # Cell-major tables of log rising factorials: lg_cell[d-1, cell, u] =
        # log Gamma(C + prior + d) - log Gamma(C + prior), likewise per state.
        d_max = int(np.diff(test.offsets).max()) if test.n_strings else 1
        d = np.arange(1, d_max + 1, dtype=np.float64)[:, None, None]
        base = self.class_counts.reshape(self.class_counts.shape[0], -1).T + prior[:, None]
        lg_cell = gammaln(base[None] + d) - gammaln(base)[None]
        tot = self.class_counts.sum(axis=(-2, -1)).T + state_total[:, None]
        lg_state = gammaln(tot[None] + d) - gammaln(tot)[None]
        log_w = np.log(np.maximum(self.class_prob, 1e-300))
        out = np.empty(test.n_strings)
        for s in range(test.n_strings):
            tokens = test.tokens[test.offsets[s]:test.offsets[s + 1]].astype(np.int64)
            terms = []
            for inner in itertools.product(range(1, n_states + 1), repeat=tokens.size - 1):
                z = np.array((0,) + inner + (0,), dtype=np.int64)
                cells = cell_index(z[:-1], tokens, z[1:], n_states, n_symbols)
                ucells, dc = np.unique(cells, return_counts=True)
                ustates, ds = np.unique(z[:-1], return_counts=True)
                delta = lg_cell[dc - 1, ucells].sum(axis=0) - lg_state[ds - 1, ustates].sum(axis=0)
                terms.append(delta)
            out[s] = logsumexp(np.stack(terms) + log_w[None, :])
        return out


_CACHE: dict = {}


def path_posterior(train: Corpus, n_states: int, beta: float) -> PathPosterior:
    """:meth:`PathPosterior.build`, cached per ``(corpus, N, beta)``."""
    key = (train.tokens.tobytes(), train.alphabet_size, n_states, float(beta))
    if key not in _CACHE:
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = PathPosterior.build(train, n_states, beta)
    return _CACHE[key]


def counts_consistency(counts: np.ndarray, tokens: np.ndarray) -> dict:
    """A row of the ``recorded`` check (:mod:`bayesfa.validation.recorded`): are the recorded
    ``C[..., i, a, j]`` the counts of *some* path through ``tokens``? Each letter's total is
    its number of tokens (the end marker's: the number of strings), the end marker goes to
    state 0 and only there, no letter enters state 0, and each state is left as often as it is
    entered (Definition 2). Exact; the number of draws that break any of these."""
    c = np.asarray(counts, dtype=np.int64)
    n_symbols = c.shape[-2]
    letters = np.bincount(np.asarray(tokens, dtype=np.int64), minlength=n_symbols)
    bad = (c.sum(axis=(-3, -1)) != letters).any(axis=-1)
    bad |= (c[..., :, 0, 1:] != 0).any(axis=(-2, -1)) | (c[..., :, 1:, 0] != 0).any(axis=(-2, -1))
    bad |= (c.sum(axis=(-3, -2)) != c.sum(axis=(-2, -1))).any(axis=-1)
    return {"quantity": "counts (the recorded state)", "draws": int(bad.size),
            "max_diff": float(bad.sum()), "tolerance": 0.0, "pass": not bool(bad.any()),
            "how": "per letter totals = the data's, end marker to state 0 only, in-flow = "
                   "out-flow per state (draws breaking any: max_diff)"}


def counts_trace(counts: np.ndarray, trace: dict, options: dict, log_joint: np.ndarray,
                 how: str) -> dict:
    """The trace entries every sampler of the PFA family records from its counts
    ``[chain, draw, N+1, A, N+1]``, as :class:`~bayesfa.validation.recorded.Recomputed`:
    ``log_joint`` (given, recomputed by the caller's formula, ``how``), ``n_states`` (states
    ``i >= 1`` with ``C_i > 0``), ``n_edges`` (cells ``C_iaj > 0``); on the draws whose counts
    are kept (``--max-draws``: the front's documented rule)."""
    from bayesfa.samplers.pfa.cgs_pfa import kept_draw_indices  # which draws kept counts
    from bayesfa.validation.recorded import Recomputed

    kept = kept_draw_indices(np.shape(trace["log_joint"])[1], options.get("max_draws"))

    def rec(name):
        return np.asarray(trace[name])[:, kept]

    return {"log_joint": Recomputed(log_joint, rec("log_joint"), 1e-9, how),
            "n_states": Recomputed((counts[:, :, 1:].sum(axis=(3, 4)) > 0).sum(axis=2),
                                   rec("n_states"), 0.0, "states i >= 1 with C_i > 0"),
            "n_edges": Recomputed((counts > 0).sum(axis=(2, 3, 4)), rec("n_edges"), 0.0,
                                  "cells with C_iaj > 0")}


def recompute_trace(arrays: dict, trace: dict, options: dict, train: Corpus):
    """``(recomputed, extra_rows)`` for the ``recorded`` check of CGS-PFA and its mutants:
    :func:`counts_trace` with the log joint of Eq. 4 by :func:`batch_log_joint` (scipy's
    ``gammaln``, not the kernel's ``math.lgamma`` loop), and :func:`counts_consistency`."""
    counts = np.asarray(arrays["counts"])
    out = counts_trace(counts, trace, options, batch_log_joint(counts, options["beta"]),
                       "Eq. 4 from the recorded counts (reference.batch_log_joint)")
    return out, [counts_consistency(counts, train.tokens)]
