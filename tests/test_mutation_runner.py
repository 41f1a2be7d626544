"""benchmarks/mutation/run.py (issue 39 item 3): which tests and which methods kill the mutants
of each file. The run itself (hours of CPU, cosmic-ray) is not in CI; these tests of the runner
(about a minute: git work copies, subprocesses) are tooling, not the library, so they are marked
slow and run in .ci/run's slow subset, not in the README's test command."""

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("mutation_run", ROOT / "benchmarks/mutation/run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_file_of_the_samplers_and_learners_is_a_target(run):
    files = {r["file"] for r in run.plan()}
    expected = {str(p.relative_to(ROOT)) for t in run.TARGETS for p in (ROOT / t).rglob("*.py")
                if p.read_text().strip()}
    assert files == expected
    assert "bayesfa/samplers/pfa/_cgs_pfa_kernel.py" in files


def test_a_kernel_is_killed_by_the_tests_that_import_it_and_its_methods(run):
    rows = {r["file"]: r for r in run.plan()}
    kernel = rows["bayesfa/samplers/pfa/_cgs_pfa_kernel.py"]
    assert "tests/test_cgs_pfa.py" in kernel["tests"]
    assert "cgs-pfa" in kernel["methods"] and "alergia" not in kernel["methods"]
    assert rows["bayesfa/learners/greedy/estatemerge.py"]["methods"] == ["estatemerge"]


def test_a_package_name_does_not_match_its_submodules(run, tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_a.py").write_text("from bayesfa.samplers.pfa import cgs_pfa\n")
    (tmp_path / "tests/test_b.py").write_text("import bayesfa.samplers\n")
    assert run.tests_of("bayesfa.samplers", tmp_path) == ["tests/test_b.py"]
    assert run.tests_of("bayesfa.samplers.pfa.cgs_pfa", tmp_path) == ["tests/test_a.py"]


def test_relative_imports_are_resolved(run, tmp_path):
    pkg = tmp_path / "bayesfa/samplers/pfa"
    pkg.mkdir(parents=True)
    (pkg / "front.py").write_text("from . import _k\nfrom ._other import f\n\ndef g():\n"
                                  "    from bayesfa.scoring import x\n")
    assert run.imports_of(pkg / "front.py", tmp_path) >= {
        "bayesfa.samplers.pfa._k", "bayesfa.samplers.pfa._other", "bayesfa.scoring"}


def test_near_scope_validates_the_methods_that_call_a_kernel_not_those_importing_its_front(run):
    graph, methods = run.import_graph(), run.registry()
    kernel = "bayesfa.samplers.pfa._cgs_pfa_kernel"
    near = run.methods_of(kernel, graph, methods, "near")
    assert "cgs-pfa" in near and "ipfa" in near
    assert "hpyp" not in near and "hpyp" in run.methods_of(kernel, graph, methods, "all")
    assert run.methods_of("bayesfa.samplers.pfa._ipfa_kernel", graph, methods, "near") == ["ipfa"]


def test_a_work_copy_goes_on_at_a_commit_that_changes_no_copied_file(run, tmp_path):
    head = run._git("rev-parse", "--short", "HEAD")
    (tmp_path / "commit").write_text(head + "\n")
    assert run.prepare_work(tmp_path) == head
    (tmp_path / "commit").write_text("4b825dc\n")  # git's empty tree: every file differs
    with pytest.raises(SystemExit):
        run.prepare_work(tmp_path)


def test_clopper_pearson_interval(run):
    lo, hi = run.clopper_pearson(10, 10)
    assert hi == 1.0 and abs(lo - 0.025 ** 0.1) < 1e-12  # (alpha/2)^(1/n) when every one is killed
    lo, hi = run.clopper_pearson(0, 5)
    assert lo == 0.0 and abs(hi - (1 - 0.025 ** 0.2)) < 1e-12
    lo, hi = run.clopper_pearson(7, 10)
    assert lo < 0.7 < hi
    assert run.clopper_pearson(0, 0) == (None, None)


def test_session_script_reports_time_outs_apart(run, tmp_path):
    row = {"file": "bayesfa/samplers/pfa/_ipfa_kernel.py", "module": "bayesfa.samplers.pfa._ipfa_kernel",
           "tests": ["tests/test_ipfa.py"], "methods": ["ipfa"]}
    toml, _, _ = run.session_files(tmp_path, row, "python", True, False, run.import_graph())
    script = toml.with_suffix(".sh").read_text()
    assert 'echo "TIMEOUT tests"' in script and "ulimit -t" in script
    assert 'echo "TIMEOUT validate ipfa"' in script
    assert f"timeout = {run.WALL_TIMEOUT:.1f}" in toml.read_text()


def test_warm_runner_limits_cpu_time_and_reports_a_time_out_apart(tmp_path):
    """A child that spins past its CPU limit is a time-out (exit 2), a failing test a kill
    (exit 1), a passing one 0: the limit is on CPU time, so load on the machine is no kill."""
    import os
    import subprocess
    import sys
    import time

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_x.py").write_text(
        "import os\n\ndef test_x():\n    mode = open(os.path.join(os.path.dirname(__file__), 'mode')).read()\n"
        "    while mode == 'spin':\n        pass\n    assert mode == 'pass'\n")
    sock = tmp_path / "s.sock"
    runner = ROOT / "benchmarks/mutation/warm_runner.py"
    # a child that runs pytest on one tiny test uses 0.7-0.8 CPU s on 3.11 (plugin loading) and
    # more on 3.12: 5 s is well above that and still a quick time-out for the spinning child
    env = dict(os.environ, WARM_CPU="5", WARM_TIMEOUT="60")
    server = subprocess.Popen([sys.executable, str(runner), "serve", str(sock), str(tmp_path), "--",
                               "tests/test_x.py"], env=env)
    try:
        for _ in range(600):
            if sock.exists():
                break
            time.sleep(0.1)
        codes = {}
        for mode in ("pass", "fail", "spin"):
            (tmp_path / "tests/mode").write_text(mode)
            codes[mode] = subprocess.run([sys.executable, "-S", str(runner), "run", str(sock), "70"]).returncode
        assert codes == {"pass": 0, "fail": 1, "spin": 2}
    finally:
        server.terminate()
        server.wait()


def test_report_reads_several_work_copies_each_file_at_its_copys_commit(run, tmp_path):
    """``report --also``: sessions of work copies at two commits in one table, each row with
    its copy's commit; a file's session in the first copy wins over one in the others."""
    import json

    kernel, front = "bayesfa/samplers/pfa/_ffbs_kernel.py", "bayesfa/learners/hmm_em.py"
    works = []
    for name, commit, files in (("a", "aaaaaaa", [kernel]), ("b", "bbbbbbb", [kernel, front])):
        w = tmp_path / name
        (w / "sessions").mkdir(parents=True)
        (w / "main").symlink_to(ROOT)
        (w / "commit").write_text(commit + "\n")
        for f in files:
            (w / "sessions" / f"{run.slug(f)}.sqlite").write_text(name)
        works.append(w)

    def read(db):  # session "a": 3 killed, all its mutants; "b": 1 killed, a live survivor, 5 skipped
        n, live, skipped = {"a": (3, 0, 0), "b": (1, 1, 5)}[db.read_text()]
        return {"killed": n, "timeouts": 0, "survived": live, "incompetent": 0,
                "skipped": skipped, "pending": 0,
                "survivors": [{"job": f"live{i}", "line": 1, "operator": "x",
                                             "occurrence": i} for i in range(live)]}

    summary = run.report(works[0], tmp_path / "out", read, [works[1]])
    rows = {r["file"]: r for r in summary["files"]}
    assert set(rows) == {kernel, front}
    assert (rows[kernel]["commit"], rows[kernel]["killed"]) == ("aaaaaaa", 3)
    assert (rows[front]["commit"], rows[front]["score"]) == ("bbbbbbb", 0.5)
    assert summary["commits"] == ["aaaaaaa", "bbbbbbb"]
    assert json.loads((tmp_path / "out/summary.json").read_text())["files"] == summary["files"]
    md = (tmp_path / "out/summary.md").read_text()
    assert f"| {front} | `bbbbbbb` |" in md and f"| {kernel} | `aaaaaaa` |" in md
    # every mutant of the kernel ran: its score is the file's own, not a sample's estimate
    assert (rows[kernel]["exhaustive"], rows[front]["exhaustive"]) == (True, False)
    assert "| 100.0 % | exact |" in md and "| 50.0 % | 1-99 % |" in md


def test_a_front_is_killed_by_the_tests_that_get_its_method_by_name(run, tmp_path):
    """tests/test_progress.py imports no hmm_em module but runs hmm-em (``get_method``): it
    is in the killer of the method's front, not of the files the front imports."""
    rows = {r["file"]: r for r in run.plan()}
    assert "tests/test_progress.py" in rows["bayesfa/learners/hmm_em.py"]["tests"]
    (tmp_path / "tests").mkdir()
    call = 'm = get_method("%s")\n'  # not the call itself: this file would match
    (tmp_path / "tests/test_a.py").write_text(call % "hmm-em")
    (tmp_path / "tests/test_b.py").write_text(call % "hmm-em-x")
    assert run.tests_of("bayesfa.learners.front", tmp_path, ("hmm-em",)) == ["tests/test_a.py"]
    assert run.tests_of("bayesfa.learners.front", tmp_path) == []


def test_the_runners_own_tests_are_no_killer(run):
    """This file names kernels as data and needs ``benchmarks/``, which the work copy lacks:
    in a killer it failed on every unmutated copy (``_cgs_pfa_kernel.py``, ``_ipfa_kernel.py``)."""
    for row in run.plan():
        assert "tests/test_mutation_runner.py" not in row["tests"], row["file"]
    rows = {r["file"]: r for r in run.plan()}
    assert "tests/test_ipfa.py" in rows["bayesfa/samplers/pfa/_ipfa_kernel.py"]["tests"]


def test_tests_that_read_outside_the_work_copy_are_deselected(run):
    """``test_architecture.py`` reads ``benchmarks/`` and ``notebooks/``, absent from the work
    copy: that test failed on ``chains.py``'s unmutated copy. It is deselected, the file's
    other tests stay in the killer; a list without the file gets no ``--deselect``."""
    node = "tests/test_architecture.py::test_notebooks_and_benchmarks_import_what_exists"
    assert node in run.NOT_KILLER_TESTS
    path, name = node.split("::")
    assert f"def {name}(" in (ROOT / path).read_text()
    args = run.pytest_args(["tests/test_architecture.py", "tests/test_chains.py"])
    assert args == ["tests/test_architecture.py", "tests/test_chains.py", "--deselect", node]
    assert run.pytest_args(["tests/test_chains.py"]) == ["tests/test_chains.py"]
    rows = {r["file"]: r for r in run.plan()}
    assert "tests/test_architecture.py" in rows["bayesfa/samplers/chains.py"]["tests"]



def test_every_killer_test_that_reads_benchmarks_or_notebooks_is_deselected(run):
    """No test of any killer may read ``benchmarks/`` or ``notebooks/`` (absent from the work
    copy): a test function whose code names either as a string (``"benchmarks"``,
    ``glob("notebooks/...")``), itself or through a module-level helper of its file, must be in
    :data:`NOT_KILLER_TESTS`. ``test_guarded_output.py``'s benchmark-scripts test failed on
    ``cgs_pfa.py``'s unmutated copy before it was listed."""
    import ast

    names = re.compile(r"""["'](benchmarks|notebooks)\b""")
    found = set()
    for path in sorted({t for row in run.plan() for t in row["tests"]}):
        src = (ROOT / path).read_text()
        defs = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)]
        code = {n.name: ast.get_source_segment(src, n) for n in defs}
        readers = {n for n, c in code.items() if names.search(c)}
        for name, c in code.items():
            if name.startswith("test_") and (name in readers or any(
                    re.search(rf"\b{h}\(", c) for h in readers if not h.startswith("test_"))):
                found.add(f"{path}::{name}")
    assert "tests/test_guarded_output.py::test_benchmark_out_never_replaces_a_foreign_file" in found
    assert found <= set(run.NOT_KILLER_TESTS), found - set(run.NOT_KILLER_TESTS)

def test_the_work_copy_holds_every_benchmark_script_a_test_loads(run, tmp_path):
    """Tests load benchmark scripts through ``tests/benchmodules.py`` (``test_auto.py``'s
    slowed clock is ``auto_overshoot.py``'s), which :func:`test_every_killer_test_that_reads_
    benchmarks_or_notebooks_is_deselected` cannot see (no ``"benchmarks"`` in their code): the
    work copy :func:`prepare_work` makes holds every script so loaded, and so ``chains.py``'s
    killer passes on its unmutated copy."""
    loaded = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        loaded.update(re.findall(r"""benchmodules\.load\(\s*["']([\w/]+\.py)["']""", path.read_text()))
    assert "auto_overshoot.py" in loaded and len(loaded) >= 5
    import subprocess

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD", *run.COPIED],
                             check=True, capture_output=True).stdout
    names = set(subprocess.run(["tar", "-t"], input=archive, check=True,
                               capture_output=True).stdout.decode().split())
    assert {f"benchmarks/{p}" for p in loaded} <= names, {f"benchmarks/{p}" for p in loaded} - names
    assert "tests/benchmodules.py" in names and not any(n.startswith("benchmarks/results/") for n in names)


def _work(tmp_path, name, commit, sessions=()):
    w = tmp_path / name
    (w / "sessions").mkdir(parents=True)
    (w / "main").symlink_to(ROOT)
    (w / "commit").write_text(commit + "\n")
    for f, text in sessions:
        (w / "sessions" / f"{f}.sqlite").write_text(text)
    return w


def test_report_keeps_the_verdicts_of_sessions_gone_with_their_work_copy(run, tmp_path):
    """A session's sqlite lives outside the repository, gone on a fresh machine: ``report``
    writes every job's verdict to ``verdicts.json`` beside the summary, and a later report
    with no work copy holding that session gives the same row from it (the commit, counts,
    time-outs apart and the survivor's job id, which ``equivalent.json`` names), while a
    session on the machine replaces its file's committed verdicts."""
    import json

    kernel = "bayesfa/samplers/pfa/_ffbs_kernel.py"
    jobs = [{"job": "j1", "line": 10, "operator": "core/A", "occurrence": 0, "outcome": "killed"},
            {"job": "j2", "line": 11, "operator": "core/B", "occurrence": 1, "outcome": "timeout"},
            {"job": "j3", "line": 12, "operator": "core/C", "occurrence": 2, "outcome": "survived"},
            {"job": "j4", "line": 13, "operator": "core/D", "occurrence": 3, "outcome": "survived"}]

    def read(db):
        if db.read_text() == "new":
            return {"killed": 1, "timeouts": 0, "survived": 0, "incompetent": 0, "skipped": 3,
                    "pending": 0, "survivors": [], "jobs": [dict(jobs[0], job="n1")]}
        return {"killed": 2, "timeouts": 1, "survived": 2, "incompetent": 0, "skipped": 40,
                "pending": 1, "jobs": jobs,
                "survivors": [{k: j[k] for k in ("job", "line", "operator", "occurrence")}
                              for j in jobs[2:]]}

    eq = tmp_path / "equivalent.json"
    eq.write_text(json.dumps({kernel: {"j4": "a reason"}}))
    run.EQUIVALENT, saved = eq, run.EQUIVALENT
    try:
        out = tmp_path / "out"
        first = run.report(_work(tmp_path, "a", "aaaaaaa", [(run.slug(kernel), "old")]), out, read)
        kept = json.loads((out / "verdicts.json").read_text())["files"][kernel]
        assert (kept["commit"], kept["jobs"], kept["unlisted"]) == ("aaaaaaa", jobs, {})
        (out / "summary.json").unlink()  # only the verdicts: a summary is no source here
        again = run.report(_work(tmp_path, "b", "bbbbbbb"), out, read)
        assert again["files"] == first["files"]
        row = again["files"][0]
        assert (row["commit"], row["killed"], row["timeouts"], row["equivalent"]) == ("aaaaaaa", 2, 1, 1)
        assert [s["job"] for s in row["survivors"]] == ["j3"] and row["score"] == 2 / 3
        assert (row["skipped"], row["pending"], row["ran"]) == (40, 1, 4)
        newer = run.report(_work(tmp_path, "c", "ccccccc", [(run.slug(kernel), "new")]), out, read)
        assert (newer["files"][0]["commit"], newer["files"][0]["killed"]) == ("ccccccc", 1)
        assert json.loads((out / "verdicts.json").read_text())["files"][kernel]["commit"] == "ccccccc"
    finally:
        run.EQUIVALENT = saved


def test_report_keeps_the_rows_of_a_summary_written_before_the_verdicts(run, tmp_path):
    """The summary.json written before ``verdicts.json`` existed kept each file's counts and
    live survivors only: with no session and no verdicts, its rows come back unchanged
    (equivalent survivors from ``equivalent.json``), and its counts go into the verdicts as
    ``unlisted``."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from guarded_out import write_out_json

    kernel = "bayesfa/samplers/pfa/_ffbs_kernel.py"
    live = {"job": "live1", "line": 7, "operator": "core/A", "occurrence": 2}
    row = {"file": kernel, "commit": "9ee608b", "killed": 3, "timeouts": 1, "survived": 3,
           "incompetent": 1, "skipped": 800, "pending": 1, "ran": 7, "equivalent": 2,
           "score": 0.75, "score_95": list(run.clopper_pearson(3, 4)), "survivors": [live]}
    eq = tmp_path / "equivalent.json"
    eq.write_text(json.dumps({kernel: {"eq1": "a reason", "eq2": "another"}}))
    out = tmp_path / "out"
    write_out_json(out / "summary.json", {"commit": "9ee608b", "commits": ["9ee608b"],
                                          "command": "", "files": [row]})
    run.EQUIVALENT, saved = eq, run.EQUIVALENT
    try:
        summary = run.report(_work(tmp_path, "fresh", "fffffff"), out, lambda db: None)
    finally:
        run.EQUIVALENT = saved
    assert summary["files"] == [{**row, "annotations": 0, "exhaustive": False}]  # 800 skipped
    kept = json.loads((out / "verdicts.json").read_text())["files"][kernel]
    assert kept["unlisted"] == {"killed": 2, "timeout": 1, "incompetent": 1}
    assert sorted(j["job"] for j in kept["jobs"]) == ["eq1", "eq2", "live1"]


def test_a_new_session_takes_the_verdicts_judged_at_the_same_code(run, tmp_path, monkeypatch):
    """``run`` at the same code (the same commit, or one that changes only files outside the
    copy or the runner's own tests) copies a file's committed verdicts into the new session,
    matched by mutation (cosmic-ray's job ids are new at each ``init``), and samples them
    first; at other code it copies none. Without a judged job the sample is the old one."""
    import random
    import subprocess

    repo = tmp_path / "repo"
    (repo / "bayesfa").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "benchmarks").mkdir()

    def commit(path, text):
        (repo / path).write_text(text)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-qm", path], check=True)
        return subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                              check=True, capture_output=True, text=True).stdout.strip()

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    a = commit("bayesfa/x.py", "x = 1\n")
    b = commit("benchmarks/y.md", "y\n")
    c = commit("tests/test_mutation_runner.py", "# the runner's own tests\n")
    d = commit("tests/test_x.py", "# a killer changed\n")
    e = commit("bayesfa/x.py", "x = 2\n")
    monkeypatch.setattr(run, "ROOT", repo)
    entry = {"commit": a, "source": "session", "skipped": 5, "pending": 0, "unlisted": {},
             "jobs": [{"job": "j1", "line": 1, "operator": "core/A", "occurrence": 0,
                       "outcome": "killed"},
                      {"job": "j2", "line": 1, "operator": "core/B", "occurrence": 0,
                       "outcome": "survived"}]}
    assert [j["job"] for j in run.judged(entry, b)] == ["j1", "j2"]
    assert [j["job"] for j in run.judged(entry, c)] == ["j1", "j2"]
    assert run.judged(entry, d) == run.judged(entry, e) == run.judged(None, a) == []
    # a glob matches within one folder: the runner beside the benchmarks is not their code
    (repo / "benchmarks/mutation").mkdir()
    f = commit("benchmarks/mutation/runner.py", "# the runner\n")
    g = commit("benchmarks/bench.py", "# a benchmark a test loads\n")
    assert run.same_code(e, f) and not run.same_code(f, g) and not run.same_code(e, "0000000")

    keys = [(1, f"core/{op}", 0) for op in "CDAEFBGH"]
    copied, skipped = run.choose(keys, 4, 1, run.judged(entry, a))
    assert {i: j["job"] for i, j in copied.items()} == {2: "j1", 5: "j2"}
    assert copied[5]["commit"] == a
    assert len(skipped) == 4 and not skipped & {2, 5}  # the two judged, two sampled
    copied, skipped = run.choose(keys, 0, 1, run.judged(entry, a))  # no sample: all kept
    assert len(copied) == 2 and skipped == set()
    keep = set(random.Random(1).sample(range(len(keys)), 4))
    assert run.choose(keys, 4, 1, []) == ({}, set(range(len(keys))) - keep)


def test_a_copied_verdict_keeps_its_job_id(run):
    m = run.IMPORTED.match("verdicts.json: job 14e3e1c6abc at 9ee608b (timeout)\nTIMEOUT (copied)")
    assert m.groups() == ("14e3e1c6abc", "9ee608b", "timeout")


def test_a_target_left_mutated_by_a_stopped_session_is_restored(run, tmp_path):
    """A session stopped mid-job leaves its mutant in the work copy (found 2026-12-07: a
    resumed ``pdia.py`` session ran 11 jobs on a copy that still had ``--burn-in`` 501);
    ``restore_target`` puts the file back as at the copy's commit before a session runs."""
    import subprocess

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    file = "bayesfa/samplers/pdia/pdia.py"
    work = tmp_path / "w"
    (work / "main" / file).parent.mkdir(parents=True)
    (work / "commit").write_text(head + "\n")
    pristine = subprocess.run(["git", "-C", str(ROOT), "show", f"{head}:{file}"], check=True,
                              capture_output=True).stdout
    (work / "main" / file).write_bytes(pristine.replace(b"default=500", b"default= 501", 1))
    assert run.restore_target(work, file)
    assert (work / "main" / file).read_bytes() == pristine
    assert not run.restore_target(work, file)  # as it should be: left alone


def test_mutants_inside_never_evaluated_annotations_are_found(run):
    """Under ``from __future__ import annotations`` every annotation is a string never
    evaluated, so a mutant inside one is not run (the ``pdia.py`` session at ``0ff782c`` spent
    33 of its 103 jobs on them, each judged equivalent by hand); without that import they are
    evaluated, and nothing is left out."""
    body = ("def f(a: int | None, *rest: str | bytes, k: dict | None = None, **kw: int) -> float | None:\n"
            "    x: int | None = a if a else 1 | 2\n"
            "    return x\n"
            "class C:\n"
            "    n: list[int] | None = None\n")
    spans = run.annotation_spans("from __future__ import annotations\n" + body)
    lines = ("from __future__ import annotations\n" + body).splitlines()
    texts = sorted(lines[l0 - 1][c0:c1] for (l0, c0), (l1, c1) in spans)
    assert texts == sorted(["int | None", "str | bytes", "dict | None", "int", "float | None",
                            "int | None", "list[int] | None"])
    line2 = lines[2]
    bar_in_note = (3, line2.index("|"))                 # the | of x's annotation
    bar_in_code = (3, line2.index("1 | 2") + 2)         # the | of the value 1 | 2
    assert run.in_annotation(bar_in_note, (3, bar_in_note[1] + 1), spans)
    assert not run.in_annotation(bar_in_code, (3, bar_in_code[1] + 1), spans)
    assert not run.in_annotation((2, 4), (2, 5), spans)  # "f", the name
    assert run.annotation_spans(body) == []              # evaluated: a mutant there can fail


def test_report_counts_annotation_mutants_apart_and_a_whole_file_stays_exact(run, tmp_path):
    import json

    kernel = "bayesfa/samplers/pfa/_ffbs_kernel.py"
    jobs = [{"job": "j1", "line": 10, "operator": "core/A", "occurrence": 0, "outcome": "killed"}]

    def read(db):
        return {"killed": 1, "timeouts": 0, "survived": 0, "incompetent": 0, "skipped": 0,
                "annotations": 5, "pending": 0, "survivors": [], "jobs": jobs}

    eq = tmp_path / "equivalent.json"
    eq.write_text("{}")
    run.EQUIVALENT, saved = eq, run.EQUIVALENT
    try:
        out = tmp_path / "out"
        row = run.report(_work(tmp_path, "a", "aaaaaaa", [(run.slug(kernel), "x")]), out, read)["files"][0]
        assert (row["annotations"], row["skipped"], row["exhaustive"], row["score"]) == (5, 0, True, 1.0)
        kept = json.loads((out / "verdicts.json").read_text())["files"][kernel]
        assert kept["annotations"] == 5
        assert "| 0 | 5 | 100.0 % | exact |" in (out / "summary.md").read_text()
    finally:
        run.EQUIVALENT = saved


@pytest.fixture(scope="module")
def standing():
    spec = importlib.util.spec_from_file_location("mutation_standing",
                                                  ROOT / "benchmarks/mutation/standing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_standing_lower_bound_is_the_one_sided_clopper_pearson(standing):
    """The bar's arithmetic: all of 59 killed is the least sample whose one-sided 95 % lower
    bound reaches 95 % (0.05 ** (1 / n)); with misses, scipy's beta quantile."""
    from scipy.stats import beta

    assert standing.lower_bound(59, 59) >= 0.95 > standing.lower_bound(58, 58)
    assert standing.lower_bound(58, 58) == pytest.approx(0.05 ** (1 / 58), abs=1e-12)
    assert standing.lower_bound(55, 60) == pytest.approx(beta.ppf(0.05, 55, 6), abs=1e-12)
    assert standing.lower_bound(0, 5) == 0.0 and standing.lower_bound(0, 0) is None


def test_standing_keys_a_mutant_by_what_it_changes_and_finds_it_moved(standing):
    """A mutant is keyed by its operator, its line's text (and rank among lines of that text)
    and its rank on the line, so a session at another commit where the line moved down finds
    the same mutant, and one whose line is gone finds none."""
    pytest.importorskip("cosmic_ray")
    op = "core/ReplaceBinaryOperator_Add_Sub"
    old = "a = 1 + 2 + 3\nb = 4\na = 1 + 2 + 3\n"
    pos = standing.positions(old, op)  # four occurrences: two on line 1, two on line 3
    assert [p[0] for p in pos] == [1, 1, 3, 3]
    keys = [standing.mutant_key(old, {"operator": op, "line": p[0], "occurrence": k})
            for k, p in enumerate(pos)]
    assert len(set(keys)) == 4
    assert standing.mutant_key(old, {"operator": op, "line": 2, "occurrence": 0}) is None
    new = "import os\n" + old  # every line one down
    assert [standing.locate(new, k) for k in keys] == [0, 1, 2, 3]
    assert standing.locate(new, keys[0]) is not None
    assert standing.locate("a = 1 * 2\n", keys[0]) is None


def test_standing_never_replaces_a_foreign_file(tmp_path):
    """``standing.py --out``: a file bayesfa did not write is refused before any work, in one
    line with exit 2, and left as it was (the guarded writer of the benchmark scripts)."""
    import subprocess
    import sys

    mine = tmp_path / "standing.md"
    mine.write_text("my own notes\n")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/mutation/standing.py"),
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "not written by bayesfa" in proc.stderr and "Traceback" not in proc.stderr
    assert mine.read_text() == "my own notes\n" and not (tmp_path / "standing.json").exists()
