"""Resumable CVB0, GCVB0, CVB2 (iteration level) and HPYP (mid-chain), and their
``--holdout`` (issue 26, item 5).

As ``tests/test_resume_variants.py`` does for CGS-SG and CGS-HMM: interruptions simulated in
this process (CVB: an ``on_iteration`` callback that raises ``KeyboardInterrupt``; HPYP: the
kernel's ``run_sweeps`` replaced by a wrapper that raises before its N-th call) and for real
(``kill -9`` of a ``bayesfa fit`` process once a mid-run checkpoint is on disk); foreign and
damaged checkpoint files. Every comparison is exact (``assert_array_equal``): same seed, same
result, bit for bit, every array and every trace variable. GCVB0 runs L-BFGS-B through
its own loop around scipy's kernel (to save its state): it is checked against
``scipy.optimize.minimize`` bit for bit too.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.learners import cvb
from bayesfa.samplers.ngram import _hpyp_kernel, hpyp
from bayesfa.samplers.pfa.cgs_pfa import holdout_split
from chain_resume import kill_9_then_resume
from conftest import checkpoint_state


def _corpus(n_strings=80, seed=0):
    rng = np.random.default_rng(seed)
    strings = [rng.integers(0, 3, size=rng.integers(0, 9)).tolist() for _ in range(n_strings)]
    return Corpus.from_strings(strings, alphabet_size=3)


CORPUS = _corpus()
FITS = {"cvb0": cvb.fit_cvb0, "cvb2": cvb.fit_cvb2, "gcvb0": cvb.fit_gcvb0}
VB_ITER = 40


def _vb(name, corpus=CORPUS, **kw):
    """A variational fit with this file's settings (tol 1e-12: all 40 iterations run)."""
    args = {"seed": 3, "tol": 1e-12, "holdout": 0.1, **kw}
    return FITS[name](corpus, 4, 0.1, iterations=VB_ITER, **args)


def _assert_same_vb(a, b) -> None:
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.expected_counts, b.expected_counts)
    assert list(a.trace) == list(b.trace)
    for k in a.trace:
        np.testing.assert_array_equal(a.trace[k], b.trace[k], err_msg=k)


def _stop_at(iteration: int):
    def on_iteration(i, ec, q):
        if i == iteration:
            raise KeyboardInterrupt
    return on_iteration


# -- CVB0 / GCVB0 / CVB2 in this process ------------------------------------------------------

@pytest.mark.parametrize("name", ["cvb0", "cvb2", "gcvb0"])
@pytest.mark.parametrize("stop", [3, 16, 17, 18, 39])
def test_interrupted_vb_fit_resumes_bit_identical(tmp_path, name, stop):
    """Cut before, at and after a recomputation of the maintained sums (every 16 iterations)
    and in the last iteration: the resumed fit equals an uninterrupted one. (GCVB0's trace
    starts with the starting point, one row more.)"""
    full = _vb(name)
    assert full.info["iterations_run"] == VB_ITER and not full.info["converged"]
    with pytest.raises(KeyboardInterrupt):
        _vb(name, checkpoint_dir=tmp_path, checkpoint_every=0, on_iteration=_stop_at(stop))
    saved = checkpoint_state(tmp_path / "chain-0000.npz")
    assert int(saved["iterations_done"]) == stop - 1  # saved after the row before
    assert saved["trace_d0"].shape == (stop - 1,)
    resumed = _vb(name, checkpoint_dir=tmp_path, checkpoint_every=1e9)  # interval: no effect
    first = 1 if name == "gcvb0" else 0  # the starting point is no iteration
    assert resumed.info["iterations_resumed"] == stop - 1 - first
    _assert_same_vb(resumed, full)
    assert resumed.info["n_evaluations" if name == "gcvb0" else "iterations_run"] == \
        full.info["n_evaluations" if name == "gcvb0" else "iterations_run"]
    # saved finished: a third call runs no iteration and gives the same
    again = _vb(name, checkpoint_dir=tmp_path, on_iteration=_stop_at(0))
    assert again.info["iterations_resumed"] == VB_ITER
    _assert_same_vb(again, full)


@pytest.mark.parametrize("seed", [0, 1])
def test_gcvb0_loop_is_scipys_minimize_bit_for_bit(seed):
    """The L-BFGS-B loop that can be saved (cvb._LBFGSB) against scipy.optimize.minimize
    on the same objective: the same iterates (hence trace), evaluations and stopping, in a
    fit that converges and one stopped by the iteration limit."""
    from scipy.optimize import Bounds, minimize

    corpus = _corpus(60, seed)
    for iterations in (8, 300):
        ours = cvb.fit_gcvb0(corpus, 3, 0.1, iterations=iterations, seed=seed)
        fun = cvb.D0Objective(corpus, 3, 0.1)
        q = cvb.initial_q(corpus.tokens, 3, np.random.default_rng(np.random.SeedSequence(seed)))
        x0 = np.maximum(fun.x_from_q(q), cvb.LOWER_BOUND)
        seen = []

        def callback(intermediate_result):  # scipy passes the result to this parameter name
            seen.append(float(intermediate_result.fun))

        res = minimize(fun, x0, jac=True, method="L-BFGS-B",
                       bounds=Bounds(np.full(x0.size, cvb.LOWER_BOUND), np.full(x0.size, np.inf)),
                       callback=callback,
                       options={"maxiter": iterations, "maxfun": 20 * iterations + 20,
                                "ftol": cvb.GCVB0_TOL, "gtol": 0.0, "maxcor": cvb.LBFGS_HISTORY})
        assert ours.info["iterations_run"] == res.nit == len(seen)
        assert ours.info["message"] == str(res.message)
        assert ours.info["converged"] == (iterations == 300) == bool(res.success)
        np.testing.assert_array_equal(ours.trace["objective"][1:], seen)
        assert ours.info["n_evaluations"] == fun.n_evaluations + 1  # + its starting point's
        fun(res.x)
        np.testing.assert_array_equal(ours.q, fun.q)


@pytest.mark.parametrize("old_callback", [False, True], ids=["scipy-1.11-1.14", "scipy-before-1.11"])
def test_gcvb0_without_setulb_falls_back_to_minimize_and_saves_nothing(tmp_path, monkeypatch,
                                                                      old_callback):
    """With a scipy that has no usable ``_lbfgsb.setulb`` (``_LBFGSB.kernel()`` None: scipy
    < 1.15), fit_gcvb0 promises the same iterates through ``scipy.optimize.minimize``, no
    checkpoint (``info["checkpoints"]`` says why), and so resumes only as a whole fit.
    ``old_callback``: minimize's callback gets only ``x`` (scipy < 1.11), not the result.
    Before: the fallback's callback read ``r.x`` of the array scipy passes, AttributeError."""
    import scipy.optimize

    full = _vb("gcvb0")  # through setulb
    monkeypatch.setattr(cvb._LBFGSB, "kernel", staticmethod(lambda: None))
    if old_callback:
        real = scipy.optimize.minimize

        def minimize_passing_x(*args, callback=None, **kw):
            return real(*args, callback=lambda xk: callback(xk), **kw)

        monkeypatch.setattr(scipy.optimize, "minimize", minimize_passing_x)
    # with a checkpoint folder: nothing saved, said so; an interrupted fit reruns whole,
    # with the same iterates as through setulb
    with pytest.raises(KeyboardInterrupt):
        _vb("gcvb0", checkpoint_dir=tmp_path, checkpoint_every=0, on_iteration=_stop_at(10))
    assert list(tmp_path.iterdir()) == []
    again = _vb("gcvb0", checkpoint_dir=tmp_path, checkpoint_every=0)
    assert again.info["checkpoints"] == "none: they need scipy >= 1.15"
    assert again.info["iterations_resumed"] == 0 and list(tmp_path.iterdir()) == []
    _assert_same_vb(again, full)
    for k in ("iterations_run", "n_evaluations", "message", "converged"):
        assert again.info[k] == full.info[k], k


def test_converged_vb_fit_is_kept_as_converged(tmp_path):
    full = _vb("cvb0", tol=0.03)
    assert full.info["converged"] and full.info["iterations_run"] < VB_ITER
    first = _vb("cvb0", tol=0.03, checkpoint_dir=tmp_path)
    again = _vb("cvb0", tol=0.03, checkpoint_dir=tmp_path, on_iteration=_stop_at(0))
    assert again.info["converged"] and again.info["iterations_resumed"] == full.info["iterations_run"]
    _assert_same_vb(first, full)
    _assert_same_vb(again, full)


def test_foreign_vb_checkpoints_are_ignored(tmp_path):
    """A state saved by another fit (seed, held-out fraction, tol, another method) is never
    continued: each fit equals its fresh self."""
    with pytest.raises(KeyboardInterrupt):
        _vb("cvb0", checkpoint_dir=tmp_path, checkpoint_every=0, on_iteration=_stop_at(20))
    for name, change in (("cvb0", {"seed": 4}), ("cvb0", {"holdout": 0.2}), ("cvb0", {"tol": 1e-11}),
                         ("cvb2", {}), ("gcvb0", {})):
        fresh = _vb(name, **change)
        again = _vb(name, checkpoint_dir=tmp_path, **change)
        assert again.info["iterations_resumed"] == 0, (name, change)
        _assert_same_vb(again, fresh)
    # a fit from one starting q never continues a fit from another (issue 39: a fingerprint
    # that left a given q0 out, "q0 is not None" for "is None", lived)
    q_a, q_b = _vb("cvb0").q, _vb("cvb2").q  # two starts of the same hold-out split
    with pytest.raises(KeyboardInterrupt):
        _vb("cvb0", q0=q_a, checkpoint_dir=tmp_path / "q0", checkpoint_every=0,
            on_iteration=_stop_at(20))
    again = _vb("cvb0", q0=q_b, checkpoint_dir=tmp_path / "q0")
    assert again.info["iterations_resumed"] == 0
    _assert_same_vb(again, _vb("cvb0", q0=q_b))


def test_corrupt_vb_checkpoint_is_an_input_error_naming_the_file(tmp_path):
    _vb("cvb2", checkpoint_dir=tmp_path)
    path = tmp_path / "chain-0000.npz"
    data = path.read_bytes()
    for damaged in (data[: len(data) // 2], b"", b"not a zip file\n"):
        path.write_bytes(damaged)
        with pytest.raises(InputError) as err:
            _vb("cvb2", checkpoint_dir=tmp_path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    path.write_bytes(data)
    good = checkpoint_state(path)
    for key, value in (("iterations_done", np.array(VB_ITER + 1)), ("q", good["q"][:-1]),
                       ("sum_2", good["sum_2"].astype(np.float32)),
                       ("trace_d0", good["trace_d0"][:-1]), ("iterations_done", np.array(2.5)),
                       # a whole count stored as a float: not this format's int (issue 39)
                       ("iterations_done", np.array(float(good["iterations_done"])))):
        np.savez(path, **{**good, key: value})
        with pytest.raises(InputError, match="chain-0000.npz"):
            _vb("cvb2", checkpoint_dir=tmp_path)
    del good["trace_change"]
    np.savez(path, **good)
    with pytest.raises(InputError, match="missing trace_change"):
        _vb("cvb2", checkpoint_dir=tmp_path)


def test_gcvb0_checkpoint_with_more_rows_than_iterations_plus_one_is_refused(tmp_path):
    """GCVB0 records the start as row 0, so its trace holds at most ``iterations + 1`` rows: a
    file claiming more (here ``iterations + 2``, every trace that long) is damaged, not resumed
    (a looser capacity, e.g. ``2 * iterations``, would resume past the end of the fit)."""
    _vb("gcvb0", checkpoint_dir=tmp_path)
    path = tmp_path / "chain-0000.npz"
    good = checkpoint_state(path)
    n = int(good["iterations_done"])
    assert n == VB_ITER + 1  # tol 1e-12: every iteration ran, plus the start
    np.savez(path, **good)
    assert _vb("gcvb0", checkpoint_dir=tmp_path).info["iterations_resumed"] == n - 1
    longer = {k: (np.concatenate([v, v[-1:]]) if k.startswith("trace_") else v)
              for k, v in good.items()}
    np.savez(path, **{**longer, "iterations_done": np.array(n + 1)})
    with pytest.raises(InputError, match="chain-0000.npz"):
        _vb("gcvb0", checkpoint_dir=tmp_path)


def _reference_log_prob(ec: np.ndarray, beta: float, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi~)`` per string, ``xi~`` of Eq. 10 written from the paper (prior
    ``beta`` on letter moves to states ``1..N``, ``N beta`` on the end transition), by the
    product of the letter matrices from state 0 (no forward code)."""
    n1 = ec.shape[0]
    prior = np.zeros(ec.shape)
    prior[:, 1:, 1:] = beta
    prior[:, 0, 0] = (n1 - 1) * beta
    alpha = np.where(prior > 0, ec + prior, 0.0)
    xi = alpha / alpha.sum(axis=(1, 2), keepdims=True)
    out = []
    for k in range(corpus.n_strings):
        row = np.zeros(n1)
        row[0] = 1.0
        for a in corpus.tokens[corpus.offsets[k]:corpus.offsets[k + 1]][:-1]:
            row = row @ xi[:, a, :]
        out.append(np.log(row @ xi[:, 0, 0]))
    return np.array(out)


@pytest.mark.parametrize("name", ["cvb0", "cvb2", "gcvb0"])
def test_vb_holdout_is_not_fitted_and_recorded_per_iteration(name):
    kept, held = holdout_split(CORPUS.n_strings, 0.1, np.random.SeedSequence(3))
    assert held.size == 8
    seen = []
    res = _vb(name, on_iteration=lambda i, ec, q: seen.append(ec.copy()))
    assert res.info["holdout_strings"] == 8 and res.info["holdout"] == 0.1
    alone = _vb(name, corpus=CORPUS.subset(kept), holdout=0.0)
    assert "heldout_log_pred" not in alone.trace
    np.testing.assert_array_equal(res.expected_counts, alone.expected_counts)  # kept strings only
    lp = res.trace["heldout_log_pred"]
    assert lp.shape == (len(seen),)
    for i in (0, len(seen) // 2, len(seen) - 1):
        expected = _reference_log_prob(seen[i], 0.1, CORPUS.subset(held)).sum()
        np.testing.assert_allclose(lp[i], expected, rtol=1e-10)


# -- HPYP in this process ---------------------------------------------------------------------

HP = {"iterations": 43, "burn_in": 10, "period": 4, "chains": 2, "seed": 5}
HP_DRAWS = (HP["iterations"] - HP["burn_in"]) // HP["period"]  # 8


def _hpyp(corpus=CORPUS, **kw):
    return hpyp.sample_hpyp(corpus, 3, **{**HP, "holdout": 0.1, **kw})


def _assert_same_fit(a, b) -> None:
    assert sorted(a.arrays) == sorted(b.arrays) and list(a.trace) == list(b.trace)
    for k in a.arrays:
        np.testing.assert_array_equal(a.arrays[k], b.arrays[k], err_msg=k)
    for k in a.trace:
        np.testing.assert_array_equal(a.trace[k], b.trace[k], err_msg=k)


class _StopBefore:
    """``run_sweeps`` that raises KeyboardInterrupt before its ``n``-th call."""

    def __init__(self, n: int):
        self.n, self.calls, self.inner = n, 0, _hpyp_kernel.run_sweeps

    def __call__(self, *args):
        self.calls += 1
        if self.calls >= self.n:
            raise KeyboardInterrupt
        return self.inner(*args)


#: kernel calls of a chain run with checkpoints: one a burn-in sweep, then one a draw
PER_CHAIN = HP["burn_in"] + HP_DRAWS


@pytest.mark.parametrize("stop", [2, 9, 14, 20, 30, 36])
def test_interrupted_hpyp_chain_resumes_bit_identical(tmp_path, monkeypatch, stop):
    """Cut in chain 0's burn-in, between its draws, in chain 1's first sweep, burn-in and
    before its last draw: the resumed fit equals an uninterrupted one (whole-chain calls)."""
    full = _hpyp()
    with monkeypatch.context() as m:
        m.setattr(_hpyp_kernel, "run_sweeps", _StopBefore(stop))
        with pytest.raises(KeyboardInterrupt):
            _hpyp(checkpoint_dir=tmp_path, checkpoint_every=0)
    chain, calls = divmod(stop - 1, PER_CHAIN)  # the calls made in the chain cut
    burn = HP["burn_in"]
    done = calls if calls <= burn else burn + (calls - burn) * HP["period"]
    state = checkpoint_state(tmp_path / f"chain-{chain:04d}.npz")
    assert int(state["sweeps_done"]) == done > 0
    assert int(state["draws_done"]) == max(0, calls - burn)
    resumed = _hpyp(checkpoint_dir=tmp_path, checkpoint_every=1e9)
    assert resumed.info["chains_resumed"] == chain
    assert resumed.info["chains_resumed_mid_chain"] == 1
    _assert_same_fit(resumed, full)
    again = _hpyp(checkpoint_dir=tmp_path)
    assert again.info["chains_resumed"] == HP["chains"]
    _assert_same_fit(again, full)


def test_foreign_and_corrupt_hpyp_checkpoints(tmp_path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(_hpyp_kernel, "run_sweeps", _StopBefore(14))
        with pytest.raises(KeyboardInterrupt):
            _hpyp(checkpoint_dir=tmp_path, checkpoint_every=0)
    for change in ({"seed": 6}, {"holdout": 0.0}, {"discount": 0.4}, {"iterations": 47}):
        fresh = _hpyp(**change)
        again = _hpyp(checkpoint_dir=tmp_path, **change)
        assert again.info["chains_resumed"] == 0 and again.info["chains_resumed_mid_chain"] == 0
        _assert_same_fit(again, fresh)
    _hpyp(checkpoint_dir=tmp_path)
    path = tmp_path / "chain-0001.npz"
    data = path.read_bytes()
    for damaged in (data[: len(data) // 2], b"", b"not a zip file\n"):
        path.write_bytes(damaged)
        with pytest.raises(InputError) as err:
            _hpyp(checkpoint_dir=tmp_path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    path.write_bytes(data)
    good = checkpoint_state(path)
    done = int(good["sweeps_done"])
    # counters: each a scalar, and the sweeps and draws done integers (both are required:
    # a counter of another shape or an integer counter stored as a float is damage too)
    # (a state array one entry short or one too long: issue 39, a shape test taking longer
    # ones lived)
    for key, value in (("draws_done", np.array(HP_DRAWS - 1)), ("sizes", good["sizes"][:-1]),
                       ("sizes", np.concatenate([good["sizes"], good["sizes"][-1:]])),
                       ("c", good["c"].astype(np.int64)), ("out_t", good["out_t"][:-1]),
                       ("rng_state", np.array("{not json")), ("sweeps_done", np.array([done])),
                       ("sweeps_done", np.array(float(done)))):
        np.savez(path, **{**good, key: value})
        with pytest.raises(InputError, match="chain-0001.npz"):
            _hpyp(checkpoint_dir=tmp_path)
    # one draw more than the chain records, every counter and array consistent with it
    outs = [k for k in good if k.startswith("out_")]
    assert outs and all(good[k].shape[0] == HP_DRAWS for k in outs)
    more = {**good, "draws_done": np.array(HP_DRAWS + 1),
            "sweeps_done": np.array(HP["burn_in"] + (HP_DRAWS + 1) * HP["period"]),
            **{k: np.concatenate([good[k], good[k][-1:]]) for k in outs}}
    np.savez(path, **more)
    with pytest.raises(InputError, match="chain-0001.npz"):
        _hpyp(checkpoint_dir=tmp_path)


def test_hpyp_info_names_its_checkpoint_interval_only_when_it_checkpoints(tmp_path):
    assert "checkpoint_every" not in _hpyp().info
    assert _hpyp(checkpoint_dir=tmp_path, checkpoint_every=7.5).info["checkpoint_every"] == 7.5


def test_hpyp_holdout_is_not_sampled_and_scored_per_draw():
    kept, held = holdout_split(CORPUS.n_strings, 0.1, np.random.SeedSequence(HP["seed"]))
    res = _hpyp()
    alone = _hpyp(corpus=CORPUS.subset(kept), holdout=0.0)
    assert res.info["holdout_strings"] == held.size == 8 and "heldout_log_pred" not in alone.trace
    for k in alone.arrays:  # sampled from the kept strings only
        np.testing.assert_array_equal(res.arrays[k], alone.arrays[k], err_msg=k)
    lp = res.trace["heldout_log_pred"]
    assert lp.shape == (HP["chains"], HP_DRAWS) and np.all(np.isfinite(lp)) and np.all(lp < 0)
    # each draw's log predictive of the held strings, as prediction scores them
    per = hpyp.per_sample_log_prob(alone.arrays, {"order": 3}, CORPUS.subset(held))
    np.testing.assert_array_equal(lp, per.sum(axis=2))
    with pytest.raises(InputError, match="--sequence"):
        _hpyp(sequence=True)


# -- the command line, killed for real --------------------------------------------------------

_CHILD = """
import sys
from bayesfa.cli import main
sys.exit(main(sys.argv[1:]))
"""
CLI = {"cvb0": (["--states", "4", "--iterations", "150", "--tol", "1e-300"], 150),
       "gcvb0": (["--states", "4", "--iterations", "40", "--tol", "1e-300"], 41),
       "cvb2": (["--states", "3", "--iterations", "100", "--tol", "1e-300"], 100),
       "hpyp": (["--order", "3", "--iterations", "400", "--burn-in", "100", "--period", "20",
                 "--chains", "2"], 400)}


def _mid_run(root, method) -> list:
    """The checkpoints below ``root`` saved after the first iteration / sweep and before the
    last; a file being replaced at this moment is skipped."""
    key = "sweeps_done" if method == "hpyp" else "iterations_done"
    out = []
    for p in root.rglob("chain-*.npz"):
        try:
            done = int(checkpoint_state(p)[key])
        except Exception:  # noqa: BLE001 - being replaced at this moment
            continue
        if 0 < done < CLI[method][1]:
            out.append(p)
    return out


def _fit_args(method, train, out, *extra) -> list[str]:
    return ["fit", str(train), "--method", method, *CLI[method][0], "--holdout", "0.05",
            "--seed", "3", "--out", str(out), "--quiet", *extra]


@pytest.mark.parametrize("method", ["cvb0", "gcvb0", "cvb2", "hpyp"])
def test_kill_9_of_bayesfa_fit_then_resume_is_bit_identical(tmp_path, capsys, method):
    """tests/chain_resume.py's kill -9 trial (as for CGS-PFA): killed once a mid-run
    checkpoint is on disk, a truncated checkpoint refused in one line, then resumed to the
    reference run's arrays and trace bit for bit."""
    out = kill_9_then_resume(tmp_path, capsys, _CHILD, lambda train, run, *more: _fit_args(
        method, train, run, *more), n_strings=400, again=("--checkpoint-every", "0.01"),
        ready=lambda run: _mid_run(run, method), poll=0.005)
    info = out["info"]
    assert info["holdout_strings"] == 20 and np.isfinite(out["trace"]["heldout_log_pred"]).all()
    if method == "hpyp":
        assert info["chains_resumed_mid_chain"] + info["chains_resumed"] >= 1
    else:
        assert 0 < info["iterations_resumed"] < CLI[method][1]


@pytest.mark.parametrize("method", ["cvb0", "cvb2", "gcvb0", "hpyp"])
def test_cli_options_are_checked(method):
    for bad in (["--holdout", "1.5"], ["--holdout", "-0.1"], ["--checkpoint-every", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(["fit", "x", "--method", method, *bad, "--out", "y"])
        assert exc.value.code == 2
