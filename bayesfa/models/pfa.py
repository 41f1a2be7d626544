"""NumPyro oracle of the fully connected PFA prior (Shibata & Yoshinaka 2013, Sect. 2.1, Eq. 2).

States ``0..N`` (0 initial), letters ``0..A-1`` with 0 the end marker, which leads back to
state 0. Per state ``i`` one Dirichlet over the ``N (A-1) + 1`` allowed transitions: the
``(a != 0, j != 0)`` pairs with concentration ``beta`` and the end transition ``(i, 0, 0)``
with ``N beta`` (Eq. 2). The state path of every string is summed out exactly by a forward
algorithm in log space (``jax.lax.scan`` over the padded strings), so NUTS samples ``xi``
alone. This is the slow ground truth the collapsed samplers are compared with.

Layout of one state's Dirichlet draw ``w[i]``, shape ``[1 + (A-1) N]``:
``w[i, 0] = xi[i, 0, 0]`` and ``w[i, 1 + (a-1) N + (j-1)] = xi[i, a, j]``.

Shared helpers used by :mod:`bayesfa.models.hmm` and :mod:`bayesfa.models.pdfa` live here too:
the JAX forward algorithm, string de-duplication, NUTS driver, prior-predictive string
sampling from ``xi`` and the posterior predictive of Eq. 6.
"""

from __future__ import annotations

import functools
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp
from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob, log_mean_exp, xi_to_pfa

# Dirichlet draws with beta < 1 put many components below float32's range; the oracle must
# not lose them, so JAX runs in double precision (JAX is used only inside bayesfa.models).
jax.config.update("jax_enable_x64", True)


# -- data -----------------------------------------------------------------------------------

def unique_padded(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(letters, lengths, weights)`` of the distinct strings of ``corpus``.

    letters ``[n_unique, max_len]`` 0-based letters padded with -1, lengths ``[n_unique]``,
    weights ``[n_unique]`` multiplicities (the likelihood is ``sum weights * log Pr``).
    """
    letters, lengths = corpus.padded()
    if letters.shape[0] == 0:
        return letters, lengths, np.zeros(0)
    keys = np.concatenate([lengths[:, None].astype(np.int64), letters.astype(np.int64)], axis=1)
    uniq, counts = np.unique(keys, axis=0, return_counts=True)
    return uniq[:, 1:].astype(np.int32), uniq[:, 0], counts.astype(np.float64)


# -- likelihood -----------------------------------------------------------------------------

def forward_log_lik(log_trans, log_stop, letters, lengths):
    """``log Pr(x | xi)`` of every padded string by the forward algorithm in log space (Eq. 1
    summed over paths ``z``).

    Parameters
    ----------
    log_trans : ``[N+1, A-1, N]``, ``log xi[i, a+1, j+1]`` (0-based letter ``a``, state ``j+1``).
    log_stop : ``[N+1]``, ``log xi[i, 0, 0]``.
    letters : ``[n, max_len]`` int, 0-based letters padded with -1; lengths : ``[n]``.

    Returns ``[n]``. State 0 is left after the first letter and never re-entered, so the
    recursion runs on states ``1..N`` only and every term is finite (no ``-inf`` gradients).
    """
    letters = jnp.asarray(letters)
    lengths = jnp.asarray(lengths)
    n, width = letters.shape
    if width == 0:
        return jnp.broadcast_to(log_stop[0], (n,))
    x = jnp.clip(letters, 0)
    alpha0 = log_trans[0, x[:, 0], :]                       # [n, N]
    inner = log_trans[1:]                                   # [N, A-1, N]

    def step(alpha, inputs):
        x_t, active = inputs
        m = jnp.swapaxes(inner[:, x_t, :], 0, 1)            # [n, N (from), N (to)]
        new = logsumexp(alpha[:, :, None] + m, axis=1)
        return jnp.where(active[:, None], new, alpha), None

    steps = jnp.arange(1, width)
    active = steps[:, None] < lengths[None, :]              # [width-1, n]
    alpha, _ = jax.lax.scan(step, alpha0, (x[:, 1:].T, active))
    final = logsumexp(alpha + log_stop[None, 1:], axis=-1)
    return jnp.where(lengths == 0, log_stop[0], final)


# -- model ----------------------------------------------------------------------------------

def prior_concentration(n_states: int, n_letters: int, beta: float) -> np.ndarray:
    """Dirichlet parameters of Eq. 2 in the ``w`` layout: ``[N beta, beta, ..., beta]``,
    length ``1 + n_letters * N`` (``n_letters = A - 1``, end marker excluded)."""
    conc = np.full(1 + n_letters * n_states, float(beta))
    conc[0] = n_states * beta
    return conc


def pfa_prior(n_states: int, n_letters: int, beta: float):
    """Sample ``w`` ``[N+1, 1 + n_letters N]``: one Dirichlet of Eq. 2 per state."""
    conc = jnp.asarray(prior_concentration(n_states, n_letters, beta))
    with numpyro.plate("state", n_states + 1):
        return numpyro.sample("w", dist.Dirichlet(conc))


def pfa_model(letters, lengths, n_states: int, n_letters: int, beta: float, weights=None):
    """PFA prior of Eq. 2 and the likelihood of Eq. 1 with the paths summed out.

    letters ``[n, max_len]`` (0-based, -1 padded), lengths ``[n]``, optional weights ``[n]``
    (string multiplicities); ``n_letters`` is the alphabet without the end marker (``A - 1``).
    """
    w = pfa_prior(n_states, n_letters, beta)
    log_w = jnp.log(w)
    log_trans = log_w[:, 1:].reshape(n_states + 1, n_letters, n_states)
    ll = forward_log_lik(log_trans, log_w[:, 0], letters, lengths)
    if weights is not None:
        ll = ll * jnp.asarray(weights)
    numpyro.factor("log_lik", ll.sum())


def xi_from_sample(w: np.ndarray, n_states: int, n_letters: int) -> np.ndarray:
    """``xi`` ``[..., N+1, A, N+1]`` from draws ``w`` ``[..., N+1, 1 + n_letters N]``."""
    w = np.asarray(w, dtype=np.float64)
    lead = w.shape[:-2]
    xi = np.zeros(lead + (n_states + 1, n_letters + 1, n_states + 1))
    xi[..., :, 0, 0] = w[..., 0]
    xi[..., :, 1:, 1:] = w[..., 1:].reshape(lead + (n_states + 1, n_letters, n_states))
    return xi


# -- inference --------------------------------------------------------------------------------

EXTRA_FIELDS = ("potential_energy", "diverging", "accept_prob", "num_steps")


def _kernel(model, kernel: str, target_accept_prob: float):
    if kernel == "nuts":
        return NUTS(model, target_accept_prob=target_accept_prob)
    if kernel == "discrete-hmc-gibbs":
        return DiscreteHMCGibbs(NUTS(model, target_accept_prob=target_accept_prob), modified=True)
    raise ValueError(f"unknown kernel {kernel!r}")


@functools.lru_cache(maxsize=16)
def _compiled_chains(model, kernel: str, target_accept_prob: float, num_warmup: int,
                     num_samples: int, thinning: int, extra_fields: tuple, static: tuple):
    """A jitted ``(keys [C], data) -> (samples, extra)`` running one chain per key in turn.

    ``MCMC.run`` under ``jax.jit`` + ``lax.map`` compiles the sampler once for all chains (and
    for later fits with the same shapes and settings), instead of once per chain.
    """
    def one_chain(key, data):
        mcmc = MCMC(_kernel(model, kernel, target_accept_prob), num_warmup=num_warmup,
                    num_samples=num_samples, thinning=thinning, num_chains=1, progress_bar=False)
        mcmc.run(key, extra_fields=extra_fields, **data, **dict(static))
        return mcmc.get_samples(), mcmc.get_extra_fields()

    return jax.jit(lambda keys, data: jax.lax.map(lambda k: one_chain(k, data), keys))


def run_mcmc(model, seed: int, *, data: dict, static: dict, kernel: str = "nuts",
             num_warmup: int = 1000, num_samples: int = 1000, num_chains: int = 1,
             thinning: int = 1, extra_fields: tuple = EXTRA_FIELDS, progress: bool = False,
             target_accept_prob: float = 0.9) -> tuple[dict, dict]:
    """Run ``num_chains`` chains of ``kernel`` (``"nuts"`` or ``"discrete-hmc-gibbs"``) on
    ``model(**data, **static)`` one after the other, from ``jax.random.key(seed)``.

    ``data``: array arguments; ``static``: hashable ones (sizes, hyperparameters). Each chain
    takes ``num_warmup`` warm-up steps, then ``num_samples`` steps of which every
    ``thinning``-th is kept. Returns numpy ``(samples, extra)``, every value
    ``[chain, draw, ...]``. The chains run inside one jitted call (no per-step progress bar,
    so the result of a seed does not depend on ``progress``, which only prints a line to
    stderr before and after).
    """
    run = _compiled_chains(model, kernel, float(target_accept_prob), int(num_warmup),
                           int(num_samples), int(thinning), tuple(extra_fields),
                           tuple(sorted(static.items())))
    if progress:
        print(f"{getattr(model, '__name__', 'model')}: {num_chains} chain(s) of "
              f"{num_warmup} + {num_samples} steps ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    data = {k: jnp.asarray(v) for k, v in data.items()}
    samples, extra = jax.block_until_ready(run(jax.random.split(jax.random.key(seed), num_chains),
                                               data))
    if progress:
        print(f"  done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    as_numpy = lambda d: {k: np.asarray(v) for k, v in d.items()}  # noqa: E731
    return as_numpy(samples), as_numpy(extra)


def run_nuts(corpus: Corpus, n_states: int, beta: float, seed: int, *, num_warmup: int = 1000,
             num_samples: int = 1000, num_chains: int = 2, thinning: int = 1,
             progress: bool = False) -> tuple[dict, dict]:
    """NUTS on :func:`pfa_model` for ``corpus`` (distinct strings weighted by multiplicity).

    Returns ``(samples, extra)`` as :func:`run_mcmc`; ``samples["w"]`` ``[chain, draw, N+1, K]``.
    """
    letters, lengths, weights = unique_padded(corpus)
    return run_mcmc(pfa_model, seed, data=dict(letters=letters, lengths=lengths, weights=weights),
                    static=dict(n_states=n_states, n_letters=corpus.alphabet_size,
                                beta=float(beta)),
                    num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                    thinning=thinning, progress=progress)


def posterior_xi(samples: dict, n_states: int, n_letters: int) -> np.ndarray:
    """``xi`` draws ``[chain, draw, N+1, A, N+1]`` from :func:`run_nuts` samples."""
    return xi_from_sample(samples["w"], n_states, n_letters)


def sample_prior(prior, seed: int, n_samples: int, **kwargs) -> dict[str, np.ndarray]:
    """``n_samples`` independent draws of every sample site of ``prior(**kwargs)``, batched by an
    outer plate (one eager call, nothing compiled); each value ``[n_samples, ...]``."""
    seeded = numpyro.handlers.seed(prior, rng_seed=jax.random.key(seed))
    with numpyro.handlers.trace() as tr, numpyro.plate("draws", n_samples, dim=-2):
        seeded(**kwargs)
    return {name: np.asarray(site["value"]) for name, site in tr.items()
            if site["type"] == "sample"}


def sample_prior_xi(seed: int, n_samples: int, n_states: int, n_letters: int,
                    beta: float) -> np.ndarray:
    """``n_samples`` draws of ``xi`` ``[S, N+1, A, N+1]`` from :func:`pfa_prior` (Eq. 2)."""
    draws = sample_prior(pfa_prior, seed, n_samples, n_states=n_states, n_letters=n_letters,
                         beta=beta)
    return xi_from_sample(draws["w"], n_states, n_letters)


# -- prediction and string sampling ------------------------------------------------------------

def predictive_log_prob(xi: np.ndarray, corpus: Corpus) -> np.ndarray:
    """Posterior predictive ``log (1/S) sum_s Pr(b | xi^(s))`` of every string (Eq. 6 with exact
    ``xi`` draws, not a plug-in). ``xi`` ``[..., Q, A, Q]`` (leading axes flattened). ``[n]``."""
    xi = np.asarray(xi, dtype=np.float64)
    xi = xi.reshape((-1,) + xi.shape[-3:])
    return log_mean_exp(forward_log_prob(*xi_to_pfa(xi), corpus), axis=0)


def sample_strings(xi: np.ndarray, rng: np.random.Generator, max_length: int = 10_000) -> Corpus:
    """One string from each automaton ``xi[s]`` ``[S, Q, A, Q]`` (start in state 0, stop on the
    end marker 0): with ``xi`` drawn from a prior, a sample of its prior predictive.

    Strings still running after ``max_length`` letters raise ``RuntimeError``.
    """
    xi = np.asarray(xi, dtype=np.float64)
    n_samples, n_states, n_symbols, _ = xi.shape
    cdf = np.cumsum(xi.reshape(n_samples, n_states, n_symbols * n_states), axis=-1)
    cdf /= cdf[..., -1:]
    state = np.zeros(n_samples, dtype=np.int64)
    running = np.ones(n_samples, dtype=bool)
    out: list[list[int]] = [[] for _ in range(n_samples)]
    rows = np.arange(n_samples)
    for _ in range(max_length + 1):
        idx = np.flatnonzero(running)
        if idx.size == 0:
            break
        u = rng.random(idx.size)
        k = (cdf[rows[idx], state[idx]] < u[:, None]).sum(axis=-1)
        k = np.minimum(k, n_symbols * n_states - 1)
        letter, nxt = np.divmod(k, n_states)
        for s, a in zip(idx[letter > 0], letter[letter > 0]):
            out[s].append(int(a) - 1)
        running[idx[letter == 0]] = False
        state[idx] = nxt
    if running.any():
        raise RuntimeError("a sampled string exceeds max_length; does the automaton stop?")
    return Corpus.from_strings(out, n_symbols - 1)
