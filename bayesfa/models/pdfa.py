"""Oracles of the finite PDFA prior of Pfau, Bartlett & Wood (2010), Sect. "A Prior over PDFAs".

States ``Q = {0..N}`` with ``q0 = 0`` initial, letters ``Sigma = {0..L-1}`` (``L = n_letters``):

- ``mu ~ Dir(gamma/|Q|, ..., gamma/|Q|)``                 (gen:mu)
- ``phi_j ~ Dir(alpha mu)`` for every letter ``j``          (gen:phi)
- ``delta[i, j] ~ phi_j``, i.e. a Polya urn per column ``j`` given ``mu``  (gen:delta)
- ``pi_i ~ Dir(beta/|Sigma'|, ...)`` over ``Sigma' = {end} + Sigma``  (gen:pi)

**String ends.** The PDIA emits one endless sequence; bayesfa scores whole strings, so the
alphabet gets an end symbol (symbol 0 of the PFA layout, letter ``a`` is symbol ``a + 1``)
whose transition is fixed to ``q0``: every string starts in ``q0``, emits letters from
``pi[q]`` and stops with probability ``pi[q, end]``. Only the ``|Q| x L`` letter columns of
``delta`` are random. In the PFA form of Sect. 2.1 (Shibata & Yoshinaka 2013) this is
``xi[i, 0, 0] = pi[i, end]`` and ``xi[i, a+1, delta[i, a]] = pi[i, a+1]`` (``q0`` may be
re-entered by a letter, which :func:`bayesfa.forward.xi_to_pfa` allows), so predictions are
``Pr(b)`` of whole strings, comparable with the PFA and HMM oracles.

Two oracles of the same posterior:

- :func:`enumerate_posterior`: every one of the ``|Q| ** (|Q| L)`` tables ``delta`` (729 for
  ``|Q| = 3, L = 2``), with ``pi`` integrated out (Dirichlet-multinomial of the emission counts
  of the deterministic path, Eq. x:end) and ``phi`` *and* ``mu`` integrated out exactly:
  given ``mu`` the prior of a column is a Polya urn (Eq. delta:end), a polynomial in ``mu``
  (rising factorials), whose expectation under ``Dir(gamma/|Q|)`` is a sum of Dirichlet moments.
- :func:`pdfa_model` + :func:`run_gibbs`: NumPyro's ``DiscreteHMCGibbs`` with ``delta``
  discrete (Metropolised Gibbs, one entry at a time) and ``mu`` continuous (NUTS); ``phi`` and ``pi`` are
  integrated out in the model (conjugate) and ``pi`` is drawn afterwards from its exact
  conditional ``Dir(beta/|Sigma'| + c(delta))``, so each draw is a full PDFA ``xi``.

**Hyperpriors** (the paper's Gamma(1, 1) on ``alpha``, ``beta``, ``gamma``, Sect. 3.2):
``pdfa_model(..., hyperpriors=True)`` samples them with ``mu`` by NUTS, and
:func:`exact_predictive_hyper` / :func:`enumerate_posterior_hyper` are the exact reference:
tables enumerated, each hyperparameter integrated by Gauss-Laguerre quadrature (the weight
``e^{-x}`` is the Exp(1) density), posterior means of the hyperparameters included.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.polynomial import polynomial as P
from scipy.special import gammaln, logsumexp

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln as jgammaln

from bayesfa.corpus import Corpus
from bayesfa.models.pfa import run_mcmc, unique_padded


# -- conversions --------------------------------------------------------------------------------

def xi_from_pdfa(delta: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``xi`` ``[..., Q, L+1, Q]`` from ``delta`` ``[..., Q, L]`` (int) and ``pi`` ``[..., Q, L+1]``
    (symbol 0 = end, which goes to ``q0 = 0``)."""
    delta = np.asarray(delta, dtype=np.int64)
    pi = np.asarray(pi, dtype=np.float64)
    n_q = delta.shape[-2]
    xi = np.zeros(pi.shape + (n_q,))
    xi[..., :, 0, 0] = pi[..., 0]
    np.put_along_axis(xi[..., :, 1:, :], delta[..., None], pi[..., 1:, None], axis=-1)
    return xi


# -- path counts ----------------------------------------------------------------------------------

def path_counts(deltas: np.ndarray, letters: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Emission counts of each string along the deterministic path of each table.

    deltas ``[K, Q, L]``; letters ``[n, max_len]`` (0-based, -1 padded); lengths ``[n]``.
    Returns ``[K, n, Q, L+1]``: ``c[k, s, q, a']`` symbols ``a'`` (0 = end) that string ``s``
    emits in state ``q`` under ``deltas[k]``.
    """
    deltas = np.asarray(deltas, dtype=np.int64)
    n_tables, n_q, n_letters = deltas.shape
    n = letters.shape[0]
    out = np.zeros((n_tables, n, n_q, n_letters + 1))
    state = np.zeros((n_tables, n), dtype=np.int64)
    k_idx = np.arange(n_tables)[:, None]
    s_idx = np.arange(n)[None, :]
    for t in range(letters.shape[1]):
        active = np.flatnonzero(lengths > t)
        if active.size == 0:
            break
        a = letters[active, t].astype(np.int64)
        st = state[:, active]
        out[k_idx, active[None, :], st, a[None, :] + 1] += 1
        state[:, active] = deltas[k_idx, st, a[None, :]]
    out[k_idx, s_idx, state, 0] += 1
    return out


def emission_counts(deltas: np.ndarray, corpus: Corpus) -> np.ndarray:
    """Total emission counts ``[K, Q, L+1]`` of ``corpus`` under each table ``deltas[k]``."""
    letters, lengths, weights = unique_padded(corpus)
    return np.einsum("ksqa,s->kqa", path_counts(deltas, letters, lengths), weights)


def log_emission_marginal(counts: np.ndarray, beta: float) -> np.ndarray:
    """``log int prod pi^c Dir(pi; beta/|Sigma'|) dpi`` summed over states (Eq. x:end).
    counts ``[..., Q, L+1]`` -> ``[...]``."""
    k = counts.shape[-1]
    conc = beta / k
    per_state = (gammaln(beta) - gammaln(beta + counts.sum(-1))
                 + (gammaln(counts + conc) - gammaln(conc)).sum(-1))
    return per_state.sum(-1)


# -- the prior of delta with phi and mu integrated out ---------------------------------------------

def column_counts(deltas: np.ndarray) -> np.ndarray:
    """``v[..., i, j] = #{i' : delta[i', j] = i}`` (Eq. delta:end), ``[..., Q, L]``."""
    deltas = np.asarray(deltas, dtype=np.int64)
    n_q = deltas.shape[-2]
    return (deltas[..., None, :, :] == np.arange(n_q)[:, None, None]).sum(-2)


def _log_prior_from_column_counts(v: np.ndarray, alpha: float, gamma: float) -> float:
    """``log E_mu[p(delta | mu, alpha)]`` for one ``v`` ``[Q, L]``, ``mu ~ Dir(gamma/Q)``.

    ``p(delta | mu) = prod_j Gamma(alpha)/Gamma(alpha+Q) prod_i (alpha mu_i)^(v_ij)`` with
    rising factorials ``x^(v) = x (x+1) .. (x+v-1)``. Expanding each state's factor as a
    polynomial ``sum_n c_i[n] mu_i^n`` gives
    ``E = sum_{n} prod_i c_i[n_i] E[prod_i mu_i^{n_i}]`` with the Dirichlet moments
    ``E[prod mu_i^{n_i}] = Gamma(gamma)/Gamma(gamma + |n|) prod Gamma(g + n_i)/Gamma(g)``,
    ``g = gamma/Q``. All terms are positive (no cancellation).
    """
    n_q, n_letters = v.shape
    g = gamma / n_q
    coefs = []
    for i in range(n_q):
        c = np.array([1.0])
        for vij in v[i]:
            for k in range(int(vij)):
                c = P.polymul(c, [float(k), alpha])
        coefs.append(c)
    log_terms = []
    for n in itertools.product(*(range(c.size) for c in coefs)):
        n = np.array(n)
        coef = np.prod([c[ni] for c, ni in zip(coefs, n)])
        if coef <= 0:
            continue
        log_terms.append(np.log(coef) + gammaln(gamma) - gammaln(gamma + n.sum())
                         + (gammaln(g + n) - gammaln(g)).sum())
    return float(n_letters * (gammaln(alpha) - gammaln(alpha + n_q)) + logsumexp(log_terms))


def log_delta_prior(deltas: np.ndarray, alpha: float, gamma: float) -> np.ndarray:
    """Exact ``log p(delta | alpha, gamma)`` of each table ``[K, Q, L]`` with ``phi`` and ``mu``
    integrated out. ``[K]``."""
    v = column_counts(deltas)
    cache: dict[bytes, float] = {}
    out = np.empty(v.shape[0])
    for k, vk in enumerate(v):
        key = vk.tobytes()
        if key not in cache:
            cache[key] = _log_prior_from_column_counts(vk, alpha, gamma)
        out[k] = cache[key]
    return out


def all_tables(n_states: int, n_letters: int) -> np.ndarray:
    """Every ``delta`` ``[|Q| ** (|Q| L), |Q|, L]`` over ``Q = {0..n_states}``."""
    n_q = n_states + 1
    grid = np.array(list(itertools.product(range(n_q), repeat=n_q * n_letters)), dtype=np.int64)
    return grid.reshape(-1, n_q, n_letters)


# -- exact enumeration ------------------------------------------------------------------------------

def n_tables(n_states: int, n_letters: int) -> int:
    """``|Q| ** (|Q| L)``: the number of transition tables."""
    return (n_states + 1) ** ((n_states + 1) * n_letters)


def enumerate_posterior(corpus: Corpus, n_states: int, alpha: float, beta: float, gamma: float,
                        n_letters: int | None = None) -> dict[str, np.ndarray]:
    """The exact posterior over every table ``delta``.

    Returns ``delta`` ``[K, Q, L]``, ``log_weight`` ``[K]`` (normalised log posterior),
    ``counts`` ``[K, Q, L+1]`` (emission counts of the corpus) and ``log_marginal`` (scalar
    ``log p(corpus)``, in a 0-d array). ``n_letters`` defaults to the corpus alphabet.
    """
    n_letters = corpus.alphabet_size if n_letters is None else n_letters
    deltas = all_tables(n_states, n_letters)
    counts = emission_counts(deltas, corpus.with_alphabet(n_letters))
    log_joint = log_delta_prior(deltas, alpha, gamma) + log_emission_marginal(counts, beta)
    log_z = logsumexp(log_joint)
    return {"delta": deltas, "log_weight": log_joint - log_z, "counts": counts,
            "log_marginal": np.asarray(log_z)}


def mixture_log_prob(delta: np.ndarray, log_weight: np.ndarray, counts: np.ndarray, beta: float,
                     corpus: Corpus, chunk: int = 256) -> np.ndarray:
    """``log sum_k w_k Pr(b | delta_k, train)`` of each string ``b`` of ``corpus``, where
    ``Pr(b | delta, train)`` is the ratio of the Dirichlet-multinomials of ``counts + c(b)``
    and ``counts`` (``pi`` integrated over its posterior). ``[n_strings]``."""
    letters, lengths = corpus.padded()
    base = log_emission_marginal(counts, beta)                         # [K]
    out = np.empty(corpus.n_strings)
    for lo in range(0, corpus.n_strings, chunk):
        hi = min(lo + chunk, corpus.n_strings)
        cb = path_counts(delta, letters[lo:hi], lengths[lo:hi])        # [K, n, Q, L+1]
        log_pred = log_emission_marginal(counts[:, None] + cb, beta) - base[:, None]
        out[lo:hi] = logsumexp(log_weight[:, None] + log_pred, axis=0)
    return out


def exact_predictive(train: Corpus, test: Corpus, n_states: int, alpha: float, beta: float,
                     gamma: float) -> np.ndarray:
    """Exact posterior predictive ``log Pr(b | train)`` of each test string, by enumeration."""
    post = enumerate_posterior(train, n_states, alpha, beta, gamma)
    return mixture_log_prob(post["delta"], post["log_weight"], post["counts"], beta,
                            test.with_alphabet(train.alphabet_size))


# -- hyperpriors: alpha, beta, gamma ~ Gamma(1, 1) integrated by quadrature --------------------------
#
# The paper places Gamma(1, 1) = Exp(1) priors on alpha, beta and gamma (Sect. 3.2 and the
# experiments). The joint factorises as p(delta | alpha, gamma) p(train | delta, beta), so
# with Gauss-Laguerre rules (weight e^{-x}, exactly the Exp(1) density) in each
# hyperparameter the integrals over (alpha, gamma) and over beta separate:
#   p(train) = sum_k [sum_{i,j} w_i w_j p(delta_k | a_i, g_j)] [sum_b w_b p(train | delta_k, b_b)].
# Every integrand is a ratio of rising factorials in the hyperparameter, analytic on [0, inf)
# with its nearest singularity at -1 (the pole of Gamma(x)/Gamma(x + n) at 0 cancels against
# the factors of the non-zero counts), so the rule converges fast in its order.

#: Default Gauss-Laguerre order per integrated hyperparameter. On the toy data of
#: tests/test_pdfa_hyper.py orders 32 / 48 / 64 differ by 6e-5 / 3e-9 in log probability
#: (32 vs 48, 48 vs 64), so the default's error is about 3e-9; the test checks < 1e-7.
HYPER_ORDER = 48


def laguerre_rule(order: int) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, log_weights)`` ``[order]`` of ``int_0^inf f(x) e^{-x} dx ~ sum_i w_i f(x_i)``,
    i.e. the expectation of ``f`` under ``Exp(1) = Gamma(1, 1)``."""
    nodes, weights = np.polynomial.laguerre.laggauss(int(order))
    return nodes, np.log(weights)


def _axis(value: float | None, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature rule of one hyperparameter: Exp(1) prior if ``value`` is None, else fixed."""
    if value is None:
        return laguerre_rule(order)
    return np.array([float(value)]), np.zeros(1)


def _rising_coefficients(v_row: np.ndarray) -> np.ndarray:
    """Coefficients ``s[n]`` of ``prod_j prod_{k < v_j} (k + x)`` (so that the Polya factor of
    one state is ``sum_n s[n] (alpha mu)^n``)."""
    c = np.array([1.0])
    for vij in v_row:
        for k in range(int(vij)):
            c = P.polymul(c, [float(k), 1.0])
    return c


def log_delta_prior_grid(v: np.ndarray, alphas: np.ndarray, gammas: np.ndarray) -> np.ndarray:
    """``log p(delta | alpha_a, gamma_g)`` ``[A, G]`` for column counts ``v`` ``[Q, L]`` on a grid,
    ``phi`` and ``mu`` integrated out (the same sum of Dirichlet moments as
    :func:`log_delta_prior`, with the powers of ``alpha`` factored out of the coefficients)."""
    n_q, n_letters = v.shape
    alphas = np.asarray(alphas, dtype=np.float64)
    gammas = np.asarray(gammas, dtype=np.float64)
    coefs = [_rising_coefficients(v[i]) for i in range(n_q)]
    exps = np.array(list(itertools.product(*(range(c.size) for c in coefs))), dtype=np.int64)
    log_s = np.zeros(len(exps))
    for i, c in enumerate(coefs):
        with np.errstate(divide="ignore"):
            log_s += np.log(c[exps[:, i]])
    keep = np.isfinite(log_s)
    exps, log_s = exps[keep], log_s[keep]
    total = exps.sum(1)                                                     # [T]
    g = gammas / n_q
    log_moment = (gammaln(gammas)[None, :] - gammaln(gammas[None, :] + total[:, None])
                  + (gammaln(g[None, None, :] + exps[:, :, None])
                     - gammaln(g)[None, None, :]).sum(1))                   # [T, G]
    terms = (log_s[:, None, None] + total[:, None, None] * np.log(alphas)[None, :, None]
             + log_moment[:, None, :])                                      # [T, A, G]
    return (n_letters * (gammaln(alphas) - gammaln(alphas + n_q)))[:, None] + logsumexp(terms, axis=0)


def enumerate_posterior_hyper(corpus: Corpus, n_states: int, *, alpha: float | None = None,
                              beta: float | None = None, gamma: float | None = None,
                              order: int = HYPER_ORDER,
                              n_letters: int | None = None) -> dict[str, np.ndarray]:
    """The exact posterior over tables ``delta`` and the emission mass ``beta`` when ``alpha``,
    ``beta``, ``gamma`` have the paper's Gamma(1, 1) hyperpriors (a hyperparameter given a
    value is fixed instead), by enumeration of the tables and Gauss-Laguerre quadrature of
    ``order`` nodes per integrated hyperparameter.

    Returns ``delta`` ``[K, Q, L]``, ``counts`` ``[K, Q, L+1]``, ``beta_nodes`` ``[B]``,
    ``log_weight`` ``[K, B]`` (normalised log posterior of ``(delta_k, beta_b)``, ``alpha`` and
    ``gamma`` integrated out), ``log_marginal`` (``log p(corpus)``) and the posterior means
    ``mean_alpha``, ``mean_beta``, ``mean_gamma`` (0-d arrays; the value itself if fixed).
    """
    n_letters = corpus.alphabet_size if n_letters is None else n_letters
    a_nodes, a_logw = _axis(alpha, order)
    b_nodes, b_logw = _axis(beta, order)
    g_nodes, g_logw = _axis(gamma, order)
    deltas = all_tables(n_states, n_letters)
    counts = emission_counts(deltas, corpus.with_alphabet(n_letters))
    v = column_counts(deltas).reshape(len(deltas), -1)
    patterns, inverse = np.unique(v, axis=0, return_inverse=True)
    n_q = n_states + 1
    # the prior depends on delta only through its column counts: one grid per pattern
    lp = np.stack([log_delta_prior_grid(p.reshape(n_q, n_letters), a_nodes, g_nodes)
                   for p in patterns])                                          # [U, A, G]
    inverse = inverse.ravel()
    ag_logw = a_logw[:, None] + g_logw[None, :]
    log_prior_bar = logsumexp(lp + ag_logw[None], axis=(1, 2))[inverse]         # [K]
    le = np.stack([log_emission_marginal(counts, b) for b in b_nodes], axis=1)  # [K, B]
    log_joint = log_prior_bar[:, None] + b_logw[None, :] + le                    # [K, B]
    log_z = logsumexp(log_joint)
    # posterior of the hyperparameter nodes: sum the likelihood of the tables of each pattern
    lik_k = logsumexp(b_logw[None, :] + le, axis=1)                              # [K]
    top = np.full(len(patterns), -np.inf)
    np.maximum.at(top, inverse, lik_k)
    per_pattern = np.zeros(len(patterns))
    np.add.at(per_pattern, inverse, np.exp(lik_k - top[inverse]))
    lik_u = top + np.log(per_pattern)                                            # [U]
    post_ag = ag_logw + logsumexp(lp + lik_u[:, None, None], axis=0) - log_z     # [A, G]
    post_b = logsumexp(log_joint, axis=0) - log_z                                # [B]
    return {"delta": deltas, "counts": counts, "beta_nodes": b_nodes,
            "log_weight": log_joint - log_z, "log_marginal": np.asarray(log_z),
            "mean_alpha": np.asarray(np.exp(logsumexp(post_ag, axis=1)) @ a_nodes),
            "mean_beta": np.asarray(np.exp(post_b) @ b_nodes),
            "mean_gamma": np.asarray(np.exp(logsumexp(post_ag, axis=0)) @ g_nodes)}


def mixture_log_prob_hyper(delta: np.ndarray, log_weight: np.ndarray, counts: np.ndarray,
                           beta_nodes: np.ndarray, corpus: Corpus, chunk: int = 128) -> np.ndarray:
    """``log sum_{k,b} w_kb Pr(s | delta_k, beta_b, train)`` of each string ``s`` of ``corpus``;
    ``log_weight`` ``[K, B]`` over tables and ``beta_nodes`` ``[B]`` (as returned by
    :func:`enumerate_posterior_hyper`), ``counts`` ``[K, Q, L+1]`` those of the training data.
    ``[n_strings]``."""
    letters, lengths = corpus.padded()
    out = np.empty(corpus.n_strings)
    for lo in range(0, corpus.n_strings, chunk):
        hi = min(lo + chunk, corpus.n_strings)
        joint = counts[:, None] + path_counts(delta, letters[lo:hi], lengths[lo:hi])  # [K, n, Q, L+1]
        acc = np.full(hi - lo, -np.inf)
        for j, b in enumerate(beta_nodes):          # one beta node at a time: [K, n] temporaries
            log_pred = log_emission_marginal(joint, b) - log_emission_marginal(counts, b)[:, None]
            acc = np.logaddexp(acc, logsumexp(log_weight[:, j, None] + log_pred, axis=0))
        out[lo:hi] = acc
    return out


def exact_predictive_hyper(train: Corpus, test: Corpus, n_states: int, *,
                           alpha: float | None = None, beta: float | None = None,
                           gamma: float | None = None, order: int = HYPER_ORDER) -> np.ndarray:
    """Exact posterior predictive ``log Pr(s | train)`` ``[n_test]`` of each test string under the
    finite PDFA prior with the paper's hyperpriors ``alpha, beta, gamma ~ Gamma(1, 1)``.

    States ``{0..n_states}`` as in :func:`exact_predictive`; tables enumerated, ``phi``, ``mu``
    and ``pi`` integrated out exactly, each hyperparameter left as ``None`` integrated by a
    Gauss-Laguerre rule of ``order`` nodes (a number fixes it; with all three fixed this is
    :func:`exact_predictive`). The quadrature error on the toys of tests/test_pdfa_hyper.py
    is about 3e-9 in log probability at the default order (see :data:`HYPER_ORDER`).
    """
    post = enumerate_posterior_hyper(train, n_states, alpha=alpha, beta=beta, gamma=gamma,
                                     order=order)
    return mixture_log_prob_hyper(post["delta"], post["log_weight"], post["counts"],
                                  post["beta_nodes"], test.with_alphabet(train.alphabet_size))


# -- NumPyro model (DiscreteHMCGibbs) ----------------------------------------------------------------

def _jax_path_counts(delta, letters, lengths, weights, n_q: int, n_letters: int):
    """Weighted emission counts ``[Q, L+1]`` of the padded strings under ``delta`` ``[Q, L]``."""
    delta = jnp.asarray(delta)
    letters = jnp.asarray(letters)
    lengths = jnp.asarray(lengths)
    weights = jnp.asarray(weights, dtype=jnp.float64)
    n, width = letters.shape
    x = jnp.clip(letters, 0)

    def step(carry, inputs):
        state, counts = carry
        x_t, active = inputs
        w = jnp.where(active, weights, 0.0)
        counts = counts + jnp.einsum("n,nq,na->qa", w, jax.nn.one_hot(state, n_q),
                                     jax.nn.one_hot(x_t + 1, n_letters + 1))
        state = jnp.where(active, delta[state, x_t], state).astype(state.dtype)
        return (state, counts), None

    init = (jnp.zeros(n, dtype=jnp.int32), jnp.zeros((n_q, n_letters + 1)))
    active = jnp.arange(width)[:, None] < lengths[None, :]
    (state, counts), _ = jax.lax.scan(step, init, (x.T, active))
    return counts + jnp.einsum("n,nq->q", weights, jax.nn.one_hot(state, n_q))[:, None] \
        * jax.nn.one_hot(0, n_letters + 1)[None, :]


#: Mutants of :func:`pdfa_model`'s potential (``variant``), each one wrong term, caught by the
#: exact Gibbs-sweep check of :mod:`bayesfa.validation.pdia.oracle`: ``"no-mu"`` integrates
#: ``phi_j ~ Dir(alpha / |Q|)`` instead of ``Dir(alpha mu)`` (gen:phi without the shared ``mu``);
#: ``"end-mass"`` spreads ``beta`` over the ``L`` letters only, ``Dir(beta / L)`` (the end symbol
#: forgotten in ``|Sigma'|``, gen:pi).
MODEL_VARIANTS = ("no-mu", "end-mass")


def pdfa_model(letters, lengths, n_states: int, n_letters: int, alpha: float, beta: float,
               gamma: float, weights=None, hyperpriors: bool = False, variant: str = ""):
    """Finite PDFA prior with ``phi`` and ``pi`` integrated out; ``mu`` and ``delta`` sampled.

    ``hyperpriors=True``: ``alpha``, ``beta``, ``gamma`` are sampled from the paper's
    Gamma(1, 1) hyperpriors (sites of those names) and the values passed are ignored.

    ``delta`` ``[Q, L]`` is drawn uniform and reweighted by the Polya-urn factor of
    Eq. delta:end (``phi`` integrated out given ``mu``); the data enter through the
    Dirichlet-multinomial of the emission counts (Eq. x:end). letters ``[n, max_len]``
    (0-based, -1 padded), lengths ``[n]``, weights ``[n]`` multiplicities. ``variant``: ``""``,
    or a mutant of :data:`MODEL_VARIANTS` (validation only).
    """
    n_q = n_states + 1
    if weights is None:
        weights = np.ones(np.shape(lengths)[0])
    if hyperpriors:
        alpha = numpyro.sample("alpha", dist.Gamma(1.0, 1.0))
        beta = numpyro.sample("beta", dist.Gamma(1.0, 1.0))
        gamma = numpyro.sample("gamma", dist.Gamma(1.0, 1.0))
    mu = numpyro.sample("mu", dist.Dirichlet(jnp.full(n_q, gamma / n_q)))
    with numpyro.plate("source", n_q, dim=-2), numpyro.plate("letter", n_letters, dim=-1):
        delta = numpyro.sample("delta", dist.Categorical(logits=jnp.zeros(n_q)))
    v = (delta[None, :, :] == jnp.arange(n_q)[:, None, None]).sum(1)          # [Q, L]
    am = alpha * mu[:, None] if variant != "no-mu" else jnp.full((n_q, 1), alpha / n_q)
    log_polya = (n_letters * (jgammaln(alpha) - jgammaln(alpha + n_q))
                 + (jgammaln(am + v) - jgammaln(am)).sum())
    numpyro.factor("delta_prior", log_polya + n_q * n_letters * np.log(n_q))
    counts = _jax_path_counts(delta, letters, lengths, weights, n_q, n_letters)
    conc = beta / (n_letters + 1) if variant != "end-mass" else beta / n_letters
    log_lik = (jgammaln(beta) - jgammaln(beta + counts.sum(-1))
               + (jgammaln(counts + conc) - jgammaln(conc)).sum(-1)).sum()
    numpyro.factor("log_lik", log_lik)


GIBBS_EXTRA_FIELDS = ("block_states.0.potential_energy", "block_states.1.diverging",
                      "block_states.1.accept_prob")


def run_gibbs(corpus: Corpus, n_states: int, alpha: float, beta: float, gamma: float, seed: int, *,
              num_warmup: int = 1000, num_samples: int = 1000, num_chains: int = 2,
              thinning: int = 1, progress: bool = False,
              hyperpriors: bool = False, variant: str = "") -> tuple[dict, dict]:
    """``DiscreteHMCGibbs(NUTS(pdfa_model))``: each step a (Metropolised) Gibbs sweep over the
    entries of ``delta``, then NUTS on ``mu`` (and on ``alpha``, ``beta``, ``gamma`` with
    ``hyperpriors=True``, which ignores the values given). Returns ``(samples, extra)`` as
    :func:`bayesfa.models.pfa.run_mcmc`; ``samples["delta"]`` ``[chain, draw, Q, L]``.
    ``variant``: a mutant of the model's potential (:data:`MODEL_VARIANTS`), validation only."""
    letters, lengths, weights = unique_padded(corpus)
    return run_mcmc(pdfa_model, seed, kernel="discrete-hmc-gibbs",
                    data=dict(letters=letters, lengths=lengths, weights=weights),
                    static=dict(n_states=n_states, n_letters=corpus.alphabet_size,
                                alpha=float(alpha), beta=float(beta), gamma=float(gamma),
                                hyperpriors=bool(hyperpriors), variant=str(variant)),
                    num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                    thinning=thinning, progress=progress, extra_fields=GIBBS_EXTRA_FIELDS)


def sample_pi(rng: np.random.Generator, counts: np.ndarray, beta: float) -> np.ndarray:
    """``pi ~ Dir(beta/|Sigma'| + counts)`` per state: ``[..., Q, L+1]`` from counts of that shape."""
    conc = beta / counts.shape[-1] + np.asarray(counts, dtype=np.float64)
    g = np.maximum(rng.standard_gamma(conc), np.finfo(float).tiny)
    return g / g.sum(-1, keepdims=True)


def posterior_xi(delta: np.ndarray, corpus: Corpus, beta: float | np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """``xi`` ``[..., Q, L+1, Q]`` for tables ``delta`` ``[..., Q, L]`` with ``pi`` drawn from its
    exact conditional given ``delta`` and ``corpus``; ``beta`` a scalar or one value per table
    (shape ``delta.shape[:-2]``, e.g. draws under the hyperpriors)."""
    delta = np.asarray(delta, dtype=np.int64)
    flat = delta.reshape((-1,) + delta.shape[-2:])
    beta = np.asarray(beta, dtype=np.float64)
    if beta.ndim:
        beta = beta.reshape(-1, 1, 1)
    pi = sample_pi(rng, emission_counts(flat, corpus), beta)
    return xi_from_pdfa(flat, pi).reshape(delta.shape[:-2] + pi.shape[-2:] + (delta.shape[-2],))


# -- prior sampling (ancestral, nothing integrated out) ----------------------------------------------

def sample_prior(rng: np.random.Generator, n_samples: int, n_states: int, n_letters: int,
                 alpha: float, beta: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """``(delta [S, Q, L], xi [S, Q, L+1, Q])`` drawn by the generative process gen:mu..gen:delta."""
    n_q = n_states + 1
    mu = rng.dirichlet(np.full(n_q, gamma / n_q), size=n_samples)                # [S, Q]
    # Dirichlet draws via gammas (numpy's dirichlet rejects very small parameters)
    g = rng.standard_gamma(np.broadcast_to(alpha * mu[:, None, :], (n_samples, n_letters, n_q)))
    g = np.maximum(g, np.finfo(float).tiny)
    phi = g / g.sum(-1, keepdims=True)                                          # [S, L, Q]
    cdf = np.cumsum(phi, axis=-1)
    u = rng.random((n_samples, n_q, n_letters))
    delta = (cdf[:, None, :, :] < u[..., None] * cdf[:, None, :, -1:]).sum(-1)   # [S, Q, L]
    delta = np.minimum(delta, n_q - 1)
    pi = sample_pi(rng, np.zeros((n_samples, n_q, n_letters + 1)), beta)
    return delta, xi_from_pdfa(delta, pi)
