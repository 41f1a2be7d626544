"""Tests of CGS-SG (Shibata & Yoshinaka 2013, Sect. 3, Algorithm 2, Eq. 18).

Brute force from Eq. 18 for the kernel's conditional of ``z_t``; exact laws of ``|G|`` (by
enumerating every graph) for the degree convolution and the graph update. For the three
samplers of issue 7 (``cgs-sg``, ``cgs-hmm``, ``cgs-hmm-star``): the CLI on problem 24, and
(slow) the whole ``bayesfa validate`` and its mutants, and every shared PAutomaC problem. Statistical checks have fixed seeds and state their
false-alarm rate.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.samplers.pfa import _cgs_sg_kernel as kernel
from bayesfa.samplers.pfa import cgs_sg
from bayesfa.samplers.pfa.cgs_hmm import free_positions, random_path
from bayesfa.validation.pfa import variants as checks
from bayesfa.validation.pfa.reference import batch_counts

TRAIN = Corpus.from_strings([[0, 1, 0], [1, 1], [], [0, 0, 1, 1], [1]], alphabet_size=2)
N_SYMBOLS = 3


def _chain(corpus, n_states, z, rng, extra=0.5):
    """Chain state for ``z`` with ``G = G_min`` plus each other edge with probability ``extra``."""
    st = cgs_sg.new_state(n_states, corpus.alphabet_size + 1)
    c, ct, ci, gr, grt, v, meta = st
    kernel.fill_counts(corpus.tokens, z, c, ct, ci)
    mask = checks.edge_mask(n_states, corpus.alphabet_size + 1)
    gr[...] = mask & ((c > 0) | (rng.random(c.shape) < extra))
    kernel.set_graph(gr, grt, v, meta, False)
    return st


@pytest.mark.parametrize("n_states", [1, 2, 3])
def test_kernel_weights_equal_the_exact_conditional(n_states):
    """The kernel's ``g_k`` at a position, normalised, is ``Pr(z_t = k | z^-t, G, alpha)`` from
    Eq. 18 (0 where ``G`` lacks an edge), for random paths and graphs; exact to 1e-12."""
    rng = np.random.default_rng(5)
    tokens = TRAIN.tokens
    beta = 0.3
    for _ in range(5):
        z = random_path(tokens, n_states, rng)
        st = _chain(TRAIN, n_states, z, rng)
        graph = st[3].astype(bool)
        for t in free_positions(tokens):
            zz = np.repeat(z[None].astype(np.int64), n_states, axis=0)
            zz[:, t] = np.arange(1, n_states + 1)
            c = batch_counts(tokens, zz, n_states, N_SYMBOLS)
            inside = ((c > 0) <= graph).all(axis=(1, 2, 3))
            lj = np.where(inside, checks.sg_log_joint(c, np.broadcast_to(graph, c.shape), beta), -np.inf)
            want = np.exp(lj - lj.max())
            want /= want.sum()
            g = np.zeros(n_states + 1)
            zc = z.copy()
            copy = [a.copy() for a in st]
            kernel.sweep(np.array([t]), tokens, zc, *copy, g, np.random.default_rng(0), beta,
                         10 ** 9, 0)
            np.testing.assert_allclose(g[1:] / g[1:].sum(), want, rtol=1e-12, atol=1e-15)


def test_graph_sum_equals_enumeration_of_every_graph():
    """:func:`sg_graph_sum` (degree convolution) = brute force over all ``2^F`` graphs."""
    rng = np.random.default_rng(2)
    z = random_path(TRAIN.tokens, 2, rng)
    c = batch_counts(TRAIN.tokens, z[None].astype(np.int64), 2, N_SYMBOLS)[0]
    mask = checks.edge_mask(2, N_SYMBOLS)
    free = np.flatnonzero((mask & (c == 0)).ravel())
    graphs = np.zeros((2 ** free.size, c.size), dtype=bool)
    graphs[:] = (c > 0).ravel()
    for r, bits in enumerate(itertools.product([False, True], repeat=free.size)):
        graphs[r, free] = bits
    graphs = graphs.reshape((-1,) + c.shape)
    lj = checks.sg_log_joint(np.broadcast_to(c, graphs.shape), graphs, 0.4)
    total, law = checks.sg_graph_sum(c, 0.4)
    assert total == pytest.approx(float(logsumexp(lj)), rel=1e-12)
    sizes = graphs.sum(axis=(1, 2, 3))
    want = np.bincount(sizes, weights=np.exp(lj - logsumexp(lj)), minlength=law.size)
    np.testing.assert_allclose(law, want, atol=1e-12)


def test_graph_update_leaves_the_exact_law_of_graph_size_invariant():
    """At a fixed ``z``, repeated updates of ``G`` (Algorithm 2, lines 1-7): the mean of ``|G|``
    over 4 chains x 1,000 updates matches its exact value (z-test with ArviZ-ESS standard
    error at |z| <= 3.29, false-alarm rate 1e-3); the mutant without the state factor fails."""
    from bayesfa.validation.diagnostics import ess_mean

    rng = np.random.default_rng(11)
    z = random_path(TRAIN.tokens, 2, rng)
    beta = 0.3
    c = batch_counts(TRAIN.tokens, z[None].astype(np.int64), 2, N_SYMBOLS)[0]
    _, law = checks.sg_graph_sum(c, beta)
    mean = float(law @ np.arange(law.size))
    for variant, ok in ((0, True), (kernel.NO_STATE_FACTOR, False)):
        sizes = np.empty((4, 1000))
        for ch in range(4):
            st = _chain(TRAIN, 2, z.copy(), rng, extra=0.0)
            cc, ct, ci, gr, grt, v, meta = st
            for it in range(sizes.shape[1]):
                kernel.update_graph(cc, ci, gr, grt, v, meta, rng, beta, variant)
                sizes[ch, it] = meta[0]
        se = sizes.std(ddof=1) / math.sqrt(ess_mean(sizes))
        assert (abs(sizes.mean() - mean) <= 3.29 * se) == ok, (variant, sizes.mean(), mean, se)


def test_invariants_counts_and_log_joint_after_sweeps():
    rng = np.random.default_rng(0)
    tokens = TRAIN.tokens
    z = random_path(tokens, 3, rng)
    st = cgs_sg.new_state(3, N_SYMBOLS)
    c, ct, ci, gr, grt, v, meta = st
    kernel.fill_counts(tokens, z, c, ct, ci)
    kernel.set_graph(gr, grt, v, meta, True)
    kernel.sweeps(40, free_positions(tokens), tokens, z, *st, rng, 0.5, 4, 0)
    c2, ct2, ci2 = (np.zeros_like(a) for a in (c, ct, ci))
    kernel.fill_counts(tokens, z, c2, ct2, ci2)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(ct, ct2)
    np.testing.assert_array_equal(ci, ci2)
    assert ((c > 0) <= (gr > 0)).all()                                   # G_min <= G
    assert not gr[~checks.edge_mask(3, N_SYMBOLS)].any()
    np.testing.assert_array_equal(grt, np.transpose(gr, (1, 2, 0)))
    np.testing.assert_array_equal(v, gr.sum(axis=(1, 2)))
    assert meta[0] == gr.sum() and meta[2] == kernel.n_full_edges(3, N_SYMBOLS) == 28
    assert kernel.log_joint(c, ci, gr, v, meta, 0.5) == pytest.approx(
        float(checks.sg_log_joint(c, gr, 0.5)), rel=1e-12)


def test_run_trace_and_seed():
    kw = dict(n_states=3, beta=0.5, iterations=30, burn_in=10, period=5, chains=2)
    a = cgs_sg.sample_cgs_sg(TRAIN, seed=4, **kw)
    b = cgs_sg.sample_cgs_sg(TRAIN, seed=4, **kw)
    c = cgs_sg.sample_cgs_sg(TRAIN, seed=5, **kw)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.graph, b.graph)
    assert not np.array_equal(a.graph, c.graph)
    for name in ("log_joint", "n_states", "n_pairs", "n_edges", "n_graph_edges", "determinacy"):
        assert a.trace[name].shape == (2, 4)
        np.testing.assert_array_equal(a.trace[name], b.trace[name])
    np.testing.assert_allclose(a.trace["log_joint"], checks.sg_log_joint(a.counts, a.graph, 0.5),
                               rtol=1e-12)
    np.testing.assert_array_equal(a.trace["n_edges"], (a.counts > 0).sum(axis=(2, 3, 4)))
    np.testing.assert_array_equal(a.trace["n_graph_edges"], a.graph.sum(axis=(2, 3, 4)))
    np.testing.assert_array_equal(a.trace["n_pairs"], (a.counts.sum(-1) > 0).sum(axis=(2, 3)))
    # E of the fully connected NFA, (N + 1)((S - 1) N + 1) = 4 * 7 (Sect. 3), in the run's info
    assert a.info["n_full_edges"] == 28
    xi = cgs_sg.sg_xi(a.counts, a.graph, 0.5)
    used = a.graph.sum(axis=(-2, -1)) > 0
    np.testing.assert_allclose(xi.sum(axis=(-2, -1))[used], 1.0, rtol=1e-12)
    with pytest.raises(InputError):
        cgs_sg.sample_cgs_sg(TRAIN, seed=1, **{**kw, "beta": 0.0})
    with pytest.raises(InputError):
        cgs_sg.sample_cgs_sg(TRAIN, seed=1, **{**kw, "n_states": 0})


# -- the three samplers of issue 7 (cgs-sg, cgs-hmm, cgs-hmm-star) ------------------------------

ISSUE_7 = {"cgs-sg": ([], ["--beta", "-0.5"]),
           "cgs-hmm": (["--alpha", "0.2"], ["--alpha", "-1"]),
           "cgs-hmm-star": (["--alpha", "0.2"], ["--alpha", "-1"])}


@pytest.mark.parametrize("method", list(ISSUE_7))
def test_cli_on_bundled_problem_24(method, tmp_path, capsys):
    """fit, predict (every test string positive), diagnose; bad options exit 2 in one line."""
    from bayesfa.cli import main
    from bayesfa.datasets import pautomac_path
    from bayesfa.pautomac import read_solution

    own, own_bad = ISSUE_7[method]
    train, test = pautomac_path(24, "train"), pautomac_path(24, "test")
    run = tmp_path / "run"
    assert main(["fit", str(train), "--method", method, "--states", "4", "--beta", "0.1", *own,
                 "--iterations", "6", "--burn-in", "2", "--period", "2", "--chains", "2",
                 "--seed", "3", "--out", str(run), "--quiet"]) == 0
    assert main(["predict", str(run), str(test), "--out", str(tmp_path / "p")]) == 0
    assert (read_solution(tmp_path / "p") > 0).all()
    assert main(["diagnose", str(run), "--json"]) == 0
    assert get_method(method).estimate_memory(
        Corpus.from_strings([[0]], 1), {"states": 4, "chains": 2, "iterations": 6, "burn_in": 2,
                                        "period": 2}) > 0
    for bad in (["--states", "0"], ["--beta", "0"], own_bad):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:  # one error line, exit 2
            main(["fit", str(train), "--method", method, *bad, "--seed", "1",
                  "--out", str(tmp_path / "bad")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert "error:" in err and bad[0] in err, err


@pytest.mark.slow
@pytest.mark.parametrize("method", list(ISSUE_7))
def test_validate_passes(method):
    """False-alarm rate 2e-3 (predictive + Geweke, 1e-3 each). The checks run are those
    ``bayesfa validate --list`` names, in its order."""
    from bayesfa.validation.harness import method_listing, validate

    report = validate(method, "tiny", seed=0)
    assert report.passed, report.to_table()
    assert [c.name for c in report.checks] == method_listing(method)["checks"]


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["cgs-sg:mutant-no-correction", "cgs-sg:mutant-no-state-factor",
                                    "cgs-hmm:mutant-no-correction", "cgs-hmm:mutant-all-visits"])
def test_mutants_fail(mutant):
    from bayesfa.validation.harness import validate

    report = validate(mutant, "tiny", seed=0)
    assert not report.check("predictive").passed
    assert not report.check("geweke").passed


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_shared_pautomac_problem_from_the_cli(shared_data, tmp_path):
    """cgs-sg, cgs-hmm, cgs-hmm-star fit (N = 3, a few sweeps) and predict a positive
    probability (finite log probability) for every test string of every PAutomaC problem in
    ../shared/data."""
    from bayesfa.cli import main
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.rundir import load_run

    folder = shared_data / "pautomac"
    problems = sorted(int(p.name.split(".")[0]) for p in folder.glob("*.pautomac.train"))
    assert problems
    for problem in problems:
        for method in ("cgs-sg", "cgs-hmm", "cgs-hmm-star"):
            run = tmp_path / f"{method}-{problem}"
            assert main(["fit", str(folder / f"{problem}.pautomac.train"), "--method", method,
                         "--states", "3", "--iterations", "4", "--burn-in", "2", "--period", "2",
                         "--chains", "1", "--seed", "1", "--out", str(run), "--quiet"]) == 0
            pred = tmp_path / f"{method}-{problem}.pred"
            assert main(["predict", str(run), str(folder / f"{problem}.pautomac.test"),
                         "--out", str(pred)]) == 0
            # every string has a finite log probability (a positive probability); the file
            # holds exp(log p), which underflows to 0 below ~1e-308 (e.g. log p = -827 for
            # a long string of problem 34 at N = 3), so it is checked where representable
            loaded = load_run(run)
            logp = get_method(method).predict_log_prob(loaded.arrays, loaded.options,
                                                       read_sample(folder / f"{problem}.pautomac.test"))
            assert np.isfinite(logp).all(), (method, problem)
            written = read_solution(pred)
            assert (written[logp > -700] > 0).all(), (method, problem)



def test_sg_xi_normalises_every_state_with_edges_and_zeroes_the_rest():
    """``sg_xi`` (Eq. 10's ``xi~`` on the graph): each state with edges gets ``(C + beta)`` over
    its edges, normalised to sum to 1, whether it has counts or not (with none, uniform over
    its edges: its total ``v beta`` is below 1 here); a state without edges a zero row; 0 off
    the graph. Issue 39: ``where=total > 1`` left the uncounted states' rows at 0 and passed
    every test."""
    from bayesfa.samplers.pfa import cgs_sg

    beta = 0.3
    graph = np.zeros((3, 2, 3), dtype=np.uint8)
    counts = np.zeros((3, 2, 3), dtype=np.int32)
    graph[0, 0, 1] = graph[0, 1, 2] = graph[0, 0, 0] = 1  # state 0: three edges, counts
    counts[0, 0, 1], counts[0, 1, 2] = 4, 1
    graph[1, 1, 0] = graph[1, 0, 2] = 1                    # state 1: two edges, no counts
    xi = cgs_sg.sg_xi(counts, graph, beta)                 # state 2: no edges
    np.testing.assert_allclose(xi[0].sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(xi[0, 0, 1], 4.3 / (5 + 3 * beta), rtol=1e-12)
    np.testing.assert_allclose(xi[0, 0, 0], beta / (5 + 3 * beta), rtol=1e-12)
    assert 2 * beta < 1
    np.testing.assert_allclose(xi[1, 1, 0], 0.5, rtol=1e-12)
    np.testing.assert_allclose(xi[1, 0, 2], 0.5, rtol=1e-12)
    np.testing.assert_allclose(xi[1].sum(), 1.0, rtol=1e-12)
    assert not xi[2].any()
    assert not xi[graph == 0].any()


def test_sg_log_prob_builds_xi_a_few_samples_at_a_time(monkeypatch):
    """``sg_log_prob`` hands ``chunked_log_prob`` the bytes of one sample's ``xi~`` (float64
    ``[N+1, A, N+1]``), so that at most ``_XI_CHUNK_BYTES`` of them are built at once: with room
    for 3 samples, 7 samples are built 3, 3, 1 at a time, and the result is the one of all at
    once (issue 39: ``8 >> size``, a zero size, built them all at once and passed every test)."""
    from bayesfa.samplers.pfa import cgs_hmm

    rng = np.random.default_rng(6)
    n1, a, s = 4, 3, 7
    counts = rng.integers(0, 5, size=(s, n1, a, n1)).astype(np.int32)
    graph = (rng.random((s, n1, a, n1)) < 0.7).astype(np.uint8)
    graph[:, :, 0, 0] = 1  # every state can end
    corpus = Corpus.from_strings([[0, 1], [1], [], [1, 0, 0]], a - 1)
    whole = cgs_sg.sg_log_prob(counts, graph, 0.5, corpus)
    sizes, real = [], cgs_sg.sg_xi

    def spy(c, g, beta):
        sizes.append(len(c))
        return real(c, g, beta)

    monkeypatch.setattr(cgs_sg, "sg_xi", spy)
    monkeypatch.setattr(cgs_hmm, "_XI_CHUNK_BYTES", 3 * 8 * n1 * a * n1)
    np.testing.assert_array_equal(cgs_sg.sg_log_prob(counts, graph, 0.5, corpus), whole)
    assert sizes == [3, 3, 1]


def test_fit_without_graph_interval_resamples_the_graph_every_n_times_s_positions():
    """A caller's options without ``graph_interval`` (the API's dict of only what it sets) get
    the documented default, 0: the graph resampled every ``N x S`` positions, as recorded in
    ``info["graph_interval"]`` (issue 39: a default of 1 there, a graph move at every position,
    passed every test)."""
    corpus = Corpus.from_strings([[0, 1], [1, 1, 0], []], 2)
    opts = {"states": 3, "beta": 0.5, "iterations": 6, "burn_in": 2, "period": 2, "chains": 1}
    fit = get_method("cgs-sg").fit(corpus, opts, 0, False)
    assert fit.info["graph_interval"] == 3 * 3


def test_moved_is_zero_with_one_state_and_positive_with_three():
    """``moved``, the fraction of the free positions whose state changed per sweep, is 0 in
    every draw of a one-state fit (no other state to move to), where every count of the
    trace, e.g. ``n_graph_edges``, is positive; with three states positions move. (Issue 39:
    ``moved`` read from the slot before it, ``n_graph_edges``, passed every check: a fraction
    in [0, 1] a draw.)"""
    corpus = Corpus.from_strings([[0, 1, 1], [1], [], [0, 0, 1, 0]], 2)
    one = cgs_sg.sample_cgs_sg(corpus, 1, 0.5, 20, 10, 1, 1, 0)
    assert one.trace["moved"].shape == one.trace["log_joint"].shape == (1, 10)
    assert not one.trace["moved"].any() and one.trace["n_graph_edges"].all()
    three = cgs_sg.sample_cgs_sg(corpus, 3, 0.5, 20, 10, 1, 1, 0)
    assert three.trace["moved"].mean() > 0


def test_the_kernel_variant_codes_are_distinct():
    """Six codes, one a kernel: a code shared by two would leave one named mutant unreachable
    (issue 39: ``STALE_TOTAL = 5``, the code of ``SIZE_RATIO_FLIPPED``, passed every test)."""
    from bayesfa.samplers.pfa import _cgs_sg_kernel as K

    codes = (K.CORRECT, K.NO_CORRECTION, K.NO_STATE_FACTOR, K.VP_FOR_VK, K.STALE_TOTAL,
             K.SIZE_RATIO_FLIPPED)
    assert sorted(codes) == list(range(6))
