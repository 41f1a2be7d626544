"""Progress and estimates of the methods that run long without a word (issue 26, item 4):
cvb0 / gcvb0 / cvb2 and hpyp report progress and an estimated time on standard error when
``progress`` is on, without changing a bit of their results; the NumPyro oracles refuse data
far beyond toy size in one line (before any sampling) unless ``--allow-large``."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pytest

from bayesfa.corpus import Corpus


def _corpus(n_strings: int = 40, seed: int = 3) -> Corpus:
    rng = np.random.default_rng(seed)
    return Corpus.from_strings([rng.integers(0, 3, size=rng.integers(0, 9)).tolist()
                                for _ in range(n_strings)], 3)


def _options(method, argv: list[str]) -> dict:
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    return vars(parser.parse_args(argv))


# -- cvb0 / gcvb0 / cvb2 -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cvb0", "cvb2", "gcvb0"])
def test_cvb_progress_and_estimate_leave_results_unchanged(name, monkeypatch, capsys):
    """With progress on, positions run one per chunk (PROGRESS_SECONDS tiny) and the estimate
    is forced (ESTIMATE_SECONDS = 0): the bar and the estimate reach stderr, and q, E_q[C]
    and the trace are bit-identical to the silent fit."""
    from bayesfa.learners import cvb

    fit = {"cvb0": cvb.fit_cvb0, "cvb2": cvb.fit_cvb2, "gcvb0": cvb.fit_gcvb0}[name]
    corpus = _corpus()
    quiet = fit(corpus, 3, 0.1, iterations=5, tol=1e-12, seed=7, progress=False)
    capsys.readouterr()
    monkeypatch.setattr(cvb, "PROGRESS_SECONDS", 1e-9)
    monkeypatch.setattr(cvb, "ESTIMATE_SECONDS", 0.0)
    loud = fit(corpus, 3, 0.1, iterations=5, tol=1e-12, seed=7, progress=True)
    err = capsys.readouterr().err
    assert f"{name}: estimated roughly " in err and "for 5 iterations" in err, err
    # the estimate before the first iteration, timed on a pass over the data (the chunked
    # sweep's own estimate alone kept the test green when the start's was never said)
    assert "positions of a pass over the data" in err, err
    assert f"/{6 if name == 'gcvb0' else 5} [" in err, err        # the tqdm bar
    np.testing.assert_array_equal(loud.q, quiet.q)
    np.testing.assert_array_equal(loud.expected_counts, quiet.expected_counts)
    assert loud.trace.keys() == quiet.trace.keys()
    for key in quiet.trace:
        np.testing.assert_array_equal(loud.trace[key], quiet.trace[key])


@pytest.mark.parametrize("name", ["cvb0", "cvb2", "gcvb0"])
def test_cvb_names_each_stage_beside_the_bar_when_it_begins(name, monkeypatch):
    """The stages named beside the bar, in order: the random start, then per iteration the
    sums recomputed (every ``_REFRESH``-th iteration only, from the first), the sweep and the
    recording; L-BFGS-B for GCVB0. Issue 39: the refresh's stage named at iterations 0-15
    (``it & _REFRESH == 0``) lived."""
    from tqdm import tqdm

    from bayesfa.learners import cvb

    said = []
    real = tqdm.set_description_str

    def record(bar, desc=None, refresh=True):
        said.append(desc)
        return real(bar, desc, refresh)

    monkeypatch.setattr(tqdm, "set_description_str", record)
    fit = {"cvb0": cvb.fit_cvb0, "cvb2": cvb.fit_cvb2, "gcvb0": cvb.fit_gcvb0}[name]
    iterations = cvb._REFRESH + 3
    fit(_corpus(), 3, 0.1, iterations=iterations, tol=1e-12, seed=7, progress=True)
    if name == "gcvb0":
        want = ["random start", "L-BFGS-B"]
    else:
        want = ["random start"] + [s for it in range(iterations) for s in
                                   (["recomputing the sums"] if it % cvb._REFRESH == 0 else [])
                                   + ["sweep", "recording"]]
    assert said == [f"{name} ({s})" for s in want]


class _BarRecorder:
    """The part of cvb's recorder a chunked sweep uses: the bar's moves go to ``steps``."""

    name, total, bar = "cvb0", 1, object()

    def __init__(self, steps: list):
        self.steps = steps

    def advance(self, fraction):
        self.steps.append(fraction)

    def say(self, text):
        self.said = getattr(self, "said", []) + [text]


def test_cvb_chunked_sweep_moves_the_bar_within_an_iteration(monkeypatch):
    """One chunk per position: the bar moves M times by 1/M in the first iteration."""
    from bayesfa.learners import cvb

    monkeypatch.setattr(cvb, "PROGRESS_SECONDS", 1e-9)
    steps = []
    positions = np.arange(10)
    seen = []
    change = cvb._chunked_sweep(lambda p: seen.extend(p.tolist()) or float(p[0]), positions,
                                _BarRecorder(steps), {"chunk": 1, "estimated": False}, True)
    assert seen == list(range(10)) and change == 9.0
    assert len(steps) == 10 and sum(steps) == pytest.approx(1.0)


def test_cvb_chunks_grow_and_the_last_is_what_remains(monkeypatch):
    """A slow-changing chunk size: with PROGRESS_SECONDS far above a chunk's time the chunk
    doubles (4, then up to 8), and the last chunk is what remains of the positions, so the bar
    moves by exactly one iteration (a survivor took ``m * start`` for ``m - start``: a first
    chunk of one position, and chunks past the end that moved the bar by 1.5)."""
    from bayesfa.learners import cvb

    monkeypatch.setattr(cvb, "PROGRESS_SECONDS", 1e9)
    steps, seen = [], []
    state = {"chunk": 4, "estimated": False}
    cvb._chunked_sweep(lambda p: seen.append(p.tolist()) or 0.0, np.arange(10),
                       _BarRecorder(steps), state, True)
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7, 8, 9]]
    assert steps == [0.4, 0.6] and state["chunk"] == 12  # twice the last chunk


def test_cvb_chunked_sweep_says_no_estimate_once_the_iteration_is_done(monkeypatch):
    """The chunked sweep's estimate is for positions still to come: a chunk that ends the
    first iteration says none (the iteration's own estimate follows), even past
    PROGRESS_SECONDS; 300 positions, so that the counts are distinct int objects (issue 39:
    ``start is not m`` for ``start < m`` lived)."""
    from bayesfa.learners import cvb

    monkeypatch.setattr(cvb, "PROGRESS_SECONDS", 1e-9)
    monkeypatch.setattr(cvb, "ESTIMATE_SECONDS", 0.0)
    rec = _BarRecorder([])
    cvb._chunked_sweep(lambda p: 0.0, np.arange(300), rec, {"chunk": 300, "estimated": False},
                       True)
    assert rec.steps == [1.0] and getattr(rec, "said", []) == []
    rec = _BarRecorder([])
    state = {"chunk": 100, "estimated": False}
    cvb._chunked_sweep(lambda p: 0.0, np.arange(300), rec, state, True)
    assert len(rec.said) == 1 and "100 of 300 positions" in rec.said[0] and state["estimated"]


@pytest.mark.parametrize("name", ["cvb0", "cvb2"])
def test_cvb_first_iteration_estimate_once_progress_seconds_have_passed(name, monkeypatch,
                                                                        capsys):
    """The chunked sweep's own estimate (time per position of the first iteration) is said
    once PROGRESS_SECONDS have passed (here at once); the comparison reversed passed every
    test, since the iteration-level estimate printed the same first words."""
    from bayesfa.learners import cvb

    fit = {"cvb0": cvb.fit_cvb0, "cvb2": cvb.fit_cvb2}[name]
    monkeypatch.setattr(cvb, "PROGRESS_SECONDS", 1e-9)
    monkeypatch.setattr(cvb, "ESTIMATE_SECONDS", 0.0)
    fit(_corpus(), 3, 0.1, iterations=5, tol=1e-12, seed=7, progress=True)
    err = capsys.readouterr().err
    assert err.count("positions of the first iteration") == 1, err


def test_cvb_short_fit_prints_no_estimate(capsys):
    from bayesfa.learners import cvb

    cvb.fit_cvb0(_corpus(), 2, 0.1, iterations=3, seed=0, progress=True)
    assert "estimated" not in capsys.readouterr().err


def test_estimate_message_threshold():
    from bayesfa.learners.cvb import ESTIMATE_SECONDS, estimate_message

    assert estimate_message("cvb0", ESTIMATE_SECONDS / 10, 5, "x") is None
    text = estimate_message("cvb0", 3.0, 200, "the first iteration")
    assert text.startswith("cvb0: estimated roughly 600 s for 200 iterations")


# -- the oracles' size limits ------------------------------------------------------------------

ORACLES = ("oracle-pfa", "oracle-hmm", "oracle-pdfa")


@pytest.fixture
def no_sampling(monkeypatch):
    """Any start of the oracles' NumPyro sampling or enumeration fails the test."""
    from bayesfa.models import hmm, pdfa, pfa

    def boom(*args, **kwargs):
        raise AssertionError("sampling started")

    for module, name in ((pfa, "run_nuts"), (hmm, "run_nuts"), (pdfa, "run_gibbs"),
                         (pdfa, "enumerate_posterior"), (pdfa, "enumerate_posterior_hyper")):
        monkeypatch.setattr(module, name, boom)


@pytest.mark.parametrize("name", ORACLES)
def test_oracle_refuses_pautomac_training_set_in_one_line(name, tmp_path, capsys, no_sampling):
    from bayesfa.cli import main
    from bayesfa.datasets import pautomac_path

    out = tmp_path / "run"
    rc = main(["fit", str(pautomac_path(24, "train")), "--method", name, "--states", "2",
               "--iterations", "100", "--burn-in", "50", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 2, captured
    err = captured.err
    assert err.startswith("bayesfa: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert "4998 distinct strings up to 98 letters" in err and "toy data" in err, err
    assert " s for " in err and "--allow-large" in err, err
    assert not out.exists() or not any(out.iterdir())


def test_oracle_allow_large_is_declared_and_passes_the_check(capsys):
    from bayesfa.datasets import pautomac_path
    from bayesfa.methods import get_method
    from bayesfa.models import oracle_methods as om
    from bayesfa.pautomac import read_sample

    corpus = read_sample(pautomac_path(24, "train"))
    for name in ORACLES:
        method = get_method(name)
        options = _options(method, ["--states", "2"])
        assert options["allow_large"] is False
        with pytest.raises(om.InputError):
            om.check_size(name, corpus, options)
        om.check_size(name, corpus, _options(method, ["--states", "2", "--allow-large"]))
        err = capsys.readouterr().err
        assert err.startswith(f"bayesfa: warning: {name} is a reference for toy data") \
            and err.count("\n") == 1, err


def test_oracle_size_thresholds():
    """The data size is distinct strings x longest string x states^2; the warning zone lies
    between WARN_CELLS and REFUSE_CELLS."""
    from bayesfa.models import oracle_methods as om

    toy = Corpus.from_strings([[0, 1], [0], [], [0, 1, 1], [1, 0], [0, 1]], 2)
    assert om.data_cells(toy, 2) == 5 * 3 * 4
    long = Corpus.from_strings([[i % 2] * 50 + [1] * (i // 2) for i in range(100)], 2)
    cells = om.data_cells(long, 2)
    assert om.WARN_CELLS < cells <= om.REFUSE_CELLS
    options = {"states": 2, "iterations": 10, "chains": 1}
    om.check_size("oracle-pfa", long, options)          # warns, does not raise
    assert om.data_cells(long, 4) > om.REFUSE_CELLS
    with pytest.raises(om.InputError, match="beyond its limit"):
        om.check_size("oracle-pfa", long, {**options, "states": 4})


def test_oracle_toy_data_still_fit(capsys):
    from bayesfa.methods import get_method

    toy = Corpus.from_strings([[0, 1], [0], [], [0, 1, 1], [1, 0]], 2)
    method = get_method("oracle-pdfa")            # exact enumeration: fast
    result = method.fit(toy, _options(method, ["--states", "2"]), seed=0, progress=False)
    assert result.info["inference"] == "enumerate" and np.isfinite(result.info["log_marginal"])
    assert "warning" not in capsys.readouterr().err


def test_cvb_first_iteration_estimate_is_its_pace_times_the_positions(monkeypatch):
    """The estimate printed in a VB fit's first iteration (``_chunked_sweep``) is the time per
    position so far times the positions of an iteration, times the iterations: on a clock
    that advances ``pace`` seconds per position swept, ``pace x m x total``, and the pace
    printed is ``pace x m`` (a pace taken modulo the positions, not divided by them, is a
    surviving cosmic-ray mutant of issue 39)."""
    import re
    from types import SimpleNamespace

    from bayesfa.learners import cvb

    pace, m, total = 0.004, 3000, 7
    now = [50.0]
    said = []

    def sweep(chunk):
        now[0] += pace * chunk.size
        return 0.0

    rec = SimpleNamespace(name="cvb0", total=total, advance=lambda f: None, say=said.append)
    monkeypatch.setattr(cvb, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    monkeypatch.setattr(cvb, "ESTIMATE_SECONDS", 0.0)
    state = {"chunk": 1, "estimated": False}
    cvb._chunked_sweep(sweep, np.arange(m), rec, state, True)
    (line,) = said
    got = re.match(r"cvb0: estimated roughly (\d+) s for 7 iterations at most \(([0-9.e+-]+) s each", line)
    assert got, line
    assert int(got.group(1)) == round(pace * m * total) and float(got.group(2)) == float(f"{pace * m:.3g}")


# -- hpyp --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"discount": 0.4, "concentration": 2.0, "sequence": True}])
def test_hpyp_progress_and_estimate_leave_draws_unchanged(kw, monkeypatch, capsys):
    """With progress the chain runs one sweep per kernel call (bar after each sweep) and the
    estimate is forced (ESTIMATE_SECONDS = 0): every array and trace is bit-identical to the
    one-call chain."""
    from bayesfa.samplers.ngram import hpyp

    corpus = _corpus(60)
    args = dict(iterations=12, burn_in=3, period=2, chains=2, seed=5, **kw)
    quiet = hpyp.sample_hpyp(corpus, 3, **args)
    assert capsys.readouterr().err == ""  # progress is off by default (issue 39)
    monkeypatch.setattr(hpyp, "ESTIMATE_SECONDS", 0.0)
    loud = hpyp.sample_hpyp(corpus, 3, progress=True, **args)
    err = capsys.readouterr().err
    assert err.count("hpyp: estimated ") == 1 and "for 2 chains of 12 sweeps" in err, err
    assert "/24 " in err and "sweep" in err.replace("sweeps", ""), err   # the tqdm bar
    assert quiet.arrays.keys() == loud.arrays.keys()
    for key in quiet.arrays:
        np.testing.assert_array_equal(loud.arrays[key], quiet.arrays[key])
    for key in quiet.trace:
        np.testing.assert_array_equal(loud.trace[key], quiet.trace[key])


def test_hpyp_bar_counts_every_sweep_of_every_chain_once(bars):
    """The bar's total is chains x iterations and its moves add up to it exactly: the sweeps
    run (burn-in and draws), plus, per chain, the iterations after its last draw that are
    not run (here 43 iterations: 10 burn-in, 8 draws of 4 sweeps, 1 left over)."""
    from bayesfa.samplers.ngram import hpyp

    hpyp.sample_hpyp(_corpus(30), 3, iterations=43, burn_in=10, period=4, chains=2, seed=1,
                     progress=True)
    (bar,) = bars
    assert bar.total == 2 * 43 and sum(bar.steps) == bar.total and bar.closed


def test_hpyp_method_passes_progress(monkeypatch, capsys):
    from bayesfa.methods import get_method
    from bayesfa.samplers.ngram import hpyp

    monkeypatch.setattr(hpyp, "ESTIMATE_SECONDS", 0.0)
    method = get_method("hpyp")
    method.fit(_corpus(20), _options(method, ["--iterations", "4", "--burn-in", "1"]), 0, True)
    assert "hpyp: estimated" in capsys.readouterr().err


# -- every other method: a bar update per unit of work, results bit-identical -----------------

class _Bar:
    """Stands in for ``tqdm.tqdm``: records every update and every line written above it."""

    made: list = []

    def __init__(self, *args, total=None, **kwargs):
        self.total, self.n, self.steps, self.lines, self.closed = total, 0, [], [], False
        self.kwargs = kwargs
        _Bar.made.append(self)

    def update(self, n=1):
        self.steps.append(n)
        self.n += n

    def write(self, text, file=None):
        self.lines.append(text)

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        self.closed = True


def _assert_about_once_a_second(steps, gaps, pace):
    """A bar paced by ``PROGRESS_SECONDS = 1``: ``steps`` its updates and ``gaps`` the clock
    between them, each unit of work costing ``pace`` seconds. The first call does one unit;
    the calls double while shorter than half a second; from then on each lasts between half a
    second and a second (the last excepted: it ends with the work)."""
    assert steps[0] == 1 and np.isclose(gaps[0], pace)
    ramp = int(np.argmax(gaps >= 0.5))  # the first call of half a second or more
    assert gaps[ramp] >= 0.5 and all(b == 2 * a for a, b in zip(steps[:ramp], steps[1:ramp]))
    steady = gaps[ramp:-1]
    assert steady.size >= 3, (steps, gaps)  # the work is long enough to see the pace
    assert np.all(gaps <= 1.0 + 1e-9) and np.all(steady >= 0.5), gaps


@pytest.fixture
def bars(monkeypatch):
    """``tqdm.tqdm`` replaced by :class:`_Bar` (the methods import it when a fit starts);
    the bars made, in order."""
    import tqdm

    _Bar.made = []
    monkeypatch.setattr(tqdm, "tqdm", _Bar)
    return _Bar.made


def _assert_same_fit(a, b) -> None:
    assert a.arrays.keys() == b.arrays.keys() and a.trace.keys() == b.trace.keys()
    for key in a.arrays:
        np.testing.assert_array_equal(np.asarray(a.arrays[key]), np.asarray(b.arrays[key]), err_msg=key)
    for key in a.trace:
        np.testing.assert_array_equal(a.trace[key], b.trace[key], err_msg=key)


CHAIN_METHODS = ("cgs-sg", "cgs-hmm", "cgs-hmm-star", "ipfa", "pdfa", "pdia", "pdia-smoothed")


@pytest.mark.parametrize("name", CHAIN_METHODS)
def test_chain_sampler_reports_every_sweep_and_estimates(name, bars, monkeypatch):
    """Blocks of one sweep (``_BLOCK_UNITS`` = 1; PDFA / PDIA report every sweep anyway) and
    ``--period 3``: the bar moves by 1 once per sweep of every chain, a draw's sweeps
    included (none is more than a block apart), the estimate is written once (thresholds 0),
    and every array and trace is bit-identical to the fit without progress (default blocks)."""
    from bayesfa.methods import get_method
    from bayesfa.samplers import chains
    from bayesfa.samplers.pfa import cgs_hmm, ipfa

    method = get_method(name)
    argv = ["--iterations", "11", "--burn-in", "5", "--period", "3", "--chains", "2"]
    if "states" in _options(method, []):
        argv += ["--states", "2"]
    options = _options(method, argv)
    corpus = _corpus(30)
    quiet = method.fit(corpus, options, 4, False)
    assert bars == []
    monkeypatch.setattr(cgs_hmm, "_BLOCK_UNITS", 1)
    monkeypatch.setattr(ipfa, "_BLOCK_UNITS", 1)
    monkeypatch.setattr(chains, "ESTIMATE_SECONDS", 0.0)
    monkeypatch.setattr(chains, "_RESUMED_SECONDS", 0.0)
    loud = method.fit(corpus, options, 4, True)
    (bar,) = bars
    sweeps = 2 * (5 + 2 * 3)                       # chains x (burn-in + draws x period)
    assert bar.total == sweeps and bar.closed
    assert bar.steps == [1] * sweeps, bar.steps
    assert len(bar.lines) == 1 and bar.lines[0].startswith(f"{name}: estimated roughly "), bar.lines
    _assert_same_fit(loud, quiet)


def test_chain_estimate_times_only_the_sweeps_run_after_the_bar_starts(bars, monkeypatch):
    """``chains.progress_callback`` on a fake clock: sweeps reported within
    ``_RESUMED_SECONDS`` of the bar's start (chains finished or resumed before) are not timed;
    the estimate is the pace of the sweeps reported after them times the sweeps left: 3
    reported at 0.01 s, then 5 at 1.01 s of a total of 100 give 92 left at 1.01 / 5 s a
    sweep. (Issue 39's surviving cosmic-ray mutant ``before = [-1, False]`` timed 6.)"""
    from bayesfa.samplers import chains

    clock = [100.0]
    monkeypatch.setattr(chains.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(chains, "ESTIMATE_SECONDS", 0.0)
    on_sweeps, close = chains.progress_callback(True, 1, 100, "cgs-pfa")
    (bar,) = bars
    clock[0] += 0.01
    on_sweeps(3)
    assert bar.lines == []
    clock[0] += 1.0
    on_sweeps(5)
    clock[0] += 1.0
    on_sweeps(5)  # estimated once
    close()
    assert bar.n == 13 and bar.closed
    assert bar.lines == ["cgs-pfa: estimated roughly 19 s for the 92 sweeps left (0.202 s a "
                         "sweep, timed on the first 5)"], bar.lines


def test_cgs_sg_draws_in_blocks_are_the_draws_of_one_call(monkeypatch):
    """A draw of more sweeps than a block is made in blocks (progress and Ctrl-C between
    them): the chain is bit-identical to ``sample_draws(period)`` in one call."""
    from bayesfa.samplers.pfa import cgs_hmm
    from bayesfa.samplers.pfa.cgs_sg import sample_cgs_sg

    corpus = _corpus(30)
    args = (corpus, 3, 0.1, 25, 4, 7, 1, 2)
    whole = sample_cgs_sg(*args)
    seen = []
    monkeypatch.setattr(cgs_hmm, "_BLOCK_UNITS", 1)
    split = sample_cgs_sg(*args, on_sweeps=seen.append)
    assert seen == [1] * 25
    for field in ("counts", "graph", "z"):
        np.testing.assert_array_equal(getattr(split, field), getattr(whole, field), err_msg=field)
    assert split.trace.keys() == whole.trace.keys()
    for key in whole.trace:
        np.testing.assert_array_equal(split.trace[key], whole.trace[key], err_msg=key)


def test_cgs_sg_draws_are_grouped_into_blocks_of_at_most_a_block(monkeypatch):
    """Blocks of 7 sweeps and ``--period 2``: the burn-in's 4 sweeps are one block, then
    each block makes as many whole draws as fit in 7 sweeps (3 draws, 6 sweeps), so progress
    and checkpoints come about once a block, not once a draw; the chain is the one-call
    chain."""
    from bayesfa.samplers.pfa import cgs_hmm
    from bayesfa.samplers.pfa.cgs_sg import sample_cgs_sg

    corpus = _corpus(30)
    args = (corpus, 3, 0.1, 4 + 9 * 2, 4, 2, 1, 2)  # 9 draws, 2 sweeps apart, one chain
    whole = sample_cgs_sg(*args)
    seen = []
    monkeypatch.setattr(cgs_hmm, "_BLOCK_UNITS", 7 * 3 * corpus.n_letters)  # 7 sweeps a block
    split = sample_cgs_sg(*args, on_sweeps=seen.append)
    assert seen == [4, 6, 6, 6]
    for field in ("counts", "graph", "z"):
        np.testing.assert_array_equal(getattr(split, field), getattr(whole, field), err_msg=field)


def test_hmm_em_reports_every_em_iteration(bars, monkeypatch):
    """One update per EM iteration of every restart (hmmlearn's monitor), the rest of a
    restart's share when ``--tol`` stops it early; the estimate of
    :func:`bayesfa.learners.cvb.estimate_message` once (threshold 0); a bar on standard
    error that leaves no line behind when done (``leave=False``); same model."""
    from bayesfa.learners import cvb
    from bayesfa.methods import get_method

    method = get_method("hmm-em")
    options = _options(method, ["--states", "2", "--restarts", "3", "--n-iter", "6"])
    corpus = _corpus(30)
    quiet = method.fit(corpus, options, 2, False)
    monkeypatch.setattr(cvb, "ESTIMATE_SECONDS", 0.0)
    loud = method.fit(corpus, options, 2, True)
    (bar,) = bars
    iterations = [r["iterations"] for r in loud.info["restarts"]]
    assert bar.total == 18 and bar.n == 18 and bar.closed
    assert bar.kwargs["leave"] is False and bar.kwargs["file"] is sys.stderr
    assert bar.steps.count(1) >= sum(iterations) and len(bar.steps) == sum(iterations) + 3
    assert len(bar.lines) == 1 and bar.lines[0].startswith("hmm-em: estimated roughly "), bar.lines
    assert "for 18 iterations" in bar.lines[0]
    _assert_same_fit(loud, quiet)
    assert [r["log_likelihood"] for r in loud.info["restarts"]] == \
        [r["log_likelihood"] for r in quiet.info["restarts"]]


def test_hmm_em_bar_ends_at_its_total_when_tol_stops_every_restart(bars):
    """``--tol`` large enough to stop every restart after two EM iterations: each restart's
    bar still ends at its share (``(r + 1) * n_iter``), so the bar ends at ``restarts * n_iter``
    after ``2 * restarts`` one-iteration steps and one jump a restart (issue 39: a mutant that
    jumped by ``(r + 1) * n_iter % bar.n`` passed while no restart stopped early)."""
    from bayesfa.methods import get_method

    method = get_method("hmm-em")
    options = _options(method, ["--states", "2", "--restarts", "3", "--n-iter", "7",
                                "--tol", "1e9"])
    fit = method.fit(_corpus(30), options, 2, True)
    (bar,) = bars
    assert [r["iterations"] for r in fit.info["restarts"]] == [2, 2, 2]
    assert bar.total == 21 and bar.n == 21 and bar.closed
    assert bar.steps == [1, 1, 5, 1, 1, 5, 1, 1, 5]


@pytest.mark.parametrize("first_fit", [False, True])
def test_estatemerge_reports_every_blue_state(first_fit, bars, monkeypatch):
    """With ``PROGRESS_SECONDS`` tiny the merger runs one blue state per call: the bar moves
    by 1 per blue state decided (at least one per red state but the root) and the machine is
    the one of the single call."""
    from bayesfa.learners.greedy import estatemerge as em

    corpus = _corpus(40)
    quiet = em.estatemerge(corpus, 0.5, first_fit)
    monkeypatch.setattr(em, "PROGRESS_SECONDS", 1e-12)
    loud = em.estatemerge(corpus, 0.5, first_fit, progress=True)
    (bar,) = bars
    assert bar.closed and set(bar.steps) == {1}
    assert len(bar.steps) >= quiet["counts"].shape[0] - 1
    for key in quiet:
        np.testing.assert_array_equal(loud[key], quiet[key], err_msg=key)


def test_memoizer_reports_every_symbol_and_keeps_the_total(bars, monkeypatch):
    """With ``PROGRESS_SECONDS`` tiny the training data are seated one symbol per call: the
    bar moves by 1 per symbol, and the arrays and the training log probability (summed in
    the kernel's order) are bit-identical to the single call."""
    from bayesfa.methods import get_method
    from bayesfa.samplers.ngram import memoizer

    method = get_method("memoizer")
    options = _options(method, [])
    corpus = _corpus(40)
    quiet = method.fit(corpus, options, 6, False)
    monkeypatch.setattr(memoizer, "PROGRESS_SECONDS", 1e-12)
    loud = method.fit(corpus, options, 6, True)
    (bar,) = bars
    assert bar.total == corpus.n_tokens and bar.steps == [1] * corpus.n_tokens and bar.closed
    _assert_same_fit(loud, quiet)
    assert loud.info["train_log_prob"] == quiet.info["train_log_prob"]


@pytest.mark.parametrize("pace", [0.01, 0.003])
def test_memoizer_bar_moves_about_once_a_second(pace, bars, monkeypatch):
    """The training seating with ``progress`` moves the bar about once a second
    (:data:`~bayesfa.samplers.ngram.memoizer.PROGRESS_SECONDS`): on a clock that advances
    ``pace`` seconds per symbol seated (the real kernel, timed by a fake
    ``time.perf_counter`` that starts far from 0), the calls start at one symbol and double
    while short; then each call lasts between half a second and a second (the last excepted).
    A pacing that reads the clock wrongly (``now // t0`` for ``now - t0``, a surviving
    cosmic-ray mutant of issue 39, never grows past one symbol) fails; the total is the
    single call's."""
    from types import SimpleNamespace

    from bayesfa.methods import get_method
    from bayesfa.samplers.ngram import _hpyp_kernel, memoizer

    method = get_method("memoizer")
    options = _options(method, [])
    rng = np.random.default_rng(2)
    corpus = Corpus.from_strings([rng.integers(0, 3, size=rng.integers(0, 30)).tolist()
                                  for _ in range(300)], 3)
    quiet = method.fit(corpus, options, 6, False)
    now = [1000.0]
    at_update = []
    score = _hpyp_kernel.score_tokens
    update = _Bar.update

    def timed_score(rng, tok_node, tok_sym, start, offsets, *rest):
        out = score(rng, tok_node, tok_sym, start, offsets, *rest)
        now[0] += pace * (offsets.size - 1)  # every symbol seated costs `pace` seconds
        return out

    def noted_update(self, n=1):
        at_update.append(now[0])
        update(self, n)

    monkeypatch.setattr(_Bar, "update", noted_update)
    monkeypatch.setattr(_hpyp_kernel, "score_tokens", timed_score)
    monkeypatch.setattr(memoizer, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    loud = method.fit(corpus, options, 6, True)
    assert loud.info["train_log_prob"] == quiet.info["train_log_prob"]
    (bar,) = bars
    assert sum(bar.steps) == corpus.n_tokens
    _assert_about_once_a_second(bar.steps, np.diff([1000.0] + at_update), pace)


def test_estatemerge_prints_an_upper_bound_after_a_timed_start(bars, monkeypatch):
    """After its timed start (thresholds set to zero here) EStateMerge prints one line: an
    upper bound of the time left (each prefix-tree state decided at most once at the pace so
    far); the machine is the same."""
    from bayesfa.learners.greedy import estatemerge as em

    corpus = _corpus(40)
    quiet = em.estatemerge(corpus, 0.5)
    monkeypatch.setattr(em, "PROGRESS_SECONDS", 1e-12)
    monkeypatch.setattr(em, "ESTIMATE_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(em, "ESTIMATE_SECONDS", -1.0)
    loud = em.estatemerge(corpus, 0.5, progress=True)
    (bar,) = bars
    (line,) = bar.lines
    assert line.startswith("estatemerge: at most roughly ") and "prefix-tree states" in line
    for key in quiet:
        np.testing.assert_array_equal(loud[key], quiet[key], err_msg=key)


def test_estatemerge_prints_no_bound_below_the_threshold(bars, monkeypatch):
    """After its timed start EStateMerge prints its upper bound only when the bound exceeds
    ``ESTIMATE_SECONDS`` (here 1e9 s: never); the bar still counts every blue state. (Issue
    39's surviving cosmic-ray mutant ``bound > ...`` -> ``bound != ...`` printed it.)"""
    from bayesfa.learners.greedy import estatemerge as em

    monkeypatch.setattr(em, "PROGRESS_SECONDS", 1e-12)
    monkeypatch.setattr(em, "ESTIMATE_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(em, "ESTIMATE_SECONDS", 1e9)
    em.estatemerge(_corpus(40), 0.5, progress=True)
    (bar,) = bars
    assert bar.lines == [] and bar.n > 2


def test_estatemerge_upper_bound_is_the_pace_so_far_times_the_states_left(bars, monkeypatch):
    """The estimate's numbers, on a clock that advances one second per reading: the pace
    printed is the time since the start over the blue states decided so far (``n >= 2``
    here, so a pace of time *times* states, the surviving cosmic-ray mutant of issue 39,
    differs), and the bound is that pace times the prefix-tree states not yet decided."""
    import re
    from types import SimpleNamespace

    from bayesfa.learners.greedy import estatemerge as em

    readings = []

    def perf_counter():  # from 1,000 s, as a real clock is far from 0 (a slip that adds the
        readings.append(1000.0 + len(readings))  # start, the surviving mutant ``+ start`` of
        return readings[-1]  # issue 39's seed-5 sample, estimated at once)

    at_write = []
    write = _Bar.write

    def noted_write(self, text, file=None):
        at_write.append((readings[-1], self.n))  # the last reading: the one of the pace
        write(self, text, file)

    monkeypatch.setattr(_Bar, "write", noted_write)
    monkeypatch.setattr(em, "time", SimpleNamespace(perf_counter=perf_counter))
    monkeypatch.setattr(em, "PROGRESS_SECONDS", 1e-12)
    # 7 s: 3 blue states decided of the tree's 94, where 94 - 3 and 94 ^ 3 differ (at 5 s,
    # 2 of 94 hid the surviving mutant ``-`` -> ``^`` of issue 39's seed-5 sample)
    monkeypatch.setattr(em, "ESTIMATE_AFTER_SECONDS", 7.0)
    monkeypatch.setattr(em, "ESTIMATE_SECONDS", -1.0)
    em.estatemerge(_corpus(40), 0.5, progress=True)
    (bar,) = bars
    (line,) = bar.lines
    got = re.search(r"roughly (\d+) s more \((\d+) prefix-tree states, .* at (\S+) s a blue "
                    r"state timed on the first (\d+)\)", line)
    assert got, line
    bound, n_tree, per, n = got.group(1), int(got.group(2)), got.group(3), int(got.group(4))
    (now, n_bar), = at_write
    assert n == n_bar >= 2 and now - readings[0] >= em.ESTIMATE_AFTER_SECONDS
    pace = (now - readings[0]) / n
    assert per == f"{pace:.3g}" and bound == f"{pace * (n_tree - n):.0f}"


@pytest.mark.parametrize("pace", [0.1, 0.03])
def test_estatemerge_bar_moves_about_once_a_second(pace, bars, monkeypatch):
    """The documented contract of ``estatemerge(..., progress=True)`` (its docstring): the bar
    moves about once a second. On a clock that advances ``pace`` seconds per blue state the
    merger decides (the real merger, timed by a fake ``time.perf_counter``), the calls start
    at one blue state and double while they are short; from then on the bar moves at most a
    second after its last move and not before half a second (the last call excepted: it ends
    when no blue state is left). A merger pacing itself on another interval (the surviving
    cosmic-ray mutant ``PROGRESS_SECONDS = 2.0`` of issue 39 moves every 2 s) fails; the
    machine is the one of the single call."""
    from types import SimpleNamespace

    from bayesfa.learners.greedy import estatemerge as em

    now = [0.0]
    at_update = []
    steps = em.estatemerge_steps
    update = _Bar.update

    def timed_steps(*args):
        state, n, done = steps(*args)
        now[0] += pace * n  # every blue state decided costs `pace` seconds
        return state, n, done

    def noted_update(self, n=1):
        at_update.append(now[0])
        update(self, n)

    rng = np.random.default_rng(5)  # prefixes of one random string: ~180 blue states decided
    line = rng.integers(0, 4, size=200)
    corpus = Corpus.from_strings([line[:rng.integers(0, 200)].tolist() for _ in range(200)], 4)
    quiet = em.estatemerge(corpus, 0.5)
    monkeypatch.setattr(_Bar, "update", noted_update)
    monkeypatch.setattr(em, "estatemerge_steps", timed_steps)
    monkeypatch.setattr(em, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    loud = em.estatemerge(corpus, 0.5, progress=True)
    for key in quiet:
        np.testing.assert_array_equal(loud[key], quiet[key], err_msg=key)
    (bar,) = bars
    _assert_about_once_a_second(bar.steps, np.diff([0.0] + at_update), pace)


def test_estatemerge_prints_its_bound_about_two_seconds_after_the_start(bars, monkeypatch):
    """The documented time of EStateMerge's estimate (its docstring): about 2 s after the
    start, at the bar's first move from then on. On a clock that advances 0.25 s per reading
    (a call of the merger, one blue state here, reads it three times) the line is written at the first check
    at or after 2 s, so within a call's readings of it. (Issue 39's surviving cosmic-ray
    mutant ``ESTIMATE_AFTER_SECONDS = 2.0`` -> ``3.0`` wrote it at 3 s.)"""
    from types import SimpleNamespace

    from bayesfa.learners.greedy import estatemerge as em

    readings = []

    def perf_counter():
        readings.append(1000.0 + 0.25 * len(readings))
        return readings[-1]

    at_write = []
    write = _Bar.write

    def noted_write(self, text, file=None):
        at_write.append(readings[-1])
        write(self, text, file)

    monkeypatch.setattr(_Bar, "write", noted_write)
    monkeypatch.setattr(em, "time", SimpleNamespace(perf_counter=perf_counter))
    monkeypatch.setattr(em, "PROGRESS_SECONDS", 1e-12)  # one blue state a call
    monkeypatch.setattr(em, "ESTIMATE_SECONDS", -1.0)
    em.estatemerge(_corpus(40), 0.5, progress=True)
    (bar,) = bars
    assert len(bar.lines) == 1 and len(at_write) == 1
    assert 2.0 <= at_write[0] - readings[0] < 2.0 + 4 * 0.25, at_write[0] - readings[0]
