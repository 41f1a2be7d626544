"""NumPyro oracle of the HMM prior of Shibata & Yoshinaka (2013), Sect. 4.4.

States ``0..N`` (0 initial), letters ``0..A-1`` with 0 the end marker. Per state ``i``:

- ``eta[i] ~ Dir(alpha, ..., alpha)`` over the ``A`` letters, end marker included (emission);
- ``theta[i] ~ Dir(beta, ..., beta)`` over the next states ``1..N`` (transition), used only
  after a non-end letter; the end marker always leads to state 0.

So ``xi[i, a, j] = eta[i, a] theta[i, j]`` for ``a, j != 0`` and ``xi[i, 0, 0] = eta[i, 0]``
(the PFA form of Sect. 2.1, on which prediction runs). As in :mod:`bayesfa.models.pfa` the
state paths are summed out by the forward algorithm, so NUTS samples ``eta`` and ``theta``.

:func:`exact_log_marginal` / :func:`exact_predictive` enumerate every path of the collapsed
HMM (Dirichlet-multinomial for ``eta`` and ``theta``): the ground truth for toy sizes.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from bayesfa.corpus import Corpus
from bayesfa.models.pfa import forward_log_lik, run_mcmc, sample_prior, unique_padded
from bayesfa.exact import concat, enumerate_paths


# -- model ------------------------------------------------------------------------------------

def hmm_prior(n_states: int, n_letters: int, alpha: float, beta: float):
    """``(eta [N+1, A], theta [N+1, N])``; ``n_letters = A - 1`` (end marker excluded).

    With ``N = 1`` the only next state is 1 and ``theta`` is the constant 1.
    """
    with numpyro.plate("state", n_states + 1):
        eta = numpyro.sample("eta", dist.Dirichlet(jnp.full(n_letters + 1, float(alpha))))
        if n_states > 1:
            theta = numpyro.sample("theta", dist.Dirichlet(jnp.full(n_states, float(beta))))
        else:
            theta = jnp.ones((n_states + 1, 1))
    return eta, theta


def hmm_model(letters, lengths, n_states: int, n_letters: int, alpha: float, beta: float,
              weights=None):
    """HMM prior of Sect. 4.4 with the likelihood of Eq. 1 for ``xi = eta theta``, paths
    summed out. letters ``[n, max_len]`` (0-based, -1 padded), lengths ``[n]``, weights ``[n]``.
    """
    eta, theta = hmm_prior(n_states, n_letters, alpha, beta)
    log_eta, log_theta = jnp.log(eta), jnp.log(theta)
    log_trans = log_eta[:, 1:, None] + log_theta[:, None, :]      # [N+1, A-1, N]
    ll = forward_log_lik(log_trans, log_eta[:, 0], letters, lengths)
    if weights is not None:
        ll = ll * jnp.asarray(weights)
    numpyro.factor("log_lik", ll.sum())


def xi_from_hmm(eta: np.ndarray, theta: np.ndarray | None) -> np.ndarray:
    """``xi`` ``[..., N+1, A, N+1]`` from ``eta`` ``[..., N+1, A]``, ``theta`` ``[..., N+1, N]``
    (``None`` for ``N = 1``)."""
    eta = np.asarray(eta, dtype=np.float64)
    n_states = eta.shape[-2] - 1
    if theta is None:
        theta = np.ones(eta.shape[:-1] + (1,))
    theta = np.asarray(theta, dtype=np.float64)
    xi = np.zeros(eta.shape + (n_states + 1,))
    xi[..., :, 0, 0] = eta[..., 0]
    xi[..., :, 1:, 1:] = eta[..., 1:, None] * theta[..., None, :]
    return xi


def run_nuts(corpus: Corpus, n_states: int, alpha: float, beta: float, seed: int, *,
             num_warmup: int = 1000, num_samples: int = 1000, num_chains: int = 2,
             thinning: int = 1, progress: bool = False) -> tuple[dict, dict]:
    """NUTS on :func:`hmm_model` for ``corpus`` (distinct strings weighted by multiplicity).

    Returns ``(samples, extra)`` as :func:`bayesfa.models.pfa.run_mcmc`.
    """
    letters, lengths, weights = unique_padded(corpus)
    return run_mcmc(hmm_model, seed, data=dict(letters=letters, lengths=lengths, weights=weights),
                    static=dict(n_states=n_states, n_letters=corpus.alphabet_size,
                                alpha=float(alpha), beta=float(beta)),
                    num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                    thinning=thinning, progress=progress)


def posterior_xi(samples: dict, n_states: int) -> np.ndarray:
    """``xi`` draws ``[chain, draw, N+1, A, N+1]`` from :func:`run_nuts` samples."""
    theta = samples["theta"] if n_states > 1 else None
    return xi_from_hmm(samples["eta"], theta)


def sample_prior_xi(seed: int, n_samples: int, n_states: int, n_letters: int, alpha: float,
                    beta: float) -> np.ndarray:
    """``n_samples`` draws of ``xi`` ``[S, N+1, A, N+1]`` from :func:`hmm_prior`."""
    draws = sample_prior(hmm_prior, seed, n_samples, n_states=n_states, n_letters=n_letters,
                         alpha=alpha, beta=beta)
    return xi_from_hmm(draws["eta"], draws.get("theta"))


# -- exact enumeration (toy sizes) ------------------------------------------------------------

def _log_dirichlet_multinomial(counts: np.ndarray, conc: float) -> np.ndarray:
    """``log int prod_k p_k^{n_k} Dir(p; conc) dp`` over the last axis (symmetric ``conc``)."""
    k = counts.shape[-1]
    return (gammaln(k * conc) - gammaln(counts.sum(-1) + k * conc)
            + (gammaln(counts + conc) - gammaln(conc)).sum(-1))


def path_counts(tokens: np.ndarray, paths: np.ndarray, n_states: int, n_symbols: int):
    """``(emit [P, N+1, A], move [P, N+1, N])`` for paths ``[P, T+1]``: ``emit[i, a]`` letters
    ``a`` (end included) emitted in state ``i``; ``move[i, j-1]`` moves ``i -> j`` after a
    non-end letter."""
    n_paths = paths.shape[0]
    rows = np.arange(n_paths)[:, None]
    emit = np.zeros((n_paths, n_states + 1, n_symbols))
    np.add.at(emit, (rows, paths[:, :-1], np.broadcast_to(tokens, paths[:, :-1].shape)), 1)
    move = np.zeros((n_paths, n_states + 1, n_states))
    t = np.flatnonzero(tokens != 0)
    np.add.at(move, (rows, paths[:, t], paths[:, t + 1] - 1), 1)
    return emit, move


def exact_log_marginal(corpus: Corpus, n_states: int, alpha: float, beta: float,
                       n_letters: int | None = None) -> float:
    """``log Pr(alpha)`` of the collapsed HMM: ``sum_z prod_i DirMult(emit_i; alpha)
    DirMult(move_i; beta)``, every path ``z`` enumerated (``N ** n_letters`` of them)."""
    n_symbols = (corpus.alphabet_size if n_letters is None else n_letters) + 1
    paths = np.array(list(enumerate_paths(corpus, n_states)))
    emit, move = path_counts(corpus.tokens, paths, n_states, n_symbols)
    log_joint = (_log_dirichlet_multinomial(emit, alpha).sum(-1)
                 + _log_dirichlet_multinomial(move, beta).sum(-1))
    return float(logsumexp(log_joint))


def exact_predictive(train: Corpus, test: Corpus, n_states: int, alpha: float,
                     beta: float) -> np.ndarray:
    """Exact ``log Pr(b | train) = log Pr(train b) - log Pr(train)`` of every test string."""
    size = max(train.alphabet_size, test.alphabet_size)
    base = exact_log_marginal(train, n_states, alpha, beta, size)
    return np.array([exact_log_marginal(concat(train, test.subset([s])), n_states, alpha, beta,
                                        size) - base
                     for s in range(test.n_strings)])
