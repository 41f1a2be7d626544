"""Mutation testing of every kernel and front (issue 39, item 3): one resumable command over
``bayesfa/samplers/`` and ``bayesfa/learners/``, with the fast tests and ``bayesfa validate``
as the killer. Not in CI (hours of CPU); its per-file score goes to RESULTS.

    pip install cosmic-ray                     # not a bayesfa dependency (any venv: --cosmic-ray)
    python benchmarks/mutation/run.py plan     # files, their killer tests and methods, no run
    nice -n 19 python benchmarks/mutation/run.py run [--files PATTERN ...] [--sample K]
    python benchmarks/mutation/run.py report [--also WORK ...]  # results/mutation/summary.*

How. ``run`` copies the repository at HEAD (``git archive``) to ``--work`` once (default
``../mutation-work`` beside the repository; the copy's commit is recorded in
``WORK/commit`` and a later ``run`` at a commit whose ``bayesfa/``, ``tests/`` or
``pyproject.toml`` differ is refused, so one session's verdicts are all about one code) and makes, per target file, a cosmic-ray session
(``WORK/sessions/SLUG.{toml,sqlite,sh}``). cosmic-ray mutates the copy in place, one mutant at
a time, and runs the file's test command:

1. the fast tests that import the file's module (directly, by its dotted name or ``from
   PACKAGE import NAME``) or, for a method's front, get that method by name
   (``get_method``), through ``warm_runner.py``, ``-x``: a failure is a kill. numba's JIT
   is off where those tests pass so on the unmutated copy (each mutant would otherwise
   recompile the kernels), else on (``--jit on``: always on, cheaper for a kernel whose tests
   run long sweeps);
2. if they pass, ``bayesfa validate METHOD --seed 0`` for each method whose front reaches the
   file through bayesfa's imports without passing through another method's front
   (:func:`methods_of`, ``--validate-scope near``; ``all`` takes every method whose front
   reaches it at all: eleven for a CGS-PFA kernel, since the CVB and HPYP fronts import
   ``cgs_pfa`` for its hold-out split, at ~1-3 CPU minutes each per surviving mutant; JIT on): a
   failing check is a kill. ``--no-validate`` leaves this step out (a quick look).

numba's cache lives in ``WORK/numba-cache``; before each mutant the entries of the mutated
file and of every file that imports it (directly or not: numba does not notice a changed
callee in another file) are removed, so no mutant runs another's compiled code.

Before a file's mutants run, its test command must pass on the unmutated copy (else every
"kill" would be a false one, and ``run`` stops). Resumable: a session's sqlite keeps every verdict; ``run`` again continues with the pending
mutants (``cosmic-ray exec`` skips finished jobs). The sqlite lives in the work copy, outside
the repository, so ``report`` also keeps every job's verdict in the committed
``benchmarks/results/mutation/verdicts.json`` (:data:`VERDICTS`): a later ``report`` on a
machine without that work copy reports the file from it, and a later ``run`` at the same code
(:func:`same_code`) copies those verdicts into its new session (sampling them first) instead
of running those mutants again. ``--sample K`` keeps a seeded random sample
of K mutants per file (the rest marked skipped, never counted). A mutant inside an annotation
of a module with ``from __future__ import annotations`` is not run at all (:func:`annotation_spans`:
such annotations are strings never evaluated, so no test can tell the mutant apart; the
``pdia.py`` session at ``0ff782c`` spent 33 of its 103 jobs on them): marked skipped with
:data:`ANNOTATION` as its output, counted apart in the report, never sampled.

Score per file: killed / (killed + survived), over the mutants that ran (an incompetent
mutant, one that does not import, is counted apart; a time-out is a kill, as cosmic-ray
counts it). Survivors shown equivalent (no behaviour can tell them apart) are listed, with
the reason, in ``benchmarks/mutation/equivalent.json`` as ``{"FILE": {"JOB_ID": "reason"}}``
and are left out of the denominator; ``report`` lists every other survivor.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TARGETS = ("bayesfa/samplers", "bayesfa/learners")
OUT = ROOT / "benchmarks/results/mutation"
EQUIVALENT = HERE / "equivalent.json"
#: What the work copy holds: a later HEAD that changes none of it (only docs, notebooks,
#: results) may go on with the copy's verdicts. The benchmark scripts are in it because tests
#: load some of them (``tests/benchmodules.py``: ``test_auto.py``'s slowed clock is
#: ``auto_overshoot.py``'s; without it ``chains.py``'s killer failed on its unmutated copy).
COPIED = ("bayesfa", "tests", "pyproject.toml", "benchmarks/*.py")
#: CPU seconds a mutant's tests may take with numba's JIT on (they compile the mutated
#: kernels) and off; CPU seconds of one ``validate`` (compiling included). Limits are on CPU,
#: not wall time: on the shared machine a correct run's wall time is several times its CPU.
JIT_CPU, NOJIT_CPU, VALIDATE_CPU = 600, 300, 900
#: cosmic-ray's own limit (wall seconds), a backstop far above the CPU limits
WALL_TIMEOUT = 4 * 3600


# -- what a file is tested by ---------------------------------------------------------------

def module_name(path: Path, root: Path = ROOT) -> str:
    """``bayesfa/samplers/pfa/cgs_pfa.py`` -> ``bayesfa.samplers.pfa.cgs_pfa``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = ROOT) -> set[str]:
    """The bayesfa modules ``path`` imports anywhere in it (function-local imports too),
    relative imports resolved; ``from P import N`` counts ``P.N`` when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in out if m == "bayesfa" or m.startswith("bayesfa.")}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the bayesfa modules it imports (only those that exist as files)."""
    files = {module_name(p, root): p for p in (root / "bayesfa").rglob("*.py")}
    return {m: {i for i in imports_of(p, root) if i in files} for m, p in files.items()}


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` reaches through imports (:func:`reach_near` with no stops)."""
    return reach_near(graph, start, set())


def registry(root: Path = ROOT) -> dict[str, str]:
    """``bayesfa.methods.REGISTRY`` read from the source (method -> its front's module)."""
    tree = ast.parse((root / "bayesfa/methods.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "REGISTRY" for t in targets):
                value = ast.literal_eval(node.value)
                return {name: target.split(":")[0] for name, target in value.items()}
    raise SystemExit("bayesfa/methods.py has no REGISTRY")


def reach_near(graph: dict[str, set[str]], start: str, stops: set[str]) -> set[str]:
    """What ``start`` reaches through imports without going on through a module of ``stops``
    (other than ``start``; the stops reached are included)."""
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        if m != start and m in stops:
            continue
        todo.extend(graph.get(m, ()))
    return seen


def methods_of(module: str, graph: dict[str, set[str]], methods: dict[str, str],
               scope: str = "all") -> list[str]:
    """The methods whose front reaches ``module`` through bayesfa's imports. ``scope="near"``:
    only those that reach it without passing through another method's front (``hpyp`` imports
    ``cgs_pfa`` for its hold-out split, so every CGS-PFA kernel is in its reach; the kernel is
    validated by the methods that call it, ``cgs-pfa``, ``ipfa``, ``cgs-sg``)."""
    if scope == "all":
        return sorted(name for name, front in methods.items() if module in reach(graph, front))
    fronts = set(methods.values())
    return sorted(name for name, front in methods.items()
                  if module in reach_near(graph, front, fronts))


#: Test files that are no killer though they name a module: this runner's own tests (they
#: name kernels as data and read ``benchmarks/``, which the work copy does not hold, so they
#: failed on every unmutated copy: ``_cgs_pfa_kernel.py``'s and ``_ipfa_kernel.py``'s killers)
NOT_KILLERS = frozenset({"test_mutation_runner.py"})
#: Tests left out of a killer (``--deselect``) though their file is in it: they read files
#: the work copy does not hold (``benchmarks/``, ``notebooks/``), so they failed on every
#: unmutated copy (``chains.py``'s killer, which holds ``test_architecture.py``; ``cgs_pfa.py``'s,
#: which holds ``test_guarded_output.py``, whose test runs the benchmark scripts)
NOT_KILLER_TESTS = ("tests/test_architecture.py::test_notebooks_and_benchmarks_import_what_exists",
                    "tests/test_guarded_output.py::test_benchmark_out_never_replaces_a_foreign_file")


def pytest_args(tests: list[str]) -> list[str]:
    """The killer's pytest arguments: ``tests`` and a ``--deselect`` for each of their
    :data:`NOT_KILLER_TESTS`."""
    out = list(tests)
    for node in NOT_KILLER_TESTS:
        if node.split("::")[0] in tests:
            out += ["--deselect", node]
    return out


def tests_of(module: str, root: Path = ROOT, names: tuple[str, ...] = ()) -> list[str]:
    """The test files that import ``module`` directly (its dotted name, or ``from PARENT
    import LEAF``), or that get by name (``get_method("NAME")``) a method of ``names``, those
    whose front ``module`` is (tests/test_progress.py reaches hmm-em so only)."""
    parent, _, leaf = module.rpartition(".")
    pats = [re.compile(rf"\b{re.escape(module)}(?!\w)(?!\.\w)"),  # not a submodule's name
            re.compile(rf"from\s+{re.escape(parent)}\s+import\s+[^\n]*\b{re.escape(leaf)}\b")]
    pats += [re.compile(rf"""get_method\(\s*["']{re.escape(n)}["']""") for n in names]
    return sorted(str(p.relative_to(root)) for p in (root / "tests").glob("test_*.py")
                  if p.name not in NOT_KILLERS
                  and any(pat.search(p.read_text(encoding="utf-8")) for pat in pats))


def targets(root: Path = ROOT, patterns: list[str] | None = None) -> list[Path]:
    files = sorted(p for t in TARGETS for p in (root / t).rglob("*.py"))
    files = [p for p in files if p.read_text(encoding="utf-8").strip()]  # an empty __init__: no mutants
    if patterns:
        files = [p for p in files if any(Path(str(p.relative_to(root))).match(pat) or pat in str(p)
                                         for pat in patterns)]
    return files


def plan(root: Path = ROOT, patterns: list[str] | None = None, scope: str = "near") -> list[dict]:
    graph, methods = import_graph(root), registry(root)
    rows = []
    for p in targets(root, patterns):
        m = module_name(p, root)
        names = tuple(sorted(n for n, front in methods.items() if front == m))
        rows.append({"file": str(p.relative_to(root)), "module": m,
                     "tests": tests_of(m, root, names),
                     "methods": methods_of(m, graph, methods, scope)})
    return rows


def slug(file: str) -> str:
    return file.replace("/", "__").removesuffix(".py")


# -- running ---------------------------------------------------------------------------------

def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def same_code(a: str, b: str) -> bool:
    """Whether commits ``a`` and ``b`` hold the same :data:`COPIED` files, the runner's own
    tests (:data:`NOT_KILLERS`, never run by a killer) aside: a session's verdicts at ``a``
    are then verdicts at ``b``. Each glob matches within one folder (``benchmarks/*.py`` is
    not ``benchmarks/mutation/run.py``, the runner itself). An unknown commit is not the same
    code. ``standing.py`` asks this function too."""
    if a == b:
        return True
    return subprocess.run(
        ["git", "-C", str(ROOT), "diff", "--quiet", a, b, "--", *(f":(glob){c}" for c in COPIED),
         *(f":(exclude,glob)tests/{t}" for t in sorted(NOT_KILLERS))],
        capture_output=True).returncode == 0


def prepare_work(work: Path) -> str:
    """The repository's HEAD copied to ``work/main`` once; its commit."""
    head = _git("rev-parse", "--short", "HEAD")
    stamp = work / "commit"
    if stamp.exists():
        have = stamp.read_text().strip()
        if not same_code(have, head):
            raise SystemExit(f"run.py: {work} holds commit {have}, HEAD is {head}: finish or move "
                             f"that work folder (its verdicts are about {have}), or give --work")
        return head
    (work / "main").mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD", *COPIED], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(work / "main")], input=archive, check=True)
    stamp.write_text(head + "\n")
    return head


def restore_target(work: Path, file: str) -> bool:
    """``work/main/file`` as at the work copy's commit: cosmic-ray writes each mutant into the
    file and puts it back after the job, so a session stopped mid-job leaves that mutant in
    place, and every later job of the resumed session would run on two mutations. Returns
    whether it had to be restored (said on stderr)."""
    commit = (work / "commit").read_text().strip()
    pristine = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{file}"], check=True,
                              capture_output=True).stdout
    target = work / "main" / file
    if target.read_bytes() == pristine:
        return False
    target.write_bytes(pristine)
    print(f"run.py: {file}: restored from {commit} (a session stopped mid-mutant had left its "
          f"mutation in the work copy)", file=sys.stderr)
    return True


def dependents(module: str, graph: dict[str, set[str]]) -> set[str]:
    """``module`` and every bayesfa module that reaches it through imports (whose numba cache
    may hold its compiled code: numba does not track a callee in another file)."""
    return {m for m in graph if module in reach(graph, m)}


def session_files(work: Path, row: dict, python: str, validate: bool, jit: bool,
                  graph: dict[str, set[str]]) -> tuple[Path, Path, Path]:
    sessions = work / "sessions"
    sessions.mkdir(exist_ok=True)
    s = slug(row["file"])
    toml, db, script, sock = (sessions / f"{s}.toml", sessions / f"{s}.sqlite",
                              sessions / f"{s}.sh", sessions / f"{s}.sock")
    main, cache = work / "main", work / "numba-cache"
    stems = sorted({m.rpartition(".")[2] for m in dependents(row["module"], graph)})
    names = " -o ".join(f"-name '{st}.*'" for st in stems)
    lines = ["#!/bin/bash", f"# killer of {row['file']}: its tests (numba JIT "
             f"{'on' if jit else 'off'}), then validate of its methods", f"cd {main}",
             f"export PYTHONPATH={main} NUMBA_CACHE_DIR={cache}",
             # compiled code of the mutated file, and of files that may have inlined it, is stale
             f"find {cache} \\( {names} \\) -delete 2>/dev/null"]
    # a time-out is a kill (as cosmic-ray counts it), marked TIMEOUT in the job's output so
    # that report counts it apart
    if row["tests"]:
        lines += [f"{python} -S {HERE / 'warm_runner.py'} run {sock} {WALL_TIMEOUT - 60}",
                  'rc=$?; [ $rc = 2 ] && { echo "TIMEOUT tests"; exit 1; }; [ $rc = 0 ] || exit 1']
    if validate:
        for m in row["methods"]:
            lines += [f"( ulimit -t {VALIDATE_CPU}; exec {python} -m bayesfa.cli validate {m} "
                      "--seed 0 >/dev/null 2>&1 )",
                      # 152 = 128 + SIGXCPU (the CPU limit), 137 = 128 + SIGKILL (its hard limit)
                      f'rc=$?; case $rc in 0) ;; 152|137) echo "TIMEOUT validate {m}"; exit 1;; '
                      '*) exit 1;; esac']
    if not row["tests"] and not (validate and row["methods"]):
        lines.append("exit 0  # nothing tests this file: every mutant survives")
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    toml.write_text(f'[cosmic-ray]\nmodule-path = "{main / row["file"]}"\ntimeout = {WALL_TIMEOUT:.1f}\n'
                    f'excluded-modules = []\ntest-command = "bash {script}"\n\n'
                    f'[cosmic-ray.distributor]\nname = "local"\n')
    return toml, db, sock


def _serve(row: dict, work: Path, python: str, sock: Path, jit: bool):
    """The warm test server of ``row``'s tests, or None when no test imports the file."""
    if not row["tests"]:
        return None
    env = dict(os.environ, NUMBA_DISABLE_JIT="0" if jit else "1", PYTHONPATH=str(work / "main"),
               WARM_CPU=str(JIT_CPU if jit else NOJIT_CPU), WARM_TIMEOUT=str(WALL_TIMEOUT - 120),
               NUMBA_CACHE_DIR=str(work / "numba-cache"))
    if sock.exists():
        sock.unlink()
    server = subprocess.Popen([python, str(HERE / "warm_runner.py"), "serve", str(sock),
                               str(work / "main"), "--", *pytest_args(row["tests"])], env=env)
    for _ in range(1200):
        if sock.exists():
            break
        time.sleep(0.1)
    return server


def _stop(server) -> None:
    if server is not None:
        server.send_signal(signal.SIGTERM)
        server.wait()


def run_file(row: dict, work: Path, args, graph: dict[str, set[str]]) -> None:
    """``row``'s session: made and sampled once, its killer checked on the unmutated copy
    (numba's JIT off where its tests pass so, which is much faster; else on), then run."""
    validate = not args.no_validate
    server = None
    jits = {"auto": (False, True), "on": (True,), "off": (False,)}[args.jit]
    toml, db, sock = session_files(work, row, args.python, validate, jits[0], graph)
    if not db.exists():
        # a new session: made, sampled, and given the committed verdicts at the same code
        subprocess.run([args.cosmic_ray, "init", str(toml), str(db)], check=True, cwd=work)
        done = judged(load_verdicts(Path(args.out)).get(row["file"]),
                      (work / "commit").read_text().strip())
        known = work / "sessions" / f"{slug(row['file'])}.judged.json"
        known.write_text(json.dumps(done))
        subprocess.run([cr_python(args.cosmic_ray), __file__, "_sample", str(db),
                        str(args.sample), str(args.seed), str(known)], check=True, cwd=work)
        if done:
            print(f"run.py: {row['file']}: {len(done)} verdicts copied from "
                  f"{Path(args.out) / VERDICTS} (commit {done[0]['commit']})", file=sys.stderr)
    if not _pending(db, args.cosmic_ray):
        print(f"run.py: {row['file']}: no pending mutant", file=sys.stderr)
        return
    restore_target(work, row["file"])
    # compiled code of another file's last mutant may live on in the cache, in the entries of
    # the files that import it (those of this file's dependents are removed before each mutant)
    shutil.rmtree(work / "numba-cache", ignore_errors=True)
    try:
        for jit in jits:
            toml, db, sock = session_files(work, row, args.python, validate, jit, graph)
            server = _serve(row, work, args.python, sock, jit)
            # the killer must pass on the unmutated copy, or every "kill" would be a false one
            if subprocess.run(["bash", str(toml.with_suffix(".sh"))], cwd=work).returncode == 0:
                break
            _stop(server)
            server = None
        else:
            raise SystemExit(f"run.py: {row['file']}: its test command fails on the unmutated "
                             f"copy (bash {toml.with_suffix('.sh')}): fix that first")
        print(f"run.py: {row['file']}: tests {len(row['tests'])} (JIT {'on' if jit else 'off'}), "
              f"validate {','.join(row['methods']) if validate and row['methods'] else '-'}",
              file=sys.stderr)
        subprocess.run([args.cosmic_ray, "exec", str(toml), str(db)], check=True, cwd=work)
    finally:
        _stop(server)


def cr_python(cr: str) -> str:
    """The interpreter cosmic-ray runs in (its API reads the sessions)."""
    return str(Path(shutil.which(cr) or cr).with_name("python"))


def _pending(db: Path, cr: str) -> int:
    """How many of a session's jobs are pending (in cosmic-ray's interpreter)."""
    return int(subprocess.run([cr_python(cr), __file__, "_pending", str(db)], check=True,
                              capture_output=True, text=True).stdout)


#: the output of a job not run because its mutation is inside an annotation (:func:`sample`)
ANNOTATION = "annotation: never evaluated (from __future__ import annotations)"


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The ``((line, col), (end_line, end_col))`` of every annotation in ``source`` (function
    parameters and returns, annotated assignments) when the module has ``from __future__
    import annotations`` (PEP 563: annotations are kept as strings and never evaluated), else
    none (they are evaluated, at definition or assignment). Lines from 1, columns from 0."""
    tree = ast.parse(source)
    future = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                 and any(a.name == "annotations" for a in node.names) for node in tree.body)
    if not future:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            found += [p.annotation for p in params if p is not None and p.annotation is not None]
            if node.returns is not None:
                found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in found]


def in_annotation(start: tuple[int, int], end: tuple[int, int], spans) -> bool:
    """Whether the source range ``start``-``end`` lies inside one of ``spans``."""
    return any(lo <= tuple(start) and tuple(end) <= hi for lo, hi in spans)


def choose(keys: list[tuple], k: int, seed: int, done: list[dict] = ()) -> tuple[dict, set]:
    """Which of a new session's jobs (``keys``: each job's ``(line, operator, occurrence)``,
    in the session's job-id order) take a verdict judged at the same code (``done``, from
    :func:`judged`; cosmic-ray's job ids are new at each ``init``, so they are matched by
    their mutation), and which are skipped: for ``k > 0``, a seeded random sample of ``k`` is
    kept, the judged jobs first (so a session made anew at the same code takes the sample
    already judged). Without a judged job the sample is the one before :data:`VERDICTS`
    existed. Returns ``({index: judged job}, {skipped index})``."""
    import random

    by_key = {(j["line"], j["operator"], j["occurrence"]): j for j in done}
    copied = {i: by_key[key] for i, key in enumerate(keys) if key in by_key}
    if not k:
        return copied, set()
    rest = [i for i in range(len(keys)) if i not in copied]
    keep = {rest[i] for i in random.Random(seed).sample(range(len(rest)),
                                                        min(max(0, k - len(copied)), len(rest)))}
    return copied, {i for i in rest if i not in keep}


def sample(db: Path, k: int, seed: int, done: list[dict] = ()) -> None:
    """A new session's jobs as :func:`choose` says: the judged ones get their verdict (its
    original job id and commit in the output, :data:`IMPORTED`), the others not sampled are
    marked skipped."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    tests = {"killed": TestOutcome.KILLED, "timeout": TestOutcome.KILLED,
             "survived": TestOutcome.SURVIVED, "incompetent": TestOutcome.INCOMPETENT}
    with use_db(str(db), WorkDB.Mode.open) as wdb:
        items = sorted(wdb.pending_work_items, key=lambda x: x.job_id)
        spans = {}
        for x in items:
            path = Path(x.mutations[0].module_path)
            if path not in spans:
                spans[path] = annotation_spans(path.read_text())
        notes = {x.job_id for x in items if in_annotation(x.mutations[0].start_pos,
                                                          x.mutations[0].end_pos,
                                                          spans[Path(x.mutations[0].module_path)])}
        for job in sorted(notes):
            wdb.set_result(job, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=ANNOTATION))
        items = [x for x in items if x.job_id not in notes]
        keys = [(x.mutations[0].start_pos[0], x.mutations[0].operator_name,
                 x.mutations[0].occurrence) for x in items]
        copied, skipped = choose(keys, k, seed, done)
        for i, j in copied.items():
            wdb.set_result(items[i].job_id, WorkResult(
                worker_outcome=WorkerOutcome.NORMAL, test_outcome=tests[j["outcome"]],
                output=f"verdicts.json: job {j['job']} at {j['commit']} ({j['outcome']})"
                       + ("\nTIMEOUT (copied)" if j["outcome"] == "timeout" else "")))
        for i in sorted(skipped):
            wdb.set_result(items[i].job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                                       output="not in the random sample"))


# -- report ----------------------------------------------------------------------------------

#: The output cosmic-ray keeps for a verdict copied from :data:`VERDICTS` into a new session
#: (:func:`sample`): the original job id, commit and outcome
IMPORTED = re.compile(r"^verdicts\.json: job (\w+) at (\w+) \((\w+)\)")
OUTCOMES = ("killed", "timeout", "survived", "incompetent")


def outcomes(db: Path) -> dict:
    """Counts of a session's verdicts, its survivors and every judged job (read with
    cosmic-ray's API). A job is ``{"job", "line", "operator", "occurrence", "outcome"}``,
    outcome one of :data:`OUTCOMES` (``timeout``: a kill by time-out); a verdict copied from
    :data:`VERDICTS` keeps its original job id (which ``equivalent.json`` names)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    n = {"killed": 0, "timeouts": 0, "survived": 0, "incompetent": 0, "skipped": 0,
         "annotations": 0, "pending": 0}
    survivors, jobs = [], []
    with use_db(str(db), WorkDB.Mode.open) as wdb:
        n["pending"] = sum(1 for _ in wdb.pending_work_items)
        for item, result in wdb.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                n["annotations" if result.output == ANNOTATION else "skipped"] += 1
                continue
            output = result.output or ""
            imported = IMPORTED.match(output)
            m = item.mutations[0]
            job = {"job": imported.group(1) if imported else item.job_id, "line": m.start_pos[0],
                   "operator": m.operator_name, "occurrence": m.occurrence}
            if result.test_outcome == TestOutcome.INCOMPETENT:
                n["incompetent"] += 1
                job["outcome"] = "incompetent"
            elif result.test_outcome == TestOutcome.SURVIVED:
                n["survived"] += 1
                survivors.append(dict(job))
                job["outcome"] = "survived"
            else:
                n["killed"] += 1  # a time-out is a kill, also counted apart
                timeout = output == "timeout" or "TIMEOUT" in output
                n["timeouts"] += timeout
                job["outcome"] = "timeout" if timeout else "killed"
            jobs.append(job)
    return {**n, "survivors": survivors, "jobs": jobs}


# -- verdicts kept in the repository ---------------------------------------------------------
# A session's sqlite lives in a work copy outside the repository, gone on a fresh machine.
# ``report`` keeps each file's verdicts in ``OUT/verdicts.json`` (committed with the
# summary): ``{"files": {FILE: ENTRY}}``, ENTRY = ``{"commit", "source", "skipped",
# "pending", "jobs": [JOB, ...], "unlisted": {OUTCOME: COUNT}}``, JOB as in :func:`outcomes`;
# ``unlisted`` counts verdicts whose jobs were not kept (the sessions reported before this
# file existed: ``summary.json`` kept only the counts and the survivors). ``report`` reports a
# file whose session is absent from every work copy from its entry; ``run`` copies the
# verdicts of an entry at the same code into a new session instead of running them again.

VERDICTS = "verdicts.json"


def entry_of(o: dict, commit: str, source: str) -> dict:
    """A session's :func:`outcomes` as an entry of :data:`VERDICTS` at ``commit``. Verdicts
    that ``o`` counts but does not list (no ``jobs``: a reader that gives counts only) are
    kept as counts, the survivors as jobs."""
    jobs = [dict(j) for j in o.get("jobs", [dict(s, outcome="survived") for s in o["survivors"]])]
    listed = {k: sum(j["outcome"] == k for j in jobs) for k in OUTCOMES}
    have = {"killed": o["killed"] - o["timeouts"], "timeout": o["timeouts"],
            "survived": o["survived"], "incompetent": o["incompetent"]}
    unlisted = {k: have[k] - listed[k] for k in OUTCOMES if have[k] != listed[k]}
    return {"commit": commit, "source": source, "skipped": o["skipped"],
            "annotations": o.get("annotations", 0), "pending": o["pending"],
            "jobs": jobs, "unlisted": unlisted}


def entry_from_summary(row: dict, equivalent: dict) -> dict:
    """An entry of :data:`VERDICTS` from a row of a ``summary.json`` written before it
    (counts and live survivors; the equivalent survivors are ``equivalent.json``'s jobs of
    the file, whose line and operator it did not keep)."""
    eq = [{"job": j, "line": None, "operator": None, "occurrence": None, "outcome": "survived"}
          for j in sorted(equivalent.get(row["file"], {}))]
    o = {**row, "survivors": [*row["survivors"], *eq]}
    o["jobs"] = [dict(s, outcome="survived") for s in o["survivors"]]
    return entry_of(o, row["commit"], "summary.json (counts and survivors only)")


def tally(entry: dict) -> dict:
    """An entry's counts and survivors, as :func:`outcomes` gives them."""
    n = {k: sum(j["outcome"] == k for j in entry["jobs"]) + entry["unlisted"].get(k, 0)
         for k in OUTCOMES}
    return {"killed": n["killed"] + n["timeout"], "timeouts": n["timeout"],
            "survived": n["survived"], "incompetent": n["incompetent"],
            "skipped": entry["skipped"], "annotations": entry.get("annotations", 0),
            "pending": entry["pending"],
            "survivors": [{k: j[k] for k in ("job", "line", "operator", "occurrence")}
                          for j in entry["jobs"] if j["outcome"] == "survived"]}


def load_verdicts(out: Path) -> dict:
    path = out / VERDICTS
    return json.loads(path.read_text())["files"] if path.exists() else {}


def judged(entry: dict | None, commit: str) -> list[dict]:
    """The jobs of ``entry`` that a new session at ``commit`` need not run again: those
    judged at the same code (:func:`same_code`)."""
    if not entry or not same_code(entry["commit"], commit):
        return []
    return [dict(j, commit=entry["commit"]) for j in entry["jobs"] if j["operator"] is not None]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """The exact (Clopper-Pearson) interval of a binomial proportion, ``k`` of ``n``."""
    if n == 0:
        return None, None
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def report(work: Path, out: Path, read=None, also: list[Path] | None = None) -> dict:
    """Per-file scores into ``out``/summary.{json,md}, through the guarded writer (a file it
    did not write is refused). ``read(db)``: a session's :func:`outcomes` (by default in this
    interpreter; :func:`main` reads them in cosmic-ray's when this one lacks it). ``also``:
    further work copies (at other commits) whose sessions are reported too, each row with the
    commit of the copy its session ran in (a file's session in ``work`` comes first, then in
    ``also``'s order)."""
    sys.path.insert(0, str(HERE.parent))
    from guarded_out import check_out, write_out_json, write_out_text

    read = read or outcomes
    check_out(out / "summary.json", out / "summary.md", out / VERDICTS)
    equivalent = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}
    works = [w for w in [work, *(also or [])] if (w / "commit").exists()]
    commits = {w: (w / "commit").read_text().strip() for w in works}
    commit = commits[work] if work in commits else _git("rev-parse", "--short", "HEAD")
    # the committed verdicts, and the rows of a summary written before them
    entries = load_verdicts(out)
    old = out / "summary.json"
    for r in json.loads(old.read_text())["files"] if old.exists() else []:
        entries.setdefault(r["file"], entry_from_summary(r, equivalent))
    rows = []
    for row in plan(work / "main" if work in commits else ROOT):
        found = [w for w in works if (w / "sessions" / f"{slug(row['file'])}.sqlite").exists()]
        if found:  # a session on this machine: its verdicts replace the committed ones
            db = found[0] / "sessions" / f"{slug(row['file'])}.sqlite"
            entries[row["file"]] = entry_of(read(db), commits[found[0]], "session")
        elif row["file"] not in entries:
            continue
        entry = entries[row["file"]]
        o = tally(entry)
        eq = equivalent.get(row["file"], {})
        live = [s for s in o["survivors"] if s["job"] not in eq]
        denom = o["killed"] + len(live)
        lo, hi = clopper_pearson(o["killed"], denom)
        rows.append({"file": row["file"], "commit": entry["commit"],
                     **{k: o.get(k, 0) for k in (
                         "killed", "timeouts", "survived", "incompetent", "skipped",
                         "annotations", "pending")},
                     "ran": o["killed"] + o["survived"] + o["incompetent"],
                     "equivalent": len(o["survivors"]) - len(live),
                     "score": o["killed"] / denom if denom else None, "score_95": [lo, hi],
                     # every mutant of the file ran (--sample 0): the score is the file's own
                     "exhaustive": o.get("skipped", 0) == 0 and o.get("pending", 0) == 0,
                     "survivors": live})
    summary = {"commit": commit, "commits": sorted({r["commit"] for r in rows}),
               "command": "python benchmarks/mutation/run.py run; "
               "python benchmarks/mutation/run.py report", "files": rows}
    write_out_json(out / "summary.json", summary)
    write_out_json(out / VERDICTS, {
        "about": "each file's mutation verdicts (benchmarks/mutation/run.py, VERDICTS): the "
                 "session at the entry's commit; report reads them where no work copy holds "
                 "the file's session, run copies them into a new session at the same code",
        "files": dict(sorted(entries.items()))})
    md = ["Mutation score per file, each at the commit of its work copy (column commit; "
          "`python benchmarks/mutation/run.py run`, then `report`): killed / (killed + "
          "survived), equivalent survivors left out; time-outs are kills (as cosmic-ray counts them), also shown apart; 95 % interval: "
          "Clopper-Pearson, for the file's score when the mutants ran are a random sample of "
          "its mutants (`--sample`; skipped: not in the sample); \"exact\" where every mutant "
          "of the file ran (`--sample 0`), so the score is the file's own; annotations: "
          "mutants inside annotations of a module with `from __future__ import annotations`, "
          "never evaluated, so not run (sessions made before the runner knew them list such "
          "mutants as equivalent instead).", "",
          "| file | commit | ran | killed | of which time-outs | survived | equivalent | "
          "incompetent | pending | skipped | annotations | score | 95 % interval |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        score = "-" if r["score"] is None else f"{100 * r['score']:.1f} %"
        ci = "-" if r["score"] is None else "exact" if r["exhaustive"] else \
            f"{100 * r['score_95'][0]:.0f}-{100 * r['score_95'][1]:.0f} %"
        md.append(f"| {r['file']} | `{r['commit']}` | {r['ran']} | {r['killed']} | "
                  f"{r['timeouts']} | {len(r['survivors'])} | {r['equivalent']} | {r['incompetent']} | "
                  f"{r['pending']} | {r['skipped']} | {r['annotations']} | {score} | {ci} |")
    write_out_text(out / "summary.md", "\n".join(md) + "\n")
    print("\n".join(md))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["_sample"]:  # in cosmic-ray's interpreter, from run_file
        sample(Path(argv[1]), int(argv[2]), int(argv[3]),
               json.loads(Path(argv[4]).read_text()) if len(argv) > 4 else [])
        return 0
    if argv[:1] == ["_pending"]:  # in cosmic-ray's interpreter, from run_file
        from cosmic_ray.work_db import WorkDB, use_db

        with use_db(argv[1], WorkDB.Mode.open) as wdb:
            print(sum(1 for _ in wdb.pending_work_items))
        return 0
    if argv[:1] == ["_outcomes"]:  # in cosmic-ray's interpreter, from report
        print(json.dumps(outcomes(Path(argv[1]))))
        return 0
    p.add_argument("command", choices=("plan", "run", "report"))
    p.add_argument("--files", nargs="*", help="only files matching these patterns (glob or substring)")
    p.add_argument("--work", default=str(ROOT.parent / "mutation-work"))
    p.add_argument("--also", nargs="*", default=[], metavar="WORK",
                   help="report: further work copies (other commits) whose sessions are "
                        "reported too, each file at its copy's commit")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--python", default=os.environ.get("BAYESFA_PYTHON", sys.executable),
                   help="the interpreter with bayesfa's dependencies")
    p.add_argument("--cosmic-ray", default=shutil.which("cosmic-ray") or "cosmic-ray")
    p.add_argument("--sample", type=int, default=0, help="K mutants per file (0: all)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-validate", action="store_true", help="the fast tests only")
    p.add_argument("--jit", choices=("auto", "on", "off"), default="auto",
                   help="numba's JIT for the fast tests: auto (default) off where the tests pass "
                        "so on the unmutated copy, else on; on: a kernel's tests in pure Python "
                        "can take far longer than compiling it (tests/test_ipfa.py and "
                        "test_wide_counts.py: over 220 CPU s without the JIT)")
    p.add_argument("--validate-scope", choices=("near", "all"), default="near",
                   help="near (default): validate the methods that reach the file without "
                        "passing through another method's front; all: every method reaching it")
    args = p.parse_args(argv)
    work = Path(args.work).resolve()
    if args.command == "plan":
        for row in plan(ROOT, args.files, args.validate_scope):
            print(f"{row['file']}\n  methods: {', '.join(row['methods']) or '-'}\n  tests: "
                  f"{', '.join(row['tests']) or '- (no test imports it)'}")
        return 0
    read = None
    if args.command in ("run", "report"):
        try:
            import cosmic_ray  # noqa: F401
        except ImportError:  # read the sessions in cosmic-ray's own interpreter
            if shutil.which(args.cosmic_ray) is None:
                p.error("--cosmic-ray: cosmic-ray not found (pip install cosmic-ray, or give its path)")

            def read(db: Path) -> dict:
                return json.loads(subprocess.run([cr_python(args.cosmic_ray), __file__, "_outcomes",
                                                  str(db)], check=True, capture_output=True,
                                                 text=True).stdout)
    if args.command == "report":
        report(work, Path(args.out), read, [Path(w).resolve() for w in args.also])
        return 0
    if shutil.which(args.cosmic_ray) is None:
        p.error("--cosmic-ray: cosmic-ray not found (pip install cosmic-ray, or give its path)")
    prepare_work(work)
    graph = import_graph(work / "main")
    for row in plan(work / "main", args.files, args.validate_scope):
        run_file(row, work, args, graph)
    report(work, Path(args.out), read)
    return 0


if __name__ == "__main__":
    sys.exit(main())
