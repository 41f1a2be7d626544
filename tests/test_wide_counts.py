"""Corpora of 2**24 tokens and more (issue 41 item 1): CGS-PFA, the iPFA (direct and blocked
samplers) and ``--auto`` keep float64 counts, exact, in the same sweeps; shown here with the
threshold lowered so that a small corpus takes that path.

One test is statistical (:func:`test_ipfa_float64_predictive_matches_float32`): an exact
Mann-Whitney test at level :data:`FALSE_ALARM`, so it fails with probability at most 0.1% when
the float64 chains have the float32 chains' law; its seeds are fixed, so it passes or fails
the same way every run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

import bayesfa
from bayesfa.datasets import pautomac_path
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.pautomac import read_sample
from bayesfa.samplers.chains import free_positions
from bayesfa.samplers.pfa import auto, cgs_pfa, ipfa
from bayesfa.validation.toys import all_strings, get_toy

#: Level of the statistical test below (its false-alarm rate, exact: Mann-Whitney's null law).
FALSE_ALARM = 1e-3

OPTIONS = dict(method="cgs-pfa", states=6, beta=0.05, iterations=40, burn_in=20, chains=2, seed=1)


@pytest.fixture
def lowered(monkeypatch):
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)


def test_count_type_follows_the_corpus_size():
    assert cgs_pfa.count_dtype(cgs_pfa.FLOAT32_EXACT_TOKENS - 1) is np.float32
    assert cgs_pfa.count_dtype(cgs_pfa.FLOAT32_EXACT_TOKENS) is np.float64


def test_float64_counts_give_the_float32_chain(lowered, monkeypatch):
    """Both count types hold every count exactly, so the sweep samples the same conditionals:
    on this corpus the same seed gives the same chain and draws (the weights' float32
    rounding, ~1e-7 relative, moves no inversion here)."""
    corpus = read_sample(pautomac_path(24, "train"))
    wide = bayesfa.fit(corpus, **OPTIONS)
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 1 << 24)
    narrow = bayesfa.fit(corpus, **OPTIONS)
    assert (wide.info["count_dtype"], narrow.info["count_dtype"]) == ("float64", "float32")
    for name, values in narrow._trace_arrays().items():
        np.testing.assert_allclose(wide._trace_arrays()[name], values, rtol=1e-12, err_msg=name)
    assert np.array_equal(wide.arrays["counts"], narrow.arrays["counts"])


@pytest.mark.parametrize("extra, named", [({"kernel": "alias-mh"}, "--kernel alias-mh"),
                                          ({"interleave": 2}, "--interleave"),
                                          ({"anneal": 5}, "--anneal")])
def test_options_that_need_float32_counts_are_one_line_errors(lowered, extra, named):
    corpus = read_sample(pautomac_path(24, "train"))
    with pytest.raises(InputError, match=f"float64, which only the plain gibbs sweep runs .*{named}"):
        bayesfa.fit(corpus, **{**OPTIONS, **extra})



# -- the iPFA ------------------------------------------------------------------------------------

def _toy_corpus(n_strings=300, seed=4):
    """Strings of the ``small`` toy's 2-state source (about 1,000 letters)."""
    from bayesfa.corpus import Corpus

    sample = get_toy("small").source.sample(n_strings, np.random.default_rng(seed))
    return Corpus.from_strings([list(sample.string(i)) for i in range(n_strings)],
                               sample.alphabet_size)


IPFA = dict(method="ipfa", states=3, iterations=60, burn_in=20, period=4, chains=2)


def _recount(tokens, z, k1, n_symbols):
    """``C_iaj`` of Definition 2 from the path, by numpy (not the kernels' code)."""
    ref = np.zeros((k1, n_symbols, k1), dtype=np.int64)
    np.add.at(ref, (z[:-1], tokens, z[1:]), 1)
    return ref


@pytest.mark.parametrize("sampler", ["direct", "blocked"])
def test_ipfa_float64_counts_recorded_reproducible(lowered, sampler, tmp_path):
    """With the threshold lowered the iPFA keeps float64 counts: the manifest says so, the
    same seed gives the same run bit for bit, and the final path's counts are the last draw's."""
    corpus = _toy_corpus()
    opts = dict(IPFA, sampler=sampler, **({"truncate": 8} if sampler == "blocked" else {}))
    run = bayesfa.fit(corpus, seed=3, out=tmp_path / "run", **opts)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["info"]["count_dtype"] == run.info["count_dtype"] == "float64"
    again = bayesfa.fit(corpus, seed=3, **opts)
    for name, values in run._trace_arrays().items():
        assert np.array_equal(again._trace_arrays()[name], values), name
    for name in ("counts", "beta_bar", "alpha"):
        assert np.array_equal(again.arrays[name], run.arrays[name]), name
    res = ipfa.sample_ipfa(corpus, seed=3, **{k: v for k, v in opts.items() if k != "method"})
    assert res.info["count_dtype"] == "float64"
    tokens = np.asarray(corpus.tokens)
    for ch in range(opts["chains"]):
        k1 = res.counts.shape[2]
        assert np.array_equal(_recount(tokens, res.z[ch], k1, corpus.alphabet_size + 1),
                              res.counts[ch, -1])


@pytest.mark.parametrize("sampler", ["direct", "blocked-slice", "blocked-dense"])
def test_ipfa_float64_chain_state_is_exact_integers(lowered, sampler):
    """The kernel's own state after sweeps in float64: ``c``, ``ct`` float64 whole numbers equal
    to the path's counts (numpy's recount), ``ct`` the transpose of ``c``, ``ci`` their row sums;
    ``recip`` and ``bk`` float64 too."""
    corpus = _toy_corpus()
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    n_symbols = corpus.alphabet_size + 1
    rng = np.random.default_rng(5)
    priors = np.array([1.0, 0.1, 1.0, 0.1])
    if sampler.startswith("blocked"):  # what ipfa's blocked chain runs: step 0, then
        from bayesfa.samplers.pfa._ipfa_blocked_kernel import build_hybrid  # steps 1-6

        sweeps = build_hybrid(None, paths=sampler.split("-")[1])  # with --paths slice|dense
        chain = ipfa._BlockedChain(tokens, n_symbols, 3, rng, 1.0, 1.0, 8)
    else:
        from bayesfa.samplers.pfa._ipfa_kernel import sweeps

        chain = ipfa._Chain(tokens, n_symbols, 3, rng, 1.0, 1.0, 0)
    chain.run(30, rng, priors, sweeps)
    assert {x.dtype for x in (chain.c, chain.ct, chain.recip, chain.bk)} == {np.dtype(np.float64)}
    k1 = chain.c.shape[0]
    assert int(chain.z.max()) < k1
    ref = _recount(tokens, chain.z, k1, n_symbols)
    assert np.array_equal(chain.c[:, :, :k1], ref) and not chain.c[:, :, k1:].any()
    assert np.array_equal(chain.ct[:, :, :k1], ref.transpose(1, 2, 0))
    assert np.array_equal(chain.ci, ref.sum(axis=(1, 2)))
    assert chain.c.sum() == tokens.size


def _chain_predictive(run, test):
    """Per chain: Eq. 6 over its own draws, ``sum_b log mean_d Pr(b | xi~_d)`` [chain]."""
    from bayesfa.forward import log_mean_exp

    per = ipfa.per_sample_log_prob(run.arrays, test)          # [chain, draw, string]
    return log_mean_exp(per, axis=1).sum(axis=-1)


@pytest.mark.parametrize("sampler", ["direct", "blocked"])
def test_ipfa_float64_predictive_matches_float32(monkeypatch, sampler):
    """Eight float32 chains (seed 11) and eight float64 chains (seed 12, the threshold lowered):
    each chain's Eq. 6 log predictive of every string up to length 4, compared by an exact
    two-sided Mann-Whitney test. Under the null (the float64 chains have the float32 chains'
    law: the same conditionals, exact counts both) the p-value is below FALSE_ALARM = 0.1% with
    probability at most 0.1%; a float64 kernel that sampled another law (e.g. weights from
    wrong counts) shifts every chain's predictive and gives p = 2 / C(16, 8) = 1.6e-4."""
    corpus, test = _toy_corpus(), all_strings(4)
    # the blocked sampler at L = 8 (its default max(2 states, 200) costs L^2 a letter in the
    # FFBS: 126 s here for a law that is the same at any L)
    opts = dict(IPFA, sampler=sampler, chains=8, iterations=240, burn_in=40, period=4,
                **({"truncate": 8} if sampler == "blocked" else {}))
    narrow = bayesfa.fit(corpus, seed=11, **opts)
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)
    wide = bayesfa.fit(corpus, seed=12, **opts)
    assert (narrow.info["count_dtype"], wide.info["count_dtype"]) == ("float32", "float64")
    x, y = _chain_predictive(narrow, test), _chain_predictive(wide, test)
    assert mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue > FALSE_ALARM


def test_ipfa_memory_estimate_counts_the_wider_counts(monkeypatch):
    """One draw of one chain, so the chain state is the peak: float64 counts add 4 bytes for
    each cell of ``c`` and ``ct`` (at twice the assumed states in use), and nothing else."""
    corpus = _toy_corpus()
    method = get_method("ipfa")
    opts = dict(states=50, iterations=21, burn_in=20, period=1, chains=1)
    narrow = method.estimate_memory(corpus, opts)
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)
    from bayesfa.samplers.pfa._ipfa_kernel import padded_width

    cap = padded_width(2 * max(ipfa.MEMORY_STATES_FACTOR * 50, ipfa.MEMORY_STATES_MIN))
    assert method.estimate_memory(corpus, opts) - narrow == 2 * (cap + 1) * (corpus.alphabet_size + 1) * cap * 4


# -- --auto ----------------------------------------------------------------------------------

def _auto_corpus():
    return read_sample(pautomac_path(24, "train")).subset(np.arange(2000))


@pytest.fixture(scope="module")
def auto_schedule(tmp_path_factory):
    """A float32 --auto fit's recorded schedule (so the runs below time nothing)."""
    res = cgs_pfa.METHOD.fit(_auto_corpus(), {"auto": True, "chains": 1, "budget": 2.5}, 5, False)
    assert res.info["count_dtype"] == "float32"
    path = tmp_path_factory.mktemp("auto") / "schedule.json"
    path.write_text(json.dumps(res.info["auto"]["schedule"]))
    return path


def test_auto_float64_runs_recorded_reproducible(lowered, auto_schedule, tmp_path):
    """``bayesfa fit --auto`` with the threshold lowered: it runs (once refused), the manifest
    records float64 counts and why the final chains make no blocked move, the same seed and
    schedule give the same run bit for bit, and ``bayesfa predict`` reads it."""
    from bayesfa.cli import main

    train = tmp_path / "small.train"
    lines = pautomac_path(24, "train").read_text().splitlines()
    train.write_text(f"2000 {lines[0].split()[1]}\n" + "\n".join(lines[1:2001]) + "\n")
    common = ["fit", str(train), "--method", "cgs-pfa", "--auto", "--schedule", str(auto_schedule),
              "--chains", "2", "--seed", "5", "--quiet"]
    runs = [tmp_path / "a", tmp_path / "b"]
    for out in runs:
        assert main([*common, "--out", str(out)]) == 0
    info = json.loads((runs[0] / "manifest.json").read_text())["info"]
    assert info["count_dtype"] == "float64" and "blocked_every" not in info
    assert info["auto"]["final"]["blocked_off"].startswith("float64 counts")
    with np.load(runs[0] / "arrays.npz") as a, np.load(runs[1] / "arrays.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
    pred = tmp_path / "pred.txt"
    assert main(["predict", str(runs[0]), str(pautomac_path(24, "test")), "--out", str(pred)]) == 0


def test_auto_float64_refuses_final_blocked_moves_in_one_line(lowered, auto_schedule):
    with pytest.raises(InputError, match="float64, which only the plain gibbs sweep runs "
                                         r"\(not --final-blocked-every\)"):
        cgs_pfa.METHOD.fit(_auto_corpus(), {"auto": True, "chains": 1, "schedule": str(auto_schedule),
                                            "final_blocked_every": 3}, 5, False)


def test_auto_chain_float64_counts_follow_the_path(lowered):
    """The chain every --auto phase runs (``cgs_pfa._run_chain``, plain gibbs sweep) with
    float64 counts: its last draw's counts are numpy's recount of its final path."""
    corpus = _auto_corpus()
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    counts, *_, z, _, _, _ = cgs_pfa._run_chain(tokens, corpus.alphabet_size + 1, 8, 0.05, 10, 2, 5,
                                             np.random.SeedSequence(2))
    assert np.array_equal(_recount(tokens, z, 9, corpus.alphabet_size + 1), counts[-1])


def test_auto_chain_float64_predictive_matches_float32(monkeypatch):
    """The chains --auto runs (``cgs_pfa._run_chain`` from a given path, as its phases and
    final chains do): eight float32 chains (seed 21) and eight float64 chains (seed 22, the
    threshold lowered), all from one random path at N = 10, beta = 0.05, on 2,000 strings of
    PAutomaC 24; each chain's Eq. 6 log predictive of 300 of its test strings, compared by an
    exact two-sided Mann-Whitney test: under the null (the same law) the p-value is below
    FALSE_ALARM = 0.1% with probability at most 0.1%."""
    from bayesfa.forward import log_mean_exp
    from bayesfa.samplers.chains import random_path

    corpus = _auto_corpus()
    test = read_sample(pautomac_path(24, "test")).subset(np.arange(300))
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    z0 = random_path(tokens, 10, np.random.default_rng(0))

    def chains(seed):
        out = []
        for child in np.random.SeedSequence(seed).spawn(8):
            counts = cgs_pfa._run_chain(tokens, corpus.alphabet_size + 1, 10, 0.05, 30, 2, 10,
                                        child, init_z=z0)[0]
            per = cgs_pfa.plugin_log_prob(counts, 0.05, test)          # [draw, string]
            out.append(log_mean_exp(per, axis=0).sum())
        return np.array(out)

    narrow = chains(21)
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)
    assert cgs_pfa.count_dtype(tokens.size) is np.float64
    wide = chains(22)
    assert mannwhitneyu(narrow, wide, alternative="two-sided", method="exact").pvalue > FALSE_ALARM


def test_auto_memory_estimate_counts_the_wider_counts(monkeypatch):
    """The ladder's largest N's chain states: 4 more bytes for each of their counts' cells."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    corpus, opts = _auto_corpus(), {"auto": True, "chains": 1, "budget": 10.0}
    narrow = cgs_pfa.METHOD.estimate_memory(corpus, opts)
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)
    n = auto.LADDER_MAX
    assert cgs_pfa.METHOD.estimate_memory(corpus, opts) - narrow == (
        4 * (n + 1) * (corpus.alphabet_size + 1) * padded_width(n) * 4)
