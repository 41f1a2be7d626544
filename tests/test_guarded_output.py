"""Issue 26: a scripted trial of every case the issue lists, as a new user would meet them.

Each case ends with exit 0, or with one line on stderr and exit 2 (never a traceback); no
file of the user's changes; what bayesfa creates follows the umask. The cases, in the
issue's order: files silently replaced (``diagnose --plot``, ``data``, ``select``), a run
stuck after a refused fit, negative seeds, a broken pipe, a manifest copied over another
run, and the small things (permissions, error messages that name temporary or internal
paths, ``--out -``, a help pointer, ``diagnose`` of an optimiser, a summary that hides
non-convergence, a silent resume). Before the change every one of them failed.

The whole trial, every case of the issue and where it is checked (``F::t`` is
``tests/F.py::test_t``; the cases not in this file are in the files named)::

    nice -n 19 .venv/bin/python -m pytest -q tests/test_guarded_output.py tests/test_run_safety.py \
        tests/test_fuzz_cli.py tests/test_resume_cvb_hpyp.py tests/test_resume_variants.py \
        tests/test_checkpoint.py tests/test_pdia_resume.py tests/test_progress.py  # -m "" for the slow

Files silently replaced
  diagnose --plot DIR/trace.png    test_guarded_output::diagnose_plot_never_replaces_the_users_trace_png
  data alice --out DIR             test_guarded_output::data_never_replaces_the_users_alice_train
  select --out (foreign folder)    test_guarded_output::select_refuses_a_folder_that_is_not_a_selection
A run stuck after a refused fit
  burn-in >= iterations            test_guarded_output::a_refused_fit_leaves_the_folder_as_it_was
  an empty corpus                  test_guarded_output::an_empty_corpus_is_refused_naming_the_file
  a crash                          test_guarded_output::a_crashed_fit_leaves_no_unfinished_run
Tracebacks on a negative --seed    test_guarded_output::a_bad_seed_is_refused_at_parse_time (fit cgs-pfa,
                                   pdia, hmm-em; select; validate hpyp; data alice --resplit; pautomac
                                   run), seed_int_accepts_exactly_zero_to_the_maximum
Broken pipe (score | head -1)      test_guarded_output::score_into_a_closed_pipe_is_quiet
A manifest copied over a run       test_guarded_output::a_manifest_copied_over_another_run_is_refused,
                                   manifest_fingerprint_binds_every_file; test_run_safety (damaged files)
Long silence
  cvb0 --states 5000 (progress)    test_progress::cvb_progress_and_estimate_leave_results_unchanged,
                                   cvb_chunked_sweep_moves_the_bar_within_an_iteration (the bar moves
                                   within one long iteration), estimate_message_threshold
  the oracles on big data          test_progress::oracle_refuses_pautomac_training_set_in_one_line,
                                   oracle_allow_large_is_declared_and_passes_the_check
  hpyp                             test_progress::hpyp_progress_and_estimate_leave_draws_unchanged
Resume only for some samplers (mid-chain, bit for bit, kill -9, --holdout)
  cgs-pfa                          test_checkpoint::kill_9_of_bayesfa_fit_then_resume_is_bit_identical
  cgs-sg, cgs-hmm, cgs-hmm-star    test_resume_variants::interrupted_chain_resumes_bit_identical,
                                   kill_9_of_bayesfa_fit_then_resume_is_bit_identical,
                                   holdout_is_not_sampled_and_recorded_per_draw
  cvb0, gcvb0, cvb2, hpyp          test_resume_cvb_hpyp::interrupted_vb_fit_resumes_bit_identical,
                                   interrupted_hpyp_chain_resumes_bit_identical,
                                   kill_9_of_bayesfa_fit_then_resume_is_bit_identical,
                                   vb_holdout_is_not_fitted_and_recorded_per_iteration,
                                   hpyp_holdout_is_not_sampled_and_scored_per_draw
  gcvb0 on scipy < 1.15            test_resume_cvb_hpyp::gcvb0_without_setulb_falls_back_to_minimize_and_saves_nothing
  pdia                             test_pdia_resume::kill_9_of_bayesfa_fit_then_resume_is_bit_identical
  ipfa (no --holdout; slow)        test_resume_variants::kill_9_of_bayesfa_fit_ipfa_then_resume_is_bit_identical
Small things
  outputs follow the umask         test_guarded_output::every_output_follows_the_umask (fit, predict,
                                   export, select, diagnose --plot, pautomac run); data_never_...;
                                   test_fuzz_cli::fuzz_every_command_leaves_user_files_alone
  export --out EXISTING_DIR        test_guarded_output::export_to_an_existing_folder_names_the_folder
  select --out FILE                test_guarded_output::select_out_a_file_names_that_file
  prob --out - (and predict, export) test_guarded_output::prob_and_predict_out_dash_is_standard_output,
                                   export_to_an_existing_folder_names_the_folder
  "no string" names the file       test_guarded_output::an_empty_corpus_is_refused_naming_the_file
  estatemerge --states: its help   test_guarded_output::estatemerge_states_points_to_the_methods_help
  diagnose of an optimiser         test_guarded_output::diagnose_of_an_optimiser_speaks_of_convergence
  cvb0 summary: not converged      test_guarded_output::diagnose_of_an_optimiser_speaks_of_convergence
  resume after Ctrl-C says so      test_guarded_output::a_resume_after_ctrl_c_says_it_resumes
Deliver 1 (one guarded writer)     test_guarded_output::guarded_writer_refuses_in_one_line,
                                   predict_replaces_its_own_file_but_never_the_users,
                                   benchmark_out_never_replaces_a_foreign_file; test_run_safety (fit)
Deliver 2 (fingerprints)           test_guarded_output::manifest_fingerprint_binds_every_file;
                                   test_run_safety::damaged_run_file_is_one_line_naming_it,
                                   arrays_that_do_not_fit_the_manifest
Deliver 3 (options at parse time)  test_guarded_output::a_bad_seed_is_refused_at_parse_time;
                                   test_resume_*::cli_options_are_checked; the command fuzz
Deliver 6 (diagnose per method)    test_guarded_output::diagnose_of_an_optimiser_speaks_of_convergence,
                                   single_chain_runs_get_no_rank_plot
Deliver 7 (the fuzz)               test_fuzz_cli::fuzz_every_command_leaves_user_files_alone (prob,
                                   score, fit, predict, perplexity, diagnose, select, export, data,
                                   sample, decode) and fuzz_fit_of_every_method_leaves_user_files_alone
                                   (cgs-pfa, with --auto --budget, cgs-sg, cgs-hmm, cvb0, gcvb0, cvb2,
                                   hpyp, ipfa, estatemerge; --holdout, --checkpoint-every,
                                   --max-draws, --predict, --seed, --force and each method's own)
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bayesfa import rundir
from bayesfa.cli import main
from bayesfa.datasets import pautomac_path
from bayesfa.methods import REGISTRY, SEED_MAX, seed_int
from bayesfa.pautomac import read_sample, read_solution, write_sample

FAST_PFA = ["--method", "cgs-pfa", "--states", "2", "--iterations", "6", "--burn-in", "2",
            "--period", "1", "--chains", "2", "--quiet"]
UMASK = 0o027


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def one_line(capsys, rc) -> str:
    """The single error line of an exit-2 command (``rc`` may be a SystemExit's code)."""
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and " error: " in err, err
    return err


def run(argv) -> int:
    """``main(argv)``; argparse's SystemExit becomes its exit status."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("data")
    write_sample(base / "train", read_sample(pautomac_path(24, "train")).subset(range(60)))
    write_sample(base / "test", read_sample(pautomac_path(24, "test")).subset(range(20)))
    return base


@pytest.fixture(scope="module")
def pfa_run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "pfa"
    assert main(["fit", str(data / "train"), *FAST_PFA, "--out", str(out)]) == 0
    return out


@pytest.fixture
def umask():
    old = os.umask(UMASK)
    yield UMASK
    os.umask(old)


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in root.rglob("*")}


def assert_umask(root: Path, mask: int = UMASK) -> None:
    for name, mode in modes(root).items():
        expected = (0o777 if (root / name).is_dir() else 0o666) & ~mask
        assert mode == expected, f"{name}: {oct(mode)}, expected {oct(expected)} under umask {oct(mask)}"


# -- files silently replaced -------------------------------------------------------------------
def test_diagnose_plot_never_replaces_the_users_trace_png(pfa_run, tmp_path, capsys):
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "trace.png").write_bytes(b"my own picture")
    rc = run(["diagnose", str(pfa_run), "--plot", str(plots)])
    err = one_line(capsys, rc)
    assert str(plots / "trace.png") in err and "not written by bayesfa" in err
    assert (plots / "trace.png").read_bytes() == b"my own picture"
    assert sorted(p.name for p in plots.iterdir()) == ["trace.png"]  # rank.png not written either
    # into a folder of its own: written, and again (bayesfa's own files are replaced)
    for _ in range(2):
        assert run(["diagnose", str(pfa_run), "--plot", str(tmp_path / "mine")]) == 0
    assert {p.name for p in (tmp_path / "mine").iterdir()} >= {"trace.png", "rank.png"}


def test_data_never_replaces_the_users_alice_train(tmp_path, capsys, umask):
    (tmp_path / "alice.train").write_text("my own alice\n")
    rc = run(["data", "alice", "--out", str(tmp_path)])
    assert str(tmp_path / "alice.train") in one_line(capsys, rc)
    assert (tmp_path / "alice.train").read_text() == "my own alice\n"
    assert not (tmp_path / "alice.test").exists()  # refused before either file was written
    out = tmp_path / "new"
    assert run(["data", "alice", "--out", str(out)]) == 0
    assert run(["data", "alice", "--out", str(out)]) == 0  # its own files: replaced
    capsys.readouterr()
    assert_umask(out)


def test_select_refuses_a_folder_that_is_not_a_selection(data, tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "selection.txt").write_text("my own notes\n")
    (folder / "paper.tex").write_text("x")
    argv = ["select", str(data / "train"), "--method", "cgs-pfa", "--states", "2", "--beta", "0.1",
            "--folds", "2", "--iterations", "3", "--burn-in", "1", "--period", "1", "--chains", "1",
            "--quiet", "--out"]
    err = one_line(capsys, run(argv + [str(folder)]))
    assert str(folder) in err and "not a bayesfa select folder" in err
    assert sorted(p.name for p in folder.iterdir()) == ["paper.tex", "selection.txt"]
    # a selection folder with a selection.txt the user wrote over: refused, kept
    (folder / "paper.tex").unlink()
    err = one_line(capsys, run(argv + [str(folder)]))
    assert str(folder / "selection.txt") in err
    assert (folder / "selection.txt").read_text() == "my own notes\n" and not (folder / "cv").exists()
    # its own folder: written, then rerun (finished folds reused, its files replaced)
    for _ in range(2):
        assert run(argv + [str(tmp_path / "sel")]) == 0
    capsys.readouterr()


# -- a run stuck after a refused fit ----------------------------------------------------------------
def test_a_refused_fit_leaves_the_folder_as_it_was(data, tmp_path, capsys):
    out = tmp_path / "run"
    bad = ["fit", str(data / "train"), *FAST_PFA, "--iterations", "100", "--burn-in", "200"]
    err = one_line(capsys, run(bad + ["--out", str(out)]))
    assert "keeps no sample" in err
    assert not out.exists()
    out.mkdir()  # an empty folder stays an empty folder
    one_line(capsys, run(bad + ["--out", str(out)]))
    assert list(out.iterdir()) == []
    # the corrected command is not refused
    assert run(["fit", str(data / "train"), *FAST_PFA, "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["arrays.npz", "manifest.json", "trace.nc"]


def test_an_empty_corpus_is_refused_naming_the_file(tmp_path, capsys):
    empty = tmp_path / "empty.train"
    empty.write_text("0 5\n")
    out = tmp_path / "run"
    for argv in (["fit", str(empty), *FAST_PFA, "--out", str(out)],
                 ["select", str(empty), "--method", "cgs-pfa", "--states", "2", "--beta", "0.1",
                  "--out", str(tmp_path / "sel"), "--quiet"]):
        err = one_line(capsys, run(argv))
        assert f"{empty}: " in err and "no string" in err
    assert not out.exists() and not (tmp_path / "sel").exists()


def test_a_crashed_fit_leaves_no_unfinished_run(data, tmp_path, capsys, monkeypatch):
    """A fit that dies before saving any work leaves nothing behind; one that saved work
    keeps it, says so, and the same command says it resumes."""
    from bayesfa.methods import get_method

    method = get_method("cgs-pfa")

    def crash(*args, **kwargs):
        raise MemoryError("the machine ran out")

    monkeypatch.setattr(type(method), "fit", crash)
    out = tmp_path / "run"
    with pytest.raises(MemoryError):
        main(["fit", str(data / "train"), *FAST_PFA, "--out", str(out)])
    assert not out.exists()
    monkeypatch.undo()
    # a folder an older bayesfa left stuck (unfinished.json, no work saved): taken over
    out.mkdir()
    (out / "unfinished.json").write_text(json.dumps({"method": "cgs-pfa", "seed": 99}))
    assert run(["fit", str(data / "train"), *FAST_PFA, "--out", str(out)]) == 0
    assert (out / "manifest.json").is_file() and not (out / "unfinished.json").exists()


def test_a_resume_after_ctrl_c_says_it_resumes(data, tmp_path, capsys, monkeypatch):
    import test_run_safety

    fake = test_run_safety.FAKE
    monkeypatch.setitem(REGISTRY, "fake-resumable", "test_run_safety:FAKE")
    monkeypatch.setattr(fake, "computed", [])
    monkeypatch.setattr(fake, "interrupt_at", 1)
    argv = ["fit", str(data / "train"), "--method", "fake-resumable", "--out", str(tmp_path / "r")]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "kept" in err and "resumes" in err
    monkeypatch.setattr(fake, "interrupt_at", None)
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "resuming the unfinished run" in err and fake.computed == [0, 1, 2]


# -- seeds -------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["fit", "TRAIN", "--method", "cgs-pfa", "--out", "OUT"],
    ["fit", "TRAIN", "--method", "pdia", "--out", "OUT"],
    ["fit", "TRAIN", "--method", "hmm-em", "--out", "OUT"],
    ["select", "TRAIN", "--method", "cgs-pfa", "--out", "OUT"],
    ["data", "alice", "--resplit", "--out", "OUT"],
    ["validate", "hpyp"],
    ["pautomac", "run", "--data", "TRAIN", "--problems", "1", "--method", "cgs-pfa", "--chains",
     "1", "--scheduler", "local", "--out", "OUT"],
], ids=["fit-cgs-pfa", "fit-pdia", "fit-hmm-em", "select", "data-alice", "validate",
        "pautomac-run"])
@pytest.mark.parametrize("seed", ["-1", str(SEED_MAX + 1), "1.5"])
def test_a_bad_seed_is_refused_at_parse_time(data, tmp_path, capsys, argv, seed):
    argv = [str(data / "train") if a == "TRAIN" else str(tmp_path / "out") if a == "OUT" else a
            for a in argv]
    err = one_line(capsys, run(argv + ["--seed", seed]))
    assert "--seed" in err and "from 0 to" in err
    assert not (tmp_path / "out").exists()


def test_seed_int_accepts_exactly_zero_to_the_maximum():
    import argparse

    assert seed_int("0") == 0 and seed_int(str(SEED_MAX)) == SEED_MAX
    for text in ("-1", str(SEED_MAX + 1), "x", "", "2.0"):
        with pytest.raises(argparse.ArgumentTypeError):
            seed_int(text)


# -- the broken pipe ----------------------------------------------------------------------------
def test_score_into_a_closed_pipe_is_quiet(tmp_path):
    """``bayesfa score PRED SOL | head -1``: the reader has gone when bayesfa writes; before,
    "bayesfa: error: Broken pipe" and exit 2 (4 times in 5)."""
    solution = str(pautomac_path(24, "solution"))
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "bayesfa.cli", "score", solution, solution],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()  # the reader leaves before bayesfa has started
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and err == b"", err


# -- a manifest copied over another run ------------------------------------------------------------
def test_a_manifest_copied_over_another_run_is_refused(data, pfa_run, tmp_path, capsys):
    import shutil

    other = tmp_path / "other"
    assert run(["fit", str(data / "train"), "--method", "estatemerge", "--out", str(other), "--quiet"]) == 0
    mixed = tmp_path / "mixed"
    shutil.copytree(pfa_run, mixed)
    shutil.copy(other / "manifest.json", mixed / "manifest.json")
    err = one_line(capsys, run(["predict", str(mixed), str(data / "test"), "--out", str(tmp_path / "p")]))
    assert str(mixed / "arrays.npz") in err and "SHA-256 differs" in err
    assert not (tmp_path / "p").exists()
    # the trace of another run: diagnose refuses it
    shutil.copytree(pfa_run, tmp_path / "mixed2")
    assert run(["fit", str(data / "train"), *FAST_PFA, "--seed", "3", "--out", str(tmp_path / "b")]) == 0
    shutil.copy(tmp_path / "b" / "trace.nc", tmp_path / "mixed2" / "trace.nc")
    assert str(tmp_path / "mixed2" / "trace.nc") in one_line(capsys, run(["diagnose", str(tmp_path / "mixed2")]))


# -- small things -------------------------------------------------------------------------------
def test_every_output_follows_the_umask(data, pfa_run, tmp_path, capsys, umask):
    out = tmp_path / "out"
    out.mkdir()
    assert run(["fit", str(data / "train"), *FAST_PFA, "--out", str(out / "run")]) == 0
    assert run(["fit", str(data / "train"), "--method", "estatemerge", "--out", str(out / "em"),
                "--quiet"]) == 0
    assert run(["predict", str(out / "run"), str(data / "test"), "--out", str(out / "pred")]) == 0
    assert run(["export", str(out / "em"), "--format", "dot", "--out", str(out / "em.dot")]) == 0
    assert run(["select", str(data / "train"), "--method", "cgs-pfa", "--states", "2",
                "--beta", "0.1", "--folds", "2", "--iterations", "3", "--burn-in", "1",
                "--period", "1", "--chains", "1", "--quiet", "--out", str(out / "sel")]) == 0
    assert run(["diagnose", str(out / "run"), "--plot", str(out / "plots")]) == 0
    problems = tmp_path / "problems"  # pautomac run: one tiny problem on a local cluster
    problems.mkdir()
    for kind in ("train", "test"):
        (problems / f"x.pautomac.{kind}").write_bytes((data / kind).read_bytes())
    assert run(["pautomac", "run", "--data", str(problems), "--problems", "x", "--method", "cgs-pfa",
                "--states", "2", "--beta", "0.1", "--iterations", "6", "--burn-in", "2", "--period",
                "1", "--chains", "1", "--seed", "1", "--scheduler", "local", "--workers", "1",
                "--out", str(out / "results"), "--quiet"]) == 0
    capsys.readouterr()
    assert (out / "results" / "answers" / "x.pautomac.predict").is_file()
    assert_umask(out)


def test_export_to_an_existing_folder_names_the_folder(data, tmp_path, capsys):
    run_dir = tmp_path / "em"
    assert run(["fit", str(data / "train"), "--method", "estatemerge", "--out", str(run_dir), "--quiet"]) == 0
    target = tmp_path / "folder"
    target.mkdir()
    err = one_line(capsys, run(["export", str(run_dir), "--format", "dot", "--out", str(target)]))
    assert f"{target}: is a directory" in err and ".tmp" not in err
    # --out -: the dot text on standard output, no file named "-"
    assert run(["export", str(run_dir), "--format", "dot", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("digraph")
    assert not Path("-").exists()


def test_select_out_a_file_names_that_file(data, tmp_path, capsys):
    target = tmp_path / "results.txt"
    target.write_text("mine")
    err = one_line(capsys, run(["select", str(data / "train"), "--method", "cgs-pfa",
                                "--out", str(target), "--quiet"]))
    assert err.startswith(f"bayesfa: error: {target}: exists and is not a directory")
    assert target.read_text() == "mine"


def test_prob_and_predict_out_dash_is_standard_output(data, pfa_run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(["prob", str(pautomac_path(24, "model")), str(data / "test"), "--out", "-"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "20" and len(out.splitlines()) == 21
    assert run(["predict", str(pfa_run), str(data / "test"), "--out", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "20"
    assert not (tmp_path / "-").exists() and list(tmp_path.iterdir()) == []


def test_predict_replaces_its_own_file_but_never_the_users(data, pfa_run, tmp_path, capsys):
    pred = tmp_path / "pred.txt"
    argv = ["predict", str(pfa_run), str(data / "test"), "--out", str(pred)]
    assert run(argv) == 0 and run(argv) == 0  # its own file, unchanged since: replaced
    first = read_solution(pred)
    pred.write_text(pred.read_text().replace("\n", "\n", 1) + "\n")  # the user edits it
    edited = digest(pred)
    err = one_line(capsys, run(argv))
    assert str(pred) in err and "not written by bayesfa (or was changed since)" in err
    assert digest(pred) == edited and first.size == 20


def test_estatemerge_states_points_to_the_methods_help(data, tmp_path, capsys):
    err = one_line(capsys, run(["fit", str(data / "train"), "--method", "estatemerge", "--states", "4",
                                "--out", str(tmp_path / "r")]))
    assert "unrecognized arguments: --states 4" in err
    assert "bayesfa fit --method estatemerge --help" in err


def test_diagnose_of_an_optimiser_speaks_of_convergence(data, tmp_path, capsys):
    """cvb0: the objective, the iterations used and whether --tol was met; no R-hat, ESS,
    burn-in or chains; no rank plot (one "chain"). The fit's summary says it did not converge."""
    run_dir = tmp_path / "cvb0"
    assert run(["fit", str(data / "train"), "--method", "cvb0", "--states", "2", "--iterations", "2",
                "--out", str(run_dir)]) == 0
    err = capsys.readouterr().err
    assert "NOT converged: stopped at --iterations 2" in err
    assert run(["diagnose", str(run_dir), "--plot", str(tmp_path / "plots")]) == 0
    out, err = capsys.readouterr()
    for advice in ("chain", "burn-in", "R-hat", "r_hat", "ESS"):
        assert advice not in out + err
    assert "not converged: used all 2 --iterations" in out and "final D0" in out
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [".bayesfa-written.json", "trace.png"]
    assert run(["diagnose", "--json", str(run_dir)]) == 0
    status = json.loads(capsys.readouterr().out)["status"]
    assert status["converged"] is False and status["iterations"] == 2 and status["max_iterations"] == 2
    # one that converges says so
    assert run(["fit", str(data / "train"), "--method", "cvb0", "--states", "2", "--iterations", "500",
                "--tol", "0.05", "--out", str(tmp_path / "ok"), "--quiet"]) == 0
    assert run(["diagnose", "--json", str(tmp_path / "ok")]) == 0
    status = json.loads(capsys.readouterr().out)["status"]
    assert status["converged"] is True and status["iterations"] < 500 and status["last_change"] < 0.05


def test_single_chain_runs_get_no_rank_plot(data, tmp_path, capsys):
    run_dir = tmp_path / "one"
    assert run(["fit", str(data / "train"), *FAST_PFA, "--chains", "1", "--out", str(run_dir)]) == 0
    assert run(["diagnose", str(run_dir), "--plot", str(tmp_path / "plots")]) == 0
    capsys.readouterr()
    assert not (tmp_path / "plots" / "rank.png").exists() and (tmp_path / "plots" / "trace.png").is_file()


def test_guarded_writer_refuses_in_one_line(tmp_path):
    """:func:`bayesfa.rundir.write_output` directly: a directory, a file under a file, a
    missing folder, a file it did not write, a record that is not its own."""
    def write(tmp):
        Path(tmp).write_text("x")

    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("user")
    cases = {tmp_path / "dir": "is a directory", tmp_path / "file" / "x": "is not a directory",
             tmp_path / "no" / "x": "no such folder", tmp_path / "file": "not written by bayesfa"}
    for path, problem in cases.items():
        with pytest.raises(rundir.InputError, match=problem):
            rundir.write_output(path, write)
    assert (tmp_path / "file").read_text() == "user"
    assert rundir.write_output(tmp_path / "ok", write) == str(tmp_path / "ok")
    assert rundir.written_by_bayesfa(tmp_path / "ok")
    (tmp_path / rundir.LEDGER).write_text("[]")
    with pytest.raises(rundir.InputError, match="not bayesfa's record"):
        rundir.write_output(tmp_path / "ok", write)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_manifest_fingerprint_binds_every_file(data, pfa_run, tmp_path):
    manifest = json.loads((pfa_run / "manifest.json").read_text())
    assert set(manifest["files"]) == {"arrays.npz", "trace.nc"}
    for name, sha in manifest["files"].items():
        assert digest(pfa_run / name) == sha
    body = {k: v for k, v in manifest.items() if k != "fingerprint"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert manifest["fingerprint"] == hashlib.sha256(text.encode()).hexdigest()
    # fit --predict: predictions.npz is bound too
    out = tmp_path / "withpred"
    assert run(["fit", str(data / "train"), *FAST_PFA, "--predict", str(data / "test"), "--out", str(out)]) == 0
    assert "predictions.npz" in json.loads((out / "manifest.json").read_text())["files"]
    (out / "predictions.npz").write_bytes((out / "predictions.npz").read_bytes() + b"\0")
    with pytest.raises(rundir.InputError, match="SHA-256 differs"):
        rundir.load_run(out).verify("predictions.npz")


def test_benchmark_out_never_replaces_a_foreign_file(tmp_path):
    """A benchmark script's ``--out`` (and the file written beside it) goes through the guarded
    writer (benchmarks/guarded_out.py): a file bayesfa did not write is refused before any
    work, in one line with exit 2, and left as it was; a file the writer wrote is replaced,
    until someone changes it."""
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    user = tmp_path / "mine.json"
    user.write_text("my own results\n")
    beside = tmp_path / "ok.md"  # kill_matrix.py writes OUT.md beside OUT
    beside.write_text("my notes\n")
    cases = [("pautomac_table3.py", user, user), ("kill_matrix.py", user, user),
             ("kill_matrix.py", tmp_path / "ok.json", beside)]
    for script, out, foreign in cases:
        before = digest(foreign)
        proc = subprocess.run([sys.executable, str(bench / script), "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (script, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert str(foreign) in proc.stderr and "not written by bayesfa" in proc.stderr
        assert digest(foreign) == before
    assert not any(p.suffix == ".cells" for p in tmp_path.iterdir()) and not (tmp_path / "ok.json").exists()
    # the writer the scripts share: its own file is replaced, a changed one is not
    sys.path.insert(0, str(bench))
    try:
        import guarded_out
    finally:
        sys.path.remove(str(bench))
    fresh = tmp_path / "new" / "results.json"
    guarded_out.write_out_json(fresh, {"rows": 1})
    guarded_out.write_out_json(fresh, {"rows": 2})
    assert json.loads(fresh.read_text()) == {"rows": 2}
    fresh.write_text("edited by hand\n")
    with pytest.raises(SystemExit) as exc:
        guarded_out.write_out_json(fresh, {"rows": 3})
    assert exc.value.code == 2 and fresh.read_text() == "edited by hand\n"
