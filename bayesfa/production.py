"""Production runs on PAutomaC with Dask: ``bayesfa pautomac run`` (Shibata & Yoshinaka 2013, Sect. 4.1).

For each problem, optionally the two cross-validation stages of Sect. 4.1 (N, then beta:
:func:`bayesfa.selection.select_two_stage`, unchanged), then ``C`` final chains at the chosen
(or given) options, whose posterior predictives are combined by Eq. 6 over all their draws::

    log p(b) = logsumexp_c(log_mean_c(b) + log n_c) - log sum_c n_c

(``log_mean_c``: log of the mean over chain ``c``'s ``n_c`` draws of ``Pr(b | draw)``, from
:func:`bayesfa.online.fit_and_predict`; the sum is :func:`bayesfa.online.combine_log_means`).

Units. Every fit is one Dask task: a (grid point, fold) of the cross-validation (one chain
each, as the paper's 150 CV runs) or one final chain. Each problem is driven by one thread of
this process (the client) that submits its units to the shared ``dask.distributed.Client``
and waits for them; Dask schedules all problems' units together, reschedules the tasks of a
worker that dies, and the client writes every finished unit atomically into RESULTS. Units
are pure functions of (problem data, method, options, unit seed), so their order and the
workers they ran on never change a result.

Seeds. From ``np.random.SeedSequence(S, spawn_key=(problem key, role, ...))`` (problem key:
the first 32 bits of the SHA-256 of its name): final chain ``c`` gets the key ``(problem, 1,
c)``; the cross-validation of a problem gets one seed from ``(problem, 0)`` and is then
exactly ``bayesfa select TRAIN --seed <that seed>`` (folds and common random numbers per fold,
the same for every grid point, as :mod:`bayesfa.selection` explains; its ``selection.json``
records it).

``--budget TOTAL`` of a method that sizes its own sweeps to a budget (ipfa,
:func:`bayesfa.samplers.pfa.ipfa.budget_options`): TOTAL is shared among the problems as below,
and each problem's share evenly among its ``--chains`` units (``RunSpec.budgeted``).

``--auto --budget TOTAL`` (cgs-pfa, :mod:`bayesfa.samplers.pfa.auto`): TOTAL CPU seconds are
shared among the problems (:func:`budget_shares`: evenly by default, each problem weighing the
same in the mean ratio; ``--shares tokens`` in proportion to their training tokens, the rule
before issue 37);
each problem is one unit that chooses N and beta from held-out training strings and runs the
final chains within its share, and writes its decisions to ``problems/NAME/auto.json``; the
summary adds each problem's CPU seconds and share. A kill loses the problems in flight (each
restarts from its beginning on the rerun, as one unit).

RESULTS layout::

    run.json                                what this run is: method, options, seed, chains, grids
    summary.csv, summary.md, summary.json   one row per finished problem; failures in .md/.json
                                            (states: N, the --auto winner's, or for a method
                                            that infers it, ipfa, the mean states in use
                                            over the final chains' draws)
    ratios.png                              score ratio - 1 per problem (log scale)
    answers/NAME.pautomac.predict           Eq. 6 over all final chains, solution layout
    problems/NAME/problem.json              the problem's training and test files' SHA-256
    problems/NAME/select/                   cross-validation fold files, selection.json/.txt
    problems/NAME/final/chain-CCCC.npz      one final chain: log_mean, n_draws, trace, meta
                                            (--auto: chain-0000.npz, all the problem's chains)
    problems/NAME/final/budget-CCCC.json    a method's own --budget (ipfa): the chain's timed costs,
                                            its schedule and the CPU it took
    problems/NAME/auto.json                 --auto: every decision (candidates, held-out scores, CPU)

A rerun of the same command skips finished units (a run killed with SIGKILL loses only the
units in flight, and its answers are bit-identical to an uninterrupted run's); a RESULTS
made with other settings is refused in one line (:func:`bayesfa.rundir._differences`), and a
problem whose files changed since is reported as failed. The summary files are written when
the run ends; :func:`summarize` gives the rows of the problems finished so far from the unit
files (a run in progress, or killed), built as the run builds them.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import math
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bayesfa.errors import InputError
from bayesfa.rundir import EXECUTION_OPTIONS, _differences, atomic_write, file_sha256, jsonable, write_json

RUN_FORMAT = "bayesfa-production/1"
UNIT_FORMAT = "bayesfa-production-unit/1"
RUN_JSON = "run.json"
SUMMARY_COLUMNS = ("problem", "method", "states", "beta", "score", "min_score", "ratio", "seconds")
AUTO_COLUMNS = ("cpu_seconds", "budget")  # --auto runs: the CPU each problem spent, its share
#: Mean ratio - 1 of CGS-PFA over PAutomaC I in the paper (Sect. 4.1: 10 chains x 20,000
#: sweeps, N and beta by 10-fold cross-validation), drawn as a reference line.
PAPER_MEAN_RATIO_MINUS_ONE = 0.00129
PAPER_STATES_GRID = (10, 20, 30, 40, 50, 60, 70, 80, 90)
PAPER_BETA_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
_ROLE_CV, _ROLE_FINAL = 0, 1
_ANSWER = "{name}.pautomac.predict"


# -- problems --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """One PAutomaC problem in DIR: ``NAME.pautomac.train``, ``.test`` and, when present,
    ``NAME.pautomac_solution.txt``."""

    name: str
    train: Path
    test: Path
    solution: Path | None


_RANGE = re.compile(r"^(\d+)-(\d+)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def parse_problems(text: str) -> list[str]:
    """``"1,2,5-9,foo"`` -> ``["1", "2", "5", "6", "7", "8", "9", "foo"]`` (repeats dropped)."""
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        m = _RANGE.match(part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise InputError(f"--problems: empty range {part!r}")
            names += [str(i) for i in range(lo, hi + 1)]
        elif _NAME.match(part):
            names.append(str(int(part)) if part.isdigit() else part)
        else:
            raise InputError(f"--problems: {part!r} is neither a number, a range A-B nor a file prefix")
    if not names:
        raise InputError("--problems names no problem")
    return list(dict.fromkeys(names))


def find_problems(data: str | Path, names: list[str]) -> list[Problem]:
    """The :class:`Problem` of each name in ``data`` (whose files need not exist: a missing
    one fails that problem only, when it is read)."""
    data = Path(data)
    if not data.is_dir():
        raise InputError("no such data directory" if not data.exists() else "not a directory", data)
    out = []
    for name in names:
        solution = data / f"{name}.pautomac_solution.txt"
        out.append(Problem(name, data / f"{name}.pautomac.train", data / f"{name}.pautomac.test",
                           solution if solution.is_file() else None))
    return out


# -- seeds -----------------------------------------------------------------------------------

def unit_seed(seed: int, problem: str, role: int, *index: int) -> int:
    """A 32-bit seed from ``np.random.SeedSequence(seed, spawn_key=(problem key, role, *index))``
    (module docstring); deterministic, independent of order and workers."""
    key = int.from_bytes(hashlib.sha256(problem.encode()).digest()[:4], "little")
    ss = np.random.SeedSequence(int(seed), spawn_key=(key, int(role)) + tuple(int(i) for i in index))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


# -- one final chain (runs on a worker) -----------------------------------------------------

def _final_unit(method_name: str, corpus, test, options: dict, seed: int,
                notice: bool = False) -> dict:
    """One final chain (the worker's entry point, module level so that Dask pickles it by
    reference): :func:`bayesfa.online.fit_and_predict` (see :func:`final_options`), in
    :func:`bayesfa.compiling.compile_notice`: ``notice``, the worker says on its standard
    error when it compiles the method's kernels; Ctrl-C stops the compilation at once."""
    from bayesfa.compiling import compile_notice, stderr_say
    from bayesfa.methods import COMPILE_SECONDS
    from bayesfa.online import fit_and_predict

    start = time.perf_counter()
    with compile_notice(method_name, stderr_say if notice else None,
                        COMPILE_SECONDS.get(method_name)):
        pred = fit_and_predict(method_name, corpus, options, seed, test)
    trace = {k: np.asarray(v) for k, v in (pred.trace or {}).items()
             if np.asarray(v).dtype.kind in "biuf"}
    return {"log_mean": np.asarray(pred.log_mean, dtype=np.float64).reshape(-1),
            "n_draws": int(pred.n_draws), "trace": trace,
            "seconds": time.perf_counter() - start, "auto": pred.info["fit"].get("auto"),
            "budget": pred.info["fit"].get("budget")}


def final_options(method_name: str, options: dict) -> dict:
    """A final chain's options: a method that predicts online (:mod:`bayesfa.online`) folds
    every draw into Eq. 6 as it is made and, unless ``max_draws`` is given, keeps the counts
    of one draw only (the cap changes what a fit saves, never its ``log_mean``)."""
    from bayesfa.methods import get_method
    from bayesfa.online import supports_online

    if supports_online(get_method(method_name)) and options.get("max_draws") is None:
        return {**options, "max_draws": 1}
    return options


# -- unit files ------------------------------------------------------------------------------

def _write_unit(path: Path, meta: dict, res: dict) -> None:
    arrays = {"log_mean": res["log_mean"], "n_draws": np.int64(res["n_draws"]),
              "seconds": np.float64(res["seconds"]),
              "meta": np.frombuffer(json.dumps(jsonable(meta), sort_keys=True).encode(), dtype=np.uint8)}
    arrays.update({f"trace_{k}": v for k, v in res["trace"].items()})

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    atomic_write(path, write)


def _load_unit(path: Path) -> tuple[dict, dict] | None:
    """``(stored meta, unit)`` of a unit file; None if absent or unreadable (writes are
    atomic: an unreadable file is recomputed)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored = json.loads(npz["meta"].tobytes().decode())
            res = {"log_mean": npz["log_mean"].astype(np.float64), "n_draws": int(npz["n_draws"]),
                   "seconds": float(npz["seconds"]),
                   "trace": {k[6:]: npz[k] for k in npz.files if k.startswith("trace_")}}
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError):  # FileNotFoundError too
        return None
    return stored, res


def _read_unit(path: Path, meta: dict) -> dict | None:
    """The stored unit (:func:`_load_unit`); an :class:`InputError` if another run wrote it."""
    loaded = _load_unit(path)
    if loaded is None:
        return None
    stored, res = loaded
    if stored != jsonable(meta):
        raise InputError("written by another run (method, options, seed or data differ); "
                         "choose another --out", path)
    return res


# -- the run ---------------------------------------------------------------------------------

@dataclass
class RunSpec:
    """Everything that defines a production run (its identity) besides the problems' data."""

    method: str
    options: dict[str, Any]      # the method's options (states/beta: the given values)
    seed: int
    chains: int
    select: bool = False
    states_grid: list[int] | None = None
    beta_grid: list[float] | None = None
    folds: int = 10
    one_se: bool = False
    shares: str = "even"         # --auto: how TOTAL is shared among the problems (budget_shares)

    def identity(self) -> dict[str, Any]:
        opts = {k: v for k, v in self.options.items() if k not in EXECUTION_OPTIONS | {"chains"}}
        opts["chains"] = self.chains
        if self.auto or self.budgeted:
            opts["shares"] = self.shares
        if self.select:
            opts.update(select=True, states=self.states_grid, beta=self.beta_grid,
                        folds=self.folds, one_se=self.one_se)
        return jsonable({"method": self.method, "seed": self.seed, "options": opts})

    @property
    def auto(self) -> bool:
        """``--auto --budget TOTAL``: one unit per problem, N and beta chosen in it
        (:mod:`bayesfa.samplers.pfa.auto`) within the problem's share of TOTAL."""
        return bool(self.options.get("auto"))

    @property
    def budgeted(self) -> bool:
        """``--budget TOTAL`` of a method that sizes its own sweeps to a CPU budget (ipfa):
        TOTAL shared among the problems as for :attr:`auto`, each problem's share split evenly
        among its ``chains`` units (one chain each)."""
        return not self.auto and self.options.get("budget") is not None

    def unit_options(self, **overrides) -> dict[str, Any]:
        """A unit's fit options: one chain in one process (the parallelism is Dask's); with
        :attr:`auto`, the problem's ``chains`` final chains in its one unit."""
        opts = {**self.options, **overrides}
        for key, value in (("chains", self.chains if self.auto else 1), ("jobs", 1)):
            if key in opts:
                opts[key] = value
        return opts

    def n_units(self) -> int:
        """Units per problem (the cross-validation's distinct (grid point, fold) fits and the
        final chains)."""
        if not self.select:
            return 1 if self.auto else self.chains
        n1 = len(self.states_grid) if len(self.states_grid) > 1 else 0
        stage1_beta = self.beta_grid[0] if len(self.beta_grid) == 1 else 0.5
        overlap = 1 if n1 and stage1_beta in self.beta_grid else 0
        return self.folds * (n1 + len(self.beta_grid) - overlap) + self.chains


def open_results(out: str | Path, spec: RunSpec) -> Path:
    """Create RESULTS or check that it holds this same run; an :class:`InputError` (one line)
    for a file, a non-empty folder that is not a production run, or a run of other settings."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a directory; choose another --out", out)
    identity = spec.identity()
    if out.is_dir() and any(out.iterdir()):
        try:
            stored = json.loads((out / RUN_JSON).read_text())
        except FileNotFoundError:
            raise InputError("not empty and not a bayesfa production run; choose another --out",
                             out) from None
        except (OSError, ValueError):
            raise InputError(f"{RUN_JSON} is unreadable; choose another --out", out) from None
        old = stored.get("identity") if isinstance(stored, dict) else None
        old_options = old.get("options") if isinstance(old, dict) else None
        if isinstance(old_options, dict) and old_options.get("auto") and "shares" not in old_options:
            old_options["shares"] = "tokens"  # a run made before --shares: it shared by tokens
        if old != identity:
            raise InputError(f"holds a production run made with "
                             f"{_differences(old or {}, identity)}; choose another --out", out)
        return out
    write_json(out / RUN_JSON, {"format": RUN_FORMAT, "identity": identity})
    return out


class _Bar:
    """One tqdm bar over every unit of every problem, updated from the problems' threads."""

    def __init__(self, total: int, quiet: bool):
        from tqdm.auto import tqdm

        self.quiet = quiet  # the workers say nothing either (no compile notice)
        self._lock = threading.Lock()
        self._bar = tqdm(total=total, disable=quiet, file=sys.stderr, desc="units", unit="unit",
                         dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 10.0)

    def update(self, n: int = 1) -> None:
        with self._lock:
            self._bar.update(n)

    def close(self) -> None:
        self._bar.close()


def _load_problem(problem: Problem):
    from bayesfa.pautomac import read_sample, read_solution

    train, test = read_sample(problem.train), read_sample(problem.test)
    if test.alphabet_size > train.alphabet_size:
        raise InputError(f"alphabet of {test.alphabet_size} letters, but the training file "
                         f"has {train.alphabet_size}", problem.test, 1)
    test = test.with_alphabet(train.alphabet_size)
    solution = None
    if problem.solution is not None:
        solution = read_solution(problem.solution, log=True)
        if solution.size != test.n_strings:
            raise InputError(f"{solution.size} probabilities for {test.n_strings} test strings",
                             problem.solution, 1)
    return train, test, solution


def _check_problem_files(pdir: Path, problem: Problem) -> None:
    """Record (first time) or check (rerun) the SHA-256 of the problem's files."""
    now = {"train_sha256": file_sha256(problem.train), "test_sha256": file_sha256(problem.test)}
    path = pdir / "problem.json"
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        write_json(path, now)
        return
    if old.get("train_sha256") != now["train_sha256"] or old.get("test_sha256") != now["test_sha256"]:
        what = "training" if old.get("train_sha256") != now["train_sha256"] else "test"
        raise InputError(f"its {what} file changed since this RESULTS was started "
                         f"({_differences(old, now) if what == 'training' else 'other test data'}); "
                         f"use another --out", problem.train if what == "training" else problem.test)


def problem_options(spec: RunSpec, budget: float | None) -> dict[str, Any]:
    """A problem's unit options (:meth:`RunSpec.unit_options`) with its ``budget`` (its share of
    ``--budget TOTAL``): the whole share for ``--auto``'s one unit, ``budget / chains`` for each
    unit of a method's own budget (``spec.budgeted``), none otherwise."""
    if spec.auto:
        return spec.unit_options(budget=float(budget))
    if spec.budgeted:
        return spec.unit_options(budget=float(budget) / spec.chains)
    return spec.unit_options()


def run_problem(client, spec: RunSpec, problem: Problem, results: Path, bar: _Bar,
                memory: dict | None = None, budget: float | None = None) -> dict[str, Any]:
    """Cross-validation (with ``spec.select``), final chains, Eq. 6, answer file and score of
    one problem; returns its summary row (``seconds``: compute seconds of all its units).

    ``memory``: keyword arguments of :func:`bayesfa.memory.check_fits` (``copies``: fits at
    once on one machine; ``available``: bytes), checked before the problem's first unit; a
    problem too large fails alone. None: no check.

    ``budget``: with ``spec.auto``, this problem's CPU seconds (:func:`budget_shares`); its
    one unit chooses N and beta and runs the final chains, and its decisions are written to
    ``problems/NAME/auto.json``. With ``spec.budgeted`` (a method's own ``--budget``, ipfa),
    each of its ``chains`` units gets ``budget / chains`` CPU seconds for its sweeps."""
    from bayesfa.memory import check_fits
    from bayesfa.methods import get_method
    from bayesfa.pautomac import write_solution

    train, test, solution = _load_problem(problem)
    pdir = results / "problems" / problem.name
    _check_problem_files(pdir, problem)
    options = problem_options(spec, budget)
    seconds = 0.0
    if spec.select:
        from bayesfa.selection import select_two_stage

        biggest = spec.unit_options(states=max(spec.states_grid), beta=max(spec.beta_grid))
        if memory is not None:
            check_fits(get_method(spec.method), train, biggest, **memory,
                       what=f"{problem.name}: {spec.method} with --states {max(spec.states_grid)}")
        base = dict(options)
        if "holdout" in base:  # the folds are the held-out data: fit each on all its strings
            base["holdout"] = 0.0
        sel = select_two_stage(spec.method, train, spec.states_grid, spec.beta_grid, spec.folds,
                               unit_seed(spec.seed, problem.name, _ROLE_CV), base,
                               out_dir=pdir / "select", client=client, one_se=spec.one_se,
                               on_units=bar.update, notice=not bar.quiet)
        options = spec.unit_options(**sel.choice)
        seconds += _cv_seconds(sel.stage1, sel.stage2)
    options = final_options(spec.method, options)
    if memory is not None:
        check_fits(get_method(spec.method), train, options, **memory,
                   what=f"{problem.name}: one {spec.method} chain")

    n_test = test.n_strings
    digests = json.loads((pdir / "problem.json").read_text())
    units: list[dict | None] = []
    metas = []
    for c in range(1 if spec.auto else spec.chains):
        meta = {"format": UNIT_FORMAT, "method": spec.method,
                "options": {k: v for k, v in options.items() if k not in EXECUTION_OPTIONS},
                "seed": unit_seed(spec.seed, problem.name, _ROLE_FINAL, c), "chain": c, **digests}
        metas.append(meta)
        done = _read_unit(pdir / "final" / f"chain-{c:04d}.npz", meta)
        if done is not None and done["log_mean"].shape != (n_test,):
            done = None
        units.append(done)
    if any(u is not None for u in units):
        bar.update(sum(u is not None for u in units))
    todo = [c for c in range(len(units)) if units[c] is None]
    if todo:
        from bayesfa.selection import results_resubmitting, scatter_everywhere

        # on every worker: data scattered to one worker die with it (scattered data cannot be
        # recomputed), and the units that need them fail instead of moving elsewhere
        held = scatter_everywhere(client, [train, test])

        def rescatter():
            held[:] = scatter_everywhere(client, [train, test])

        def submit(c):
            return client.submit(_final_unit, spec.method, held[0], held[1], options,
                                 metas[c]["seed"], not bar.quiet, pure=False)

        # a unit whose worker died is submitted again (selection.results_resubmitting), its
        # data scattered again if they went with the worker
        for c, res in results_resubmitting(client, {submit(c): c for c in todo}, submit, rescatter):
            if res["log_mean"].shape != (n_test,):
                raise ValueError(f"chain {c}: {res['log_mean'].size} log probabilities for "
                                 f"{n_test} test strings")
            if spec.auto:  # before the unit: a finished unit always has its decisions
                write_json(pdir / AUTO_JSON, res["auto"])
            if spec.budgeted and res.get("budget") is not None:  # the schedule its budget bought
                write_json(pdir / "final" / BUDGET_JSON.format(chain=c), res["budget"])
            _write_unit(pdir / "final" / f"chain-{c:04d}.npz", metas[c], res)
            units[c] = res
            bar.update(1)
    log_pred, row = _problem_row(spec.method, problem.name, options, units, seconds, solution)
    if spec.auto:
        row.update(_auto_columns(pdir))
    atomic_write(results / "answers" / _ANSWER.format(name=problem.name),
                 lambda tmp: write_solution(tmp, log_probs=log_pred))
    return row


AUTO_JSON = "auto.json"
#: a budgeted unit's plan and CPU (``info["budget"]`` of :func:`bayesfa.samplers.pfa.ipfa.budget_options`)
BUDGET_JSON = "budget-{chain:04d}.json"


def _auto_columns(pdir: Path) -> dict[str, Any]:
    """The chosen N and beta, CPU seconds and budget of a ``--auto`` problem (``auto.json``)."""
    try:
        auto = json.loads((pdir / AUTO_JSON).read_text())
        return {"states": auto["winner"]["states"], "beta": auto["winner"]["beta"],
                "cpu_seconds": auto["cpu_seconds"], "budget": auto["budget"]}
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"a finished --auto unit but no readable {AUTO_JSON}", pdir) from None


#: ``--shares``: how ``--auto --budget TOTAL`` is shared among the problems (:func:`budget_shares`)
SHARES = ("even", "tokens")


def budget_shares(total: float, problems: list[Problem], rule: str = "even") -> dict[str, float]:
    """``--auto --budget TOTAL`` shared among ``problems``: ``even``, the same CPU for each
    (every problem weighs the same in the mean ratio - 1, and a large problem's score stops
    improving long before a small one's: issue 37, RESULTS "--auto's budget shared evenly"), or
    ``tokens``, in proportion to their training tokens (the sweeps' cost; the rule of the runs
    before issue 37). Either way a problem whose training file cannot be read gets nothing (it
    fails when it is run). The shares depend on the problem list: a rerun must name the same
    problems (its units are refused otherwise)."""
    from bayesfa.pautomac import read_sample

    if rule not in SHARES:
        raise InputError(f"--shares {rule}: one of {', '.join(SHARES)}")
    sizes = {}
    for p in problems:
        try:
            n_tokens = read_sample(p.train).n_tokens
        except (InputError, OSError):
            sizes[p.name] = 0
        else:
            sizes[p.name] = 1 if rule == "even" else n_tokens
    whole = sum(sizes.values()) or 1
    return {name: float(total) * n / whole for name, n in sizes.items()}


def _cv_seconds(stage1: list[dict], stage2: list[dict]) -> float:
    """Compute seconds of a problem's cross-validation fits ((N*, 0.5) is in both stages,
    fitted once)."""
    keys = {r["key"] for r in stage1}
    return sum(r["seconds"] for r in stage1 + [r for r in stage2 if r["key"] not in keys])


def _problem_row(method: str, name: str, options: dict, units: list[dict], cv_seconds: float,
                 log_solution: np.ndarray | None) -> tuple[np.ndarray, dict[str, Any]]:
    """Eq. 6 over a problem's final chains (module docstring) and its summary row
    (:data:`SUMMARY_COLUMNS`; score, min_score and ratio None without a solution)."""
    from bayesfa.online import combine_log_means
    from bayesfa.scoring import score_all_log

    from bayesfa.methods import get_method

    log_pred = np.minimum(combine_log_means([u["log_mean"] for u in units],
                                            [u["n_draws"] for u in units]), 0.0)
    states = options.get("states")
    in_use = [np.asarray(u["trace"]["n_states"]).ravel() for u in units if "n_states" in u.get("trace", {})]
    if getattr(get_method(method), "infers_states", False) and in_use:
        # --states only started the chains: the mean states in use over the final draws
        states = int(round(float(np.mean(np.concatenate(in_use)))))
    row = {"problem": name, "method": method, "states": states,
           "beta": options.get("beta"), "score": None, "min_score": None, "ratio": None,
           "seconds": cv_seconds + sum(u["seconds"] for u in units)}
    if log_solution is not None:
        row.update(score_all_log(log_pred, log_solution).as_dict())
    return log_pred, row


def run(spec: RunSpec, problems: list[Problem], out: str | Path, scheduler: str = "local",
        workers: int | None = None, quiet: bool = False) -> tuple[list[dict], list[dict]]:
    """Run every problem on a Dask cluster (``"local"``: a LocalCluster of ``workers``
    processes with one thread each; else the address of a running ``dask scheduler``) and
    write the summary. Returns ``(rows, failures)``; a failure is ``{"problem", "error"}``."""
    from bayesfa.cluster import open_cluster

    results = open_results(out, spec)
    start = time.perf_counter()
    with open_cluster(scheduler, workers) as cluster:
        client, memory = cluster.client, cluster.memory
        if not quiet:
            cluster.announce()
        bar = _Bar(spec.n_units() * len(problems), quiet)
        rows: dict[str, dict] = {}
        failures: dict[str, dict] = {}
        # one thread per problem submits its units and waits for them
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(problems), 64)),
                                                     thread_name_prefix="problem")
        try:
            shares = (budget_shares(spec.options["budget"], problems, spec.shares)
                      if spec.auto or spec.budgeted else {})
            jobs = {pool.submit(run_problem, client, spec, p, results, bar, memory, shares.get(p.name)): p
                    for p in problems}
            for job in concurrent.futures.as_completed(jobs):
                p = jobs[job]
                try:
                    rows[p.name] = job.result()
                except Exception as err:  # one problem's failure never stops the others
                    failures[p.name] = {"problem": p.name, "error": _one_line(err)}
        finally:
            bar.close()
            client.close()  # first: its futures are cancelled, so waiting threads return
            pool.shutdown(wait=True, cancel_futures=True)
    order = [p.name for p in problems]
    rows_list = [rows[n] for n in order if n in rows]
    fail_list = [failures[n] for n in order if n in failures]
    write_summary(results, spec, rows_list, fail_list, time.perf_counter() - start)
    return rows_list, fail_list


def summarize(results: str | Path, data: str | Path | None = None) -> tuple[list[dict], dict[str, int]]:
    """The summary rows of the problems a RESULTS folder has finished so far, while its run
    goes on, after it was killed, or once it is done (then the rows equal ``summary.json``'s).

    A problem is finished when all its final chains are written; its row is built from them
    as the run builds it (Eq. 6, :func:`_problem_row`), scored against
    ``data/NAME.pautomac_solution.txt`` when ``data`` is given and that file exists (the test
    file there must be the one the run predicted, by SHA-256). Returns ``(rows, pending)``:
    rows in problem order (numbers first), and ``{name: final chains written}`` of the
    problems started but not finished (problems not started yet are not known to RESULTS).
    An :class:`InputError` for a folder that is not a production run, or a unit file or data
    that another run or other data wrote."""
    from bayesfa.pautomac import read_solution
    from bayesfa.selection import SELECTION_JSON

    results = Path(results)
    try:
        identity = json.loads((results / RUN_JSON).read_text())["identity"]
        method, seed = identity["method"], int(identity["seed"])
        chains, select = int(identity["options"]["chains"]), bool(identity["options"].get("select"))
        auto = bool(identity["options"].get("auto"))
    except FileNotFoundError:
        raise InputError(f"no {RUN_JSON}: not a bayesfa production run", results) from None
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"{RUN_JSON} is unreadable", results) from None
    rows: list[dict] = []
    pending: dict[str, int] = {}
    names = sorted((p.name for p in (results / "problems").glob("*") if (p / "problem.json").is_file()),
                   key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0, n))
    for name in names:
        pdir = results / "problems" / name
        digests = json.loads((pdir / "problem.json").read_text())
        units, options = [], None
        n_final = 1 if auto else chains
        for c in range(n_final):
            path = pdir / "final" / f"chain-{c:04d}.npz"
            loaded = _load_unit(path)
            if loaded is None:
                continue
            stored, unit = loaded
            expect = {"format": UNIT_FORMAT, "method": method, "chain": c,
                      "seed": unit_seed(seed, name, _ROLE_FINAL, c), **digests}
            if ({k: stored.get(k) for k in expect} != expect
                    or stored.get("options") != (options or stored.get("options"))):
                raise InputError("written by another run (method, options, seed or data differ)", path)
            options = stored["options"]
            units.append(unit)
        if len(units) < n_final:
            pending[name] = len(units)
            continue
        cv_seconds = 0.0
        if select:
            try:
                sel = json.loads((pdir / "select" / SELECTION_JSON).read_text())
                cv_seconds += _cv_seconds(sel["stage1"], sel["stage2"])
            except (OSError, ValueError, KeyError, TypeError):
                raise InputError(f"final chains but no readable {SELECTION_JSON}",
                                 pdir / "select") from None
        log_solution = None
        if data is not None:
            [problem] = find_problems(data, [name])
            if problem.solution is not None:
                try:
                    same = file_sha256(problem.test) == digests["test_sha256"]
                except OSError as err:
                    raise InputError(f"cannot read: {err.strerror}", problem.test) from None
                if not same:
                    raise InputError("not the test file this run predicted (SHA-256 differs)",
                                     problem.test)
                log_solution = read_solution(problem.solution, log=True)
                if log_solution.size != units[0]["log_mean"].size:
                    raise InputError(f"{log_solution.size} probabilities for "
                                     f"{units[0]['log_mean'].size} test strings", problem.solution, 1)
        row = _problem_row(method, name, options, units, cv_seconds, log_solution)[1]
        if auto:
            row.update(_auto_columns(pdir))
        rows.append(row)
    return rows, pending


def _one_line(err: BaseException) -> str:
    if isinstance(err, InputError):
        return str(err)
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:300]}" if text else type(err).__name__


# -- report ----------------------------------------------------------------------------------

def _cell(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "" if v is None else repr(float(v))
    return repr(float(v)) if isinstance(v, float) else str(v)


def write_summary(results: Path, spec: RunSpec, rows: list[dict], failures: list[dict],
                  wall_seconds: float) -> None:
    """``summary.csv`` (:data:`SUMMARY_COLUMNS`), ``summary.md``, ``summary.json`` and, when
    some problem has a solution, ``ratios.png``."""
    from bayesfa.provenance import code_version, compile_target, portable_command

    code = code_version()  # the code that wrote this summary (and ran this session's units)
    target = compile_target()  # and the CPU its kernels were compiled for
    columns = SUMMARY_COLUMNS + (AUTO_COLUMNS if spec.auto else ())
    csv = ",".join(columns) + "\n" + "".join(
        ",".join(_cell(r.get(c)) for c in columns) + "\n" for r in rows)
    atomic_write(results / "summary.csv", lambda tmp: Path(tmp).write_text(csv))
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None and math.isfinite(r["ratio"])]
    mean = float(np.mean(ratios)) - 1.0 if ratios else None
    lines = [f"# bayesfa pautomac run: {spec.method}", "",
             f"`{portable_command(sys.argv)}`" if sys.argv else "", "",
             "| problem | states | beta | score | min score | score - min | ratio - 1 | seconds |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        scored = r["score"] is not None
        lines.append("| " + " | ".join([
            r["problem"], _cell(r["states"]), _cell(r["beta"]),
            f"{r['score']:.6f}" if scored else "-", f"{r['min_score']:.6f}" if scored else "-",
            f"{r['score'] - r['min_score']:.4f}" if scored else "-",
            f"{r['ratio'] - 1:.5f}" if scored else "-", f"{r['seconds']:.1f}"]) + " |")
    lines.append("")
    if mean is not None:
        lines.append(f"Mean ratio - 1 over {len(ratios)} scored problems: {mean:.5f} "
                     f"(paper, PAutomaC I: {PAPER_MEAN_RATIO_MINUS_ONE}).")
    lines.append(f"Seconds: compute time of each problem's units; this session's wall time "
                 f"{wall_seconds:.1f} s.")
    lines.append(f"Code: {code}; kernels compiled for {target}.")
    if spec.auto:
        lines += ["", f"--auto: N and beta chosen per problem from held-out training strings within "
                      f"its share of --budget {spec.options['budget']:g} CPU seconds (problems/NAME/"
                      f"{AUTO_JSON} holds every candidate, its held-out score and SE, CPU spent):", ""]
        lines += [f"- {r['problem']}: N = {r['states']}, beta = {r['beta']}, CPU {r['cpu_seconds']:.1f} s "
                  f"of {r['budget']:.1f} s" for r in rows]
    if spec.budgeted:
        lines += ["", f"--budget {spec.options['budget']:g} CPU seconds shared among the problems "
                      f"({spec.shares}), each problem's share split evenly among its {spec.chains} "
                      f"chain(s), each chain's sweeps sized to its part."]
    if failures:
        lines += ["", "## Failures", ""] + [f"- {f['problem']}: {f['error']}" for f in failures]
    text = "\n".join(lines) + "\n"
    atomic_write(results / "summary.md", lambda tmp: Path(tmp).write_text(text))
    write_json(results / "summary.json", {"identity": spec.identity(), "code": code,
                                          "compile_target": target, "rows": rows,
                                          "failures": failures, "mean_ratio_minus_one": mean})
    if ratios:
        plot_ratios(results / "ratios.png", rows)


def plot_ratios(path: Path, rows: list[dict]) -> None:
    """Ratio - 1 per problem (log scale) beside this run's mean and the paper's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scored = [r for r in rows if r["ratio"] is not None and math.isfinite(r["ratio"])]
    fig, ax = plt.subplots(figsize=(0.22 * len(scored) + 5.0, 3.5))
    values = [max(r["ratio"] - 1.0, 1e-7) for r in scored]
    ax.plot(range(len(scored)), values, "o", color="tab:blue", label="ratio - 1")
    ax.axhline(PAPER_MEAN_RATIO_MINUS_ONE, color="tab:red", ls="--",
               label=f"paper mean {PAPER_MEAN_RATIO_MINUS_ONE}")
    ax.axhline(float(np.mean([r["ratio"] for r in scored])) - 1.0, color="k", ls=":",
               label="this run's mean")
    ax.set_yscale("log")
    ax.set_xlim(-0.5, len(scored) - 0.5)
    ax.set_xticks(range(len(scored)), [r["problem"] for r in scored], rotation=90)
    ax.set_xlabel("problem")
    ax.set_ylabel("score / min score - 1")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()

    def write(tmp):
        fig.savefig(tmp, format="png", dpi=100)

    try:
        atomic_write(path, write)
    finally:
        plt.close(fig)


# -- command line ----------------------------------------------------------------------------

def _method_defaults(method: str) -> dict[str, Any]:
    from bayesfa.methods import get_method

    p = argparse.ArgumentParser(add_help=False)
    get_method(method).add_arguments(p)
    return vars(p.parse_args([]))


def add_cli(parser: argparse.ArgumentParser, method: str | None) -> None:
    """Register ``bayesfa pautomac run`` under the ``pautomac`` command's ``parser``."""
    from bayesfa.methods import get_method, method_names, positive_int, seed_int
    from bayesfa.selection import parse_grid

    sub = parser.add_subparsers(dest="pautomac_command", required=True, metavar="SUBCOMMAND")
    p = sub.add_parser(
        "run", conflict_handler="resolve", help="run a method over PAutomaC problems on Dask",
        description="Fit METHOD to each problem (after Sect. 4.1's cross-validation with --select), "
                    "combine C final chains by Eq. 6, write the answers, scores and a summary "
                    "into RESULTS. Every fit is a Dask task; a rerun skips finished ones.",
        epilog="`bayesfa pautomac run --method NAME --help` lists NAME's options. Here "
               "--holdout defaults to 0 (the final chains fit every training string).")
    p.add_argument("--data", required=True, metavar="DIR", help="folder of NAME.pautomac.train/.test")
    p.add_argument("--problems", required=True, metavar="LIST",
                   help="comma-separated problem numbers, ranges (5-9) or file prefixes")
    p.add_argument("--method", required=True, choices=method_names(), metavar="NAME",
                   help=f"one of: {', '.join(method_names())}")
    known = method is not None and method in method_names()
    defaults = _method_defaults(method) if known else {}
    if known:
        get_method(method).add_arguments(p.add_argument_group(f"options of {method}"))
    grid_help = "; with --select, a comma-separated grid"
    if "states" in defaults:
        p.add_argument("--states", type=lambda t: parse_grid(t, int), default=None,
                       help=f"number of states N (default {defaults['states']}){grid_help} "
                            f"(default 10,20,...,90)")
    if "beta" in defaults:
        p.add_argument("--beta", type=lambda t: parse_grid(t, float), default=None,
                       help=f"Dirichlet beta (default {defaults['beta']}){grid_help} "
                            f"(default 0.01,0.02,0.05,0.1,0.2,0.5)")
    if "states" in defaults and "beta" in defaults:
        p.add_argument("--folds", type=positive_int, default=10, help="--select: K of K-fold CV; default 10")
        p.add_argument("--one-se", action="store_true", help="--select: one-standard-error rule")
    if "holdout" in defaults:
        p.set_defaults(holdout=0.0)
    p.add_argument("--select", action="store_true",
                   help="choose N then beta by cross-validation first (Sect. 4.1, as bayesfa select)")
    p.add_argument("--chains", type=positive_int, required=True, metavar="C",
                   help="final chains per problem (one Dask task each)")
    p.add_argument("--seed", type=seed_int, required=True, metavar="S")
    p.add_argument("--scheduler", required=True, metavar="local|tcp://HOST:PORT",
                   help="local: a LocalCluster of --workers processes; or a dask scheduler's address")
    p.add_argument("--workers", type=positive_int, default=None, metavar="W",
                   help="worker processes of the local cluster; default 1")
    p.add_argument("--out", required=True, metavar="RESULTS",
                   help="results folder: new, empty, or this same run (finished units are kept)")
    p.add_argument("--shares", choices=SHARES, default=None,
                   help="--budget TOTAL (--auto's, or ipfa's own): share it among the problems "
                        "evenly (default) or in proportion to their training tokens (the rule of "
                        "--auto runs made before it)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run, _method_defaults=defaults)


def spec_from_args(args) -> RunSpec:
    defaults = args._method_defaults
    options = {k: getattr(args, k) for k in defaults}
    if getattr(args, "shards", None) is not None:
        raise InputError("--shards splits one fit across a cluster (bayesfa fit); a pautomac run "
                         "spreads whole fits over its workers")
    for key in ("auto", "budget", "schedule", "final_blocked_every", "search_blocked_every"):
        # --auto's (bayesfa.samplers.pfa.auto.AUTO_OPTIONS): absent unless given
        if hasattr(args, key):
            options[key] = getattr(args, key)
    native = "budget" in defaults  # a method's own --budget (ipfa), not --auto's
    if options.get("auto") or "schedule" in options or ("budget" in options and not native):
        if "schedule" in options:
            raise InputError("--schedule reproduces one `bayesfa fit --auto`; a pautomac run "
                             "records each problem's in problems/NAME/auto.json")
        if not options.get("auto") or options.get("budget") is None:
            raise InputError("--auto and --budget TOTAL go together (TOTAL: CPU seconds for all problems)")
        if args.select:
            raise InputError("--auto chooses N and beta itself; drop --select")
    elif native and options.get("budget") is not None:
        if args.select:
            raise InputError(f"--budget sizes each {args.method} chain's sweeps; drop --select")
    elif args.shares is not None:
        raise InputError("--shares shares --budget among the problems; it needs --budget")
    grids = {}
    for key in ("states", "beta"):
        if key in defaults:
            grids[key] = getattr(args, key)
            options[key] = defaults[key] if grids[key] is None else grids[key][0]
    if args.select:
        if "states" not in defaults or "beta" not in defaults:
            raise InputError(f"--select chooses --states and --beta, which {args.method} does not have")
        return RunSpec(args.method, options, args.seed, args.chains, True,
                       grids["states"] or list(PAPER_STATES_GRID), grids["beta"] or list(PAPER_BETA_GRID),
                       args.folds, args.one_se)
    for key, grid in grids.items():
        if grid is not None and len(grid) > 1:
            raise InputError(f"--{key} {','.join(map(str, grid))}: a grid needs --select")
    return RunSpec(args.method, options, args.seed, args.chains, shares=args.shares or "even")


def cmd_run(args) -> int:
    """``bayesfa pautomac run``: exit 0, or 1 (one line naming them) if some problem failed."""
    from bayesfa.cluster import check_scheduler

    check_scheduler(args.scheduler, args.workers)
    spec = spec_from_args(args)
    problems = find_problems(args.data, parse_problems(args.problems))
    rows, failures = run(spec, problems, args.out, args.scheduler, args.workers, args.quiet)
    if not args.quiet:
        print(f"bayesfa: {len(rows)} problem(s) done; summary in {Path(args.out) / 'summary.md'}",
              file=sys.stderr)
    if failures:
        print(f"bayesfa: error: {len(failures)} problem(s) failed: "
              + "; ".join(f"{f['problem']} ({f['error']})" for f in failures), file=sys.stderr)
        return 1
    return 0
