"""``bayesfa fit --method cgs-pfa --auto --budget`` (bayesfa.samplers.pfa.auto): the held-out
slice comes from the training strings only and the test strings never change a decision; every
decision is recorded; a state split is a valid path that merges back to its parent; the same
seed and schedule give the same fit bit for bit; the CPU budget holds within the stated
overshoot; bad budgets are one-line errors.

Fits run on the first 3,000 strings of the bundled PAutomaC problem 24 with budgets of a few
CPU seconds, so the ladder is short; nothing here is statistical (no false-alarm rate to state).
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import benchmodules
from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.pautomac import read_sample
from bayesfa.samplers.chains import free_positions
from bayesfa.samplers.pfa import auto
from bayesfa.samplers.pfa.cgs_pfa import METHOD, holdout_split, new_counts

BUDGET = 2.5
#: Stated overshoot of --budget: the fit's CPU stays below (1 + OVERSHOOT) x budget. The plan
#: aims at auto.TARGET = 0.97 of it, phase 3 sized by costs measured at the winner's N
#: (benchmarks/RESULTS.md, "--auto spends its budget": 0.9-1.0 of it on PAutomaC problems).
OVERSHOOT = 0.10


def _data(name: str) -> Path:
    return Path(str(resources.files("bayesfa") / "data" / "pautomac" / name))


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    full = read_sample(_data("24.pautomac.train"))
    return full.subset(np.arange(3000))


@pytest.fixture(scope="module")
def test_corpus() -> Corpus:
    return read_sample(_data("24.pautomac.test"))


def _options(**extra):
    return {"auto": True, "chains": 2, **extra}


@pytest.fixture(scope="module")
def warm(corpus):
    """The kernels compiled (or loaded from numba's cache) before any budgeted fit: a fit's
    budget counts its process's CPU, compiling included, and on a cold cache the compiles
    alone pass the few seconds these fits get."""
    from bayesfa.samplers.pfa import cgs_pfa

    small = corpus.subset(np.arange(200))
    with auto.front_session(cgs_pfa):
        auto.calibrate(small.subset(np.arange(150)), small.subset(np.arange(150, 200)))
        out = auto._chain(small, 5, auto.BETA0, 4, 2, np.random.SeedSequence(0), None)
        auto.heldout_per_string(out[0], auto.BETA0, small)


@pytest.fixture(scope="module")
def fitted(corpus, warm, tmp_path_factory):
    """One --auto fit (timed schedule) and its schedule written out."""
    res = METHOD.fit(corpus, _options(budget=BUDGET), 5, False)
    path = tmp_path_factory.mktemp("auto") / "schedule.json"
    path.write_text(json.dumps(res.info["auto"]["schedule"]))
    return res, path


@pytest.fixture(scope="module")
def refit(corpus, test_corpus, fitted):
    """The same fit again from its recorded schedule, now predicting test strings online
    (keeping one draw per chain)."""
    return METHOD.fit(corpus, _options(schedule=str(fitted[1]), max_draws=1), 5, False, predict=test_corpus)


def test_heldout_slice_is_training_strings_and_test_strings_change_no_decision(corpus, fitted, refit,
                                                                               test_corpus):
    res, with_test = fitted[0], refit
    kept, held = holdout_split(corpus.n_strings, auto.HOLDOUT, np.random.SeedSequence(5))
    assert held.size == res.info["auto"]["holdout_strings"] == int(auto.HOLDOUT * corpus.n_strings)
    assert np.intersect1d(kept, held).size == 0 and np.union1d(kept, held).size == corpus.n_strings
    # the same fit predicting test strings online: the same decisions (scores, winner)
    a, b = res.info["auto"], with_test.info["auto"]
    assert a["ladder"] == b["ladder"] and a["betas"] == b["betas"] and a["winner"] == b["winner"]
    assert with_test.arrays["predict_log_mean"].shape == (test_corpus.n_strings,)


def test_the_ladder_stops_after_patience_misses_in_a_row_and_keeps_the_best():
    """ladder_step on scripted held-out scores (20 strings): a gain within its SE is a miss, a
    gain after one miss resets the count, the PATIENCE-th miss in a row stops the ladder with
    the best rung (not the last) as winner."""
    assert auto.PATIENCE == 2
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(6, 20))
    scores = [noise[0], noise[1] + 5, noise[2] + 5, noise[3] + 9, noise[4] + 9, noise[5] + 8.9]
    best, misses, recs = None, 0, []
    for r, per in enumerate(scores):
        rec = {}
        best, misses, stop = auto.ladder_step(rec, per, scores[best] if best is not None else None,
                                              r, best, misses)
        recs.append(rec)
        if stop:
            break
    assert [("miss" in x, x.get("miss")) for x in recs] == [
        (False, None), (False, None), (True, 1), (False, None), (True, 1), (True, 2)]
    assert best == 3 and "stop" in recs[-1] and len(recs) == 6
    assert all("gain" in x and "gain_se" in x for x in recs[1:])


def test_every_decision_is_recorded(fitted):
    a = fitted[0].info["auto"]
    assert a["ladder"][0]["states"] == auto.LADDER_START
    assert [r["states"] for r in a["ladder"]] == auto.ladder()[:len(a["ladder"])]
    for r in a["ladder"]:
        assert np.isfinite(r["heldout"]) and r["heldout_se"] > 0
    for r in a["ladder"][1:]:
        assert r["gain_se"] > 0
    misses = 0
    for r in a["ladder"][:-1]:  # each rung but the last gained by more than its SE, or missed
        assert "stop" not in r
        misses = misses + 1 if "miss" in r else 0
        assert r.get("miss", 0) == misses < auto.PATIENCE
        assert ("miss" in r) == (r.get("gain", np.inf) <= r.get("gain_se", 0))
    last = a["ladder"][-1]
    assert "stop" in last or last.get("gain", np.inf) > last.get("gain_se", 0) or "miss" in last
    # the winner is the last rung that gained (or the first rung)
    gained = [r["states"] for r in a["ladder"] if "miss" not in r]
    winner = a["winner"]
    assert winner["states"] == gained[-1]
    assert winner["beta"] in auto.BETAS
    assert {s["phase"] for s in a["steps"]} >= {"ladder", "final"}
    assert all(s["cpu"] >= 0 and s["cpu_model"] > 0 for s in a["steps"])
    assert fitted[0].arrays["counts"].shape[2] == winner["states"] + 1
    assert float(fitted[0].arrays["beta"]) == winner["beta"]


def _phase2_setup(corpus, fitted, sweeps: int, spare: int):
    """Phase 2's inputs at N = 10 on the fixture's corpus: ``(schedule, kept, held, money, z0)``,
    money for ``sweeps`` sweeps a round-1 candidate (and ``spare`` sweeps more) and a random
    path ``z0``."""
    schedule = fitted[0].info["auto"]["schedule"]
    kept_idx, held_idx = holdout_split(corpus.n_strings, auto.HOLDOUT, np.random.SeedSequence(5))
    kept, held = corpus.subset(kept_idx), corpus.subset(held_idx)
    pos = free_positions(kept.tokens)
    units = len(auto.BETAS) + auto.BETA_KEEP * auto.BETA_GROWTH
    money = (sweeps * units + spare) * auto.sweep_cost(schedule, 10, pos.size) + (
        (len(auto.BETAS) + auto.BETA_KEEP) * auto.RUNG_DRAWS
        * auto.forward_cost(schedule, 10, auto._forward_size(held)))
    z0 = np.zeros(kept.n_tokens + 1, dtype=np.int32)
    z0[pos] = np.random.default_rng(0).integers(1, 11, size=pos.size, dtype=np.int32)
    return schedule, kept, held, money, z0


def test_beta_phase_is_successive_halving_with_a_longer_second_round(corpus, fitted):
    """Phase 2 on its own, with money for it: every beta of BETAS for the same sweeps, then the
    BETA_KEEP best by held-out score for BETA_GROWTH times as many, the best of those the
    winner; each step charged its modelled cost."""
    from bayesfa.samplers.pfa import cgs_pfa

    sweeps = 2 * auto.MIN_RUNG_SWEEPS
    schedule, kept, held, money, z0 = _phase2_setup(corpus, fitted, sweeps, spare=2)
    ledger = auto._Ledger(money)
    with auto.front_session(cgs_pfa):
        records, beta, z = auto.run_betas(kept, held, schedule, money, 10, z0, 5, ledger)
    first = [r for r in records if r["round"] == 1]
    second = [r for r in records if r["round"] == 2]
    assert [r["beta"] for r in first] == list(auto.BETAS)
    assert all(r["sweeps"] == sweeps for r in first)
    best = sorted(first, key=lambda r: -r["heldout"])[:auto.BETA_KEEP]
    assert [r["beta"] for r in second] == sorted(r["beta"] for r in best)
    assert all(r["sweeps"] == auto.BETA_GROWTH * sweeps for r in second)
    assert beta == max(second, key=lambda r: r["heldout"])["beta"]
    assert z.shape == z0.shape and not np.array_equal(z, z0)
    assert ledger.spent <= money and ledger.spent > 0.9 * money


@pytest.mark.parametrize("peak, extend, tried, winner", [
    (1e-4, 2, (0.002, 0.001), 0.001), (1e-4, 1, (0.002,), 0.002), (1e-4, 0, (), 0.005),
    (0.3, 2, (0.2, 0.5), 0.2), (0.02, 2, (), 0.02)])
def test_the_beta_phase_steps_past_an_edge_of_the_grid_that_wins(corpus, fitted, monkeypatch,
                                                                   peak, extend, tried, winner):
    """With BETA_EXTEND = K, round 1 tries the next of BETAS_BELOW (BETAS_ABOVE) while the best
    candidate so far is the smallest (largest) one tried, at most K of them, at round 1's
    sweeps, each charged beyond phase 2's money; round 2 and the winner then range over all
    tried. Held-out scores faked to peak at ``peak`` in log beta."""
    from bayesfa.samplers.pfa import cgs_pfa

    sweeps = auto.MIN_RUNG_SWEEPS
    schedule, kept, held, money, z0 = _phase2_setup(corpus, fitted, sweeps, spare=1)
    monkeypatch.setattr(auto, "BETA_EXTEND", extend)
    monkeypatch.setattr(auto, "heldout_per_string",
                        lambda trace, beta, held: np.full(held.n_strings, -np.log(beta / peak) ** 2))
    ledger = auto._Ledger(money)
    with auto.front_session(cgs_pfa):
        records, beta, _ = auto.run_betas(kept, held, schedule, money, 10, z0, 5, ledger)
    first = [r for r in records if r["round"] == 1]
    assert [r["beta"] for r in first] == [*auto.BETAS, *tried]
    assert [r["beta"] for r in first if r.get("extension")] == list(tried)
    assert all(r["sweeps"] == sweeps for r in first)
    assert beta == winner
    per_candidate = ledger.steps[0]["cpu_model"]
    assert ledger.spent == pytest.approx(
        (len(auto.BETAS) + len(tried)) * per_candidate + sum(s["cpu_model"] for s in ledger.steps[len(first):]))


SCHEDULE = {"position_seconds": 1e-7, "lane_seconds": 2e-9, "forward_seconds": 1e-9}


@pytest.mark.parametrize("forward, chains, money, binds", [
    (1e-10, 8, 300.0, "phase 3"), (1e-9, 2, 300.0, "phase 2"), (1e-11, 2, 300.0, "phase 2"),
    (1e-12, 1, 3000.0, None)])
def test_the_ladder_climbs_only_to_an_n_the_phases_after_it_afford(forward, chains, money, binds):
    """ladder_ceiling on a made-up schedule: the largest rung at which phase 2 gets at least
    MIN_RUNG_SWEEPS per candidate (beta_sweeps) and phase 3's chains a ladder rung's sweeps each
    within their shares; the next rung fails one of the two (the one named by ``binds``), or the
    ceiling is the ladder's top."""
    sch = {**SCHEDULE, "forward_seconds": forward}
    m, m_all, size, sweeps = 400_000, 420_000, 200_000, 120
    top = auto.ladder_ceiling(sch, money, chains, m, m_all, size, sweeps)
    rungs = auto.ladder()
    final_money = (1 - auto.LADDER_SHARE - auto.BETA_SHARE) * money

    def phase2(n):
        return auto.beta_sweeps(sch, auto.BETA_SHARE * money, n, m, size) >= auto.MIN_RUNG_SWEEPS

    def phase3(n):
        return chains * sweeps * auto.sweep_cost(sch, n, m_all) <= final_money

    assert all(phase2(n) and phase3(n) for n in rungs if n <= top)
    if binds is None:
        assert top == rungs[-1]
        return
    nxt = rungs[rungs.index(top) + 1]
    assert top >= rungs[1] and not (phase2(nxt) and phase3(nxt))
    assert (not phase2(nxt)) if binds == "phase 2" else (phase2(nxt) and not phase3(nxt))
    # money that affords nothing still leaves the ladder its first two rungs
    assert auto.ladder_ceiling(sch, 1e-6, chains, m, m_all, size, sweeps) == rungs[1]


def test_a_ladder_under_a_ceiling_stops_below_it_with_the_sweeps_planned_without_it(corpus, fitted):
    """run_ladder with max_states: no rung above it runs, each rung gets the sweeps rung_sweeps
    plans for the whole ladder (so a run whose ladder stays under its ceiling is unchanged), and
    the fit records its ceiling, the one ladder_ceiling computes from the recorded schedule."""
    from bayesfa.samplers.pfa import cgs_pfa

    a = fitted[0].info["auto"]
    schedule, money = a["schedule"], a["plan_money"]
    kept_idx, held_idx = holdout_split(corpus.n_strings, auto.HOLDOUT, np.random.SeedSequence(5))
    kept, held = corpus.subset(kept_idx), corpus.subset(held_idx)
    m, size = free_positions(kept.tokens).size, auto._forward_size(held)
    planned, _ = auto.rung_sweeps(schedule, money * auto.LADDER_SHARE, m, size)
    assert a["ladder_ceiling"] == auto.ladder_ceiling(schedule, money, 2, m,
                                                      free_positions(corpus.tokens).size, size, planned)
    for r, below in zip(a["ladder"], [None] + a["ladder"][:-1]):  # above it: the measured ceiling's
        if r["states"] <= a["ladder_ceiling"]:
            assert "ceiling" not in r
            continue
        scale = schedule["ladder_scales"][str(below["states"])]
        assert r["ceiling"] == auto.ladder_ceiling(auto.scaled_schedule(schedule, *scale), money, 2, m,
                                                   free_positions(corpus.tokens).size, size, planned)
        assert r["states"] <= r["ceiling"]
    n_star = a["winner"]["states"]
    best = [r["states"] for r in a["ladder"]].index(n_star)
    priced = auto.phase2_schedule(schedule, a["ladder"], best, a["ladder_ceiling"])
    assert ("skipped" in a["betas"][0]) == (auto.beta_sweeps(
        priced, auto.BETA_SHARE * money, n_star, m, size) < auto.MIN_RUNG_SWEEPS)
    big = dict(schedule, position_seconds=schedule["position_seconds"] / 64,
               lane_seconds=schedule["lane_seconds"] / 64, forward_seconds=schedule["forward_seconds"] / 64)
    sweeps, rungs = auto.rung_sweeps(big, money * auto.LADDER_SHARE, m, size)
    assert len(rungs) >= 3
    with auto.front_session(cgs_pfa):
        records, best, paths, got = auto.run_ladder(kept, held, big, money * auto.LADDER_SHARE, 5,
                                                    auto._Ledger(money), max_states=rungs[1])
    assert [r["states"] for r in records] == rungs[:2] and got == sweeps
    assert all(r["sweeps"] == sweeps for r in records)


def test_measured_scale_prices_the_ceiling_below_the_calibration_never_above():
    """A rung's measured CPU over its modelled CPU, sweeps and forward passes apart: rounded up
    to a power of 2**(1/4), at least MEASURED_FLOOR, at most 1; scaled_schedule multiplies the
    sweep costs (line or table) and the forward cost by them."""
    step = {"cpu_model_sweeps": 4.0, "cpu_sweeps": 2.0, "cpu_model": 10.0, "cpu": 3.5}  # 0.5, 0.25
    assert auto.measured_scale(step) == [0.5, 0.25]
    assert auto.measured_scale(dict(step, cpu_sweeps=2.1)) == [2 ** -0.75, 0.25]  # rounded up
    assert auto.measured_scale(dict(step, cpu_sweeps=9.0, cpu=9.5)) == [1.0, 0.25]  # never above 1
    assert auto.measured_scale(dict(step, cpu_sweeps=1e-9, cpu=6.0)) == [auto.MEASURED_FLOOR, 1.0]
    table = {"10": 1e-7, "15": 2e-7}
    for sch in (SCHEDULE, {**SCHEDULE, "rung_seconds": table}):
        low = auto.scaled_schedule(sch, 0.5, 0.25)
        for n in (10, 15, 40):
            assert auto.sweep_cost(low, n, 1000) == pytest.approx(0.5 * auto.sweep_cost(sch, n, 1000))
            assert auto.forward_cost(low, n, 1000) == pytest.approx(0.25 * auto.forward_cost(sch, n, 1000))
    assert table == {"10": 1e-7, "15": 2e-7}  # the schedule itself unchanged


def test_a_ladder_above_its_planned_ceiling_climbs_by_measured_costs_and_replays(corpus, fitted):
    """run_ladder with a ``ceiling`` function: a rung above max_states runs when the function of
    the schedule priced by the rung below's measured costs (scaled_schedule, measured_scale)
    admits it; the scale is recorded in the schedule's ladder_scales and its record holds that
    ceiling; a scale already in the schedule is read, not measured (a --schedule replay)."""
    from bayesfa.samplers.pfa import cgs_pfa

    a = fitted[0].info["auto"]
    money = a["plan_money"]
    kept_idx, held_idx = holdout_split(corpus.n_strings, auto.HOLDOUT, np.random.SeedSequence(5))
    kept, held = corpus.subset(kept_idx), corpus.subset(held_idx)
    m, size = free_positions(kept.tokens).size, auto._forward_size(held)
    base = {k: a["schedule"][k] for k in ("position_seconds", "lane_seconds", "forward_seconds")}
    big = dict(a["schedule"], **{k: v / 64 for k, v in base.items()}, ladder_scales={})
    big.pop("rung_seconds", None)
    sweeps, rungs = auto.rung_sweeps(big, money * auto.LADDER_SHARE, m, size)
    assert len(rungs) >= 4
    seen = []

    def ceiling(priced):  # admits the third rung, not the fourth
        seen.append(priced)
        return rungs[2]

    with auto.front_session(cgs_pfa):
        ledger = auto._Ledger(money)
        records, best, paths, got = auto.run_ladder(kept, held, big, money * auto.LADDER_SHARE, 5,
                                                    ledger, max_states=rungs[1], ceiling=ceiling)
        assert [r["states"] for r in records] == rungs[:3] and got == sweeps
        assert "ceiling" not in records[1] and records[2]["ceiling"] == rungs[2]
        steps = [s for s in ledger.steps if s["phase"] == "ladder"]
        # the fourth rung was priced unless the patience rule stopped the ladder at the third
        measured = rungs[1:2] if "stop" in records[2] else rungs[1:3]
        assert big["ladder_scales"] == {str(n): auto.measured_scale(steps[rungs.index(n)]) for n in measured}
        assert seen == [auto.scaled_schedule(big, *big["ladder_scales"][str(n)]) for n in measured]
        # replayed from the recorded scales (here made up, to tell them from a measurement)
        made_up = {str(rungs[1]): [0.5, 0.25], str(rungs[2]): [0.25, 0.5]}
        replay = dict(big, ladder_scales=dict(made_up))
        seen.clear()
        again = auto.run_ladder(kept, held, replay, money * auto.LADDER_SHARE, 5, auto._Ledger(money),
                                max_states=rungs[1], ceiling=ceiling)[0]
        assert replay["ladder_scales"] == made_up
        assert seen == [auto.scaled_schedule(replay, *made_up[str(n)]) for n in measured]
        assert [r["heldout"] for r in again] == [r["heldout"] for r in records]  # the same chains
        # a ceiling that admits nothing above max_states: the ladder of before
        stopped = auto.run_ladder(kept, held, dict(big, ladder_scales={}), money * auto.LADDER_SHARE, 5,
                                  auto._Ledger(money), max_states=rungs[1], ceiling=lambda p: rungs[1])[0]
        assert [r["states"] for r in stopped] == rungs[:2]


def _ladder_plan(corpus, schedule):
    """``(plan, (m, size, all_m, money))`` for a fit of seed 5 on ``corpus`` from ``schedule``:
    ``plan(s)`` is ``(sweeps per rung, rungs, planned ceiling)`` of schedule ``s``."""
    kept_idx, held_idx = holdout_split(corpus.n_strings, auto.HOLDOUT, np.random.SeedSequence(5))
    kept, held = corpus.subset(kept_idx), corpus.subset(held_idx)
    m, size, all_m = free_positions(kept.tokens).size, auto._forward_size(held), free_positions(corpus.tokens).size
    money = schedule["budget"] * auto.SAFETY - schedule["overhead_seconds"]

    def plan(s):
        sweeps, rungs = auto.rung_sweeps(s, money * auto.LADDER_SHARE, m, size)
        return sweeps, rungs, auto.ladder_ceiling(s, money, 2, m, all_m, size, sweeps)

    return plan, (m, size, all_m, money)


def test_a_fit_climbs_past_its_planned_ceiling_only_with_ladder_scales(corpus, fitted, tmp_path):
    """Fits replayed from one schedule whose rung table prices N = 22 just too dear for the
    planned ceiling: with a recorded scale of the rung below (ladder_scales, here 0.25) the
    ladder climbs to 22, its record naming the measured ceiling, and its winner's phase 2 is
    planned at those prices; without ladder_scales (a schedule of bayesfa before the measured
    ceiling) it stops under 22, as it ran then."""
    schedule = json.loads(fitted[1].read_text())
    top, (m, size, all_m, money) = _ladder_plan(corpus, schedule)
    for _ in range(8):  # room for N = 34 in the ladder's plan, whatever machine timed the line
        if 34 in top(schedule)[1] and top(schedule)[2] >= 34:
            break
        schedule = {**schedule, **{k: schedule[k] / 2 for k in ("position_seconds", "lane_seconds",
                                                                 "forward_seconds")}}
    assert 34 in top(schedule)[1] and top(schedule)[2] >= 34

    def priced(f):  # N >= 22 at f times the line
        return {**schedule, "rung_seconds": {str(n): auto.sweep_cost(schedule, n, 1) * (1 if n < 22 else f)
                                             for n in auto.ladder()}}

    lo, hi = 1.0, 2.0
    while top(priced(hi))[2] >= 22:  # the least factor (within 1%) that keeps the plan under 22
        lo, hi = hi, 2 * hi
    while hi / lo > 1.01:
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if top(priced(mid))[2] >= 22 else (lo, mid)
    table = priced(hi)
    sweeps, rungs, planned = top(table)
    assert planned < 22 and 22 in rungs
    scaled = auto.scaled_schedule(table, 0.25, 0.25)
    assert auto.ladder_ceiling(scaled, money, 2, m, all_m, size, sweeps) >= 22
    runs = {}
    for name, extra in (("scaled", {"ladder_scales": {"15": [0.25, 0.25]}}), ("old", {})):
        path = tmp_path / f"{name}.json"
        data = {**table, **extra}
        if not extra:
            data.pop("ladder_scales", None)
        path.write_text(json.dumps(data))
        runs[name] = METHOD.fit(corpus, _options(schedule=str(path)), 5, False).info["auto"]
    old, new = runs["old"], runs["scaled"]
    assert old["ladder_ceiling"] == new["ladder_ceiling"] == planned
    assert all(r["states"] < 22 for r in old["ladder"]) and "ladder_scales" not in old["schedule"]
    climbed = [r for r in new["ladder"] if r["states"] >= 22]
    assert climbed and climbed[0]["states"] == 22 and climbed[0]["ceiling"] >= 22
    assert [r["states"] for r in new["ladder"][:2]] == [10, 15]
    best = [r["states"] for r in new["ladder"]].index(new["winner"]["states"])
    priced = auto.phase2_schedule(new["schedule"], new["ladder"], best, planned)
    assert new["betas"][0]["sweeps"] == auto.beta_sweeps(priced, auto.BETA_SHARE * money,
                                                         new["winner"]["states"], m, size)


def test_phase2_is_planned_at_the_prices_that_admitted_its_winner():
    """phase2_schedule: a winner at or under the planned ceiling plans phase 2 with the schedule
    itself; one above it with the schedule priced by the scale of the rung below it (the one
    its measured ceiling used), where the calibration's prices could skip phase 2."""
    sch = {**SCHEDULE, "ladder_scales": {"15": [0.5, 0.25], "22": [0.25, 0.5]}}
    records = [{"states": 10}, {"states": 15}, {"states": 22}, {"states": 34}]
    assert auto.phase2_schedule(sch, records, 1, 15) is sch
    assert auto.phase2_schedule(sch, records, 2, 22) is sch
    assert auto.phase2_schedule(sch, records, 2, 15) == auto.scaled_schedule(sch, 0.5, 0.25)
    assert auto.phase2_schedule(sch, records, 3, 15) == auto.scaled_schedule(sch, 0.25, 0.5)
    m, size = 400_000, 200_000
    at_calibration = auto.beta_sweeps(sch, 40.0, 22, m, size)
    measured = auto.beta_sweeps(auto.phase2_schedule(sch, records, 2, 15), 40.0, 22, m, size)
    assert measured > 1.5 * max(at_calibration, 1)


def test_state_split_is_a_valid_path_that_merges_back(corpus):
    tokens = corpus.tokens
    pos = free_positions(tokens)
    rng = np.random.default_rng(3)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[pos] = rng.integers(1, 11, size=pos.size, dtype=np.int32)
    z2 = auto.split_states(z, tokens, 10, 15, np.random.default_rng(4))
    fixed = np.setdiff1d(np.arange(z.size), pos)
    assert (z2[fixed] == 0).all()                      # state 0 exactly where Algorithm 1 puts it
    assert z2[pos].min() >= 1 and z2[pos].max() == 15   # every new state used
    np.testing.assert_array_equal(auto.merge_copies(z2, 10, 15, z, tokens), z)
    # and from an odd number of states (the copies' indices start at n_from + 1 either way)
    z3 = np.zeros(tokens.size + 1, dtype=np.int32)
    z3[pos] = rng.integers(1, 6, size=pos.size, dtype=np.int32)
    z4 = auto.split_states(z3, tokens, 5, 8, np.random.default_rng(5))
    assert z4[pos].max() == 8
    np.testing.assert_array_equal(auto.merge_copies(z4, 5, 8, z3, tokens), z3)
    # the same joint support: every transition of the split path is in the fully connected
    # PFA's support (Eq. 2's prior), and merging the counts of the copies gives the parent's
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern

    c1, c2 = new_counts(10, corpus.alphabet_size + 1), new_counts(15, corpus.alphabet_size + 1)
    kern.fill_counts(tokens, z, *c1, 0.05)
    kern.fill_counts(tokens, z2, *c2, 0.05)
    assert np.isfinite(kern.log_joint(c2[0], 0.05))
    back = auto.merge_copies(np.arange(16, dtype=np.int32), 10, 15, z, tokens)
    merged = np.zeros((11, corpus.alphabet_size + 1, 11))
    full = c2[0][:, :, :16].astype(np.float64)
    for i in range(16):
        for j in range(16):
            merged[back[i], :, back[j]] += full[i, :, j]
    np.testing.assert_array_equal(merged, c1[0][:, :, :11])
    assert c2[0][:, 0, 1:].sum() == 0                  # the end marker only goes to state 0


def test_same_seed_and_schedule_give_the_same_decisions(fitted, refit):
    """Phases 1-2 bit for bit (held-out scores are floats compared exactly); the final chains'
    length may differ, as predicting test strings online costs CPU within the budget (the
    whole fit bit for bit: the CLI test below)."""
    res, again = fitted[0], refit
    assert again.info["auto"]["ladder"] == res.info["auto"]["ladder"]
    assert again.info["auto"]["betas"] == res.info["auto"]["betas"]
    assert again.info["auto"]["schedule"] == res.info["auto"]["schedule"]
    assert float(again.arrays["beta"]) == float(res.arrays["beta"])


def test_budget_respected_within_the_stated_overshoot(fitted):
    a = fitted[0].info["auto"]
    assert a["cpu_seconds"] <= (1 + OVERSHOOT) * BUDGET, a["steps"]
    if a["final"]["sweeps"] > auto.MIN_RUNG_SWEEPS:  # else phases 1-2 left phase 3 its floor only
        assert a["cpu_planned"] <= auto.TARGET * BUDGET + 1e-9
    else:
        assert a["final"]["chains"] == 1


COSTS = {"sweep": 0.01, "round": 0.17, "draw": 0.002, "forward": 0.003, "start": 0.05}


@pytest.mark.parametrize("money, chains, every", [
    (100.0, 2, 0), (100.0, 2, 10), (100.0, 3, 7), (7.3, 2, 10), (1.0, 2, 0), (0.25, 2, 3), (0.01, 2, 0),
])
def test_final_plan_runs_every_sweep_its_money_buys(money, chains, every):
    """Phase 3's accounting with injected costs (no timing): each chain's modelled CPU
    (start + floor(S / K) rounds of K sweeps and a blocked move + S mod K sweeps + D draws;
    with K = 0, start + S sweeps + D draws) fits its share of the money and
    one sweep more would not, unless the plan is at its floor (one chain of MIN_RUNG_SWEEPS);
    every sweep is run (burn-in + draws x period = S, the burn-in at least a tenth); the
    blocked moves are floor(S / K)."""
    plan = auto.final_plan(COSTS, money, chains, 10, 5, stored=False, blocked_every=every)
    s, d = plan["sweeps"], plan["n_draws"]
    assert plan["burn_in"] + d * plan["period"] == s and plan["burn_in"] >= s // 10
    assert plan["blocked_every"] == every and plan["blocked_moves"] == (s // every if every else 0)

    def cost(n_sweeps, n_draws):
        rounds, rest = divmod(n_sweeps, every) if every else (0, n_sweeps)
        return (COSTS["start"] + rounds * COSTS["round"] + rest * COSTS["sweep"]
                + n_draws * (COSTS["draw"] + COSTS["forward"]))

    assert plan["cpu_model_per_chain"] == pytest.approx(cost(s, d))
    if s == auto.MIN_RUNG_SWEEPS and cost(s, d) > money / chains:
        assert plan["chains"] == 1
        return
    share = money / plan["chains"]
    assert cost(s, d) <= share + 1e-12
    assert cost(s + 1, min(auto.FINAL_DRAWS, s + 1 - (s + 1) // 10)) > share
    if money >= 100:  # plenty: every chain asked for, all draws, under a sweep's cost left over
        assert plan["chains"] == chains and d == auto.FINAL_DRAWS


def test_phase3_spends_the_target_less_the_cpu_measured_before_it(corpus, fitted, tmp_path, monkeypatch):
    """The final chains get ``TARGET * budget - final_start_seconds`` and costs from the
    schedule's measurements at the winner's N (injected here through --schedule, so that
    nothing is timed): the plan is sized from those alone, and ``cpu_planned`` is the start
    plus the chains' modelled CPU."""
    schedule = {**json.loads(fitted[1].read_text()), "final_start_seconds": 1.25,
                "final_sweep_seconds": 2e-8, "final_draw_seconds": 1e-4,
                "blocked_round_seconds": 3e-7, "blocked_round_every": 4}
    schedule.pop("final_chain_resize")  # every chain as the first (a schedule before per-chain sizing)
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(schedule))
    seen = []
    real = auto.final_plan

    def spy(costs, money, *args, **kwargs):
        seen.append((costs, money, kwargs["blocked_every"]))
        return real(costs, money, *args, **kwargs)

    monkeypatch.setattr(auto, "final_plan", spy)
    res = METHOD.fit(corpus, _options(schedule=str(path), final_blocked_every=4), 5, False)
    (costs, money, every), = seen
    m = free_positions(corpus.tokens).size
    assert money == auto.TARGET * schedule["budget"] - 1.25 and every == 4
    assert costs["sweep"] == m * 2e-8 and costs["round"] == m * 3e-7
    assert costs["draw"] == 1e-4 and costs["forward"] == 0.0
    a = res.info["auto"]
    assert a["cpu_planned"] == 1.25 + a["final"]["chains"] * a["final"]["cpu_model_per_chain"]
    assert a["cpu_planned"] <= auto.TARGET * schedule["budget"] + 1e-12
    assert a["final"]["blocked_moves"] == a["final"]["sweeps"] // 4 > 0


@pytest.mark.parametrize("money, scale, draws, every", [
    (5.0, 1.0, 100, 0), (5.0, 1.5, 100, 10), (5.0, 0.5, 100, 7), (0.5, 2.0, 100, 3), (1e-9, 1.0, 100, 0),
    (2.0, 1.0, 3, 0),
])
def test_a_resized_chain_runs_every_sweep_its_scaled_money_buys(money, scale, draws, every):
    """A final chain after the first, sized again with injected costs (no timing): its draws
    are the first chain's; its modelled CPU, the first chain's model times ``scale``, fits
    ``money`` and one sweep more would not, unless it is at the fewest sweeps that hold its
    draws with a tenth as burn-in; every sweep is run (burn-in + draws x period)."""
    p = auto.resized_chain(COSTS, money, scale, draws, every)
    s = p["sweeps"]
    assert p["burn_in"] + draws * p["period"] == s and p["burn_in"] >= s // 10 and p["period"] >= 1

    def cost(n):
        rounds, rest = divmod(n, every) if every else (0, n)
        return scale * (COSTS["start"] + rounds * COSTS["round"] + rest * COSTS["sweep"]
                        + draws * (COSTS["draw"] + COSTS["forward"]))

    assert p["cpu_model"] == pytest.approx(cost(s))
    assert cost(s + 1) > money
    least = (s - 1) - (s - 1) // 10 < draws  # one sweep fewer would not hold the draws
    assert cost(s) <= money + 1e-12 or least
    if money < 1e-6:
        assert least


def test_chain_resize_gives_the_money_left_over_the_chains_left_and_the_measured_speed():
    """``[money, scale]``: (target - spent rounded up) / chains left, and measured over modelled
    CPU held within RESIZE_LIMITS, each rounded to a power of 2**(1/32) (at most 1.1 % off)."""
    money, scale = auto.chain_resize(2.425, 1.9, 1, 0.9, 0.6)
    assert money == pytest.approx(0.525, rel=0.04) and money <= 2.425 - 1.9
    assert scale == pytest.approx(1.5, rel=0.012)
    money, scale = auto.chain_resize(10.0, 4.0, 3, 0.1, 1.0)
    assert money == pytest.approx(2.0, rel=0.04) and scale == pytest.approx(auto.RESIZE_LIMITS[0], rel=0.012)
    _, scale = auto.chain_resize(10.0, 4.0, 2, 50.0, 1.0)
    assert scale == pytest.approx(auto.RESIZE_LIMITS[1], rel=0.012)
    money, _ = auto.chain_resize(1.0, 3.0, 1, 1.0, 1.0)  # overspent already: the floor
    assert 0 < money < 1e-12


def test_final_chains_after_the_first_follow_the_recorded_resize(corpus, fitted, tmp_path, monkeypatch):
    """Replayed from a schedule whose ``final_chain_resize`` is injected (nothing timed), chain
    1 runs the sweeps :func:`auto.resized_chain` gives for that money and scale, with chain 0's
    draws, and ``cpu_planned`` is the target less the money it leaves unused."""
    schedule = {**json.loads(fitted[1].read_text()), "final_start_seconds": 1.25,
                "final_sweep_seconds": 2e-8, "final_draw_seconds": 1e-4,
                "final_chain_resize": [[0.3, 1.5]]}
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(schedule))
    from bayesfa.samplers.pfa import cgs_pfa

    seen, planned, real, real_plan = [], [], cgs_pfa._run_chain, auto.final_plan

    def spy(*args, **kwargs):
        seen.append(args[4:7])
        return real(*args, **kwargs)

    def plan_spy(costs, *args, **kwargs):  # phase 3's costs, as run_final priced them
        planned.append(costs)
        return real_plan(costs, *args, **kwargs)

    monkeypatch.setattr(cgs_pfa, "_run_chain", spy)
    monkeypatch.setattr(auto, "final_plan", plan_spy)
    res = METHOD.fit(corpus, _options(schedule=str(path), final_blocked_every=0), 5, False)
    a = res.info["auto"]
    first, second = a["final"]["chain_plans"]
    assert a["final"]["chains"] == 2 and second["money"] == 0.3 and second["scale"] == 1.5
    (costs,) = planned
    assert costs["sweep"] == free_positions(corpus.tokens).size * 2e-8
    want = auto.resized_chain(costs, 0.3, 1.5, a["final"]["n_draws"], 0)
    assert {k: second[k] for k in want} == pytest.approx(want)
    assert seen[-2:] == [(first["burn_in"], first["period"], a["final"]["n_draws"]),
                         (want["burn_in"], want["period"], a["final"]["n_draws"])]
    assert second["sweeps"] != first["sweeps"]
    assert a["cpu_planned"] == pytest.approx(auto.TARGET * schedule["budget"] - (0.3 - want["cpu_model"]))
    assert res.arrays["counts"].shape[:2] == (2, a["final"]["n_draws"])
    assert a["schedule"]["final_chain_resize"] == [[0.3, 1.5]]


def test_a_load_that_rises_in_phase_3_shortens_the_last_chain(corpus, warm, monkeypatch):
    """The CI pre-check's failure at a921a85 (3.01 CPU s spent of 2.5) made on purpose, and
    deterministic: the CPU clock counts each final chain as 1.5 times its model at the
    schedule's costs (a load that rose after phase 3's costs were measured), whatever it
    really spent. Chain 1 is sized from chain 0's measured speed (its recorded scale 1.5,
    rounded), so it runs fewer sweeps and the fit stays within the stated overshoot; sized as
    chain 0 (before per-chain sizing) the two chains would have passed it. The clock is
    benchmarks/auto_overshoot.py's ``--slow 1.5``."""
    clock, run = benchmodules.load("auto_overshoot.py").slowed_final_chains(auto, 1.5)
    monkeypatch.setattr(auto, "cpu_seconds", clock)
    monkeypatch.setattr(auto._Ledger, "run", run)
    res = METHOD.fit(corpus, _options(budget=BUDGET), 5, False)
    a = res.info["auto"]
    assert a["final"]["chains"] == 2
    first, second = a["final"]["chain_plans"]
    assert second["scale"] == pytest.approx(1.5, rel=0.012) and second["sweeps"] < first["sweeps"]
    assert a["cpu_seconds"] <= (1 + OVERSHOOT) * BUDGET, a["steps"]
    chain0 = [s for s in a["steps"] if s["phase"] == "final"][0]
    assert chain0["cpu"] == pytest.approx(1.5 * first["cpu_model"], rel=0.05)
    assert a["schedule"]["final_start_seconds"] + 2 * chain0["cpu"] > (1 + OVERSHOOT) * BUDGET


def test_final_blocked_every_default_and_explicit_values():
    """The final chains' blocked moves: FINAL_BLOCKED_EVERY by default, off (with the reason)
    when phase 3's share is under BLOCKED_MIN_SECONDS; an explicit K always, 0 = off."""
    big, small = 2 * auto.BLOCKED_MIN_SECONDS, auto.BLOCKED_MIN_SECONDS / 2
    assert auto.FINAL_BLOCKED_EVERY > 0
    assert auto.final_blocked_every({}, big) == (auto.FINAL_BLOCKED_EVERY, None)
    every, why = auto.final_blocked_every({}, small)
    assert every == 0 and "BLOCKED_MIN_SECONDS" in why
    assert auto.final_blocked_every({"final_blocked_every": 0}, big) == (0, "--final-blocked-every 0")
    assert auto.final_blocked_every({"final_blocked_every": 4}, small) == (4, None)


def test_blocked_moves_recorded_wired_reproducible_and_switched_off(tmp_path, monkeypatch):
    """``fit --auto --final-blocked-every 3 --search-blocked-every 4``: both options in the
    manifest's options; the final chains' blocked moves in its info (and the round's timing in
    the schedule); the blocked move's timing in the schedule for phases 1-2, whose every ladder
    and beta chain runs with ``blocked_every = 4`` (and is recorded so), the final chains with
    3; the run again from its manifest's schedule gives the same arrays bit for bit; both
    options 0 from the same schedule run no blocked move and end elsewhere."""
    from bayesfa.samplers.pfa import cgs_pfa

    train = _data("24.pautomac.train")
    small = tmp_path / "small.train"
    lines = train.read_text().splitlines()
    small.write_text(f"2000 {lines[0].split()[1]}\n" + "\n".join(lines[1:2001]) + "\n")
    runs = {name: tmp_path / name for name in ("blocked", "again", "off")}
    common = ["fit", str(small), "--method", "cgs-pfa", "--auto", "--chains", "1", "--seed", "2",
              "--quiet"]
    seen, real = [], cgs_pfa._run_chain

    def spy(*args, **kwargs):
        seen.append(kwargs.get("blocked_every", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(cgs_pfa, "_run_chain", spy)
    both = ["--final-blocked-every", "3", "--search-blocked-every", "4"]
    assert main([*common, "--budget", "6", *both, "--out", str(runs["blocked"])]) == 0
    manifest = json.loads((runs["blocked"] / "manifest.json").read_text())
    assert manifest["options"]["final_blocked_every"] == 3
    assert manifest["options"]["search_blocked_every"] == 4
    a = manifest["info"]["auto"]
    final = a["final"]
    assert final["blocked_every"] == 3 and final["blocked_moves"] == final["sweeps"] // 3 > 0
    assert manifest["info"]["blocked_every"] == 3 and "blocked_off" not in final
    assert a["schedule"]["blocked_round_seconds"] > 0 and a["schedule"]["blocked_round_every"] == 3
    assert a["search_blocked_every"] == 4 and "search_blocked_off" not in a
    assert a["schedule"]["move_seconds"] > 0 and a["schedule"]["move_square_seconds"] > 0
    search = [s for s in a["steps"] if s["phase"] in ("ladder", "beta")]
    finals = [s for s in a["steps"] if s["phase"] == "final"]
    assert len(search) >= 2 and all(s["blocked_every"] == 4 for s in search)
    assert all(s["blocked_every"] == 3 for s in finals)
    assert seen == [4] * len(search) + [3] * len(finals)
    schedule = ["--schedule", str(runs["blocked"] / "manifest.json")]
    assert main([*common, *schedule, *both, "--out", str(runs["again"])]) == 0
    seen.clear()
    assert main([*common, *schedule, "--final-blocked-every", "0", "--search-blocked-every", "0",
                 "--out", str(runs["off"])]) == 0
    off = json.loads((runs["off"] / "manifest.json").read_text())
    assert off["options"]["final_blocked_every"] == 0 and "blocked_every" not in off["info"]
    assert off["info"]["auto"]["final"]["blocked_moves"] == 0
    assert off["info"]["auto"]["final"]["blocked_off"] == "--final-blocked-every 0"
    assert off["info"]["auto"]["search_blocked_every"] == 0
    assert off["info"]["auto"]["search_blocked_off"] == "--search-blocked-every 0"
    assert set(seen) == {0} and not any("blocked_every" in s for s in off["info"]["auto"]["steps"]
                                        if s["phase"] != "final")
    with np.load(runs["blocked"] / "arrays.npz") as x, np.load(runs["again"] / "arrays.npz") as y, \
            np.load(runs["off"] / "arrays.npz") as z:
        assert sorted(x.files) == sorted(y.files)
        for k in x.files:
            np.testing.assert_array_equal(x[k], y[k])
        assert not np.array_equal(x["counts"], z["counts"])


def test_search_blocked_every_default_and_explicit_values(monkeypatch):
    """Phases 1-2's blocked moves: SEARCH_BLOCKED_EVERY by default (0: off), off (with the reason) when
    the phases' share of the budget is under BLOCKED_MIN_SECONDS, with float64 counts, or with
    a recorded schedule that did not time the move (so it replays a run made without them);
    an explicit K always, 0 = off; K > 0 with such a schedule is a one-line error."""
    share = (auto.LADDER_SHARE + auto.BETA_SHARE) * auto.SAFETY
    big, small = 2 * auto.BLOCKED_MIN_SECONDS / share, auto.BLOCKED_MIN_SECONDS / share / 2
    timed = {"move_seconds": 1e-7, "move_square_seconds": 1e-10}
    assert auto.SEARCH_BLOCKED_EVERY == 0  # off by default (benchmarks/RESULTS.md)
    assert auto.search_blocked_every({}, big) == (0, "SEARCH_BLOCKED_EVERY = 0")
    monkeypatch.setattr(auto, "SEARCH_BLOCKED_EVERY", 10)  # the rules of a default that is on
    assert auto.search_blocked_every({}, big) == (10, None)
    assert auto.search_blocked_every({}, big, schedule=timed) == (10, None)
    every, why = auto.search_blocked_every({}, small)
    assert every == 0 and "BLOCKED_MIN_SECONDS" in why
    every, why = auto.search_blocked_every({}, big, wide=True)
    assert every == 0 and why.startswith("float64 counts")
    every, why = auto.search_blocked_every({}, big, schedule={"budget": big})
    assert every == 0 and "no blocked-move timing" in why
    assert auto.search_blocked_every({"search_blocked_every": 0}, big) == (0, "--search-blocked-every 0")
    assert auto.search_blocked_every({"search_blocked_every": 4}, small) == (4, None)
    assert auto.search_blocked_every({"search_blocked_every": 0}, big, schedule={}) == (
        0, "--search-blocked-every 0")
    with pytest.raises(InputError, match="needs a schedule that timed the blocked move") as exc:
        auto.search_blocked_every({"search_blocked_every": 4, "schedule": "s.json"}, big, schedule={})
    assert "\n" not in str(exc.value) and str(exc.value).startswith("s.json")


MOVE_SCHEDULE = {"position_seconds": 2e-8, "lane_seconds": 1e-10, "forward_seconds": 1e-9,
            "move_seconds": 1e-7, "move_square_seconds": 2e-10}


@pytest.mark.parametrize("every", [0, 1, 3, 10])
def test_search_plan_with_blocked_moves_stays_within_its_money(every):
    """A phase 1-2 chain's modelled CPU is its sweeps, ``floor(S / K)`` blocked moves of
    ``M (move_seconds + (N+1)**2 move_square_seconds)`` and its draws' forward passes; the
    ladder's and phase 2's sweeps, planned with the moves, keep their chains within the money
    (and without moves, K = 0, the plan is the one before the moves existed)."""
    m, size, money = 20_000, 5_000, 30.0
    n = 34
    move = m * (1e-7 + (n + 1) ** 2 * 2e-10)
    assert auto.move_cost(MOVE_SCHEDULE, n, m) == pytest.approx(move)
    for s in (7, 20, 31):
        expect = s * auto.sweep_cost(MOVE_SCHEDULE, n, m) + (s // every * move if every else 0.0)
        assert auto.run_cost(MOVE_SCHEDULE, n, m, s, 2, size, every) == pytest.approx(
            expect + 2 * auto.forward_cost(MOVE_SCHEDULE, n, size))
    sweeps, rungs = auto.rung_sweeps(MOVE_SCHEDULE, money, m, size, every)
    assert sweeps >= auto.MIN_RUNG_SWEEPS and len(rungs) >= 2
    spent = sum(auto.run_cost(MOVE_SCHEDULE, r, m, sweeps, auto.RUNG_DRAWS, size, every) for r in rungs)
    assert spent <= money
    b = auto.beta_sweeps(MOVE_SCHEDULE, money, n, m, size, every)
    runs = len(auto.BETAS) * auto.run_cost(MOVE_SCHEDULE, n, m, b, auto.RUNG_DRAWS, size, every) + (
        auto.BETA_KEEP * auto.run_cost(MOVE_SCHEDULE, n, m, auto.BETA_GROWTH * b, auto.RUNG_DRAWS, size, every))
    assert b >= auto.MIN_RUNG_SWEEPS and runs <= money
    if every:  # the moves cost sweeps: fewer than without them
        assert sweeps < auto.rung_sweeps(MOVE_SCHEDULE, money, m, size)[0]
        assert b < auto.beta_sweeps(MOVE_SCHEDULE, money, n, m, size)


def test_phase3_sweep_cost_from_blocked_search_steps_is_their_sweeps_modelled_share():
    """Phase 3's sweep cost measured on phase 2's chains that made blocked moves: their
    sweeps' CPU (less the draws') times the sweeps' share of the modelled CPU, per position."""
    m, n, every, draw = 1000, 22, 4, 1e-4
    steps = [{"phase": "beta", "states": n, "sweeps": 40, "blocked_every": every, "cpu": 0.5,
              "cpu_sweeps": 0.3}, {"phase": "beta", "states": n, "sweeps": 160, "blocked_every": every,
                                   "cpu": 1.5, "cpu_sweeps": 1.1}]
    out = auto.measured_costs(steps, n, m, 100, draw, MOVE_SCHEDULE)
    n_draws = sum(auto.draw_plan(s["sweeps"], auto.RUNG_DRAWS)[2] for s in steps)
    swept = 200 * auto.sweep_cost(MOVE_SCHEDULE, n, m)
    share = swept / (swept + 200 // every * auto.move_cost(MOVE_SCHEDULE, n, m))
    expect = (1.4 - n_draws * draw) * share / (200 * m)
    assert out["final_sweep_seconds"] == auto._round_fine(expect)
    plain = auto.measured_costs([{**s, "blocked_every": 0} for s in steps], n, m, 100, draw, MOVE_SCHEDULE)
    assert plain["final_sweep_seconds"] == auto._round_fine((1.4 - n_draws * draw) / (200 * m))


def test_cli_schedule_reproduces_the_run_bit_for_bit(tmp_path):
    """A fit, then its replay from the first one's manifest (--schedule): the same arrays bit
    for bit. (At 1.5 CPU s and with no fit before it in the process, the first fit spent its
    budget compiling: the test failed alone and passed after other tests.)"""
    train = _data("24.pautomac.train")
    small = tmp_path / "small.train"
    lines = train.read_text().splitlines()
    small.write_text(f"2000 {lines[0].split()[1]}\n" + "\n".join(lines[1:2001]) + "\n")
    out1, out2 = tmp_path / "r1", tmp_path / "r2"
    # numba compiles (or loads) --auto's kernels on a process's first fit, which can spend a
    # small budget before the ladder starts ("too small"): a first fit here, whatever it
    # returns, takes that cost out of the run compared below
    main(["fit", str(small), "--method", "cgs-pfa", "--auto", "--budget", "4", "--chains", "1",
          "--seed", "2", "--quiet", "--out", str(tmp_path / "warm")])
    assert main(["fit", str(small), "--method", "cgs-pfa", "--auto", "--budget", "4", "--chains", "1",
                 "--seed", "2", "--quiet", "--out", str(out1)]) == 0
    manifest = json.loads((out1 / "manifest.json").read_text())
    assert manifest["info"]["auto"]["winner"]["states"] >= auto.LADDER_START
    assert main(["fit", str(small), "--method", "cgs-pfa", "--auto",
                 "--schedule", str(out1 / "manifest.json"), "--chains", "1", "--seed", "2", "--quiet",
                 "--out", str(out2)]) == 0
    with np.load(out1 / "arrays.npz") as a, np.load(out2 / "arrays.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
    pred = tmp_path / "pred.txt"
    assert main(["predict", str(out1), str(_data("24.pautomac.test")), "--out", str(pred)]) == 0


def test_a_schedule_with_a_rung_table_plans_from_it_and_replays_bit_for_bit(corpus, fitted, tmp_path):
    """The recorded schedule of a fit with a ``rung_seconds`` table added that prices N = 22 and
    above at 1,000 times the line: replayed twice (``--schedule``), the ladder stops under N =
    22, as ladder_ceiling computes from that table, where the line alone lets it climb higher;
    the two replays agree bit for bit.

    Whether the timed line affords N = 22 within BUDGET depends on the machine that timed it (a
    loaded one may not: CI at c4d9e64 stopped the line's ladder at 15), so the line's costs are
    first halved until the plan (pure functions of the schedule) puts 22 in both the ladder and
    its ceiling; the replays then test the table's cap, whatever the machine."""
    schedule = json.loads(fitted[1].read_text())
    assert "rung_seconds" not in schedule  # BUDGET is under RUNG_TABLE_BUDGET
    plan = _ladder_plan(corpus, schedule)[0]

    def reach(s):
        _, rungs, ceiling = plan(s)
        return min(max(rungs, default=0), ceiling)

    for _ in range(6):
        if reach(schedule) >= 22:
            break
        schedule = {**schedule, **{k: schedule[k] / 2 for k in ("position_seconds", "lane_seconds",
                                                                 "forward_seconds")}}
    assert reach(schedule) >= 22
    table = {str(n): auto.sweep_cost(schedule, n, 1) * (1 if n < 22 else 1000) for n in auto.ladder()}
    runs = []
    for name, extra in (("line", {}), ("table", {"rung_seconds": table}), ("again", {"rung_seconds": table})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**schedule, **extra}))
        runs.append(METHOD.fit(corpus, _options(schedule=str(path)), 5, False))
    line, table_run, again = (r.info["auto"] for r in runs)
    assert line["ladder_ceiling"] >= 22 and max(r["states"] for r in line["ladder"]) >= 22
    assert table_run["ladder_ceiling"] < 22 and all(r["states"] < 22 for r in table_run["ladder"])
    assert table_run["schedule"]["rung_seconds"] == table
    assert sorted(runs[1].arrays) == sorted(runs[2].arrays)
    for k in runs[1].arrays:
        np.testing.assert_array_equal(runs[1].arrays[k], runs[2].arrays[k])


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "abc"])
def test_bad_budget_values_are_one_line_errors(value, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(_data("24.pautomac.train")), "--method", "cgs-pfa", "--auto", "--budget", value,
              "--seed", "1", "--out", str(tmp_path / "r")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err[-1]) and "--budget" in err[-1] and "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("options, message", [
    ({"budget": 5.0}, "need --auto"),
    ({"final_blocked_every": 2}, "need --auto"),
    ({"auto": True, "budget": 5.0, "final_blocked_every": -1}, "--final-blocked-every must be"),
    ({"search_blocked_every": 2}, "need --auto"),
    ({"auto": True, "budget": 5.0, "search_blocked_every": -1}, "--search-blocked-every must be"),
    ({"auto": True, "budget": 5.0, "search_blocked_every": 1.5}, "--search-blocked-every must be"),
    ({"auto": True, "budget": 5.0, "blocked_every": 2}, "--final-blocked-every K"),
    ({"auto": True}, "needs --budget"),
    ({"auto": True, "budget": -1.0}, "positive finite"),
    ({"auto": True, "budget": 0.05}, "too small"),
])
def test_library_refusals_are_one_line_input_errors(corpus, options, message):
    with pytest.raises(InputError, match=message) as exc:
        METHOD.fit(corpus, {**_options(), "auto": False, **options}, 1, False)
    assert "\n" not in str(exc.value)


def test_calibration_timing_survives_a_coarse_cpu_clock(monkeypatch):
    """A CPU clock that ticks every 10 ms (as ``process_time`` did under ``ulimit -t``) must not
    time a 1 ms call as free or as 10 ms: each timing repeats the call over a window. The
    call advances a simulated CPU clock by exactly 1 ms (so the machine's load cannot matter)."""
    now = [0.0]

    def coarse():
        return math.floor(now[0] / 0.01 + 1e-9) * 0.01

    def one_ms():
        now[0] += 0.001

    monkeypatch.setattr(auto.time, "thread_time", coarse)
    monkeypatch.setattr(auto.time, "process_time", coarse)
    seconds = auto._min_time(one_ms)
    assert 0.0008 < seconds < 0.0012, seconds


def test_the_draw_timing_of_phase3_leaves_out_a_first_call_that_compiles(corpus, monkeypatch):
    """calibrate_final times recording a draw (the plain kernel's ``sample_draws``, compiled per
    process on its first call): a first call that costs a second (compiling; no chain had
    called it when phases 1-2 made blocked moves) must not be the draw's cost. On a simulated
    CPU clock: the first call 1 s, each later one 0.1 ms."""
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern
    from bayesfa.samplers.pfa import cgs_pfa

    now, calls = [0.0], []

    def fake_draws(*args):
        calls.append(1)
        now[0] += 1.0 if len(calls) == 1 else 1e-4

    monkeypatch.setattr(auto.time, "thread_time", lambda: now[0])
    monkeypatch.setattr(kern, "sample_draws", fake_draws)
    kept = corpus.subset(np.arange(200))
    z = np.zeros(kept.n_tokens + 1, dtype=np.int32)
    z[free_positions(kept.tokens)] = 1
    with auto.front_session(cgs_pfa):
        out = auto.calibrate_final(kept, z, 5, 0.05, 0)
    assert out["final_draw_seconds"] == auto._round_fine(1e-4, up=True)


def test_a_schedule_without_phase3_costs_replays_phases_1_2_and_measures_phase3(corpus, fitted, tmp_path):
    """--schedule without the final costs (all of them; some is a one-line error): the ladder
    and the beta phase decide as the recorded run did, and phase 3's costs are measured and
    recorded again, and so is the per-chain sizing (a record of it without those costs is not
    this run's); a malformed per-chain record is a one-line error."""
    res, path = fitted
    schedule = json.loads(path.read_text())
    for key in (*auto._FINAL_COSTS, *auto._BLOCKED_COSTS):
        schedule.pop(key, None)
    schedule["final_chain_resize"] = [[1e-6, 0.6]]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(schedule))
    again = METHOD.fit(corpus, _options(schedule=str(bare)), 5, False).info["auto"]
    a = res.info["auto"]
    assert again["ladder"] == a["ladder"] and again["betas"] == a["betas"] and again["winner"] == a["winner"]
    assert all(isinstance(again["schedule"][k], float) for k in auto._FINAL_COSTS)
    resize = again["schedule"]["final_chain_resize"]
    assert len(resize) == again["final"]["chains"] - 1 and resize != [[1e-6, 0.6]]
    malformed = tmp_path / "malformed.json"
    malformed.write_text(json.dumps({**json.loads(path.read_text()), "final_chain_resize": [[1.0, 0.0]]}))
    with pytest.raises(InputError, match="final_chain_resize") as exc:
        auto.read_schedule(malformed)
    assert "\n" not in str(exc.value)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({**schedule, "final_draw_seconds": 1e-3}))
    with pytest.raises(InputError, match="or none of them") as exc:
        auto.read_schedule(partial)
    assert "\n" not in str(exc.value)


def test_a_schedule_of_an_older_format_is_refused_in_one_line(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "bayesfa-cgs-pfa-schedule/1", "budget": 5.0,
                               "position_seconds": 1e-8, "lane_seconds": 1e-10, "forward_seconds": 1e-10,
                               "overhead_seconds": 0.5, "final_correction": 1.0}))
    with pytest.raises(InputError, match="older bayesfa") as exc:
        auto.read_schedule(old)
    assert "\n" not in str(exc.value)


def test_a_budget_of_a_minute_or_more_times_a_sweep_at_every_rung_and_plans_from_that(corpus,
                                                                                      warm):
    """_schedule at RUNG_TABLE_BUDGET: calibrate times a sweep at every N of the ladder
    (``rung_seconds``, CPU per position, positive and non-decreasing in N), and sweep_cost then
    reads the table at those N, in between interpolates in N (between its
    neighbours), and beyond 384 keeps rising; under RUNG_TABLE_BUDGET the schedule has no table.
    The line's two costs are those through the table at N = 34 and N = 114."""
    from bayesfa.samplers.pfa import cgs_pfa
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    kept, held = corpus.subset(np.arange(400)), corpus.subset(np.arange(400, 450))
    with auto.front_session(cgs_pfa):
        small = auto._schedule({"budget": auto.RUNG_TABLE_BUDGET / 2}, kept, held, auto.cpu_seconds())
        sch = auto._schedule({"budget": auto.RUNG_TABLE_BUDGET}, kept, held, auto.cpu_seconds())
    assert "rung_seconds" not in small
    table = {int(n): x for n, x in sch["rung_seconds"].items()}
    rungs = auto.ladder()
    assert sorted(table) == rungs and auto.LADDER_MAX in table
    per = [table[n] for n in rungs]
    assert all(x > 0 for x in per) and all(a <= b for a, b in zip(per, per[1:]))
    for n in rungs:
        assert auto.sweep_cost(sch, n, 1000) == pytest.approx(1000 * table[n], rel=1e-12)
    for lo, hi in zip(rungs, rungs[1:]):
        mid = (lo + hi) // 2
        if mid not in (lo, hi):
            assert 1000 * table[lo] - 1e-15 <= auto.sweep_cost(sch, mid, 1000) <= 1000 * table[hi] + 1e-15
    assert auto.sweep_cost(sch, 600, 1) >= table[384]
    assert auto.sweep_cost(sch, 3, 1) == table[10]
    w34, w114 = padded_width(34), padded_width(114)
    lane = max((table[114] - table[34]) / (w114 - w34), 1e-12)
    assert sch["lane_seconds"] == auto._round_up(lane)


def test_a_schedule_without_a_rung_table_plans_from_its_line_as_before(tmp_path):
    """The schedules of budgets under RUNG_TABLE_BUDGET, and of every run before the table
    (their auto.json replays through benchmarks/auto_rerun.py), cost a sweep ``M (position +
    W lane)``; read_schedule keeps a table when there is one and refuses a bad one in a line."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    for n in (10, 34, 100, 384):
        assert auto.sweep_cost(SCHEDULE, n, 500) == pytest.approx(
            500 * (SCHEDULE["position_seconds"] + padded_width(n) * SCHEDULE["lane_seconds"]), rel=1e-12)
    base = {"format": auto.SCHEDULE_FORMAT, "budget": 100.0, **SCHEDULE, "overhead_seconds": 0.5,
            **dict.fromkeys(auto._FINAL_COSTS, 1e-3)}
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(base))
    assert "rung_seconds" not in auto.read_schedule(path)
    path.write_text(json.dumps({**base, "rung_seconds": {"10": 2e-8, "15": 3e-8}}))
    assert auto.read_schedule(path)["rung_seconds"] == {"10": 2e-8, "15": 3e-8}
    for bad in ({}, {"10": -1.0}, {"ten": 1e-8}, {"10": "1e-8"}, [1e-8]):
        path.write_text(json.dumps({**base, "rung_seconds": bad}))
        with pytest.raises(InputError, match="rung_seconds") as exc:
            auto.read_schedule(path)
        assert "\n" not in str(exc.value)
    # check_schedule: the same checks on a parsed schedule (a recorded auto.json's), the
    # source named when given
    good = {**base, "rung_seconds": {"10": 2e-8, "15": 3e-8}}
    path.write_text(json.dumps(good))
    assert auto.check_schedule(good) == auto.read_schedule(path)
    assert auto.check_schedule({"info": {"auto": {"schedule": good}}}) == auto.read_schedule(path)
    with pytest.raises(InputError, match="^auto.json: rung_seconds"):
        auto.check_schedule({**base, "rung_seconds": {}}, "auto.json")
    with pytest.raises(InputError, match="^not a "):
        auto.check_schedule({**base, "budget": "100"})


def test_phase3_sweep_cost_measured_as_free_falls_back_to_the_model():
    """A fuzzed fit on a few strings measured its ladder sweeps as free (their CPU no more than
    the draws' recording subtracted from it), and phase 3 planned 1.2e11 sweeps for a 1 s
    budget. A measurement under MEASURED_FLOOR of the calibrated model is replaced by that
    floor; a plausible one is kept as measured."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    schedule = {"position_seconds": 6e-8, "lane_seconds": 1e-9, "forward_seconds": 2e-9}
    model = 6e-8 + padded_width(10) * 1e-9
    step = {"phase": "ladder", "states": 10, "sweeps": 40, "cpu": 0.0100, "cpu_sweeps": 0.0100}
    n_draws = auto.draw_plan(40, auto.RUNG_DRAWS)[2]
    draw = 0.0100 / n_draws  # the draws' recording accounts for all the sweeps' CPU
    free = auto.measured_costs([step], 10, 100, 50, draw, schedule)
    assert free["final_sweep_seconds"] == pytest.approx(auto.MEASURED_FLOOR * model, rel=0.02)
    assert free["final_forward_seconds"] == pytest.approx(auto.MEASURED_FLOOR * 2e-9, rel=0.02)
    plausible = dict(step, cpu_sweeps=0.0100 + 40 * 100 * model, cpu=0.0100 + 40 * 100 * model + 0.01)
    kept = auto.measured_costs([plausible], 10, 100, 50, draw, schedule)
    assert kept["final_sweep_seconds"] == pytest.approx(model, rel=0.02)
    assert auto.measured_costs([step], 10, 100, 50, draw)["final_sweep_seconds"] < 1e-12  # no model
    plan = auto.final_plan({"sweep": 100 * free["final_sweep_seconds"], "round": 0.0, "draw": draw,
                            "forward": 0.0, "start": 0.0}, 0.27, 1, 10, 5, stored=False)
    assert plan["sweeps"] * 100 * model < 0.27 / auto.MEASURED_FLOOR * 1.05


@pytest.mark.parametrize("n_strings", [5_000, 50_000])
def test_memory_estimate_covers_a_chains_counts_and_eq6_of_its_kept_draws(n_strings):
    """With one chain keeping one draw (``--max-draws 1``), the ``--auto`` estimate is at
    least a chain's counts at the ladder's largest N (``new_counts``, measured) plus Eq. 6 of
    that draw on a corpus of this size (:func:`bayesfa.memory.eq6_bytes`, the bounded blocks
    of strings, for the draw's float64 plug-in ``xi~``): the docstring's chain states and
    "Eq. 6 of the kept draws". On 5,000 and 50,000 random strings, where Eq. 6 outgrows a
    rung's draws (a slip that dropped that term, issue 39's survivor ``state + max(heldout,
    predict)`` -> ``state % max(...)``, fails both)."""
    from bayesfa.memory import eq6_bytes

    rng = np.random.default_rng(0)
    corpus = Corpus.from_strings([list(rng.integers(0, 3, size=rng.integers(0, 12)))
                                  for _ in range(n_strings)], 3)
    n, a = auto.LADDER_MAX, corpus.alphabet_size + 1
    draw = np.zeros((n + 1, a, n + 1), dtype=np.int32)  # one recorded C_iaj
    counts = sum(x.nbytes for x in new_counts(n, a))
    eq6 = eq6_bytes(1, 1, 2 * draw.nbytes, n + 1, corpus)  # xi~ in float64: twice the int32
    opts = {"auto": True, "chains": 1, "budget": 10.0, "max_draws": 1}
    assert METHOD.estimate_memory(corpus, opts) >= counts + eq6
