"""The forward algorithm against brute-force path enumeration, plus its numerical range."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bayesfa.forward as forward
from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from conftest import traced_peak
from bayesfa.forward import forward_log_prob, log_mean_exp, xi_to_pfa


# -- helpers (also used by test_automata and test_pautomac) ---------------------------------


def random_pfa(rng: np.random.Generator, n_states: int, n_letters: int, *,
               sparsity: float = 0.0, min_stop: float = 0.0):
    """``(init, trans, stop)`` of a random PFA.

    Each state's outgoing distribution over ``stop`` and the ``n_letters x n_states``
    transitions is Dirichlet(1); with ``sparsity`` that fraction of transitions is zeroed
    (stop is never zeroed, so every state can end). ``min_stop`` mixes in stopping.
    """
    out = rng.dirichlet(np.ones(1 + n_letters * n_states), size=n_states)
    if sparsity:
        keep = rng.random(out.shape) >= sparsity
        keep[:, 0] = True
        out = out * keep
        out /= out.sum(axis=1, keepdims=True)
    out = min_stop * np.eye(1, out.shape[1])[0] + (1 - min_stop) * out
    stop = out[:, 0]
    trans = out[:, 1:].reshape(n_states, n_letters, n_states).transpose(1, 0, 2).copy()
    init = rng.dirichlet(np.ones(n_states))
    if sparsity:
        init = init * (rng.random(n_states) >= sparsity)
        init[rng.integers(n_states)] += 0.5
        init /= init.sum()
    return init, trans, stop


def brute_force_prob(init, trans, stop, string) -> float:
    """Sum over every state path ``q_0 .. q_n`` of ``init[q_0] prod trans[x_i] stop[q_n]``."""
    n_states = init.shape[0]
    total = 0.0
    for path in itertools.product(range(n_states), repeat=len(string) + 1):
        p = init[path[0]]
        for a, q, r in zip(string, path[:-1], path[1:]):
            p *= trans[a, q, r]
        total += p * stop[path[-1]]
    return total


def all_strings(n_letters: int, max_length: int):
    """Every string over ``n_letters`` letters of length ``0 .. max_length``."""
    for n in range(max_length + 1):
        yield from (list(s) for s in itertools.product(range(n_letters), repeat=n))


def log_space_forward(init, trans, stop, string) -> float:
    """Reference forward recursion kept entirely in log space (no scaling)."""
    with np.errstate(divide="ignore"):
        log_alpha, log_trans, log_stop = np.log(init), np.log(trans), np.log(stop)
    for a in string:
        m = log_alpha[:, None] + log_trans[a]  # [q, r]
        top = m.max(axis=0)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            log_alpha = np.log(np.exp(m - safe).sum(axis=0)) + safe
    m = log_alpha + log_stop
    top = m.max()
    return float(np.log(np.exp(m - top).sum()) + top)


# -- exactness against brute force -----------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 3), n_letters=st.integers(1, 3),
       sparsity=st.sampled_from([0.0, 0.5]), data=st.data())
def test_forward_equals_path_enumeration(seed, n_states, n_letters, sparsity, data):
    rng = np.random.default_rng(seed)
    init, trans, stop = random_pfa(rng, n_states, n_letters, sparsity=sparsity)
    strings = data.draw(st.lists(st.lists(st.integers(0, n_letters - 1), max_size=5), min_size=1,
                                 max_size=6))
    strings.append([])  # the empty string is always scored
    corpus = Corpus.from_strings(strings, n_letters)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (log of 0, 0/0) may leak
        got = np.exp(forward_log_prob(init, trans, stop, corpus))
    want = np.array([brute_force_prob(init, trans, stop, s) for s in strings])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)
    # the empty string: Pr = init . stop
    assert got[-1] == pytest.approx(init @ stop, rel=1e-12)


def test_impossible_strings_get_minus_inf():
    # State 0 emits only letter 0 and moves to 1; state 1 only stops.
    init = np.array([1.0, 0.0])
    trans = np.zeros((2, 2, 2))
    trans[0, 0, 1] = 1.0
    stop = np.array([0.0, 1.0])
    corpus = Corpus.from_strings([[], [0], [1], [0, 0], [0, 1, 0, 0]], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logp = forward_log_prob(init, trans, stop, corpus)
    assert logp[1] == 0.0
    assert np.all(np.isneginf(np.delete(logp, 1)))


def test_empty_corpus():
    init, trans, stop = random_pfa(np.random.default_rng(0), 2, 2)
    assert forward_log_prob(init, trans, stop, Corpus.from_strings([], 2)).shape == (0,)
    assert forward_log_prob(init[None], trans[None], stop[None],
                            Corpus.from_strings([], 2)).shape == (1, 0)


def test_alphabet_too_small_for_corpus():
    init, trans, stop = random_pfa(np.random.default_rng(0), 2, 2)
    with pytest.raises(ValueError):
        forward_log_prob(init, trans, stop, Corpus.from_strings([[0, 2]], 3))
    # a larger automaton alphabet is fine: the corpus just never uses the extra letters
    corpus = Corpus.from_strings([[0, 1], []], 2)
    init3, trans3, stop3 = random_pfa(np.random.default_rng(1), 2, 3)
    want = [brute_force_prob(init3, trans3, stop3, s) for s in ([0, 1], [])]
    np.testing.assert_allclose(np.exp(forward_log_prob(init3, trans3, stop3, corpus)), want, rtol=1e-12)


# -- sample axis ---------------------------------------------------------------------------
@pytest.mark.parametrize("chunk_bytes", [None, 1])
def test_sample_axis_equals_loop(monkeypatch, chunk_bytes):
    if chunk_bytes is not None:  # force one sample per chunk
        monkeypatch.setattr(forward, "_CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(7)
    pfas = [random_pfa(rng, 3, 2, sparsity=0.3) for _ in range(5)]
    init, trans, stop = (np.stack(x) for x in zip(*pfas))
    strings = [list(rng.integers(0, 2, size=n)) for n in rng.integers(0, 9, size=25)] + [[]]
    corpus = Corpus.from_strings(strings, 2)
    batched = forward_log_prob(init, trans, stop, corpus)
    assert batched.shape == (5, corpus.n_strings)
    looped = np.stack([forward_log_prob(*pfa, corpus) for pfa in pfas])
    np.testing.assert_allclose(batched, looped, rtol=1e-13)


# -- numerical range -------------------------------------------------------------------------
def test_long_strings_do_not_underflow():
    rng = np.random.default_rng(3)
    init, trans, stop = random_pfa(rng, 3, 2)
    long_strings = [list(rng.integers(0, 2, size=5000)), list(rng.integers(0, 2, size=4321))]
    strings = long_strings + [[], [1, 0]]
    logp = forward_log_prob(init, trans, stop, Corpus.from_strings(strings, 2))
    assert np.all(np.isfinite(logp))
    assert logp[0] < -1000  # far below the smallest double: the plain product would be 0
    want = [log_space_forward(init, trans, stop, s) for s in strings]
    np.testing.assert_allclose(logp, want, rtol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_mass_of_strings_up_to_length_L(seed):
    """sum_{|x| <= L} Pr(x) = 1 - tail, with tail = init . M^(L+1) . 1 where M = sum_a trans[a].

    (stop = (I - M) 1 gives sum_{n > L} init M^n stop = init M^(L+1) 1.)  Since every row of
    M sums to 1 - stop[q], tail <= (1 - min stop)^(L+1).
    """
    n_letters, max_length = 2, 8
    init, trans, stop = random_pfa(np.random.default_rng(seed), 3, n_letters, min_stop=0.3)
    strings = list(all_strings(n_letters, max_length))
    total = np.exp(forward_log_prob(init, trans, stop, Corpus.from_strings(strings, n_letters))).sum()
    m = trans.sum(axis=0)
    tail = init @ np.linalg.matrix_power(m, max_length + 1) @ np.ones(3)
    bound = (1 - stop.min()) ** (max_length + 1)
    assert 0 < tail <= bound < 0.05
    assert 0 <= 1 - total <= bound
    assert total == pytest.approx(1 - tail, abs=1e-12)


# -- log_mean_exp ----------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_log_mean_exp_matches_direct(axis):
    x = np.random.default_rng(0).normal(scale=3.0, size=(4, 5))
    np.testing.assert_allclose(log_mean_exp(x, axis=axis), np.log(np.mean(np.exp(x), axis=axis)),
                               rtol=1e-12)


def test_log_mean_exp_is_stable_and_handles_minus_inf():
    x = np.random.default_rng(1).normal(size=(6, 3))
    shifted = x - 2000.0  # exp underflows to 0 for every entry
    np.testing.assert_allclose(log_mean_exp(shifted), np.log(np.mean(np.exp(x), axis=0)) - 2000.0,
                               rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isneginf(log_mean_exp(np.full(4, -np.inf)))
        mixed = log_mean_exp(np.array([[0.0, -np.inf], [-np.inf, -np.inf]]))
    np.testing.assert_allclose(mixed, [np.log(0.5), -np.inf])
    assert log_mean_exp(np.array([1.5])) == pytest.approx(1.5)


# -- xi (Sect. 2.1) -------------------------------------------------------------------------
def random_xi(rng, n_states: int, n_symbols: int, batch=()):
    """``xi[..., i, a, j]``; symbol 0 (end) only goes to state 0; Dirichlet per state i."""
    xi = np.zeros(batch + (n_states, n_symbols, n_states))
    draws = rng.dirichlet(np.ones(1 + (n_symbols - 1) * n_states), size=batch + (n_states,))
    xi[..., :, 0, 0] = draws[..., 0]
    xi[..., :, 1:, :] = draws[..., 1:].reshape(batch + (n_states, n_symbols - 1, n_states))
    return xi


def test_xi_to_pfa_matches_paths_from_state_0():
    rng = np.random.default_rng(5)
    xi = random_xi(rng, 3, 3)  # 2 letters + end marker
    init, trans, stop = xi_to_pfa(xi)
    assert init.tolist() == [1.0, 0.0, 0.0]
    PFA(init, trans, stop)  # a valid PFA
    for string in all_strings(2, 3):
        # Paper form: start in 0, follow xi[i, letter+1, j], then the end marker xi[i, 0, 0].
        want = 0.0
        for path in itertools.product(range(3), repeat=len(string)):
            p, q = 1.0, 0
            for a, r in zip(string, path):
                p *= xi[q, a + 1, r]
                q = r
            want += p * xi[q, 0, 0]
        got = np.exp(forward_log_prob(init, trans, stop, Corpus.from_strings([string], 2)))[0]
        assert got == pytest.approx(want, rel=1e-12)


def test_xi_to_pfa_with_sample_axis():
    xi = random_xi(np.random.default_rng(6), 2, 3, batch=(4,))
    init, trans, stop = xi_to_pfa(xi)
    assert init.shape == (4, 2) and trans.shape == (4, 2, 2, 2) and stop.shape == (4, 2)
    for s in range(4):
        one = xi_to_pfa(xi[s])
        for got, want in zip((init[s], trans[s], stop[s]), one):
            np.testing.assert_array_equal(got, want)


# -- memory bound of the sample axis (added from the mutation run) ----------------------------
@pytest.mark.parametrize("samples_per_chunk", [1, 7])
def test_samples_are_chunked_to_the_memory_budget(monkeypatch, samples_per_chunk):
    """A sample's forward state is three ``[n_strings, Q]`` float64 arrays; the sample axis is
    cut into chunks of ``floor(_CHUNK_BYTES / that)`` samples (at least one), and the traced
    peak of a call, besides its output, stays within twice the budget."""
    rng = np.random.default_rng(3)
    n_samples, n_states, n_letters, n_strings = 40, 8, 3, 200
    strings = [list(rng.integers(0, n_letters, size=k)) for k in rng.integers(0, 12, size=n_strings)]
    corpus = Corpus.from_strings(strings, n_letters)
    trans = rng.random((n_samples, n_letters, n_states, n_states))
    trans /= trans.sum(axis=(1, 3), keepdims=True) * 1.25
    stop = 1.0 - trans.sum(axis=(1, 3))
    init = np.zeros((n_samples, n_states))
    init[:, 0] = 1.0
    budget = samples_per_chunk * n_strings * n_states * 8 * 3
    want = forward_log_prob(init, trans, stop, corpus)  # also warms up one-off allocations
    monkeypatch.setattr(forward, "_CHUNK_BYTES", budget)
    sizes = []
    chunk = forward._forward_chunk

    def spy(*args):
        sizes.append(args[0].shape[0])
        return chunk(*args)

    monkeypatch.setattr(forward, "_forward_chunk", spy)
    got, peak = traced_peak(forward_log_prob, init, trans, stop, corpus)
    full, rest = divmod(n_samples, samples_per_chunk)
    assert sizes == [samples_per_chunk] * full + ([rest] if rest else [])
    assert peak - got.nbytes <= 2 * budget
    np.testing.assert_array_equal(got, want)


# -- strings in chunks (issue 41 item 1: memory bounded by a chunk, not by the corpus) -------
def _rowwise_product(x, y):
    """``x @ y`` ``[S, n, Q] @ [S, Q, Q]`` summed over ``q`` in order for every row alone, so
    a row's bits do not depend on how many rows share the call (OpenBLAS's may)."""
    return (x[..., :, :, None] * y[..., None, :, :]).sum(axis=-2)


def _random_batch(seed, n_samples=3, n_states=6, n_letters=3, n_strings=257, max_len=15):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_len + 1, size=n_strings)
    lengths[rng.integers(n_strings)] = max_len + 9  # one long string, in one chunk only
    corpus = Corpus.from_strings([list(rng.integers(0, n_letters, size=k)) for k in lengths], n_letters)
    pfas = [random_pfa(rng, n_states, n_letters, sparsity=0.3) for _ in range(n_samples)]
    init, trans, stop = (np.stack(x) for x in zip(*pfas))
    return corpus, init, trans, stop


@pytest.mark.parametrize("strings_per_chunk", [1, 2, 50, 256])
def test_string_chunks_give_the_bits_of_one_block(monkeypatch, strings_per_chunk):
    """With a row-independent product, scoring strings in chunks (each padded to its own
    longest string) gives the same bits as one block; with BLAS's product, the same to
    rounding. The chunks are those of ``forward_chunks``: one sample at a time, as many
    strings as fit."""
    corpus, init, trans, stop = _random_batch(5)
    n_states = init.shape[1]
    monkeypatch.setattr(forward, "_product", _rowwise_product)
    whole = forward_log_prob(init, trans, stop, corpus)
    budget = strings_per_chunk * n_states * forward.MESSAGE_BYTES
    monkeypatch.setattr(forward, "_CHUNK_BYTES", budget)
    assert forward.forward_chunks(3, corpus.n_strings, n_states) == (1, strings_per_chunk)
    sizes = []
    chunk = forward._forward_chunk

    def spy(init, trans, stop, letters, lengths):
        sizes.append((init.shape[0], letters.shape[0]))
        return chunk(init, trans, stop, letters, lengths)

    monkeypatch.setattr(forward, "_forward_chunk", spy)
    got = forward_log_prob(init, trans, stop, corpus)
    assert all(s == 1 and m <= strings_per_chunk for s, m in sizes)
    assert sum(m for _, m in sizes) == 3 * corpus.n_strings
    np.testing.assert_array_equal(got, whole)
    monkeypatch.setattr(forward, "_product", np.matmul)
    blas = forward_log_prob(init, trans, stop, corpus)
    monkeypatch.setattr(forward, "_CHUNK_BYTES", 1 << 28)
    blas_whole = forward_log_prob(init, trans, stop, corpus)
    np.testing.assert_allclose(blas, blas_whole, rtol=1e-12, atol=0)
    np.testing.assert_allclose(blas, whole, rtol=1e-12, atol=0)


def test_a_corpus_whose_messages_fit_is_one_block():
    """Below the budget nothing is cut: the result is that of the unchunked pass, bit for bit."""
    corpus, init, trans, stop = _random_batch(6)
    assert forward.forward_chunks(3, corpus.n_strings, init.shape[1]) == (3, corpus.n_strings)
    letters, lengths = corpus.padded()
    np.testing.assert_array_equal(forward_log_prob(init, trans, stop, corpus),
                                  forward._forward_chunk(init, trans, stop, letters, lengths))


@pytest.mark.parametrize("strings_per_block", [1, 3, 100])
def test_log_mean_exp_by_strings_gives_the_bits_of_one_block(monkeypatch, strings_per_block):
    corpus, init, trans, stop = _random_batch(7, n_samples=4)
    monkeypatch.setattr(forward, "_product", _rowwise_product)

    def log_prob(part):
        return forward_log_prob(init, trans, stop, part)

    whole = log_mean_exp(log_prob(corpus), axis=0)
    monkeypatch.setattr(forward, "_CHUNK_BYTES", strings_per_block * 4 * forward.MEAN_BYTES)
    assert forward.mean_block(4, corpus.n_strings) == strings_per_block
    np.testing.assert_array_equal(forward.log_mean_exp_by_strings(log_prob, 4, corpus), whole)


def test_string_chunks_bound_the_memory(monkeypatch):
    """One sample's messages over every string exceed the budget: the traced peak of a call,
    besides its output, stays within twice the budget (it held every string's before)."""
    corpus, init, trans, stop = _random_batch(8, n_samples=2, n_states=40, n_strings=3000)
    want = forward_log_prob(init, trans, stop, corpus)
    budget = 64 * 40 * forward.MESSAGE_BYTES
    monkeypatch.setattr(forward, "_CHUNK_BYTES", budget)
    got, peak = traced_peak(forward_log_prob, init, trans, stop, corpus)
    assert corpus.n_strings * 40 * forward.MESSAGE_BYTES > 20 * budget
    assert peak - got.nbytes <= 2 * budget
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
