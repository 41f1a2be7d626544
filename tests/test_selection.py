"""K-fold cross-validation and the two-stage choice of N and beta (bayesfa.selection).

The method here is a fake: a smoothed unigram model over letters and the end marker, plus a
penalty on ``states`` and ``beta`` that makes ``states = 30`` and ``beta = 0.05`` the best
grid points, plus seed-dependent noise so that a seed mix-up changes the table.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult
from bayesfa.selection import (best_index, candidate_key, choose_index, cross_validate,
                               format_table, kfold_indices, run_fold, run_selection,
                               select_two_stage, task_seed)

BEST_STATES, BEST_BETA = 30, 0.05


class FakeMethod:
    """Unigram model with an options penalty; records its fits in ``calls`` (this process only)."""

    name = "fake-unigram"
    summary = "test double"

    def __init__(self):
        self.calls = []
        self.data_seeds = []  # (training strings, seed) of each fit

    def add_arguments(self, parser):
        pass

    def fit(self, corpus, options, seed, progress):
        self.calls.append((dict(options), corpus.n_strings, seed))
        self.data_seeds.append((corpus.tokens.tobytes(), seed))
        counts = np.bincount(corpus.tokens, minlength=corpus.alphabet_size + 1).astype(float)
        noise = np.random.default_rng(seed).normal(scale=1e-3)
        return FitResult({"counts": counts, "noise": np.array(noise)}, {}, {})

    def predict_log_prob(self, arrays, options, corpus):
        smoothing = 0.0 if options.get("unsmoothed") else 1.0
        p = arrays["counts"] + smoothing
        with np.errstate(divide="ignore"):
            logp = np.log(p / p.sum())
        per_token = logp[corpus.tokens]
        out = np.add.reduceat(per_token, corpus.offsets[:-1]) if corpus.n_tokens else np.zeros(0)
        penalty = (0.05 * ((options["states"] - BEST_STATES) / 10) ** 2
                   + 0.05 * math.log10(options["beta"] / BEST_BETA) ** 2)
        return out - penalty + float(arrays["noise"])


def toy_corpus(n=40, seed=0):
    rng = np.random.default_rng(seed)
    strings = [rng.integers(0, 3, size=rng.integers(0, 6)) for _ in range(n)]
    return Corpus.from_strings(strings, alphabet_size=4)  # letter 3 never occurs


BASE = {"iterations": 10, "burn_in": 0, "period": 1, "chains": 1, "jobs": 1}
STATES = [10, 20, 30, 40]
BETAS = [0.01, 0.05, 0.5]


def strip_time(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_kfold_indices_partition():
    splits = kfold_indices(23, 5, seed=1)
    assert len(splits) == 5
    held = np.concatenate([h for _, h in splits])
    assert sorted(held.tolist()) == list(range(23))
    for train, h in splits:
        assert np.intersect1d(train, h).size == 0
        assert sorted(np.concatenate([train, h]).tolist()) == list(range(23))
        assert h.size in (4, 5)
    again = kfold_indices(23, 5, seed=1)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(splits, again))
    other = kfold_indices(23, 5, seed=2)
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(splits, other))
    with pytest.raises(InputError):
        kfold_indices(3, 5, seed=0)
    with pytest.raises(InputError):
        kfold_indices(10, 1, seed=0)


def test_task_seeds_and_keys():
    assert candidate_key({"states": np.int64(10), "beta": 0.5}) == "beta=0.5,states=10"
    assert task_seed(7, 3) == task_seed(7, 3)
    assert task_seed(7, 3) == int(np.random.SeedSequence(7, spawn_key=(3,)).generate_state(1)[0])
    seeds = {task_seed(7, f) for f in range(4)} | {task_seed(8, 0)}
    assert len(seeds) == 5


def test_common_random_numbers_across_candidates():
    """Every candidate is fitted on fold k with the same seed (and the same strings), so the
    seed-dependent noise of the fake cancels in the differences: with CRN the paired
    difference of two candidates is exactly the difference of their penalties on every fold."""
    corpus, method = toy_corpus(), FakeMethod()
    grid = [{"states": n, "beta": 0.5} for n in STATES]
    rows = cross_validate(method, corpus, BASE, grid, folds=4, seed=3)
    by_fold: dict = {}
    for data, seed in method.data_seeds:
        by_fold.setdefault(data, set()).add(seed)
    splits = kfold_indices(corpus.n_strings, 4, 3)
    for k, (train, _) in enumerate(splits):  # one seed per fold, whatever the candidate
        assert by_fold[corpus.subset(train).tokens.tobytes()] == {task_seed(3, k)}
    assert len(method.data_seeds) == 4 * len(STATES)
    best = best_index(rows)
    assert STATES[best] == BEST_STATES and rows[best]["diff"] == 0.0
    for r, n in zip(rows, STATES):
        penalty = 0.05 * ((n - BEST_STATES) / 10) ** 2
        assert r["diff"] == pytest.approx(-penalty, abs=1e-9)
        assert r["diff_se"] == pytest.approx(0.0, abs=1e-9)  # the noise is common: it cancels
        assert r["se"] > 0.01  # while each mean on its own varies over the folds


def test_one_standard_error_rule():
    rows = [{"mean": -2.00, "se": 0.10, "n_zero": 0}, {"mean": -1.95, "se": 0.10, "n_zero": 0},
            {"mean": -1.90, "se": 0.10, "n_zero": 0}, {"mean": -1.85, "se": 0.08, "n_zero": 0}]
    for r in rows:
        r["mean_finite"] = r["mean"]
    assert choose_index(rows) == 3
    # within one SE of the best (-1.85 - 0.08 = -1.93): rows 2 and 3; the simplest is row 2
    assert choose_index(rows, one_se=True, simplicity=[10, 20, 30, 40]) == 2
    assert choose_index(rows, one_se=True, simplicity=[40, 30, 20, 10]) == 3
    with pytest.raises(ValueError):
        choose_index(rows, one_se=True)
    rows[0]["n_zero"] = 1  # a candidate with p = 0 strings is never within one SE
    rows[0]["mean"] = -math.inf
    assert choose_index(rows, one_se=True, simplicity=[0, 20, 30, 40]) == 2


def test_two_stage_one_se_picks_fewer_states(tmp_path):
    """With held-out means that vary more over the folds than the penalty between N = 20 and
    N = 30, the one-SE rule takes N = 20 (and the largest beta within one SE); the choice is
    reported with the difference to the best and its standard error."""
    corpus = toy_corpus()
    sel = select_two_stage(FakeMethod(), corpus, STATES, BETAS, folds=4, seed=9, base_options=BASE,
                           out_dir=tmp_path, one_se=True)
    best = sel.stage1[best_index(sel.stage1)]
    within = [n for n, r in zip(STATES, sel.stage1) if r["mean"] >= best["mean"] - best["se"]]
    assert sel.choice["states"] == min(within) < BEST_STATES
    within_b = [b for b, r in zip(BETAS, sel.stage2)
                if r["mean"] >= max(x["mean"] for x in sel.stage2) - sel.stage2[best_index(sel.stage2)]["se"]]
    assert sel.choice["beta"] == max(within_b)
    meta = sel.to_dict()
    assert meta["rule"] == "one-se"
    u = meta["uncertainty"]["stage1"]
    chosen = next(r for r in sel.stage1 if r.get("chosen"))
    assert u["diff"] == chosen["diff"] < 0 and u["diff_se"] >= 0 and u["best_se"] == best["se"]
    assert "one-standard-error rule" in (tmp_path / "selection.txt").read_text()
    plain = select_two_stage(FakeMethod(), corpus, STATES, BETAS, folds=4, seed=9, base_options=BASE)
    assert plain.choice == {"states": BEST_STATES, "beta": BEST_BETA}
    assert plain.meta["rule"] == "best" and plain.meta["uncertainty"]["stage2"]["diff"] == 0.0


def test_cross_validate_sums_held_out_log_probs():
    corpus, method = toy_corpus(), FakeMethod()
    [row] = cross_validate(method, corpus, BASE, [{"states": 20, "beta": 0.1}], folds=4, seed=3)
    splits = kfold_indices(corpus.n_strings, 4, 3)
    total = 0.0
    for k, (train, held) in enumerate(splits):
        res = run_fold(method, corpus, {**BASE, "states": 20, "beta": 0.1}, train, held,
                       task_seed(3, k))
        assert res["loglik"] == pytest.approx(row["fold_logliks"][k])
        total += res["loglik"]
    assert row["mean"] == pytest.approx(total / corpus.n_strings)
    assert row["se"] > 0 and row["n_zero"] == 0
    # every fit saw the other folds' strings
    assert sorted(n for _, n, _ in method.calls[:4]) == sorted(t.size for t, _ in splits)


def test_same_seed_same_table():
    corpus = toy_corpus()
    grid = [{"states": n, "beta": 0.5} for n in STATES]
    a = cross_validate(FakeMethod(), corpus, BASE, grid, folds=5, seed=11)
    b = cross_validate(FakeMethod(), corpus, BASE, list(reversed(grid)), folds=5, seed=11)
    assert strip_time(a) == strip_time(list(reversed(b)))
    c = cross_validate(FakeMethod(), corpus, BASE, grid, folds=5, seed=12)
    assert strip_time(a) != strip_time(c)


def test_sequential_and_dask_agree(tmp_path):
    corpus = toy_corpus()
    kwargs = dict(states_grid=STATES, beta_grid=BETAS, folds=4, seed=5,
                  base_options={**BASE, "jobs": 2})
    seq = run_selection(FakeMethod(), corpus, out_dir=tmp_path / "seq", workers=None, **kwargs)
    par = run_selection(FakeMethod(), corpus, out_dir=tmp_path / "par", workers=2, **kwargs)
    for stage in ("stage1", "stage2"):
        assert strip_time(seq[stage]) == strip_time(par[stage])
    assert seq["choice"] == par["choice"] == {"states": BEST_STATES, "beta": BEST_BETA}
    # the fold files are the same too (jobs is not part of what a fit computes)
    for path in (tmp_path / "seq" / "cv").rglob("fold-*.json"):
        other = tmp_path / "par" / path.relative_to(tmp_path / "seq")
        a, b = json.loads(path.read_text()), json.loads(other.read_text())
        a["result"].pop("seconds"), b["result"].pop("seconds")
        assert a == b


def test_resume_recomputes_only_missing_folds(tmp_path):
    corpus, method = toy_corpus(), FakeMethod()
    grid = [{"states": n, "beta": 0.2} for n in STATES]
    first = cross_validate(method, corpus, BASE, grid, folds=5, seed=2, out_dir=tmp_path)
    assert len(method.calls) == len(grid) * 5
    files = sorted((tmp_path / "cv").rglob("fold-*.json"))
    assert len(files) == len(grid) * 5
    removed = [files[1], files[7], files[13]]
    for f in removed:
        f.unlink()
    method.calls.clear()
    second = cross_validate(method, corpus, BASE, grid, folds=5, seed=2, out_dir=tmp_path)
    assert len(method.calls) == len(removed)
    assert all(f.exists() for f in removed)
    assert strip_time(first) == strip_time(second)
    method.calls.clear()
    cross_validate(method, corpus, BASE, grid, folds=5, seed=2, out_dir=tmp_path)
    assert method.calls == []
    # another seed (or other options) in the same directory is refused, not mixed in
    with pytest.raises(InputError, match="different cross-validation"):
        cross_validate(method, corpus, BASE, grid, folds=5, seed=3, out_dir=tmp_path)
    with pytest.raises(InputError, match="different cross-validation"):
        cross_validate(method, corpus, {**BASE, "iterations": 20}, grid, folds=5, seed=2,
                       out_dir=tmp_path)


def test_two_stage_picks_preferred_point(tmp_path):
    corpus, method = toy_corpus(), FakeMethod()
    sel = select_two_stage(method, corpus, STATES, BETAS, folds=4, seed=9, base_options=BASE,
                           out_dir=tmp_path)
    assert sel.choice == {"states": BEST_STATES, "beta": BEST_BETA}
    assert [r["candidate"] for r in sel.stage1] == [{"states": n, "beta": 0.5} for n in STATES]
    assert [r["candidate"] for r in sel.stage2] == [{"states": BEST_STATES, "beta": b} for b in BETAS]
    assert [r.get("chosen", False) for r in sel.stage1] == [n == BEST_STATES for n in STATES]
    # (30, 0.5) is in both stages and fitted once
    assert len(method.calls) == (len(STATES) + len(BETAS) - 1) * 4
    assert sel.stage2[-1]["fold_logliks"] == sel.stage1[STATES.index(BEST_STATES)]["fold_logliks"]
    saved = json.loads((tmp_path / "selection.json").read_text())
    assert saved["choice"] == sel.choice and len(saved["stage1"]) == len(STATES)
    json.dumps(sel.to_dict(), allow_nan=False)
    text = (tmp_path / "selection.txt").read_text()
    assert "Stage 1" in text and "Stage 2" in text and "Choice: N = 30, beta = 0.05" in text
    # a rerun reads everything back
    method.calls.clear()
    again = select_two_stage(method, corpus, STATES, BETAS, folds=4, seed=9, base_options=BASE,
                             out_dir=tmp_path)
    assert method.calls == [] and strip_time(again.stage2) == strip_time(sel.stage2)


def test_single_beta_is_used_in_stage_one():
    method = FakeMethod()
    sel = select_two_stage(method, toy_corpus(), STATES, [0.1], folds=3, seed=0, base_options=BASE)
    assert {r["candidate"]["beta"] for r in sel.stage1} == {0.1}
    assert sel.choice == {"states": BEST_STATES, "beta": 0.1}
    assert len(method.calls) == len(STATES) * 3
    sel = select_two_stage(FakeMethod(), toy_corpus(), [20], BETAS, folds=3, seed=0,
                           base_options=BASE)
    assert sel.stage1 == [] and sel.choice == {"states": 20, "beta": BEST_BETA}


def test_zero_probability_is_reported():
    # unsmoothed: a held-out string with a letter its training folds never saw gets p = 0
    strings = [[0, 1]] * 10 + [[2]]
    corpus = Corpus.from_strings(strings, alphabet_size=3)
    grid = [{"states": 30, "beta": 0.05, "unsmoothed": True}, {"states": 10, "beta": 0.5}]
    rows = cross_validate(FakeMethod(), corpus, BASE, grid, folds=3, seed=0)
    assert rows[0]["mean"] == -math.inf and rows[0]["n_zero"] == 1
    assert rows[1]["n_zero"] == 0 and math.isfinite(rows[1]["mean"])
    assert best_index(rows) == 1
    assert "-inf" in format_table(rows)


def test_format_table():
    rows = cross_validate(FakeMethod(), toy_corpus(), BASE,
                          [{"states": 10, "beta": 0.5}, {"states": 30, "beta": 0.5}], folds=3, seed=0)
    rows[best_index(rows)]["chosen"] = True
    lines = format_table(rows).splitlines()
    assert lines[0].split()[:6] == ["candidate", "mean/string", "se", "diff", "se(diff)", "p=0"]
    assert lines[2].startswith("*") and "states=30" in lines[2]
    assert len(lines) == 3


def test_a_task_dropped_with_its_worker_is_submitted_again(monkeypatch):
    """A Dask task the scheduler cancelled because its worker died (CV folds and final units
    alike) is submitted again, at most TASK_RESUBMITS times; past that the error propagates
    and the futures left are cancelled. Fakes stand in for the client and its futures."""
    import concurrent.futures

    import dask.distributed

    from bayesfa import selection

    class Fut:
        def __init__(self, key, lose):
            self.key, self.lose = key, lose

        def result(self):
            if self.lose:
                raise concurrent.futures.CancelledError("already forgotten")
            return self.key * 10

    class Done(list):
        def __iter__(self):
            while self:
                yield self.pop(0)

        def add(self, fut):
            self.append(fut)

    class Client:
        status = "running"
        cancelled: list = []

        def cancel(self, futs):
            Client.cancelled += futs

    monkeypatch.setattr(dask.distributed, "as_completed", lambda futs: Done(futs))
    losses = {0: 2, 1: 0}  # task 0 lost twice, then runs

    def submit(key):
        losses[key] -= 1
        return Fut(key, losses[key] >= 0)

    submitted = {submit(k): k for k in (0, 1)}
    assert dict(selection.results_resubmitting(Client(), submitted, submit)) == {0: 0, 1: 10}

    losses = {0: selection.TASK_RESUBMITS + 1}  # lost once more than allowed
    with pytest.raises(concurrent.futures.CancelledError):
        list(selection.results_resubmitting(Client(), {submit(0): 0}, submit))


def test_scatter_is_tried_again_when_a_worker_dies_under_it(monkeypatch):
    """A worker killed during the broadcast closes its connection (an OSError): the broadcast
    is tried again on the workers left, at most SCATTER_TRIES times (tests/test_production.py
    kills a worker of a real scheduler mid-run)."""
    from bayesfa import selection

    monkeypatch.setattr(selection.time, "sleep", lambda s: None)

    class Client:
        status = "running"

        def __init__(self, failures):
            self.failures, self.calls = failures, []

        def scatter(self, data, broadcast, hash):
            self.calls.append((broadcast, hash))
            if len(self.calls) <= self.failures:
                raise OSError("Stream is closed")
            return [f"future-{x}" for x in data]

    client = Client(failures=2)
    assert selection.scatter_everywhere(client, ["a", "b"]) == ["future-a", "future-b"]
    assert client.calls == [(True, False)] * 3
    client = Client(failures=selection.SCATTER_TRIES)
    with pytest.raises(OSError, match="Stream is closed"):
        selection.scatter_everywhere(client, ["a"])
    assert len(client.calls) == selection.SCATTER_TRIES
