"""Convergence diagnostics of a run's trace: a small adapter over ArviZ.

Works with ArviZ 0.2x (Python 3.11) and 1.x (arviz-stats / arviz-plots): only calls both
lines share are used -- ``az.rhat``, ``az.ess(method=...)`` and ``az.mcse(method="mean")``
on plain ``(chain, draw)`` numpy arrays, and ``az.plot_trace`` / ``az.plot_rank`` on an
``xarray.Dataset`` with dims ``(chain, draw)``. ArviZ is imported inside the functions (the
import takes seconds), so ``import bayesfa.validation.diagnostics`` is cheap.

Thresholds are those of Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), "Rank-
normalization, folding, and localization: an improved R-hat for assessing convergence of
MCMC": rank-normalised split R-hat below 1.01 and bulk / tail ESS of at least 400 (100 per
chain for 4 chains).

R-hat is reported as ``None`` (JSON ``null``) whenever it is undefined: one chain, or a
variable that is constant within every chain. :func:`warnings` says which case it is.
"""

from __future__ import annotations

import math
import os
import warnings as _warnings
from pathlib import Path
from typing import Any

import numpy as np

RHAT_MAX = 1.01
ESS_MIN = 400.0

#: NUTS bookkeeping that oracle runs save in their trace: not quantities of the posterior, so
#: :func:`warnings` holds no R-hat/ESS against them (``diverging`` is reported as a count).
SAMPLER_STATISTICS = frozenset({"diverging", "accept_prob", "num_steps", "step_size",
                                "tree_depth", "mean_tree_accept", "energy"})


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


def summarize(x) -> dict[str, Any]:
    """``{"mean", "sd", "rhat", "ess_bulk", "ess_tail", "chains", "draws"}`` of one
    ``(chain, draw)`` array, with ``None`` for undefined values and a ``"note"`` saying why."""
    x = _as_chain_draw(x)
    chains, draws = x.shape
    out: dict[str, Any] = {"mean": float(np.mean(x)),
                           "sd": float(np.std(x, ddof=1)) if x.size > 1 else None,
                           "chains": chains, "draws": draws}
    within = np.var(x, axis=1)
    if np.all(within == 0):
        out.update(rhat=None, ess_bulk=None, ess_tail=None)
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
    "ess_bulk", "ess_tail", "chains", "draws"[, "note"]}, ...}``.

    ``rhat`` / ``ess_*`` are ``None`` where undefined (one chain; constant chains).
    """
    return diagnose_trace(scalar_trace(run_path))


def warnings(summary: dict[str, dict[str, Any]], *, rhat_max: float = RHAT_MAX,
             ess_min: float = ESS_MIN) -> list[str]:
    """Human-readable problems in a :func:`diagnose` summary (Vehtari et al. 2021:
    R-hat > 1.01 or bulk/tail ESS < 400; NUTS divergences); empty when none. Sampler
    bookkeeping (:data:`SAMPLER_STATISTICS`) is not held to R-hat/ESS."""
    out = []
    for name, s in summary.items():
        if name == "diverging":
            n = int(round(s.get("mean", 0.0) * s.get("chains", 0) * s.get("draws", 0)))
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
        r = s.get("rhat")
        if r is None:
            if s.get("chains", 0) < 2:
                out.append(f"{name}: R-hat is undefined with one chain; run at least 4 chains "
                           f"to check convergence")
            else:
                out.append(f"{name}: R-hat is undefined")
        elif r > rhat_max:
            out.append(f"{name}: R-hat {r:.3f} > {rhat_max} (chains disagree; run longer)")
        for key, label in (("ess_bulk", "bulk"), ("ess_tail", "tail")):
            e = s.get(key)
            if e is not None and e < ess_min:
                out.append(f"{name}: {label} ESS {e:.0f} < {ess_min:.0f} (too few effective draws)")
    return out


# -- plots -------------------------------------------------------------------------------

def _dataset(trace: dict[str, np.ndarray]):
    import xarray as xr

    first = next(iter(trace.values()))
    chains, draws = first.shape
    return xr.Dataset({k: (("chain", "draw"), v) for k, v in trace.items()},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws)})


def _save(result, path: Path) -> None:
    import matplotlib.pyplot as plt

    if hasattr(result, "savefig"):  # arviz-plots PlotCollection
        result.savefig(path)
        return
    axes = np.asarray(result).reshape(-1) if result is not None else np.array([])
    fig = axes[0].get_figure() if axes.size and hasattr(axes[0], "get_figure") else plt.gcf()
    fig.savefig(path, dpi=90, bbox_inches="tight")


def _fallback_trace(trace, path: Path) -> None:
    import matplotlib.pyplot as plt

    names = list(trace)
    fig, axes = plt.subplots(len(names), 2, figsize=(10, 2.2 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        for c, chain in enumerate(trace[name]):
            axes[row, 0].hist(chain, bins=30, histtype="step", label=f"chain {c}")
            axes[row, 1].plot(chain, lw=0.6)
        axes[row, 0].set_title(name)
        axes[row, 1].set_title(f"{name} (trace)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _fallback_rank(trace, path: Path) -> None:
    import matplotlib.pyplot as plt
    from scipy.stats import rankdata

    names = list(trace)
    fig, axes = plt.subplots(len(names), 1, figsize=(6, 2.2 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        x = trace[name]
        ranks = rankdata(x.reshape(-1)).reshape(x.shape)
        for c in range(x.shape[0]):
            axes[row, 0].hist(ranks[c], bins=20, histtype="step", label=f"chain {c}")
        axes[row, 0].set_title(f"{name} (rank)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def plot_trace(run_path, out_dir) -> dict[str, str]:
    """Write ``trace.png`` (``az.plot_trace``) and ``rank.png`` (``az.plot_rank``) of the
    run's scalar trace variables into ``out_dir``; returns ``{"trace": path, "rank": path}``.

    Constant variables are left out (nothing to see). If an ArviZ plot call fails (API
    differences between ArviZ lines), a plain matplotlib version of the same plot is drawn.
    """
    return plot_trace_arrays(scalar_trace(run_path), out_dir)


def plot_trace_arrays(trace: dict[str, np.ndarray], out_dir) -> dict[str, str]:
    """:func:`plot_trace` from in-memory ``(chain, draw)`` arrays."""
    import sys

    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        import matplotlib

        matplotlib.use("Agg")  # headless; a notebook's or GUI's backend is left alone
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())

    def close_new():
        for num in set(plt.get_fignums()) - before:
            plt.close(num)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = {k: np.asarray(v, dtype=np.float64) for k, v in trace.items()
             if np.ndim(v) == 2 and np.ptp(v) > 0}
    paths = {"trace": str(out_dir / "trace.png"), "rank": str(out_dir / "rank.png")}
    if not trace:
        for p in paths.values():
            fig = plt.figure(figsize=(4, 1))
            fig.text(0.5, 0.5, "no varying scalar trace variable", ha="center")
            fig.savefig(p)
            plt.close(fig)
        return paths
    import arviz as az

    ds = _dataset(trace)
    for kind, fn, fallback in (("trace", "plot_trace", _fallback_trace),
                               ("rank", "plot_rank", _fallback_rank)):
        path = Path(paths[kind])
        try:
            with _warnings.catch_warnings():
                _warnings.simplefilter("ignore")
                result = getattr(az, fn)(ds)
            _save(result, path)
        except Exception:  # noqa: BLE001 - ArviZ API differences: draw it ourselves
            close_new()
            fallback(trace, path)
        close_new()
    return paths
