"""Issue 13, items 1, 2, 4 and 5: run directories that are never clobbered, fits refused before
they start when they cannot fit in memory, damaged run files reported in one line, and
strict JSON from every ``--json``.

Each test reproduces one case of the issue; every one of them failed before the change
(``fit`` wrote into any folder and over any run, ``--states 12000`` sampled and then died of
a MemoryError, a truncated ``arrays.npz`` gave a ``BadZipFile`` traceback, ``diagnose``
needed ``arrays.npz``, ``score --json`` printed ``Infinity``).
"""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from bayesfa import memory, rundir
from bayesfa.cli import main
from bayesfa.datasets import pautomac_path
from bayesfa.methods import REGISTRY, FitResult, get_method
from bayesfa.pautomac import read_sample, write_sample, write_solution

CGS = ["--method", "cgs-pfa", "--states", "3", "--beta", "0.1", "--iterations", "12",
       "--burn-in", "4", "--period", "2", "--chains", "2", "--seed", "5", "--quiet"]


def _strict_json(text: str):
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``."""
    def refuse(name):
        raise AssertionError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def one_error_line(capsys, rc: int) -> str:
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "Traceback" not in err
    assert err.startswith("bayesfa: error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module")
def small_train(tmp_path_factory) -> Path:
    """300 strings of the bundled PAutomaC problem 24 (fits in a fraction of a second)."""
    path = tmp_path_factory.mktemp("data") / "small.train"
    write_sample(path, read_sample(pautomac_path(24, "train")).subset(range(300)))
    return path


@pytest.fixture(scope="module")
def other_train(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "other.train"
    write_sample(path, read_sample(pautomac_path(24, "train")).subset(range(300, 600)))
    return path


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


# -- 1. run directories are safe --------------------------------------------------------------
def test_fit_refuses_a_non_empty_folder_that_is_not_a_run(tmp_path, small_train, capsys):
    out = tmp_path / "photos"
    out.mkdir()
    (out / "holiday.jpg").write_bytes(b"precious")
    for force in ([], ["--force"]):  # --force replaces bayesfa runs only, never other folders
        rc = main(["fit", str(small_train), *CGS, "--out", str(out), *force])
        err = one_error_line(capsys, rc)
        assert str(out) in err and "not a bayesfa run" in err
    assert [p.name for p in out.iterdir()] == ["holiday.jpg"]
    assert (out / "holiday.jpg").read_bytes() == b"precious"


def test_fit_refuses_a_file_as_out(tmp_path, small_train, capsys):
    out = tmp_path / "file"
    out.write_text("x")
    one_error_line(capsys, main(["fit", str(small_train), *CGS, "--out", str(out)]))
    assert out.read_text() == "x"


@pytest.fixture
def finished_run(tmp_path, small_train, capsys) -> Path:
    run = tmp_path / "run"
    assert main(["fit", str(small_train), *CGS, "--out", str(run)]) == 0
    capsys.readouterr()
    return run


@pytest.mark.parametrize("change, expected", [
    (["--states", "4"], "--states 3 (now 4)"),
    (["--seed", "6"], "--seed 5 (now 6)"),
    (["--beta", "0.5"], "--beta 0.1 (now 0.5)"),
    ("other data", "other training data"),
], ids=["states", "seed", "beta", "data"])
def test_fit_refuses_a_run_made_with_other_data_or_options(finished_run, small_train, other_train,
                                                           capsys, change, expected):
    before = _snapshot(finished_run)
    train = other_train if change == "other data" else small_train
    extra = [] if change == "other data" else change
    rc = main(["fit", str(train), *CGS, *extra, "--out", str(finished_run)])
    err = one_error_line(capsys, rc)
    assert expected in err and "--force" in err, err
    assert _snapshot(finished_run) == before  # untouched


def test_fit_refuses_another_method_on_the_run(finished_run, small_train, capsys):
    rc = main(["fit", str(small_train), "--method", "oracle-pfa", "--states", "3", "--seed", "5",
               "--out", str(finished_run)])
    assert "--method cgs-pfa (now oracle-pfa)" in one_error_line(capsys, rc)


def test_same_command_on_a_finished_run_does_nothing(finished_run, small_train, capsys, monkeypatch):
    before = _snapshot(finished_run)
    method = get_method("cgs-pfa")

    def no_refit(*args, **kwargs):
        raise AssertionError("refitted an identical finished run")

    monkeypatch.setattr(type(method), "fit", no_refit)
    args = ["fit", str(small_train), *CGS, "--out", str(finished_run)]
    args.remove("--quiet")
    assert main(args + ["--jobs", "2"]) == 0  # --jobs does not change the result
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "already holds this finished run" in err
    assert _snapshot(finished_run) == before


def test_force_replaces_a_run_and_a_crash_leaves_the_old_one_whole(finished_run, small_train,
                                                                     capsys, monkeypatch):
    before = _snapshot(finished_run)
    method = get_method("cgs-pfa")
    real_fit = type(method).fit
    calls = []
    save_piece = []

    def crashing_fit(self, *args, **kwargs):
        calls.append(kwargs.get("workdir"))
        if save_piece:  # a chain finished before the crash
            kwargs["workdir"].mkdir(parents=True, exist_ok=True)
            (kwargs["workdir"] / "chain-0000.npz").write_bytes(b"work so far")
        raise KeyboardInterrupt  # the new fit dies half-way

    args = ["fit", str(small_train), *CGS, "--states", "4", "--out", str(finished_run), "--force"]
    monkeypatch.setattr(type(method), "fit", crashing_fit)
    assert main(args) == 130
    capsys.readouterr()
    assert _snapshot(finished_run) == before  # the old run is whole
    staging = finished_run.parent / f".{finished_run.name}.bayesfa-new"
    assert calls == [staging / "partial"]  # built beside it, in a work folder a rerun finds again
    assert not staging.exists()  # no work was saved: nothing is left behind
    assert rundir.load_run(finished_run).options["states"] == 3
    save_piece.append(True)
    assert main(args) == 130
    assert (staging / "partial" / "chain-0000.npz").read_bytes() == b"work so far"
    save_piece.clear()
    assert main(args) == 130  # the same command again: same work folder, kept
    assert calls == [staging / "partial"] * 3
    assert (staging / "partial" / "chain-0000.npz").read_bytes() == b"work so far"
    (staging / "partial" / "chain-0000.npz").unlink()

    # the swap itself fails: still the old run
    monkeypatch.setattr(type(method), "fit", real_fit)

    def broken_swap(new, old):
        raise KeyboardInterrupt
    monkeypatch.setattr(rundir, "replace_dir", broken_swap)
    assert main(args) == 130
    assert _snapshot(finished_run) == before
    assert (staging / "manifest.json").is_file()  # the complete new run waits beside it

    # rerun of the same command: no refit, just the swap
    monkeypatch.undo()
    monkeypatch.setattr(type(method), "fit", crashing_fit)
    calls.clear()
    assert main(args) == 0
    assert calls == []
    assert rundir.load_run(finished_run).options["states"] == 4
    assert not staging.exists()
    assert not (finished_run / "unfinished.json").exists() and not (finished_run / "partial").exists()


def test_replace_dir_swaps_whole_directories(tmp_path):
    old, new = tmp_path / "run", tmp_path / ".run.bayesfa-new"
    old.mkdir()
    new.mkdir()
    (old / "a").write_text("old")
    (new / "b").write_text("new")
    rundir.replace_dir(new, old)
    assert [p.name for p in old.iterdir()] == ["b"] and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing left aside


class FakeResumable:
    """A method that fits in ``pieces`` pieces and keeps each finished one in its workdir."""

    name = "fake-resumable"
    summary = "test double"
    resumable = True
    computed: list[int] = []
    interrupt_at: int | None = None

    def add_arguments(self, parser):
        parser.add_argument("--pieces", type=int, default=3)

    def fit(self, corpus, options, seed, progress, workdir=None):
        Path(workdir).mkdir(parents=True, exist_ok=True)
        values = []
        for i in range(options["pieces"]):
            piece = Path(workdir) / f"piece-{i}.npy"
            if not piece.exists():
                if i == self.interrupt_at:
                    raise KeyboardInterrupt
                self.computed.append(i)
                np.save(piece, np.array([seed * 10 + i]))
            values.append(int(np.load(piece)[0]))
        return FitResult({"values": np.array(values)}, {}, {})

    def predict_log_prob(self, arrays, options, corpus):
        return np.full(corpus.n_strings, -1.0)


FAKE = FakeResumable()


def test_an_interrupted_fit_resumes_where_it_stopped(tmp_path, small_train, capsys, monkeypatch):
    """The workdir survives the interrupt and the same command finds it again; a method with
    no ``estimate_memory`` is let through."""
    monkeypatch.setitem(REGISTRY, "fake-resumable", "test_run_safety:FAKE")
    monkeypatch.setattr(FAKE, "computed", [])
    run = tmp_path / "run"
    args = ["fit", str(small_train), "--method", "fake-resumable", "--seed", "4", "--out", str(run),
            "--quiet"]
    monkeypatch.setattr(FAKE, "interrupt_at", 2)
    assert main(args) == 130
    assert FAKE.computed == [0, 1]
    assert (run / "unfinished.json").is_file() and (run / "partial").is_dir()
    capsys.readouterr()
    # another command on the unfinished run is refused; the same one resumes
    rc = main(args[:-3] + ["--seed", "3", "--out", str(run)])
    assert "unfinished bayesfa run made with other settings: --seed 4 (now 3)" in one_error_line(capsys, rc)
    monkeypatch.setattr(FAKE, "interrupt_at", None)
    assert main(args) == 0
    assert FAKE.computed == [0, 1, 2]  # pieces 0 and 1 were not computed again
    assert rundir.load_run(run).arrays["values"].tolist() == [40, 41, 42]
    assert sorted(p.name for p in run.iterdir()) == ["arrays.npz", "manifest.json"]


# -- 2. refuse what cannot fit, before sampling ---------------------------------------------------
@pytest.mark.parametrize("states", ["100000", "12000"])
def test_fit_refuses_too_many_states_in_one_line(tmp_path, capsys, monkeypatch, states):
    """The issue's two cases, on the bundled problem 24 with the default schedule: refused up
    front, before any sampling (the sampler is replaced by one that fails the test if called;
    no wall-clock bound, which a loaded machine would break)."""
    from bayesfa.samplers.pfa import cgs_pfa

    def sampled(*args, **kwargs):
        raise AssertionError("the fit was sampled before being refused")

    monkeypatch.setattr(cgs_pfa, "sample_cgs_pfa", sampled)
    run = tmp_path / "run"
    rc = main(["fit", str(pautomac_path(24, "train")), "--method", "cgs-pfa", "--states", states,
               "--out", str(run)])
    err = one_error_line(capsys, rc)
    assert "needs about" in err and "TiB" in err and "available" in err
    for hint in ("--period", "--iterations", "--states", "--chains"):
        assert hint in err
    assert not run.exists()  # nothing written


def test_select_refuses_a_candidate_that_cannot_fit(tmp_path, small_train, capsys):
    rc = main(["select", str(small_train), "--method", "cgs-pfa", "--states", "3,20000",
               "--beta", "0.5", "--folds", "2", "--out", str(tmp_path / "sel"), "--quiet"])
    err = one_error_line(capsys, rc)
    assert "--states up to 20000" in err and "needs about" in err
    assert not (tmp_path / "sel").exists()


def test_refusal_follows_the_available_memory(tmp_path, small_train, capsys, monkeypatch):
    method = get_method("cgs-pfa")
    options = {"states": 3, "beta": 0.1, "iterations": 12, "burn_in": 4, "period": 2, "chains": 2,
               "jobs": 1}
    need = method.estimate_memory(read_sample(small_train), options)
    monkeypatch.setenv("BAYESFA_AVAILABLE_MEMORY", str(need - 1))
    rc = main(["fit", str(small_train), *CGS, "--out", str(tmp_path / "a")])
    assert memory.format_bytes(need) in one_error_line(capsys, rc)
    monkeypatch.setenv("BAYESFA_AVAILABLE_MEMORY", str(need))
    assert main(["fit", str(small_train), *CGS, "--out", str(tmp_path / "b")]) == 0


def test_oracles_refuse_too_many_states(tmp_path, small_train, capsys):
    for name in ("oracle-pfa", "oracle-hmm", "oracle-pdfa"):
        extra = ["--pdfa-inference", "mcmc"] if name == "oracle-pdfa" else []
        rc = main(["fit", str(small_train), "--method", name, "--states", "20000", *extra,
                   "--out", str(tmp_path / name)])
        assert "needs about" in one_error_line(capsys, rc)


def test_available_memory_is_plausible():
    avail = memory.available_memory()
    assert 16 * 2**20 < avail < 2**50
    assert memory.format_bytes(1536) == "1.5 KiB" and memory.format_bytes(3 * 2**40) == "3 TiB"


def _measured_peak(method, corpus, options, seed=1) -> int:
    """tracemalloc's peak (numpy registers its buffers) over fit, then predict on ``corpus``
    with the fit's arrays still held, as in ``select`` (and as ``predict`` after loading)."""
    tracemalloc.start()
    try:
        fit = method.fit(corpus, dict(options), seed, False)
        logp = method.predict_log_prob(fit.arrays, dict(options), corpus)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.all(np.isfinite(logp))
    return peak


#: The estimates are upper bounds, at most this factor above the measured peak. Measured
#: on this project's machines: 1.3-1.5 for cgs-pfa (the forward pass's gathered copies
#: depend on how strings share letters; the estimate assumes the worst), 1.3 for oracle-pdfa.
ESTIMATE_FACTOR = 1.8


@pytest.mark.parametrize("states, iterations, chains, n_strings", [
    (30, 130, 2, 300),   # prediction (forward messages) dominates
    (60, 70, 2, 60),     # the stored draws and the plug-in xi~ chunk dominate
])
def test_cgs_pfa_memory_estimate_bounds_the_measured_peak(states, iterations, chains, n_strings):
    method = get_method("cgs-pfa")
    corpus = read_sample(pautomac_path(24, "train")).subset(range(n_strings))
    options = {"states": states, "beta": 0.1, "iterations": iterations, "burn_in": 10,
               "period": 1, "chains": chains, "jobs": 1}
    method.fit(corpus.subset(range(3)), {**options, "iterations": 2, "burn_in": 1, "chains": 1},
               0, False)  # compile outside the measurement
    estimate = method.estimate_memory(corpus, options)
    peak = _measured_peak(method, corpus, options)
    assert peak <= estimate <= ESTIMATE_FACTOR * peak, (estimate / peak, estimate, peak)


@pytest.mark.parametrize("states, n_strings", [(30, 2000), (60, 1500)])
def test_cgs_pfa_memory_estimate_bounds_the_peak_with_strings_in_blocks(monkeypatch, states,
                                                                        n_strings):
    """The forward budget lowered to 1 MiB, so that Eq. 6 and the forward pass run over blocks
    of strings (bayesfa.forward.log_mean_exp_by_strings, forward_chunks), as they do at
    millions of strings with the real 256 MiB: the estimate follows the blocks (the same
    estimate with the 256 MiB budget, one block, is 6-14 times this peak; measured 1.42-1.46
    times with the blocks)."""
    from bayesfa import forward

    method = get_method("cgs-pfa")
    corpus = read_sample(pautomac_path(24, "train")).subset(range(n_strings))
    options = {"states": states, "beta": 0.1, "iterations": 60, "burn_in": 10, "period": 1,
               "chains": 2, "jobs": 1}
    method.fit(corpus.subset(range(3)), {**options, "iterations": 2, "burn_in": 1, "chains": 1},
               0, False)  # compile outside the measurement
    monkeypatch.setattr(forward, "_CHUNK_BYTES", 1 << 20)
    assert forward.forward_chunks(1, n_strings, states + 1)[1] < n_strings
    assert forward.mean_block(2 * 50, n_strings) < n_strings
    estimate = method.estimate_memory(corpus, options)
    peak = _measured_peak(method, corpus, options)
    assert peak <= estimate <= ESTIMATE_FACTOR * peak, (estimate / peak, estimate, peak)


def test_oracle_pdfa_memory_estimate_bounds_the_measured_peak():
    method = get_method("oracle-pdfa")
    corpus = read_sample(pautomac_path(24, "train")).subset(range(150))
    options = {"states": 1, "alpha": 1.0, "beta": 1.0, "gamma": 1.0, "iterations": 10,
               "burn_in": 5, "period": 1, "chains": 1, "jobs": 1, "pdfa_inference": "enumerate",
               "max_tables": 10**6}
    estimate = method.estimate_memory(corpus, options)
    peak = _measured_peak(method, corpus, options)
    assert peak <= estimate <= ESTIMATE_FACTOR * peak, (estimate / peak, estimate, peak)


# -- 4. no traceback from a damaged run file ----------------------------------------------------
def test_truncated_arrays_npz_is_one_line(finished_run, capsys, tmp_path):
    arrays = finished_run / "arrays.npz"
    arrays.write_bytes(arrays.read_bytes()[:200])
    rc = main(["predict", str(finished_run), str(pautomac_path(24, "test")), "--out", str(tmp_path / "p")])
    err = one_error_line(capsys, rc)
    assert f"{arrays}: " in err and "SHA-256 differs" in err  # not the file the manifest records
    # diagnose needs only manifest.json and trace.nc
    arrays.unlink()
    assert main(["diagnose", "--json", str(finished_run)]) == 0
    summary = _strict_json(capsys.readouterr().out)
    assert "log_joint" in summary.get("variables", summary)


@pytest.mark.parametrize("name, damage", [
    ("trace.nc", lambda b: b[:len(b) // 2]),
    ("trace.nc", lambda b: b""),
    ("manifest.json", lambda b: b[:len(b) // 2]),
    ("manifest.json", lambda b: b"[" * 100_000),
    ("manifest.json", lambda b: b'{"format": "bayesfa-run/1", "method": 3, "options": {}}'),
    ("manifest.json", lambda b: b.replace(b'"alphabet_size": 5', b'"alphabet_size": "x"')),
    ("manifest.json", lambda b: b.replace(b'"beta": 0.1', b'"beta": NaN')),
], ids=["trace-half", "trace-empty", "manifest-half", "manifest-deep", "manifest-method",
        "manifest-alphabet", "manifest-nan"])
def test_damaged_run_file_is_one_line_naming_it(finished_run, capsys, tmp_path, name, damage):
    path = finished_run / name
    path.write_bytes(damage(path.read_bytes()))
    for argv in (["diagnose", str(finished_run)],
                 ["predict", str(finished_run), str(pautomac_path(24, "test")), "--out", str(tmp_path / "p")]):
        if name == "trace.nc" and argv[0] == "predict":
            continue  # predict does not read the trace
        err = one_error_line(capsys, main(argv))
        assert str(path) in err, err


def test_arrays_that_do_not_fit_the_manifest(finished_run, capsys, tmp_path):
    """A manifest edited by hand is refused by its fingerprint (issue 26); arrays that do not
    fit a method are still refused when the manifest is consistent (a method's own check)."""
    manifest = json.loads((finished_run / "manifest.json").read_text())
    manifest["options"]["beta"] = -1.0  # edited by hand: the predictive is not a probability
    (finished_run / "manifest.json").write_text(json.dumps(manifest))
    rc = main(["predict", str(finished_run), str(pautomac_path(24, "test")), "--out", str(tmp_path / "p")])
    err = one_error_line(capsys, rc)
    assert str(finished_run / "manifest.json") in err and "fingerprint" in err
    manifest["options"]["beta"] = 0.1
    manifest["method"] = "oracle-pfa"  # arrays of cgs-pfa, manifest of oracle-pfa
    manifest["fingerprint"] = rundir.manifest_fingerprint(manifest)  # a consistent forgery
    (finished_run / "manifest.json").write_text(json.dumps(manifest))
    rc = main(["perplexity", str(finished_run), str(pautomac_path(24, "test"))])
    assert "does not fit" in one_error_line(capsys, rc)


# -- 5. JSON everywhere is JSON -------------------------------------------------------------------
def test_score_json_with_a_zero_probability(tmp_path, capsys):
    solution = pautomac_path(24, "solution")
    pred = tmp_path / "pred.txt"
    probs = np.full(1000, 1e-3)
    probs[0] = 0.0
    write_solution(pred, probs)
    assert main(["score", "--json", str(pred), str(solution)]) == 0
    out = capsys.readouterr().out
    result = _strict_json(out)
    assert result["score"] is None and result["ratio"] is None
    assert result["score_note"].startswith("infinite: ") and "probability 0" in result["score_note"]
    assert math.isfinite(result["min_score"])


def test_perplexity_json_with_a_zero_probability(tmp_path, small_train, capsys, monkeypatch):
    """A run that gives a test string probability 0 (a PDFA can): perplexity is infinite."""
    monkeypatch.setitem(REGISTRY, "fake-resumable", "test_run_safety:FAKE")
    run = tmp_path / "run"
    assert main(["fit", str(small_train), "--method", "fake-resumable", "--out", str(run), "--quiet"]) == 0
    monkeypatch.setattr(FAKE, "predict_log_prob",
                        lambda arrays, options, corpus: np.array([-1.0] + [-np.inf] * (corpus.n_strings - 1)))
    assert main(["perplexity", "--json", str(run), str(pautomac_path(24, "test"))]) == 0
    result = _strict_json(capsys.readouterr().out)
    assert result["perplexity"] is None and result["log_prob"] is None
    assert result["perplexity_note"] == "infinite: 999 test string(s) have probability 0 under the run"
    assert result["log_prob_note"].startswith("minus infinity: 999 test string(s)")


def test_jsonable_notes_every_non_finite_number():
    obj = {"a": float("inf"), "b": [np.float64("nan"), {"c": -np.inf}], "d": np.int64(3),
           "e": (1.5, Path("x"))}
    out = rundir.jsonable(obj, {"a": "why"})
    text = json.dumps(out, allow_nan=False)
    assert _strict_json(text) == {"a": None, "a_note": "infinite: why", "b": [None, {"c": None,
                                  "c_note": "minus infinity"}], "d": 3, "e": [1.5, "x"]}


def test_manifest_with_nan_info_is_strict_json(tmp_path):
    run = rundir.save_run(tmp_path / "r", method="cgs-pfa", options={"beta": 0.1}, seed=0,
                          arrays={"x": np.zeros(2)}, info={"max_r_hat": float("nan")})
    manifest = _strict_json((run / "manifest.json").read_text())
    assert manifest["info"] == {"max_r_hat": None, "max_r_hat_note": "not a number"}
