"""Issue 11, item 2: Eq. 6 accumulated online, draw by draw, with a cap on kept draws.

Exactness: the online log-sum-exp equals the offline ``predict_log_prob`` of all draws to
1e-12; a capped run's chains, trace and kept counts equal the uncapped run's (bit for bit); a
capped chain interrupted and resumed from its checkpoint ends bit-identical. Memory: the peak
of a capped, predicting chain (tracemalloc) does not grow with the number of draws.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp

from bayesfa.samplers.chains import free_positions
from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.datasets import pautomac_path
from bayesfa.forward import log_mean_exp
from bayesfa.methods import get_method
from bayesfa.online import (LogMeanAccumulator, OnlinePrediction, PREDICTIONS, combine,
                            fit_and_predict, load_predictions)
from bayesfa.pautomac import read_sample, read_solution, write_sample
from bayesfa.rundir import load_run
from bayesfa.samplers.pfa import cgs_pfa
from chain_resume import Stop  # raises KeyboardInterrupt after some sweeps

KW = dict(n_states=3, beta=0.3, iterations=230, burn_in=50, period=6, chains=2, seed=7)
N_DRAWS = (230 - 50) // 6  # 30


def _corpus(n_strings, seed, alphabet=3):
    rng = np.random.default_rng(seed)
    return Corpus.from_strings([rng.integers(0, alphabet, size=rng.integers(0, 7)).tolist()
                                for _ in range(n_strings)], alphabet_size=alphabet)


TRAIN, TEST = _corpus(60, 0), _corpus(25, 1)


def test_accumulator_is_log_mean_exp_whatever_the_grouping():
    rng = np.random.default_rng(3)
    logp = rng.normal(-20, 15, size=(41, 7))
    logp[:, 3] = -np.inf  # a string every draw gives probability 0
    accs = []
    for cuts in ([41], [1] * 41, [5, 17, 19]):
        acc, lo = LogMeanAccumulator(7), 0
        for k in cuts:
            acc.add(logp[lo:lo + k])
            lo += k
        accs.append(acc)
    for acc in accs:  # the same fold draw by draw: bit-identical
        np.testing.assert_array_equal(acc.log_mean(), accs[0].log_mean())
        assert acc.n_draws == 41
    np.testing.assert_allclose(accs[0].log_mean(), log_mean_exp(logp, axis=0), rtol=0, atol=1e-12)
    assert np.isneginf(accs[0].log_mean()[3])
    again = LogMeanAccumulator.from_state(**accs[2].state())
    again.add(logp[:2])
    accs[2].add(logp[:2])
    np.testing.assert_array_equal(again.log_mean(), accs[2].log_mean())
    # combine weighs each fit by its draws: the log mean of all draws together
    parts = [OnlinePrediction(log_mean_exp(logp[a:b], axis=0), b - a, {}, {})
             for a, b in ((0, 3), (3, 30), (30, 41))]
    np.testing.assert_allclose(combine(parts), log_mean_exp(logp, axis=0), rtol=0, atol=1e-12)
    with pytest.raises(ValueError):
        LogMeanAccumulator(7).add(logp[:, :6])


def test_kept_draw_indices_thin_evenly():
    for n, k in ((30, 7), (30, 1), (30, 29), (1000, 10), (5, 5), (5, 9)):
        kept = cgs_pfa.kept_draw_indices(n, k)
        assert kept.size == min(n, k) and kept[-1] == n - 1 and kept[0] >= 0
        assert np.all(np.diff(kept) >= 1)
        if k < n:  # gaps differ by at most one
            gaps = np.diff(np.concatenate([[-1], kept]))
            assert gaps.max() - gaps.min() <= 1
    np.testing.assert_array_equal(cgs_pfa.kept_draw_indices(10, None), np.arange(10))


def test_online_equals_offline_and_the_cap_keeps_the_chains():
    full = cgs_pfa.sample_cgs_pfa(TRAIN, **KW, holdout=0.1)
    online = cgs_pfa.sample_cgs_pfa(TRAIN, **KW, holdout=0.1, predict=TEST)
    capped = cgs_pfa.sample_cgs_pfa(TRAIN, **KW, holdout=0.1, predict=TEST, max_draws=7, jobs=2)
    offline = cgs_pfa.predict_log_prob(full.counts, KW["beta"], TEST)
    np.testing.assert_allclose(online.predict_log_mean, offline, rtol=0, atol=1e-12)
    np.testing.assert_allclose(capped.predict_log_mean, offline, rtol=0, atol=1e-12)
    kept = cgs_pfa.kept_draw_indices(N_DRAWS, 7)
    np.testing.assert_array_equal(online.counts, full.counts)
    np.testing.assert_array_equal(capped.counts, full.counts[:, kept])
    for name in ("log_joint", "n_states", "n_edges", "z", "heldout_log_pred"):
        np.testing.assert_array_equal(getattr(capped, name), getattr(full, name), err_msg=name)
    assert full.predict_log_mean is None
    assert capped.info["max_draws"] == 7 and capped.info["kept_draws_per_chain"] == 7
    assert capped.info["jobs"] == 2  # the test strings and the cap reach worker processes
    assert capped.info["kept_draws_rule"] == cgs_pfa.KEPT_DRAWS_RULE


def test_capped_predicting_chain_resumes_bit_identical(tmp_path, monkeypatch):
    n_free = free_positions(TRAIN.tokens).size
    monkeypatch.setattr(cgs_pfa, "_BLOCK_UNITS", 5 * KW["n_states"] * n_free)  # ~5 sweeps a block
    args = dict(**KW, predict=TEST, max_draws=4)
    full = cgs_pfa.sample_cgs_pfa(TRAIN, **args)
    with pytest.raises(KeyboardInterrupt):
        cgs_pfa.sample_cgs_pfa(TRAIN, **args, checkpoint_dir=tmp_path, checkpoint_every=0,
                               on_sweeps=Stop(230 + 150))
    with np.load(tmp_path / "chain-0001.npz") as npz:
        d = int(npz["draws_done"])
        assert 0 < d < N_DRAWS and npz["pred_log_sum"].shape == (TEST.n_strings,)
        # the checkpoint holds the accumulator and at most the cap's counts, not every draw
        assert npz["counts"].shape[0] == np.searchsorted(cgs_pfa.kept_draw_indices(N_DRAWS, 4), d) <= 4
    resumed = cgs_pfa.sample_cgs_pfa(TRAIN, **args, checkpoint_dir=tmp_path)
    assert resumed.info["chains_resumed_mid_chain"] == 1
    for name in ("counts", "log_joint", "z", "predict_log_mean"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(full, name), err_msg=name)
    # a checkpoint made without the cap or for other test strings is not reused
    other = cgs_pfa.sample_cgs_pfa(TRAIN, **{**args, "max_draws": 5}, checkpoint_dir=tmp_path)
    assert other.info["chains_resumed"] == 0 and other.counts.shape[1] == 5


def test_fit_and_predict_online_and_fallback():
    options = {"states": 3, "beta": 0.3, "iterations": 60, "burn_in": 20, "period": 4, "chains": 2,
               "jobs": 1, "holdout": 0.0}
    a = fit_and_predict("cgs-pfa", TRAIN, options, 1, TEST)
    b, fit_b = fit_and_predict("cgs-pfa", TRAIN, options, 2, TEST, return_fit=True)
    fit_a = get_method("cgs-pfa").fit(TRAIN, options, 1, False)
    assert a.info["online"] and a.n_draws == 20 and set(a.trace) >= {"log_joint"}
    assert set(fit_b.arrays) == {"counts"}
    # two fits combined = Eq. 6 over both fits' draws
    both = np.concatenate([fit_a.arrays["counts"], fit_b.arrays["counts"]])
    np.testing.assert_allclose(combine([a, b]), cgs_pfa.predict_log_prob(both, 0.3, TEST),
                               rtol=0, atol=1e-12)
    # a method without online prediction: fit, then predict_log_prob once
    evgram = get_method("evgram")
    opts = {}
    parser_defaults = _defaults(evgram)
    opts.update(parser_defaults)
    c = fit_and_predict("evgram", TRAIN, opts, 0, TEST)
    expected = evgram.predict_log_prob(evgram.fit(TRAIN, opts, 0, False).arrays, opts, TEST)
    assert not c.info["online"] and c.n_draws == 1
    np.testing.assert_array_equal(c.log_mean, expected)


def _defaults(method) -> dict:
    import argparse

    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    return vars(parser.parse_args([]))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    train, test, other = folder / "train", folder / "test", folder / "other"
    corpus = read_sample(pautomac_path(24, "train"))
    write_sample(train, corpus.subset(range(300)))
    write_sample(test, corpus.subset(range(300, 340)))
    write_sample(other, corpus.subset(range(340, 380)))
    return train, test, other


CGS = ["--method", "cgs-pfa", "--states", "3", "--iterations", "40", "--burn-in", "10",
       "--period", "2", "--chains", "2", "--seed", "5", "--quiet"]


def test_cli_fit_predict_saves_and_reuses_online_predictions(files, tmp_path, capsys):
    train, test, other = (str(p) for p in files)
    run, capped = tmp_path / "run", tmp_path / "capped"
    assert main(["fit", train, *CGS, "--predict", test, "--out", str(run)]) == 0
    assert main(["fit", train, *CGS, "--predict", test, "--max-draws", "2", "--out", str(capped)]) == 0
    r, c = load_run(run), load_run(capped)
    assert r.manifest["info"]["predict"]["n_draws"] == 30 and r.manifest["info"]["predict"]["online"]
    assert c.options["max_draws"] == 2 and c.arrays["counts"].shape[1] == 2
    assert c.manifest["info"]["kept_draws_rule"] == cgs_pfa.KEPT_DRAWS_RULE
    test_corpus = read_sample(test).with_alphabet(r.manifest["train"]["alphabet_size"])
    offline = cgs_pfa.predict_log_prob(r.arrays["counts"], 0.1, test_corpus)
    for name, path in (("run", run), ("capped", capped)):
        out = tmp_path / f"{name}.pred"
        assert main(["predict", str(path), test, "--out", str(out)]) == 0
        # the uncapped online answer is the offline one; the capped run's answer is the same
        # (it averaged all 30 draws online), though it keeps the counts of only 2
        np.testing.assert_allclose(np.log(read_solution(out)), offline, rtol=0, atol=1e-9)
        sha = r.manifest["info"]["predict"]["sha256"]
        np.testing.assert_allclose(load_predictions(path / PREDICTIONS, 40, sha), offline,
                                   rtol=0, atol=1e-12)
        assert load_predictions(path / PREDICTIONS, 40, "0" * 64) is None
    two_draws = cgs_pfa.predict_log_prob(c.arrays["counts"], 0.1, test_corpus)
    assert np.abs(two_draws - offline).max() > 1e-3  # so the stored answer was the one used
    # another test file: predicted offline from the kept counts
    out = tmp_path / "other.pred"
    assert main(["predict", str(capped), other, "--out", str(out)]) == 0
    other_corpus = read_sample(other).with_alphabet(r.manifest["train"]["alphabet_size"])
    np.testing.assert_allclose(np.log(read_solution(out)),
                               cgs_pfa.predict_log_prob(c.arrays["counts"], 0.1, other_corpus),
                               rtol=0, atol=1e-9)
    # the same command again: the finished run is left alone; other --predict: refused
    assert main(["fit", train, *CGS, "--predict", test, "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["fit", train, *CGS, "--predict", other, "--out", str(run)]) == 2
    assert "predict" in capsys.readouterr().err


def test_cli_max_draws_needs_an_online_method(files, tmp_path, capsys):
    train, test, _ = (str(p) for p in files)
    rc = main(["fit", train, "--method", "evgram", "--max-draws", "3", "--out", str(tmp_path / "r")])
    _, err = capsys.readouterr()
    assert rc == 2 and err.startswith("bayesfa: error: --max-draws") and err.count("\n") == 1
    # --predict falls back to predicting at the end of the fit, into the same file
    assert main(["fit", train, "--method", "evgram", "--predict", test, "--quiet",
                 "--out", str(tmp_path / "e")]) == 0
    run = load_run(tmp_path / "e")
    assert run.manifest["info"]["predict"]["online"] is False
    assert (tmp_path / "e" / PREDICTIONS).is_file()


def test_peak_memory_of_a_capped_unit_does_not_grow_with_the_draws():
    """150 vs 1500 recorded draws (period 1) of a 40-state chain on 400 letters, 10 test
    strings predicted online, 2 draws kept: one draw's counts are 41 x 6 x 41 int32 = 40 KB,
    so keeping every draw would take 6 MB vs 60 MB; the capped peak stays within 1.3x of the
    short run's and under a tenth of what the long run's draws would take."""
    corpus = read_sample(pautomac_path(24, "train"))
    train, test = corpus.subset(range(60)), corpus.subset(range(60, 70))
    options = {"states": 40, "beta": 0.1, "burn_in": 0, "period": 1, "chains": 1, "jobs": 1,
               "holdout": 0.0, "max_draws": 2}
    fit_and_predict("cgs-pfa", train.subset(range(3)), {**options, "iterations": 2}, 0,
                    test.subset(range(2)))  # compile outside the measurement
    peaks = {}
    for draws in (150, 1500):
        tracemalloc.start()
        try:
            pred = fit_and_predict("cgs-pfa", train, {**options, "iterations": draws}, 0, test)
            peaks[draws] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert pred.n_draws == draws and np.isfinite(pred.log_mean).all()
    one_draw = 41 * (train.alphabet_size + 1) * 41 * 4
    assert peaks[1500] <= 1.3 * peaks[150], peaks
    assert peaks[1500] < 0.1 * 1500 * one_draw, (peaks, one_draw)
    # the estimate (which bayesfa fit checks) follows the cap and bounds the peak
    estimate = get_method("cgs-pfa").estimate_memory(
        train, {**options, "iterations": 1500, "predict_sha256": "0" * 64})
    assert peaks[1500] <= estimate < 0.1 * 1500 * one_draw, (estimate, peaks)


def test_online_methods_named_in_help_are_the_registry_s():
    """The help texts name ``online.ONLINE_METHODS``: exactly the registered methods whose
    registry object predicts online (``supports_online``)."""
    from bayesfa.methods import get_method, method_names
    from bayesfa.online import ONLINE_METHODS, supports_online

    assert set(ONLINE_METHODS) == {m for m in method_names() if supports_online(get_method(m))}
