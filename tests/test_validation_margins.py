"""Margins of the validation checks (issue 39, item 4): each check's statistic over its
threshold, and the kill matrix's catch margin per mutant. Deterministic (no sampling)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from bayesfa.validation.checks import Check, log_p_margin, margin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import kill_matrix  # noqa: E402


def _check(passed, rows, summary=None):
    return Check("c", passed, "", 1e-3, list(rows[0]) if rows else [], rows, summary or {})


def test_log_p_margin():
    assert log_p_margin(1e-3, 1e-3) == pytest.approx(1.0)
    assert log_p_margin(1e-6, 1e-3) == pytest.approx(2.0)
    assert log_p_margin(0.5, 1e-3) < 1 and log_p_margin(0.0, 1e-3) == math.inf
    assert log_p_margin(1.0, 1e-3) == 0.0


def test_margin_forms():
    assert margin(_check(False, [], {"max_abs_z": 6.0, "critical_z": 4.0})) == pytest.approx(1.5)
    assert margin(_check(False, [], {"margin": 2.5, "max_abs_z": 9.0, "critical_z": 1.0})) == 2.5
    rows = [{"test": "a", "p_value": 0.5, "threshold": 1e-3, "pass": True},
            {"test": "b", "p_value": 1e-9, "threshold": 1e-3, "pass": False}]
    assert margin(_check(False, rows)) == pytest.approx(3.0)
    rows = [{"quantity": "x", "max_diff": 3e-9, "tolerance": 1e-9, "pass": False}]
    assert margin(_check(False, rows)) == pytest.approx(3.0)
    rows = [{"quantity": "n", "max_diff": 1.0, "tolerance": 0.0, "pass": False}]
    assert margin(_check(False, rows)) == math.inf
    assert margin(_check(False, [{"string": "a", "value": 1.0, "pass": False}])) is None


def _cell(name, seed, checks):
    return {"name": name, "seed": seed, "passed": all(c["passed"] for c in checks.values()),
            "checks": checks}


def test_kill_matrix_flags_a_weak_catch():
    ok = {"passed": True, "stat": None, "value": None, "margin": 0.3}
    rows = [_cell("m:mutant-strong", 0, {"a": {**ok, "passed": False, "margin": 4.0}, "b": ok}),
            _cell("m:mutant-strong", 1, {"a": {**ok, "passed": False, "margin": "inf"}, "b": ok}),
            _cell("m:mutant-weak", 0, {"a": {**ok, "passed": False, "margin": 1.2},
                                       "b": {**ok, "passed": False, "margin": 1.4}}),
            _cell("m:mutant-weak", 1, {"a": {**ok, "passed": False, "margin": 8.0}, "b": ok}),
            _cell("m:mutant-unknown", 0, {"a": {**ok, "passed": False, "margin": None}})]
    assert kill_matrix.catch_margin(rows[2]) == pytest.approx(1.4)
    table = kill_matrix.markdown(rows, 2)
    line = {ln.split("`")[1]: ln for ln in table.splitlines() if ln.startswith("| `")}
    assert "| 4 |" in line["m:mutant-strong"] and "WEAK" not in line["m:mutant-strong"]
    assert "1.4 WEAK" in line["m:mutant-weak"]
    assert "| ? |" in line["m:mutant-unknown"]
