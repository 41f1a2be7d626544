"""The samplers' own statistics in ``sample_stats`` (issue 36, item 3): every MCMC method of
the numba samplers records, per draw, ``moved`` (the fraction of the positions resampled one
at a time whose state or assignment changed, per sweep, over the draw's sweeps) and the
acceptance rate of each Metropolis-Hastings, swap or split-merge move it makes
(:data:`bayesfa.rundir.SAMPLE_STATS`), as ``[chain, draw]`` variables of
``run.trace.sample_stats`` that ArviZ takes with the rest of the trace.

The kernels count and the fronts divide, without changing a draw: ``tests/test_layout_reference.py``
still holds every recorded array bit for bit, and ``tests/test_cgs_pfa.py`` checks the
Gibbs kernel's count against the paths of a sweep made by hand.

No test here is statistical: each fit has a fixed seed and every assertion is deterministic
for it. Two would fail for some other seeds: ``moved > 0`` somewhere in a fit (N = 3 states
on 30 strings: every one of the 2 x 12 draws' 2 sweeps would have to leave all 114 free
positions where they are, probability far below 1e-12), and an acceptance rate defined in
some draw (a move tried at least once in 24 draws: split-merge at 0.5 a sweep, the others
several times a sweep).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bayesfa
from bayesfa.rundir import SAMPLE_STATS

WORDS = ["ab", "abab", "b", "", "aab", "b", "abb", "ab", "ba", "a"] * 3
SCHEDULE = {"iterations": 40, "burn_in": 16, "period": 2, "chains": 2}  # 12 draws a chain

#: case -> (method, options, the acceptance rates its sampler_stats must hold besides moved)
CASES = {
    "cgs-pfa": ("cgs-pfa", {"states": 3, "kernel": "gibbs"}, ()),
    "cgs-pfa-alias-mh": ("cgs-pfa", {"states": 3, "kernel": "alias-mh"}, ("accept_mh",)),
    "cgs-pfa-bucket-mh": ("cgs-pfa", {"states": 3, "kernel": "bucket-mh"}, ("accept_mh",)),
    "cgs-pfa-interleave": ("cgs-pfa", {"states": 3, "kernel": "gibbs", "chains": 3,
                                       "interleave": 3}, ()),
    "cgs-pfa-split-merge": ("cgs-pfa", {"states": 3, "kernel": "gibbs", "split_merge": 0.5},
                            ("accept_split_merge",)),
    "cgs-pfa-blocked": ("cgs-pfa", {"states": 3, "kernel": "gibbs", "blocked_every": 3}, ()),
    "cgs-pfa-replicas": ("cgs-pfa", {"states": 3, "kernel": "gibbs", "replicas": 3},
                         ("accept_swap",)),
    "cgs-sg": ("cgs-sg", {"states": 3}, ()),
    "cgs-hmm": ("cgs-hmm", {"states": 3}, ()),
    "cgs-hmm-star": ("cgs-hmm-star", {"states": 3}, ()),
    "ipfa": ("ipfa", {}, ()),
    "ipfa-blocked": ("ipfa", {"sampler": "blocked"}, ()),
    "pdfa": ("pdfa", {"states": 3}, ("accept_entry", "accept_hyper")),
    "pdia": ("pdia", {}, ("accept_entry", "accept_table", "accept_hyper")),
    "pdia-smoothed": ("pdia-smoothed", {}, ("accept_entry", "accept_table", "accept_hyper")),
    "hpyp": ("hpyp", {}, ()),
}
#: compiled by the default suite anyway (tests/test_trace_arviz.py fits them): fast here too
FAST = {"cgs-pfa", "pdia", "hpyp"}
#: Every MCMC method of the numba samplers (the oracles' NUTS statistics are NumPyro's own).
NUMBA_MCMC = {"cgs-pfa", "cgs-sg", "cgs-hmm", "cgs-hmm-star", "ipfa", "pdfa", "pdia",
              "pdia-smoothed", "hpyp"}


def _param(case):
    return pytest.param(case, marks=() if case in FAST else pytest.mark.slow, id=case)


def _fit(method, options, **extra):
    return bayesfa.fit(WORDS, method=method, seed=3, **{**SCHEDULE, **options, **extra})


def test_every_numba_sampler_has_a_case():
    assert {method for method, _, _ in CASES.values()} == NUMBA_MCMC
    assert {"cgs-pfa", "cgs-sg", "cgs-hmm", "cgs-hmm-star", "ipfa", "pdfa", "pdia",
            "pdia-smoothed", "hpyp"} <= set(bayesfa.methods())


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_sample_stats_hold_moved_and_the_acceptance_rates(case):
    import arviz as az

    method, options, rates = CASES[case]
    run = _fit(method, options)
    stats = run.trace.sample_stats
    assert set(stats.data_vars) == {"moved", *rates}
    assert set(stats.data_vars) <= SAMPLE_STATS
    assert not set(run.trace.posterior.data_vars) & SAMPLE_STATS
    chains = {**SCHEDULE, **options}["chains"]
    for name in stats.data_vars:
        assert stats[name].dims == ("chain", "draw"), name
        assert stats[name].shape == (chains, 12), name
    moved = np.asarray(stats["moved"])
    assert np.all((moved >= 0) & (moved <= 1))
    assert moved.max() > 0  # the chains move (module docstring: a fixed seed, never fails)
    for name in rates:
        rate = np.asarray(stats[name])
        tried = rate[np.isfinite(rate)]  # NaN: no such move tried in that draw's sweeps
        assert tried.size > 0, name
        assert np.all((tried >= 0) & (tried <= 1)), name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant variables: NaN R-hat
        assert set(az.rhat(run.trace).data_vars) == set(run.trace.posterior.data_vars)
        assert len(az.summary(run.trace)) >= len(run.trace.posterior.data_vars)


#: N = 1: every position has one choice, so nothing can move (fast: cgs-pfa). Not pdfa: its
#: --states 1 is a start state and one more, two targets for every transition.
ONE_STATE = {"cgs-pfa": ("cgs-pfa", {"states": 1, "kernel": "gibbs"}),
             "cgs-pfa-alias-mh": ("cgs-pfa", {"states": 1, "kernel": "alias-mh"}),
             "cgs-sg": ("cgs-sg", {"states": 1}),
             "cgs-hmm": ("cgs-hmm", {"states": 1})}


@pytest.mark.parametrize("case", [_param(c) for c in ONE_STATE])
def test_moved_is_zero_when_nothing_can_move(case):
    method, options = ONE_STATE[case]
    run = _fit(method, options)
    stats = run.trace.sample_stats
    np.testing.assert_array_equal(np.asarray(stats["moved"]), 0.0)
    if "accept_mh" in stats:  # no Metropolis-Hastings step can propose another state
        assert np.all(np.isnan(np.asarray(stats["accept_mh"])))


def test_moved_is_the_kernels_count_over_the_sweeps_and_positions():
    """cgs-pfa's ``moved`` is the kernel's count of changed positions over ``period`` sweeps
    of the free positions: with ``period = 1`` a draw's count is where its path differs from
    the previous draw's, which the recorded counts bound from below (a changed count needs a
    changed position)."""
    run = _fit("cgs-pfa", {"states": 3, "kernel": "gibbs"}, period=1, iterations=28)
    moved = np.asarray(run.trace.sample_stats["moved"])
    free = run.info["n_free_positions"]
    assert free > 0
    positions = moved * free  # whole numbers of positions, exactly
    np.testing.assert_allclose(positions, np.round(positions), atol=1e-9)
    counts = np.asarray(run.arrays["counts"])
    changed = np.any(counts[:, 1:] != counts[:, :-1], axis=(2, 3, 4))
    assert np.all(positions[:, 1:][changed] > 0)


def test_sample_stats_survive_the_run_folder_and_diagnose_reports_them(tmp_path, capsys):
    from bayesfa.cli import main

    run = _fit("cgs-pfa", {"states": 3, "kernel": "gibbs"}, out=tmp_path / "run")
    again = bayesfa.load(tmp_path / "run")
    moved = np.asarray(again.trace.sample_stats["moved"])
    np.testing.assert_array_equal(moved, np.asarray(run.trace.sample_stats["moved"]))
    report = again.diagnose()
    assert "moved" in report["variables"]
    assert not any("moved" in w for w in report["warnings"])  # not held to R-hat / ESS
    assert report["sampler_stats"] == {"moved": float(moved.mean())}
    assert main(["diagnose", str(tmp_path / "run")]) == 0
    assert f"sampler: moved {moved.mean():.3g}\n" in capsys.readouterr().out


def test_sampler_means_leave_out_the_draws_that_tried_no_move():
    from bayesfa.validation.diagnostics import sampler_means

    trace = {"moved": np.array([[0.5, 0.25]]), "accept_mh": np.array([[np.nan, 0.5]]),
             "accept_swap": np.full((1, 2), np.nan), "log_joint": np.array([[-3.0, -2.0]])}
    assert sampler_means(trace) == {"moved": 0.375, "accept_mh": 0.5, "accept_swap": None}
