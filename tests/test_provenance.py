"""Recorded commands run from a fresh clone (bayesfa.provenance.portable_command), and the commit
they name (git_commit: ``+dirty`` means changed code, not the results a run writes)."""

import re
import shlex
import shutil
import subprocess
import sys

import pytest

from bayesfa.provenance import ROOT, git_commit, portable_command, portable_path


def test_paths_become_relative_to_the_checkout():
    assert portable_path(str(ROOT / "runs" / "x")) == "runs/x"
    assert portable_path(str(ROOT.parent / "shared" / "data")) == "../shared/data"
    assert portable_path("runs/x") == "runs/x"
    assert portable_path("--states") == "--states"


def test_interpreter_script_and_option_values_are_portable():
    argv = [sys.executable, str(ROOT / "benchmarks" / "b.py"), "--data", str(ROOT.parent / "shared"),
            "--out=" + str(ROOT / "r"), "--ipfa-options", "--alpha 30"]
    cmd = portable_command(argv)
    assert shlex.split(cmd) == ["python", "benchmarks/b.py", "--data", "../shared", "--out=r",
                                "--ipfa-options", "--alpha 30"]
    assert "/" + ROOT.name + "/" not in cmd


def test_an_installed_bayesfa_script_is_named_bayesfa():
    cmd = portable_command([str(ROOT / ".venv" / "bin" / "bayesfa"), "fit", str(ROOT / "t.train")])
    assert cmd == "bayesfa fit t.train"


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(root)})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_results_and_ledgers_do_not_make_a_checkout_dirty_but_code_does(tmp_path):
    files = {"bayesfa/x.py": "a = 1\n", "benchmarks/results/r/p1.json": "{}\n",
             "benchmarks/results/r/.bayesfa-written.json": "{}\n", "runs/.bayesfa-written.json": "{}\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "x")
    clean = git_commit(tmp_path)
    assert clean and "+dirty" not in clean and clean != "unknown"
    for name in list(files)[1:]:  # what runs write
        (tmp_path / name).write_text('{"changed": 1}\n')
    assert git_commit(tmp_path) == clean
    (tmp_path / "bayesfa/x.py").write_text("a = 2\n")  # code
    assert git_commit(tmp_path) == clean + "+dirty"


@pytest.mark.parametrize("name, features, expected", [
    ("skylake", "+avx,+avx2,+fma,+sse4.2", "skylake, 256-bit vectors"),
    ("sapphirerapids", "+avx2,+avx512f,+avx512bw", "sapphirerapids, 512-bit vectors"),
    ("core2", "+sse4.1,+ssse3", "core2, 128-bit vectors"),
])
def test_compile_target_names_the_cpu_numba_compiles_for(monkeypatch, name, features, expected):
    """``compile_target``: numba's ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` when set (what a
    run made elsewhere is repeated with), and the widest vector their features enable."""
    from numba.core import config

    from bayesfa.provenance import compile_target

    monkeypatch.setattr(config, "CPU_NAME", name)
    monkeypatch.setattr(config, "CPU_FEATURES", features)
    assert compile_target() == expected


def test_compile_target_of_the_host_is_its_llvm_name():
    import llvmlite.binding as llvm
    from numba.core import config

    from bayesfa.provenance import compile_target

    if config.CPU_NAME is not None:
        pytest.skip("NUMBA_CPU_NAME is set")
    assert compile_target().startswith(llvm.get_host_cpu_name() + ", ")


#: a machine's absolute path in a recorded command or text (the checkout, a scratch folder, a home)
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:tmp|work|root|home|Users|var/folders)/")


def test_committed_results_name_no_machine_path():
    """Every committed result reproduces from a fresh clone: no machine's absolute path appears
    in a committed result, its commands included (issue 38 item 4; the three JSON records that
    kept a scratch folder's path beside a portable ``reproduce`` now name the relative one)."""
    bench = ROOT / "benchmarks"
    files = [bench / "RESULTS.md", ROOT / "README.md", *sorted((bench / "results").rglob("*"))]
    offenders = []
    for path in files:
        if path.suffix not in (".md", ".json", ".csv", ".txt") or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if MACHINE_PATH.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not offenders, "\n".join(offenders)
