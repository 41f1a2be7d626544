"""The validation of CGS-HMM, CGS-HMM(*) and CGS-SG (issue 21): independent references, exact
kernel checks, named mutants, the ``abc`` toy.

Fast: the references against brute force written here (every graph enumerated, a path-sum
forward pass), the exact kernel checks pass on the production kernels and fail on each kernel
mutant (exact: no false alarm), the graph-move chi-square (false-alarm rate 1e-3, fixed seed),
the plug-in mutants failing the predictive check at a small budget (false-alarm rate 1e-3 for
the correct method, fixed seed), default kernels bit-identical to the runs recorded before the
mutation switches. Slow: the 5-seed kill matrix (every method passes on seeds 0-4, every mutant
fails on seeds 0-4).
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from bayesfa.corpus import Corpus
from bayesfa.validation.pfa import variants, variants_kernel, variants_reference
from bayesfa.validation.pfa.reference import all_paths, batch_counts
from bayesfa.validation.toys import TOYS, all_strings, get_toy


def _path_sum(xi, b):
    """``Pr(b | xi)`` by summing every state path of ``b`` (no forward recursion)."""
    q = xi.shape[0]
    total = 0.0
    for y in itertools.product(range(1, q), repeat=len(b)):
        s = (0,) + y
        p = np.prod([xi[s[t], b[t] + 1, s[t + 1]] for t in range(len(b))]) if b else 1.0
        total += p * xi[s[-1], 0, 0]
    return total


def test_own_forward_pass_equals_the_path_sum():
    rng = np.random.default_rng(0)
    xi = rng.random((2, 3, 3, 3))
    xi[:, :, 0, 1:] = 0
    xi[:, :, 1:, 0] = 0
    xi /= xi.sum(axis=(2, 3), keepdims=True)
    strings = [[], [0], [1, 0], [1, 1, 0]]
    got = variants_reference.forward_prob(xi, strings)
    want = [[_path_sum(x, b) for b in strings] for x in xi]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_reference_plugins_are_the_papers():
    """Eq. 20 with the move total and the CGS-HMM(*) plug-in: rows sum to 1; the printed Eq. 20
    (the mutant) does not when a state ends strings; the estimator's plug-ins agree with the
    references (two implementations, each from the paper)."""
    from bayesfa.samplers.pfa import cgs_hmm
    from bayesfa.samplers.pfa.cgs_pfa import plugin_xi

    rng = np.random.default_rng(1)
    c = rng.integers(0, 5, size=(4, 3, 3, 3))
    c[..., 0, 1:] = 0
    c[..., 1:, 0] = 0
    ref = variants_reference.eq20_xi(c, 0.3, 0.7)
    np.testing.assert_allclose(ref.sum(axis=(-2, -1)), 1.0, rtol=1e-12)
    np.testing.assert_allclose(cgs_hmm.hmm_xi(c, 0.3, 0.7), ref, rtol=1e-12)
    star = variants_reference.star_xi_reference(c, 0.7)
    np.testing.assert_allclose(star.sum(axis=(-2, -1)), 1.0, rtol=1e-12)
    np.testing.assert_allclose(plugin_xi(c, 0.7), star, rtol=1e-12)
    bad = cgs_hmm.hmm_xi(c, 0.3, 0.7, cgs_hmm.UNNORMALISED_EQ20).sum(axis=(-2, -1))
    assert (bad[c[..., 0, 0] > 0] < 1 - 1e-9).all()
    swapped = cgs_hmm.hmm_xi(c, 0.3, 0.7, cgs_hmm.ALPHA_BETA_SWAPPED)
    assert np.abs(swapped - ref).max() > 1e-3


def test_sg_reference_equals_enumeration_of_every_graph():
    """:func:`sg_predictive` (G summed out given the degrees) against every ``(z, G)``
    enumerated, Eq. 18 weights written here and the plug-in ``(C + beta) / (C_i + v_i beta)``
    on ``G``; N = 2, 2 letters (E = 15)."""
    train = Corpus.from_strings([[0, 1], [1], []], 2)
    test = all_strings(2)
    beta, n = 0.7, 2
    z_all = all_paths(train.tokens, n)
    counts = batch_counts(train.tokens, z_all, n, 3).astype(float)
    mask = variants.edge_mask(n, 3)
    num = np.zeros(test.n_strings)
    den = 0.0
    strings = [list(test.string(s)) for s in range(test.n_strings)]
    for c in counts:
        free = np.flatnonzero((mask & (c == 0)).ravel())  # every G >= G_min(z)
        for bits in itertools.product([False, True], repeat=free.size):
            g = (c > 0).ravel().copy()
            g[free] = bits
            g = g.reshape(mask.shape)
            w = np.exp(variants.sg_log_joint(c, g, beta))
            x = (c + beta) * g
            tot = x.sum(axis=(1, 2), keepdims=True)
            x = np.divide(x, tot, out=np.zeros_like(x), where=tot > 0)
            num += w * np.array([_path_sum(x, b) for b in strings])
            den += w
    want = np.log(num / den)
    got = variants_reference.sg_predictive(train, test, n, beta)
    np.testing.assert_allclose(got, want, rtol=1e-11)


def test_hmm_reference_weights_are_the_collapsed_joint():
    """On a corpus with 3 letters: the reference is the weighted mean of ``Pr(b | xi~(z))``
    over every path, here recomputed path by path (no grouping by count vector)."""
    train = Corpus.from_strings([[0, 2], [1], []], 3)
    test = all_strings(2, 3)
    z_all = all_paths(train.tokens, 3)
    c = batch_counts(train.tokens, z_all, 3, 4)
    lw = variants.hmm_log_joint(c, 0.25, 1.0)
    w = np.exp(lw - logsumexp(lw))
    xi = variants_reference.eq20_xi(c, 0.25, 1.0)
    strings = [list(test.string(s)) for s in range(test.n_strings)]
    want = np.log(np.array([[_path_sum(x, b) for b in strings] for x in xi]).T @ w)
    got = variants_reference.hmm_predictive(train, test, 3, 0.25, 1.0, star=False)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- exact kernel checks ------------------------------------------------------------------------

def test_hmm_site_exact_passes_and_catches_every_kernel_mutant():
    """Each kernel mutant fails far beyond the tolerance: the check states its margin (largest
    residual over the tolerance; issue 39 item 4), at most 1 for the kernel."""
    from bayesfa.validation.checks import margin

    correct = variants_kernel.hmm_site_check(0)
    assert correct.passed and margin(correct) <= 1
    for name, (code, plugin, _) in variants.MUTANTS["hmm"].items():
        if code:
            check = variants_kernel.hmm_site_check(code)
            assert not check.passed and margin(check) > 1.5, name


@pytest.mark.parametrize("name", ["correct", "no-correction", "vp-for-vk", "stale-total"])
def test_sg_site_exact(name):
    code = 0 if name == "correct" else variants.MUTANTS["sg"][name][0]
    check = variants_kernel.sg_site_check(code, n_graphs=4)
    assert check.passed == (code == 0), check.to_table()


@pytest.mark.parametrize("name", ["correct", "no-state-factor", "size-ratio-flipped"])
def test_sg_graph_move(name):
    """Chi-square, false-alarm rate 1e-3 (fixed seed 0) for the correct kernel."""
    code = 0 if name == "correct" else variants.MUTANTS["sg"][name][0]
    check = variants_kernel.sg_graph_check(code, n_draws=50_000)
    assert check.passed == (code == 0), check.to_table()


def test_degree_law_sums_the_graph_sum():
    """The exact degree law's mean |G| equals that of :func:`variants.sg_graph_sum` (two
    derivations from Eq. 18)."""
    from bayesfa.samplers.pfa import _cgs_sg_kernel as kernel
    from bayesfa.samplers.pfa.cgs_sg import new_state

    strings, letters, n_states, zs = variants_kernel.GRAPH_CASES[0]
    corpus = Corpus.from_strings(strings, letters)
    c, ct, ci, *_ = new_state(n_states, letters + 1)
    kernel.fill_counts(corpus.tokens, np.asarray(zs[1], dtype=np.int32), c, ct, ci)
    vecs, prob = variants_kernel.degree_law(c, 0.5)
    _, size_law = variants.sg_graph_sum(c, 0.5)
    np.testing.assert_allclose(prob @ vecs.sum(axis=1), size_law @ np.arange(size_law.size),
                               rtol=1e-12)


# -- mutants through validate ----------------------------------------------------------------------

def test_validate_list_names_each_variant_check_and_cgs_pfa_s():
    """``bayesfa validate --list`` names the checks of cgs-sg, cgs-hmm(-star) and cgs-pfa
    without running them (it used to say only that more would be named when run); the slow
    tests ``test_cgs_sg.py::test_validate_passes`` and
    ``test_validation.py::test_validate_cgs_pfa_passes`` check that a run gives these, in order."""
    from bayesfa.validation.harness import method_listing

    assert method_listing("cgs-sg")["checks"] == ["predictive", "recorded", "geweke", "site-exact",
                                                  "graph-move"]
    for name in ("cgs-hmm", "cgs-hmm-star"):
        assert method_listing(name)["checks"] == ["predictive", "recorded", "geweke", "site-exact"]
    for name in ("cgs-sg", "cgs-hmm", "cgs-hmm-star", "cgs-pfa"):
        assert not method_listing(name)["notes"], name
    pfa = method_listing("cgs-pfa")["checks"]
    assert pfa[:6] == ["predictive", "recorded", "path-gof", "path-gof-uniform-start", "geweke", "sbc"]
    assert {"split-merge-rows", "ffbs-given-theta", "replica-chain"} <= set(pfa)


def test_mutant_names_are_registered():
    from bayesfa.validation.harness import mutant_names_of

    assert {"cgs-hmm:mutant-unnormalised-eq20", "cgs-hmm:mutant-alpha-beta-swapped",
            "cgs-hmm:mutant-stale-emission"} <= set(mutant_names_of("cgs-hmm"))
    assert "cgs-sg:mutant-vp-for-vk" in mutant_names_of("cgs-sg")
    assert "cgs-hmm-star:mutant-literal-star" in mutant_names_of("cgs-hmm-star")
    assert variants.CGS_HMM.validation_budget["alpha"] != variants.CGS_HMM.validation_budget["beta"]


@pytest.mark.parametrize("name", ["cgs-hmm", "cgs-hmm:mutant-unnormalised-eq20",
                                  "cgs-hmm:mutant-alpha-beta-swapped",
                                  "cgs-hmm-star:mutant-literal-star"])
def test_plugin_mutants_fail_the_predictive(name):
    """Small budget (4,200 sweeps x 4 chains): the correct method passes (false-alarm rate
    1e-3, seed 0), the plug-in mutants fail."""
    from bayesfa.validation.harness import compare

    report = compare(name, "tiny", seed=0, options={"iterations": 4_200})
    assert report.passed == (":mutant-" not in name), report.to_table()


# -- toys and bit identity ---------------------------------------------------------------------------

def test_abc_toy_and_the_old_toys_unchanged():
    toy = get_toy("abc")
    assert toy.n_states >= 3 and toy.train.alphabet_size == 3
    assert max(len(s) for s in toy.train.strings()) == 5
    assert toy.n_paths <= 65_536
    assert [TOYS[n].train.n_letters for n in ("tiny", "small", "three")] == [11, 16, 10]
    assert all(TOYS[n].train.alphabet_size == 2 for n in ("tiny", "small", "three"))


def _digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def test_default_kernels_bit_identical_to_before_the_switches():
    """Digests recorded with the kernels before the mutation switches were added."""
    from bayesfa.samplers.pfa.cgs_hmm import sample_cgs_hmm
    from bayesfa.samplers.pfa.cgs_sg import sample_cgs_sg

    toy = get_toy("small")
    h = sample_cgs_hmm(toy.train, 3, 0.3, 0.7, 300, 100, 5, 2, seed=3)
    s = sample_cgs_sg(toy.train, 3, 0.4, 300, 100, 5, 2, seed=3, graph_interval=4)
    assert _digest(h.counts) == "5cc4a3859dfc3708"
    assert _digest(s.counts) == "68290e98c1af7a74"
    assert _digest(s.graph) == "ee83bff348f42734"


# -- the kill matrix (slow) -----------------------------------------------------------------------------

def _matrix_names():
    from bayesfa.validation.harness import mutant_names_of

    return [n for m in ("cgs-hmm", "cgs-hmm-star", "cgs-sg") for n in [m] + mutant_names_of(m)]


@pytest.mark.slow
@pytest.mark.parametrize("name", _matrix_names())
def test_kill_matrix_five_seeds(name):
    """Every correct method passes ``validate`` on seeds 0-4 (false-alarm rate <= 4e-3 per
    run, union bound over its checks), every mutant fails on seeds 0-4."""
    from bayesfa.validation.harness import validate

    verdicts = [validate(name, "tiny", seed=s).passed for s in range(5)]
    if ":mutant-" in name:
        assert not any(verdicts), verdicts
    else:
        assert all(verdicts), verdicts


@pytest.mark.slow
@pytest.mark.parametrize("method", ["cgs-sg", "cgs-hmm"])
@pytest.mark.parametrize("toy", ["three", "abc"])
def test_validate_on_the_three_state_toys(method, toy):
    from bayesfa.validation.harness import validate

    report = validate(method, toy, seed=0)
    assert report.passed, report.to_table()
