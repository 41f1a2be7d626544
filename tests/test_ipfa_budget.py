"""``bayesfa fit --method ipfa --budget CPU_SECONDS`` (issue 38): the sweeps sized to a CPU
budget (:func:`bayesfa.samplers.pfa.ipfa.budget_plan`, a pure function of the timed costs, and
:func:`~bayesfa.samplers.pfa.ipfa.budget_options`). The plan stays within its money; a budgeted
fit is the unbudgeted fit of the schedule it records, bit for bit; a rerun in the same work
folder reuses the plan without timing; a budget too small is a one-line error. Nothing here
is statistical (no false-alarm rate to state)."""

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


def test_a_budgeted_fit_is_the_fit_of_the_schedule_it_records(corpus, method_options, tmp_path, monkeypatch):
    """The budgeted fit records the schedule it ran (``info["budget"]``: costs, plan, CPU);
    the same seed with that schedule given as --iterations/--burn-in/--period gives the same
    arrays bit for bit; the same fit again in its work folder reads the plan written there
    (nothing timed: the timing is made to fail) and gives the same arrays."""
    method, options = method_options
    res = method.fit(corpus, {**options, "budget": 3.0}, 3, False, workdir=tmp_path / "w")
    rec = res.info["budget"]
    assert rec["budget"] == 3.0 and rec["truncate"] == 16 and rec["sweep_seconds"] > 0
    assert rec["iterations"] == rec["burn_in"] + rec["n_draws"] * rec["period"] >= ipfa.BUDGET_MIN_SWEEPS
    assert res.info["n_draws_per_chain"] == rec["n_draws"] and rec["cpu_seconds"] > 0
    assert (tmp_path / "w" / ipfa.BUDGET_PLAN).exists()
    plain = method.fit(corpus, {**options, **{k: rec[k] for k in ("iterations", "burn_in", "period")}},
                       3, False)
    for k in res.arrays:
        np.testing.assert_array_equal(res.arrays[k], plain.arrays[k])

    def no_timing(*args, **kwargs):
        raise AssertionError("timed again")

    monkeypatch.setattr(ipfa, "budget_costs", no_timing)
    again = method.fit(corpus, {**options, "budget": 3.0}, 3, False, workdir=tmp_path / "w")
    assert again.info["budget"]["iterations"] == rec["iterations"]
    for k in res.arrays:
        np.testing.assert_array_equal(res.arrays[k], again.arrays[k])
    with pytest.raises(AssertionError, match="timed again"):  # another budget: a new plan
        method.fit(corpus, {**options, "budget": 3.5}, 3, False, workdir=tmp_path / "w")


@pytest.mark.parametrize("budget, match", [(0.01, "too small"), (-1.0, "positive finite"),
                                           (float("nan"), "positive finite")])
def test_bad_budgets_are_one_line_errors(corpus, method_options, budget, match):
    method, options = method_options
    with pytest.raises(InputError, match=match) as exc:
        method.fit(corpus, {**options, "budget": budget}, 3, False)
    assert "\n" not in str(exc.value)
