"""benchmarks/peers.py: one row per (problem, method), failures included; the held-out choice;
the spectral method (Balle, Carreras, Luque & Quattoni 2014) recovers a toy PFA's string
probabilities from its exact Hankel blocks. All deterministic (no sampling, no error rate)."""

from __future__ import annotations

import csv
import io
import itertools
import sys

import numpy as np
import pytest

import benchmodules


@pytest.fixture(scope="module")
def peers():
    return benchmodules.load("peers.py")


def test_rows_one_per_problem_and_method_failures_kept(peers):
    rows = [peers.row("12", "spectral", status="zero probability (3 of 1000 test strings)"),
            peers.row("5", "alergia", ratio_minus_one=0.01, cpu_seconds=2.0, size=14),
            peers.row("12", "hmm-em", status="time-out (3600 s)"),
            peers.row("12", "spectral", ratio_minus_one=0.5, cpu_seconds=1.0, size=2),  # a rerun
            peers.row("5", "auto", ratio_minus_one=0.001, cpu_seconds=300.0, size=30)]
    merged = peers.merge_rows(rows)
    assert [(r["problem"], r["method"]) for r in merged] == [
        ("5", "alergia"), ("5", "auto"), ("12", "spectral"), ("12", "hmm-em")]
    table = list(csv.DictReader(io.StringIO(peers.rows_csv(merged))))
    assert list(table[0]) == peers.COLUMNS
    timed_out = next(r for r in table if r["method"] == "hmm-em")
    assert timed_out["ratio_minus_one"] == "" and timed_out["status"] == "time-out (3600 s)"
    assert next(r for r in table if r["method"] == "spectral")["ratio_minus_one"] == "0.5"


def test_failed_problem_has_no_mean(peers):
    rows = [peers.row("1", "alergia", ratio_minus_one=0.1), peers.row("2", "alergia", status="error: x")]
    assert peers._mean(rows, "alergia") is None
    assert peers._mean(rows[:1], "alergia") == pytest.approx(0.1)


def test_choose_fewest_zeros_then_likelihood_then_smaller(peers):
    trials = [{"value": 2, "zeros": 0, "loglik": -10.0}, {"value": 4, "zeros": 1, "loglik": -1.0},
              {"value": 8, "zeros": 0, "loglik": -5.0}, {"value": 16, "zeros": 0, "loglik": -5.0}]
    assert peers.choose(trials)["value"] == 8
    assert peers.heldout_fit([0.0, -np.inf, np.nan, -2.0]) == (2, -2.0)


def test_heldout_split_fixed_and_disjoint(peers):
    fit, held = peers.heldout_split(1000, 1, "24")
    assert held.size == 200 and np.intersect1d(fit, held).size == 0 and fit.size + held.size == 1000
    again_fit, again_held = peers.heldout_split(1000, 1, "24")
    assert np.array_equal(held, again_held)
    assert not np.array_equal(held, peers.heldout_split(1000, 1, "12")[1])


# -- the spectral method on a toy PFA ---------------------------------------------------------

# A 3-state PFA over 2 letters, written here (not read from the package): M[a][q, r] the
# probability of emitting a and moving q -> r, tau[q] of stopping; rows of sum_a M_a + tau = 1.
PI = np.array([0.6, 0.3, 0.1])
M = np.array([[[0.10, 0.30, 0.00], [0.00, 0.20, 0.10], [0.25, 0.00, 0.05]],
              [[0.20, 0.00, 0.10], [0.30, 0.00, 0.10], [0.00, 0.30, 0.10]]])
TAU = 1.0 - M.sum(axis=(0, 2))


def _prob(x) -> float:
    v = PI
    for a in x:
        v = v @ M[a]
    return float(v @ TAU)


def _substring_expectation(x) -> float:
    """E[number of occurrences of x in a string] = pi^T (I - M)^-1 M_x (I - M)^-1 tau."""
    inv = np.linalg.inv(np.eye(3) - M.sum(axis=0))
    v = PI @ inv
    for a in x:
        v = v @ M[a]
    return float(v @ inv @ TAU)


def _strings(max_len):
    return [x for n in range(max_len + 1) for x in itertools.product(range(2), repeat=n)]


def test_spectral_recovers_toy_pfa_from_exact_hankel(peers):
    assert np.all(TAU > 0)
    f = {x: _substring_expectation(x) for x in _strings(5)}  # basis length 2: uv, u a v <= 5
    basis = [x for x in _strings(2)]
    blocks = peers.hankel_blocks(f, basis, basis, 2)
    wfa = peers.substring_to_string(peers.spectral_wfa(*blocks, 3))  # the PFA's rank
    xs = _strings(6)
    got = peers.wfa_values(wfa, [list(x) for x in xs])
    want = np.array([_prob(x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
    # rank 2 is too small: the same blocks then miss some string's probability by > 1e-4
    low = peers.wfa_values(peers.substring_to_string(peers.spectral_wfa(*blocks, 2)),
                           [list(x) for x in xs])
    assert np.max(np.abs(low - want)) > 1e-4


def test_spectral_empirical_expectations_match_counts(peers):
    from bayesfa.corpus import Corpus

    corpus = Corpus.from_strings([[0, 1, 0], [], [1, 1]], alphabet_size=2)
    f = peers.substring_expectations(corpus, 3)
    assert f[()] == pytest.approx((4 + 1 + 3) / 3)  # len + 1 per string
    assert f[(0,)] == pytest.approx(2 / 3) and f[(1, 1)] == pytest.approx(1 / 3)
    assert f[(0, 1, 0)] == pytest.approx(1 / 3) and (1, 0, 1) not in f
    assert peers.frequent_basis(f, 3, 1) == [(), (1,), (0,)]


@pytest.fixture(scope="module")
def front():
    return benchmodules.load("front.py")


def test_front_summary_counts_failures_apart_and_never_best(front):
    """benchmarks/front.py: a failed row is never averaged nor best; 'auto ahead on' counts a
    peer's failure as auto ahead; the mean against auto's is over the problems both are ok on."""
    rows = [
        {"problem": "1", "method": "auto", "ratio_minus_one": 0.001, "cpu_seconds": 10.0},
        {"problem": "1", "method": "peer", "ratio_minus_one": 0.004, "cpu_seconds": 1.0},
        {"problem": "2", "method": "auto", "ratio_minus_one": 0.003, "cpu_seconds": 20.0},
        {"problem": "2", "method": "peer", "ratio_minus_one": 0.002, "cpu_seconds": 2.0},
        {"problem": "3", "method": "auto", "ratio_minus_one": 0.010, "cpu_seconds": 30.0},
        {"problem": "3", "method": "peer", "ratio_minus_one": None, "cpu_seconds": None},
    ]
    s = front.summarize(rows)
    auto, peer = s["per_method"]["auto"], s["per_method"]["peer"]
    assert (peer["ok"], peer["failed"]) == (2, 1)
    assert peer["mean"] == pytest.approx(0.003)
    assert peer["median_failures_worst"] == pytest.approx(0.004)
    assert (auto["best_on"], peer["best_on"]) == (2, 1)
    assert (peer["ref_ahead"], peer["ref_compared"]) == (2, 3)
    assert peer["mean_over_ref"] == pytest.approx(0.003 / 0.002)
    assert peer["cpu_total"] == pytest.approx(3.0)
    text = front.table(s)
    assert text.splitlines()[2].startswith("| auto |")  # best median first


def test_front_table_says_which_rows_ran_a_trimmed_grid(front):
    """A peer whose rows ran ``peers.py --grid trimmed`` is marked so in the table's 'from'
    column (all its rows, or how many), so that nobody reads it as the peer's full practice."""
    def rows(trimmed_on):
        return [{"problem": str(p), "method": m, "ratio_minus_one": 0.001 * p, "cpu_seconds": 1.0,
                 "chosen_by": ("held-out; grid trimmed (restarts=1)" if m == "hmm-em" and p in trimmed_on
                               else "held-out")}
                for p in (1, 2) for m in ("auto", "hmm-em")]

    def hmm_line(text):
        return next(line for line in text.splitlines() if line.startswith("| hmm-em |"))

    assert "| peer (hmmlearn) - trimmed grid |" in hmm_line(front.table(front.summarize(rows({1, 2}))))
    assert "| peer (hmmlearn) - trimmed grid on 1 |" in hmm_line(front.table(front.summarize(rows({1}))))
    assert "| peer (hmmlearn) |" in hmm_line(front.table(front.summarize(rows(set()))))
    assert "trimmed" not in front.table(front.summarize(rows(set())))


def test_front_puts_its_table_between_the_markers_only(front):
    """``--results``: the table replaces what stands between the two marker lines, the rest
    of the file is kept byte for byte; a file without the markers is refused."""
    text = f"# head\n\nbefore\n{front.BEGIN}\nold table\n{front.END}\n\nafter\n"
    new = front.put_table(text, "| a |\n|---|\n")
    assert new == f"# head\n\nbefore\n{front.BEGIN}\n| a |\n|---|\n{front.END}\n\nafter\n"
    assert front.put_table(new, "| b |\n") == f"# head\n\nbefore\n{front.BEGIN}\n| b |\n{front.END}\n\nafter\n"
    with pytest.raises(ValueError):
        front.put_table("no markers\n", "| a |\n")
    with pytest.raises(ValueError):
        front.put_table(f"{front.END}\n{front.BEGIN}\n", "| a |\n")


def test_front_best_on_ignores_a_partial_run(front):
    """A method run on some problems only is not ranked ('- (partial)'), and does not shrink
    the problems on which the complete methods are ranked."""
    rows = [{"problem": p, "method": m, "ratio_minus_one": v, "cpu_seconds": 1.0}
            for p, m, v in [("1", "auto", 0.001), ("1", "peer", 0.002), ("2", "auto", 0.003),
                            ("2", "peer", 0.001), ("3", "auto", 0.001), ("3", "peer", 0.004),
                            ("1", "part", 0.0001)]]
    s = front.summarize(rows)
    assert s["common"] == ["1", "2", "3"]
    assert [s["per_method"][m]["best_on"] for m in ("auto", "peer", "part")] == [2, 1, None]
    assert "| part |" in front.table(s) and "- (partial)" in front.table(s)


def test_front_leaves_out_rows_never_run_but_keeps_failures(front, peers, tmp_path):
    """A row whose unit never ran ('not run yet ...', 'not run: why') is no failure of the
    method and is left out of the front; a time-out or zero-probability row stays in."""
    rows = [peers.row("1", "cvb0", status="not run: too slow here"),
            peers.row("2", "cvb0", status="not run yet (partial run)"),
            peers.row("3", "cvb0", status="time-out (1800 s)"),
            peers.row("4", "cvb0", ratio_minus_one=0.01, cpu_seconds=2.0, size=5)]
    path = tmp_path / "summary.csv"
    path.write_text(peers.rows_csv(rows))
    kept = front.read_rows(path)
    assert [(r["problem"], r["status"]) for r in kept] == [("3", "time-out (1800 s)"), ("4", "ok")]
    assert kept[0]["ratio_minus_one"] is None and kept[1]["ratio_minus_one"] == 0.01

def test_trimmed_grid_is_named_in_the_command_the_row_and_the_fit(peers, tmp_path, monkeypatch):
    """``--grid trimmed``: hmm-em's sizes and fixed options come from TRIMMED, the unit's
    command carries ``--grid trimmed``, a unit of the other grid is not reused, and a method
    without a trimmed setting is refused."""
    import argparse
    import json

    fit_predict, sizes, note = peers.setting("hmm-em", "trimmed")
    assert sizes == peers.TRIMMED["hmm-em"]["grid"] != peers.GRIDS["hmm-em"]
    assert "grid trimmed" in note and "restarts=1" in note
    assert peers.setting("hmm-em")[1:] == (peers.GRIDS["hmm-em"], "")
    with pytest.raises(ValueError):
        peers.setting("spectral", "trimmed")
    seen = []
    monkeypatch.setattr("bayesfa.online.fit_and_predict",
                        lambda name, train, options, seed, t: seen.append(options) or
                        type("P", (), {"log_mean": np.zeros(1), "info": {"fit": {"n_states": 4}}})())
    fit_predict(None, [None], [4], 1)
    assert seen[0]["restarts"] == 1 and seen[0]["n_iter"] == 15 and seen[0]["states"] == 4
    args = argparse.Namespace(data="d", seed=1, grid="trimmed", timeout=5.0)
    cmd = peers._unit_command("3", "hmm-em", args)
    assert cmd[-2:] == ["--grid", "trimmed"]
    assert "--grid" not in peers._unit_command("3", "hmm-em", argparse.Namespace(data="d", seed=1))
    (tmp_path / "3.hmm-em.json").write_text(json.dumps(peers.row("3", "hmm-em")))  # no grid: full
    with pytest.raises(SystemExit, match="ran grid 'full', not 'trimmed'"):
        peers.drive_unit("3", "hmm-em", args, tmp_path)
    script = [sys.executable, "-c", "import json; print(json.dumps({'problem': '4', "
              "'method': 'hmm-em', 'status': 'ok', 'cpu_seconds': 1, 'size': 4, 'grid': 'trimmed'}))"]
    res = peers.drive_unit("4", "hmm-em", args, tmp_path, cmd=script)
    assert res["grid"] == "trimmed" and json.loads((tmp_path / "4.hmm-em.json").read_text())["grid"] == "trimmed"
    with pytest.raises(SystemExit):
        peers.main(["--methods", "spectral", "--grid", "trimmed", "--problems", "1",
                    "--out", str(tmp_path / "x")])


def test_every_summary_row_names_its_command_and_commit(peers, tmp_path, monkeypatch):
    """issue 40's done-when: each row of summary.csv with its command and commit. A unit's come
    from its file (the driver writes the commit read before the run); the committed auto and
    ipfa rows take their folder's command (summary.md) and commit (summary.json); a method with
    no unit gets a row that says why."""
    import argparse
    import json

    monkeypatch.setattr(peers, "git_commit", lambda: "abc1234")
    args = argparse.Namespace(data="d", seed=1, grid="full", timeout=30.0, commit="abc1234")
    script = [sys.executable, "-c", "import json; print(json.dumps({'problem': '4', "
              "'method': 'alergia', 'status': 'ok', 'cpu_seconds': 1, 'size': 4}))"]
    units = tmp_path / "units"
    res = peers.drive_unit("4", "alergia", args, units, cmd=script)
    on_disk = json.loads((units / "4.alergia.json").read_text())
    assert res["commit"] == on_disk["commit"] == "abc1234" and on_disk["command"]
    data = tmp_path / "data"  # summarize-only reads no data, but checks the files are there
    data.mkdir()
    for name in ("4.pautomac.train", "4.pautomac.test", "4.pautomac_solution.txt"):
        (data / name).write_text("")
    assert peers.main(["--summarize-only", "--problems", "4", "--data", str(data),
                       "--out", str(tmp_path)]) == 0
    table = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert list(table[0]) == peers.COLUMNS and {"command", "commit"} <= set(peers.COLUMNS)
    by = {r["method"]: r for r in table}
    assert set(by) == set(peers.METHODS) | set(peers.NOT_RUN)
    assert by["alergia"]["commit"] == "abc1234"
    assert by["alergia"]["command"] == on_disk["command"]
    for m in peers.COMMITTED:  # read from the committed runs' folders
        folder = peers.AUTO if m == "auto" else peers.IPFA
        code = json.loads((folder / "summary.json").read_text())["code"]
        assert by[m]["commit"] and code.endswith(f"git {by[m]['commit']}")
        assert by[m]["command"].startswith("bayesfa pautomac run ") and "/work" not in by[m]["command"]
    assert by["cvb0"]["status"] == peers.NOT_YET["cvb0"]
    for m, why in peers.NOT_RUN.items():  # a peer not run here: a row that says why
        assert by[m]["status"] == f"not run: {why}" and by[m]["ratio_minus_one"] == ""
    assert by["spectral"]["status"] == "not run yet (partial run)"


def test_committed_peer_units_each_name_a_commit():
    """Every committed unit row of benchmarks/results/peers names the commit it ran at."""
    import json

    units = sorted((benchmodules.BENCH / "results/peers/units").glob("[!.]*.json"))
    assert units
    missing = [u.name for u in units if not json.loads(u.read_text()).get("commit")]
    assert not missing, missing


def _counting_unit(tmp_path, problem, method, body="print(json.dumps(row))"):
    """A unit command that appends to ``ran.txt`` (so a test counts the runs) and prints a row."""
    code = ("import json, sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n'); "
            "row = {'problem': sys.argv[3], 'method': sys.argv[4], 'status': 'ok', "
            "'cpu_seconds': 1.0, 'size': 3, 'ratio_minus_one': 0.5}; " + body)
    return [sys.executable, "-c", code, str(tmp_path / "ran.txt"), f"{problem}.{method}",
            problem, method]


def test_units_run_on_a_dask_cluster_write_each_row_and_resume(peers, tmp_path):
    """issue 40 item 1: the units run on the Dask cluster of --scheduler (worker threads here),
    each row written as its unit ends, a failed or timed-out unit a row that says so, and a
    rerun runs only the units without a file."""
    import argparse
    import json

    args = argparse.Namespace(scheduler="local", workers=2, timeout=20.0, grid="full", commit="c0ffee1")
    units = tmp_path / "units"
    bodies = {("1", "spectral"): "print(json.dumps(row))",
              ("2", "spectral"): "sys.exit('boom')",
              ("3", "spectral"): "import time; time.sleep(60)"}

    def cmd_of(problem, method):
        return _counting_unit(tmp_path, problem, method, bodies[(problem, method)])

    args.timeout = 5.0
    rows = peers.run_units(list(bodies), args, units, cmd_of=cmd_of, processes=False)
    by = {r["problem"]: r for r in rows}
    assert by["1"]["status"] == "ok" and by["1"]["ratio_minus_one"] == 0.5
    assert by["2"]["status"] == "error: boom" and by["2"]["ratio_minus_one"] is None
    assert by["3"]["status"].startswith("time-out (5 s wall")
    for p in ("1", "2", "3"):
        on_disk = json.loads((units / f"{p}.spectral.json").read_text())
        assert on_disk["status"] == by[p]["status"] and on_disk["commit"] == "c0ffee1"
    assert sorted((tmp_path / "ran.txt").read_text().split()) == ["1.spectral", "2.spectral", "3.spectral"]
    (units / "2.spectral.json").unlink()  # the failed unit moved away: a rerun runs it alone
    bodies[("2", "spectral")] = "print(json.dumps(row))"
    again = peers.run_units(list(bodies), args, units, cmd_of=cmd_of, processes=False)
    assert {r["problem"]: r["status"] for r in again} == {"1": "ok", "2": "ok", "3": by["3"]["status"]}
    assert sorted((tmp_path / "ran.txt").read_text().split()) == [
        "1.spectral", "2.spectral", "2.spectral", "3.spectral"]


def test_units_run_in_dask_worker_processes(tmp_path):
    """The same through --scheduler local's worker processes, as the script runs it (a
    process of its own, its main guarded): the task the workers run is bayesfa's
    (:func:`bayesfa.cluster.run_command`), so only the unit's command travels."""
    import json
    import subprocess

    cmd = _counting_unit(tmp_path, "7", "alergia")
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import argparse, json, sys\n"
        "from pathlib import Path\n"
        f"sys.path.insert(0, {str(benchmodules.BENCH.parent / 'tests')!r})\n"
        "import benchmodules\n"
        "if __name__ == '__main__':\n"
        "    peers = benchmodules.load('peers.py')\n"
        "    args = argparse.Namespace(scheduler='local', workers=1, timeout=60.0, grid='full',\n"
        "                              commit='c0ffee1')\n"
        f"    rows = peers.run_units([('7', 'alergia')], args, Path(sys.argv[1]),\n"
        f"                           cmd_of=lambda p, m: {cmd!r})\n"
        "    print(json.dumps([(r['problem'], r['status'], r['commit']) for r in rows]))\n")
    proc = subprocess.run([sys.executable, str(driver), str(tmp_path / "units")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [["7", "ok", "c0ffee1"]]
    assert json.loads((tmp_path / "units" / "7.alergia.json").read_text())["status"] == "ok"


def test_scheduler_and_workers_checked_in_one_line(peers, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        peers.main(["--scheduler", "nowhere", "--problems", "1", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--scheduler 'nowhere'" in capsys.readouterr().err
