"""HPYP-smoothed n-grams (``--method hpyp``) against formulas by hand and exact enumeration."""

from __future__ import annotations

import argparse
import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.methods import get_method
from bayesfa.samplers.pdia._crf_kernel import log_eppf_py
from bayesfa.samplers.ngram.hpyp import context_tree, flat_symbols, per_sample_log_prob, sample_hpyp
from bayesfa.validation.ngram.hpyp import exact_predictive, hpyp_log_marginal, log_marginal


def options(**kw):
    parser = argparse.ArgumentParser()
    get_method("hpyp").add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(kw)
    return opts


def test_context_tree_of_a_bigram_and_the_unbounded_compressed_tree():
    # "ab", "bb": F = 0 1 2 0 2 2 0; contexts read backwards, cut at the previous end
    corpus = Corpus.from_strings([[0, 1], [1, 1]], 2)
    F, n_sym, first = flat_symbols(corpus, False)
    assert F.tolist() == [0, 1, 2, 0, 2, 2, 0] and n_sym == 3 and first == 1
    parent, depth, tok_node = context_tree(F, first, True, 1, compress=False)
    # bigram: the context is the previous symbol (0 at a string start)
    prev = F[:-1]
    assert np.all(depth[tok_node] == 1)
    assert len({int(n) for n in tok_node}) == len(set(prev.tolist()))
    for i, j in itertools.combinations(range(prev.size), 2):
        assert (tok_node[i] == tok_node[j]) == (prev[i] == prev[j])
    assert np.all(parent[tok_node] == 0)
    # unbounded, compressed: contexts "0", "10", "210", "0", "20", "220"
    parent, depth, tok_node = context_tree(F, first, True, None, compress=True)
    assert depth[tok_node].tolist() == [1, 2, 3, 1, 2, 3]
    assert tok_node[0] == tok_node[3]
    assert parent.size <= 2 * 6 + 1


def test_bigram_predictive_by_hand_one_customer_per_restaurant():
    """Train on "a" (bigram, S = 3: a, b, end). Every restaurant has one customer, so the
    seating is fixed: root tables a, end. Pr("b") = p(b | start) * p(end | b) with b folded
    in: p(b | start) = (th + d)/(th + 1) * (th + 2d)/(3 (th + 2)) and then
    p(end | b) = (1 - d + (th + 3d)/3) / (th + 3)."""
    d, th = 0.3, 0.7
    train = Corpus.from_strings([[0]], 2)
    test = Corpus.from_strings([[1]], 2)
    by_hand = (th + d) / (th + 1) * (th + 2 * d) / (3 * (th + 2)) * \
        (1 - d + (th + 3 * d) / 3) / (th + 3)
    assert math.exp(exact_predictive(train, test, 2, d, th)[0]) == pytest.approx(by_hand, rel=1e-12)
    fit = sample_hpyp(train, 2, iterations=30, burn_in=10, chains=2, seed=1, discount=d,
                      concentration=th)
    lp = per_sample_log_prob(fit.arrays, {"order": 2}, test)
    assert np.exp(lp) == pytest.approx(np.full(lp.shape, by_hand), rel=1e-12)


def _exact_table_posterior(d, th):
    """Bigram on "aaaa": restaurant "a" holds 3 customers of dish a (and one end). Enumerate
    every set partition of them and of the root's a-customers; posterior of their number
    of tables t from the log EPPF of each restaurant times G0 = 1/3 per root table."""
    def partitions(items):
        if not items:
            yield []
            return
        first, rest = items[0], items[1:]
        for p in partitions(rest):
            yield [[first]] + p
            for k in range(len(p)):
                yield p[:k] + [[first] + p[k]] + p[k + 1:]

    post = np.zeros(4)
    for pa in partitions([1, 2, 3]):
        sizes_a = [len(b) for b in pa] + [1]  # the end customer at its own table
        lw_a = log_eppf_py(np.array(sizes_a), len(sizes_a), th, d)
        # root: the start context's table (a), one customer per a-table of "a", the end table
        for pr in partitions(list(range(1 + len(pa)))):
            sizes_r = [len(b) for b in pr] + [1]
            lw = lw_a + log_eppf_py(np.array(sizes_r), len(sizes_r), th, d) \
                + len(sizes_r) * math.log(1 / 3)
            post[len(pa)] += math.exp(lw)
    return post[1:] / post.sum()


def test_gibbs_table_counts_match_exact_enumeration_of_seatings():
    """Chi-square test of the sampled t_{a,a} (3 customers) against the enumeration;
    4 chains x 4,000 draws thinned by 4 (autocorrelation below 0.2 here). False-alarm rate
    1e-3 (fixed seed)."""
    d, th = 0.5, 0.5
    exact = _exact_table_posterior(d, th)
    corpus = Corpus.from_strings([[0, 0, 0, 0]], 2)
    fit = sample_hpyp(corpus, 2, iterations=16_100, burn_in=100, period=4, chains=4, seed=7,
                      discount=d, concentration=th)
    F, n_sym, first = flat_symbols(corpus, False)
    parent, depth, tok_node = context_tree(F, first, True, 1, compress=False)
    node_a = tok_node[1]  # the context of the second a is "a"
    slot = [k for k in range(fit.arrays["slot_sym"].size)
            if fit.arrays["slot_sym"][k] == 1 and tok_node[fit.arrays["slot_tok"][k]] == node_a
            and fit.arrays["slot_up"][k] == 0]
    assert len(slot) == 1
    draws = fit.arrays["tables"][:, :, slot[0]].ravel()
    counts = np.bincount(draws, minlength=4)[1:]
    assert counts.sum() == draws.size
    p = stats.chisquare(counts, exact * draws.size).pvalue
    assert p > 1e-3, (counts / draws.size, exact)
    # and the exact marginal likelihood agrees with the enumeration's normaliser
    assert np.isfinite(hpyp_log_marginal(corpus, 2, d, th))


def test_predictive_matches_the_exact_trigram_predictive():
    """Trigram on three short strings, fixed d, theta: the sampler's mean predictive of every
    string up to length 2 within Bonferroni z* of the exact one (MCSE from arviz's ESS of the mean;
    false-alarm rate 1e-3)."""
    from bayesfa.validation import diagnostics

    train = Corpus.from_strings([[0, 1], [0, 0, 1], [1]], 2)
    test = Corpus.from_strings([[], [0], [1], [0, 1], [1, 1]], 2)
    ref = np.exp(exact_predictive(train, test, 3, 0.4, 1.0))
    fit = sample_hpyp(train, 3, iterations=2_100, burn_in=100, chains=4, seed=2, discount=0.4,
                      concentration=1.0)
    p = np.exp(per_sample_log_prob(fit.arrays, {"order": 3}, test))
    z_star = stats.norm.ppf(1 - 1e-3 / (2 * test.n_strings))
    for s in range(test.n_strings):
        mcse = diagnostics.mcse_mean(p[:, :, s])
        assert abs(p[:, :, s].mean() - ref[s]) <= z_star * mcse, s


def test_same_seed_same_result_sampled_hyperparameters_and_both_shapes():
    method = get_method("hpyp")
    corpus = Corpus.from_strings([[0, 1, 1, 0], [1, 0], [0, 0, 1]], 2)
    test = Corpus.from_strings([[0, 1], [1], [1, 1, 0]], 2)  # 3 strings, 2 chains: shapes apart
    for seq in (False, True):
        opts = options(order=3, iterations=60, burn_in=20, chains=2, sequence=seq)
        a = method.fit(corpus, opts, 4, False)
        b = method.fit(corpus, opts, 4, False)
        for key in a.arrays:
            assert np.array_equal(a.arrays[key], b.arrays[key]), key
        assert {"d_0", "d_2", "theta_1", "log_joint"} <= set(a.trace)
        d = a.trace["d_1"]
        assert np.all((d > 0) & (d < 1)) and np.unique(d).size > 1
        lp = method.predict_log_prob(a.arrays, opts, test)
        assert np.array_equal(lp, method.predict_log_prob(b.arrays, opts, test))
        assert np.all(lp < 0) and lp.shape == (3,)
        total = method.perplexity_log_prob(a.arrays, opts, test, continuation=seq)
        assert total < 0
        # one value per test symbol: the same pass, cut finer
        strings = per_sample_log_prob(a.arrays, opts, test, carry=True)
        # the log mean over the samples of each sample's total (issue 39: samples cut by
        # the chains' count, not the strings', lived while both were 2)
        assert strings.shape == (2, 40, 3)
        assert total == pytest.approx(
            np.log(np.exp(strings.reshape(-1, 3).sum(axis=1)).mean()), rel=1e-12)
        tokens = per_sample_log_prob(a.arrays, opts, test, per_token=True)
        assert tokens.shape[-1] == (test.n_letters if seq else test.n_tokens)
        assert tokens.sum(axis=-1) == pytest.approx(strings.sum(axis=-1), abs=1e-9)
        per_symbol = method.perplexity_log_prob(a.arrays, opts, test, continuation=seq,
                                                per_symbol=True)
        assert per_symbol == pytest.approx(
            np.log(np.exp(tokens).reshape(-1, tokens.shape[-1]).mean(axis=0)).sum(), rel=1e-12)
        if seq:  # a continuation: the strings' conditionals add up to the joint
            assert total == pytest.approx(lp.sum(), abs=1e-9)


@pytest.mark.parametrize("sequence", [False, True])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_the_next_symbols_probabilities_sum_to_one(sequence, order):
    """Each sample's predictive of the first test symbol sums to 1 over the symbols: the end
    and every letter (sentences: a one-letter string's first token, the empty string's end),
    every letter continuing the training sequence (sequence)."""
    method = get_method("hpyp")
    train = Corpus.from_strings([[0, 1, 1, 0], [1, 0], [0, 0, 1], []], 2)
    opts = options(order=order, iterations=30, burn_in=10, chains=2, sequence=sequence)
    fit = method.fit(train, opts, 4, False)
    firsts = [[0], [1]] + ([] if sequence else [[]])
    p = sum(np.exp(per_sample_log_prob(fit.arrays, opts, Corpus.from_strings([x], 2),
                                       carry=True, per_token=True)[..., 0]) for x in firsts)
    np.testing.assert_allclose(p, 1.0, atol=1e-12)


def test_sequence_predictive_is_the_exact_one_within_monte_carlo_error():
    """With ``d`` and ``theta`` fixed, the mean over 4,000 draws of each draw's predictive of
    the letter continuing the training sequence is ``p(train a) / p(train)`` of the exact
    marginal (:func:`~bayesfa.validation.ngram.hpyp.hpyp_log_marginal`, sequence shape), within
    5 standard errors of batch means (40 batches of 100 draws; a false failure about once in
    10^5 with a fixed seed, by Student's t with 39 degrees of freedom). Issue 39: the
    sequence's scoring tree built as if it began with an end symbol (``first = 1``) lived
    (``validate hpyp`` checks sentences); its predictive was 0.499 for 0.580, z = -227."""
    from bayesfa.validation.ngram.hpyp import hpyp_log_marginal

    method = get_method("hpyp")
    train = Corpus.from_strings([[0, 1, 1, 0], [1, 0], [0, 0, 1], []], 2)
    opts = options(order=3, iterations=2100, burn_in=100, period=1, chains=2, sequence=True,
                   discount=0.5, concentration=1.0)
    fit = method.fit(train, opts, 4, False)
    base = hpyp_log_marginal(train, 3, 0.5, 1.0, sequence=True)
    for a in (0, 1):
        both = Corpus.from_strings(train.strings() + [[a]], 2)
        exact = np.exp(hpyp_log_marginal(both, 3, 0.5, 1.0, sequence=True) - base)
        p = np.exp(per_sample_log_prob(fit.arrays, opts, Corpus.from_strings([[a]], 2),
                                       carry=True)[..., 0])
        assert p.shape == (2, 2000)
        batches = p.reshape(40, 100).mean(axis=1)
        se = batches.std(ddof=1) / np.sqrt(batches.size)
        assert abs(p.mean() - exact) <= 5 * se, (a, p.mean(), exact, se)


@pytest.mark.parametrize("method, extra", [("hpyp", ["--order", "2", "--iterations", "40",
                                                      "--burn-in", "10"]),
                                           ("memoizer", [])])
def test_cli_fit_predict_perplexity(tmp_path, method, extra):
    train = tmp_path / "train.txt"
    train.write_text("ab ba\nabab\nbaa\naab\n")
    test = tmp_path / "test.txt"
    test.write_text("ab\nbba\n")
    run = tmp_path / "run"
    assert main(["fit", str(train), "--format", "lines", "--method", method, *extra,
                 "--seed", "3", "--out", str(run), "--quiet"]) == 0
    assert main(["predict", str(run), str(test), "--format", "lines", "--out",
                 str(tmp_path / "pred.txt")]) == 0
    assert main(["perplexity", str(run), str(test), "--format", "lines", "--json"]) == 0
    assert json.loads((run / "manifest.json").read_text())["method"] == method


@pytest.mark.slow
def test_validate_passes_and_the_mutant_fails():
    from bayesfa.validation.harness import validate

    assert validate("hpyp", "tiny").passed
    assert not validate("hpyp:mutant-no-join-discount", "tiny").passed


def test_predictive_is_normalised():
    """Per sample: a sequence's next letter has probabilities summing to 1 (exactly: no
    seating happens before the first test symbol is predicted); sentences: the strings up to
    length 2 have total probability below 1 and the empty string a positive one."""
    corpus = Corpus.from_strings([[0, 1, 2], [1]], 3)
    for seq in (True, False):
        fit = sample_hpyp(corpus, 3, iterations=12, burn_in=2, seed=0, sequence=seq)
        if seq:
            # the strings of a sequence continue one another: score each letter alone
            p = np.stack([np.exp(per_sample_log_prob(
                fit.arrays, {"order": 3, "sequence": True},
                Corpus.from_strings([[a]], 3)))[..., 0] for a in range(3)], axis=-1)
            assert p.sum(axis=-1) == pytest.approx(np.ones(p.shape[:2]), abs=1e-12)
        else:
            strings = Corpus.from_strings([[]] + [[a] for a in range(3)]
                                          + [[a, b] for a in range(3) for b in range(3)], 3)
            p = np.exp(per_sample_log_prob(fit.arrays, {"order": 3}, strings))
            assert np.all(p.sum(axis=-1) < 1.0) and np.all(p[..., 0] > 0)


def test_auxiliary_variable_updates_match_the_posterior_by_quadrature():
    """Unigram (one restaurant) on a few strings: the sampled d (theta fixed) and theta
    (d fixed) against their exact posterior means, prior x exact marginal likelihood on a
    grid (Beta(1, 1) on d, Gamma(1, 1) on theta). z-test with arviz's MCSE, false-alarm rate
    1e-3 each (fixed seed)."""
    from scipy import integrate

    from bayesfa.validation import diagnostics

    corpus = Corpus.from_strings([[0, 0, 1], [0], [1, 0, 0, 0]], 2)
    z_star = stats.norm.ppf(1 - 1e-3 / 2)
    F, n_sym, first = flat_symbols(corpus, False)
    parent, _, tok_node = context_tree(F, first, True, 0, compress=False)
    assert parent.size == 1  # the root only

    def lml(d, th):
        return log_marginal(parent, np.array([d]), np.array([th]), tok_node,
                            F[first:].astype(np.int64), n_sym)

    assert lml(0.3, 1.0) == pytest.approx(hpyp_log_marginal(corpus, 1, 0.3, 1.0), rel=1e-12)
    grid_d = np.linspace(0.0005, 0.9995, 300)
    w_d = np.exp([lml(d, 1.0) for d in grid_d])
    mean_d = integrate.trapezoid(grid_d * w_d, grid_d) / integrate.trapezoid(w_d, grid_d)
    grid_t = np.linspace(0.001, 40.0, 600)
    w_t = np.exp([lml(0.3, th) for th in grid_t]) * np.exp(-grid_t)
    mean_t = integrate.trapezoid(grid_t * w_t, grid_t) / integrate.trapezoid(w_t, grid_t)
    fit = sample_hpyp(corpus, 1, iterations=3_100, burn_in=100, chains=4, seed=11,
                      concentration=1.0)
    d = fit.trace["d_0"]
    assert abs(d.mean() - mean_d) <= z_star * diagnostics.mcse_mean(d), (d.mean(), mean_d)
    fit = sample_hpyp(corpus, 1, iterations=3_100, burn_in=100, chains=4, seed=12, discount=0.3)
    th = fit.trace["theta_0"]
    assert abs(th.mean() - mean_t) <= z_star * diagnostics.mcse_mean(th), (th.mean(), mean_t)


def test_scoring_sentences_undoes_its_seatings_exactly():
    """Scoring with ``reset`` seats each test string's symbols as they are read and takes
    them back after the string: the counts are those of the training data again; without
    ``reset`` they hold every test symbol too."""
    from bayesfa.samplers.ngram._hpyp_kernel import node_levels, score_tokens

    corpus = Corpus.from_strings([[0, 1, 1], [1, 0], [0, 0, 1, 0], [1, 1, 1]], 2)
    F, n_sym, first = flat_symbols(corpus, False)
    parent, depth, tok_node = context_tree(F, first, True, 2, compress=False)
    tok_sym = F[first:].astype(np.int64)
    n = parent.size
    nd, nth = np.full(n, 0.4), np.full(n, 0.8)
    c, t = np.zeros((n, n_sym), np.int32), np.zeros((n, n_sym), np.int32)
    cs, ts = np.zeros(n, np.int32), np.zeros(n, np.int32)
    path_len = int(node_levels(parent).max()) + 2
    rng = np.random.default_rng(0)
    n_train = int(corpus.offsets[2])  # the first two strings train, the others are the test
    offsets = corpus.offsets[2:] - n_train
    score_tokens(rng, tok_node, tok_sym, 0, np.array([0, n_train]), False, parent, nd, nth, c, t,
                 cs, ts, 1 / n_sym, path_len, np.zeros(1))
    before = [a.copy() for a in (c, t, cs, ts)]
    out = np.zeros(2)
    score_tokens(rng, tok_node, tok_sym, n_train, offsets, True, parent, nd, nth, c, t, cs, ts,
                 1 / n_sym, path_len, out)
    for a, b in zip((c, t, cs, ts), before):
        assert np.array_equal(a, b)
    assert np.all(out < 0)
    score_tokens(rng, tok_node, tok_sym, n_train, offsets, False, parent, nd, nth, c, t, cs, ts,
                 1 / n_sym, path_len, out)
    assert cs[0] > before[2][0] and c.sum() > before[0].sum()
    assert np.all(t <= c) and np.all((t > 0) == (c > 0))


@pytest.mark.parametrize("order", [2, 3, 5])
def test_memory_estimate_covers_the_chain_state_the_tree_and_the_draws(order, monkeypatch):
    """``estimate_memory`` is at least the bytes a fit holds: one chain's state (``c, t, cs,
    ts, sizes`` and the hyperparameters) and the context tree, both measured as the chain
    runs, and the stored draws (the fit's arrays); on a toy and on 200 random strings of four
    letters, and on three letters. (A slip in the state's term, issue 39's survivor ``+`` ->
    ``>>`` on line 817, left the draws alone: short by the state and tree, it fails; one that
    drops the draws' hyperparameters and log joint, ``16 * order + 8`` -> ``16 * order % 8``,
    fails the many-draws case.)"""
    from bayesfa.samplers.ngram import hpyp
    from bayesfa.validation.toys import get_toy

    method, seen, inner = get_method("hpyp"), {}, hpyp._run_chain

    def spy(tree, arrays, *args, **kw):
        seen["state"] = sum(getattr(arrays, f).nbytes
                            for f in ("c", "t", "cs", "ts", "sizes", "disc", "conc"))
        seen["tree"] = sum(x.nbytes for x in tree)
        return inner(tree, arrays, *args, **kw)

    monkeypatch.setattr(hpyp, "_run_chain", spy)
    rng = np.random.default_rng(0)
    randoms = Corpus.from_strings([list(rng.integers(0, 4, size=rng.integers(0, 15)))
                                   for _ in range(200)], 4)
    # three letters, every pair of them and the ends (an odd alphabet: issue 39's survivor
    # ``A | 1`` for ``A + 1`` symbols bounds the slots by 4 x 3 where 20 are used, order 2)
    odd = Corpus.from_strings([[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0],
                               [0, 0], [1, 1], [2, 2], []], 3)
    # the last cases: many draws of a toy, so the draws' term dominates the estimate
    for corpus, iterations, period in ((get_toy("tiny").train, 12, 2), (randoms, 12, 2),
                                       (get_toy("tiny").train, 1504, 1), (odd, 1504, 1)):
        opts = options(iterations=iterations, burn_in=4, period=period, chains=2, order=order,
                       holdout=0.0)
        fit = method.fit(corpus, opts, 0, False)
        held = seen["state"] + seen["tree"] + sum(
            v.nbytes for v in fit.arrays.values() if isinstance(v, np.ndarray))
        assert method.estimate_memory(corpus, opts) >= held, (corpus.n_tokens, seen, held)


@pytest.mark.parametrize("letters, n_strings, order", [(2, 3000, 2), (2, 3000, 5), (20, 200, 3),
                                                     (4, 200, 3)])
def test_memory_estimate_covers_a_fits_traced_peak(letters, n_strings, order):
    """``estimate_memory`` is at least the peak bytes ``tracemalloc`` sees in a fit (numpy's
    and numba's arrays both: numba allocates through numpy's allocator), on random strings of
    0-14 letters, and at most twice it; measured 1.07-1.66 at this test's commit (issue 39: a
    per-draw term 256 times too large, ``<< 8`` for ``+ 8``, lived). With ``8 order + 128``
    bytes a symbol the estimate was 0.68-0.86 of the peak on most fits of a grid (the
    ``estimate_memory`` docstring), and a mutant subtracting the tokens from the tree's
    term instead of multiplying passed every test."""
    from conftest import traced_peak

    rng = np.random.default_rng(0)
    corpus = Corpus.from_strings([list(rng.integers(0, letters, size=rng.integers(0, 15)))
                                  for _ in range(n_strings)], letters)
    method = get_method("hpyp")
    opts = options(iterations=12, burn_in=4, period=2, chains=2, order=order, holdout=0.0)
    method.fit(corpus, opts, 0, False)  # numba's and numpy's first-call allocations
    _, peak = traced_peak(method.fit, corpus, opts, 0, False)
    estimate = method.estimate_memory(corpus, opts)
    assert peak <= estimate <= 2 * peak, (peak, estimate, estimate / peak)


@pytest.mark.parametrize("sequence", [False, True])
def test_flat_size_is_the_size_of_flat_symbols(sequence):
    """``flat_size`` (the memory estimates' count of symbols) is the size of ``flat_symbols``'
    array, on strings that include empty ones."""
    from bayesfa.samplers.ngram.hpyp import flat_size

    rng = np.random.default_rng(3)
    for n in (1, 2, 40):
        corpus = Corpus.from_strings([list(rng.integers(0, 3, size=rng.integers(0, 6)))
                                      for _ in range(n)] + [[1]], 3)
        assert flat_size(corpus, sequence) == flat_symbols(corpus, sequence)[0].size


@pytest.mark.parametrize("compress", [False, True])
def test_trie_capacity_bounds_the_trie_and_is_reached(compress):
    """``trie_capacity`` is the size of ``build_trie``'s arrays: no trie of random sorted
    strings has more nodes, and strings with no common first symbol (every prefix a node) or
    each splitting the edge to the one before it (path compression) reach it exactly, as does
    the root alone (no strings). The kernel writes its arrays without a
    bounds check, so a capacity one short would write past them."""
    from bayesfa.samplers.ngram._hpyp_kernel import build_trie
    from bayesfa.samplers.ngram.hpyp import trie_capacity

    def nodes(strings):
        strings = sorted(strings)
        lens = np.array([len(x) for x in strings], dtype=np.int64)
        lcps = np.array([0] + [next((k for k, (a, b) in enumerate(zip(x, y)) if a != b),
                                    min(len(x), len(y))) for x, y in zip(strings, strings[1:])],
                        dtype=np.int64)[:len(strings)]
        cap = trie_capacity(len(strings), int(lens.sum()), compress)
        return build_trie(lens, lcps, compress, cap)[2], cap

    rng = np.random.default_rng(4)
    for _ in range(200):
        got, cap = nodes([tuple(rng.integers(0, 3, size=rng.integers(0, 6)))
                          for _ in range(rng.integers(1, 12))])
        assert got <= cap
    assert nodes([]) == (1, 1)
    assert nodes([()])[0] == 1
    if compress:  # each string's common prefix with the one before ends inside an edge
        tight = [(0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 1), (0, 1)]
    else:
        tight = [(0, 1, 1), (1,), (2, 0, 0, 2)]
    got, cap = nodes(tight)
    assert got == cap, (got, cap)


def test_sampled_strings_may_reach_max_length_but_not_exceed_it():
    """``ContextPredictive.draw(max_length=m)``: a string of exactly ``m`` letters is drawn
    as it is (the same Generator state gives the same string), one of ``m + 1`` is refused."""
    from bayesfa.errors import InputError
    from bayesfa.samplers.ngram.hpyp import ContextPredictive

    method = get_method("hpyp")
    corpus = Corpus.from_strings([[0, 1, 1, 0], [1, 1], [0, 0, 0, 1, 1]], 2)
    opts = options(iterations=6, burn_in=2, period=2, chains=1, order=2, holdout=0.0)
    fit = method.fit(corpus, opts, 0, False)
    predictive = ContextPredictive.of_hpyp(fit.arrays, opts)
    for seed in range(50):
        (s,) = predictive.draw(1, np.random.default_rng(seed))
        if len(s) >= 2:
            break
    assert len(s) >= 2
    assert predictive.draw(1, np.random.default_rng(seed), max_length=len(s)) == [s]
    with pytest.raises(InputError, match=f"exceeds {len(s) - 1} symbols"):
        predictive.draw(1, np.random.default_rng(seed), max_length=len(s) - 1)


def test_a_draw_at_the_top_of_the_unit_interval_is_the_last_letter():
    """``ContextPredictive.draw`` inverts the cumulative predictive at ``u * sum(p)``; where that
    rounds to ``sum(p)`` itself (``u`` at the top of [0, 1)), ``searchsorted`` is past the last
    symbol and the draw is clamped to the last letter, never a letter outside the alphabet
    (issue 39: a mutant clamping to ``n_sym`` instead of ``n_sym - 1`` passed every test). A
    Generator whose ``random`` gives 1.0 draws only the last letter, up to ``max_length``."""
    from bayesfa.errors import InputError
    from bayesfa.samplers.ngram.hpyp import ContextPredictive

    class Top:
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def integers(self, *args, **kw):
            return self.rng.integers(*args, **kw)

        def random(self):
            return 1.0

    method = get_method("hpyp")
    corpus = Corpus.from_strings([[0, 1, 1, 0], [1, 1], [0, 0, 0, 1, 1]], 2)
    opts = options(iterations=6, burn_in=2, period=2, chains=1, order=2, holdout=0.0)
    predictive = ContextPredictive.of_hpyp(method.fit(corpus, opts, 0, False).arrays, opts)
    seen = []
    real = predictive.next_probs

    def spy(seat, context):
        seen.append(list(context))
        return real(seat, context)

    predictive.next_probs = spy
    with pytest.raises(InputError, match="exceeds 3 symbols"):
        predictive.draw(1, Top(), max_length=3)
    # the context after three draws, each the last letter (symbol 2: letter 1)
    assert seen[-1] == [0, 2, 2, 2]


@pytest.mark.parametrize("order, letters", [(2, 4), (3, 20)])
def test_node_bytes_is_twice_a_chains_arrays_a_node_and_symbol(order, letters, monkeypatch):
    """``node_bytes``, the estimate's restaurants term, at a fit's own number of nodes is twice
    the bytes a chain holds per node and symbol: ``c`` and ``t`` and the context tree's ``[nodes,
    S]`` table, read from the arrays the chain runs on (issue 39: that term multiplied by 8 or
    divided by 32 passed every test, the per-symbol term covering the peak either way)."""
    from bayesfa.samplers.ngram import hpyp

    seen, inner = {}, hpyp._run_chain

    def spy(tree, arrays, *args, **kw):
        n_nodes, n_sym = arrays.c.shape
        table = [x for x in tree if x.shape == (n_nodes, n_sym)]
        seen.update(n_nodes=n_nodes, n_sym=n_sym,
                    held=arrays.c.nbytes + arrays.t.nbytes + sum(x.nbytes for x in table))
        return inner(tree, arrays, *args, **kw)

    monkeypatch.setattr(hpyp, "_run_chain", spy)
    rng = np.random.default_rng(1)
    corpus = Corpus.from_strings([list(rng.integers(0, letters, size=rng.integers(0, 15)))
                                  for _ in range(200)], letters)
    get_method("hpyp").fit(corpus, options(iterations=4, burn_in=2, period=1, chains=1,
                                           order=order, holdout=0.0), 0, False)
    assert seen["held"] == 16 * seen["n_nodes"] * seen["n_sym"]
    assert hpyp.node_bytes(seen["n_nodes"], seen["n_sym"]) == 2 * seen["held"]


def test_discount_zero_with_the_concentration_sampled():
    """``--discount 0`` (allowed: ``[0, 1)``) with the concentrations sampled, the hierarchical
    Dirichlet case: the auxiliary update of Teh 2006, App. C draws ``z_uwkj ~ Bern((j - 1) /
    (j - d))`` for ``j = 1 .. c_uwk - 1`` only, which at ``d = 0`` is ``(j - 1) / j``; the
    chain runs, keeps every discount at exactly 0 and moves the concentrations."""
    corpus = Corpus.from_strings([[0, 0, 1, 0], [0, 0, 0], [1, 1, 0, 1], [0, 1]], 2)
    fit = sample_hpyp(corpus, 2, iterations=40, burn_in=10, chains=2, seed=4, discount=0.0)
    disc, conc = np.asarray(fit.arrays["disc"]), np.asarray(fit.arrays["conc"])
    assert np.all(disc == 0.0)
    assert np.all(np.isfinite(conc)) and np.all(conc > 0.0)
    assert np.unique(conc).size > 10  # sampled, not held at the start


def test_lcp_array_is_the_longest_common_prefix_of_neighbouring_suffixes():
    """Kasai's ``lcp_kasai`` against the common prefixes counted by hand, on random strings
    over 1-3 symbols (long runs of one symbol included) sorted by ``suffix_array``: ``lcp[0]``
    is 0 (the first suffix has no neighbour before it) and every other entry the prefix it
    shares with the suffix before it (issue 39: the first suffix compared with the last,
    ``rank >= 0``, lived)."""
    from bayesfa.samplers.ngram._hpyp_kernel import lcp_kasai
    from bayesfa.samplers.ngram.hpyp import suffix_array

    rng = np.random.default_rng(11)
    for n, k in [(1, 1), (7, 1), (30, 2), (50, 3), (200, 2)]:
        r = rng.integers(0, k, size=n).astype(np.int64)
        sa = suffix_array(r)
        got = lcp_kasai(r, sa)
        want = [0] + [next((m for m, (a, b) in enumerate(zip(r[sa[i - 1]:], r[sa[i]:]))
                            if a != b), min(n - sa[i - 1], n - sa[i])) for i in range(1, n)]
        np.testing.assert_array_equal(got, want, err_msg=str((n, k)))


def test_the_seating_and_record_mutants_change_their_own_part():
    """With ``d`` and ``theta`` fixed, the seating mutant (``no-join-discount``, a kernel
    ``variant``) draws other seatings than the method, and the record mutant
    (``log-joint-root-base``) the same seatings bit for bit with another log joint (issue 39:
    the seating slip keyed to variant 2 for 1 lived, making the seating mutant a second run of
    the method; the hyperparameter mutants have their exact conditional check)."""
    from bayesfa.samplers.ngram import hpyp
    from bayesfa.validation.ngram.hpyp import MUTANTS

    rng = np.random.default_rng(0)
    corpus = Corpus.from_strings([rng.integers(0, 3, size=rng.integers(0, 9)).tolist()
                                  for _ in range(12)], 3)

    def fit(variant):
        return hpyp.sample_hpyp(corpus, 3, variant=variant, iterations=30, burn_in=10,
                                chains=1, seed=2, discount=0.3, concentration=0.8).arrays

    method = fit(0)
    seating, record = fit(MUTANTS["no-join-discount"]), fit(MUTANTS["log-joint-root-base"])
    assert not np.array_equal(seating["tables"], method["tables"])
    assert np.array_equal(record["tables"], method["tables"])
    assert not np.array_equal(record["log_joint"], method["log_joint"])


def test_moved_counts_only_customers_reseated_elsewhere():
    """The sampler statistic ``moved`` (the fraction of data customers seated at another table
    than the one they left): with every customer alone with its dish in its restaurant, a
    customer's only table is the one it leaves, so nobody moves and every draw records 0
    (issue 39: the count starting at 1 each sweep lived)."""
    from bayesfa.samplers.ngram import hpyp

    corpus = Corpus.from_strings([[0, 1]], 2)  # order 1: a, b and the end, one each at the root
    fit = hpyp.sample_hpyp(corpus, 1, iterations=12, burn_in=2, chains=2, seed=0)
    assert fit.trace["moved"].shape == (2, 10) and not fit.trace["moved"].any()
    # and it counts: customers of one dish move between tables, in every draw's five sweeps
    # (ten draws, more than the two recorded table slots: issue 39's ``draw < out_t.shape[1]``,
    # the slots for the draws, lived and left the later draws at 0)
    busy = hpyp.sample_hpyp(Corpus.from_strings([[0, 0, 0, 0]], 1), 1, iterations=52,
                            burn_in=0, period=5, chains=1, seed=0, discount=0.5,
                            concentration=1.0)
    assert busy.arrays["slot_sym"].size < 10 and busy.trace["moved"].shape == (1, 10)
    assert busy.trace["moved"].all()
    # customers leaving table 0 of their dish and sitting at it again do not move: with d = 0
    # and theta = 1e-12 every dish has one table (a new one has odds 1e-12), so each customer
    # leaves table 0 of several customers and joins it again (issue 39: the case ``left >= 0``
    # read as ``left != 0``, which counted those as moves, lived)
    one = hpyp.sample_hpyp(Corpus.from_strings([[0, 0, 1, 0], [1, 1, 0]], 2), 1, iterations=12,
                           burn_in=2, chains=1, seed=0, discount=0.0, concentration=1e-12)
    assert not one.trace["moved"].any()


def test_node_levels_count_every_nodes_ancestors():
    """``node_levels`` against ancestors counted by walking up, on random trees whose nodes are
    numbered out of tree order (a parent after its child) and on a chain of 40 nodes numbered
    from the leaf (issue 39: a loop over the walked-up stack by steps of 2 lived; the nodes it
    skipped took a level from an unset parent)."""
    from bayesfa.samplers.ngram._hpyp_kernel import node_levels

    rng = np.random.default_rng(5)
    trees = [np.array([0] + list(range(2, 41)) + [0])]  # node u's parent is u + 1; 40's is 0
    for n in (2, 9, 60):
        order = np.concatenate([[0], 1 + rng.permutation(n - 1)])  # order[k]: k-th node made
        parent = np.zeros(n, dtype=np.int64)
        for k in range(1, n):
            parent[order[k]] = order[rng.integers(0, k)]
        trees.append(parent)
    for parent in trees:
        parent = np.asarray(parent, dtype=np.int64)
        want = []
        for u in range(parent.size):
            levels, v = 0, u
            while v != 0:
                v, levels = parent[v], levels + 1
            want.append(levels)
        np.testing.assert_array_equal(node_levels(parent), want)


def test_each_hyper_mutant_slips_only_where_it_is_named():
    """``sample_hyper``'s validation mutants are each one slip (issue 39: mutants 3 and 4 also
    drew ``x_u ~ Beta(theta, .)``, mutant 2's slip, and every check still failed them). One
    restaurant of five customers at one table: mutant 3's ``y`` loop (``i < t_u.``) and mutant
    4's two-customer case do not arise, so from one seed each draws exactly the model's
    ``(d, theta)``; mutant 2, whose slip does arise, another ``theta``."""
    from bayesfa.samplers.ngram._hpyp_kernel import sample_hyper

    def move(variant):
        disc, conc = np.array([0.3]), np.array([1.5])
        sample_hyper(np.random.default_rng(5), np.array([0], dtype=np.int64),
                     np.array([[5, 0]], dtype=np.int32), np.array([[1, 0]], dtype=np.int32),
                     np.array([5], dtype=np.int32), np.array([1], dtype=np.int32),
                     np.array([5], dtype=np.int32), np.zeros((1, 2), dtype=np.int64), disc,
                     conc, np.zeros(1, dtype=np.bool_), np.zeros(1, dtype=np.bool_),
                     np.ones(4), variant)
        return disc[0], conc[0]

    model = move(0)
    assert move(3) == model and move(4) == model and move(1) == model
    assert move(2)[1] != model[1]
