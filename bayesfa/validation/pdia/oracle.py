"""Validation spec of ``oracle-pdfa``: an exact check of its Gibbs part (DiscreteHMCGibbs).

``oracle-pdfa --pdfa-inference mcmc`` runs numpyro's ``DiscreteHMCGibbs(NUTS(pdfa_model),
modified=True)`` (:func:`bayesfa.models.pdfa.run_gibbs`): each step is one sweep over the
``|Q| L`` entries of the transition table ``delta`` in a uniformly random order, each entry
updated by Liu's (1996) modified Gibbs move (propose a value ``v != c`` with probability
``p_v / (1 - p_c)`` under the entry's full conditional ``p``, accept with
``min(1, (1 - p_c) / (1 - p_v))``), given ``mu``; then NUTS on ``mu``. ``alpha``, ``beta``,
``gamma`` are fixed (the oracle's options; ``--hyperpriors`` is not checked here).

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
(:func:`bayesfa.models.pdfa.run_gibbs`: sweeps of ``delta`` and NUTS on ``mu``), on the
2-state toy: the last table of each of 1000 independent chains against the exact posterior
``p(delta | data)`` with ``mu`` integrated out (:func:`posterior_two_states`, quadrature written
here, not :func:`bayesfa.models.pdfa.enumerate_posterior`), chi-square, fails when ``p < alpha``
(one draw per chain, so the draws are independent; the test assumes 50 steps reach the
stationary law on 16 tables).

Mutants (:data:`bayesfa.models.pdfa.MODEL_VARIANTS`): one wrong term of the model's potential,
``no-mu`` (``phi_j ~ Dir(alpha / |Q|)``: the shared ``mu`` forgotten) and ``end-mass``
(``pi_q ~ Dir(beta / L)``: the end symbol forgotten), validated as ``oracle-pdfa:mutant-V``.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats as sps
from scipy.special import gammaln

from bayesfa.corpus import Corpus
from bayesfa.validation.checks import Check

ALPHA = 1e-3

#: The oracle's hyperparameters in the check (its CLI defaults).
FIXED = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0}

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


#: Independent chains of the full oracle (DiscreteHMCGibbs + NUTS on ``mu``) and the steps of
#: each (warm-up, then one kept draw) in ``gibbs-chain``.
CHAINS = {"chains": 1000, "warmup": 49}


def gibbs_chain_check(*, seed: int = 0, alpha: float = ALPHA, variant: str = "",
                      chains: int | None = None, warmup: int | None = None) -> Check:
    """``gibbs-chain``: the last table of each of ``chains`` independent runs of the oracle's
    sampler (:func:`bayesfa.models.pdfa.run_gibbs`, ``warmup`` steps then one draw) on
    :data:`SMALL_TOY` against the exact posterior :func:`posterior_two_states`, by a
    chi-square test (:func:`chi_square`). The draws are independent (one per
    chain); the test assumes ``warmup`` steps reach the stationary law (16 tables, each step a
    full sweep plus NUTS on ``mu``). Fails when ``p < alpha``."""
    from bayesfa.models.pdfa import run_gibbs

    chains = CHAINS["chains"] if chains is None else chains
    warmup = CHAINS["warmup"] if warmup is None else warmup
    strings = [list(s) for s in SMALL_TOY[0]]
    n_states, n_letters = SMALL_TOY[1], 2
    samples, _ = run_gibbs(Corpus.from_strings(strings, n_letters), n_states, seed=seed,
                           num_warmup=warmup, num_samples=1, num_chains=chains,
                           variant=variant, **FIXED)
    last = np.asarray(samples["delta"])[:, -1]                              # [C, Q, L]
    law = posterior_two_states(strings, n_letters, **FIXED)
    observed = np.bincount(_index(last, n_states + 1), minlength=law.size)
    stat, df = chi_square(observed, chains * law)
    p = float(sps.chi2.sf(stat, df))
    row = {"toy": "small (|Q|=2)", "tables": law.size, "chains": chains, "steps": warmup + 1,
           "chi2": stat, "df": df, "z": (stat - df) / np.sqrt(2 * df), "p": p, "pass": p >= alpha}
    return Check(name="gibbs-chain", passed=row["pass"],
                 description=("last table of independent DiscreteHMCGibbs chains vs the exact "
                              "posterior p(delta | data) (mu integrated out), chi-square"),
                 alpha=alpha, columns=list(row), rows=[row])


# -- the spec --------------------------------------------------------------------------------------

class OraclePDFASpec:
    """Validation spec of ``oracle-pdfa`` (module docstring); ``variant`` a model mutant."""

    #: the harness's budget of oracle-pdfa (MCMC, not the enumeration it does on toys by
    #: default), here too so that a mutant (named ``oracle-pdfa:mutant-V``) gets it as well
    validation_budget = {"iterations": 1_500, "burn_in": 500, "period": 1, "chains": 4,
                         "pdfa_inference": "mcmc"}

    def __init__(self, variant: str = ""):
        self.variant = variant

    def check_names(self) -> list[str]:
        return ["predictive", "gibbs-sweep", "gibbs-chain"]

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
                gibbs_chain_check(seed=seed, alpha=alpha, variant=self.variant)]


ORACLE_PDFA = OraclePDFASpec()

