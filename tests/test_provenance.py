"""Recorded commands run from a fresh clone: bayesfa.provenance.portable_command."""

import shlex
import sys

from bayesfa.provenance import ROOT, portable_command, portable_path


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
