"""Model selection by K-fold cross-validation, as in Shibata & Yoshinaka (2013), Sect. 4.1.

The paper fixes the number of states ``N`` and the Dirichlet hyperparameter ``beta`` in two
preparatory stages, each a 10-fold cross-validation that maximises the held-out probability:

1. ``N`` over ``{10, 20, ..., 90}`` at ``beta = 0.5``;
2. ``beta`` over ``{0.01, 0.02, 0.05, 0.1, 0.2, 0.5}`` at the chosen ``N``.

:func:`cross_validate` scores any grid of option overrides for any registered method;
:func:`select_two_stage` runs the two stages; :func:`run_selection` is what ``bayesfa select``
calls.

Scores. For a candidate, fold ``k`` fits on the other folds and sums the natural-log
predictive probabilities of its held-out strings. The candidate's score is the mean held-out
log-likelihood per string (the sum over all folds divided by the number of strings, each
string being held out once); the standard error is ``std(fold means, ddof=1) / sqrt(K)``. A
held-out string of probability 0 makes the score ``-inf``; such strings are counted
(``n_zero``) and listed in the fold files.

Choice and its uncertainty. Each row also carries ``diff``, its mean minus the best row's
mean, and ``diff_se``, the standard error of that difference over the folds,
``std(d_k, ddof=1) / sqrt(K)`` with ``d_k`` the difference of the two fold means on fold ``k``
(paired: both were fitted on the same strings with the same seed, so the fold-to-fold
variation that they share cancels). By default the best mean wins; with ``one_se`` the
one-standard-error rule (Hastie, Tibshirani & Friedman 2009, Sect. 7.10) takes the simplest
candidate whose mean is within one standard error (the best row's ``se``) of the best: the
fewest states in stage 1 and the largest ``beta`` (the strongest shrinkage toward the prior
mean of Eq. 2) in stage 2.

Seeds: common random numbers. The folds come from ``np.random.default_rng(seed)``. The seed
given to ``fit`` on fold ``k`` is drawn from ``np.random.SeedSequence(seed, spawn_key=(k,))``
and is the same for every candidate, so candidates are compared on the same strings with the
same chain seeds (the Monte Carlo noise they share cancels in their differences). It depends
on neither the execution order nor the grid, so the same seed gives the same table
sequentially or on a Dask cluster, and a candidate that appears in both stages
(``(N*, 0.5)``) is fitted once.

Resuming. With ``out_dir``, each finished (candidate, fold) is written atomically to
``out_dir/cv/<candidate-key>/fold-<k>.json`` together with a fingerprint of what produced it
(method, options, seeds, folds, corpus digest); a rerun reads the files whose fingerprint
matches and fits only the rest. A file with another fingerprint is an :class:`InputError`
(another selection wrote into that directory).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.rundir import (EXECUTION_OPTIONS, _json_default, check_output, check_output_dir,
                            jsonable, versions, write_json, write_output_text)

FOLD_FORMAT = "bayesfa-cv-fold/2"  # /2: common random numbers (seed per fold)
SELECTION_FORMAT = "bayesfa-selection/1"
SELECTION_JSON = "selection.json"
SELECTION_TXT = "selection.txt"
#: What a selection folder holds: anything else in a non-empty ``--out`` is the user's, and
#: ``bayesfa select`` refuses the folder rather than write beside (or over) it.
SELECTION_FILES = frozenset({"cv", SELECTION_JSON, SELECTION_TXT})


def check_selection_dir(out_dir: str | Path, option: str = "--out") -> Path:
    """``out_dir`` if it may hold a selection (new, empty, or a selection folder); an
    :class:`InputError` naming it otherwise (a file, or a folder holding other files)."""
    return check_output_dir(out_dir, option, owned=SELECTION_FILES, what="bayesfa select")


def _legacy_selection(path: Path) -> bool:
    """A ``selection.json`` / ``selection.txt`` written before the guarded writer kept a
    record (:data:`bayesfa.rundir.LEDGER`): ours when ``selection.json`` carries our format."""
    try:
        data = json.loads((path.parent / SELECTION_JSON).read_text())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("format") == SELECTION_FORMAT

# EXECUTION_OPTIONS (bayesfa.rundir): options that change how a fit runs but not what it
# computes, left out of the fold fingerprints as out of a run's identity.


# -- folds and seeds ----------------------------------------------------------------------

def kfold_indices(n_strings: int, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``folds`` pairs ``(train_idx, held_idx)`` (sorted int64 arrays) over ``range(n_strings)``.

    The strings are shuffled with ``np.random.default_rng(seed)`` and cut into ``folds``
    nearly equal parts; every string is held out exactly once.
    """
    if folds < 2:
        raise InputError(f"cross-validation needs at least 2 folds, got {folds}")
    if n_strings < folds:
        raise InputError(f"{folds}-fold cross-validation needs at least {folds} strings, "
                         f"the corpus has {n_strings}")
    perm = np.random.default_rng(seed).permutation(n_strings)
    parts = [np.sort(p).astype(np.int64) for p in np.array_split(perm, folds)]
    out = []
    for k, held in enumerate(parts):
        train = np.sort(np.concatenate([p for j, p in enumerate(parts) if j != k]))
        out.append((train, held))
    return out


def task_seed(seed: int, fold: int) -> int:
    """The ``fit`` seed of every candidate on ``fold`` (common random numbers): a 32-bit
    integer from ``np.random.SeedSequence(seed, spawn_key=(fold,))``."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(fold),))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def candidate_key(overrides: dict[str, Any]) -> str:
    """A directory-safe name for a candidate, e.g. ``beta=0.5,states=10`` (keys sorted)."""
    overrides = _plain(overrides)
    text = ",".join(f"{k}={_format_value(overrides[k])}" for k in sorted(overrides)) or "base"
    safe = re.sub(r"[^A-Za-z0-9._=,+-]", "_", text)
    if safe != text:
        safe += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return safe


def corpus_digest(corpus: Corpus) -> str:
    """sha256 of the corpus arrays and alphabet size (identifies the data of a fold file)."""
    h = hashlib.sha256()
    h.update(np.int64(corpus.alphabet_size).tobytes())
    h.update(np.ascontiguousarray(corpus.offsets, dtype="<i8").tobytes())
    h.update(np.ascontiguousarray(corpus.tokens, dtype="<i4").tobytes())
    return h.hexdigest()


# -- one (candidate, fold) ----------------------------------------------------------------

def _resolve(method):
    if isinstance(method, str):
        from bayesfa.methods import get_method

        return get_method(method)
    return method


def _method_name(method) -> str:
    return method if isinstance(method, str) else getattr(method, "name", type(method).__name__)


def run_fold(method, corpus: Corpus, options: dict[str, Any], train_idx: np.ndarray,
             held_idx: np.ndarray, seed: int) -> dict[str, Any]:
    """Fit ``method`` on ``corpus[train_idx]`` and score ``corpus[held_idx]``.

    Returns ``{"n_held", "loglik", "loglik_finite", "n_zero", "zero_prob", "seconds"}``:
    ``loglik`` is the sum of the held-out natural-log probabilities (``-inf`` if some string
    has probability 0), ``loglik_finite`` the sum over the others, ``zero_prob`` the corpus
    indices of the strings of probability 0.

    A registered method that predicts online (:func:`bayesfa.online.supports_online`) folds
    each draw into the held-out strings' Eq. 6 as it is made and keeps one draw's counts, so
    the fit's memory does not grow with its sweeps.
    """
    from bayesfa.online import fit_and_predict, supports_online

    name, method = method, _resolve(method)
    start = time.perf_counter()
    train, held = corpus.subset(train_idx), corpus.subset(held_idx)
    if isinstance(name, str) and supports_online(method):
        logp = fit_and_predict(name, train, {**options, "max_draws": 1}, int(seed), held).log_mean
    else:
        fit = method.fit(train, dict(options), int(seed), False)
        logp = method.predict_log_prob(fit.arrays, dict(options), held)
    logp = np.asarray(logp, dtype=np.float64).reshape(-1)
    if logp.size != held_idx.size:
        raise ValueError(f"{_method_name(method)}: predict_log_prob returned {logp.size} values "
                         f"for {held_idx.size} strings")
    if np.isnan(logp).any() or (logp == np.inf).any():
        raise ValueError(f"{_method_name(method)}: predict_log_prob returned NaN or +inf")
    zero = logp == -np.inf
    finite = float(logp[~zero].sum())
    return {
        "n_held": int(held_idx.size),
        "loglik": -math.inf if zero.any() else finite,
        "loglik_finite": finite,
        "n_zero": int(zero.sum()),
        "zero_prob": [int(i) for i in np.asarray(held_idx)[zero]],
        "seconds": time.perf_counter() - start,
    }


def _run_task(method, corpus: Corpus, task: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point (module level, so that Dask pickles it by reference): the fit in
    :func:`bayesfa.compiling.compile_notice`, which says on the worker's standard error when
    it compiles the method's kernels (``task["notice"]``) and stops at once on Ctrl-C."""
    from bayesfa.compiling import compile_notice, stderr_say
    from bayesfa.methods import COMPILE_SECONDS

    name = _method_name(method)
    with compile_notice(name, stderr_say if task.get("notice") else None, COMPILE_SECONDS.get(name)):
        return run_fold(method, corpus, task["options"], task["train"], task["held"], task["seed"])


# -- cross-validation ----------------------------------------------------------------------

@dataclass
class _Task:
    key: str
    overrides: dict[str, Any]
    fold: int
    options: dict[str, Any]
    seed: int
    fingerprint: dict[str, Any]
    path: Path | None


def cross_validate(method_name, corpus: Corpus, base_options: dict[str, Any],
                   grid: Sequence[dict[str, Any]], folds: int, seed: int,
                   out_dir: str | Path | None = None, client=None, progress: bool = False,
                   cache: dict | None = None, on_units=None,
                   notice: bool = False) -> list[dict[str, Any]]:
    """K-fold cross-validation of each candidate of ``grid`` (option overrides of ``base_options``).

    ``method_name`` is a registered method name (:func:`bayesfa.methods.get_method`) or a
    method object. With a ``dask.distributed.Client`` the (candidate, fold) fits run on its
    workers, else one after the other here. ``cache`` (a dict, shared between calls) keeps
    fold results in memory so that a candidate scored twice is fitted once. ``on_units(n)``,
    if given, is called with the number of (candidate, fold) results read from ``out_dir``,
    then with 1 for each fit that finishes (never for ``cache`` hits), so that a caller
    running many selections at once counts them on one progress bar. ``notice``: each Dask
    worker says on its standard error when it compiles the method's kernels (the fits here
    are stoppable with Ctrl-C while numba compiles either way; a notice here is the caller's,
    :mod:`bayesfa.compiling`).

    Returns one row per candidate, in grid order: ``{"candidate", "key", "mean", "se",
    "diff", "diff_se", "fold_means", "fold_logliks", "n_zero", "n_strings", "seconds"}`` (see
    the module docstring for the definitions; ``diff``/``diff_se`` against :func:`best_index`).
    """
    seed = int(seed)
    splits = kfold_indices(corpus.n_strings, folds, seed)
    name = _method_name(method_name)
    digest = corpus_digest(corpus)
    base = _plain(base_options)
    cache = {} if cache is None else cache
    out_dir = None if out_dir is None else Path(out_dir)

    candidates, keys = [], []
    for overrides in grid:
        overrides = _plain(overrides)
        key = candidate_key(overrides)
        if key in keys:
            raise ValueError(f"candidate {key} appears twice in the grid")
        candidates.append(overrides)
        keys.append(key)

    tasks: list[_Task] = []
    for overrides, key in zip(candidates, keys):
        options = {**base, **overrides}
        for k in range(folds):
            s = task_seed(seed, k)
            fingerprint = {
                "method": name,
                "options": {o: v for o, v in options.items() if o not in EXECUTION_OPTIONS},
                "cv_seed": seed, "seed": s, "folds": folds, "fold": k,
                "corpus_sha256": digest, "n_strings": corpus.n_strings,
            }
            path = None if out_dir is None else out_dir / "cv" / key / f"fold-{k}.json"
            tasks.append(_Task(key, overrides, k, options, s, fingerprint, path))

    results: dict[tuple[str, int], dict[str, Any]] = {}
    pending: list[_Task] = []
    from_disk = 0
    for t in tasks:
        done = cache.get(_cache_key(t))
        if done is None and t.path is not None:
            done = _read_fold(t)
            from_disk += done is not None
        if done is None:
            pending.append(t)
        else:
            results[(t.key, t.fold)] = done
            cache[_cache_key(t)] = done

    def finish(t: _Task, res: dict[str, Any]) -> None:
        results[(t.key, t.fold)] = res
        cache[_cache_key(t)] = res
        if t.path is not None:
            _write_fold(t, res)
        if on_units is not None:
            on_units(1)

    if on_units is not None and from_disk:
        on_units(from_disk)

    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), initial=len(tasks) - len(pending), disable=not progress,
               file=sys.stderr, desc=f"cv {name}", unit="fit", dynamic_ncols=True)
    try:
        if client is None:
            from bayesfa.compiling import compile_notice

            with compile_notice(name, None):  # Ctrl-C while compiling stops it (no notice)
                for t in pending:
                    held = splits[t.fold][1]
                    finish(t, run_fold(method_name, corpus, t.options, splits[t.fold][0], held,
                                       t.seed))
                    bar.update(1)
        elif pending:
            _run_on_dask(client, method_name, corpus, splits, pending, finish, bar, notice)
    finally:
        bar.close()

    rows = []
    for overrides, key in zip(candidates, keys):
        rows.append(_row(overrides, key, [results[(key, k)] for k in range(folds)], corpus.n_strings))
    add_differences(rows)
    return rows


#: how many times a task the scheduler dropped (its worker lost) is submitted again
TASK_RESUBMITS = 3


#: tries of :func:`scatter_everywhere` while workers die under it
SCATTER_TRIES = 5


def scatter_everywhere(client, data: list) -> list:
    """``client.scatter(data, broadcast=True, hash=False)``: the data on every worker (a fresh
    key per call, so a release from an earlier stage cannot race it). A worker that dies during
    the broadcast closes its connection (distributed's ``CommClosedError``, an ``OSError``);
    the scheduler then drops it and the broadcast is tried again on the workers left, at most
    :data:`SCATTER_TRIES` times."""
    for attempt in range(SCATTER_TRIES):
        try:
            return client.scatter(data, broadcast=True, hash=False)
        except OSError:
            if attempt == SCATTER_TRIES - 1 or client.status != "running":
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def results_resubmitting(client, futures: dict, submit, rescatter=None):
    """``(futures[f], f.result())`` for each Dask future as it finishes. A task the scheduler
    cancelled because a worker died under it (seen as "already forgotten") is submitted again
    with ``submit(key)``, at most :data:`TASK_RESUBMITS` times each: a task is a pure function
    of its inputs and seed. A cancellation for "lost dependencies" (the scattered data went
    with the worker) first calls ``rescatter()``, so that ``submit`` sends data that exist. On
    any error the futures left are cancelled."""
    import concurrent.futures

    from dask.distributed import as_completed

    lost: dict = {}
    done = as_completed(list(futures))
    try:
        for fut in done:
            key = futures.pop(fut)
            try:
                res = fut.result()
            except concurrent.futures.CancelledError as err:
                lost[key] = lost.get(key, 0) + 1
                if lost[key] > TASK_RESUBMITS or client.status != "running":
                    raise
                if rescatter is not None and "lost dependencies" in str(err):
                    rescatter()
                again = submit(key)
                futures[again] = key
                done.add(again)
                continue
            yield key, res
    except BaseException:
        client.cancel(list(futures))
        raise


def _run_on_dask(client, method, corpus, splits, pending, finish, bar, notice=False) -> None:
    held = scatter_everywhere(client, [corpus])

    def rescatter():
        held[:] = scatter_everywhere(client, [corpus])

    def submit(i):
        t = pending[i]
        payload = {"options": t.options, "train": splits[t.fold][0], "held": splits[t.fold][1],
                   "seed": t.seed, "notice": bool(notice)}
        return client.submit(_run_task, method, held[0], payload, pure=False)

    for i, res in results_resubmitting(client, {submit(i): i for i in range(len(pending))}, submit,
                                       rescatter):
        finish(pending[i], res)
        bar.update(1)


def _cache_key(t: _Task) -> str:
    return json.dumps(t.fingerprint, sort_keys=True)


def _read_fold(t: _Task) -> dict[str, Any] | None:
    """The stored result of ``t``; None if absent or unreadable; InputError if from another run."""
    try:
        data = json.loads(t.path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # not written by us (writes are atomic): recompute and overwrite
    if not isinstance(data, dict) or data.get("format") != FOLD_FORMAT:
        return None
    if data.get("fingerprint") != t.fingerprint:
        raise InputError("written by a different cross-validation (method, options, seed, folds "
                         "or data differ); choose another output directory or delete it", t.path)
    res = dict(data["result"])
    res["loglik"] = -math.inf if res["loglik"] is None else float(res["loglik"])
    return res


def _write_fold(t: _Task, res: dict[str, Any]) -> None:
    write_json(t.path, {"format": FOLD_FORMAT, "candidate": t.overrides, "fold": t.fold,
                        "fingerprint": t.fingerprint, "result": _finite_or_none(res)})


def _row(overrides, key, fold_results, n_strings) -> dict[str, Any]:
    logliks = np.array([r["loglik"] for r in fold_results], dtype=np.float64)
    n_held = np.array([r["n_held"] for r in fold_results], dtype=np.float64)
    n_zero = int(sum(r["n_zero"] for r in fold_results))
    fold_means = logliks / n_held
    if n_zero:
        mean, se = -math.inf, math.nan
    else:
        mean = float(logliks.sum() / n_strings)
        se = float(fold_means.std(ddof=1) / math.sqrt(len(fold_means)))
    finite = float(sum(r["loglik_finite"] for r in fold_results))
    return {
        "candidate": overrides,
        "key": key,
        "mean": mean,
        "se": se,
        "fold_means": [float(x) for x in fold_means],
        "fold_logliks": [float(x) for x in logliks],
        "n_zero": n_zero,
        "mean_finite": finite / max(n_strings - n_zero, 1),
        "n_strings": int(n_strings),
        "seconds": float(sum(r["seconds"] for r in fold_results)),
    }


def best_index(rows: Sequence[dict[str, Any]]) -> int:
    """The row of largest mean held-out log-likelihood (the first one on ties).

    Rows with held-out strings of probability 0 score ``-inf``; if every row has some, the
    one with the fewest wins, then the largest mean over the other strings.
    """
    if not rows:
        raise ValueError("no candidate to choose from")
    return max(range(len(rows)), key=lambda i: (-rows[i]["n_zero"], rows[i]["mean_finite"], -i))


def add_differences(rows: Sequence[dict[str, Any]]) -> None:
    """Set ``diff`` (mean minus the best row's mean) and ``diff_se`` (its standard error over
    the folds, paired) in every row of ``rows`` (module docstring). Rows with a held-out
    string of probability 0, or a best row with one, get ``-inf``/``nan`` as appropriate."""
    if not rows:
        return
    best = rows[best_index(rows)]
    for r in rows:
        if r["n_zero"] or best["n_zero"]:
            r["diff"] = 0.0 if r is best else (-math.inf if r["n_zero"] else math.nan)
            r["diff_se"] = math.nan
            continue
        d = np.asarray(r["fold_means"]) - np.asarray(best["fold_means"])
        r["diff"] = float(r["mean"] - best["mean"])
        r["diff_se"] = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan


def choose_index(rows: Sequence[dict[str, Any]], one_se: bool = False,
                 simplicity: Sequence[float] | None = None) -> int:
    """The chosen row: :func:`best_index`, or with ``one_se`` the one-standard-error rule,
    the row of smallest ``simplicity`` (a complexity order, e.g. the number of states) among
    those whose mean is at least the best mean minus the best row's ``se`` (the first one on
    ties). Rows with a held-out string of probability 0 are never within one SE."""
    best = best_index(rows)
    if not one_se:
        return best
    if simplicity is None or len(simplicity) != len(rows):
        raise ValueError("the one-standard-error rule needs a complexity for every candidate")
    b = rows[best]
    if b["n_zero"] or not math.isfinite(b["se"]):
        return best
    floor = b["mean"] - b["se"]
    eligible = [i for i, r in enumerate(rows) if not r["n_zero"] and r["mean"] >= floor]
    return min(eligible, key=lambda i: (simplicity[i], i))


# -- the two stages of Sect. 4.1 ------------------------------------------------------------

@dataclass
class Selection:
    """The outcome of :func:`select_two_stage`.

    stage1 : rows over ``states_grid`` at ``beta = stage1_beta`` (empty when only one ``N``).
    stage2 : rows over ``beta_grid`` at the chosen ``N``.
    choice : ``{"states": N, "beta": beta}``.
    meta : includes ``rule`` (``"best"`` or ``"one-se"``) and ``uncertainty``: per stage, the
        chosen candidate's ``diff`` and ``diff_se`` to that stage's best and the best's ``se``.
    """

    stage1: list[dict[str, Any]]
    stage2: list[dict[str, Any]]
    choice: dict[str, Any]
    stage1_beta: float
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: non-finite numbers become ``null`` (``n_zero`` says why)."""
        return _finite_or_none({**self.meta, "stage1_beta": self.stage1_beta,
                                "stage1": self.stage1, "stage2": self.stage2,
                                "choice": self.choice})

    def table(self) -> str:
        parts = []
        if self.stage1:
            parts += [f"Stage 1: number of states N at beta = {_format_value(self.stage1_beta)}",
                      format_table(self.stage1), ""]
        parts += [f"Stage 2: beta at N = {self.choice['states']}", format_table(self.stage2), "",
                  f"Choice: N = {self.choice['states']}, beta = {_format_value(self.choice['beta'])}"
                  f" ({choice_note(self.meta)})"]
        return "\n".join(parts) + "\n"


def choice_note(meta: dict[str, Any]) -> str:
    """One line on how the choice was made and how sure it is (from :class:`Selection` meta)."""
    rule = meta.get("rule", "best")
    parts = ["largest mean held-out log-likelihood" if rule == "best"
             else "one-standard-error rule: simplest candidate within one SE of the best"]
    for stage, u in (meta.get("uncertainty") or {}).items():
        parts.append(f"{stage}: diff to best {_num(u['diff'], 4)} +- {_num(u['diff_se'], 4)}, "
                     f"best se {_num(u['best_se'], 4)}")
    return "; ".join(parts)


def select_two_stage(method_name, corpus: Corpus, states_grid: Sequence[int],
                     beta_grid: Sequence[float], folds: int, seed: int,
                     base_options: dict[str, Any], beta_for_states: float = 0.5,
                     out_dir: str | Path | None = None, client=None,
                     progress: bool = False, one_se: bool = False, on_units=None,
                     notice: bool = False) -> Selection:
    """Choose ``N`` then ``beta`` by K-fold cross-validation (Shibata & Yoshinaka 2013, Sect. 4.1).

    Stage 1 scores each ``N`` of ``states_grid`` at ``beta = beta_for_states`` (at the only
    value of ``beta_grid`` when it has one; skipped when ``states_grid`` has one value).
    Stage 2 scores each ``beta`` of ``beta_grid`` at the chosen ``N``. With ``out_dir``, the
    fold files go to ``out_dir/cv/`` and the result to ``selection.json`` and ``selection.txt``.
    ``one_se``: the one-standard-error rule in each stage (module docstring) instead of the
    largest mean. ``on_units``: see :func:`cross_validate` (``bayesfa pautomac run`` runs one
    selection per problem, all on one Dask client, and counts their fits on one bar), and
    ``notice`` too (Dask workers say when they compile the method's kernels).
    """
    states_grid = [int(n) for n in states_grid]
    beta_grid = [float(b) for b in beta_grid]
    if not states_grid or not beta_grid:
        raise InputError("the states and beta grids need at least one value each")
    for name, grid in (("states", states_grid), ("beta", beta_grid)):
        if len(set(grid)) != len(grid):
            raise InputError(f"the {name} grid repeats a value: {grid}")
    stage1_beta = beta_grid[0] if len(beta_grid) == 1 else float(beta_for_states)
    if out_dir is not None:
        check_selection_dir(out_dir)
        for name in (SELECTION_TXT, SELECTION_JSON):  # refuse before any fit, not after
            check_output(Path(out_dir) / name, legacy=_legacy_selection, make_folder=True)
    cache: dict = {}
    common = dict(corpus=corpus, base_options=base_options, folds=folds, seed=seed,
                  out_dir=out_dir, client=client, progress=progress, cache=cache,
                  on_units=on_units, notice=notice)

    stage1: list[dict[str, Any]] = []
    if len(states_grid) == 1:
        states = states_grid[0]
    else:
        stage1 = cross_validate(method_name, grid=[{"states": n, "beta": stage1_beta}
                                                   for n in states_grid], **common)
        i = choose_index(stage1, one_se, simplicity=states_grid)
        stage1[i]["chosen"] = True
        states = states_grid[i]
    stage2 = cross_validate(method_name, grid=[{"states": states, "beta": b} for b in beta_grid],
                            **common)
    j = choose_index(stage2, one_se, simplicity=[-b for b in beta_grid])
    stage2[j]["chosen"] = True
    choice = {"states": states, "beta": beta_grid[j]}
    uncertainty = {}
    for stage, rows in (("stage1", stage1), ("stage2", stage2)):
        if rows:
            chosen = next(r for r in rows if r.get("chosen"))
            uncertainty[stage] = {"diff": chosen["diff"], "diff_se": chosen["diff_se"],
                                  "best_se": rows[best_index(rows)]["se"]}

    meta = {
        "format": SELECTION_FORMAT,
        "method": _method_name(method_name),
        "base_options": _plain(base_options),
        "folds": int(folds),
        "seed": int(seed),
        "states_grid": states_grid,
        "beta_grid": beta_grid,
        "rule": "one-se" if one_se else "best",
        "uncertainty": uncertainty,
        "corpus": {"n_strings": corpus.n_strings, "n_letters": corpus.n_letters,
                   "alphabet_size": corpus.alphabet_size, "sha256": corpus_digest(corpus)},
    }
    result = Selection(stage1, stage2, choice, stage1_beta, meta)
    if out_dir is not None:
        out_dir = Path(out_dir)
        record = jsonable({**result.to_dict(), "versions": versions(),
                           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        # the table first: the legacy check of selection.txt reads the old selection.json
        write_output_text(out_dir / SELECTION_TXT, result.table(), legacy=_legacy_selection,
                          make_folder=True)
        write_output_text(out_dir / SELECTION_JSON,
                          json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n",
                          legacy=_legacy_selection, make_folder=True)
    return result


def run_selection(method_name, corpus: Corpus, states_grid: Sequence[int],
                  beta_grid: Sequence[float], folds: int, seed: int,
                  base_options: dict[str, Any], out_dir: str | Path | None = None,
                  workers: int | None = None, progress: bool = False,
                  beta_for_states: float = 0.5, one_se: bool = False,
                  notice: bool = False) -> dict[str, Any]:
    """What ``bayesfa select`` runs: :func:`select_two_stage`, on a local Dask cluster of
    ``workers`` processes when ``workers > 1``; returns :meth:`Selection.to_dict`
    (``{"stage1": [...], "stage2": [...], "choice": {"states", "beta"}, ...}``).

    With several workers each fit runs in one process (``jobs`` is set to 1): the parallelism
    is over (candidate, fold) pairs, and Dask worker processes cannot start processes.
    """
    options = dict(base_options)
    kwargs = dict(states_grid=states_grid, beta_grid=beta_grid, folds=folds, seed=seed,
                  beta_for_states=beta_for_states, out_dir=out_dir, progress=progress,
                  one_se=one_se, notice=notice)
    if workers is None or workers <= 1:
        return select_two_stage(method_name, corpus, base_options=options, **kwargs).to_dict()
    if "jobs" in options:
        options["jobs"] = 1
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        return select_two_stage(method_name, corpus, base_options=options, client=client,
                                **kwargs).to_dict()


# -- text ---------------------------------------------------------------------------------

def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table: candidate, mean held-out log-likelihood per string, its standard
    error, the difference to the best and its (paired) standard error, held-out strings of
    probability 0, and the per-fold means; ``*`` marks the choice."""
    if not rows:
        return "(no candidate)"
    n_folds = len(rows[0]["fold_means"])
    header = (["", "candidate", "mean/string", "se", "diff", "se(diff)", "p=0"]
              + [f"fold{k}" for k in range(n_folds)])
    body = []
    for r in rows:
        cand = " ".join(f"{k}={_format_value(v)}" for k, v in r["candidate"].items())
        body.append(["*" if r.get("chosen") else "", cand, _num(r["mean"], 4), _num(r["se"], 4),
                     _num(r.get("diff"), 4), _num(r.get("diff_se"), 4),
                     str(r["n_zero"])] + [_num(x, 3) for x in r["fold_means"]])
    widths = [max(len(line[c]) for line in [header] + body) for c in range(len(header))]
    left = {0, 1}

    def fmt(line):
        cells = [s.ljust(w) if c in left else s.rjust(w) for c, (s, w) in enumerate(zip(line, widths))]
        return "  ".join(cells).rstrip()

    lines = [fmt(header)] + [fmt(line) for line in body]
    zero = sum(r["n_zero"] for r in rows)
    if zero:
        lines.append("p=0: held-out strings given probability 0 (their candidate scores -inf)")
    return "\n".join(lines)


def parse_grid(text: str, kind=float) -> list:
    """``"10,20,30"`` -> ``[10, 20, 30]`` (``kind`` int or float); for the CLI."""
    import argparse

    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}") from None
    if not values or any(not (v > 0) or not math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected positive values, got {text!r}")
    return values


# -- helpers ------------------------------------------------------------------------------

def _plain(obj):
    """Numpy scalars, arrays, tuples and paths to plain JSON types (stable keys and fingerprints)."""
    return json.loads(json.dumps(obj, default=_json_default))


def _finite_or_none(obj):
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_or_none(v) for v in obj]
    if isinstance(obj, (float, np.floating)) and not math.isfinite(obj):
        return None
    return _plain(obj)


def _format_value(v) -> str:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)


def _num(x, digits) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == -math.inf:
        return "-inf"
    return f"{x:.{digits}f}"
