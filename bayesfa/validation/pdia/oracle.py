"""Validation spec of ``oracle-pdfa``: an exact check of its Gibbs part (DiscreteHMCGibbs).

``oracle-pdfa --pdfa-inference mcmc`` runs numpyro's ``DiscreteHMCGibbs(NUTS(pdfa_model),
modified=True)`` (:func:`bayesfa.models.pdfa.run_gibbs`): each step is one sweep over the
``|Q| L`` entries of the transition table ``delta`` in a uniformly random order, each entry
updated by Liu's (1996) modified Gibbs move (propose a value ``v != c`` with probability
``p_v / (1 - p_c)`` under the entry's full conditional ``p``, accept with
``min(1, (1 - p_c) / (1 - p_v))``), given ``mu``; then NUTS on ``mu``. ``alpha``, ``beta``,
``gamma`` are fixed (the oracle's options; ``gibbs-sweep`` and ``gibbs-chain`` run at
:data:`FIXED`, ``alpha = 1.3``, ``beta = 0.7``, ``gamma = 3``: distinct, none 1, issue 39
item 2), or with ``--hyperpriors`` drawn from Gamma(1, 1) and sampled by NUTS with ``mu``
(checked by ``gibbs-chain-hyper``).

**gibbs-sweep** (:func:`gibbs_sweep_check`). The discrete block of the production kernel
(the object :func:`bayesfa.models.pfa.run_mcmc` builds) is run for one sweep from given
``(delta, mu)``, ``n_draws`` times with independent keys, on toys small enough to enumerate
every table. The exact law of one sweep is computed here from the model's definition
(Pfau, Bartlett & Wood 2010, Sect. "A Prior over PDFAs", with the end symbol of
:mod:`bayesfa.models.pdfa`):

``log pi(delta | mu, data) = sum_j sum_i [lgamma(alpha mu_i + v_ij) - lgamma(alpha mu_i)]``
(``phi_j ~ Dir(alpha mu)`` integrated out, Eq. delta:end, ``v_ij = #{i': delta[i', j] = i}``)
``+ sum_q [lgamma(beta) - lgamma(beta + n_q) + sum_a lgamma(c_qa + beta/(L+1)) - lgamma(beta/(L+1))]``
(``pi_q ~ Dir(beta/(L+1))`` integrated out, Eq. x:end, ``c`` the emission counts of the
deterministic paths, end symbol included) + const,

its single-entry modified-Gibbs kernels ``K_e`` ``[T, T]`` over the ``T = |Q|^(|Q| L)`` tables,
and the random-scan sweep ``E_perm[K_perm(1) ... K_perm(m)]`` by the recursion over subsets
``A(S) = (1/|S|) sum_{e in S} A(S - e) K_e`` (the last entry of a uniform order of ``S`` is
uniform, the rest a uniform order of ``S - e``). Nothing of :mod:`bayesfa.models.pdfa` is
called for the reference (paths counted by a plain loop, the prior written out). The observed
tables after one sweep from each start are compared with that law by a chi-square test (cells
of expected count below 5 pooled, :func:`chi_square`); the statistics of every start of a toy are summed
(independent draws), and the check fails when a toy's p-value is below ``alpha / n_toys``:
a correct sampler fails with probability at most ``alpha`` (default 1e-3), up to the
chi-square approximation. ``mu`` is drawn uniformly on the simplex for each start (the move
must be right for every ``mu``), starts uniformly over the tables, both from ``seed``.

**gibbs-chain** (:func:`gibbs_chain_check`). The whole sampler as the oracle runs it
(:func:`bayesfa.models.pdfa.run_gibbs`: sweeps of ``delta`` and NUTS on ``mu``): the last
table of each of 1000 independent chains on the 2-state toy (16 tables) and of 2000 on the
3-state toy :data:`THREE_TOY` (729 tables) against the exact posterior ``p(delta | data)``
with ``mu`` integrated out, by quadrature written here, not
:func:`bayesfa.models.pdfa.enumerate_posterior` (:func:`posterior_two_states`: ``mu_0``
against its Beta density; :func:`posterior_three_states`: ``mu`` on the 2-simplex by
stick-breaking, once per distinct in-degree count ``v``, :func:`mu_moment_three`),
chi-square per toy, fails when a toy's ``p < alpha / 2`` (one draw per chain, so the draws
are independent; the test assumes 50 steps reach the stationary law).

**gibbs-chain-hyper** (:func:`gibbs_chain_hyper_check`). The same with ``--hyperpriors``
(``run_gibbs(..., hyperpriors=True)``: ``alpha``, ``beta``, ``gamma ~ Gamma(1, 1)`` sampled by
NUTS with ``mu``), 500 chains of 200 steps on the 2-state toy, against the exact
``p(delta | data)`` with ``alpha``, ``beta``, ``gamma`` and ``mu`` integrated out
(:func:`posterior_two_states_hyper`: the prior part ``p(delta | alpha, gamma)`` and the
likelihood part ``p(data | delta, beta)`` factorise, so ``p(delta, data)`` is the product of a
double integral over ``(alpha, gamma)`` per ``v``, :func:`hyper_prior_two`, and a single
integral over ``beta`` per table, :func:`hyper_likelihood`); fails when ``p < alpha``.

Cost at validate's setting (CPU seconds on the shared 2-core machine under ``nice -n 19``,
the first run in a process, JAX's compilation included: about 7 s of each row, 14 s of the
hyper one): ``gibbs-chain``'s 3-state row 14-20 s (2000 chains), its 2-state row 8-9 s,
``gibbs-chain-hyper`` 22-27 s at 1000 chains of 50 steps (3 s of it the reference; 500
chains of 200 steps sample twice as much). Power at :data:`FIXED`, for an ideal chain
(multinomial draws from the alternative's exact law, chi-square as here, 1000 repetitions;
``benchmarks/oracle_pdfa_power.py``, ``benchmarks/results/oracle_pdfa_distinct/``): the 3-state
row rejects the posterior with two hyperparameters swapped, or all three 1, with probability
1.0 (the 2-state row too); with ``alpha``, ``beta`` or ``gamma`` 1.5 times its value with
probability 0.91, 0.58, 0.41, twice its value 1.0, 1.0, 0.99. (At ``gamma = 1.6``, the
predictive check's value, the 3-state row rejects ``alpha`` and ``gamma`` swapped with
probability 0.068 only, the 2-state row 0.013: hence 3.) ``gibbs-chain-hyper`` rejects the
fixed-hyperparameter posterior (hyperpriors ignored) at ``alpha = beta = gamma = 1`` with
probability 1.0 at 1000 chains and 0.98 at 500 (measured before :data:`FIXED` changed), at
:data:`FIXED` with probability 1.0 at 500 and at 1000 (total variation 0.30).

Mutants (:data:`bayesfa.models.pdfa.MODEL_VARIANTS`): one wrong term of the model's potential,
``no-mu`` (``phi_j ~ Dir(alpha / |Q|)``: the shared ``mu`` forgotten) and ``end-mass``
(``pi_q ~ Dir(beta / L)``: the end symbol forgotten), validated as ``oracle-pdfa:mutant-V``.
Measured on seeds 0-4 at validate's setting and :data:`FIXED` (``alpha = 1.3``, ``beta = 0.7``,
``gamma = 3``; ``benchmarks/results/oracle_pdfa_distinct/README.md``), each mutant fails every
chain row on every seed: ``gibbs-chain`` 3-state row z 38.8-51.8 (no-mu), 29.4-36.1
(end-mass), chi-square / its critical value (the margin) at least 4.59 and 3.63; 2-state row z
24.8-33.7, 29.7-41.6, margins at least 3.82, 4.5. The correct oracle passes on seeds 0-4:
3-state row z -0.15 to 2.69, 2-state row z -0.63 to 1.58. (At ``alpha = beta = gamma = 1``,
before issue 39 item 2, the mutants' 3-state row z were 160-184 and 53-65, 2-state 100-122
and 27-38; ``gibbs-chain-hyper`` (1000 chains of 50 steps) z 149-169, 30-33, and at the
setting of ``validate`` (500 of 200) each mutant fails on seeds 0-4 too
(``tests/test_oracle_gibbs.py::test_gibbs_chain_hyper_on_five_seeds``); the correct oracle's
3-state row z -1.9 to 0.5, and z 0.4 with 8000 chains, seed 7, so 50 steps reached the
stationary law on 729 tables to that resolution; ``gibbs-chain-hyper`` at
validate's setting on each of seeds 0-4, the same test.) 50 steps are *not* enough for the
hyperparameters (``gamma`` near 0 pushes ``mu`` to a vertex, a funnel for NUTS): with 50
steps the correct oracle gave p = 0.0056 (1000 chains, seed 4), 0.005 (4000, seed 7) and
0.0026 (4000, seed 8), and with 200 steps p = 0.167 (4000, seed 8); hence 200.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats as sps
from scipy.special import gammaln

from bayesfa.corpus import Corpus
from bayesfa.validation.checks import Check

ALPHA = 1e-3

#: The oracle's hyperparameters in the Gibbs checks: distinct (issue 39 item 2), none 1, so that
#: a sampler that swaps alpha, beta or gamma has a different law. ``alpha`` and ``beta`` those
#: of the predictive check (:attr:`OraclePDFASpec.validation_budget`), ``gamma`` not: at its
#: 1.6, so near ``alpha = 1.3``, gibbs-chain's 3-state row rejects the posterior with alpha
#: and gamma swapped with probability 0.07 only (1.0 at gamma = 3; module docstring).
FIXED = {"alpha": 1.3, "beta": 0.7, "gamma": 3.0}

#: The toy of 2 states besides the one of the harness: ``(strings, n_states)``; letters 0/1.
SMALL_TOY = ([[0, 1], [0], [1, 1], [], [0, 0, 1]], 1)

#: gibbs-sweep's starts per toy (the 2-state toy: all its 16 tables; the harness toy: 8 of
#: its tables) and one-sweep draws per start (``validate``; the fast test uses 2000 draws).
DRAWS = {"starts_small": 16, "starts_large": 8, "draws": 20_000}


# -- the exact reference, from the model's definition ------------------------------------------

def _tables(n_q: int, n_letters: int) -> np.ndarray:
    """Every table ``[T, Q, L]``, index = base-``Q`` digits of the raveled table."""
    return np.array(list(itertools.product(range(n_q), repeat=n_q * n_letters)),
                    dtype=np.int64).reshape(-1, n_q, n_letters)


def _index(delta: np.ndarray, n_q: int) -> np.ndarray:
    """Table index ``[...]`` of tables ``[..., Q, L]`` (inverse of :func:`_tables`)."""
    flat = np.asarray(delta, dtype=np.int64).reshape(delta.shape[:-2] + (-1,))
    return flat @ (n_q ** np.arange(flat.shape[-1])[::-1])


def _emissions(delta: np.ndarray, strings: list[list[int]], n_letters: int) -> np.ndarray:
    """Emission counts ``[Q, L+1]`` (symbol 0 = end) of the strings along ``delta``'s paths."""
    c = np.zeros((delta.shape[0], n_letters + 1))
    for s in strings:
        q = 0
        for a in s:
            c[q, a + 1] += 1
            q = delta[q, a]
        c[q, 0] += 1
    return c


def log_target(delta: np.ndarray, mu: np.ndarray, strings: list[list[int]], n_letters: int,
               alpha: float, beta: float) -> float:
    """``log pi(delta | mu, data)`` up to a constant (module docstring)."""
    n_q = delta.shape[0]
    v = (delta[None, :, :] == np.arange(n_q)[:, None, None]).sum(1)       # [Q, L]
    am = alpha * np.asarray(mu)[:, None]
    prior = float((gammaln(am + v) - gammaln(am)).sum())
    c = _emissions(delta, strings, n_letters)
    k = n_letters + 1
    lik = float((gammaln(beta) - gammaln(beta + c.sum(1))
                 + (gammaln(c + beta / k) - gammaln(beta / k)).sum(1)).sum())
    return prior + lik


def entry_kernels(log_pi: np.ndarray, n_q: int, n_entries: int) -> np.ndarray:
    """Liu's modified-Gibbs kernel of each entry ``[m, T, T]`` for the target ``log_pi`` ``[T]``
    (tables indexed as :func:`_tables`; entry ``e`` is digit ``e`` of the raveled table)."""
    n = log_pi.size
    kernels = np.zeros((n_entries, n, n))
    idx = np.arange(n)
    for e in range(n_entries):
        place = n_q ** (n_entries - 1 - e)
        digit = (idx // place) % n_q
        base = idx - digit * place
        for x in range(n):
            nbrs = base[x] + np.arange(n_q) * place                      # [Q] tables
            lp = log_pi[nbrs]
            p = np.exp(lp - lp.max())
            p /= p.sum()
            c = digit[x]
            for v in range(n_q):
                if v != c:
                    kernels[e, x, nbrs[v]] = p[v] / (1 - p[c]) * min(1.0, (1 - p[c]) / (1 - p[v]))
            kernels[e, x, x] = max(0.0, 1.0 - kernels[e, x].sum())      # diagonal still 0
    return kernels


def sweep_law(start: int, kernels: np.ndarray) -> np.ndarray:
    """Law ``[T]`` of the table after one sweep over every entry in a uniform random order."""
    from scipy import sparse

    m, n = kernels.shape[0], kernels.shape[1]
    kernels = [sparse.csr_matrix(k).T.tocsr() for k in kernels]      # K_e^T: law -> law
    a = {0: np.eye(n)[start]}
    for size in range(1, m + 1):
        for subset in itertools.combinations(range(m), size):
            mask = sum(1 << e for e in subset)
            a[mask] = sum(kernels[e] @ a[mask ^ (1 << e)] for e in subset) / size
    return a[(1 << m) - 1]


def chi_square(observed: np.ndarray, expected: np.ndarray, min_expected: float = 5.0):
    """``(statistic, df)`` of Pearson's test, the cells of expected count below
    ``min_expected`` pooled into one cell, to which the smallest other cells are added while
    its expected count is still below ``min_expected``."""
    order = np.argsort(expected, kind="stable")
    e, o = expected[order], observed[order]
    n_pool = int((e < min_expected).sum())
    while 0 < n_pool < e.size and e[:n_pool].sum() < min_expected:
        n_pool += 1
    exp = np.concatenate([[e[:n_pool].sum()], e[n_pool:]]) if n_pool else e
    obs = np.concatenate([[o[:n_pool].sum()], o[n_pool:]]) if n_pool else o
    exp, obs = exp.astype(np.float64), obs.astype(np.float64)
    return float(((obs - exp) ** 2 / exp).sum()), int(exp.size - 1)


# -- the code under test: one sweep of the production kernel's discrete block ------------------

def sweep_draws(strings: list[list[int]], n_states: int, n_letters: int, starts: np.ndarray,
                mus: np.ndarray, n_draws: int, seed: int, *, alpha: float, beta: float,
                gamma: float, variant: str = "") -> np.ndarray:
    """Tables ``[S, n_draws, Q, L]`` after one sweep of the discrete (Gibbs) block of the
    production ``DiscreteHMCGibbs`` (:func:`bayesfa.models.pfa.run_mcmc`'s kernel) from each
    start ``delta`` ``starts[s]`` given ``mu = mus[s]``, with independent keys."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer.gibbs import with_conditioning

    from bayesfa.models.pdfa import pdfa_model
    from bayesfa.models.pfa import _kernel, unique_padded

    letters, lengths, weights = unique_padded(Corpus.from_strings(strings, n_letters))
    kwargs = dict(letters=letters, lengths=lengths, weights=weights, n_states=n_states,
                  n_letters=n_letters, alpha=float(alpha), beta=float(beta), gamma=float(gamma),
                  hyperpriors=False, variant=variant)
    gibbs = _kernel(pdfa_model, "discrete-hmc-gibbs", 0.9)
    discrete = [k for k in gibbs._kernels if type(k).__name__ == "DiscreteGibbs"]
    assert len(discrete) == 1, "the production kernel has no single DiscreteGibbs block"
    block = discrete[0]
    key = jax.random.key(seed)
    key, k_init = jax.random.split(key)
    init = block.init(k_init, 0, {"delta": jnp.asarray(starts[0], dtype=jnp.int32)}, (),
                      with_conditioning(kwargs, {"mu": jnp.asarray(mus[0])}))
    dtype = init.z["delta"].dtype

    def one(k, start, mu):
        cond = with_conditioning(kwargs, {"mu": mu})
        z = {"delta": start}
        pe = block.get_potential_fn((), cond)(z)
        state = init._replace(z=z, potential_energy=pe, rng_key=k)
        return block.sample(state, (), cond).z["delta"]

    draw = jax.jit(jax.vmap(one, in_axes=(0, None, None)))
    out = np.empty((len(starts), n_draws) + starts.shape[1:], dtype=np.int64)
    for s, (start, mu) in enumerate(zip(starts, mus)):
        key, k_draws = jax.random.split(key)
        out[s] = np.asarray(draw(jax.random.split(k_draws, n_draws),
                                 jnp.asarray(start, dtype=dtype), jnp.asarray(mu)))
    return out


# -- the check ------------------------------------------------------------------------------------

def gibbs_sweep_check(toy=None, *, seed: int = 0, alpha: float = ALPHA, variant: str = "",
                      n_draws: int | None = None, starts_small: int | None = None,
                      starts_large: int | None = None) -> Check:
    """The ``gibbs-sweep`` check (module docstring) on :data:`SMALL_TOY` (2 states) and on
    ``toy`` (the harness toy, if its tables number at most 729)."""
    n_draws = DRAWS["draws"] if n_draws is None else n_draws
    toys = [("small (|Q|=2)", [list(s) for s in SMALL_TOY[0]], SMALL_TOY[1], 2,
             DRAWS["starts_small"] if starts_small is None else starts_small)]
    notes = []
    if toy is not None:
        n_letters = toy.train.alphabet_size
        n_q = toy.n_states + 1
        if n_q ** (n_q * n_letters) <= 729:
            toys.append((f"{toy.name} (|Q|={n_q})",
                         [list(toy.train.string(i)) for i in range(toy.train.n_strings)],
                         toy.n_states, n_letters,
                         DRAWS["starts_large"] if starts_large is None else starts_large))
        else:
            notes.append(f"toy {toy.name}: {n_q ** (n_q * n_letters)} tables, too many; "
                         "only the small toy is checked")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 21]))
    rows = []
    crit = alpha / len(toys)
    for t, (label, strings, n_states, n_letters, n_starts) in enumerate(toys):
        n_q = n_states + 1
        tables = _tables(n_q, n_letters)
        picks = rng.choice(len(tables), size=min(n_starts, len(tables)), replace=False)
        mus = rng.dirichlet(np.ones(n_q), size=len(picks))
        draws = sweep_draws(strings, n_states, n_letters, tables[picks], mus, n_draws,
                            seed * 1000 + t, variant=variant, **FIXED)
        stat, df = 0.0, 0
        for s, (start, mu) in enumerate(zip(picks, mus)):
            log_pi = np.array([log_target(d, mu, strings, n_letters, FIXED["alpha"],
                                          FIXED["beta"]) for d in tables])
            law = sweep_law(int(start), entry_kernels(log_pi, n_q, n_q * n_letters))
            observed = np.bincount(_index(draws[s], n_q), minlength=len(tables))
            x, d = chi_square(observed, n_draws * law)
            stat += x
            df += d
        p = float(sps.chi2.sf(stat, df))
        rows.append({"toy": label, "tables": len(tables), "starts": len(picks),
                     "draws": n_draws, "chi2": stat, "df": df, "z": (stat - df) / np.sqrt(2 * df),
                     "p": p, "pass": p >= crit})
    return Check(name="gibbs-sweep", passed=all(r["pass"] for r in rows),
                 description=("one DiscreteHMCGibbs sweep of delta given mu vs its exact law "
                              "(modified Gibbs, random order), chi-square per toy"),
                 alpha=alpha, columns=["toy", "tables", "starts", "draws", "chi2", "df", "z",
                                       "p", "pass"],
                 rows=rows, summary={"p_threshold": crit}, notes=notes)


def posterior_two_states(strings: list[list[int]], n_letters: int, alpha: float, beta: float,
                         gamma: float) -> np.ndarray:
    """Exact ``p(delta | data)`` ``[T]`` for ``|Q| = 2`` (tables as :func:`_tables`), ``mu``
    integrated out by adaptive quadrature of ``mu_0`` against ``Beta(gamma/2, gamma/2)``
    (scipy's algebraic endpoint weight; the Polya factor written as rising factorials,
    ``prod_i prod_{k < v_ij} (alpha mu_i + k)``, a polynomial in ``mu_0``)."""
    from scipy import integrate
    from scipy.special import betaln

    tables = _tables(2, n_letters)
    g = gamma / 2
    log_p = np.empty(len(tables))
    for t, d in enumerate(tables):
        v = (d[None, :, :] == np.arange(2)[:, None, None]).sum(1)          # [Q, L]

        def polya(m0, v=v):
            mu = (m0, 1.0 - m0)
            return float(np.prod([alpha * mu[i] + k for i in range(2)
                                  for j in range(n_letters) for k in range(v[i, j])]))

        val, _ = integrate.quad(polya, 0.0, 1.0, weight="alg", wvar=(g - 1, g - 1),
                                epsabs=0.0, epsrel=1e-12, limit=200)
        log_prior = np.log(val) - betaln(g, g)
        c = _emissions(d, strings, n_letters)
        k = n_letters + 1
        log_p[t] = log_prior + float((gammaln(beta) - gammaln(beta + c.sum(1))
                                      + (gammaln(c + beta / k) - gammaln(beta / k)).sum(1)).sum())
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def _log_emission_marginal(c: np.ndarray, beta: float) -> float:
    """``log prod_q int prod_a pi_qa^c_qa Dir(pi_q; beta/|Sigma'|) dpi_q`` (Eq. x:end) of the
    emission counts ``c`` ``[Q, L+1]`` (``|Sigma'| = L + 1``, end symbol included): the
    Dirichlet-multinomial, written out."""
    k = c.shape[1]
    return float((gammaln(beta) - gammaln(beta + c.sum(1))
                  + (gammaln(c + beta / k) - gammaln(beta / k)).sum(1)).sum())


def _column_patterns(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(patterns [U, Q, L], inverse [T])``: the distinct in-degree counts
    ``v[i, j] = #{i': delta[i', j] = i}`` of the tables ``[T, Q, L]`` (the prior of ``delta``
    depends on ``delta`` only through ``v``, Eq. delta:end) and each table's pattern."""
    n_t, n_q, n_letters = tables.shape
    v = (tables[:, None, :, :] == np.arange(n_q)[None, :, None, None]).sum(2)   # [T, Q, L]
    patterns, inverse = np.unique(v.reshape(n_t, -1), axis=0, return_inverse=True)
    return patterns.reshape(-1, n_q, n_letters), inverse.ravel()


def _rising(v: np.ndarray) -> list[tuple[int, int]]:
    """The factors ``(i, k)`` of the Polya numerator ``prod_ij prod_{k < v_ij} (alpha mu_i + k)``
    (Eq. delta:end), one per unit of ``v`` ``[Q, L]``."""
    return [(i, k) for i in range(v.shape[0]) for j in range(v.shape[1])
            for k in range(int(v[i, j]))]


def mu_moment_three(v: np.ndarray, alpha: float, gamma: float) -> float:
    """``E_mu[prod_i prod_j prod_{k < v_ij} (alpha mu_i + k)]`` for ``v`` ``[3, L]`` and
    ``mu ~ Dir(a, a, a)``, ``a = gamma/3`` (gen:mu), by two nested adaptive quadratures on the
    2-simplex.

    ``mu`` is written by stick-breaking ``mu = (s, (1-s) t, (1-s)(1-t))`` with independent
    ``s ~ Beta(a, 2a)`` and ``t ~ Beta(a, a)`` (the Dirichlet's aggregation property), so that
    each integral has an algebraic endpoint weight ``x^(p-1) (1-x)^(q-1)`` (scipy's
    ``weight="alg"``, QAWS, which integrates the singular Beta densities of ``a < 1``) and a
    polynomial integrand."""
    from scipy import integrate
    from scipy.special import betaln

    a = gamma / 3
    factors = _rising(v)
    opts = dict(epsabs=0.0, epsrel=1e-11, limit=200)

    def f(t, s):
        mu = (s, (1.0 - s) * t, (1.0 - s) * (1.0 - t))
        out = 1.0
        for i, k in factors:
            out *= alpha * mu[i] + k
        return out

    def inner(s):
        return integrate.quad(f, 0.0, 1.0, args=(s,), weight="alg", wvar=(a - 1, a - 1),
                              **opts)[0]

    val = integrate.quad(inner, 0.0, 1.0, weight="alg", wvar=(a - 1, 2 * a - 1), **opts)[0]
    return float(val * np.exp(-betaln(a, 2 * a) - betaln(a, a)))


def posterior_three_states(strings: list[list[int]], n_letters: int, alpha: float, beta: float,
                           gamma: float) -> np.ndarray:
    """Exact ``p(delta | data)`` ``[T]`` for ``|Q| = 3`` (tables as :func:`_tables`), ``mu``
    integrated out by quadrature on the 2-simplex (:func:`mu_moment_three`).

    The prior of ``delta`` given ``mu`` is the Polya urn of Eq. delta:end (``phi_j`` integrated
    out), ``prod_j [Gamma(alpha)/Gamma(alpha+3)] prod_i prod_{k < v_ij} (alpha mu_i + k)``, whose
    first factor is a constant here; it depends on ``delta`` only through the in-degree counts
    ``v``, so ``mu`` is integrated once per distinct ``v`` (100 of 729 tables for ``L = 2``).
    The likelihood is the Dirichlet-multinomial of the emission counts (Eq. x:end, end symbol
    included). Nothing of :mod:`bayesfa.models.pdfa` is called."""
    tables = _tables(3, n_letters)
    patterns, inverse = _column_patterns(tables)
    log_prior = np.log([mu_moment_three(v, alpha, gamma) for v in patterns])
    log_lik = np.array([_log_emission_marginal(_emissions(d, strings, n_letters), beta)
                        for d in tables])
    log_p = log_prior[inverse] + log_lik
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


#: Relative tolerance of each adaptive quadrature of :func:`hyper_prior_two` and
#: :func:`hyper_likelihood`.
HYPER_EPSREL = 1e-10


def hyper_prior_two(v: np.ndarray) -> float:
    """``P(v) = p(delta)`` of a table with in-degree counts ``v`` ``[2, L]`` under
    ``alpha, gamma ~ Gamma(1, 1)`` (Sect. 3.2), ``mu`` and ``phi`` integrated out:

    ``P(v) = int int e^(-alpha - gamma) E_mu[prod_j Polya_j(alpha, mu)] dalpha dgamma``, the
    Polya urn of column ``j`` (Eq. delta:end, ``phi_j ~ Dir(alpha mu)`` integrated out)
    ``Polya_j = prod_i prod_{k < v_ij} (alpha mu_i + k) / prod_{k < 2} (alpha + k)`` and
    ``mu_0 ~ Beta(gamma/2, gamma/2)`` (gen:mu, ``Dir(gamma/|Q|)``). The expectation over
    ``mu_0`` of that polynomial of degree ``<= 2L`` is exact by Gauss-Jacobi with ``L + 1``
    nodes (scipy's ``roots_jacobi``); ``alpha`` and ``gamma`` by nested adaptive quadrature on
    ``[0, inf)`` (scipy's ``quad``)."""
    from scipy import integrate
    from scipy.special import roots_jacobi

    n_q, n_letters = v.shape
    factors = _rising(v)
    opts = dict(epsabs=0.0, epsrel=HYPER_EPSREL, limit=200)

    def over_alpha(alpha, m0, w):
        mu = (m0, 1.0 - m0)
        num = np.ones_like(m0)
        for i, k in factors:
            num = num * (alpha * mu[i] + k)
        den = np.prod([alpha + k for k in range(n_q)]) ** n_letters
        return np.exp(-alpha) * float(w @ num) / den

    def over_gamma(gamma):
        x, w = roots_jacobi(n_letters + 1, gamma / 2 - 1, gamma / 2 - 1)
        m0, w = (1.0 + x) / 2, w / w.sum()          # nodes of mu_0, Beta(g, g) weights
        return np.exp(-gamma) * integrate.quad(over_alpha, 0.0, np.inf, args=(m0, w),
                                               **opts)[0]

    return float(integrate.quad(over_gamma, 0.0, np.inf, **opts)[0])


def hyper_likelihood(c: np.ndarray) -> float:
    """``Lk(c) = p(data | delta)`` of the emission counts ``c`` ``[Q, L+1]`` under
    ``beta ~ Gamma(1, 1)``: ``int e^(-beta) prod_q DirMult(c_q; beta/|Sigma'|) dbeta``
    (Eq. x:end), by adaptive quadrature on ``[0, inf)``."""
    from scipy import integrate

    return float(integrate.quad(lambda b: np.exp(-b + _log_emission_marginal(c, b)),
                                0.0, np.inf, epsabs=0.0, epsrel=HYPER_EPSREL, limit=200)[0])


def posterior_two_states_hyper(strings: list[list[int]], n_letters: int) -> np.ndarray:
    """Exact ``p(delta | data)`` ``[T]`` for ``|Q| = 2`` under the hyperpriors
    ``alpha, beta, gamma ~ Gamma(1, 1)`` (Sect. 3.2; ``run_gibbs(..., hyperpriors=True)``),
    with ``alpha``, ``beta``, ``gamma``, ``mu`` (and ``phi``, ``pi``) integrated out.

    The joint factorises as ``p(delta | alpha, gamma) p(data | delta, beta)``, so
    ``p(delta, data) = P(v(delta)) Lk(c(delta))``: :func:`hyper_prior_two` once per distinct
    in-degree count ``v`` (9 of 16 tables for ``L = 2``), :func:`hyper_likelihood` per
    table. Nothing of :mod:`bayesfa.models.pdfa` is called."""
    tables = _tables(2, n_letters)
    patterns, inverse = _column_patterns(tables)
    log_prior = np.log([hyper_prior_two(v) for v in patterns])
    log_lik = np.log([hyper_likelihood(_emissions(d, strings, n_letters)) for d in tables])
    log_p = log_prior[inverse] + log_lik
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


#: The 3-state toy of ``gibbs-chain``: ``(strings, n_states)``; letters 0/1, ``3^6 = 729``
#: tables, the posterior's largest table 0.11 at :data:`FIXED` (0.22 at ``alpha = beta = gamma
#: = 1``).
THREE_TOY = ([[0, 1], [1], [0, 0], [], [1, 0, 1]], 2)

#: Independent chains of the full oracle (DiscreteHMCGibbs + NUTS on ``mu``) and the steps of
#: each (warm-up, then one kept draw): ``gibbs-chain`` on the 2-state toy (``chains``) and on
#: the 3-state toy (``chains_three``), ``gibbs-chain-hyper`` (``chains_hyper``, ``warmup_hyper``).
CHAINS = {"chains": 1000, "warmup": 49, "chains_three": 2000, "chains_hyper": 500,
          "warmup_hyper": 199}


def _chain_row(label: str, strings: list[list[int]], n_states: int, law: np.ndarray, *,
               chains: int, warmup: int, seed: int, variant: str, hyperpriors: bool,
               crit: float) -> dict:
    """One row of a chain check: the last table of each of ``chains`` independent runs of
    :func:`bayesfa.models.pdfa.run_gibbs` (``warmup`` steps, then one draw) on ``strings``
    (letters 0/1) against ``law`` ``[T]`` by :func:`chi_square`; passes when ``p >= crit``."""
    from bayesfa.models.pdfa import run_gibbs

    samples, _ = run_gibbs(Corpus.from_strings(strings, 2), n_states, seed=seed,
                           num_warmup=warmup, num_samples=1, num_chains=chains,
                           variant=variant, hyperpriors=hyperpriors, **FIXED)
    last = np.asarray(samples["delta"])[:, -1]                              # [C, Q, L]
    observed = np.bincount(_index(last, n_states + 1), minlength=law.size)
    stat, df = chi_square(observed, chains * law)
    p = float(sps.chi2.sf(stat, df))
    return {"toy": label, "tables": law.size, "chains": chains, "steps": warmup + 1,
            "chi2": stat, "df": df, "z": (stat - df) / np.sqrt(2 * df), "p": p,
            "pass": p >= crit}


def gibbs_chain_check(*, seed: int = 0, alpha: float = ALPHA, variant: str = "",
                      chains: int | None = None, warmup: int | None = None,
                      chains_three: int | None = None,
                      toys: tuple[str, ...] = ("small", "three")) -> Check:
    """``gibbs-chain``: the last table of each of ``chains`` (:data:`SMALL_TOY`) and
    ``chains_three`` (:data:`THREE_TOY`) independent runs of the oracle's sampler
    (:func:`bayesfa.models.pdfa.run_gibbs`, ``warmup`` steps then one draw) against the exact
    posterior (:func:`posterior_two_states`, :func:`posterior_three_states`), by a chi-square
    test per toy (:func:`chi_square`). The draws are independent (one per chain); the test
    assumes ``warmup`` steps reach the stationary law (each step a full sweep plus NUTS on
    ``mu``). Fails when a toy's ``p < alpha / len(toys)`` (at most ``alpha`` for a correct
    sampler, up to the chi-square approximation)."""
    chains = CHAINS["chains"] if chains is None else chains
    chains_three = CHAINS["chains_three"] if chains_three is None else chains_three
    warmup = CHAINS["warmup"] if warmup is None else warmup
    crit = alpha / len(toys)
    rows = []
    for name in toys:
        if name == "small":
            strings, n_states = [list(s) for s in SMALL_TOY[0]], SMALL_TOY[1]
            law = posterior_two_states(strings, 2, **FIXED)
            rows.append(_chain_row("small (|Q|=2)", strings, n_states, law, chains=chains,
                                   warmup=warmup, seed=seed, variant=variant,
                                   hyperpriors=False, crit=crit))
        elif name == "three":
            strings, n_states = [list(s) for s in THREE_TOY[0]], THREE_TOY[1]
            law = posterior_three_states(strings, 2, **FIXED)
            rows.append(_chain_row("three (|Q|=3)", strings, n_states, law,
                                   chains=chains_three, warmup=warmup, seed=seed * 1000 + 1,
                                   variant=variant, hyperpriors=False, crit=crit))
        else:
            raise ValueError(f"unknown toy {name!r} (small, three)")
    return Check(name="gibbs-chain", passed=all(r["pass"] for r in rows),
                 description=("last table of independent DiscreteHMCGibbs chains vs the exact "
                              "posterior p(delta | data) (mu integrated out), chi-square per toy"),
                 alpha=alpha, columns=list(rows[0]), rows=rows,
                 summary={"max_z": max(float(r["z"]) for r in rows), "p_threshold": crit})


def gibbs_chain_hyper_check(*, seed: int = 0, alpha: float = ALPHA, variant: str = "",
                            chains: int | None = None, warmup: int | None = None) -> Check:
    """``gibbs-chain-hyper``: as :func:`gibbs_chain_check` on :data:`SMALL_TOY` with the
    hyperpriors (``run_gibbs(..., hyperpriors=True)``: ``alpha``, ``beta``, ``gamma`` sampled by
    NUTS with ``mu``) against :func:`posterior_two_states_hyper`; fails when ``p < alpha``."""
    chains = CHAINS["chains_hyper"] if chains is None else chains
    warmup = CHAINS["warmup_hyper"] if warmup is None else warmup
    strings, n_states = [list(s) for s in SMALL_TOY[0]], SMALL_TOY[1]
    law = posterior_two_states_hyper(strings, 2)
    row = _chain_row("small (|Q|=2)", strings, n_states, law, chains=chains, warmup=warmup,
                     seed=seed * 1000 + 2, variant=variant, hyperpriors=True, crit=alpha)
    return Check(name="gibbs-chain-hyper", passed=row["pass"],
                 description=("last table of independent DiscreteHMCGibbs chains with the "
                              "Gamma(1, 1) hyperpriors vs the exact p(delta | data) (alpha, "
                              "beta, gamma, mu integrated out), chi-square"),
                 alpha=alpha, columns=list(row), rows=[row],
                 summary={"z": float(row["z"]), "p_threshold": alpha})


# -- the spec --------------------------------------------------------------------------------------

class OraclePDFASpec:
    """Validation spec of ``oracle-pdfa`` (module docstring); ``variant`` a model mutant."""

    #: the harness's budget of oracle-pdfa (MCMC, not the enumeration it does on toys by
    #: default; alpha = 1.3, beta = 0.7, gamma = 1.6), here too so that a mutant (named
    #: ``oracle-pdfa:mutant-V``) gets it as well
    validation_budget = {"iterations": 1_500, "burn_in": 500, "period": 1, "chains": 4,
                         "pdfa_inference": "mcmc", "alpha": 1.3, "beta": 0.7, "gamma": 1.6}

    def __init__(self, variant: str = ""):
        self.variant = variant

    def check_names(self) -> list[str]:
        return ["predictive", "recorded", "gibbs-sweep", "gibbs-chain", "gibbs-chain-hyper"]

    def recompute_trace(self, arrays, trace, options, train):
        """The ``recorded`` check's recomputations: the discrete block's potential energy from
        each draw's ``delta`` and ``mu`` (:func:`recompute_pdfa`;
        a model mutant records its own wrong potential, so it fails there too)."""
        return recompute_pdfa(arrays, trace, options, train)

    def mutant_names(self) -> list[str]:
        from bayesfa.models.pdfa import MODEL_VARIANTS

        return list(MODEL_VARIANTS)

    def mutant(self, variant: str):
        from bayesfa.methods import get_method
        from bayesfa.validation.harness import carry_spec

        method = type(get_method("oracle-pdfa"))()
        method.variant = variant
        return carry_spec(method, OraclePDFASpec(variant), f"oracle-pdfa:mutant-{variant}")

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA) -> list[Check]:
        return [gibbs_sweep_check(toy, seed=seed, alpha=alpha, variant=self.variant),
                gibbs_chain_check(seed=seed, alpha=alpha, variant=self.variant),
                gibbs_chain_hyper_check(seed=seed, alpha=alpha, variant=self.variant)]


ORACLE_PDFA = OraclePDFASpec()


# -- the recorded check (issue 39): the discrete block's potential energy recomputed --------

def pdfa_potential_energy(delta: np.ndarray, mu: np.ndarray, corpus: Corpus, alpha, beta,
                          gamma, n_letters: int | None = None) -> np.ndarray:
    """The discrete block's potential energy ``[S]`` of ``oracle-pdfa`` at tables ``delta``
    ``[S, Q, L]`` and ``mu`` ``[S, Q]`` (``alpha``, ``beta``, ``gamma`` scalars, or ``[S]``
    draws under ``--hyperpriors``, whose Gamma(1, 1) log densities are then added)."""
    from bayesfa.validation.oracles import distinct_strings, log_dirichlet

    delta = np.asarray(delta, dtype=np.int64)
    mu = np.asarray(mu, dtype=np.float64)
    n_draws, n_q, n_l = delta.shape
    n_l = n_l if n_letters is None else n_letters
    hyper = np.ndim(alpha) > 0
    a, b, g = (np.broadcast_to(np.asarray(h, dtype=np.float64), (n_draws,))
               for h in (alpha, beta, gamma))
    strings = [list(s) for s, m in distinct_strings(corpus) for _ in range(m)]
    out = np.empty(n_draws)
    for s in range(n_draws):
        log_p = (float(log_dirichlet(mu[s], g[s] / n_q))                       # gen:mu
                 + n_l * (gammaln(a[s]) - gammaln(a[s] + n_q))                  # Pólya urns
                 + log_target(delta[s], mu[s], strings, n_l, a[s], b[s]))       # ... and data
        if hyper:
            log_p -= a[s] + b[s] + g[s]                                          # Gamma(1, 1)
        out[s] = -log_p
    return out


def recompute_pdfa(arrays: dict, trace: dict, options: dict, train: Corpus):
    """``(recomputed, extra_rows)`` of ``oracle-pdfa``: MCMC fits, the discrete block's
    potential energy from each draw's ``delta`` and ``mu``; the NUTS block's statistics and the
    hyperparameters' draws by range. An enumeration fit records no trace (one row, says so)."""
    from bayesfa.validation.oracles import TOLERANCE, _chain_draw, _nuts_statistics
    from bayesfa.validation.recorded import NotRecomputable, Recomputed

    if not trace:
        return {}, [{"quantity": "trace", "draws": 0, "max_diff": None, "tolerance": None,
                     "pass": "delta" in arrays and "log_weight" in arrays,
                     "how": "an enumeration (--pdfa-inference enumerate): exact weights of "
                            "every table, no draws, no trace"}]
    pe = np.asarray(trace["potential_energy"], dtype=np.float64)
    shape = pe.shape
    out: dict = _nuts_statistics(trace, shape, "the NUTS block's (on mu): ")
    if "mu" not in arrays:
        out["potential_energy"] = NotRecomputable(
            pe, shape, -np.inf, np.inf, "a function of each draw's mu, which this fit did not "
            "keep (the oracle keeps it since issue 39)")
        return out, [{"quantity": "mu (the recorded state)", "draws": 0, "max_diff": None,
                      "tolerance": None, "pass": False, "how": "not recorded"}]
    hyper = bool(options.get("hyperpriors", False))
    if hyper:
        h = {k: np.asarray(trace[k], dtype=np.float64).reshape(-1) for k in ("alpha", "beta",
                                                                              "gamma")}
        for k in h:
            out[k] = NotRecomputable(
                np.asarray(trace[k], dtype=np.float64), shape, np.finfo(float).tiny, np.inf,
                f"the draw of {k} itself (Gamma(1, 1) hyperprior, sampled by NUTS with mu), "
                "part of the state the potential energy is recomputed from")
    else:
        h = {k: float(options[k]) for k in ("alpha", "beta", "gamma")}
    values = pdfa_potential_energy(arrays["delta"], arrays["mu"], train, h["alpha"], h["beta"],
                                   h["gamma"])
    out["potential_energy"] = Recomputed(
        _chain_draw(values, shape), pe, TOLERANCE,
        "the discrete block's -[log Dir(mu; gamma/|Q|) + Pólya urns of delta's columns given mu "
        "+ Dirichlet-multinomials of the emission counts along delta's paths"
        + (" + Gamma(1, 1) of alpha, beta, gamma" if hyper else "")
        + "], scipy from each draw's delta and mu (bayesfa.validation.pdia.oracle, "
          "its log_target)")
    return out, []
