"""``bayesfa export``: PAutomaC model files that ``bayesfa prob`` reads back to the run's own
probabilities, Graphviz dot, and the one-line refusal for methods without one automaton."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bayesfa.automata import PDFA, PFA
from bayesfa.cli import main
from bayesfa.datasets import pautomac_path
from bayesfa.export import dot_text
from bayesfa.pautomac import read_model, read_sample, read_solution, write_sample
from bayesfa.rundir import save_run

GREEDY = ["estatemerge", "evgram", "cvgram", "alergia"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    train = read_sample(pautomac_path(24, "train")).subset(np.arange(1000))
    write_sample(folder / "train", train)
    return folder / "train", pautomac_path(24, "test")


@pytest.mark.parametrize("method", GREEDY)
def test_fit_predict_export_round_trip(method, data, tmp_path, capsys):
    train, test = data
    run = tmp_path / "run"
    extra = ["--alpha", "0.1"] if method == "alergia" else []
    assert main(["fit", str(train), "--method", method, "--beta", "0.3", *extra, "--out", str(run),
                 "--quiet"]) == 0
    pred = tmp_path / "pred"
    assert main(["predict", str(run), str(test), "--out", str(pred)]) == 0
    p = read_solution(pred)
    assert p.size == 1000 and np.all(p > 0)
    assert main(["perplexity", str(run), str(test), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert np.isfinite(out["perplexity"]) and out["perplexity"] > 1
    # PAutomaC model file, read back by `bayesfa prob`: the same probabilities to 1e-10
    model = tmp_path / "model.txt"
    assert main(["export", str(run), "--format", "pautomac", "--out", str(model)]) == 0
    back = tmp_path / "back"
    assert main(["prob", str(model), str(test), "--out", str(back)]) == 0
    np.testing.assert_allclose(read_solution(back), p, rtol=1e-10, atol=0)
    assert read_model(model, kind="pdfa").delta.shape[1] == 5  # deterministic, 5 letters
    # dot: every drawn edge carries a symbol and a probability; no more than --max-edges
    dot = tmp_path / "m.dot"
    assert main(["export", str(run), "--format", "dot", "--out", str(dot), "--max-edges", "12"]) == 0
    text = dot.read_text()
    assert text.startswith("digraph")
    edges = re.findall(r'q\d+ -> q\d+ \[label="(\d) : ([0-9.e-]+)"', text)
    assert 1 <= len(edges) <= 12
    assert all(0 < float(prob) <= 1 for _, prob in edges)


def test_export_refuses_an_ngram_run_in_one_line(tmp_path, capsys):
    run = save_run(tmp_path / "run", method="hpyp", options={"order": 2}, seed=0,
                   arrays={"tokens": np.zeros(3, dtype=np.int32)})
    rc = main(["export", str(run), "--format", "pautomac", "--out", str(tmp_path / "m.txt")])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "does not learn one automaton" in err
    assert "estatemerge" in err and "cgs-pfa" in err and "pdia" in err  # names those that can
    assert not (tmp_path / "m.txt").exists()


def test_dot_keeps_the_heaviest_edges():
    # state 0 -> 1 on letter 0 with 0.7, on letter 1 to 0 with 0.2; state 1 stops surely
    pdfa = PDFA(delta=np.array([[1, 0], [-1, -1]]), pi=np.array([[0.7, 0.2], [0.0, 0.0]]),
                stop=np.array([0.1, 1.0]))
    full = dot_text(pdfa, max_edges=10, symbols=["a", "b"])
    assert 'q0 -> q1 [label="a : 0.7"' in full and 'q0 -> q0 [label="b : 0.2"' in full
    assert "transitions drawn" not in full
    one = dot_text(pdfa, max_edges=1)
    assert 'q0 -> q1 [label="0 : 0.7"' in one and "q0 -> q0" not in one
    assert "1 of 2 transitions drawn" in one
    assert "start0 -> q0" in one and "stop 1" in one


# -- the plug-in automaton of the samplers and optimisers (issue 36, item 4) ----------------------

TOY = ["ab", "", "abb", "b", "aab", "ab", "", "ba", "abab", "b", "ab", "abb"] * 3
QUERY = ["", "a", "b", "ab", "ba", "bb", "aab", "abb", "abab", "bab", "aaaa"]
MCMC = dict(iterations=60, burn_in=20, period=5, chains=2)
PLUGIN_FITS = {
    "cgs-pfa": dict(states=3, **MCMC), "cgs-sg": dict(states=3, **MCMC),
    "cgs-hmm": dict(states=3, **MCMC), "cgs-hmm-star": dict(states=3, **MCMC),
    # ipfa: the default blocked sampler without its annealed start, whose hot sweeps open most
    # of the truncation (decode's brute force below enumerates states^(length + 1) paths)
    "ipfa": dict(states=2, anneal=0, **MCMC), "pdfa": dict(states=3, **MCMC), "pdia": dict(MCMC),
    "pdia-smoothed": dict(MCMC), "cvb0": dict(states=3), "gcvb0": dict(states=3),
    "cvb2": dict(states=3), "hmm-em": dict(states=3),
}
PDIA_FAMILY = ("pdfa", "pdia", "pdia-smoothed")
#: states the same in every draw: a posterior-mean automaton exists
FIXED_STATES = ("cgs-pfa", "cgs-sg", "cgs-hmm", "cgs-hmm-star", "pdfa")


@pytest.fixture(scope="module")
def toy_runs():
    import bayesfa

    cache = {}

    def get(method):
        if method not in cache:
            cache[method] = bayesfa.fit(TOY, method=method, seed=1, **PLUGIN_FITS[method])
        return cache[method]

    return get


def _map_draw(run):
    """``(chain, draw)`` of the highest log joint of the run's trace, found here by numpy."""
    lj = np.asarray(run.scalar_trace()["log_joint"])
    c, d = np.unravel_index(int(np.argmax(lj)), lj.shape)
    return int(c), int(d)


def _pdia_walk(run, corpus):
    """Reference for the PDFA / PDIA plug-in of the MAP sample, written apart from
    ``plugin_pfa``: along a string whose transitions the sample visited, the product of the
    posterior-mean emissions ``(c_qs + a_s) / (c_q + beta)`` (Pfau et al. 2010, Eq. x:end
    integrated), the end symbol last. NaN for a string that reads an unvisited transition."""
    arrays = run.arrays
    lj = np.asarray(arrays["log_joint"])
    c, d = np.unravel_index(int(np.argmax(lj)), lj.shape)
    delta, cnt = arrays["delta"][c, d], arrays["counts"][c, d].astype(float)
    beta = float(arrays["hyp"][c, d, 1])
    n_sym = delta.shape[1]
    pseudo = (beta * np.exp(arrays["lpi0"][c, d]) if "lpi0" in arrays
              else np.full(n_sym, beta / n_sym))
    out = np.full(corpus.n_strings, np.nan)
    for i in range(corpus.n_strings):
        q, lp = 0, 0.0
        for s in [int(x) + 1 for x in corpus.string(i)] + [0]:
            lp += np.log((cnt[q, s] + pseudo[s]) / (cnt[q].sum() + beta))
            if s == 0:
                out[i] = lp
                break
            if delta[q, s] < 0:
                break
            q = int(delta[q, s])
    return out


def _plugin_reference(run, method, corpus):
    """Each string's log probability under the run's MAP plug-in, by the front's own
    per-draw predictive code (for the PDFA / PDIA: :func:`_pdia_walk`)."""
    from bayesfa.methods import get_method
    from bayesfa.samplers.pfa import cgs_pfa, ipfa

    arrays, options = run.arrays, run.options
    if method in ("cvb0", "gcvb0", "cvb2", "hmm-em"):
        return run.log_prob(corpus)  # one automaton: the run's prediction
    if method in PDIA_FAMILY:
        return _pdia_walk(run, corpus)
    c, d = _map_draw(run)
    if method == "cgs-pfa":
        return cgs_pfa.plugin_log_prob(arrays["counts"][c, d][None], options["beta"], corpus)[0]
    if method == "ipfa":
        return ipfa.per_sample_log_prob(arrays, corpus)[c, d]
    return get_method(method).per_sample_log_prob(arrays, options, corpus)[c, d]


def _read_back(text, tmp_path, corpus):
    """The model file's string probabilities: bayesfa's PAutomaC reader, then the forward
    algorithm (code apart from the samplers)."""
    from bayesfa.forward import forward_log_prob

    path = tmp_path / "model.txt"
    path.write_text(text)
    pfa = read_model(path)
    return forward_log_prob(pfa.init, pfa.trans, pfa.stop, corpus.with_alphabet(pfa.alphabet_size))


@pytest.mark.parametrize("method", list(PLUGIN_FITS))
def test_exported_map_automaton_is_the_runs_plugin(method, toy_runs, tmp_path):
    run = toy_runs(method)
    corpus = run.corpus(QUERY)
    got = _read_back(run.export("pautomac"), tmp_path, corpus)
    want = _plugin_reference(run, method, corpus)
    known = ~np.isnan(want)
    assert known.sum() >= 3  # the PDIA walk: at least three strings on visited transitions
    np.testing.assert_allclose(got[known], want[known], rtol=1e-9, atol=0)
    # a distribution over strings: every string of at most 8 letters has positive
    # probability and they do not sum above 1 (the automaton stops somewhere)
    every = [""] + ["".join(t) for n in range(1, 9) for t in __import__("itertools").product("ab", repeat=n)]
    p = np.exp(_read_back(run.export("pautomac"), tmp_path, run.corpus(every)))
    assert np.all(p > 0) and p.sum() <= 1 + 1e-9


@pytest.mark.parametrize("method", ["cgs-pfa", "cgs-hmm"])
def test_exported_mean_automaton_is_the_mean_plugin(method, toy_runs, tmp_path):
    from bayesfa.forward import forward_log_prob, xi_to_pfa
    from bayesfa.samplers.pfa.cgs_hmm import hmm_xi
    from bayesfa.samplers.pfa.cgs_pfa import plugin_xi

    run = toy_runs(method)
    counts = np.asarray(run.arrays["counts"])
    opts = run.options
    xi = (plugin_xi(counts, opts["beta"]) if method == "cgs-pfa"
          else hmm_xi(counts, opts["alpha"], opts["beta"]))
    mean = xi.reshape((-1,) + xi.shape[-3:]).mean(axis=0)
    corpus = run.corpus(QUERY)
    want = forward_log_prob(*xi_to_pfa(mean), corpus)
    # "mean" built at run time, as sys.argv's strings are (not the interned literal: a
    # comparison by identity, `is "mean"`, would export the MAP draw's automaton instead)
    got = _read_back(run.export("pautomac", which="".join(["me", "an"])), tmp_path, corpus)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=0)
    assert not np.allclose(got, _read_back(run.export("pautomac"), tmp_path, corpus))


@pytest.mark.parametrize("method", ["ipfa", "pdia", "pdia-smoothed"])
def test_mean_is_refused_where_states_are_not_aligned(method, toy_runs):
    from bayesfa.errors import InputError

    with pytest.raises(InputError, match="--which mean.*no posterior-mean automaton") as err:
        toy_runs(method).export("pautomac", which="mean")
    assert "\n" not in str(err.value)


def test_pdfa_mean_automaton_averages_the_samples_plugins(toy_runs, tmp_path):
    from bayesfa.samplers.pdia.pdfa import FINITE, plugin_pfa

    run = toy_runs("pdfa")
    n_c, n_d = np.shape(run.arrays["log_joint"])
    corpus = run.corpus(QUERY)
    probs = [plugin_pfa(FINITE, run.arrays, run.options, c, d).prob(corpus)
             for c in range(n_c) for d in range(n_d)]
    # the mean PFA's probabilities are not the mean of the samples' (a string's probability
    # is not linear in the parameters), but the empty string's is: stop(q0), averaged
    got = np.exp(_read_back(run.export("pautomac", which="mean"), tmp_path, corpus))
    assert got[0] == pytest.approx(np.mean([p[0] for p in probs]), rel=1e-9)


@pytest.mark.parametrize("method", ["cgs-pfa", "pdia"])
def test_cli_export_matches_the_plugin_prediction(method, toy_runs, tmp_path, capsys):
    """The issue's "done when": `bayesfa export` of a cgs-pfa and a pdia run folder gives a
    model file whose probabilities (`bayesfa prob`) are the run's plug-in predictions."""
    import bayesfa
    from bayesfa.corpus import Corpus

    train, test = tmp_path / "train", tmp_path / "test"
    letters = {"a": 0, "b": 1}
    write_sample(train, Corpus.from_strings([[letters[x] for x in s] for s in TOY], 2))
    write_sample(test, Corpus.from_strings([[letters[x] for x in s] for s in QUERY], 2))
    opts = []
    for k, v in PLUGIN_FITS[method].items():
        opts += [f"--{k.replace('_', '-')}", str(v)]
    run_dir = tmp_path / "run"
    assert main(["fit", str(train), "--method", method, *opts, "--seed", "1", "--out",
                 str(run_dir), "--quiet"]) == 0
    model, back = tmp_path / "model.txt", tmp_path / "back"
    assert main(["export", str(run_dir), "--format", "pautomac", "--which", "map", "--out",
                 str(model)]) == 0
    assert main(["prob", str(model), str(test), "--out", str(back)]) == 0
    run = bayesfa.load(run_dir)
    want = _plugin_reference(run, method, read_sample(test))
    known = ~np.isnan(want)
    assert known.sum() >= 3
    np.testing.assert_allclose(np.log(read_solution(back))[known], want[known], rtol=1e-9)
    dot = tmp_path / "m.dot"
    assert main(["export", str(run_dir), "--format", "dot", "--out", str(dot)]) == 0
    assert dot.read_text().startswith("digraph")
    capsys.readouterr()


# -- sample and decode through the automaton ------------------------------------------------------

#: a goodness-of-fit test below fails with this probability when the sampler is right (the
#: seeds are fixed, so each outcome is deterministic; the rate is the chance a seed was unlucky)
TEST_FAILURE_RATE = 1e-3


def _chi_square_p(strings, log_prob_of, n_letters=8):
    """p-value of Pearson's chi-square of the sampled strings' frequencies against their
    exact probabilities: every string of at most ``n_letters`` letters over a, b with an
    expected count of at least 5 is a cell, everything else one pooled cell."""
    import itertools

    from scipy.stats import chisquare

    n = len(strings)
    every = [""] + ["".join(t) for k in range(1, n_letters + 1)
                    for t in itertools.product("ab", repeat=k)]
    expected = n * np.exp(log_prob_of(every))
    keep = expected >= 5
    seen = {s: 0 for s in every}
    other = 0
    for s in strings:
        if s in seen and keep[every.index(s)]:
            seen[s] += 1
        else:
            other += 1
    obs = np.array([seen[s] for s, k in zip(every, keep) if k] + [other], dtype=float)
    exp = np.concatenate([expected[keep], [n - expected[keep].sum()]])
    assert keep.sum() >= 5
    return chisquare(obs, exp).pvalue


@pytest.mark.parametrize("method", ["pdfa", "pdia", "ipfa"])
def test_sample_is_seeded_and_fits_the_automaton(method, toy_runs):
    run = toy_runs(method)
    assert run.sample(40, seed=7) == run.sample(40, seed=7)
    assert run.sample(40, seed=7) != run.sample(40, seed=8)
    strings = run.sample(4000, seed=11)
    if method == "ipfa":  # the predictive is Eq. 6's mixture: run.predict gives it exactly
        p = _chi_square_p(strings, lambda s: run.predict(s))
    else:  # the MAP plug-in automaton
        machine = run.automaton().to_pfa()
        p = _chi_square_p(strings, lambda s: machine.log_prob(run.corpus(s)))
    assert p > TEST_FAILURE_RATE
    # --which map draws from the exported automaton (ipfa too)
    machine = run.automaton("map").to_pfa()
    p = _chi_square_p(run.sample(4000, seed=12, which="map"),
                      lambda s: machine.log_prob(run.corpus(s)))
    assert p > TEST_FAILURE_RATE


@pytest.mark.parametrize("method", ["pdfa", "pdia", "ipfa"])
def test_decode_is_the_most_probable_path_of_the_exported_automaton(method, toy_runs, tmp_path):
    import itertools

    run = toy_runs(method)
    pfa = read_model(_write(tmp_path, run.export("pautomac")))  # the file's state numbers
    strings = ["", "ab", "ba", "abb"]
    paths = run.decode(strings)
    assert [p.tolist() for p in paths] == [p.tolist() for p in run.decode(strings)]
    for s, path in zip(run.corpus(strings).strings(), paths):
        assert len(path) == len(s) + 1

        def joint(states):
            p = pfa.init[states[0]] * pfa.stop[states[-1]]
            for a, q, r in zip(s, states[:-1], states[1:]):
                p *= pfa.trans[a, q, r]
            return p

        best = max(joint(st) for st in itertools.product(range(pfa.n_states), repeat=len(s) + 1))
        assert joint(list(path)) == pytest.approx(best, rel=1e-12) and best > 0


def _write(tmp_path, text):
    path = tmp_path / "exported.txt"
    path.write_text(text)
    return path


def test_cli_sample_and_decode_a_pdia_run(tmp_path, capsys):
    from bayesfa.corpus import Corpus

    train = tmp_path / "train"
    write_sample(train, Corpus.from_strings([[{"a": 0, "b": 1}[x] for x in s] for s in TOY], 2))
    run_dir = tmp_path / "run"
    opts = [x for k, v in PLUGIN_FITS["pdia"].items() for x in (f"--{k.replace('_', '-')}", str(v))]
    assert main(["fit", str(train), "--method", "pdia", *opts, "--seed", "1", "--out",
                 str(run_dir), "--quiet"]) == 0
    for seed_out in ("s1", "s2"):
        assert main(["sample", str(run_dir), "30", "--seed", "3", "--out",
                     str(tmp_path / seed_out)]) == 0
    assert (tmp_path / "s1").read_text() == (tmp_path / "s2").read_text()
    assert read_sample(tmp_path / "s1").n_strings == 30
    assert main(["decode", str(run_dir), str(train), "--out", str(tmp_path / "paths")]) == 0
    lines = (tmp_path / "paths").read_text().splitlines()
    assert len(lines) == len(TOY)
    assert [len(x.split()) for x in lines] == [len(s) + 1 for s in TOY]
    capsys.readouterr()


# -- hpyp: strings from the predictive -------------------------------------------------------------

@pytest.fixture(scope="module")
def hpyp_run():
    import bayesfa

    return bayesfa.fit(TOY, method="hpyp", seed=2, order=2, iterations=30, burn_in=10,
                       period=5, chains=2)


def test_hpyp_sample_is_seeded_and_fits_its_predictive(hpyp_run):
    from bayesfa.samplers.ngram.hpyp import ContextPredictive

    run = hpyp_run
    assert run.sample(40, seed=7) == run.sample(40, seed=7)
    assert run.sample(40, seed=7) != run.sample(40, seed=8)
    model = ContextPredictive.of_hpyp(run.arrays, run.options)
    # 20,000 draws (4,000 with this seed gave p = 5e-4, a 1-in-2,000 event; twelve seeds gave
    # p-values spread over (0, 1), and 20,000 draws more power)
    p = _chi_square_p(run.sample(20_000, seed=13), lambda s: model.log_prob(run.corpus(s)))
    assert p > TEST_FAILURE_RATE
    # the first symbol is predicted from the training seating alone: the empty string's
    # probability is the scorer's (the kernel's score_tokens, apart from this sampler)
    np.testing.assert_allclose(model.log_prob(run.corpus([""])), run.predict([""]), rtol=1e-12)


def test_memoizer_sample_is_seeded_and_fits_its_predictive():
    import bayesfa
    from bayesfa.samplers.ngram.memoizer import context_predictive

    run = bayesfa.fit(TOY, method="memoizer", seed=3)
    assert run.sample(40, seed=7) == run.sample(40, seed=7)
    assert run.sample(40, seed=7) != run.sample(40, seed=8)
    model = context_predictive(run.arrays, run.options)
    p = _chi_square_p(run.sample(20_000, seed=14), lambda s: model.log_prob(run.corpus(s)))
    assert p > TEST_FAILURE_RATE


def test_map_draw_under_max_draws_is_among_the_kept_draws(tmp_path):
    """With ``max_draws`` only K draws per chain keep their counts: the MAP automaton is the
    kept draw of highest log joint (the trace has every draw's)."""
    import bayesfa
    from bayesfa.samplers.pfa.cgs_pfa import kept_draw_indices, plugin_log_prob

    run = bayesfa.fit(TOY, method="cgs-pfa", seed=5, max_draws=3, **PLUGIN_FITS["cgs-pfa"])
    lj = np.asarray(run.scalar_trace()["log_joint"])
    kept = kept_draw_indices(lj.shape[1], 3)
    assert np.shape(run.arrays["counts"])[1] == 3 and lj.shape[1] > 3
    c, k = np.unravel_index(int(np.argmax(lj[:, kept])), (lj.shape[0], 3))
    corpus = run.corpus(QUERY)
    want = plugin_log_prob(run.arrays["counts"][c, k][None], run.options["beta"], corpus)[0]
    np.testing.assert_allclose(_read_back(run.export("pautomac"), tmp_path, corpus), want,
                               rtol=1e-9)


@pytest.mark.parametrize("method", ["hmm-em", "hpyp"])
def test_a_sequence_run_has_no_strings_to_export_or_sample(method):
    import bayesfa
    from bayesfa.errors import InputError

    extra = dict(states=2) if method == "hmm-em" else dict(order=2, iterations=4, burn_in=2)
    run = bayesfa.fit(TOY, method=method, seed=0, sequence=True, **extra)
    call = (lambda: run.export("pautomac")) if method == "hmm-em" else (lambda: run.sample(3))
    with pytest.raises(InputError, match="--sequence models one long sequence") as err:
        call()
    assert "\n" not in str(err.value)


def test_pdia_plugin_matches_a_franchise_reference(toy_runs):
    """Every transition of the PDIA's plug-in, unvisited ones included, against the Chinese
    restaurant franchise's prior predictive counted here from the sample's raw seats and
    table dishes (not through the kernel's seating arrays): a table of restaurant s with n_t
    customers (n_t - d) / (alpha + n_s), a new table (alpha + d T_s) / (alpha + n_s) shared
    as (m_k - d0) / (alpha0 + M) over the dishes and (alpha0 + d0 K) / (alpha0 + M) for a
    fresh state; emissions (c_qs + beta / S) / (c_q + beta)."""
    from bayesfa.samplers.pdia.pdfa import CRF, plugin_pfa

    run = toy_runs("pdia")
    arrays = run.arrays
    n_c, n_d = np.shape(arrays["log_joint"])
    unvisited = 0
    for c in range(n_c):
        for d in range(n_d):
            delta, seat = arrays["delta"][c, d], arrays["seat"][c, d]
            cnt = arrays["counts"][c, d].astype(float)
            tdish = arrays["tdish"][c, d][:int(arrays["n_tab"][c, d])]
            alpha, beta, alpha0, disc, disc0 = (float(x) for x in arrays["hyp"][c, d])
            rows, n_sym = delta.shape
            used = np.unique(seat[:, 1:][delta[:, 1:] >= 0])
            m = np.bincount(tdish[used], minlength=rows).astype(float)
            big_m, big_k = used.size, np.count_nonzero(m)
            q = rows + 1
            pi = np.vstack([(cnt + beta / n_sym) / (cnt.sum(axis=1, keepdims=True) + beta),
                            np.full((1, n_sym), 1.0 / n_sym)])
            trans = np.zeros((n_sym - 1, q, q))
            for s in range(1, n_sym):
                tabs, sizes = np.unique(seat[delta[:, s] >= 0, s], return_counts=True)
                n_s = sizes.sum()
                pred = np.zeros(q)
                for t, n_t in zip(tabs, sizes):
                    pred[tdish[t]] += (n_t - disc) / (alpha + n_s)
                new = (alpha + disc * tabs.size) / (alpha + n_s) if n_s > 0 else 1.0
                if big_m:
                    pred[:rows] += new * np.where(m > 0, m - disc0, 0.0) / (alpha0 + big_m)
                    pred[rows] += new * (alpha0 + disc0 * big_k) / (alpha0 + big_m)
                else:
                    pred[rows] += new
                for r in range(q):
                    if r < rows and delta[r, s] >= 0:
                        trans[s - 1, r, delta[r, s]] = pi[r, s]
                    else:
                        trans[s - 1, r] = pi[r, s] * pred
                        unvisited += 1
            got = plugin_pfa(CRF, arrays, run.options, c, d)
            np.testing.assert_allclose(got.trans, trans, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(got.stop, pi[:, 0], rtol=1e-12)
    assert unvisited > 0


def test_pdfa_plugin_matches_a_polya_reference(toy_runs):
    """The finite PDFA's plug-in against Eq. delta:pred counted here from the raw transition
    table: an unvisited delta_qs goes to k with (alpha mu_k + v_ks) / (alpha + D+_s), v_ks the
    visited entries of column s pointing to k."""
    from bayesfa.samplers.pdia.pdfa import FINITE, plugin_pfa

    run = toy_runs("pdfa")
    arrays = run.arrays
    n_c, n_d = np.shape(arrays["log_joint"])
    unvisited = 0
    for c in range(n_c):
        for d in range(n_d):
            delta, mu = arrays["delta"][c, d], arrays["mu"][c, d]
            cnt = arrays["counts"][c, d].astype(float)
            alpha, beta = (float(x) for x in arrays["hyp"][c, d][:2])
            rows, n_sym = delta.shape
            pi = (cnt + beta / n_sym) / (cnt.sum(axis=1, keepdims=True) + beta)
            trans = np.zeros((n_sym - 1, rows, rows))
            for s in range(1, n_sym):
                seen = delta[:, s] >= 0
                pred = (alpha * mu + np.bincount(delta[seen, s], minlength=rows)) / (alpha + seen.sum())
                for r in range(rows):
                    if seen[r]:
                        trans[s - 1, r, delta[r, s]] = pi[r, s]
                    else:
                        trans[s - 1, r] = pi[r, s] * pred
                        unvisited += 1
            got = plugin_pfa(FINITE, arrays, run.options, c, d)
            np.testing.assert_allclose(got.trans, trans, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(got.stop, pi[:, 0], rtol=1e-12)
    assert unvisited > 0


def test_cli_refuses_mean_of_an_ipfa_run_in_one_line(tmp_path, capsys):
    from bayesfa.corpus import Corpus

    train = tmp_path / "train"
    write_sample(train, Corpus.from_strings([[{"a": 0, "b": 1}[x] for x in s] for s in TOY], 2))
    run_dir = tmp_path / "run"
    assert main(["fit", str(train), "--method", "ipfa", "--states", "2", "--iterations", "20",
                 "--burn-in", "10", "--period", "5", "--chains", "2", "--out", str(run_dir),
                 "--quiet"]) == 0
    capsys.readouterr()
    rc = main(["export", str(run_dir), "--format", "pautomac", "--which", "mean", "--out",
               str(tmp_path / "m.txt")])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "--which mean" in err and "differ from draw to draw" in err
    assert "arrays.npz" not in err and not (tmp_path / "m.txt").exists()


# -- bayesfa.samplers.plugin itself: the MAP draw, the mean automaton, the reachable part ---------

def _random_pfa(rng, n, letters=2, zero_in=()):
    """A PFA on ``n`` states; no transition enters the states ``zero_in`` (nor starts there)."""
    init = rng.random(n)
    w = rng.random((n, 1 + letters * n))
    trans = w[:, 1:].reshape(n, letters, n).transpose(1, 0, 2).copy()
    for q in zero_in:
        init[q] = 0.0
        trans[:, :, q] = 0.0
    stop = w[:, 0]
    total = stop + trans.sum(axis=(0, 2))
    return PFA(init / init.sum(), trans / total[None, :, None], stop / total)


def test_plugin_map_index_is_the_first_highest_kept_draw():
    from bayesfa.errors import InputError
    from bayesfa.samplers.plugin import map_index

    lj = np.array([[0.0, 3.0, 1.0, 3.0], [2.0, np.nan, 5.0, 3.0]])
    assert map_index(lj, (2, 4)) == (1, 2)
    assert map_index(lj, (1, 1)) == (0, 0) and map_index(None, (1, 1)) == (0, 0)
    # kept draws 0, 1, 3 of each chain: (1, 2) is not stored; the tie 3.0 goes to chain 0
    assert map_index(lj, (2, 3), kept=[0, 1, 3]) == (0, 1)
    assert map_index(lj[:, [0, 1, 3]], (2, 3), kept=[0, 1, 3]) == (0, 1)   # already the kept ones
    assert map_index(np.array([[1.0, 4.0, 4.0]]), (1, 3)) == (0, 1)     # ties: the first
    assert map_index(np.array([[np.nan, -2.0], [-1.0, np.nan]]), (2, 2)) == (1, 0)
    with pytest.raises(InputError, match="no log_joint trace"):
        map_index(None, (2, 1))
    with pytest.raises(InputError, match=r"\(2, 4\) does not match its 2 x 3 stored draws"):
        map_index(lj, (2, 3))
    with pytest.raises(InputError, match=r"does not match its 2 x 2"):
        map_index(lj, (2, 2), kept=[0, 4])                               # index past the trace
    with pytest.raises(InputError, match=r"does not match its 2 x 2"):
        map_index(lj, (2, 2), kept=[0, 6])                               # and further past it
    # a trace of fewer chains than stored: the error names the trace as recorded, (1, 4)
    with pytest.raises(InputError, match=r"trace \(1, 4\) does not match its 2 x 3"):
        map_index(lj[:1], (2, 3), kept=[0, 1, 3])
    # kept indices of another count than the stored draws, or a trace of more chains: the
    # error names the trace as recorded, not cut down to the kept draws
    with pytest.raises(InputError, match=r"trace \(2, 4\) does not match its 2 x 2"):
        map_index(lj, (2, 2), kept=[0, 1, 3])                            # more kept than stored
    with pytest.raises(InputError, match=r"trace \(2, 4\) does not match its 2 x 3"):
        map_index(lj, (2, 3), kept=[0, 1])                               # fewer
    with pytest.raises(InputError, match=r"trace \(3, 4\) does not match its 2 x 3"):
        map_index(np.vstack([lj, lj[:1]]), (2, 3), kept=[0, 1, 3])       # a chain too many
    # a trace of one axis (one value a chain): the one-line error, not numpy's IndexError
    with pytest.raises(InputError, match=r"trace \(2,\) does not match its 2 x 3"):
        map_index(lj[:, 0], (2, 3), kept=[0, 1, 3])
    # a trace of three axes: named as recorded, (2, 4, 2), not cut down to the kept draws
    with pytest.raises(InputError, match=r"trace \(2, 4, 2\) does not match its 2 x 3"):
        map_index(np.stack([lj, lj], axis=-1), (2, 3), kept=[0, 1, 3])
    with pytest.raises(InputError, match="all NaN"):
        map_index(np.full((1, 2), np.nan), (1, 2))
    # no stored draw (an empty kept list): the one-line error, not numpy's max of nothing
    with pytest.raises(InputError, match="no maximum-a-posteriori draw"):
        map_index(lj, (2, 0), kept=np.array([], dtype=np.int64))
    with pytest.raises(InputError, match="no maximum-a-posteriori draw"):   # one chain too:
        map_index(lj[:1], (1, 0), kept=np.array([], dtype=np.int64))      # not draw (0, 0)
    # more stored draws than CPython caches small ints for (issue 39: ``kept.size is n_kept``,
    # true up to 256 only, passed every test): 300 kept of each chain's 1,000 draws
    long = np.random.default_rng(8).normal(size=(2, 1000))
    long[1, 0] = 10.0  # the highest draw is not a stored one
    kept = np.arange(1, 1000, 3)[:300]
    best = np.unravel_index(int(np.argmax(long[:, kept])), (2, 300))
    assert np.argmax(long) != np.ravel_multi_index((best[0], kept[best[1]]), long.shape)
    assert map_index(long, (2, 300), kept=kept) == (int(best[0]), int(best[1]))
    # and more chains than that (``lj.shape[0] is chains`` passed every test): 300 chains of
    # 3 draws, draw 1 of each stored, the highest draw not a stored one
    wide = np.random.default_rng(9).normal(size=(300, 3))
    wide[7, 0] = 10.0
    best = int(np.argmax(wide[:, 1]))
    assert map_index(wide, (300, 1), kept=[1]) == (best, 0)


def test_a_one_axis_log_joint_is_the_one_line_error_of_the_front(toy_runs):
    """A front's :meth:`automaton` given a trace of one axis (not ``[chain, draw]``) gives the
    one-line InputError naming it, not numpy's IndexError (issue 39: the draws counted from
    ``np.shape(log_joint)[+1]`` instead of ``[-1]`` passed every test)."""
    from bayesfa.errors import InputError
    from bayesfa.methods import get_method

    run = toy_runs("cgs-pfa")
    with pytest.raises(InputError, match=r"log_joint trace \(3,\) does not match"):
        get_method("cgs-pfa").automaton(run.arrays, run.options, log_joint=np.zeros(3))


def test_a_front_with_the_fits_own_state_labels_exports_every_state():
    """``trim`` is off by default (CGS-PFA, CGS-HMM, CVB, hmm-em): the exported automaton has
    the fit's states with the fit's labels, one that no string reaches included; only the
    fronts whose labels are sparse (iPFA, CGS-SG, PDFA/PDIA) drop such states. (Issue 39: the
    class default ``trim = True`` passed every test.)"""
    from bayesfa.methods import get_method

    arrays = {"startprob": np.array([0.6, 0.4, 0.0]),           # state 2: never entered
              "transmat": np.array([[0.5, 0.5, 0.0], [0.3, 0.7, 0.0], [0.2, 0.3, 0.5]]),
              "emissionprob": np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]])}
    pfa = get_method("hmm-em").automaton(arrays, {"sequence": False})
    assert pfa.n_states == 3
    np.testing.assert_allclose(pfa.stop, [0.2, 0.1, 0.3])
    assert get_method("ipfa").trim and get_method("pdia").trim and get_method("cgs-sg").trim


def test_plugin_mean_pfa_and_reachable_part():
    from bayesfa.errors import InputError
    from bayesfa.samplers.plugin import check_which, mean_pfa, reachable

    rng = np.random.default_rng(3)
    pfas = [_random_pfa(rng, 3) for _ in range(3)]
    m = mean_pfa(iter(pfas))
    for name in ("init", "trans", "stop"):
        np.testing.assert_allclose(getattr(m, name),
                                   sum(getattr(p, name) for p in pfas) / 3, rtol=1e-12)
        assert getattr(pfas[0], name) is not getattr(m, name)
    first = _random_pfa(rng, 2)
    keep = first.init.copy()
    mean_pfa([first, _random_pfa(rng, 2)])
    np.testing.assert_array_equal(first.init, keep)                       # inputs untouched

    p = _random_pfa(rng, 5, letters=3, zero_in=(1, 3))
    r = reachable(p)
    assert r.n_states == 3
    np.testing.assert_array_equal(r.init, p.init[[0, 2, 4]])
    np.testing.assert_array_equal(r.trans, p.trans[:, [0, 2, 4]][:, :, [0, 2, 4]])
    np.testing.assert_array_equal(r.stop, p.stop[[0, 2, 4]])
    # state 1 reached only from state 3, which no string reaches; state 4 only through a letter
    p2 = _random_pfa(rng, 5, zero_in=(1, 3, 4))
    trans = p2.trans.copy()
    trans[1, 3, 1] = trans[1, 3, 0]
    trans[1, 3, 0] = 0.0
    trans[0, 2, 4] = trans[0, 2, 2]
    trans[0, 2, 2] = 0.0
    p2 = PFA(p2.init, trans, p2.stop)
    assert reachable(p2).n_states == 3
    np.testing.assert_array_equal(reachable(p2).stop, p2.stop[[0, 2, 4]])
    full = _random_pfa(rng, 4)
    assert reachable(full) is full
    big = _random_pfa(rng, 300)  # more states than CPython caches small ints for ("keep.size
    assert reachable(big) is big  # is n" passed every test: a copy past 256 states)
    assert check_which("map") == "map" and check_which("mean") == "mean"
    with pytest.raises(InputError, match="--which must be map or mean, got 'max'"):
        check_which("max")
