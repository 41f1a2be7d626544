"""The ``prob`` and ``score`` commands, their error reporting, and ``--help`` everywhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bayesfa.cli import main
from bayesfa.datasets import pautomac_path
from bayesfa.pautomac import read_model, read_sample, read_solution
from test_pautomac import MODEL_CASES, SAMPLE_CASES, SOLUTION_CASES, VALID_MODEL, exact_probabilities, write_bytes

COMMANDS = ["prob", "score", "fit", "predict", "perplexity", "diagnose", "select", "validate"]


def assert_one_line_error(capsys, rc: int, path: Path, line: int | None) -> str:
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err  # exactly one line
    assert err.startswith("bayesfa: error: "), err
    assert "Traceback" not in err
    assert (f"{path}:{line}: " if line is not None else f"{path}: ") in err, err
    return err


# -- the happy path on the bundled problem ---------------------------------------------------
def test_prob_then_score_on_bundled_problem_24(tmp_path, capsys):
    pred = tmp_path / "24.pred"
    assert main(["prob", str(pautomac_path(24, "model")), str(pautomac_path(24, "test")),
                 "--out", str(pred)]) == 0
    assert read_solution(pred).size == 1000
    assert main(["score", str(pred), str(pautomac_path(24, "solution")), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count("\n") == 1  # one line of JSON
    result = json.loads(out)
    assert list(result) == ["score", "min_score", "ratio"]
    assert abs(result["ratio"] - 1.0) < 1e-9
    assert result["min_score"] == pytest.approx(38.728780, abs=1e-6)  # 2^H, shared/data README
    assert result["score"] == pytest.approx(result["min_score"], rel=1e-9)


def test_score_plain_output(tmp_path, capsys):
    solution = str(pautomac_path(24, "solution"))
    assert main(["score", solution, solution]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["score", "min_score", "ratio"]
    assert float(lines[2].split()[1]) == pytest.approx(1.0)


def test_prob_gives_zero_to_letters_the_model_lacks(tmp_path):
    model = write_bytes(tmp_path, "m.txt", VALID_MODEL)  # 2 letters
    test = write_bytes(tmp_path, "t.test", "4 4\n0\n1 0\n2 0 3\n1 2\n")  # alphabet of 4
    pred = tmp_path / "p.txt"
    assert main(["prob", str(model), str(test), "--out", str(pred)]) == 0
    got = read_solution(pred)
    pfa = read_model(model)
    assert got[0] == pytest.approx(pfa.init @ pfa.stop)
    assert got[1] == pytest.approx(exact_probabilities(pfa, read_sample(test))[1])
    assert got[1] > 0 and got[2] == 0 and got[3] == 0


# -- every malformed input: one line on stderr, exit 2 ---------------------------------------
def _params(cases):
    return [pytest.param(content, line, id=name) for name, content, line in cases]


@pytest.mark.parametrize("content, line", _params(SAMPLE_CASES))
def test_prob_with_malformed_test_file(tmp_path, capsys, content, line):
    bad = write_bytes(tmp_path, "bad.pautomac.test", content)
    out = tmp_path / "pred.txt"
    rc = main(["prob", str(pautomac_path(24, "model")), str(bad), "--out", str(out)])
    assert_one_line_error(capsys, rc, bad, line)
    assert not out.exists()


@pytest.mark.parametrize("content, line", _params(MODEL_CASES))
def test_prob_with_malformed_model_file(tmp_path, capsys, content, line):
    bad = write_bytes(tmp_path, "bad.pautomac_model.txt", content)
    rc = main(["prob", str(bad), str(pautomac_path(24, "test")), "--out", str(tmp_path / "pred.txt")])
    assert_one_line_error(capsys, rc, bad, line)


@pytest.mark.parametrize("as_solution", [False, True], ids=["pred", "solution"])
@pytest.mark.parametrize("content, line", _params(SOLUTION_CASES))
def test_score_with_malformed_file(tmp_path, capsys, content, line, as_solution):
    bad = write_bytes(tmp_path, "bad.txt", content)
    good = str(pautomac_path(24, "solution"))
    rc = main(["score", good, str(bad)] if as_solution else ["score", str(bad), good, "--json"])
    assert_one_line_error(capsys, rc, bad, line)


def test_missing_input_file(tmp_path, capsys):
    missing = tmp_path / "missing.test"
    rc = main(["prob", str(pautomac_path(24, "model")), str(missing), "--out", str(tmp_path / "p")])
    assert_one_line_error(capsys, rc, missing, None)


def test_score_with_count_mismatch(tmp_path, capsys):
    pred = write_bytes(tmp_path, "short.txt", "2\n0.5\n0.5\n")
    rc = main(["score", str(pred), str(pautomac_path(24, "solution"))])
    err = assert_one_line_error(capsys, rc, pred, None)
    assert "1000" in err


def test_unwritable_output(tmp_path, capsys):
    out = tmp_path / "no" / "such" / "dir" / "pred.txt"
    rc = main(["prob", str(pautomac_path(24, "model")), str(pautomac_path(24, "test")), "--out", str(out)])
    _, err = capsys.readouterr()
    assert rc == 2
    assert err.startswith("bayesfa: error: ") and err.count("\n") == 1 and str(out) in err


def test_console_script_reports_one_line_and_exit_2(tmp_path):
    """The installed ``bayesfa`` script, as a user runs it: no traceback, exit status 2."""
    script = Path(sys.executable).with_name("bayesfa")
    if not script.exists():
        script = shutil.which("bayesfa")
        if script is None:
            pytest.skip("console script bayesfa not installed")
    bad = write_bytes(tmp_path, "bad.pautomac.test", "2 3\n1 0\n2 1 7\n")
    proc = subprocess.run([str(script), "prob", str(pautomac_path(24, "model")), str(bad),
                           "--out", str(tmp_path / "p.txt")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"bayesfa: error: {bad}:3: symbol 7 outside the alphabet 0..2"]


# -- help ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help(capsys, command):
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit) as exc_info:
        main(argv)
    assert exc_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: bayesfa")
    if command is None:
        for name in COMMANDS:
            assert name in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc_info:
        main(["--version"])
    assert exc_info.value.code == 0
    assert capsys.readouterr().out.startswith("bayesfa ")


def test_fit_predict_score_diagnose_perplexity(tmp_path, capsys):
    """The learner commands on the bundled problem: the run directory format end to end."""
    run, pred = tmp_path / "run", tmp_path / "pred.txt"
    train, test = pautomac_path(24, "train"), pautomac_path(24, "test")
    args = ["fit", str(train), "--method", "cgs-pfa", "--states", "4", "--beta", "0.1",
            "--iterations", "40", "--burn-in", "20", "--period", "5", "--chains", "2",
            "--seed", "5", "--out", str(run), "--quiet"]
    assert main(args) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["format"] == "bayesfa-run/1" and manifest["method"] == "cgs-pfa"
    assert manifest["seed"] == 5 and manifest["options"]["states"] == 4
    assert manifest["train"]["n_strings"] == 20000 and "numpy" in manifest["versions"]
    assert (run / "trace.nc").is_file() and not (run / "partial").exists()
    assert main(["predict", str(run), str(test), "--out", str(pred)]) == 0
    probs = read_solution(pred)
    assert probs.size == 1000 and probs.min() > 0 and probs.max() < 1
    capsys.readouterr()
    assert main(["score", "--json", str(pred), str(pautomac_path(24, "solution"))]) == 0
    score = json.loads(capsys.readouterr().out)
    assert 1.0 <= score["ratio"] < 1.2  # a 4-state PFA after 40 sweeps: close, not perfect
    assert main(["diagnose", "--json", str(run)]) == 0
    diag = json.loads(capsys.readouterr().out)
    assert set(diag) == {"kind", "variables", "verdict", "warnings", "notes",
                         "sampler_stats"} and diag["kind"] == "sampler"
    assert set(diag["sampler_stats"]) == {"moved"} and 0 < diag["sampler_stats"]["moved"] <= 1
    assert diag["notes"] == []  # two chains: R-hat is defined
    assert set(diag["variables"]) == {"log_joint", "n_states", "n_edges", "heldout_log_pred", "moved"}
    assert set(diag["variables"]["log_joint"]) >= {"mean", "rhat", "ess_bulk"}
    assert main(["perplexity", "--json", str(run), str(test)]) == 0
    assert json.loads(capsys.readouterr().out)["perplexity"] > 1
    # same seed, same predictions
    assert main(args[:-3] + ["--out", str(tmp_path / "again"), "--quiet"]) == 0
    assert main(["predict", str(tmp_path / "again"), str(test), "--out", str(tmp_path / "p2")]) == 0
    assert (tmp_path / "p2").read_text() == pred.read_text()


def test_predict_rejects_a_larger_alphabet(tmp_path, capsys):
    run = tmp_path / "run"
    small = tmp_path / "small.train"
    small.write_text("3 2\n2 0 1\n0\n1 1\n")
    assert main(["fit", str(small), "--method", "cgs-pfa", "--states", "2", "--iterations", "10",
                 "--burn-in", "0", "--period", "1", "--chains", "1", "--out", str(run), "--quiet"]) == 0
    big = tmp_path / "big.test"
    big.write_text("1 3\n1 2\n")
    rc = main(["predict", str(run), str(big), "--out", str(tmp_path / "p")])
    assert_one_line_error(capsys, rc, big, 1)


def test_select_two_stages_from_the_command_line(tmp_path, capsys):
    """`bayesfa select`: Sect. 4.1's two stages through the CLI, resumable, JSON on one line."""
    train = tmp_path / "small.train"
    corpus = read_sample(pautomac_path(24, "train")).subset(range(300))
    from bayesfa.pautomac import write_sample
    write_sample(train, corpus)
    args = ["select", str(train), "--method", "cgs-pfa", "--states", "1,3", "--beta", "0.05,0.5",
            "--folds", "3", "--iterations", "30", "--burn-in", "10", "--period", "5", "--chains", "1",
            "--seed", "2", "--out", str(tmp_path / "sel"), "--quiet", "--json"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    result = json.loads(out)
    assert [r["candidate"]["states"] for r in result["stage1"]] == [1, 3]
    assert all(r["candidate"]["beta"] == 0.5 for r in result["stage1"])
    chosen = result["choice"]["states"]
    assert [r["candidate"]["beta"] for r in result["stage2"]] == [0.05, 0.5]
    assert all(r["candidate"]["states"] == chosen for r in result["stage2"])
    assert (tmp_path / "sel" / "selection.json").is_file()
    assert main(args) == 0  # a rerun reuses every finished fold
    assert json.loads(capsys.readouterr().out)["choice"] == result["choice"]


@pytest.mark.parametrize("bad", [["--states", "0"], ["--beta", "-1"], ["--iterations", "x"],
                                 ["--no-such-option"]])
def test_bad_option_is_one_line_exit_2(capsys, tmp_path, bad):
    from bayesfa.datasets import pautomac_path

    with pytest.raises(SystemExit) as exc:
        main(["fit", str(pautomac_path(24, "train")), "--method", "cgs-pfa", *bad,
              "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert len(err.strip().splitlines()) == 1 and "error:" in err, err
    assert bad[0] in err or "unrecognized" in err, err
    assert not (tmp_path / "run").exists()
