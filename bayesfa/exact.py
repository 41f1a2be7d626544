"""Exact posterior quantities of the collapsed PFA model by enumerating every state path.

Toy sizes only (``N ** n_letters`` paths). This is the ground truth that the samplers and the
NumPyro oracles are checked against (dynamax's brute-force pattern).

Model: Shibata & Yoshinaka (2013), Sect. 2.1 -- states ``0..N`` with 0 initial and final, the
Dirichlet prior of Eq. 2 (``beta`` on ``(a != 0, j != 0)``, ``N beta`` on the end transition)
and the collapsed joint ``Pr(alpha, z)`` of Eq. 4.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob, xi_to_pfa


def free_positions(tokens: np.ndarray) -> np.ndarray:
    """Indices ``t`` (0-based, into ``z`` of length ``T + 1``) whose state is not fixed to 0.

    ``z[t]`` is the state before token ``t``; it is fixed to 0 at ``t = 0`` and after an end
    marker, and free otherwise (Algorithm 1, line 1; Eq. 9, case ``a_{t-1} = 0``).
    """
    tokens = np.asarray(tokens)
    t = np.arange(1, tokens.size)
    return t[tokens[:-1] != 0]


def counts(tokens: np.ndarray, z: np.ndarray, n_states: int, n_symbols: int) -> np.ndarray:
    """``C[i, a, j]`` of Definition 2 for the path ``z`` (length ``T + 1``), states ``0..N``."""
    c = np.zeros((n_states + 1, n_symbols, n_states + 1), dtype=np.int64)
    np.add.at(c, (z[:-1], tokens, z[1:]), 1)
    return c


def prior_matrix(n_states: int, n_symbols: int, beta: float) -> np.ndarray:
    """Dirichlet parameters of Eq. 2 as ``[N+1, A, N+1]`` (0 where the transition is impossible)."""
    prior = np.zeros((n_states + 1, n_symbols, n_states + 1))
    prior[:, 1:, 1:] = beta
    prior[:, 0, 0] = n_states * beta
    return prior


def log_joint(c: np.ndarray, beta: float) -> float:
    """``log Pr(alpha, z)`` of Eq. 4 from the counts ``C[i, a, j]`` (``R(beta)`` included)."""
    n_states = c.shape[0] - 1
    prior = prior_matrix(n_states, c.shape[1], beta)
    allowed = prior > 0
    total = prior.sum(axis=(1, 2))
    per_state = (gammaln(c + prior)[allowed].sum() - gammaln(prior)[allowed].sum())
    return float(per_state + (gammaln(total) - gammaln(c.sum(axis=(1, 2)) + total)).sum())


def enumerate_paths(corpus: Corpus, n_states: int):
    """Yield every state path ``z`` (int64, length ``T + 1``) allowed for ``corpus``."""
    tokens = corpus.tokens
    free = free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int64)
    for states in itertools.product(range(1, n_states + 1), repeat=free.size):
        z[free] = states
        yield z.copy()


def log_marginal(corpus: Corpus, n_states: int, beta: float) -> float:
    """``log Pr(alpha)``: Eq. 4 summed over every path."""
    n_symbols = corpus.alphabet_size + 1
    return float(logsumexp([log_joint(counts(corpus.tokens, z, n_states, n_symbols), beta)
                            for z in enumerate_paths(corpus, n_states)]))


def concat(a: Corpus, b: Corpus) -> Corpus:
    """The strings of ``a`` followed by those of ``b`` (same alphabet)."""
    size = max(a.alphabet_size, b.alphabet_size)
    return Corpus.from_strings(a.strings() + b.strings(), size)


def exact_predictive(train: Corpus, test: Corpus, n_states: int, beta: float) -> np.ndarray:
    """Exact posterior predictive ``log Pr(b | alpha)`` of each test string (Eq. 5).

    ``Pr(b | alpha) = Pr(alpha b) / Pr(alpha)``, both by enumeration.
    """
    base = log_marginal(train, n_states, beta)
    return np.array([log_marginal(concat(train, test.subset([s])), n_states, beta) - base
                     for s in range(test.n_strings)])


def path_posterior(train: Corpus, n_states: int, beta: float):
    """``(paths, probs)``: every path ``z`` with ``Pr(z | alpha)``; paths ``[n_paths, T + 1]``."""
    n_symbols = train.alphabet_size + 1
    paths = np.array(list(enumerate_paths(train, n_states)))
    logp = np.array([log_joint(counts(train.tokens, z, n_states, n_symbols), beta) for z in paths])
    return paths, np.exp(logp - logsumexp(logp))


def plugin_xi(c: np.ndarray, beta: float) -> np.ndarray:
    """``xi~ = E[xi | alpha, z]``, Sect. 2.3: ``(C_iaj + prior_iaj) / (C_i + N A beta)``."""
    prior = prior_matrix(c.shape[0] - 1, c.shape[1], beta)
    alpha = c + prior
    return alpha / alpha.sum(axis=(1, 2), keepdims=True)


def exact_plugin_predictive(train: Corpus, test: Corpus, n_states: int, beta: float) -> np.ndarray:
    """``log sum_z Pr(z | alpha) Pr(b | xi~(z))`` of each test string: what the CGS estimator
    of Eq. 6 with the plug-in of Sect. 2.3 (footnote 2) converges to.
    """
    n_symbols = train.alphabet_size + 1
    test = test.with_alphabet(train.alphabet_size)
    paths, probs = path_posterior(train, n_states, beta)
    xis = np.array([plugin_xi(counts(train.tokens, z, n_states, n_symbols), beta) for z in paths])
    logp = forward_log_prob(*xi_to_pfa(xis), test)  # [n_paths, n_test]
    return logsumexp(logp, axis=0, b=probs[:, None])
