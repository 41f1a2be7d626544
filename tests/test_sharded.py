"""Tests of the sharded CGS-PFA (``--shards K``, :mod:`bayesfa.samplers.pfa.sharded`): AD-LDA
(Newman, Asuncion, Smyth & Welling 2009, JMLR 10) over Shibata & Yoshinaka (2013)'s collapsed
Gibbs sweep, on a Dask ``LocalCluster`` of threads in this process (one or two workers).

Statistical tests use fixed seeds and state their failure rate.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayesfa import exact
from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.samplers.pfa import cgs_pfa, sharded

CORPUS = Corpus.from_strings([[0, 1, 2, 0], [1, 1], [], [2, 0, 1], [1], [0, 0, 2, 2, 1],
                              [2], [1, 0], [0, 2, 1, 1], [2, 2]] * 4, alphabet_size=3)
SETTINGS = dict(n_states=3, beta=0.2, iterations=14, burn_in=4, period=2, chains=2, seed=5,
                holdout=0.1)


@pytest.fixture(scope="module")
def client():
    from bayesfa.cluster import open_cluster

    with open_cluster("local", 2, processes=False) as cluster:
        yield cluster.client


def run(client, shards, corpus=CORPUS, **overrides):
    return sharded.sample_sharded(corpus, **{**SETTINGS, **overrides}, shards=shards,
                                  front=cgs_pfa, client=client)


FIELDS = ("counts", "log_joint", "n_states", "n_edges", "z", "heldout_log_pred", "predict_log_mean")


def assert_same(a, b):
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert sorted(a.sample_stats) == sorted(b.sample_stats) == ["moved"]  # the gibbs sweep's
    np.testing.assert_array_equal(a.sample_stats["moved"], b.sample_stats["moved"])


def test_one_shard_is_the_one_process_sampler_bit_for_bit(client):
    test = Corpus.from_strings([[], [0, 1], [2, 2, 0]], alphabet_size=3)
    kw = dict(SETTINGS, predict=test, max_draws=3)
    one = cgs_pfa.sample_cgs_pfa(CORPUS, **kw)
    res = run(client, 1, **kw)
    assert res.counts.shape == one.counts.shape == (2, 3, 4, 4, 4)
    assert_same(res, one)  # the trace's moved too
    moved = res.sample_stats["moved"]
    assert moved.shape == (2, 5) and 0 < moved.min() and moved.max() <= 1


def test_same_seed_and_shards_give_the_same_result_whatever_the_workers(client):
    from bayesfa.cluster import open_cluster

    a, b = run(client, 2), run(client, 2)
    assert_same(a, b)
    with open_cluster("local", 1, processes=False) as one_worker:
        c = run(one_worker.client, 2)
    assert_same(a, c)
    assert a.info["shards"] == 2 and sum(a.info["shard_tokens"]) == a.info["n_tokens"]
    # per sweep and chain, the count table C_iaj (int32, the recorded draws' shape) goes to
    # each shard and each shard's delta of it comes back
    table = np.zeros(a.counts.shape[2:], dtype=np.int32)
    assert a.info["bytes_per_sweep"] == 2 * 2 * table.nbytes
    # and the seed matters: another seed, another chain
    assert not np.array_equal(run(client, 2, seed=6).z, a.z)


def test_counts_after_every_sweep_are_those_of_the_gathered_path(client):
    tokens = cgs_pfa.seed_chains(CORPUS, SETTINGS["seed"], 2, SETTINGS["holdout"])[1].tokens
    seen = []

    def check(chain, gather_path):
        z = gather_path()
        want = exact.counts(tokens, z, SETTINGS["n_states"], CORPUS.alphabet_size + 1)
        np.testing.assert_array_equal(chain.table, want)
        seen.append((chain.index, chain.done))

    res = run(client, 3, on_sweep=check)
    assert sorted(seen) == [(c, s) for c in range(2) for s in range(1, 15)]
    # and each recorded draw is the counts of the chain at that sweep (the last one: z)
    for c in range(2):
        np.testing.assert_array_equal(res.counts[c, -1], exact.counts(tokens, res.z[c], 3, 4))


def test_shard_bounds_cut_by_tokens_with_a_string_each():
    offsets = np.array([0, 1, 2, 10, 11, 12, 13])  # one long string among short ones
    b = sharded.shard_bounds(offsets, 3)
    # the tokens reach 13/3 and 26/3 in string 2: cut after it, then a string for shard 1
    # (issue 39: targets ``k - T`` for ``k T`` lived, giving [0, 1, 2, 6])
    assert b.tolist() == [0, 3, 4, 6]
    assert sharded.shard_bounds(offsets, 1).tolist() == [0, 6]
    assert sharded.shard_bounds(offsets, 6).tolist() == list(range(7))
    with pytest.raises(InputError, match="--shards 7 exceeds the 6 training strings"):
        sharded.shard_bounds(offsets, 7)
    # an odd number of strings too (issue 39: ``offsets.size ^ 1`` is the count only when the
    # offsets are odd in number)
    assert sharded.shard_bounds(offsets[:6], 5).tolist() == list(range(6))
    with pytest.raises(InputError, match="--shards 6 exceeds the 5 training strings"):
        sharded.shard_bounds(offsets[:6], 6)
    seeds = sharded.shard_seeds(np.random.SeedSequence(3).spawn(2)[1], 3)
    assert seeds[0].spawn_key == (1,) and [s.spawn_key for s in seeds[1:]] == [(1, 1), (1, 2)]


# saved after sweep 2 (in the burn-in: no draw yet), 8 (a draw's) or 9 (mid-draw)
@pytest.mark.parametrize("stop_at", [3, 9, 10])
def test_interrupted_run_resumes_bit_for_bit(client, tmp_path, stop_at):
    full = run(client, 2)

    class Stop(Exception):
        pass

    def stop(chain, gather_path):
        if chain.index == 1 and chain.done == stop_at:
            raise Stop

    with pytest.raises(Stop):
        run(client, 2, checkpoint_dir=tmp_path, checkpoint_every=0, on_sweep=stop)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain-0000.npz", "chain-0001.npz"]
    resumed = run(client, 2, checkpoint_dir=tmp_path, checkpoint_every=0)
    assert resumed.info["chains_resumed_mid_chain"] == 2
    assert resumed.info["rounds"] == 14 - (stop_at - 1)
    assert_same(resumed, full)
    again = run(client, 2, checkpoint_dir=tmp_path)  # finished: read back, nothing swept
    assert again.info["rounds"] == 0
    assert_same(again, full)
    # other shards never reuse these chains
    assert run(client, 3, checkpoint_dir=tmp_path).info["chains_resumed_mid_chain"] == 0
    (tmp_path / "chain-0000.npz").write_bytes(b"damaged")
    with pytest.raises(InputError, match="corrupt checkpoint"):
        run(client, 3, checkpoint_dir=tmp_path)


def test_options_the_sharded_sampler_does_not_run_are_refused():
    base = {"shards": 2, "kernel": "auto", "anneal": 0, "split_merge": 0.0, "blocked_every": 0,
            "replicas": 1, "jobs": 1, "interleave": None}
    assert sharded.check_shard_options(base) == (2, "local", None)
    for key, value, flag in (("kernel", "alias-mh", "--kernel"), ("anneal", 3, "--anneal"),
                             ("jobs", 2, "--jobs"), ("auto", True, "--auto"),
                             ("replicas", 2, "--replicas"), ("split_merge", 1, "--split-merge"),
                             ("split_merge", 0.5, "--split-merge"), ("split_merge", -1.0, "--split-merge")):
        with pytest.raises(InputError, match=f"^{flag} is not available with --shards"):
            sharded.check_shard_options({**base, key: value})
    with pytest.raises(InputError, match="--workers sets the size of --scheduler local"):
        sharded.check_shard_options({**base, "scheduler": "tcp://h:1", "workers": 2})
    with pytest.raises(InputError, match="go with --shards"):
        sharded.check_shard_options({"workers": 2})
    with pytest.raises(InputError, match="--shards must be an integer >= 1"):
        sharded.check_shard_options({**base, "shards": 0})


@pytest.mark.parametrize("args, message", [
    (["--shards", "0"], "argument --shards: must be a positive integer, got 0"),
    (["--shards", "two"], "argument --shards: invalid positive_int value: 'two'"),
    (["--shards", "2", "--scheduler", "nowhere"], "argument --scheduler: expected 'local' or an address"),
    (["--shards", "99"], "--shards 99 exceeds the"),
    (["--shards", "2", "--kernel", "alias-mh"], "--kernel is not available with --shards"),
    (["--workers", "2"], "--scheduler and --workers go with --shards K"),
])
def test_bad_shard_options_are_one_line_errors(tmp_path, capsys, args, message):
    train = tmp_path / "train.txt"
    train.write_text("3 2\n2 0 1\n1 1\n2 1 0\n")
    try:  # the parser's errors exit, the fit's return 2
        rc = main(["fit", str(train), "--method", "cgs-pfa", "--out", str(tmp_path / "run"),
                   "--states", "2", "--iterations", "4", "--burn-in", "2", "--period", "1",
                   "--chains", "1", "--quiet", *args])
    except SystemExit as stop:
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_fit_cli_records_the_options_and_predicts(tmp_path, capsys, monkeypatch):
    """``bayesfa fit --shards 2``: the manifest records the options (--scheduler and --workers
    as execution options), and predict reads the run as a cgs-pfa run. On a LocalCluster of
    threads here (the CLI's default is processes, whose start is slow)."""
    from bayesfa import cluster

    real = cluster.open_cluster
    monkeypatch.setattr(cluster, "open_cluster",
                        lambda scheduler, workers, **k: real(scheduler, workers, processes=False))
    train = tmp_path / "train.txt"
    train.write_text("6 2\n2 0 1\n1 1\n2 1 0\n3 0 0 1\n1 0\n0\n")
    out = tmp_path / "run"
    args = ["fit", str(train), "--method", "cgs-pfa", "--out", str(out), "--states", "2",
            "--iterations", "6", "--burn-in", "2", "--period", "2", "--chains", "2", "--quiet",
            "--shards", "2", "--workers", "1"]
    assert main(args) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["shards"] == 2 and manifest["options"]["workers"] == 1
    assert manifest["info"]["shards"] == 2 and manifest["info"]["scheduler"] == "local"
    assert main(["predict", str(out), str(train), "--out", str(tmp_path / "pred.txt")]) == 0
    assert len((tmp_path / "pred.txt").read_text().split()) == 7
    # the workers never change the run's identity: the same command with 2 is the finished run
    assert main(args[:-1] + ["2"]) == 0
    capsys.readouterr()


# The sharded predictive against exact enumeration (Sect. 2.3 plug-in, Eq. 6). AD-LDA is an
# approximation: each shard reads the other's counts as of the start of the sweep, so its
# stationary distribution is not exactly the posterior. This toy is its worst case: two shards
# of a 10-letter corpus, so every sweep of one shard moves a large share of the counts the
# other conditions on. Measured on it (50 chains x 200 draws, seed 20130101): relative errors
# of 0.1 %-5.7 % per string with K = 2 (4 of the 5 strings more than 18 standard errors away:
# a bias, not noise), against at most 0.33 % with K = 1 (the exact sampler, Monte Carlo error
# only, every |z| < 1). TOLERANCE: every string's relative error below 10 %, chosen before this
# test's own run from that measurement: the bias seen plus about 4 %. The Monte Carlo standard
# error of these 20 x 150 draws is at most about 0.5 % relative (from the K = 1 spread), so a
# correct sampler fails only if the bias exceeds about 8 % (its failure rate for a random seed
# is below 1e-4 by the normal tail at 4 standard errors, given the bias measured). A driver
# that drops or doubles the reconciliation is caught exactly by
# test_counts_after_every_sweep_are_those_of_the_gathered_path.
TOY_TRAIN = Corpus.from_strings([[0, 1, 0], [1, 1], [], [0, 0, 1, 1], [1]], alphabet_size=2)
TOY_TEST = Corpus.from_strings([[], [0], [1, 1], [0, 1, 0], [1, 1, 1, 1], [0, 0]], alphabet_size=2)
TOLERANCE = 0.10


@pytest.mark.slow
def test_two_shard_predictive_is_close_to_the_exact_one(client):
    res = sharded.sample_sharded(TOY_TRAIN, 2, 0.5, 170, 20, 1, 20, 20130101, 2,
                                 front=cgs_pfa, client=client)
    estimate = np.exp(cgs_pfa.predict_log_prob(res.counts, 0.5, TOY_TEST))
    truth = np.exp(exact.exact_plugin_predictive(TOY_TRAIN, TOY_TEST, 2, 0.5))
    assert np.all(np.abs(estimate / truth - 1) < TOLERANCE), (estimate, truth)


def test_pautomac_run_refuses_shards_in_one_line(tmp_path, capsys):
    try:
        rc = main(["pautomac", "run", "--data", str(tmp_path), "--problems", "1", "--method",
                   "cgs-pfa", "--chains", "1", "--seed", "1", "--scheduler", "local", "--out",
                   str(tmp_path / "out"), "--shards", "2"])
    except SystemExit as stop:
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2 and "--shards splits one fit across a cluster" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_select_refuses_shards_in_one_line(tmp_path, capsys):
    train = tmp_path / "train.txt"
    train.write_text("3 2\n2 0 1\n1 1\n2 1 0\n")
    rc = main(["select", str(train), "--method", "cgs-pfa", "--out", str(tmp_path / "sel"),
               "--shards", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "--shards splits one fit across a cluster" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_wide_counts_one_shard_is_the_one_process_sampler(client, monkeypatch):
    """Above the float32 limit (lowered here to 10 tokens) the shards sweep float64 counts,
    as the one-process chain does, and K = 1 is still that chain bit for bit."""
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)
    one = cgs_pfa.sample_cgs_pfa(CORPUS, **SETTINGS)
    res = run(client, 1)
    assert res.info["count_dtype"] == one.info["count_dtype"] == "float64"
    assert_same(res, one)


def test_cli_fit_interrupted_resumes_bit_for_bit(tmp_path, capsys, monkeypatch):
    """``bayesfa fit --shards 2`` stopped by Ctrl-C mid-chain keeps its checkpoints; the same
    command resumes them and gives the uninterrupted run's arrays bit for bit."""
    from bayesfa import cluster
    from bayesfa.api import load

    real_open = cluster.open_cluster
    monkeypatch.setattr(cluster, "open_cluster",
                        lambda scheduler, workers, **k: real_open(scheduler, workers, processes=False))
    train = tmp_path / "train.txt"
    train.write_text("6 2\n2 0 1\n1 1\n2 1 0\n3 0 0 1\n1 0\n0\n")
    args = ["fit", str(train), "--method", "cgs-pfa", "--states", "2", "--iterations", "12",
            "--burn-in", "4", "--period", "2", "--chains", "2", "--shards", "2", "--workers", "1",
            "--checkpoint-every", "0", "--holdout", "0.34", "--quiet", "--out"]
    assert main(args + [str(tmp_path / "full")]) == 0
    real_sample = sharded.sample_sharded

    def interrupted(*a, **k):
        def stop(chain, gather_path):
            if chain.done == 7:
                raise KeyboardInterrupt
        return real_sample(*a, **k, on_sweep=stop)

    monkeypatch.setattr(sharded, "sample_sharded", interrupted)
    assert main(args + [str(tmp_path / "run")]) == 130  # "bayesfa: interrupted"
    assert not (tmp_path / "run" / "manifest.json").exists()
    monkeypatch.setattr(sharded, "sample_sharded", real_sample)
    assert main(args + [str(tmp_path / "run")]) == 0
    full, resumed = load(tmp_path / "full"), load(tmp_path / "run")
    assert resumed.info["chains_resumed_mid_chain"] == 2 and resumed.info["rounds"] == 12 - 6
    np.testing.assert_array_equal(resumed.arrays["counts"], full.arrays["counts"])
    for name in ("log_joint", "n_states", "n_edges", "heldout_log_pred"):
        np.testing.assert_array_equal(resumed._trace_arrays()[name], full._trace_arrays()[name])
    capsys.readouterr()


def test_a_lost_worker_is_a_one_line_error_and_the_checkpoints_stay(tmp_path, capsys, monkeypatch):
    """Dask does not move an actor: when the worker holding a shard dies, its calls raise
    ``RuntimeError: Worker holding Actor was lost`` (seen with a real ``dask worker`` killed
    mid-fit); the command says so in one line and keeps the checkpoints to resume from."""
    from bayesfa import cluster

    real_open = cluster.open_cluster
    monkeypatch.setattr(cluster, "open_cluster",
                        lambda scheduler, workers, **k: real_open(scheduler, workers, processes=False))
    real_sweep, calls = sharded.ShardActor.sweep, []

    def sweep(self, *a):
        calls.append(1)
        if len(calls) > 6:
            raise RuntimeError("Worker holding Actor was lost.  Status: error")
        return real_sweep(self, *a)

    monkeypatch.setattr(sharded.ShardActor, "sweep", sweep)
    train = tmp_path / "train.txt"
    train.write_text("4 2\n2 0 1\n1 1\n2 1 0\n3 0 0 1\n")
    rc = main(["fit", str(train), "--method", "cgs-pfa", "--states", "2", "--iterations", "8",
               "--burn-in", "4", "--period", "2", "--chains", "1", "--shards", "2", "--workers", "1",
               "--checkpoint-every", "0", "--quiet", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2 and "a Dask worker holding a shard was lost" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "run" / "partial" / "chain-0000.npz").exists()


def test_a_checkpoint_whose_sweeps_do_not_match_its_draws_is_refused(client, tmp_path):
    """A chain saved after sweep 9 holds 2 draws (burn-in 4, period 2: draws at sweeps 6 and 8);
    the same file claiming only 7 sweeps done (fewer than ``burn_in + draws * period`` = 8),
    or 10 (its third draw's sweep, that draw not taken), is
    damaged: a one-line error naming it, not a resume; so is a finished chain's (5 draws)
    claiming 13 of its 14 sweeps, or more than 14 (issue 39: three mutants of those bounds, ``burn_in & d *
    period``, ``d / period`` and ``done < sweeps_per_chain``, passed every test)."""
    from conftest import checkpoint_state

    class Stop(Exception):
        pass

    def stop(chain, gather_path):
        if chain.index == 1 and chain.done == 10:
            raise Stop

    with pytest.raises(Stop):
        run(client, 2, checkpoint_dir=tmp_path, checkpoint_every=0, on_sweep=stop)
    done = tmp_path / "done"
    run(client, 2, checkpoint_dir=done, checkpoint_every=0)
    for path, draws, sweeps in ((tmp_path / "chain-0001.npz", 2, 9), (done / "chain-0000.npz", 5, 14)):
        # chain 1 stopped after sweep 9; a finished chain (5 draws, 14 sweeps): each claiming
        # one sweep fewer than its draws need
        name = path.name
        state = checkpoint_state(path)
        assert int(state["draws_done"]) == draws and int(state["sweeps_done"]) == sweeps
        low = SETTINGS["burn_in"] + draws * SETTINGS["period"] - 1
        # and the running chain claiming the sweep of its next draw, not taken (issue 39)
        for claim in (low, low + 1 + SETTINGS["period"]) if draws == 2 else (low,):
            np.savez(path, **{**state,
                              "sweeps_done": np.array(claim, dtype=state["sweeps_done"].dtype)})
            with pytest.raises(InputError, match=name) as err:
                run(client, 2, checkpoint_dir=path.parent, checkpoint_every=0)
            assert "\n" not in str(err.value)
        np.savez(path, **state)
    # the finished chain claiming more sweeps than it has (15, inside its last draw's window,
    # and 20), or a stats table of a row or a column too many: damaged too (issue 39: ``done >
    # sweeps_per_chain`` for ``==`` and ``shape >=`` for ``==`` lived)
    path = done / "chain-0000.npz"
    state = checkpoint_state(path)
    stats = state["stats"]
    for bad in ({"sweeps_done": np.array(15, dtype=state["sweeps_done"].dtype)},
                {"sweeps_done": np.array(20, dtype=state["sweeps_done"].dtype)},
                {"stats": np.zeros((stats.shape[0] + 1, stats.shape[1]), dtype=stats.dtype)},
                {"stats": np.zeros((stats.shape[0], stats.shape[1] + 1), dtype=stats.dtype)}):
        np.savez(path, **{**state, **bad})
        with pytest.raises(InputError, match=path.name):
            run(client, 2, checkpoint_dir=done, checkpoint_every=0)
    np.savez(path, **state)


@pytest.mark.parametrize("shards, workers", [(3, 2), (1, 1)])
def test_the_local_cluster_has_min_shards_two_workers_by_default(tmp_path, monkeypatch, shards,
                                                                 workers):
    """``fit_sharded`` with ``--scheduler local`` and no ``--workers`` starts ``min(K, 2)``
    workers, as its docstring says (the machines have two cores; issue 39: ``min(K, 3)`` passed
    every test)."""
    from bayesfa import cluster

    seen, real = [], cluster.open_cluster

    def spy(scheduler, n, **k):
        seen.append((scheduler, n))
        return real(scheduler, n, processes=False)

    monkeypatch.setattr(cluster, "open_cluster", spy)
    opts = {"states": 2, "beta": 0.2, "iterations": 4, "burn_in": 2, "period": 1, "chains": 1,
            "shards": shards}
    sharded.fit_sharded(CORPUS, opts, 0, False, front=cgs_pfa)
    assert seen == [("local", workers)]


def test_sweep_seconds_is_the_wall_time_a_round_of_sweeps_took(client):
    """``info["sweep_seconds"]`` is the fit's seconds over its rounds (one sweep of every
    chain a round: 14 here), so the rounds took ``sweep_seconds * rounds`` seconds, within
    the call's own wall time (issue 39: seconds times rounds lived); likewise the other
    bookkeeping of the info."""
    import time

    t0 = time.perf_counter()
    res = run(client, 2)
    wall = time.perf_counter() - t0
    assert res.info["rounds"] == SETTINGS["iterations"]
    assert res.info["sweep_seconds"] * res.info["rounds"] == pytest.approx(res.info["seconds"])
    assert 0 < res.info["seconds"] <= wall
    # the speed unit: nanoseconds per state and token of every sweep of every chain; and the
    # draws kept per chain, not the chains (issue 39: ``sweeps + states`` and ``shape[0]``)
    per = SETTINGS["iterations"] * SETTINGS["n_states"] * res.info["n_tokens"] * SETTINGS["chains"]
    assert res.info["ns_per_state_token"] == pytest.approx(res.info["seconds"] * 1e9 / per)
    assert res.info["kept_draws_per_chain"] == res.counts.shape[1] == 5
    assert res.info["chain_seconds"] == [res.info["seconds"]] * 2  # neither resumed


def test_progress_counts_every_sweep_of_every_chain_and_changes_nothing(client, capsys):
    """With ``progress`` a bar on standard error counts the sweeps of all chains (2 x 14), and
    the draws are the quiet run's bit for bit (issue 39: a total of chains / sweeps lived)."""
    quiet = run(client, 2)
    capsys.readouterr()
    loud = run(client, 2, progress=True)
    err = capsys.readouterr().err
    assert "/28 " in err and "cgs-pfa x2" in err, err[-300:]
    assert_same(loud, quiet)
