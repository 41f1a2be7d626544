"""The ``recorded`` check: every per-draw quantity a method writes to its trace, recomputed.

A sampler records more than its draws: the log joint (which picks the draw ``decode`` uses
and feeds the convergence diagnostics), the states or tables in use, hyperparameters,
per-draw predictive terms. A slip in what is *recorded* leaves the sampling, hence every
statistical check, untouched (issue 39). So ``validate`` recomputes each recorded quantity
from the recorded state (the draws' counts or seatings, kept in the fit's arrays) by code
written apart from the sampler, and compares it with the trace entry, draw by draw.

A method's validation spec (or, for ``cgs-pfa``, :mod:`bayesfa.validation.pfa.reference`)
provides ``recompute_trace(arrays, trace, options, train) -> {name: Recomputed}``. The check
fails when any recorded value differs from its recomputation by more than the stated
tolerance, and when the trace holds a quantity that is not recomputed (nothing was checked:
not a pass). It reads the fit's raw per-draw arrays (``FitResult.trace``), never a
presentation of them (the arviz object).

The sampler's own statistics (``sample_stats``, :data:`bayesfa.rundir.SAMPLE_STATS`: the
fraction of positions ``moved`` and the acceptance rates ``accept_*``, issue 36) describe
the moves between draws, which the recorded state does not keep, so they cannot be
recomputed from it: each is checked for its shape and range instead (one value a draw, the
shape of the trace's ``log_joint`` when it records one, else two axes ``[chain, draw]``;
every value a fraction in [0, 1]; an acceptance rate may be NaN, a draw that tried no such
move), and fails otherwise.

Another entry the recorded state does not determine is given by the spec as
:class:`NotRecomputable`, saying why, and checked alike: its shape and its range (e.g. the
HPYP's ``heldout_log_pred``, a one-sample estimate of each draw's held-out predictive that
seats the held-out customers at random, :func:`bayesfa.validation.ngram.hpyp.recompute_trace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bayesfa.validation.checks import Check


@dataclass
class Recomputed:
    """A trace entry's recomputation: ``values`` aligned with ``recorded`` (both
    ``[chain, draw]`` or the draws the arrays keep), agreement within ``rtol`` relative to
    ``max(1, |value|)`` (0: exact) plus ``atol`` (per draw, aligned with ``values``, or one
    number: a bound on what the recorded state's own rounding can move the value, which
    ``how`` derives, e.g. the NumPyro oracles' stick-breaking,
    :func:`bayesfa.validation.oracles.stick_rounding_bound`; 0 by default), and ``how`` it
    was recomputed (the formula, the module)."""

    values: np.ndarray
    recorded: np.ndarray
    rtol: float
    how: str
    atol: Any = 0.0


@dataclass
class NotRecomputable:
    """A trace entry the recorded state does not determine (``why``: the reason, said in the
    check's row), checked instead for its shape (``shape``: the trace's ``[chain, draw]``)
    and range: every value finite and within ``[low, high]``."""

    recorded: np.ndarray
    shape: tuple
    low: float
    high: float
    why: str


def _is_rate(name: str) -> bool:
    """A sampler statistic that is a fraction (``moved``, ``accept_*``; module docstring)."""
    from bayesfa.rundir import SAMPLE_STATS

    return name in SAMPLE_STATS and (name == "moved" or name.startswith("accept_"))


def _rate_row(name: str, values, shape: tuple | None = None) -> dict[str, Any]:
    """The shape and range check of a sampler statistic (module docstring): one value a
    draw (``shape``, the trace's ``[chain, draw]``; None: any two axes), a fraction in
    [0, 1] in every draw; an acceptance rate may also be NaN (no such move tried)."""
    x = np.asarray(values, dtype=np.float64)
    how = ("sampler statistic (sample_stats), not recomputable from the draws: one value a "
           "draw, in [0, 1] in every draw" + ("" if name == "moved" else ", or NaN (none tried)"))
    if (x.ndim != 2) if shape is None else (x.shape != tuple(shape)):
        want = "two axes [chain, draw]" if shape is None else f"{tuple(shape)}"
        return {"quantity": name, "draws": int(x.size), "max_diff": None, "tolerance": None,
                "pass": False, "how": f"{how}; shape {x.shape} recorded, {want} wanted"}
    allowed = np.isnan(x) if name != "moved" else np.zeros(x.shape, dtype=bool)
    bad = ~(((x >= 0) & (x <= 1)) | allowed)
    return {"quantity": name, "draws": int(x.size), "max_diff": None, "tolerance": None,
            "pass": not bool(bad.any()),
            "how": how + (f"; {int(bad.sum())} draws outside" if bad.any() else "")}


def _range_row(name: str, r: NotRecomputable) -> dict[str, Any]:
    """The shape and range check of a :class:`NotRecomputable` entry (same columns)."""
    x = np.asarray(r.recorded, dtype=np.float64)
    span = (f"at most {r.high:g}" if r.low == -np.inf else f"at least {r.low:g}"
            if r.high == np.inf else f"in [{r.low:g}, {r.high:g}]")
    how = (f"not recomputable from the recorded state: {r.why}; checked: shape "
           f"{tuple(r.shape)}, finite and {span} in every draw")
    if x.shape != tuple(r.shape):
        return {"quantity": name, "draws": int(x.size), "max_diff": None, "tolerance": None,
                "pass": False, "how": f"{how}; shape {x.shape} recorded"}
    bad = ~(np.isfinite(x) & (x >= r.low) & (x <= r.high))
    return {"quantity": name, "draws": int(x.size), "max_diff": None, "tolerance": None,
            "pass": not bool(bad.any()),
            "how": how + (f"; {int(bad.sum())} draws outside" if bad.any() else "")}


def recorded_check(trace: dict[str, Any], recomputed: dict[str, Recomputed],
                   extra_rows: list[dict[str, Any]] | None = None) -> Check:
    """One row per trace entry (``recomputed`` must cover every one, each a
    :class:`Recomputed` or a :class:`NotRecomputable`) plus ``extra_rows``
    (consistency checks of the recorded state itself, same columns); exact: alpha 0."""
    rows = []
    ratios: list[float] = []  # max |recorded - recomputed| / tolerance per quantity
    per_draw = np.shape(trace["log_joint"]) if "log_joint" in trace else None
    for name in sorted(set(trace) | set(recomputed)):
        if name not in recomputed and _is_rate(name):
            rows.append(_rate_row(name, trace[name], per_draw))
            continue
        if name not in recomputed:
            rows.append({"quantity": name, "draws": int(np.size(trace[name])), "max_diff": None,
                         "tolerance": None, "pass": False, "how": "NOT recomputed"})
            continue
        r = recomputed[name]
        if isinstance(r, NotRecomputable):
            rows.append(_range_row(name, r))
            continue
        got = np.asarray(r.recorded, dtype=np.float64)
        want = np.asarray(r.values, dtype=np.float64)
        if got.shape != want.shape:
            rows.append({"quantity": name, "draws": int(got.size), "max_diff": None,
                         "tolerance": r.rtol, "pass": False,
                         "how": f"shape {got.shape} recorded, {want.shape} recomputed"})
            continue
        both_nan = np.isnan(got) & np.isnan(want)
        diff = np.where(both_nan, 0.0, np.abs(got - want))
        bound = r.rtol * np.maximum(1.0, np.abs(want)) + np.asarray(r.atol, dtype=np.float64)
        bad = ~(diff <= bound)  # NaN on one side only: a failure
        exact = r.rtol == 0 and not np.any(np.asarray(r.atol) != 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (np.where(bad, np.inf, 0.0) if exact
                     else np.where(bad | (bound > 0), diff / bound, 0.0))
        ratios.append(float(np.max(ratio)) if ratio.size else 0.0)
        rows.append({"quantity": name, "draws": int(got.size),
                     "max_diff": float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
                     if diff.size else 0.0,
                     "tolerance": r.rtol, "pass": not bool(bad.any()),
                     "how": r.how + (f"; {int(bad.sum())} draws differ" if bad.any() else "")})
    rows += list(extra_rows or [])
    passed = bool(rows) and all(r["pass"] for r in rows)
    return Check(
        name="recorded", passed=passed,
        description="every per-draw quantity of the trace recomputed from the recorded state "
                    "by code written apart from the sampler",
        alpha=0.0, columns=["quantity", "draws", "max_diff", "tolerance", "pass", "how"],
        rows=rows,
        summary={"failed_quantities": [r["quantity"] for r in rows if not r["pass"]],
                 "margin": max(ratios, default=0.0) if passed else
                 max([x for x in ratios if x > 1] or [np.inf])},
        notes=["exact check: tolerance relative to max(1, |value|) covers floating-point "
               "rounding only (0 for integers); a correct method never fails it"])
