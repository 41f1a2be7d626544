"""Traces native to ArviZ (issue 36, item 3): ``run.trace`` of every MCMC method has a
``posterior`` group (each draw's model quantities) and, where the sampler records its own
statistics, a ``sample_stats`` group (split by :data:`bayesfa.rundir.SAMPLE_STATS`), so that
``az.summary``, ``az.rhat``, ``az.ess`` and ``az.plot_trace`` take it with no group selected,
under ArviZ 0.2x and 1.x alike. Optimisers keep their iterations as an optimisation history
(group ``optimisation_history``, dim ``iteration``), never as posterior draws, and
``diagnose`` says so. A run of one chain gets a note, not a warning, that R-hat needs two.

The fast set fits one MCMC method of each family (cgs-pfa, pdia, hpyp) and two optimisers
(cvb0, hmm-em); the other MCMC methods (the oracles compile with JAX) and optimisers are
``slow``. No test here is statistical: every assertion is deterministic for its seed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bayesfa
from bayesfa.rundir import HISTORY, OBJECTIVES, SAMPLE_STATS, TRACE, read_trace, write_trace

WORDS = ["ab", "abab", "b", "", "aab", "b", "abb", "ab", "ba", "a"] * 3

#: Every MCMC method of the registry with a tiny budget: 2 chains, 12 draws each.
MCMC = {"cgs-pfa": {"states": 2, "iterations": 40, "burn_in": 16, "period": 2},
        "cgs-sg": {"states": 2, "iterations": 40, "burn_in": 16, "period": 2},
        "cgs-hmm": {"states": 2, "iterations": 40, "burn_in": 16, "period": 2},
        "cgs-hmm-star": {"states": 2, "iterations": 40, "burn_in": 16, "period": 2},
        "ipfa": {"iterations": 40, "burn_in": 16, "period": 2},
        "pdfa": {"states": 2, "iterations": 40, "burn_in": 16, "period": 2},
        "pdia": {"iterations": 40, "burn_in": 16, "period": 2},
        "pdia-smoothed": {"iterations": 40, "burn_in": 16, "period": 2},
        "hpyp": {"iterations": 40, "burn_in": 16, "period": 2},
        "oracle-pfa": {"states": 2, "iterations": 40, "burn_in": 16},
        "oracle-hmm": {"states": 2, "iterations": 40, "burn_in": 16},
        "oracle-pdfa": {"states": 2, "iterations": 40, "burn_in": 16, "pdfa_inference": "mcmc"}}
OPTIMISERS = {"cvb0": {"states": 2}, "gcvb0": {"states": 2}, "cvb2": {"states": 2},
              "hmm-em": {"states": 2, "restarts": 2}}
#: Methods that record no trace: the greedy learners and the memoizer (one particle, seated once).
NO_TRACE = {"estatemerge", "evgram", "cvgram", "alergia", "memoizer"}
FAST = {"cgs-pfa", "pdia", "hpyp", "cvb0", "hmm-em"}


def _param(name):
    return pytest.param(name, marks=() if name in FAST else pytest.mark.slow)


def test_every_method_is_classified_here():
    """A new method must say here whether it samples, optimises or records no trace."""
    assert set(bayesfa.methods()) == set(MCMC) | set(OPTIMISERS) | NO_TRACE


def _groups(trace) -> set[str]:
    if hasattr(trace, "children"):  # arviz 1.x: an xarray DataTree
        return set(trace.children)
    return set(trace.groups())  # arviz 0.2x: InferenceData


def _fit(method, data=WORDS, **extra):
    options = {**MCMC.get(method, OPTIMISERS.get(method, {})), **extra}
    if method in MCMC:
        options["chains"] = options.get("chains", 2)
    return bayesfa.fit(data, method=method, seed=3, **options)


@pytest.fixture
def words_file(tmp_path):
    """WORDS as a PAutomaC sample (a, b -> letters 0, 1), for fits into a run folder."""
    from bayesfa.corpus import Corpus
    from bayesfa.pautomac import write_sample

    path = tmp_path / "words.train"
    write_sample(path, Corpus.from_strings([["ab".index(c) for c in w] for w in WORDS], 2))
    return path


def _arviz_checks(trace):
    """``az.rhat``, ``az.ess``, ``az.summary`` and ``az.plot_trace`` of the whole trace, no
    group selected: each runs and covers the posterior's variables (no sampler statistic)."""
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    posterior = set(trace.posterior.data_vars)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant variables: NaN R-hat, "single value" KDEs
        assert set(az.rhat(trace).data_vars) == posterior
        assert set(az.ess(trace).data_vars) == posterior
        rows = {name.split("[")[0] for name in az.summary(trace).index}
        assert rows == posterior
        plotted = az.plot_trace(trace)
    assert plotted is not None
    if int(az.__version__.split(".")[0]) < 1:  # arviz 0.2x: an array of axes, a row a variable
        import matplotlib.pyplot as plt

        titles = {ax.get_title().split("\n")[0] for ax in np.ravel(plotted)}
        assert "log_joint" in titles or "potential_energy" in titles
        assert titles <= posterior
        plt.close("all")


@pytest.mark.parametrize("method", [_param(m) for m in MCMC])
def test_mcmc_trace_is_posterior_and_sample_stats_for_arviz(method):
    run = _fit(method)
    trace = run.trace
    posterior = trace.posterior
    assert dict(posterior.sizes)["chain"] == 2 and dict(posterior.sizes)["draw"] >= 10
    assert not set(posterior.data_vars) & SAMPLE_STATS
    assert {"log_joint", "potential_energy"} & set(posterior.data_vars)
    groups = _groups(trace)
    assert "posterior" in groups and HISTORY not in groups
    if "sample_stats" in groups:
        assert set(trace.sample_stats.data_vars) <= SAMPLE_STATS
    _arviz_checks(trace)
    report = run.diagnose()
    assert report["kind"] == "sampler" and report["notes"] == []  # two chains: R-hat defined


def test_oracle_nuts_statistics_go_to_sample_stats():
    """The split itself, on a trace shaped like a NUTS oracle's (no JAX needed)."""
    from bayesfa.rundir import trace_datasets

    rng = np.random.default_rng(0)
    trace = {"potential_energy": rng.normal(size=(2, 5)), "diverging": np.zeros((2, 5), bool),
             "accept_prob": rng.uniform(size=(2, 5)), "num_steps": np.full((2, 5), 7)}
    groups = trace_datasets(trace)
    assert set(groups) == {"posterior", "sample_stats"}
    assert set(groups["posterior"].data_vars) == {"potential_energy"}
    assert set(groups["sample_stats"].data_vars) == {"diverging", "accept_prob", "num_steps"}


def test_small_models_carry_each_draws_plugin_parameters():
    """cgs-pfa, 2 states over 2 letters: ``trans`` and ``stop`` of every draw are in the
    posterior, and the equal-weight mixture of the draws' automata built from them alone
    (forward algorithm) gives the run's prediction (Eq. 6 of Shibata & Yoshinaka 2013)."""
    from bayesfa.forward import forward_log_prob
    from scipy.special import logsumexp

    run = _fit("cgs-pfa")
    post = run.trace.posterior
    trans, stop = np.asarray(post["trans"]), np.asarray(post["stop"])
    chains, draws = trans.shape[:2]
    assert trans.shape == (chains, draws, 2, 3, 3) and stop.shape == (chains, draws, 3)
    assert post["trans"].dims == ("chain", "draw", "letter", "state", "next_state")
    # each state's stop and outgoing transitions are one distribution
    np.testing.assert_allclose(stop + trans.sum(axis=(2, 4)), 1.0, rtol=1e-12)
    assert np.ptp(trans, axis=(0, 1)).max() > 0  # the draws differ
    assert np.ptp(stop[..., 0]) == 0  # the start state's stop: one value up to rounding, stored once
    test = ["ab", "", "bba", "a"]
    init = np.eye(3)[0]  # the paper's initial state 0
    corpus = run.corpus(test)
    per_draw = np.stack([forward_log_prob(init, trans[c, d], stop[c, d], corpus)
                         for c in range(chains) for d in range(draws)])
    mixture = logsumexp(per_draw, axis=0) - np.log(chains * draws)
    np.testing.assert_allclose(mixture, run.predict(test), rtol=1e-9)


@pytest.mark.slow
def test_plot_trace_of_a_pautomac_fit_with_plugin_parameters():
    """PAutomaC problem 24, 8 states (5 letters: 405 transition parameters), 2 chains of 100
    draws. ArviZ 0.2x: the plug-in parameters are in the posterior; entries that differ within
    a chain by rounding only (unvisited transitions) are stored as one value, so ArviZ's KDE
    draws every panel, per chain and combined (it overflowed on a spread of a few ulps).
    ArviZ 1.x refuses more than ``plot.max_subplots`` (40) panels: they are left out."""
    import arviz as az
    import matplotlib

    from bayesfa.datasets import pautomac_path

    matplotlib.use("Agg")
    run = bayesfa.fit(pautomac_path(24, "train"), method="cgs-pfa", states=8, beta=0.05,
                      iterations=300, burn_in=100, period=2, chains=2, seed=1)
    trace = run.trace
    if int(az.__version__.split(".")[0]) >= 1:
        assert "trans" not in trace.posterior and "log_joint" in trace.posterior
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert az.plot_trace(trace) is not None
        return
    trans = np.asarray(trace.posterior["trans"])
    assert trans.shape == (2, 100, 5, 9, 9)
    rounding = 4 * (5 * 9 + 1) * np.finfo(np.float64).eps
    spread = np.ptp(trans, axis=1)
    assert np.all((spread == 0) | (spread > rounding * np.abs(trans).max(axis=1)))
    assert (spread == 0).any() and (spread > 0).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert az.plot_trace(trace) is not None
        assert az.plot_trace(trace, combined=True) is not None
    if int(az.__version__.split(".")[0]) < 1:
        import matplotlib.pyplot as plt

        plt.close("all")


def test_large_models_leave_the_plugin_parameters_out(monkeypatch):
    import bayesfa.rundir

    monkeypatch.setattr(bayesfa.rundir, "PLUGIN_MAX", 2 * 3 * 3 - 1)
    post = _fit("cgs-pfa").trace.posterior
    assert "trans" not in post and "log_joint" in post


def test_run_folder_trace_round_trips_and_arviz_reads_the_file(tmp_path, words_file):
    import arviz as az

    run = _fit("cgs-pfa", words_file, out=tmp_path / "run")
    loaded = bayesfa.load(tmp_path / "run")
    assert set(loaded.trace.posterior.data_vars) == set(run.trace.posterior.data_vars)
    for name in run.trace.posterior.data_vars:
        np.testing.assert_array_equal(loaded.trace.posterior[name], run.trace.posterior[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_file = az.from_netcdf(tmp_path / "run" / TRACE)
    assert "log_joint" in from_file.posterior


@pytest.mark.parametrize("method", [_param(m) for m in OPTIMISERS])
def test_optimiser_trace_is_an_optimisation_history(method, tmp_path, words_file):
    run = _fit(method, words_file, out=tmp_path / "run")
    for r in (run, bayesfa.load(tmp_path / "run")):
        trace = r.trace
        assert _groups(trace) == {HISTORY}  # no posterior draws, no chain/draw dims
        history = getattr(trace, HISTORY)
        assert set(history.dims) == {"iteration"}
        objective = next(k for k in OBJECTIVES if k in history.data_vars)
        # one row an iteration; gcvb0's first row is its starting point, before any L-BFGS-B step
        start = 1 if method == "gcvb0" else 0
        assert history.sizes["iteration"] == r.diagnose()["status"]["iterations"] + start
        report = r.diagnose()
        assert report["kind"] == "optimiser"
        assert report["status"]["message"].startswith("optimisation history, not draws")
        assert report["status"]["objective"] == OBJECTIVES[objective][0]


def test_hmm_em_history_is_the_kept_restarts_log_likelihood():
    """EM never lowers the likelihood: the recorded history (each E-step's) rises, stays
    below the kept restart's training log-likelihood (scored after the last M-step) and, when
    --tol stopped it, rose by less than --tol at the end."""
    run = _fit("hmm-em")
    history = np.asarray(run._trace_arrays()["log_lik"]).reshape(-1)
    status = run.diagnose()["status"]
    assert status["direction"] == "maximised" and status["objective_reversals"] == 0
    assert history.size == run.info["iterations_run"] > 2
    assert history[-1] <= run.info["train_log_likelihood"] + 1e-9
    assert run.info["converged"] and status["converged"]
    assert 0 <= history[-1] - history[-2] < run.options["tol"]


def test_one_chain_gets_a_note_not_a_warning(tmp_path, capsys, words_file):
    """hpyp runs one chain by default: diagnose says why there is no R-hat, as a note on
    standard output, and no warning."""
    from bayesfa.cli import main

    options = dict(MCMC["hpyp"])
    run = bayesfa.fit(words_file, method="hpyp", seed=3, out=tmp_path / "run", **options)
    assert run.options["chains"] == 1
    report = run.diagnose()
    assert report["notes"] == ["R-hat needs >= 2 chains; this run has 1 (use --chains 4 to check "
                               "that chains agree); the within-chain figures are reported"]
    # warnings, if any, are about each chain alone (a short chain), never the missing R-hat
    assert not any("R-hat is undefined" in w or "R-hat needs" in w for w in report["warnings"])
    assert main(["diagnose", str(tmp_path / "run")]) == 0
    out, err = capsys.readouterr()
    assert "note: R-hat needs >= 2 chains; this run has 1 (use --chains 4" in out
    assert "R-hat is undefined" not in err and "R-hat needs" not in err


def test_trace_written_before_the_split_still_reads(tmp_path):
    """A ``trace.nc`` of an earlier version (every variable in ``posterior``, an optimiser's
    as one chain) reads as it did, and an optimiser's is still an optimisation history."""
    import xarray as xr

    from bayesfa.validation import diagnostics

    d0 = np.linspace(10, 1, 6)[None, :]
    path = tmp_path / TRACE
    xr.Dataset({"d0": (("chain", "draw"), d0)}).to_netcdf(path, group="posterior", engine="h5netcdf")
    trace = read_trace(path)
    np.testing.assert_array_equal(trace["d0"], d0)
    assert diagnostics.is_optimiser(trace)
    write_trace(tmp_path / "new.nc", trace)  # and written now: the history group
    np.testing.assert_array_equal(read_trace(tmp_path / "new.nc")["d0"], d0)
