"""``bayesfa fit --method ipfa --budget CPU_SECONDS`` (issue 38): the sweeps sized to a CPU
budget (:func:`bayesfa.samplers.pfa.ipfa.budget_plan`, a pure function of the timed costs, and
:func:`~bayesfa.samplers.pfa.ipfa.budget_options`). The plan stays within its money; a budgeted
fit, its first chain paced by the CPU it spends, is the unbudgeted fit of the schedule it
records, bit for bit; a budget too small is a one-line error. Nothing here is statistical (no
false-alarm rate to state)."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.pautomac import read_sample
from bayesfa.samplers.pfa import ipfa


@pytest.mark.parametrize("sweep, draw, money, chains", [
    (0.01, 0.0, 10.0, 2), (0.01, 0.002, 10.0, 2), (0.5, 0.3, 30.0, 1), (0.02, 1.0, 5.0, 1),
    (0.001, 0.0, 100.0, 4), (1.0, 0.0, 3.0, 1)])
def test_budget_plan_spends_at_most_its_money_on_half_burn_in_and_capped_draws(sweep, draw, money, chains):
    plan = ipfa.budget_plan(sweep, draw, money, chains)
    each = money / chains
    if plan is None:  # too small: not even BUDGET_MIN_SWEEPS sweeps fit
        assert each < ipfa.BUDGET_MIN_SWEEPS * sweep + draw
        return
    s, b, p, d = plan["iterations"], plan["burn_in"], plan["period"], plan["n_draws"]
    assert s == b + d * p and s >= ipfa.BUDGET_MIN_SWEEPS and p >= 1
    assert 1 <= d <= ipfa.BUDGET_MAX_DRAWS and d <= s - s // 2 and b >= s // 2
    assert s * sweep + d * draw <= each + 1e-9
    if draw > 0 and d > 1:
        assert d * draw <= ipfa.BUDGET_DRAW_SHARE * each + 1e-9
    # one sweep more would not fit with the same draws (every sweep the money buys is run)
    assert (s + 1) * sweep + d * draw > each or d == 1


def test_budget_plan_refuses_a_budget_below_its_minimum_sweeps():
    assert ipfa.budget_plan(1.0, 0.0, ipfa.BUDGET_MIN_SWEEPS - 0.5, 1) is None
    assert ipfa.budget_plan(1.0, 0.0, ipfa.BUDGET_MIN_SWEEPS + 0.5, 1)["iterations"] == ipfa.BUDGET_MIN_SWEEPS


@pytest.fixture(scope="module")
def corpus():
    path = Path(str(resources.files("bayesfa") / "data" / "pautomac" / "24.pautomac.train"))
    return read_sample(path).subset(np.arange(300))


@pytest.fixture(scope="module")
def method_options(corpus):
    """The registry's ipfa options with a small truncation (cheap sweeps), kernels warmed:
    a budget counts its process's CPU, and a first use's compiling would spend it."""
    method = get_method("ipfa")
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    options = vars(parser.parse_args(["--chains", "1", "--truncate", "16"]))
    ipfa.sample_ipfa(corpus.subset(np.arange(20)), **{**method._options(options), "iterations": 3,
                                                     "burn_in": 1, "period": 1})
    return method, options


def test_a_budgeted_fit_is_the_fit_of_the_schedule_it_records(corpus, method_options, tmp_path):
    """The budgeted fit (2 chains: the first paced by the CPU it spends, the second on the
    schedule the first realized) records its plan and the schedule it ran (``info["budget"]``);
    the plan fixes the draws and the anneal; the same seed with that schedule given as
    --iterations/--burn-in/--period/--anneal gives the same arrays bit for bit. A work folder
    is not used (a paced fit keeps no checkpoints)."""
    method, options = method_options
    options = {**options, "chains": 2}
    res = method.fit(corpus, {**options, "budget": 3.0}, 3, False, workdir=tmp_path / "w")
    rec = res.info["budget"]
    plan = rec["plan"]
    assert rec["budget"] == 3.0 and rec["truncate"] == 16 and rec["sweep_seconds"] > 0
    assert plan["iterations"] == plan["burn_in"] + plan["n_draws"] * plan["period"] >= ipfa.BUDGET_MIN_SWEEPS
    assert rec["n_draws"] == plan["n_draws"] == res.info["n_draws_per_chain"]
    assert rec["anneal"] == min(ipfa.ANNEAL_SWEEPS, plan["burn_in"]) == res.info["anneal"][0]
    assert rec["iterations"] == rec["burn_in"] + rec["n_draws"] * rec["period"]
    assert rec["burn_in"] >= rec["anneal"] and rec["period"] >= 1 and rec["cpu_seconds"] > 0
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())
    plain = method.fit(corpus, {**options, **{k: rec[k] for k in ("iterations", "burn_in", "period",
                                                                  "anneal")}}, 3, False)
    assert sorted(res.arrays) == sorted(plain.arrays)
    for k in res.arrays:
        np.testing.assert_array_equal(res.arrays[k], plain.arrays[k])
    for k in res.trace:
        np.testing.assert_array_equal(res.trace[k], plain.trace[k])


def test_a_paced_chain_is_the_chain_of_the_schedule_it_realized(corpus):
    """``sample_ipfa(pace=...)``: whatever burn-in and period the CPU gives the first chain,
    the fit equals the unpaced fit of ``info["burn_in"]`` and ``info["period"]`` (one sweep a
    kernel call or many: the same chain); a paced fit with a checkpoint folder is refused."""
    part = corpus.subset(np.arange(120))
    kw = dict(states=4, chains=2, truncate=8, seed=5, iterations=6, burn_in=2, period=2, anneal=2)
    paced = ipfa.sample_ipfa(part, pace=(0.05, 0.0), **kw)
    burn, period = paced.info["burn_in"], paced.info["period"]
    assert burn >= 2 and period >= 1
    plain = ipfa.sample_ipfa(part, **{**kw, "burn_in": burn, "period": period,
                                      "iterations": burn + 2 * period})
    for a, b in zip(paced, plain):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="no checkpoints"):
        ipfa.sample_ipfa(part, pace=(0.05, 0.0), checkpoint_dir="x", **kw)


@pytest.mark.parametrize("budget, match", [(3.0, "too small"), (-1.0, "positive finite"),
                                           (float("nan"), "positive finite")])
def test_bad_budgets_are_one_line_errors(corpus, method_options, monkeypatch, budget, match):
    """A budget that affords fewer than BUDGET_MIN_SWEEPS sweeps (the timing made to say a
    sweep costs 10 CPU s: a real timing's outcome would depend on the machine), and budgets
    that are not positive finite numbers: one-line errors."""
    method, options = method_options
    monkeypatch.setattr(ipfa, "budget_costs", lambda *a, **k: {"sweep_seconds": 10.0,
                                                               "draw_seconds": 0.0, "truncate": 16})
    with pytest.raises(InputError, match=match) as exc:
        method.fit(corpus, {**options, "budget": budget}, 3, False)
    assert "\n" not in str(exc.value)


def test_the_timed_sweep_is_the_difference_of_two_runs_whatever_the_clocks_origin(monkeypatch):
    """``budget_costs`` times a sweep as the difference of runs of 1 and ``1 +
    BUDGET_TIMED_SWEEPS`` burn-in sweeps, so a run's fixed cost cancels: on a clock that a run
    of ``k`` sweeps advances by ``2 + 0.25 k`` seconds, starting at 0 (a new thread's CPU
    clock), the sweep costs 0.25 s (the corpus is its own calibration part). Issue 39: ``t1 %
    t0`` for ``t1 - t0`` lived, equal only while ``t1 < 2 t0``."""
    clock = [0.0]

    def fake_run(part, *, iterations, **kw):
        clock[0] += 2.0 + 0.25 * iterations

    monkeypatch.setattr(ipfa, "sample_ipfa", fake_run)
    monkeypatch.setattr(ipfa.time, "thread_time", lambda: clock[0])
    small = read_sample(Path(str(resources.files("bayesfa") / "data" / "pautomac"
                                 / "24.pautomac.train"))).subset(np.arange(5))
    assert small.n_tokens < ipfa.BUDGET_CALIBRATION_TOKENS
    method = get_method("ipfa")
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    options = method._options(vars(parser.parse_args(["--truncate", "8"])))
    assert ipfa.budget_costs(small, options, None)["sweep_seconds"] == pytest.approx(0.25)
