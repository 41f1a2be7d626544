"""``--method hmm-em``: an HMM trained by Baum-Welch (hmmlearn's CategoricalHMM), scored with
bayesfa.forward."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob
from bayesfa.methods import get_method
from bayesfa.learners import hmm_em


def options(*argv):
    parser = argparse.ArgumentParser()
    get_method("hmm-em").add_arguments(parser)
    return vars(parser.parse_args(list(argv)))


def corpus(seed=0, n=40):
    """Strings of a 2-state source over 3 letters: runs of letter 0 then runs of 1 / 2."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.integers(1, 9))
        state, s = 0, []
        for _ in range(length):
            s.append(0 if state == 0 else int(rng.integers(1, 3)))
            state = state if rng.random() < 0.7 else 1 - state
        out.append(s)
    return Corpus.from_strings(out, 3)


@pytest.mark.parametrize("sequence", [False, True])
def test_fitted_log_likelihood_equals_forward(sequence):
    """hmmlearn's log-likelihood of the training data under the fitted parameters equals
    bayesfa.forward's on the same parameters (sentences: the end of a string is symbol 0;
    sequence: one string of letters, stop = 1), and the run keeps the best restart."""
    train = corpus()
    opts = options("--states", "3", "--restarts", "3", "--n-iter", "30",
                   *(["--sequence"] if sequence else []))
    fit = get_method("hmm-em").fit(train, opts, 7, False)
    a = fit.arrays
    init, trans, stop = hmm_em.to_pfa(a["startprob"], a["transmat"], a["emissionprob"], sequence)
    seq = (Corpus.from_strings([train.tokens[train.tokens != 0] - 1], 3) if sequence else train)
    ours = forward_log_prob(init, trans, stop, seq).sum()
    assert ours == pytest.approx(fit.info["train_log_likelihood"], rel=1e-10)
    lls = [r["log_likelihood"] for r in fit.info["restarts"]]
    assert fit.info["train_log_likelihood"] == max(lls) and len(lls) == 3
    if not sequence:  # a distribution over strings: the predictive is forward's
        test = corpus(seed=1, n=5)
        assert np.allclose(get_method("hmm-em").predict_log_prob(a, opts, test),
                           forward_log_prob(init, trans, stop, test), rtol=1e-12)


def test_em_never_decreases_the_likelihood():
    """Maximum likelihood (--pseudo-count 0): every Baum-Welch step raises the log-likelihood
    (up to rounding), from each of three random starts."""
    train = corpus(seed=2)
    x, lengths, n_features = hmm_em.symbols(train, False)
    for start in range(3):
        model = hmm_em.new_model(4, n_features, options("--pseudo-count", "0", "--n-iter", "40",
                                                        "--tol", "1e-12"), start)
        model.fit(x, lengths)
        history = np.asarray(model.monitor_.history)
        assert history.size > 5
        assert np.all(np.diff(history) >= -1e-9 * abs(history[-1]))
        assert history[-1] > history[0]


def test_same_seed_same_result():
    train = corpus(seed=3)
    opts = options("--states", "3", "--restarts", "2", "--n-iter", "20")
    method = get_method("hmm-em")
    one, two, other = (method.fit(train, opts, s, False) for s in (5, 5, 6))
    for key in one.arrays:
        assert np.array_equal(one.arrays[key], two.arrays[key]), key
    assert not np.array_equal(one.arrays["emissionprob"], other.arrays["emissionprob"])
    assert method.estimate_memory(train, opts) > 0


def test_numpy_shape_deprecation_is_silenced_for_hmmlearn_utils_only():
    """pyproject's filterwarnings drops NumPy 2.5's ``a.shape = ...`` DeprecationWarning raised
    in ``hmmlearn.utils`` (thousands per EM fit on Python 3.12 CI), and nothing else: the same
    message from another module, and another DeprecationWarning from hmmlearn.utils, still
    show."""
    import warnings

    msg = ("Setting the shape on a NumPy array has been deprecated in NumPy 2.5.\n"
           "As an alternative, you can create a new view using np.reshape (with copy=False if "
           "needed).")
    with warnings.catch_warnings(record=True) as seen:
        warnings.warn_explicit(msg, DeprecationWarning, "utils.py", 27, module="hmmlearn.utils")
        warnings.warn_explicit(msg, DeprecationWarning, "forward.py", 1, module="bayesfa.forward")
        warnings.warn_explicit("another deprecation", DeprecationWarning, "utils.py", 30,
                               module="hmmlearn.utils")
    assert [(w.filename, str(w.message)[:7]) for w in seen] == [("forward.py", "Setting"),
                                                                ("utils.py", "another")]


def test_validation_forward_reference_equals_enumeration():
    """The sequence-predictive reference of ``validate hmm-em`` (its own scaled forward pass)
    equals brute-force enumeration of every state path on random parameters: ``log p(piece_s |
    pieces before)`` as differences of enumerated log-likelihoods of the concatenation."""
    from bayesfa.validation.learners.hmm_em import forward_log_likelihoods, path_probs

    rng = np.random.default_rng(4)
    k, n_sym = 3, 2
    pi = rng.dirichlet(np.ones(k))
    trans = rng.dirichlet(np.ones(k), size=k)
    emit = rng.dirichlet(np.ones(n_sym), size=k)
    pieces = [[0, 1, 1], [], [1], [0, 0, 1, 0]]
    got = forward_log_likelihoods(pi, trans, emit, pieces)
    seq, cum = [], [0.0]
    for piece in pieces:
        seq = seq + piece
        cum.append(float(np.log(path_probs(seq, pi, trans, emit)[1].sum())) if seq else 0.0)
    np.testing.assert_allclose(got, np.diff(cum), rtol=1e-12, atol=1e-12)


def test_letters_only_perplexity_is_each_strings_prefix_probability():
    """``perplexity_log_prob(letters_only=True)`` (sentences) is the sum over the test
    strings of ``log pi M(x_1) ... M(x_n) 1``, here by explicit matrix products; a test
    alphabet larger than the model's is refused with the model's letter count."""
    from bayesfa.errors import InputError

    train = corpus(seed=5)
    opts = options("--states", "2", "--restarts", "1", "--n-iter", "10")
    method = get_method("hmm-em")
    a = method.fit(train, opts, 1, False).arrays
    test = corpus(seed=6, n=6)
    pi, t, e = (np.asarray(a[k]) for k in ("startprob", "transmat", "emissionprob"))
    want = 0.0
    for s in test.strings():
        v = pi.copy()
        for letter in s:  # emit from the current state (column letter + 1; 0 is the end), move
            v = (v * e[:, letter + 1]) @ t
        want += np.log(v.sum())
    got = method.perplexity_log_prob(a, opts, test, continuation=False, letters_only=True)
    assert got == pytest.approx(want, rel=1e-12)
    wide = Corpus.from_strings([[0, 3]], 4)
    with pytest.raises(InputError, match="the strings use 4 letters, the model was trained on 3"):
        method.perplexity_log_prob(a, opts, wide, continuation=False, letters_only=True)


def test_restart_summaries_of_one_iteration_and_of_many():
    """A restart of one EM iteration reports largest_decrease 0 (no step to compare); a long
    run, whose Baum-Welch steps all raise the likelihood, reports 0 too, never a negative
    'decrease' (its last steps are far below one nat)."""
    train = corpus(seed=7)
    method = get_method("hmm-em")
    one = method.fit(train, options("--states", "2", "--restarts", "2", "--n-iter", "1"), 3, False)
    assert [r["iterations"] for r in one.info["restarts"]] == [1, 1]
    assert [r["largest_decrease"] for r in one.info["restarts"]] == [0.0, 0.0]
    many = method.fit(train, options("--states", "3", "--restarts", "1", "--n-iter", "60",
                                     "--pseudo-count", "0", "--tol", "1e-12"), 3, False)
    history = many.trace["log_lik"][0]
    steps = np.diff(history)
    assert history.size > 10 and steps.min() > -1e-9 and abs(steps).min() < 1.0
    assert many.info["restarts"][0]["largest_decrease"] == max(0.0, float(-steps.min()))
    assert many.info["restarts"][0]["largest_decrease"] >= 0.0


@pytest.mark.parametrize("text, ok", [("0", True), ("0.5", True), ("3", True), ("-0.1", False),
                                      ("nan", False), ("inf", False)])
def test_pseudo_count_is_a_finite_non_negative_number(text, ok):
    if ok:
        assert options("--pseudo-count", text)["pseudo_count"] == float(text)
    else:
        with pytest.raises(SystemExit):
            options("--pseudo-count", text)


def test_a_sequence_without_letters_is_refused():
    """``--sequence`` over strings that are all empty has no symbol to train on: a clear
    error, not an hmmlearn traceback."""
    from bayesfa.errors import InputError

    empty = Corpus.from_strings([[], [], []], 3)
    with pytest.raises(InputError, match="no symbol"):
        get_method("hmm-em").fit(empty, options("--states", "2", "--sequence"), 0, False)


def test_only_the_carry_mutant_changes_the_sequence_carry():
    """``next_state`` (the state distribution a test sequence starts from) is the last
    posterior times the transitions for the method and for every named mutant but
    ``carry-without-transition``; with one restart the likelihood mutant fits the same model."""
    from bayesfa.validation.harness import variant_method

    train = corpus(seed=8)
    opts = options("--states", "3", "--restarts", "1", "--n-iter", "15", "--sequence")
    base = get_method("hmm-em").fit(train, opts, 2, False).arrays
    trace = variant_method("hmm-em", hmm_em.METHOD,
                           hmm_em.MUTATIONS["likelihood-from-trace"]).fit(train, opts, 2, False)
    np.testing.assert_array_equal(trace.arrays["transmat"], base["transmat"])
    np.testing.assert_array_equal(trace.arrays["next_state"], base["next_state"])
    carry = variant_method("hmm-em", hmm_em.METHOD,
                           hmm_em.MUTATIONS["carry-without-transition"]).fit(train, opts, 2, False)
    np.testing.assert_allclose(carry.arrays["next_state"] @ base["transmat"], base["next_state"],
                               rtol=1e-12)
    assert not np.allclose(carry.arrays["next_state"], base["next_state"])


def test_memory_estimate_covers_the_models_tables_for_a_wide_alphabet():
    """With few tokens and many letters the ``[K, S]`` tables dominate: the estimate holds at
    least four of them (hmmlearn's emission probabilities, their log, the statistics and the
    prior) and of the ``[K, K]`` ones, and the longest string's six lattices beside them."""
    wide = Corpus.from_strings([[999], [0]], 1000)
    method = get_method("hmm-em")
    opts = options("--states", "2")
    k, s = 2, 1001
    assert method.estimate_memory(wide, opts) >= 4 * 8 * k * (k + s)
    # the tables and the frames are held at once: the estimate covers their sum
    assert method.estimate_memory(wide, opts) >= 4 * 8 * k * (k + s) + 6 * 8 * 2 * k


@pytest.mark.parametrize("states, letters, sequence, n, longest", [
    (4, 2, False, 5000, 20), (16, 3, False, 3000, 20), (4, 2, True, 5000, 20),
    (8, 20, True, 3000, 20), (100, 3, False, 400, 6), (20, 1000, False, 500, 6)])
def test_memory_estimate_is_within_half_again_of_a_fits_traced_peak(states, letters, sequence, n,
                                                                    longest):
    """``estimate_memory`` is at least the peak bytes of a fit and at most 1.5 times it. hmmlearn's
    arrays are numpy's, so ``tracemalloc`` sees them (:func:`conftest.traced_peak`). ``n``
    random strings of fewer than ``longest`` letters: many tokens (~30,000-52,000), where the
    frames and lattices lead; many states on few strings, where the ``[K, K]`` tables do; and
    1,000 letters, where the ``[K, S]`` ones do. Issue 39: the estimate's lattices were ``[T,
    K]`` for sentences too, 8-30 times the peak (hmmlearn runs one string at a time), and a
    mutant raising ``k`` to the power ``k + s`` passed every test; then, with 32 bytes a token
    and four ``[K, K + S]`` tables, it was 0.84-0.99 of the peak with 50-300 states on a few
    hundred strings (the fifth case; 0.95 there)."""
    from conftest import traced_peak

    rng = np.random.default_rng(0)
    train = Corpus.from_strings([rng.integers(0, letters, size=rng.integers(0, longest)).tolist()
                                 for _ in range(n)], letters)
    method = get_method("hmm-em")
    opts = options("--states", str(states), "--n-iter", "3", "--restarts", "1",
                   *(["--sequence"] if sequence else []))
    method.fit(train, opts, 0, False)  # hmmlearn's and numpy's own first-call allocations
    _, peak = traced_peak(method.fit, train, opts, 0, False)
    estimate = method.estimate_memory(train, opts)
    assert peak <= estimate <= 1.5 * peak, (peak, estimate, estimate / peak)


def test_memory_estimate_adds_its_bytes_a_string_and_a_token_at_a_fixed_longest_string():
    """More strings no longer than the longest leave the lattices and tables as they are: the
    estimate grows by exactly the documented 176 bytes a string and 12 a token (sentences).
    Issue 39: a mutant joining the terms by ``|`` instead of ``+`` stayed within the peak
    test's 1-1.5 times."""
    rng = np.random.default_rng(3)
    strings = [rng.integers(0, 5, size=rng.integers(0, 12)).tolist() for _ in range(400)]
    strings.append([1] * 12)  # the longest in both corpora
    more = strings + [rng.integers(0, 5, size=rng.integers(0, 12)).tolist() for _ in range(321)]
    a, b = Corpus.from_strings(strings, 5), Corpus.from_strings(more, 5)
    method = get_method("hmm-em")
    for k in ("3", "10", "37"):
        opts = options("--states", k)
        assert method.estimate_memory(b, opts) - method.estimate_memory(a, opts) == \
            176 * 321 + 12 * (b.n_tokens - a.n_tokens), k


def test_memory_estimate_tables_are_as_wide_as_the_fitted_emissions():
    """One more state adds, by the docstring's terms, six lattice columns of the longest
    string (its end included), the ``[K, K]`` tables' ``5 (2K + 1)`` cells and one row of each
    of the four ``[K, S + 1]`` tables: as wide as the emission table a fit returns (the end
    symbol's column included). Issue 39: ``s`` one or two columns narrower (``alphabet_size *
    1``, ``- 1``) lived, inside the traced-peak test's 1-1.5 times."""
    train, method = corpus(seed=7), get_method("hmm-em")
    longest = max(len(x) for x in train.strings()) + 1
    width = method.fit(train, options("--states", "3", "--n-iter", "2", "--restarts", "1"), 0,
                       False).arrays["emissionprob"].shape[1]
    for k in (3, 10, 37):
        step = (method.estimate_memory(train, options("--states", str(k + 1)))
                - method.estimate_memory(train, options("--states", str(k))))
        assert step == 8 * (6 * longest + 5 * (2 * k + 1) + 4 * width), k


def test_converged_says_whether_tol_stopped_the_run():
    """A restart is ``converged`` when ``--tol`` stopped it (its last step gained less than
    tol), not when it used up ``--n-iter`` (hmmlearn calls both converged)."""
    train, method = corpus(seed=7), get_method("hmm-em")
    used_up = method.fit(train, options("--states", "3", "--restarts", "2", "--n-iter", "3",
                                        "--tol", "1e-12"), 3, False)
    assert [r["iterations"] for r in used_up.info["restarts"]] == [3, 3]
    assert [r["converged"] for r in used_up.info["restarts"]] == [False, False]
    assert used_up.info["converged"] is False
    stopped = method.fit(train, options("--states", "3", "--restarts", "1", "--n-iter", "50",
                                        "--tol", "1e3"), 3, False)
    assert stopped.info["restarts"][0]["iterations"] == 2 and stopped.info["converged"] is True


def test_the_estimate_gets_the_first_iterations_seconds(monkeypatch):
    """``_report_to`` calls ``estimate`` once, after the first EM iteration, with the seconds
    since it was set up (a fake clock: 2.0 then 7.0 gives 5.0; later iterations call nothing),
    and moves the bar by one an iteration."""
    clock = iter([2.0, 7.0, 9.0])
    monkeypatch.setattr(hmm_em.time, "perf_counter", lambda: next(clock))
    reported, seconds = [], []

    class Monitor:
        report = staticmethod(reported.append)

    class Model:
        monitor_ = Monitor()

    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    model, bar = Model(), Bar()
    hmm_em._report_to(model, bar, seconds.append)
    model.monitor_.report(-10.0)
    model.monitor_.report(-9.0)
    assert reported == [-10.0, -9.0] and bar.n == 2 and seconds == [5.0]


def test_the_data_shape_recorded_is_the_one_fitted():
    """``info["data_shape"]`` says how the strings were read: "sentences" when the options have
    no ``sequence`` (a Python caller's own options dict) or it is off, "sequence" when on
    (issue 39: a default of True, and the test negated, each passed every other test)."""
    method = get_method("hmm-em")
    train = corpus(1, 12)
    bare = {k: v for k, v in options("--states", "2", "--n-iter", "2").items() if k != "sequence"}
    assert method.fit(train, bare, 0, False).info["data_shape"] == "sentences"
    off = method.fit(train, {**bare, "sequence": False}, 0, False)
    assert off.info["data_shape"] == "sentences"
    assert method.fit(train, {**bare, "sequence": True}, 0, False).info["data_shape"] == "sequence"
