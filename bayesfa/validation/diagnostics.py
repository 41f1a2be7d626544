"""Convergence diagnostics of a run's trace: a small adapter over ArviZ, and readable plots.

Works with ArviZ 0.2x (Python 3.11) and 1.x (arviz-stats): only calls both lines share are
used -- ``az.rhat``, ``az.ess(method=...)`` on plain ``(chain, draw)`` numpy arrays. The plots
are drawn with matplotlib directly (the same picture under both lines: chains in distinct
colours, the x axis in sweeps, constant variables named in a note). ArviZ and matplotlib are
imported inside the functions, so ``import bayesfa.validation.diagnostics`` is cheap.

Two questions, answered apart (:func:`verdict`):

- *within-chain convergence*: has each chain, on its own, stopped drifting and collected
  enough effective draws? Split R-hat of the chain alone (:func:`chain_rhat`) at most
  :data:`CHAIN_RHAT_MAX` and its own bulk ESS at least :data:`CHAIN_ESS_MIN`. If not: more
  sweeps.
- *between-chain agreement*: do the chains agree? Rank-normalised split R-hat over all chains
  below 1.01 and bulk / tail ESS of at least 400 (Vehtari, Gelman, Simpson, Carpenter &
  Buerkner 2021, "Rank-normalization, folding, and localization: an improved R-hat for
  assessing convergence of MCMC"). When every chain converged on its own but they disagree,
  the chains sit in different modes (CGS-PFA from random starts does, Shibata & Yoshinaka
  2013, Fig. 12): prediction averages over them, and more chains cover more of them.

The label-invariant ``heldout_log_pred`` (the log predictive of held-out strings, recorded by
samplers that hold some out) is diagnosed beside the log joint: two chains in modes that
predict alike agree on it even when their log joints differ.

R-hat is reported as ``None`` (JSON ``null``) whenever it is undefined: one chain, or a
variable that is constant within every chain. :func:`warnings` says which case it is, except
for one chain (a choice of the run, e.g. hpyp's default ``--chains 1``, not a fault):
:func:`notes` says that R-hat needs two chains or more.

Optimisers (CVB0, GCVB0, CVB2: ``d0`` per iteration; HMM-EM: the kept restart's ``log_lik``
per iteration; :data:`bayesfa.rundir.OBJECTIVES`) record an optimisation history, not Markov
chains: R-hat, ESS and the advice about burn-in and chains do not apply. For them
:func:`optimiser_status` reports the objective (``D0``, Eq. 15 of Shibata & Yoshinaka 2013, or
the log-likelihood), the iterations used, and whether the run converged (``--tol``).
Rank plots compare chains, so single-chain runs get none.
"""

from __future__ import annotations

import math
import os
import warnings as _warnings
from pathlib import Path
from typing import Any

import numpy as np

from bayesfa.rundir import OBJECTIVES, SAMPLE_STATS, is_history

RHAT_MAX = 1.01
ESS_MIN = 400.0
#: Within-chain thresholds: split R-hat of one chain alone (:func:`chain_rhat`) and its own
#: bulk ESS (Vehtari et al.: 100 per chain). 1.05 rather than 1.01 because one chain gives
#: four segments, not eight: for independent draws a chain of 100 / 200 / 400 draws exceeds
#: 1.01 with probability 0.37 / 0.21 / 0.06, and 1.05 with probability 0.035 / 0.0025 / <0.0005
#: (2,000 simulated chains each, ArviZ 0.23; see tests/test_diagnostics.py).
CHAIN_RHAT_MAX = 1.05
CHAIN_ESS_MIN = 100.0
MIN_CHAIN_DRAWS = 8  # fewer draws in a chain: no within-chain figures

#: The sampler's own statistics (the numba samplers' ``moved`` and acceptance rates, the
#: oracles' NUTS bookkeeping: the ``sample_stats`` group of a run's trace,
#: :data:`bayesfa.rundir.SAMPLE_STATS`): not
#: quantities of the posterior, so :func:`warnings` holds no R-hat/ESS against them
#: (``diverging`` is reported as a count).
SAMPLER_STATISTICS = SAMPLE_STATS


# -- numbers -----------------------------------------------------------------------------

def _as_chain_draw(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(f"expected a (chain, draw) array, got shape {x.shape}")
    return x


def _scalar(value) -> float:
    """A float out of whatever ArviZ returned (numpy scalar, 0-d array, DataArray, Dataset)."""
    if hasattr(value, "data_vars"):  # xarray.Dataset
        value = next(iter(value.data_vars.values()))
    if hasattr(value, "values"):
        value = value.values
    return float(np.asarray(value).reshape(-1)[0])


def _quiet_call(fn, *args, **kwargs):
    import logging

    logger = logging.getLogger("arviz")
    level = logger.level
    logger.setLevel(logging.ERROR)  # "Shape validation failed" for one chain
    try:
        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
    finally:
        logger.setLevel(level)


def rhat(x) -> float:
    """Rank-normalised split R-hat of a ``(chain, draw)`` array; NaN where undefined
    (one chain, or constant within every chain)."""
    import arviz as az

    x = _as_chain_draw(x)
    if x.shape[0] < 2 or x.shape[1] < 4:
        return math.nan
    value = _scalar(_quiet_call(az.rhat, x))
    return value if np.isfinite(value) else math.nan


def ess_bulk(x) -> float:
    """Bulk effective sample size of a ``(chain, draw)`` array (``az.ess(method="bulk")``)."""
    import arviz as az

    x = _as_chain_draw(x)
    if x.shape[1] < 4:
        return math.nan
    return _scalar(_quiet_call(az.ess, x, method="bulk"))


def ess_tail(x) -> float:
    """Tail effective sample size (5% and 95% quantiles) of a ``(chain, draw)`` array."""
    import arviz as az

    x = _as_chain_draw(x)
    if x.shape[1] < 4:
        return math.nan
    # prob given explicitly: arviz 1.x requires it on arrays; 0.05 means (0.05, 0.95) in both lines
    return _scalar(_quiet_call(az.ess, x, method="tail", prob=0.05))


def ess_mean(x) -> float:
    """Effective sample size for the mean (no rank normalisation): the one that sets the
    Monte Carlo standard error of a posterior mean."""
    import arviz as az

    x = _as_chain_draw(x)
    if x.shape[1] < 4:
        return math.nan
    return _scalar(_quiet_call(az.ess, x, method="mean"))


def mcse_mean(x) -> float:
    """Monte Carlo standard error of the mean of a ``(chain, draw)`` array:
    ``sd / sqrt(ESS_mean)``; 0 for a constant array."""
    x = _as_chain_draw(x)
    sd = float(np.std(x, ddof=1)) if x.size > 1 else math.nan
    if not sd > 0:
        return 0.0 if x.size > 1 else math.nan
    ess = ess_mean(x)
    if not np.isfinite(ess) or ess <= 0:
        return math.nan
    return sd / math.sqrt(ess)


def _halves(x: np.ndarray) -> np.ndarray:
    """One chain's draws as two chains (its first and second half; the first draw is dropped
    when the count is odd): ``[draw] -> [2, draw // 2]``."""
    n = x.size // 2
    return np.stack([x[x.size - 2 * n:x.size - n], x[x.size - n:]])


def chain_rhat(x) -> float:
    """Split R-hat of one chain alone: its halves as two chains, which ArviZ splits again, so
    four segments are compared (``az.rhat`` gives NaN for a single chain). NaN below
    :data:`MIN_CHAIN_DRAWS` draws or for a constant chain."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if x.size < MIN_CHAIN_DRAWS or np.ptp(x) == 0:
        return math.nan
    return rhat(_halves(x))


def per_chain(x) -> list[dict[str, Any]]:
    """``[{"mean", "rhat", "ess_bulk"}]`` of each chain of a ``(chain, draw)`` array on its
    own (:func:`chain_rhat`, ``az.ess`` of the ``(1, draw)`` array); ``None`` where undefined."""
    out = []
    for chain in _as_chain_draw(x):
        constant = np.ptp(chain) == 0
        r = math.nan if constant else chain_rhat(chain)
        e = math.nan if constant or chain.size < MIN_CHAIN_DRAWS else ess_bulk(chain[None, :])
        out.append({"mean": _finite(np.mean(chain)), "rhat": _finite(r), "ess_bulk": _finite(e)})
    return out


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def summarize(x) -> dict[str, Any]:
    """One ``(chain, draw)`` array: ``{"mean", "sd", "rhat", "ess_bulk", "ess_tail",
    "chains", "draws"}`` over all chains, and the within-chain figures ``"chain_rhat_max"``
    (the largest :func:`chain_rhat`), ``"chain_ess_min"`` (the smallest per-chain bulk ESS)
    and ``"per_chain"`` (:func:`per_chain`). ``None`` for undefined values (never NaN or
    infinity, so the summary is valid JSON), with a ``"note"`` saying why."""
    x = _as_chain_draw(x)
    chains, draws = x.shape
    out: dict[str, Any] = {"mean": _finite(np.mean(x)),
                           "sd": _finite(np.std(x, ddof=1)) if x.size > 1 else None,
                           "chains": chains, "draws": draws}
    if not np.all(np.isfinite(x)):
        out.update(rhat=None, ess_bulk=None, ess_tail=None, chain_rhat_max=None, chain_ess_min=None,
                   per_chain=[], note="not finite")
        return out
    within = np.var(x, axis=1)
    if np.all(within == 0):
        out.update(rhat=None, ess_bulk=None, ess_tail=None, chain_rhat_max=None, chain_ess_min=None,
                   per_chain=per_chain(x))
        if np.all(x == x.flat[0]):
            out["note"] = "constant"
        else:
            out["note"] = "every chain is stuck at its own value"
        return out
    r = rhat(x)
    out["rhat"] = None if math.isnan(r) else r
    if chains < 2:
        out["note"] = "one chain"
    b, t = ess_bulk(x), ess_tail(x)
    out["ess_bulk"] = None if math.isnan(b) else b
    out["ess_tail"] = None if math.isnan(t) else t
    rows = per_chain(x)
    rhats = [row["rhat"] for row in rows if row["rhat"] is not None]
    esses = [row["ess_bulk"] for row in rows if row["ess_bulk"] is not None]
    out["chain_rhat_max"] = max(rhats) if rhats else None
    out["chain_ess_min"] = min(esses) if esses else None
    out["per_chain"] = rows
    return out


# -- runs --------------------------------------------------------------------------------

def _trace_file(run_path) -> Path:
    path = Path(run_path)
    if path.is_dir():
        path = path / "trace.nc"
    if not path.is_file():
        from bayesfa.errors import InputError

        raise InputError("no trace.nc: this run has no per-sample trace to diagnose", path)
    return path


def scalar_trace(run_path) -> dict[str, np.ndarray]:
    """The scalar ``(chain, draw)`` variables of a run's ``trace.nc`` (vector-valued ones
    skipped). ``run_path`` is a run directory or a ``trace.nc``."""
    from bayesfa.rundir import read_trace

    trace = read_trace(_trace_file(run_path))
    return {name: np.asarray(v, dtype=np.float64) for name, v in trace.items() if np.ndim(v) == 2}


def diagnose_trace(trace: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """:func:`summarize` of every scalar ``(chain, draw)`` variable of ``trace``."""
    return {name: summarize(values) for name, values in trace.items() if np.ndim(values) == 2}


def diagnose(run_path) -> dict[str, dict[str, Any]]:
    """Per scalar trace variable of a run: ``{"log_joint": {"mean", "sd", "rhat",
    "ess_bulk", "ess_tail", "chains", "draws", "chain_rhat_max", "chain_ess_min",
    "per_chain"[, "note"]}, ...}`` (:func:`summarize`); :func:`verdict` and :func:`warnings`
    read it.

    ``rhat`` / ``ess_*`` are ``None`` where undefined (one chain; constant chains).
    """
    return diagnose_trace(scalar_trace(run_path))


def _within_problems(name: str, s: dict[str, Any], chain_rhat_max: float = CHAIN_RHAT_MAX,
                     chain_ess_min: float = CHAIN_ESS_MIN) -> str | None:
    """The within-chain problem of one variable, in one line, or None: chains that drift on
    their own (split R-hat of the chain alone above ``chain_rhat_max``) or have too few
    effective draws of their own (bulk ESS below ``chain_ess_min``)."""
    rows = s.get("per_chain") or []
    bad = [c for c, row in enumerate(rows)
           if (row["rhat"] is not None and row["rhat"] > chain_rhat_max)
           or (row["ess_bulk"] is not None and row["ess_bulk"] < chain_ess_min)]
    if not bad:
        return None
    rhats = [rows[c]["rhat"] for c in bad if rows[c]["rhat"] is not None]
    esses = [rows[c]["ess_bulk"] for c in bad if rows[c]["ess_bulk"] is not None]
    figures = []
    if rhats and max(rhats) > chain_rhat_max:
        figures.append(f"split R-hat of a chain alone up to {max(rhats):.3f} > {chain_rhat_max}")
    if esses and min(esses) < chain_ess_min:
        figures.append(f"bulk ESS of a chain alone down to {min(esses):.0f} < {chain_ess_min:.0f}")
    who = f"chain {bad[0]} has" if len(bad) == 1 else f"chains {', '.join(map(str, bad))} have"
    return (f"{name}: {who} not converged on {'its' if len(bad) == 1 else 'their'} own "
            f"({'; '.join(figures)}): run more sweeps (a longer --burn-in and more --iterations)")


_NOT_MIXING = ("every chain is stuck at its own value", "not finite")


def _checked(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The variables a convergence verdict is about: not sampler bookkeeping, not constants."""
    return {name: s for name, s in summary.items()
            if name != "diverging" and name not in SAMPLER_STATISTICS and s.get("note") != "constant"}


def warnings(summary: dict[str, dict[str, Any]], *, rhat_max: float = RHAT_MAX,
             ess_min: float = ESS_MIN) -> list[str]:
    """Human-readable problems in a :func:`diagnose` summary; empty when none.

    Within each chain (:data:`CHAIN_RHAT_MAX`, :data:`CHAIN_ESS_MIN`): a chain still drifting
    or with too few effective draws of its own. Between chains (Vehtari et al. 2021: R-hat >
    1.01, bulk/tail ESS < 400 over all chains): said to be modes when every chain converged on
    its own, and not yet meaningful otherwise. NUTS divergences are counted. Sampler
    bookkeeping (:data:`SAMPLER_STATISTICS`) is not held to R-hat/ESS."""
    out = []
    any_within = any(_within_problems(n, s) or s.get("note") in _NOT_MIXING
                     for n, s in _checked(summary).items())
    for name, s in summary.items():
        if name == "diverging":
            n = int(round((s.get("mean") or 0.0) * s.get("chains", 0) * s.get("draws", 0)))
            if n:
                out.append(f"{n} divergent transitions (NUTS): the posterior may be biased")
            continue
        if name in SAMPLER_STATISTICS:
            continue
        note = s.get("note")
        if note == "constant":
            continue  # e.g. a fixed number of states: nothing to diagnose
        if note == "every chain is stuck at its own value":
            out.append(f"{name}: every chain is stuck at a different constant value "
                       f"(R-hat undefined): the chains do not mix")
            continue
        if note == "not finite":
            out.append(f"{name}: some values are not finite (NaN or infinite): nothing to diagnose")
            continue
        problem = _within_problems(name, s)
        if problem:
            out.append(problem)
        r = s.get("rhat")
        if r is None:
            if s.get("chains", 0) >= 2:  # one chain: a note (:func:`notes`), not a fault
                out.append(f"{name}: R-hat is undefined")
            continue
        low = [(label, s.get(key)) for key, label in (("ess_bulk", "bulk"), ("ess_tail", "tail"))
               if s.get(key) is not None and s.get(key) < ess_min]
        if r > rhat_max:
            if not any_within:  # else meaningless until every chain has converged on its own
                ess = "; ".join(f"{label} ESS {e:.0f}" for label, e in low)
                out.append(f"{name}: R-hat {r:.3f} > {rhat_max}{f' ({ess} over all chains)' if ess else ''}"
                           f", although every chain converged on its own: the chains sit in "
                           f"different modes, which prediction averages over; more --chains "
                           f"cover more modes")
        elif not any_within:
            for label, e in low:
                out.append(f"{name}: {label} ESS {e:.0f} < {ess_min:.0f} over all chains "
                           f"(too few effective draws): run more --iterations or --chains")
    return out


def notes(summary: dict[str, dict[str, Any]]) -> list[str]:
    """What a :func:`diagnose` summary cannot tell and why, one line each; empty when
    nothing is missing. Not faults: a run of one chain has no R-hat (it compares chains)."""
    chains = max([s.get("chains", 0) for s in _checked(summary).values()] or [2])
    if chains >= 2:
        return []
    return [f"R-hat needs >= 2 chains; this run has {chains} (use --chains 4 to check that "
            f"chains agree); the within-chain figures are reported"]


def verdict(summary: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One-line verdict on a :func:`diagnose` summary: ``{"kind", "message", "variables"}``.

    ``kind`` is ``"within-chain"`` (some chain has not converged on its own: more sweeps),
    ``"between-chain"`` (every chain converged, but in different modes: prediction averages
    over them, more chains cover more of them), ``"one-chain"`` (agreement cannot be
    checked), ``"few-draws"`` (converged and agreeing, too few effective draws in all),
    ``"converged"`` or ``"nothing"`` (only constants); ``variables`` names the variables
    behind it."""
    checked = _checked(summary)
    if not checked:
        return {"kind": "nothing", "variables": [],
                "message": "nothing to diagnose: every trace variable is constant"}
    within = [n for n, s in checked.items()
              if _within_problems(n, s) or s.get("note") in _NOT_MIXING]
    if within:
        return {"kind": "within-chain", "variables": within,
                "message": f"not converged within chains ({', '.join(within)}): some chain is still "
                           f"drifting or has too few effective draws of its own - run more sweeps "
                           f"(a longer --burn-in and more --iterations)"}
    if max(s.get("chains", 0) for s in checked.values()) < 2:
        return {"kind": "one-chain", "variables": list(checked),
                "message": "the chain converged on its own; R-hat needs >= 2 chains, so agreement "
                           "between chains is not checked (use --chains 4)"}
    between = [n for n, s in checked.items() if s.get("rhat") is not None and s["rhat"] > RHAT_MAX]
    if between:
        worst = max(checked[n]["rhat"] for n in between)
        message = (f"every chain converged on its own, but the chains sit in different modes "
                   f"({', '.join(between)}: R-hat up to {worst:.3g}) - prediction averages over the "
                   f"modes; use more chains (--chains) to cover them (more sweeps rarely move a "
                   f"chain to another mode)")
        held = checked.get("heldout_log_pred")
        if held is not None and "heldout_log_pred" not in between and held.get("rhat") is not None:
            message += (f"; the modes predict the held-out strings alike (heldout_log_pred R-hat "
                        f"{held['rhat']:.3f})")
        return {"kind": "between-chain", "variables": between, "message": message}
    few = [n for n, s in checked.items()
           if any(s.get(k) is not None and s[k] < ESS_MIN for k in ("ess_bulk", "ess_tail"))]
    if few:
        return {"kind": "few-draws", "variables": few,
                "message": f"every chain converged and the chains agree, but there are too few "
                           f"effective draws in all ({', '.join(few)}: ESS < {ESS_MIN:.0f}) - run "
                           f"more --iterations or --chains"}
    return {"kind": "converged", "variables": list(checked),
            "message": f"converged: every chain is stationary on its own (split R-hat <= "
                       f"{CHAIN_RHAT_MAX}, bulk ESS >= {CHAIN_ESS_MIN:.0f} per chain) and the chains "
                       f"agree (R-hat <= {RHAT_MAX}, ESS >= {ESS_MIN:.0f})"}


def sampler_means(trace: dict[str, np.ndarray]) -> dict[str, float | None]:
    """The sampler's own rates in ``trace`` (``moved`` and the acceptance rates ``accept_*``
    of :data:`SAMPLER_STATISTICS`), each averaged over every draw of every chain that has
    one (an acceptance rate is NaN in a draw that tried no such move); None where none has.
    ``bayesfa diagnose`` prints them on one line, ``sampler: moved 0.12, accept_mh 0.4``."""
    out: dict[str, float | None] = {}
    for name, values in trace.items():
        if name in SAMPLER_STATISTICS and (name == "moved" or name.startswith("accept_")):
            x = np.asarray(values, dtype=np.float64)
            x = x[np.isfinite(x)]
            out[name] = float(x.mean()) if x.size else None
    return out


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    """The text table of ``bayesfa diagnose``: per variable its mean, R-hat and bulk ESS over
    all chains (between-chain agreement), and the worst chain on its own (within-chain
    convergence: the largest split R-hat, the smallest bulk ESS)."""
    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

    width = max([16] + [len(n) for n in summary]) + 2
    lines = [f"{'':<{width}}{'':>14}{'all chains':>22}{'worst chain alone':>24}",
             f"{'variable':<{width}}{'mean':>14}{'r_hat':>10}{'ess_bulk':>12}{'r_hat':>12}{'ess_bulk':>12}"]
    for name, row in summary.items():
        lines.append(f"{name:<{width}}{fmt(row.get('mean'), '.6g'):>14}{fmt(row.get('rhat'), '.4f'):>10}"
                     f"{fmt(row.get('ess_bulk'), '.1f'):>12}{fmt(row.get('chain_rhat_max'), '.4f'):>12}"
                     f"{fmt(row.get('chain_ess_min'), '.1f'):>12}")
    return "\n".join(lines)


# -- optimisers --------------------------------------------------------------------------

def is_optimiser(trace: dict[str, np.ndarray]) -> bool:
    """Whether ``trace`` is an optimiser's history (it records an objective of
    :data:`bayesfa.rundir.OBJECTIVES`, one row of iterations) rather than a sampler's draws."""
    return is_history(trace)


def optimiser_status(trace: dict[str, np.ndarray], manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The convergence status of an optimiser's run: ``{"kind": "optimiser", "history",
    "objective", "direction", "objective_first", "objective_final", "objective_increases",
    "objective_reversals", "iterations", "max_iterations", "iterations_option", "converged",
    "tol", "last_change", "log_lik_final", "message"}``.

    ``objective``: the first of :data:`bayesfa.rundir.OBJECTIVES` the trace records (``D0``,
    minimised; HMM-EM's training log-likelihood, maximised); ``objective_reversals``:
    iterations where it moved the wrong way (CVB0 and CVB2 need not descend; GCVB0's
    L-BFGS-B and EM do), ``objective_increases``: where it rose. ``iterations``: the run's
    ``info.iterations_run`` (else the trace's length); ``converged``: the run's
    ``info.converged`` (``--tol`` met before the iterations ran out), None when the manifest
    does not say. ``history``: that the trace is an optimisation history, not draws."""
    manifest = manifest or {}
    info, options = manifest.get("info") or {}, manifest.get("options") or {}
    key = next(k for k in OBJECTIVES if k in trace)
    label, direction = OBJECTIVES[key]
    values = np.asarray(trace[key], dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    n = info.get("iterations_run")
    n = int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else int(values.size)
    limit = options.get("iterations", options.get("n_iter"))
    limit = int(limit) if isinstance(limit, int) and not isinstance(limit, bool) else None
    converged = info.get("converged") if isinstance(info.get("converged"), bool) else None
    tol = info.get("tol", options.get("tol"))
    change = trace.get("change")
    last_change = _finite(np.asarray(change).reshape(-1)[-1]) if change is not None and np.size(change) else None
    log_lik = trace.get("log_lik")
    steps = np.diff(finite) if finite.size > 1 else np.zeros(0)
    out = {"kind": "optimiser", "method": manifest.get("method"),
           "history": f"an optimisation history of {int(values.size)} iterations, not posterior "
                      f"draws: R-hat and ESS do not apply",
           "objective": label, "direction": direction,
           "objective_first": _finite(finite[0]) if finite.size else None,
           "objective_final": _finite(finite[-1]) if finite.size else None,
           "objective_increases": int(np.sum(steps > 0)),
           "objective_reversals": int(np.sum(steps > 0 if direction == "minimised" else steps < 0)),
           "iterations": n, "max_iterations": limit, "converged": converged,
           "iterations_option": "--n-iter" if "n_iter" in options else "--iterations",
           "tol": tol if isinstance(tol, (int, float)) else None, "last_change": last_change,
           "log_lik_final": _finite(np.asarray(log_lik).reshape(-1)[-1])
           if log_lik is not None and np.size(log_lik) else None}
    out["message"] = _optimiser_message(out, info.get("message"))
    return out


def _optimiser_message(s: dict[str, Any], detail) -> str:
    final = "-" if s["objective_final"] is None else f"{s['objective_final']:.6g}"
    name = s.get("objective", "D0")
    limit = f" of at most {s['max_iterations']}" if s["max_iterations"] else ""
    tol = "the tolerance" if s["tol"] is None else f"--tol {s['tol']:.3g}"
    why = "; ".join(x for x in ("" if s["last_change"] is None else f"last change {s['last_change']:.3g}",
                                detail if isinstance(detail, str) else "") if x)
    why = f" ({why})" if why else ""
    if s["converged"] is True:
        return (f"optimisation history, not draws: converged: {tol} met after "
                f"{s['iterations']}{limit} iterations{why}; final {name} {final}")
    if s["converged"] is False:
        flag = s.get("iterations_option", "--iterations")
        return (f"optimisation history, not draws: not converged: used all {s['iterations']} "
                f"{flag} without meeting {tol}{why}; final {name} {final} - run more {flag}")
    return (f"optimisation history, not draws: {s['iterations']} iterations, final {name} "
            f"{final} (the run does not say whether it converged)")


def optimiser_table(trace: dict[str, np.ndarray]) -> str:
    """Per trace variable of an optimiser: its first, final, smallest and largest value."""
    def fmt(value):
        return "-" if value is None else format(value, ".6g")

    width = max([16] + [len(n) for n in trace]) + 2
    lines = [f"{'variable':<{width}}{'first':>14}{'final':>14}{'min':>14}{'max':>14}"]
    for name, row in optimiser_variables(trace).items():
        lines.append(f"{name:<{width}}{fmt(row['first']):>14}{fmt(row['final']):>14}"
                     f"{fmt(row['min']):>14}{fmt(row['max']):>14}")
    return "\n".join(lines)


def optimiser_variables(trace: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """``{name: {"first", "final", "min", "max", "iterations"}}`` of an optimiser's scalar
    trace variables (``None`` where not finite)."""
    out = {}
    for name, v in trace.items():
        v = np.asarray(v, dtype=np.float64).reshape(-1)
        finite = v[np.isfinite(v)]
        out[name] = {"first": _finite(v[0]) if v.size else None,
                     "final": _finite(v[-1]) if v.size else None,
                     "min": _finite(finite.min()) if finite.size else None,
                     "max": _finite(finite.max()) if finite.size else None,
                     "iterations": int(v.size)}
    return out


# -- plots -------------------------------------------------------------------------------

def sweeps_axis(run_path, draws: int) -> tuple[np.ndarray, str]:
    """The x axis of a run's trace: ``burn_in + (draw + 1) * period`` sweeps when the run's
    manifest has those options (every sampler's do), else the draw index."""
    import json

    path = Path(run_path)
    manifest = (path if path.is_dir() else path.parent) / "manifest.json"
    try:
        options = json.loads(manifest.read_text())["options"]
        burn_in, period = int(options["burn_in"]), int(options["period"])
    except (OSError, ValueError, KeyError, TypeError):
        return np.arange(draws), "draw"
    return burn_in + (np.arange(draws) + 1) * period, "sweep"


def _colours(n: int):
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "viridis"]
    return [cmap(c if n <= 10 else c / max(1, n - 1)) for c in range(n)]


def _split(trace: dict[str, np.ndarray]):
    """``(varying, notes)``: the scalar variables worth plotting, and one line for each left
    out (constant, or not finite)."""
    varying, notes = {}, []
    for name, v in trace.items():
        v = np.asarray(v, dtype=np.float64)
        if v.ndim != 2:
            continue
        if not np.all(np.isfinite(v)):
            notes.append(f"{name}: not plotted (values that are not finite)")
        elif np.ptp(v) == 0:
            notes.append(f"{name}: constant {v.flat[0]:.6g} in every chain and draw (not plotted)")
        elif np.all(np.ptp(v, axis=1) == 0):
            values = ", ".join(f"{x:.6g}" for x in v[:, 0])
            notes.append(f"{name}: each chain constant at its own value ({values}; not plotted)")
        else:
            varying[name] = v
    return varying, notes


def _figure(rows: int, cols: int, notes: list[str], width: float, height: float):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    n_rows = max(rows, 0) + (1 if notes else 0)
    ratios = [1.0] * max(rows, 0) + ([0.12 + 0.1 * len(notes)] if notes else [])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(width, height * max(rows, 0) + (0.35 + 0.22 * len(notes) if notes else 0)),
                     layout="constrained")
    FigureCanvasAgg(fig)  # PNG output without pyplot or a GUI backend
    grid = fig.add_gridspec(n_rows, cols, height_ratios=ratios)
    axes = [[fig.add_subplot(grid[r, c]) for c in range(cols)] for r in range(rows)]
    for row in axes:
        for ax in row:
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.yaxis.set_major_locator(MaxNLocator(4))
            ax.tick_params(labelsize=8)
    if notes:
        ax = fig.add_subplot(grid[n_rows - 1, :])
        ax.axis("off")
        ax.text(0.0, 1.0, "\n".join(notes), va="top", ha="left", fontsize=9, transform=ax.transAxes)
    return fig, axes


def _legend(fig, colours) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, lw=2) for c in colours]
    fig.legend(handles, [f"chain {c}" for c in range(len(colours))], loc="outside upper center",
               ncols=min(len(colours), 8), fontsize=8, frameon=False)


def trace_figure(trace, notes, x, xlabel):
    """The figure of ``trace.png``: per variable a density and a trace panel, one colour per
    chain, ``x`` (the draws' sweeps) on the trace's x axis; ``notes`` below."""
    from scipy.stats import gaussian_kde

    names = list(trace)
    chains = next(iter(trace.values())).shape[0] if trace else 0
    colours = _colours(chains)
    fig, axes = _figure(len(names), 2, notes, 10, 2.1)
    for row, name in enumerate(names):
        v = trace[name]
        dens, line = axes[row]
        grid = np.linspace(v.min(), v.max(), 200)
        levels = np.unique(v)
        discrete = levels.size <= 30 and np.all(levels == np.round(levels))
        for c in range(chains):
            chain = v[c]
            line.plot(x, chain, color=colours[c], lw=0.7, alpha=0.85)
            if discrete:  # e.g. states in use: the share of draws at each value
                share = np.array([np.mean(chain == level) for level in levels])
                dens.step(levels, share, where="mid", color=colours[c], lw=1.2)
                continue
            if np.ptp(chain) > 0 and chain.size > 2:
                try:
                    dens.plot(grid, gaussian_kde(chain)(grid), color=colours[c], lw=1.2)
                    continue
                except (np.linalg.LinAlgError, ValueError):
                    pass
            dens.axvline(chain.mean(), color=colours[c], lw=1.2)  # a chain at one value
        dens.set_title(name, fontsize=10, loc="left")
        dens.set_ylabel("share of draws" if discrete else "density", fontsize=8)
        if discrete:
            from matplotlib.ticker import MaxNLocator

            dens.xaxis.set_major_locator(MaxNLocator(5, integer=True))
        dens.set_yticks([])
        line.set_title(f"{name} by {xlabel}", fontsize=10, loc="left")
        line.set_xlabel(xlabel, fontsize=8)
    if chains:
        _legend(fig, colours)
    return fig


def rank_figure(trace, notes, bins: int = 20):
    """Rank plots (Vehtari et al. 2021, Sect. 4): ranks over all chains, a histogram per chain
    in its own band, the dashed line the uniform level that mixing chains scatter around."""
    from scipy.stats import rankdata

    names = list(trace)
    chains = next(iter(trace.values())).shape[0] if trace else 0
    colours = _colours(chains)
    fig, axes = _figure(len(names), 1, notes, 7, 0.5 + 0.35 * max(chains, 2))
    for row, name in enumerate(names):
        v = trace[name]
        ax = axes[row][0]
        ranks = rankdata(v.reshape(-1)).reshape(v.shape) / v.size
        edges = np.linspace(0, 1, bins + 1)
        expected = v.shape[1] / bins
        counts = np.stack([np.histogram(ranks[c], bins=edges)[0] for c in range(chains)])
        scale = 0.9 / max(counts.max(), 2 * expected)  # bars stay in their band
        for c in range(chains):
            ax.bar(edges[:-1], counts[c] * scale, width=1 / bins, bottom=c, align="edge",
                   color=colours[c], alpha=0.8, edgecolor="white", linewidth=0.3)
            ax.axhline(c + expected * scale, color="0.3", lw=0.8, ls="--")
        ax.set_yticks(np.arange(chains) + expected * scale)
        ax.set_yticklabels([f"chain {c}" for c in range(chains)], fontsize=8)
        ax.set_ylim(0, chains)
        ax.set_xlim(0, 1)
        ax.set_title(f"{name}: rank of each draw among all chains", fontsize=10, loc="left")
        ax.set_xlabel("rank (fraction of all draws)", fontsize=8)
    return fig


def plot_trace(run_path, out_dir, trace: dict[str, np.ndarray] | None = None) -> dict[str, str]:
    """Write ``trace.png`` (density and trace per variable, the x axis in sweeps; for an
    optimiser, iterations) and, for runs of several chains, ``rank.png`` (rank plots) of the
    run's scalar trace variables into ``out_dir``; returns ``{"trace": path[, "rank":
    path]}``. Chains are told apart by colour; constant variables are named in a note at the
    bottom instead of a panel. ``trace``: the run's scalar trace, if already read."""
    trace = scalar_trace(run_path) if trace is None else trace
    draws = next(iter(trace.values())).shape[1] if trace else 0
    if is_optimiser(trace):
        x, label = np.arange(draws), "iteration"
    else:
        x, label = sweeps_axis(run_path, draws)
    return plot_trace_arrays(trace, out_dir, x=x, xlabel=label)


def plot_paths(trace: dict[str, np.ndarray], out_dir) -> dict[str, str]:
    """The PNGs :func:`plot_trace_arrays` writes for ``trace`` into ``out_dir``: ``trace.png``
    and, for several chains, ``rank.png``; checked (an :class:`InputError` in one line if
    ``out_dir`` is a file or one of them is a file bayesfa did not write), nothing written."""
    from bayesfa.rundir import check_output, check_output_dir

    out_dir = check_output_dir(out_dir, "--plot")
    chains = max([np.shape(v)[0] for v in trace.values() if np.ndim(v) == 2] or [0])
    paths = {"trace": str(out_dir / "trace.png")}
    if chains > 1:  # ranks compare chains: nothing to compare in one
        paths["rank"] = str(out_dir / "rank.png")
    for path in paths.values():
        check_output(path, "--plot", make_folder=True)
    return paths


def plot_trace_arrays(trace: dict[str, np.ndarray], out_dir, *, x=None, xlabel: str = "draw") -> dict[str, str]:
    """:func:`plot_trace` from in-memory ``(chain, draw)`` arrays; ``x`` the draws' positions
    (default: the draw index). Uses ``matplotlib.figure.Figure`` directly: no pyplot state,
    no GUI backend, nothing to close. The PNGs go through the guarded writer
    (:func:`bayesfa.rundir.write_output`): a ``trace.png`` or ``rank.png`` in ``out_dir``
    that bayesfa did not write is refused, in one line, before either is drawn."""
    from bayesfa.rundir import write_output

    paths = plot_paths(trace, out_dir)
    varying, notes = _split(trace)
    if not varying and not notes:
        notes = ["no scalar trace variable"]
    draws = next(iter(varying.values())).shape[1] if varying else 0
    x = np.arange(draws) if x is None else np.asarray(x)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        figure = trace_figure(varying, notes, x, xlabel)
        write_output(paths["trace"], lambda tmp: figure.savefig(tmp, dpi=90, format="png"), "--plot",
                     make_folder=True)
        if "rank" in paths:
            figure = rank_figure(varying, notes)
            write_output(paths["rank"], lambda tmp: figure.savefig(tmp, dpi=90, format="png"),
                         "--plot", make_folder=True)
    return paths
