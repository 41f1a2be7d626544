"""Pure array functions for the probability of strings under PFAs (the forward algorithm).

A PFA here is ``(init, trans, stop)``: ``init[q]`` the initial distribution,
``trans[a, q, r]`` the probability of emitting letter ``a`` and moving from ``q`` to ``r``,
``stop[q]`` the probability of ending in ``q``; for every ``q``,
``stop[q] + sum_{a, r} trans[a, q, r] = 1``. Then
``Pr(x_1 .. x_n) = init . trans[x_1] ... trans[x_n] . stop``.

Every function takes an optional leading *sample* axis, so a batch of S automata (posterior
samples) is scored against a batch of strings at once: the cost is ``S x n x Q^2`` per
position, with memory bounded by chunking over samples and, when one sample's messages over
every string would exceed the budget, over strings (:func:`forward_chunks`).
"""

from __future__ import annotations

import numpy as np

from bayesfa.corpus import Corpus

_CHUNK_BYTES = 1 << 28  # 256 MiB of forward messages at a time
#: Bytes a string costs in one sample's forward state: three ``[Q]`` float64 messages
#: (``alpha``, its gathered copy, their product), per state.
MESSAGE_BYTES = 3 * 8


#: The messages' matrix product, ``[S, n, Q] @ [S, Q, Q]`` (a module attribute so that a test
#: can put a product whose rows do not depend on each other in its place, and check that the
#: chunks of :func:`forward_chunks` give the same bits as one block).
_product = np.matmul


def forward_chunks(n_samples: int, n_strings: int, n_states: int) -> tuple[int, int]:
    """``(samples, strings)`` that one call of the forward pass holds at once, so that its
    messages (:data:`MESSAGE_BYTES` per string and state) stay within :data:`_CHUNK_BYTES`:
    every string and ``floor(budget / one sample's messages)`` samples (at least one) when one
    sample over every string fits; else one sample and ``floor(budget / one string's)``
    strings (at least one). Strings are cut only when they must be: a corpus whose one-sample
    messages fit is scored as one block, as it always was.

    A string's probability does not depend on the others, but a matrix product's rows can
    differ in the last bits with the number of rows BLAS is handed (measured with OpenBLAS's
    SkylakeX kernels: benchmarks/RESULTS.md, "Issue 41 items 1-3"): strings scored in chunks
    agree with one block to rounding, and a fixed corpus and number of states always gives
    the same chunks, so the same bits.
    """
    per_sample = max(1, n_strings * n_states * MESSAGE_BYTES)
    if per_sample <= _CHUNK_BYTES:
        return max(1, min(n_samples, _CHUNK_BYTES // per_sample)), max(1, n_strings)
    return 1, max(1, _CHUNK_BYTES // (n_states * MESSAGE_BYTES))


def string_block(corpus: Corpus, lo: int, hi: int) -> Corpus:
    """Strings ``lo .. hi-1`` of ``corpus`` (views of its arrays, offsets rebased)."""
    first, last = int(corpus.offsets[lo]), int(corpus.offsets[hi])
    return Corpus(corpus.tokens[first:last], corpus.offsets[lo:hi + 1] - first, corpus.alphabet_size)


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
    chunk, per_block = forward_chunks(n_samples, corpus.n_strings, n_states)
    out = np.empty((n_samples, corpus.n_strings))
    for first in range(0, max(1, corpus.n_strings), per_block):
        last = min(corpus.n_strings, first + per_block)
        block = corpus if per_block >= corpus.n_strings else string_block(corpus, first, last)
        letters, lengths = block.padded()  # padded per block: its own longest string
        for lo in range(0, n_samples, chunk):
            hi = min(n_samples, lo + chunk)
            out[lo:hi, first:last] = _forward_chunk(init[lo:hi], trans[lo:hi], stop[lo:hi],
                                                    letters, lengths)
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
            alpha[:, idx] = _product(alpha[:, idx], trans[:, a])
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


#: Bytes a string costs in :func:`log_mean_exp_by_strings`, per sample: its log probability
#: and :func:`log_mean_exp`'s two temporaries of that shape (float64).
MEAN_BYTES = 3 * 8


def mean_block(n_samples: int, n_strings: int) -> int:
    """Strings per block of :func:`log_mean_exp_by_strings`: all of them when ``n_samples``
    rows of :data:`MEAN_BYTES` a string fit in :data:`_CHUNK_BYTES`, else as many as fit
    (at least one)."""
    return min(max(1, n_strings), max(1, _CHUNK_BYTES // max(1, n_samples * MEAN_BYTES)))


def log_mean_exp_by_strings(log_prob, n_samples: int, corpus: Corpus) -> np.ndarray:
    """``log_mean_exp(log_prob(corpus), axis=0)`` (Eq. 6 of Shibata & Yoshinaka 2013 over
    ``n_samples`` samples), ``[n_strings]``, computed over blocks of strings (each
    :func:`string_block`) so that the ``[n_samples, block]`` table ``log_prob`` returns and the
    mean's temporaries stay within :data:`_CHUNK_BYTES` (:data:`MEAN_BYTES` per sample and
    string); one block, as before, whenever the whole table fits. A column's mean does not
    depend on the others; the forward pass inside may differ in the last bits
    (:func:`forward_chunks`)."""
    block = mean_block(n_samples, corpus.n_strings)
    if block >= corpus.n_strings:
        return log_mean_exp(log_prob(corpus), axis=0)
    out = np.empty(corpus.n_strings)
    for lo in range(0, corpus.n_strings, block):
        hi = min(corpus.n_strings, lo + block)
        out[lo:hi] = log_mean_exp(log_prob(string_block(corpus, lo, hi)), axis=0)
    return out


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
