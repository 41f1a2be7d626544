"""benchmarks/pautomac_strategies.py on a toy PAutomaC problem: every arm runs (or, for
blocked+replica, records the sampler's refusal), the output has every column, and a rerun of the
same command skips the finished cells."""

from __future__ import annotations

import json

import numpy as np
import pytest

import benchmodules


@pytest.fixture(scope="module")
def strategies():
    return benchmodules.load("pautomac_strategies.py")


def _toy_data(folder):
    from bayesfa.corpus import Corpus
    from bayesfa.pautomac import write_sample, write_solution

    rng = np.random.default_rng(3)
    strings = [rng.integers(0, 3, size=rng.integers(1, 8)) for _ in range(90)]
    folder.mkdir()
    write_sample(folder / "5.pautomac.train", Corpus.from_strings(strings[:70], 3))
    write_sample(folder / "5.pautomac.test", Corpus.from_strings(strings[70:], 3))
    write_solution(folder / "5.pautomac_solution.txt", np.full(20, 1 / 20))


def _toy_run(tmp_path, monkeypatch, *extra: str) -> tuple[list[str], object]:
    """The driver's arguments on a toy problem 5 written under ``tmp_path`` (N = 3, period 5,
    blocked every 4, 2 replicas to b = 0.8) plus ``extra``, and its ``--out``."""
    monkeypatch.syspath_prepend(str(benchmodules.BENCH))
    data, out = tmp_path / "data", tmp_path / "res" / "toy.json"
    _toy_data(data)
    return (["--problem", "5", "--states", "3", "--beta", "0.05", "--period", "5", "--blocked-every",
             "4", "--replicas", "2", "--min-b", "0.8", *extra, "--data", str(data), "--out", str(out)],
            out)


def test_plateau_is_the_last_quarter_of_sweeps(strategies):
    # draws at sweeps 10, 20, ..., 100: the last quarter's (after sweep 75) are at 80, 90, 100
    p = strategies.plateau(np.arange(10.0), 10, 100)
    assert p == {"last_quarter_mean": 8.0, "last_quarter_min": 7.0, "last_quarter_max": 9.0,
                 "last_quarter_rise": 2.0, "last_quarter_draws": 3}
    # a replica chain's trace holds only the second half: 5 draws ending at sweep 100
    assert strategies.plateau([1.0, 2.0, 3.0, 4.0, 5.0], 10, 100)["last_quarter_draws"] == 3


@pytest.mark.slow  # every arm's kernels compiled: 10-60 s; .ci/run runs it by name
def test_every_arm_runs_and_a_rerun_skips_finished_cells(strategies, tmp_path, monkeypatch):
    argv, out = _toy_run(tmp_path, monkeypatch, "--seeds", "0,1", "--sweeps", "20", "--split-merge", "0.5")
    assert strategies.main(argv) == 0
    got = json.loads(out.read_text())
    assert got["command"].startswith("python benchmarks/pautomac_strategies.py --problem 5")
    assert got["commit"] and set(got["calibration"]) == {"blocked", "replica", "blocked+replica",
                                                         "split-merge"}
    assert set(got["rows"]) == {f"{a}/{s}" for a in strategies.ARMS for s in (0, 1)}
    for key, row in got["rows"].items():
        for col in ("excess", "ratio_minus_1", "final_log_joint", "mean_log_joint", "cpu_seconds",
                    "wall_seconds", "sweeps", "log_joint_trace", "commit", "finished"):
            assert col in row, (key, col)
        assert set(row["plateau"]) == {"last_quarter_mean", "last_quarter_min", "last_quarter_max",
                                       "last_quarter_rise", "last_quarter_draws"}
        assert 0 < row["sweeps"] <= got["sweeps"][row["arm"]]  # chain_plan: whole periods
    assert "replica_stats" in got["rows"]["replica/0"] and "replica_stats" in got["rows"]["blocked+replica/0"]
    assert "accept_split_merge" in got["rows"]["split-merge/0"]["accept_rates"]
    assert got["sweeps"]["plain"] == 20
    summary = {s["arm"]: s for s in got["summary"]}
    for arm in strategies.ARMS:
        s = summary[arm]
        assert s["seeds"] == 2 and s["worst_excess"] >= s["median_excess"] >= s["best_excess"]
        assert "median_cpu_seconds" in s and "median_last_quarter_log_joint" in s
    md = out.with_suffix(".md").read_text()
    assert "not supported" not in md and "worst / best" in md and got["command"] in md

    def refuse(*a, **k):
        raise AssertionError("a finished cell was run again")

    monkeypatch.setattr(strategies, "run_cell", refuse)
    monkeypatch.setattr(strategies, "calibrate", refuse)
    assert strategies.main(argv) == 0
    again = json.loads(out.read_text())
    assert again["rows"] == got["rows"] and again["calibration"] == got["calibration"]


@pytest.mark.slow  # every arm's kernels compiled: 10-60 s; .ci/run runs it by name
def test_a_cell_refused_by_an_earlier_sampler_is_run_now(strategies, tmp_path, monkeypatch):
    """Cells recorded as refused (the sampler before ``a7c3d8a`` refused ``--replicas`` with
    ``--blocked-every``) are run by a rerun once the sampler accepts the combination; the
    others are kept."""
    argv, out = _toy_run(tmp_path, monkeypatch, "--seeds", "0", "--sweeps", "10", "--arms",
                         "plain,blocked+replica")
    real = strategies.unsupported
    monkeypatch.setattr(strategies, "unsupported", lambda arm, settings: "the sampler refuses it: old"
                        if arm == "blocked+replica" else None)
    assert strategies.main(argv) == 0
    assert json.loads(out.read_text())["rows"]["blocked+replica/0"]["supported"] is False
    plain = json.loads(out.read_text())["rows"]["plain/0"]
    monkeypatch.setattr(strategies, "unsupported", real)
    assert strategies.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows["plain/0"] == plain and rows["blocked+replica/0"].get("supported", True)
    assert "replica_stats" in rows["blocked+replica/0"]
