"""The exact check of oracle-pdfa's Gibbs part (bayesfa.validation.pdia.oracle).

The reference (exact law of one DiscreteHMCGibbs sweep of ``delta`` given ``mu``) is checked
against brute force first; then the production kernel's discrete block against it, correct and
with the model mutants of ``bayesfa.models.pdfa.MODEL_VARIANTS``. The references of the chain
checks (2- and 3-state posteriors, the posterior under the hyperpriors) are checked against the
model module's enumerations and against Monte Carlo; the chain checks themselves are slow.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from bayesfa.validation.pdia import oracle

STRINGS = [list(s) for s in oracle.SMALL_TOY[0]]


#: Distinct hyperparameters (issue 39 item 2), none 1: a formula that swaps two of them fails.
A, B, G = 1.3, 0.7, 3.0


def _log_pi(mu, n_q=2, n_letters=2):
    tables = oracle._tables(n_q, n_letters)
    return tables, np.array([oracle.log_target(d, mu, STRINGS, n_letters, A, B)
                             for d in tables])


def test_target_matches_the_generative_model_by_brute_force():
    """``log_target`` (phi, pi integrated out) against a direct Dirichlet-moment computation
    with ``phi`` integrated per column and ``pi`` per state, at ``alpha = 1.3``,
    ``beta = 0.7``: exact up to rounding."""
    from scipy.special import gammaln

    mu = np.array([0.3, 0.7])
    tables, lp = _log_pi(mu)

    def dir_moment(a, n):      # E[prod p^n] under Dir(a)
        return (gammaln(a.sum()) - gammaln(a.sum() + n.sum())
                + (gammaln(a + n) - gammaln(a)).sum())

    ref = []
    for d in tables:
        prior = sum(dir_moment(A * mu, np.bincount(d[:, j], minlength=2)) for j in range(2))
        c = np.zeros((2, 3))
        for s in STRINGS:
            q = 0
            for a in s:
                c[q, a + 1] += 1
                q = d[q, a]
            c[q, 0] += 1
        ref.append(prior + sum(dir_moment(np.full(3, B / 3), c[q]) for q in range(2)))
    ref = np.array(ref)
    assert np.allclose(lp - lp[0], ref - ref[0], atol=1e-10)


def test_sweep_law_is_a_random_order_product_and_leaves_the_target_invariant():
    """The subset recursion equals the average over all 4! orders of the entry kernels; each
    entry kernel is reversible w.r.t. the target; the sweep leaves the target invariant."""
    mu = np.array([0.2, 0.8])
    tables, lp = _log_pi(mu)
    pi = np.exp(lp - lp.max())
    pi /= pi.sum()
    kernels = oracle.entry_kernels(lp, 2, 4)
    for k in kernels:
        assert np.allclose(k.sum(1), 1.0) and (k >= 0).all()
        flow = pi[:, None] * k
        assert np.allclose(flow, flow.T, atol=1e-15)
    full = np.zeros((len(tables), len(tables)))
    for order in itertools.permutations(range(4)):
        m = np.eye(len(tables))
        for e in order:
            m = m @ kernels[e]
        full += m / 24
    for start in (0, 5, 15):
        assert np.allclose(oracle.sweep_law(start, kernels), full[start], atol=1e-13)
    assert np.allclose(pi @ full, pi, atol=1e-13)


THREE = [list(s) for s in oracle.THREE_TOY[0]]


@functools.lru_cache(maxsize=None)
def _posterior(n_q, alpha, beta, gamma):
    """The gibbs-chain reference of the 2- or 3-state toy, computed once per setting."""
    strings, reference = ((STRINGS, oracle.posterior_two_states) if n_q == 2
                          else (THREE, oracle.posterior_three_states))
    return reference(strings, 2, alpha, beta, gamma)


@pytest.mark.parametrize("n_q", [2, 3])
def test_posterior_matches_the_models_enumeration(n_q):
    """The gibbs-chain references (2 states: quadrature over ``mu_0``; 3 states:
    stick-breaking quadrature over ``mu``) against the model module's own enumeration (sums of
    Dirichlet moments): two independent computations of one posterior over 16 or 729 tables,
    deterministic (no false failures)."""
    from bayesfa.corpus import Corpus
    from bayesfa.models.pdfa import enumerate_posterior

    strings = STRINGS if n_q == 2 else THREE
    for a, b, g in ((A, B, G), (0.7, 2.0, 0.5)):
        p = _posterior(n_q, a, b, g)
        post = enumerate_posterior(Corpus.from_strings(strings, 2), n_q - 1, a, b, g)
        q = np.zeros(n_q ** (2 * n_q))
        q[oracle._index(post["delta"], n_q)] = np.exp(post["log_weight"])
        assert np.abs(p - q).max() < 1e-12


@pytest.mark.parametrize("gamma", [0.5])
def test_three_state_mu_integral_matches_monte_carlo(gamma):
    """``mu_moment_three`` of every distinct in-degree count ``v`` (100) against the mean over
    4e5 draws ``mu ~ Dir(gamma/3)``: within 5 standard errors each (the integrand is bounded,
    so the mean is normal to good accuracy). False failure <= 100 * 5.7e-7 < 1e-4 (fixed
    seed). ``alpha = 1.3``, distinct from ``gamma``; ``gamma = 3`` (with ``beta = 0.7``)
    is in test_posterior_matches_the_generative_model_by_monte_carlo."""
    alpha = A
    patterns, _ = oracle._column_patterns(oracle._tables(3, 2))
    mu = np.random.default_rng(3).dirichlet(np.full(3, gamma / 3), size=400_000)   # [M, 3]
    for v in patterns:
        vals = np.ones(len(mu))
        for i, k in oracle._rising(v):
            vals *= alpha * mu[:, i] + k
        se = vals.std() / np.sqrt(len(vals))
        quad = oracle.mu_moment_three(v, alpha, gamma)
        assert abs(quad - vals.mean()) < 5 * se, (v, quad, vals.mean(), se)


def _urn(draws, conc):
    """Probability of the sequence ``draws`` (ints) under a Polya urn with concentrations
    ``conc`` ``[K]`` (``... [M, K]``): ``prod_n (conc_x + #earlier x) / (sum conc + n)``, the
    sequential predictive of a Dirichlet-categorical, written without gamma functions."""
    conc = np.asarray(conc, dtype=np.float64)
    seen = np.zeros(conc.shape[-1])
    out = np.ones(conc.shape[:-1])
    for n, x in enumerate(draws):
        out = out * (conc[..., x] + seen[x]) / (conc.sum(-1) + n)
        seen[x] += 1
    return out


@pytest.mark.parametrize("n_q", [2, 3])
def test_posterior_matches_the_generative_model_by_monte_carlo(n_q):
    """The gibbs-chain references at ``alpha = 1.3``, ``beta = 0.7``, ``gamma = 3`` against
    the generative model written anew (nothing of the reference or of the model module used):
    ``p(data | delta)`` exactly by the Polya urn of each state's emissions (end symbol
    included, ``pi_q ~ Dir(beta/3)``), so the reference's posterior divided by it and
    renormalised is its prior ``p(delta)``, which sums to 1 over the tables; that prior against
    the mean over 2e5 draws ``mu ~ Dir(gamma/|Q|)`` of ``prod_j`` (Polya urn of column ``j``
    given ``mu``, ``phi_j ~ Dir(alpha mu)``; exchangeable, so its values sorted), within 5 standard errors per
    distinct in-degree count (the integrand is in [0, 1]; each standard error below 1% of the
    value, so a swap of two hyperparameters is not hidden in the noise). False failure
    <= 100 * 5.7e-7 < 1e-4 (fixed seed)."""
    strings = STRINGS if n_q == 2 else THREE
    p = _posterior(n_q, A, B, G)
    tables = oracle._tables(n_q, 2)
    lik = np.empty(len(tables))
    for t, d in enumerate(tables):
        seqs = [[] for _ in range(n_q)]                 # each state's emitted symbols, 0 = end
        for s in strings:
            q = 0
            for a in s:
                seqs[q].append(a + 1)
                q = d[q, a]
            seqs[q].append(0)
        lik[t] = np.prod([_urn(x, np.full(3, B / 3)) for x in seqs])
    prior_ref = p / lik
    prior_ref /= prior_ref.sum()
    mu = np.random.default_rng(7).dirichlet(np.full(n_q, G / n_q), size=200_000)   # [M, Q]
    columns, cache = {}, {}                    # urn of one sorted column [M]; per table
    for t, d in enumerate(tables):
        cols = [tuple(np.sort(d[:, j])) for j in range(2)]
        for col in cols:
            if col not in columns:
                columns[col] = _urn(col, A * mu)
        if tuple(cols) not in cache:
            vals = columns[cols[0]] * columns[cols[1]]
            cache[tuple(cols)] = (vals.mean(), vals.std() / np.sqrt(len(vals)))
        mean, se = cache[tuple(cols)]
        assert se < 0.01 * mean and abs(prior_ref[t] - mean) < 5 * se, (d, prior_ref[t], mean, se)
    assert len(cache) == (9 if n_q == 2 else 100)


def _polya_two(v, alpha, m0):
    """``p(delta | mu, alpha)`` ``[M]`` of a 2-state table with in-degree counts ``v``: the
    Polya urn of each column written with gamma functions (Eq. delta:end)."""
    from scipy.special import gammaln

    am = alpha[:, None] * np.stack([m0, 1.0 - m0], 1)                          # [M, 2]
    out = v.shape[1] * (gammaln(alpha) - gammaln(alpha + 2))
    for j in range(v.shape[1]):
        for i in range(2):
            if v[i, j]:
                out = out + gammaln(am[:, i] + v[i, j]) - gammaln(am[:, i])
    return np.exp(out)


def test_hyper_reference_matches_monte_carlo_over_the_hyperpriors():
    """Brute force for gibbs-chain-hyper's reference: ``P(v)`` of every distinct ``v`` (9) by
    the mean over 4e5 draws ``alpha, gamma ~ Exp(1)``, ``mu_0 ~ Beta(gamma/2, gamma/2)`` of
    ``p(delta | mu, alpha)``, and ``Lk(c)`` of every table (16) by the mean over 2e5 draws
    ``beta ~ Exp(1)`` of the Dirichlet-multinomial, each within 5 standard errors (bounded
    integrands, in [0, 1]; the prior's standard errors below 1% of the value). False failure
    <= 25 * 5.7e-7 < 2e-5 (fixed seed)."""
    from scipy.special import gammaln

    rng = np.random.default_rng(5)
    tables = oracle._tables(2, 2)
    patterns, _ = oracle._column_patterns(tables)
    alpha, gamma = rng.exponential(size=400_000), rng.exponential(size=400_000)
    m0 = rng.beta(gamma / 2, gamma / 2)
    for v in patterns:
        vals = _polya_two(v, alpha, m0)
        se = vals.std() / np.sqrt(len(vals))
        ref = oracle.hyper_prior_two(v)
        assert se < 0.01 * ref and abs(ref - vals.mean()) < 5 * se, (v, ref, vals.mean(), se)
    beta = rng.exponential(size=200_000)
    for d in tables:
        c = oracle._emissions(d, STRINGS, 2)                                 # [2, 3]
        log_dm = np.zeros(len(beta))
        for q in range(2):        # Dir(beta/3) over {end, 0, 1} integrated out (Eq. x:end)
            log_dm += (gammaln(beta) - gammaln(beta + c[q].sum())
                       + (gammaln(c[q][None, :] + beta[:, None] / 3)
                          - gammaln(beta[:, None] / 3)).sum(1))
        vals = np.exp(log_dm)
        se = vals.std() / np.sqrt(len(vals))
        ref = oracle.hyper_likelihood(c)
        assert abs(ref - vals.mean()) < 5 * se, (d, ref, vals.mean(), se)


def test_hyper_posterior_matches_the_models_gauss_laguerre_enumeration():
    """gibbs-chain-hyper's reference (adaptive quadrature, Gauss-Jacobi over ``mu``) against
    the model module's ``enumerate_posterior_hyper`` (Gauss-Laguerre of order 64 in each
    hyperparameter, Dirichlet moments over ``mu``): the 16 posterior probabilities agree to
    1e-9. Deterministic (no false failures)."""
    from bayesfa.corpus import Corpus
    from bayesfa.models.pdfa import enumerate_posterior_hyper

    p = oracle.posterior_two_states_hyper(STRINGS, 2)
    post = enumerate_posterior_hyper(Corpus.from_strings(STRINGS, 2), 1, order=64)
    q = np.zeros(16)
    q[oracle._index(post["delta"], 2)] = np.exp(post["log_weight"]).sum(1)
    assert np.abs(p - q).max() < 1e-9


def test_chi_square_pools_small_cells_until_their_expected_count_is_five():
    stat, df = oracle.chi_square(np.array([1, 0, 50, 49]), np.array([0.01, 0.02, 49.97, 50.0]))
    assert df == 1 and stat == pytest.approx((51 - 50) ** 2 / 50 + (49 - 50) ** 2 / 50)
    stat, df = oracle.chi_square(np.array([3, 47, 50]), np.array([6.0, 44.0, 50.0]))
    assert df == 2 and stat == pytest.approx(9 / 6 + 9 / 44)


def test_index_inverts_tables():
    tables = oracle._tables(3, 2)
    assert (oracle._index(tables, 3) == np.arange(len(tables))).all()


# Fast variant: the small toy only (16 tables), 16 starts x 2000 one-sweep draws. False
# failure rate of the correct-kernel assertion: at most 1e-3 (chi-square, fixed seed 0).
FAST = dict(n_draws=2_000, starts_small=16)


def test_gibbs_sweep_fast_passes_for_the_oracle():
    check = oracle.gibbs_sweep_check(None, seed=0, **FAST)
    assert check.passed, check.to_table()


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["no-mu", "end-mass"])
def test_gibbs_sweep_fast_catches_model_mutants(variant):
    check = oracle.gibbs_sweep_check(None, seed=0, variant=variant, **FAST)
    assert not check.passed, check.to_table()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_gibbs_chain_on_five_seeds(seed):
    """The validate default: 1000 (2-state toy) and 2000 (3-state toy) independent oracle
    chains of 50 steps against the exact posteriors: correct passes (false failure <= 1e-3
    per seed, 5e-4 per toy), each mutant fails, on the 3-state toy on its own."""
    check = oracle.gibbs_chain_check(seed=seed)
    assert check.passed, check.to_table()
    for variant in ("no-mu", "end-mass"):
        check = oracle.gibbs_chain_check(seed=seed, variant=variant)
        assert not check.passed and not check.rows[1]["pass"], check.to_table()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_gibbs_chain_hyper_on_five_seeds(seed):
    """The validate default of gibbs-chain-hyper: 500 oracle chains of 200 steps with the
    Gamma(1, 1) hyperpriors on the 2-state toy against the exact p(delta | data) (alpha, beta,
    gamma, mu integrated out): correct passes (false failure <= 1e-3 per seed if 200 steps
    reach the stationary law; 50 did not, see the module docstring of oracle.py), each
    mutant fails. Measured 2026-11-26: 5 of 5 seeds as asserted, 667 s in all."""
    check = oracle.gibbs_chain_hyper_check(seed=seed)
    assert check.passed, check.to_table()
    for variant in ("no-mu", "end-mass"):
        check = oracle.gibbs_chain_hyper_check(seed=seed, variant=variant)
        assert not check.passed, check.to_table()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_gibbs_sweep_full_on_five_seeds(seed):
    """The validate default (small toy + the harness toy 'tiny', 729 tables, 20000 draws per
    start): correct passes (false failure <= 1e-3 per seed), each mutant fails."""
    from bayesfa.validation.toys import get_toy

    toy = get_toy("tiny")
    assert oracle.gibbs_sweep_check(toy, seed=seed).passed
    for variant in ("no-mu", "end-mass"):
        assert not oracle.gibbs_sweep_check(toy, seed=seed, variant=variant).passed


def test_validate_lists_the_check_and_the_mutants():
    from bayesfa.validation.harness import method_listing

    entry = method_listing("oracle-pdfa")
    assert {"predictive", "gibbs-sweep", "gibbs-chain", "gibbs-chain-hyper"} <= set(entry["checks"])
    assert set(entry["mutants"]) == {"oracle-pdfa:mutant-no-mu", "oracle-pdfa:mutant-end-mass"}


def test_a_mutant_gets_the_mcmc_budget_not_the_enumeration():
    """Without the spec's budget a mutant would be fitted by enumeration (which ignores the
    variant), since the harness's BUDGETS entry is keyed by the name ``oracle-pdfa``."""
    from bayesfa.validation.harness import budget_options, resolve_method
    from bayesfa.validation.toys import get_toy

    name = "oracle-pdfa:mutant-no-mu"
    method = resolve_method(name)
    assert method.variant == "no-mu"
    assert budget_options(name, get_toy("tiny"), method)["pdfa_inference"] == "mcmc"
