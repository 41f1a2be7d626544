"""Pure array functions for the probability of strings under PFAs (the forward algorithm).

A PFA here is ``(init, trans, stop)``: ``init[q]`` the initial distribution,
``trans[a, q, r]`` the probability of emitting letter ``a`` and moving from ``q`` to ``r``,
``stop[q]`` the probability of ending in ``q``; for every ``q``,
``stop[q] + sum_{a, r} trans[a, q, r] = 1``. Then
``Pr(x_1 .. x_n) = init . trans[x_1] ... trans[x_n] . stop``.

Every function takes an optional leading *sample* axis, so a batch of S automata (posterior
samples) is scored against a batch of strings at once: the cost is ``S x n x Q^2`` per
position, with memory bounded by chunking over samples.
"""

from __future__ import annotations

import numpy as np

from bayesfa.corpus import Corpus

_CHUNK_BYTES = 1 << 28  # 256 MiB of forward messages at a time


def forward_log_prob(init: np.ndarray, trans: np.ndarray, stop: np.ndarray,
                     corpus: Corpus) -> np.ndarray:
    """Exact log probability of every string of ``corpus``.

    Scaled forward algorithm: the message is renormalised after every letter and the log
    of the scale accumulated, so long strings do not underflow.

    Parameters
    ----------
    init : ``[Q]`` or ``[S, Q]``
    trans : ``[A, Q, Q]`` or ``[S, A, Q, Q]``, ``A >= corpus.alphabet_size``
    stop : ``[Q]`` or ``[S, Q]``

    Returns
    -------
    ``[n_strings]`` or ``[S, n_strings]`` natural-log probabilities (``-inf`` for 0).
    """
    batched = np.ndim(trans) == 4
    init, trans, stop = (np.asarray(x, dtype=np.float64) for x in (init, trans, stop))
    if not batched:
        init, trans, stop = init[None], trans[None], stop[None]
    n_samples, n_letters, n_states, _ = trans.shape
    if corpus.alphabet_size > n_letters:
        raise ValueError(f"corpus has {corpus.alphabet_size} letters, the automaton {n_letters}")
    letters, lengths = corpus.padded()
    per_sample = max(1, corpus.n_strings * n_states * 8 * 3)
    chunk = max(1, _CHUNK_BYTES // per_sample)
    out = np.empty((n_samples, corpus.n_strings))
    for lo in range(0, n_samples, chunk):
        hi = min(n_samples, lo + chunk)
        out[lo:hi] = _forward_chunk(init[lo:hi], trans[lo:hi], stop[lo:hi], letters, lengths)
    return out if batched else out[0]


def _forward_chunk(init, trans, stop, letters, lengths):
    n_samples, n_states = init.shape
    n_strings = letters.shape[0]
    alpha = np.broadcast_to(init[:, None, :], (n_samples, n_strings, n_states)).copy()
    log_scale = np.zeros((n_samples, n_strings))
    for t in range(letters.shape[1]):
        column = letters[:, t]
        for a in np.unique(column[lengths > t]):
            idx = np.flatnonzero(column == a)
            alpha[:, idx] = np.matmul(alpha[:, idx], trans[:, a])
        active = np.flatnonzero(lengths > t)
        scale = alpha[:, active].sum(axis=-1)
        dead = scale <= 0.0
        safe = np.where(dead, 1.0, scale)
        alpha[:, active] /= safe[..., None]
        with np.errstate(divide="ignore"):
            log_scale[:, active] += np.where(dead, -np.inf, np.log(safe))
    final = np.einsum("snq,sq->sn", alpha, stop)
    with np.errstate(divide="ignore"):
        return np.log(final) + log_scale


def log_mean_exp(log_values: np.ndarray, axis: int = 0) -> np.ndarray:
    """``log(mean(exp(log_values)))`` along ``axis``, computed stably.

    The posterior predictive of Eq. 6 (Shibata & Yoshinaka 2013) averages Pr(b | xi^(s))
    over samples; this averages in log space.
    """
    log_values = np.asarray(log_values, dtype=np.float64)
    top = np.max(log_values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        mean = np.log(np.mean(np.exp(log_values - top), axis=axis, keepdims=True)) + top
    return np.squeeze(mean, axis=axis)


def xi_to_pfa(xi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(init, trans, stop)`` from the paper's ``xi[i, a, j]`` (Sect. 2.1).

    ``xi`` has shape ``[..., N+1, A, N+1]`` where letter 0 is the end marker, which only goes
    to state 0, and state 0 is the initial state. Letters are shifted back down by one.
    """
    xi = np.asarray(xi, dtype=np.float64)
    n_states = xi.shape[-1]
    trans = np.moveaxis(xi[..., :, 1:, :], -2, -3)  # [..., A-1, N+1, N+1]
    stop = xi[..., :, 0, 0]
    init = np.zeros(xi.shape[:-3] + (n_states,))
    init[..., 0] = 1.0
    return init, np.ascontiguousarray(trans), np.ascontiguousarray(stop)


def viterbi(init: np.ndarray, trans: np.ndarray, stop: np.ndarray, letters) -> np.ndarray:
    """The most probable state path of one string under a PFA (Viterbi, in log space).

    ``init [Q]``, ``trans [A, Q, Q]`` (letter, from, to), ``stop [Q]``; ``letters``: the
    string's ``n`` letters, 0-based (:meth:`bayesfa.corpus.Corpus.string`). Returns ``n + 1``
    states: the state before each letter and the state that stops. Ties go to the lowest
    state. A string of probability 0 raises ValueError.
    """
    letters = np.asarray(letters, dtype=np.int64)
    with np.errstate(divide="ignore"):
        log_init, log_trans, log_stop = np.log(init), np.log(trans), np.log(stop)
    score = log_init
    back = np.empty((letters.size, init.size), dtype=np.int64)
    for t, a in enumerate(letters):
        cand = score[:, None] + log_trans[a]  # [from, to]
        back[t] = np.argmax(cand, axis=0)
        score = cand[back[t], np.arange(init.size)]
    final = score + log_stop
    q = int(np.argmax(final))
    if not np.isfinite(final[q]):
        raise ValueError("the string has probability 0 under the automaton")
    path = [q]
    for t in range(letters.size - 1, -1, -1):
        q = int(back[t, q])
        path.append(q)
    return np.array(path[::-1], dtype=np.int64)
