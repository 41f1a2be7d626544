"""One statistical check of the validation suite and its text form.

:class:`Check` is what every check returns (the predictive comparison of
:mod:`bayesfa.validation.harness`, the kernel tests of :mod:`bayesfa.validation.pfa.kernel_tests`,
the checks that methods add through their validation spec). It lives in its own module so
that the modules that build checks need not import the harness, which imports them: no
import cycle inside :mod:`bayesfa.validation`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bayesfa.rundir import jsonable as _jsonable  # strict JSON: non-finite -> null + note


@dataclass
class Check:
    """One statistical check: ``rows`` of a table with ``columns``, its own verdict."""

    name: str
    passed: bool
    description: str
    alpha: float
    columns: list[str]
    rows: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    def to_table(self) -> str:
        head = f"[{'PASS' if self.passed else 'FAIL'}] {self.name}: {self.description}"
        widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in self.rows)) if self.rows else len(c)
                  for c in self.columns}
        lines = [head, "  " + "  ".join(c.rjust(widths[c]) for c in self.columns)]
        for r in self.rows:
            lines.append("  " + "  ".join(_fmt(r.get(c)).rjust(widths[c]) for c in self.columns))
        for note in self.notes:
            lines.append(f"  note: {note}")
        extra = {k: v for k, v in self.summary.items() if not isinstance(v, (list, dict))}
        if extra:
            lines.append("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in extra.items()))
        return "\n".join(lines)



def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if abs(v) >= 1e4 or abs(v) < 1e-3:
            return f"{v:.3e}"
        return f"{v:.5f}" if abs(v) < 10 else f"{v:.2f}"
    if isinstance(v, (list, tuple)):
        return " ".join(_fmt(x) for x in v)
    return str(v)


def pooled_chi2(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0):
    """Pearson chi-square of ``observed`` counts against ``probs``; cells with expectation
    below ``min_expected`` are pooled into one. Returns ``(chi2, dof, p_value, n_cells)``."""
    observed = np.asarray(observed, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    expected = observed.sum() * probs / probs.sum()
    big = expected >= min_expected
    obs = list(observed[big])
    exp = list(expected[big])
    rest_e, rest_o = expected[~big].sum(), observed[~big].sum()
    if rest_e > 0:
        if rest_e >= min_expected or not exp:
            obs.append(rest_o)
            exp.append(rest_e)
        else:  # too small to stand alone: merge into the smallest kept cell
            i = int(np.argmin(exp))
            obs[i] += rest_o
            exp[i] += rest_e
    obs, exp = np.array(obs), np.array(exp)
    from scipy.stats import chi2 as chi2_dist  # lazily: scipy.stats takes a while to import

    chi2 = float(((obs - exp) ** 2 / exp).sum())
    dof = max(1, obs.size - 1)
    return chi2, dof, float(chi2_dist.sf(chi2, dof)), int(obs.size)


def chi2_row(name: str, observed, probs, threshold: float) -> dict:
    """A check's row for one Pearson chi-square test (:func:`pooled_chi2`) of ``observed``
    against ``probs`` at level ``threshold``: ``test, cells, chi2, dof, p_value, threshold, pass``."""
    chi2, dof, p, cells = pooled_chi2(observed, probs)
    return {"test": name, "cells": cells, "chi2": chi2, "dof": dof, "p_value": p,
            "threshold": threshold, "pass": bool(p >= threshold)}


def log_p_margin(p: float, threshold: float) -> float:
    """A p-value test's statistic over its threshold, ``log p / log threshold`` (``-log p``
    against ``-log threshold``): above 1 exactly when ``p < threshold``; ``inf`` for p = 0."""
    if p <= 0.0:
        return math.inf
    if p >= 1.0:
        return 0.0
    return math.log(p) / math.log(threshold)


def _row_margin(row: dict, critical_z) -> float | None:
    if isinstance(row.get("p_value"), (int, float)) and isinstance(row.get("threshold"), (int, float)):
        return log_p_margin(float(row["p_value"]), float(row["threshold"]))
    if isinstance(row.get("z"), (int, float)) and isinstance(critical_z, (int, float)) and critical_z > 0:
        return abs(float(row["z"])) / float(critical_z)
    for diff in ("max_diff", "abs_error", "error", "max_error"):
        if isinstance(row.get(diff), (int, float)) and isinstance(row.get("tolerance"), (int, float)):
            tol = float(row["tolerance"])
            return (math.inf if row[diff] > 0 else 0.0) if tol == 0 else float(row[diff]) / tol
    return None


def margin(check: Check) -> float | None:
    """How far a check's statistic is from its threshold, as statistic over threshold (above 1
    when the check fails; issue 39, item 4): ``summary["margin"]`` when the check states it
    (the checks whose thresholds are not in their rows do), else ``max_abs_z / critical_z``
    (or ``max_z``) of the summary, else the largest over the rows of ``|z| / critical_z``,
    ``log p / log threshold`` (:func:`log_p_margin`) or ``difference / tolerance``, the rows
    of a failing check restricted to its failing rows. None when the check's form is not
    one of these (reported as unmeasured, never as a margin)."""
    s = check.summary
    if isinstance(s.get("margin"), (int, float)) and not isinstance(s.get("margin"), bool):
        return float(s["margin"])
    crit = s.get("critical_z")
    for key in ("max_abs_z", "max_z"):
        if isinstance(s.get(key), (int, float)) and isinstance(crit, (int, float)) and crit > 0:
            return abs(float(s[key])) / float(crit)
    rows = [r for r in check.rows if r.get("pass") is False] if not check.passed else check.rows
    values = [m for m in (_row_margin(r, crit) for r in rows) if m is not None]
    return max(values) if values else None
