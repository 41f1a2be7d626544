"""Every folder that ``fit`` writes loads (issue 36, item 2), and the raw errors of item 5.

The data are the issue's: 200 training and 100 held-out strings of a 3-state automaton over
``a b c`` whose start state stops with probability 0.1 (about one string in ten is empty),
given as Python strings of characters, of words (multi-character symbols) and of integers.
``bayesfa.fit(strings, out=DIR)`` -> ``bayesfa.load(DIR)`` -> predict / perplexity / diagnose /
export (where the method has it) / sample, and ``bayesfa predict DIR TEST`` on a file of the
same strings. Deterministic: fixed seeds, no statistical assertion.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bayesfa
from bayesfa.api import default_separator
from bayesfa.automata import PFA
from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.pautomac import read_solution, write_sample
from bayesfa.textdata import format_lines

TINY = {"cgs-pfa": {"states": 3, "iterations": 20, "burn_in": 10, "period": 1, "chains": 2},
        "alergia": {}}


def _issue_automaton() -> PFA:
    """3 states over a b c; state 0 (the start) stops with probability 0.1."""
    stop = np.array([0.1, 0.2, 0.3])
    rng = np.random.default_rng(36)
    move = rng.dirichlet(np.ones(9), size=3).reshape(3, 3, 3)  # [state, letter, next]
    trans = move.transpose(1, 0, 2) * (1.0 - stop)[None, :, None]
    return PFA(np.array([1.0, 0.0, 0.0]), trans, stop)


def _letters() -> tuple[list[list[int]], list[list[int]]]:
    rng = np.random.default_rng(2026)
    pfa = _issue_automaton()
    train, test = pfa.sample(200, rng), pfa.sample(100, rng)
    return ([s.tolist() for s in train.strings()], [s.tolist() for s in test.strings()])


TRAIN_LETTERS, TEST_LETTERS = _letters()
#: each kind of Python symbol: letter k of the automaton is SYMBOLS[kind][k]
SYMBOLS = {"characters": ["a", "b", "c"], "words": ["alpha", "beta", "gamma"],
           "integers": [7, 30, 100]}


def _strings(kind: str, letters: list[list[int]]) -> list:
    sym = SYMBOLS[kind]
    if kind == "characters":
        return ["".join(sym[k] for k in s) for s in letters]
    return [[sym[k] for k in s] for s in letters]


def test_the_issue_data_have_empty_strings():
    assert sum(not s for s in TRAIN_LETTERS) >= 10 and sum(not s for s in TEST_LETTERS) >= 5


@pytest.mark.parametrize("method", ["alergia", "cgs-pfa"])
@pytest.mark.parametrize("kind", ["characters", "words", "integers"])
def test_a_folder_fitted_from_python_strings_loads(tmp_path, kind, method):
    train, test = _strings(kind, TRAIN_LETTERS), _strings(kind, TEST_LETTERS)
    out = tmp_path / "run"
    fitted = bayesfa.fit(train, method=method, seed=5, out=out, **TINY[method])
    run = bayesfa.load(out)
    assert run.alphabet == SYMBOLS[kind] and run.manifest["train"]["n_strings"] == 200
    logp = run.predict(test)
    assert logp.shape == (100,) and np.all(logp <= 0)
    assert np.array_equal(logp, fitted.predict(test))
    # the same letters fitted from a PAutomaC sample predict the same (one code path)
    write_sample(tmp_path / "train.pautomac", Corpus.from_strings(TRAIN_LETTERS, 3))
    plain = bayesfa.fit(tmp_path / "train.pautomac", method=method, seed=5, **TINY[method])
    assert np.array_equal(plain.predict(TEST_LETTERS), logp)
    result = run.perplexity(test)
    assert np.isclose(result["log_prob"], logp.sum()) and result["n_symbols"] > 0
    if method == "alergia":  # the greedy learners export their automaton today
        assert run.export("pautomac").startswith("I: (state)")
    else:
        report = run.diagnose()
        assert report["kind"] == "sampler" and report["variables"]
    drawn = run.sample(5, seed=1)
    assert len(drawn) == 5 and {x for s in drawn for x in s} <= set(SYMBOLS[kind])
    # the command line reads a file of the same strings, one row per line
    sep = default_separator(run.alphabet)
    assert run.manifest["train"].get("separator") == sep
    test_file = tmp_path / "test.lines"
    test_file.write_text(format_lines(test, sep))
    pred = tmp_path / "pred.txt"
    assert main(["predict", str(out), str(test_file), "--out", str(pred)]) == 0
    written = read_solution(pred, log=True)
    assert written.shape == (100,) and np.allclose(written, logp, rtol=1e-12, atol=0)
    assert np.array_equal(run.predict(test_file), logp)


def test_a_python_folder_is_found_done_refused_and_replaced_with_force(tmp_path):
    train = _strings("words", TRAIN_LETTERS)
    out = tmp_path / "run"
    bayesfa.fit(train, method="alergia", out=out)
    again = bayesfa.api.fit_resolved(train, "alergia", bayesfa.method_options.resolve("alergia"),
                                     out=out)
    assert again.status == "done"
    with pytest.raises(InputError, match="use --force"):
        bayesfa.fit(train, method="alergia", out=out, alpha=0.2)
    bayesfa.fit(train, method="alergia", out=out, alpha=0.2, force=True)
    assert bayesfa.load(out).options["alpha"] == 0.2
    # a run whose manifest cannot be read any more is still replaced with force
    manifest = out / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"alergia"', '"alergia-old"', 1))
    with pytest.raises(InputError, match="fingerprint"):
        bayesfa.load(out)
    with pytest.raises(InputError, match="cannot be read"):
        bayesfa.fit(train, method="alergia", out=out)
    bayesfa.fit(train, method="alergia", out=out, force=True)
    assert bayesfa.load(out).method == "alergia"


def test_the_cli_keeps_every_line_of_a_lines_file(tmp_path, capsys):
    """The issue's replay: 200 lines with empty ones fit on 200 strings, and predict writes
    one row per line of a 100-line test file, the same rows as from the PAutomaC file of the
    same strings."""
    train, test = _strings("characters", TRAIN_LETTERS), _strings("characters", TEST_LETTERS)
    (tmp_path / "train.lines").write_text(format_lines(train))
    (tmp_path / "test.lines").write_text(format_lines(test))
    write_sample(tmp_path / "train.pautomac", Corpus.from_strings(TRAIN_LETTERS, 3))
    write_sample(tmp_path / "test.pautomac", Corpus.from_strings(TEST_LETTERS, 3))
    for fmt in ("lines", "pautomac"):
        assert main(["fit", str(tmp_path / f"train.{fmt}"), "--format", fmt, "--method",
                     "alergia", "--out", str(tmp_path / fmt)]) == 0
        assert "fitted alergia on 200 strings" in capsys.readouterr().err
        assert main(["predict", str(tmp_path / fmt), str(tmp_path / f"test.{fmt}"), "--out",
                     str(tmp_path / f"{fmt}.pred")]) == 0
    lines, plain = (read_solution(tmp_path / f"{fmt}.pred") for fmt in ("lines", "pautomac"))
    assert lines.shape == (100,) and np.array_equal(lines, plain)


def test_the_cli_separator_is_recorded_and_reused(tmp_path, capsys):
    words = _strings("words", TRAIN_LETTERS)
    (tmp_path / "train.lines").write_text(format_lines(words, ","))
    (tmp_path / "test.lines").write_text(format_lines(_strings("words", TEST_LETTERS), ","))
    out = tmp_path / "run"
    assert main(["fit", str(tmp_path / "train.lines"), "--format", "lines", "--separator", ",",
                 "--method", "alergia", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["train"]["separator"] == "," and manifest["train"]["alphabet"] == [
        "alpha", "beta", "gamma"]
    assert main(["predict", str(out), str(tmp_path / "test.lines"), "--out",
                 str(tmp_path / "a.pred")]) == 0  # read with the run's separator
    assert read_solution(tmp_path / "a.pred").shape == (100,)
    capsys.readouterr()
    # another separator gives other symbols: one line naming file, line and symbol
    assert main(["predict", str(out), str(tmp_path / "test.lines"), "--separator", " ",
                 "--out", str(tmp_path / "b.pred")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "test.lines:" in err and "is not in the alphabet" in err
    assert not (tmp_path / "b.pred").exists()
    # a separator is for lines files only
    assert main(["fit", str(tmp_path / "train.lines"), "--separator", ",", "--method",
                 "alergia", "--out", str(tmp_path / "x")]) == 2
    assert "--separator" in capsys.readouterr().err


# -- raw errors become one-line InputErrors naming the argument (issue 36, item 5) -----------

def test_python_symbols_on_a_run_of_letter_numbers(tmp_path):
    write_sample(tmp_path / "train.pautomac", Corpus.from_strings(TRAIN_LETTERS, 3))
    run = bayesfa.fit(tmp_path / "train.pautomac", method="alergia")
    with pytest.raises(InputError, match=r"string 0 has the symbol 'a'.*letter numbers 0\.\.2"):
        run.predict(["ab", "b"])
    with pytest.raises(InputError, match=r"string 1 has the symbol 3"):
        run.predict([[0, 1], [3]])
    assert run.predict([[0, 1], [], [2]]).shape == (3,)


def test_sample_of_a_negative_count(tmp_path):
    run = bayesfa.fit(_strings("characters", TRAIN_LETTERS), method="alergia")
    for n in (-1, 2.5, "3"):
        with pytest.raises(InputError, match=r"^n must be a whole number, 0 or more, got"):
            run.sample(n)
    assert run.sample(0) == []


def test_a_fractional_number_of_states():
    with pytest.raises(InputError, match=r"states= \(--states of cgs-pfa\): must be a whole "
                                         r"number, got 2\.5$"):
        bayesfa.fit(["ab", "b"], method="cgs-pfa", states=2.5)
    with pytest.raises(InputError, match=r"beta= \(--beta of cgs-pfa\): must be a number, "
                                         r"got 'x'$"):
        bayesfa.fit(["ab", "b"], method="cgs-pfa", beta="x")
    assert bayesfa.method_options.resolve("cgs-pfa", {"states": 3.0})["states"] == 3
