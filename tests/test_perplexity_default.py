"""The default of ``bayesfa perplexity`` for pdfa / pdia / pdia-smoothed (issue 21, item 7):
``log p(test | train)`` of the joint posterior mixture, the unvisited transitions integrated
out by the mixture particle filter (``pdfa.mixture_log_prob``) until its Monte Carlo
standard error is at most 0.002 nats per symbol, reported with that standard error and the
quantity's name. The references are the exact predictive of ``pdia_exact_predictive``
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
    the error had mean 0.002, sd 0.011, max 0.033, and all 20 converged (256-4096 particles);
    the bound 0.06 is 5.3 sd (failure rate < 1e-6 per call under a normal approximation;
    fixed generators)."""
    method, arrays = get_method("pdia"), _lone(HYPS[0])
    exact = _exact(HYPS[0])
    for e in (0, 1):
        arrays["predict_entropy"] = np.array([11, e])
        details: dict = {}
        got = method.perplexity_log_prob(arrays, _options(HYPS[0]), TEST, continuation=False,
                                         details=details)
        assert abs(got - exact) < 0.06, (e, got - exact)
        assert details["quantity"].startswith("log p(test | train), joint posterior mixture")
        assert details["estimator"] == "mixture particle filter"
        assert 0 < details["se"] and details["se_per_symbol"] == details["se"] / 6
        assert details["se_per_symbol"] <= 0.002 or not details["converged"]
    # the single reading, the earlier default, is far off (Jensen): the default is not it
    once = method.perplexity_log_prob(arrays, _options(HYPS[0]), TEST, continuation=False,
                                      draw_sets=1)
    assert once != got


def test_default_weights_the_samples_by_the_test():
    """Two samples with different hyperparameters: the exact mixture is the log-mean-exp of
    their exact predictives; the filter moves particles between samples, and must still
    converge to it. Over 20 generators the error had mean -0.001, sd 0.012, max 0.024; the
    bound 0.06 is 5 sd (failure rate < 1e-6 under a normal approximation; fixed
    generator)."""
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
    with pytest.raises(Exception, match="mc-tolerance"):
        method.perplexity_log_prob(arrays, _options(HYPS[0]), test, continuation=False,
                                   mc_tolerance=0.0)


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
    assert out["estimator"] == "mixture particle filter" and out["mc_se"] > 0
    assert out["mc_se_per_symbol"] == pytest.approx(out["mc_se"] / out["n_symbols"])
    assert out["draw_sets"] is None and out["mixture"] == "joint"
    from bayesfa.api import load

    api = load(run).perplexity(str(test))  # the Python API mirrors the command
    assert {k: api[k] for k in out} == out
    assert main(["perplexity", str(run), str(test), "--json", "--draw-sets", "1"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["mc_se"] is None and fixed["draw_sets"] == 1
    assert fixed["estimator"] == "per-sample particle filters of 1 particle"
    assert main(["perplexity", str(run), str(test), "--max-particles", "2"]) == 0
    text = capsys.readouterr()
    assert "Monte Carlo s.e." in text.out and "joint posterior mixture" in text.out
    assert "not converged" in text.err  # two particles cannot reach 0.002 nats per symbol
    assert main(["perplexity", str(run), str(test), "--json", "--per-symbol"]) == 0
    assert json.loads(capsys.readouterr().out)["quantity"].startswith("sum_t log E[p(x_t")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="issue 21 item 7 not met: on this Alice fit the default "
                   "gives 5.5587 against 5.5327 with --draw-sets 300 (0.026 apart; neither is "
                   "converged); strict, so the day it passes it reports XPASS and fails")
def test_alice_default_is_within_001_of_300_particles(tmp_path):
    """Alice in Wonderland, a PDIA fit of 400 sweeps (``bayesfa data alice``; ``fit --method
    pdia --iterations 400 --burn-in 200 --seed 0``, 4 chains, 80 samples): the default's
    perplexity against ``--draw-sets 300`` (each sample's own filter of 300 particles), the
    criterion of issue 21. Measured 2026-11-26 (this fit, this seed): the default 5.5587
    (578 particles, the 1 GiB cap, not converged: s.e. 0.0076 nats per symbol, 150 s CPU),
    K = 300 5.5327 (514 s CPU): 0.026 apart, so this test FAILS; K = 300 is not converged
    either (one sample's own filter reaches -6714..-6739 nats at K = 300 with resampling
    every 2 symbols against -6738 for the best sample here)."""
    run, data = tmp_path / "run", tmp_path / "alice"
    assert main(["data", "alice", "--out", str(data)]) == 0
    assert main(["fit", str(data / "alice.train"), "--method", "pdia", "--iterations", "400",
                 "--burn-in", "200", "--seed", "0", "--out", str(run), "--quiet"]) == 0
    from bayesfa.api import load

    r = load(run)
    t0 = time.process_time()
    default = r.perplexity(str(data / "alice.test"))
    t1 = time.process_time()
    k300 = r.perplexity(str(data / "alice.test"), draw_sets=300)
    t2 = time.process_time()
    print(f"default {default['perplexity']:.4f} ({t1 - t0:.0f} s CPU, {default['particles']} "
          f"particles, s.e. {default['mc_se_per_symbol']:.4f}), K = 300 "
          f"{k300['perplexity']:.4f} ({t2 - t1:.0f} s CPU)")
    assert abs(default["perplexity"] - k300["perplexity"]) <= 0.01
