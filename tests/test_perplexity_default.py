"""The default of ``bayesfa perplexity`` for pdfa / pdia / pdia-smoothed (issue 21, item 7):
``log p(test | train)`` of the joint posterior mixture, the unvisited transitions integrated
out by per-sample particle filters with the fully adapted proposal (``pdfa.mixture_log_prob``,
``_pdfa_kernel.predict_weights``) until its Monte Carlo standard error is at most 0.002 nats
per symbol, reported with that standard error and the quantity's name. The references are the exact predictive of ``pdia_exact_predictive``
(enumeration, written separately from the sampler's prediction code)."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.forward import log_mean_exp
from bayesfa.methods import get_method
from bayesfa.samplers.pdia.pdfa import ESTIMATOR
from bayesfa.validation.pdia.pdfa import pdia_exact_predictive

HYPS = ({"alpha": 1.0, "beta": 1.0, "alpha0": 1.0, "d": 0.3, "d0": 0.3},
        {"alpha": 0.5, "beta": 2.0, "alpha0": 3.0, "d": 0.1, "d0": 0.6})
TRAIN = Corpus.from_strings([[0]], 2)  # "a": the posterior has one configuration
TEST = Corpus.from_strings([[1, 0, 1, 1, 1]], 2)  # "babbb": several unvisited transitions


def _options(hyp):
    parser = argparse.ArgumentParser()
    get_method("pdia").add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(iterations=12, burn_in=10, period=2, chains=1, **hyp)
    return opts


def _lone(hyp):
    """One sample of the one-configuration posterior of "a", hyperparameters fixed."""
    return dict(get_method("pdia").fit(TRAIN, _options(hyp), 5, False).arrays)


def _exact(hyp) -> float:
    return float(pdia_exact_predictive(TRAIN, TEST, hyp)[0][0])


def test_default_reaches_the_exact_predictive_of_a_lone_sample():
    """The only randomness is the draws of the unvisited transitions; the default converges to
    the exact ``log p(test | train)``. Over 20 generators (``predict_entropy`` [11, 0..19])
    the error had mean 0.001, sd 0.008, max |error| 0.020, and all 20 converged (256-4096
    particles); the bound 0.06 is 7.6 sd (failure rate < 1e-6 per call under a normal
    approximation; fixed generators)."""
    method, arrays = get_method("pdia"), _lone(HYPS[0])
    exact = _exact(HYPS[0])
    for e in (0, 1):
        arrays["predict_entropy"] = np.array([11, e])
        details: dict = {}
        got = method.perplexity_log_prob(arrays, _options(HYPS[0]), TEST, continuation=False,
                                         details=details)
        assert abs(got - exact) < 0.06, (e, got - exact)
        assert details["quantity"].startswith("log p(test | train), joint posterior mixture")
        assert details["estimator"] == ESTIMATOR
        assert 0 < details["se"] and details["se_per_symbol"] == details["se"] / 6
        assert details["se_per_symbol"] <= 0.002 or not details["converged"]
    # the single reading, the earlier default, is far off (Jensen): the default is not it
    once = method.perplexity_log_prob(arrays, _options(HYPS[0]), TEST, continuation=False,
                                      draw_sets=1)
    assert once != got


def test_default_weights_the_samples_by_the_test():
    """Two samples with different hyperparameters: the exact mixture is the log-mean-exp of
    their exact predictives; each sample's filter (both within the pilot's margin) must still
    converge to it. Over 20 generators the error had mean 0.0002, sd 0.013, max |error|
    0.032 (64-1024 particles); the bound 0.06 is 4.5 sd (failure rate 7e-6 under a normal
    approximation; fixed generator)."""
    method = get_method("pdia")
    lone = [_lone(h) for h in HYPS]
    arrays = {k: (np.concatenate([a[k] for a in lone]) if k != "predict_entropy" else lone[0][k])
              for k in lone[0]}
    exact = float(log_mean_exp(np.array([_exact(h) for h in HYPS])))
    arrays["predict_entropy"] = np.array([11, 0])
    details: dict = {}
    got = method.perplexity_log_prob(arrays, _options(HYPS[0]), TEST, continuation=False,
                                     details=details)
    assert abs(got - exact) < 0.06, got - exact
    assert "mixture of 2 samples" in details["quantity"]


def test_default_is_exact_when_no_unvisited_transition_is_read():
    """Test strings the sample reads without drawing anything: the default is the exact
    mixture, the single reading's value, with standard error 0."""
    method, arrays = get_method("pdia"), _lone(HYPS[0])
    test = Corpus.from_strings([[0], [], [0]], 2)
    details: dict = {}
    got = method.perplexity_log_prob(arrays, _options(HYPS[0]), test, continuation=False,
                                     details=details)
    assert got == method.perplexity_log_prob(arrays, _options(HYPS[0]), test,
                                             continuation=False, draw_sets=1)
    assert details["se"] == 0.0 and details["estimator"].startswith("exact")
    # one reading, no particles drawn (issue 39: the record's "particles": 2 lived)
    assert details["particles"] == 1 and details["replicates"] == 1 and details["converged"]
    with pytest.raises(Exception, match="mc-tolerance"):
        method.perplexity_log_prob(arrays, _options(HYPS[0]), test, continuation=False,
                                   mc_tolerance=0.0)


TWO = [[1, 0, 1, 1, 1], [1, 1, 0, 1]]  # "babbb", "bbab": 11 symbols, ends included


def _readings(arrays, options, adapted: bool, n: int, name: str = "pdia") -> np.ndarray:
    """``n`` single-particle readings of TWO by the filter's kernel (``predict_weights``),
    each from a fresh copy of sample (0, 0) with its own generator: the log of each reading's
    product of weights."""
    from bayesfa.samplers.pdia._pdfa_kernel import predict_weights
    from bayesfa.samplers.pdia.pdfa import _PLAIN_LG, CRF, FINITE, _sample_state, _test_data

    model = FINITE if name == "pdfa" else CRF
    data, _ = _test_data(arrays, options, Corpus.from_strings(TWO, 2), True)
    rows, s = arrays["delta"].shape[2:]
    cap = rows if model == FINITE else rows + data.sym.size + 2
    base = _sample_state(model, data.nf, arrays, 0, 0, cap)
    lg = _PLAIN_LG if name != "pdia-smoothed" else get_method(name)._emission().predict_lg(
        arrays, 0, 0)
    counted = np.ones(data.sym.size, dtype=bool)
    scratch = (np.zeros(cap * s, dtype=np.int32), np.zeros(cap * s, dtype=np.int32))
    hyp_a, out, logs = np.ascontiguousarray(arrays["hyp"][0, 0]), np.empty(data.sym.size), []
    for r in range(n):
        state = [a.copy() for a in base]
        predict_weights(model, 0, data.sym, 0, data.sym.size, counted, data.nf, 0, False,
                        adapted, *state, hyp_a, lg, np.random.default_rng([3, r]), *scratch, out)
        logs.append(out.sum())
    return np.array(logs)


@pytest.mark.parametrize("hyp", HYPS)
def test_adapted_proposal_is_unbiased_for_p_test_given_sample(hyp):
    """The fully adapted proposal of the default filter (an unvisited transition's destination
    drawn from its prior predictive times the next symbol's predictive there, the particle
    weighted by their sum, the next symbol's emission then prepaid) keeps one reading's
    product of weights unbiased for ``p(test | sample)``: over 10^4 readings of "babbb",
    "bbab" (several draws, a self-loop and a fresh state both possible, the second string
    given the first), the mean of ``exp(estimate) / p`` is 1, ``p`` the exact joint
    ``p(b1 | a) p(b2 | a, b1)`` from ``pdia_exact_predictive`` (enumeration). Measured with
    2 * 10^4 readings: ratio 1.0032 (z 0.64) and 0.9971 (z -1.03), sd of the ratio 0.71 and
    0.39 (the blind draw's: 1.52 and 0.82). Bound |z| < 4.4: a false failure rate of 1e-5
    per case under the normal approximation of a mean of 10^4 draws (fixed generators).
    Power, checked by hand on copies of the kernel (10^4 readings): without the prepaid
    emission the ratio is 0.008 (z -10800), without the adapted draw's normaliser 1060
    (z 44)."""
    arrays = _lone(hyp)
    e1 = float(pdia_exact_predictive(TRAIN, Corpus.from_strings(TWO[:1], 2), hyp)[0][0])
    e2 = float(pdia_exact_predictive(Corpus.from_strings([[0], TWO[0]], 2),
                                     Corpus.from_strings(TWO[1:], 2), hyp)[0][0])
    ratio = np.exp(_readings(arrays, _options(hyp), True, 10_000) - (e1 + e2))
    z = (ratio.mean() - 1.0) / (ratio.std(ddof=1) / np.sqrt(ratio.size))
    assert abs(z) < 4.4, (ratio.mean(), z)


@pytest.mark.parametrize("name", ["pdfa", "pdia-smoothed"])
def test_adapted_proposal_agrees_with_the_blind_draw(name):
    """The finite PDFA's seating (Eq. delta:pred) and the smoothed emissions (a 3-D ``lg``)
    take other branches of the adapted draw; with no exact reference for a lone sample of
    these models, the adapted readings' mean of ``exp(estimate)`` is checked against the
    blind draw's (from the prior predictive, ``sample_seat``: the other code path, also
    unbiased for ``p(test | sample)``), 6000 readings each, fit to "a" for 12 sweeps.
    Measured with 2 * 10^4 readings: z 0.78 (pdfa) and -1.91 (pdia-smoothed); the adapted
    draw's coefficient of variation 0.53 and 1.11 against the blind's 0.99 and 1.93. Bound
    |z| < 4.4 on the two-sample z statistic: false failure rate 1e-5 per case under the
    normal approximation (fixed generators)."""
    parser = argparse.ArgumentParser()
    get_method(name).add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(iterations=12, burn_in=10, period=2, chains=1)
    arrays = dict(get_method(name).fit(TRAIN, opts, 5, False).arrays)
    blind, adapted = (_readings(arrays, opts, a, 6000, name) for a in (False, True))
    top = max(blind.max(), adapted.max())
    a, b = np.exp(blind - top), np.exp(adapted - top)
    assert a.std() > 0 and b.std() > 0  # the readings draw unvisited transitions
    z = (b.mean() - a.mean()) / np.hypot(a.std(ddof=1), b.std(ddof=1)) * np.sqrt(a.size)
    assert abs(z) < 4.4, (a.mean(), b.mean(), z)


def test_cli_reports_the_quantity_and_its_standard_error(tmp_path, capsys):
    train, test, run = tmp_path / "train.txt", tmp_path / "test.txt", tmp_path / "run"
    train.write_text("3 2\n1 0\n2 0 0\n1 0\n")
    test.write_text("2 2\n5 1 0 1 1 1\n1 1\n")
    assert main(["fit", str(train), "--method", "pdia", "--iterations", "20", "--burn-in",
                 "10", "--period", "5", "--chains", "1", "--seed", "3", "--out", str(run),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["perplexity", str(run), str(test), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"perplexity", "n_symbols", "log_prob", "mixture", "draw_sets"} <= set(out)
    assert out["quantity"].startswith("log p(test | train), joint posterior mixture")
    assert out["estimator"] == ESTIMATOR and out["mc_se"] > 0
    assert out["mc_se_per_symbol"] == pytest.approx(out["mc_se"] / out["n_symbols"])
    assert out["draw_sets"] is None and out["mixture"] == "joint"
    from bayesfa.api import load

    api = load(run).perplexity(str(test))  # the Python API mirrors the command
    assert {k: api[k] for k in out} == out
    assert main(["perplexity", str(run), str(test), "--json", "--draw-sets", "1"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["mc_se"] is None and fixed["draw_sets"] == 1
    assert fixed["estimator"] == "per-sample particle filters of 1 particle, adapted proposal"
    assert main(["perplexity", str(run), str(test), "--json", "--draw-sets", "3", "--proposal",
                 "prior"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["estimator"] == "per-sample particle filters of 3 particles, blind draws from " \
                                 "the prior" and fixed["proposal"] == "prior"
    assert main(["perplexity", str(run), str(test), "--proposal", "prior"]) == 2
    assert capsys.readouterr().err.count("\n") == 1  # one line: --proposal needs --draw-sets
    assert main(["perplexity", str(run), str(test), "--max-particles", "2"]) == 0
    text = capsys.readouterr()
    assert "Monte Carlo s.e." in text.out and "joint posterior mixture" in text.out
    assert "not converged" in text.err  # two particles cannot reach 0.002 nats per symbol
    assert main(["perplexity", str(run), str(test), "--json", "--per-symbol"]) == 0
    assert json.loads(capsys.readouterr().out)["quantity"].startswith("sum_t log E[p(x_t")


@pytest.fixture(scope="module")
def alice_run(tmp_path_factory):
    """Alice in Wonderland, a PDIA fit of 400 sweeps (``bayesfa data alice``; ``fit --method
    pdia --iterations 400 --burn-in 200 --seed 0``, 4 chains, 80 samples)."""
    tmp = tmp_path_factory.mktemp("alice")
    run, data = tmp / "run", tmp / "alice"
    assert main(["data", "alice", "--out", str(data)]) == 0
    assert main(["fit", str(data / "alice.train"), "--method", "pdia", "--iterations", "400",
                 "--burn-in", "200", "--seed", "0", "--out", str(run), "--quiet"]) == 0
    from bayesfa.api import load

    return load(run), str(data / "alice.test")


@pytest.mark.slow
def test_alice_default_is_within_001_of_an_independent_converged_run(alice_run, monkeypatch):
    """The default's perplexity on Alice against the same estimator run with other generators
    (``predict_entropy`` [21, 0]) to a quarter of the default's tolerance (``mc_tolerance``
    0.0005 nats per symbol; 4 GiB of particles). Measured 2026-11-26 (this fit, this seed):
    the default 5.4503 (log -6682.6; 1,024 particles, s.e. 1.18 nats, 181 s CPU), the
    reference 5.4509 (log -6683.1; 2,048 particles, s.e. 1.40 nats, 343 s CPU). Each value's Monte Carlo s.e. is
    at most ~2 nats (0.003 in perplexity), so 0.01 (7 nats of log probability) is at least 2.5
    sd of their difference (failure rate < 1% under a normal approximation; fixed generators,
    so the same machine gives the same values). And an estimate's log exceeds ``log p(test |
    train)`` by ``a`` nats with probability at most ``exp(-a)`` (Markov; the estimate of
    ``p`` is unbiased): the default cannot sit far above the truth, and far below it the
    reference would disagree."""
    from bayesfa.samplers.pdia import pdfa

    r, test = alice_run
    default = r.perplexity(test)
    assert default["mc_converged"] and default["mc_se_per_symbol"] <= 0.002
    monkeypatch.setattr(pdfa, "MIXTURE_MEMORY", 4 << 30)
    arrays = dict(r.arrays, predict_entropy=np.array([21, 0], dtype=np.uint32))
    details: dict = {}
    corpus = r.corpus(test)
    lp = get_method("pdia").perplexity_log_prob(arrays, r.options, corpus, continuation=False,
                                                mc_tolerance=0.0005, details=details)
    reference = float(np.exp(-lp / corpus.n_tokens))
    print(f"default {default['perplexity']:.4f} ({default['particles']} particles, s.e. "
          f"{default['mc_se']:.2f} nats), reference {reference:.4f} ({details['particles']} "
          f"particles, s.e. {details['se']:.2f} nats)")
    assert details["converged"]
    assert abs(default["perplexity"] - reference) <= 0.01


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="issue 21 item 7's criterion as written: on this Alice "
                   "fit the default gives 5.4503 and --draw-sets 300 5.4843 (adapted; 0.034 "
                   "apart) or 5.5327 (--proposal prior; 0.082 apart); 300 particles are too few "
                   "for the sample that carries the mixture, so K = 300 is the unconverged one; "
                   "strict, so the day it passes it reports XPASS and fails")
def test_alice_default_is_within_001_of_300_particles(alice_run):
    """The criterion of issue 21 as written: the default's perplexity against ``--draw-sets
    300`` (each sample's own filter of 300 particles). Measured 2026-11-26 (this fit, this
    seed): the default 5.4503 (log -6682.6; 1,024 particles x 4 replicates on the one sample
    within 30 nats of the best after the pilot, sample (3, 12); s.e. 1.18 nats; 181 s CPU),
    ``--draw-sets 300`` 5.4843 (log -6707.1, 337 s CPU), ``--draw-sets 300 --proposal prior``
    5.5327 (log -6741.8, 557 s CPU). Sample (3, 12) carries the mixture (``log mean`` over 80
    samples is its value minus log 80 = 4.4 nats); its filter's log, six generators each: -6692
    to -6704 at 300 particles (log-mean-exp -6693.4), -6677 to -6682 at 1,024. The filters'
    logs are biased low (Jensen), by ~15 nats at 300 particles here; the reference of
    :func:`test_alice_default_is_within_001_of_an_independent_converged_run` agrees with the
    default."""
    r, test = alice_run
    t0 = time.process_time()
    default = r.perplexity(test)
    t1 = time.process_time()
    k300 = r.perplexity(test, draw_sets=300)
    t2 = time.process_time()
    print(f"default {default['perplexity']:.4f} ({t1 - t0:.0f} s CPU, {default['particles']} "
          f"particles, s.e. {default['mc_se_per_symbol']:.4f}), K = 300 "
          f"{k300['perplexity']:.4f} ({t2 - t1:.0f} s CPU)")
    assert abs(default["perplexity"] - k300["perplexity"]) <= 0.01
