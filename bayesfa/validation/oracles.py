"""The ``recorded`` check of the NumPyro oracles (issue 39, item 1): the potential energy each
draw's trace records, recomputed from the draw by plain numpy/scipy written here.

What the oracles record per draw (:func:`bayesfa.models.pfa.run_mcmc`, the fit's ``trace``,
``[chain, draw]``):

``oracle-pfa``, ``oracle-hmm`` (NUTS, ``bayesfa.models.pfa.EXTRA_FIELDS``)
    ``potential_energy``, ``accept_prob``, ``diverging``, ``num_steps``. NumPyro's potential
    energy is minus the log joint *in its unconstrained space*: each Dirichlet draw ``y``
    (``K`` components) is ``T(x)`` for ``x`` in ``R^(K-1)``, ``T`` numpyro's
    ``StickBreakingTransform`` (``biject_to(constraints.simplex)``), so
    ``U(x) = -[log p(T(x), data) + log |det J_T(x)|]``. The draw kept (``w`` for the PFA,
    ``eta`` and ``theta`` for the HMM) is ``T(x)``, and the fit keeps it as ``xi``
    ``[S, N+1, A, N+1]`` (chain-major): ``w`` is read back from ``xi`` cell by cell (Eq. 2's
    layout), ``eta[i, a] = sum_j xi[i, a, j]`` (``eta[i, 0] = xi[i, 0, 0]``) and
    ``theta[i, j] = sum_{a >= 1} xi[i, a, j] / sum_{a >= 1} eta[i, a]``.
``oracle-pdfa`` (``DiscreteHMCGibbs``, ``bayesfa.models.pdfa.GIBBS_EXTRA_FIELDS``)
    ``potential_energy`` (``block_states.0``: the discrete block's, refreshed after NUTS moved
    ``mu``: minus the log joint at the draw's constrained ``delta`` and ``mu``, every other
    site conditioned, so no Jacobian), ``diverging`` and ``accept_prob`` (the NUTS block's);
    with ``--hyperpriors`` also ``alpha``, ``beta``, ``gamma``, the draws themselves. The fit
    keeps ``delta`` and ``mu`` per draw (``mu`` for this check).

**The log-determinant of the stick-breaking Jacobian** in closed form. numpyro's
``StickBreakingTransform`` (numpyro/distributions/transforms.py, read at numpyro 0.22.0)
maps ``x`` to ``z_k = sigmoid(x_k - log(K - k))`` (``k = 0..K-2``), the fraction of the
stick left that component ``k`` takes: ``y_k = z_k prod_{l<k} (1 - z_l)`` and
``y_{K-1} = prod_{l<K-1} (1 - z_l)``. The Jacobian is triangular with diagonal
``dy_k/dx_k = z_k (1 - z_k) prod_{l<k} (1 - z_l) = y_k (1 - z_k)`` (numpyro's
``log_abs_det_jacobian`` sums ``log y_k + log(1 - z_k)``, with ``log(1 - z) =
log_sigmoid(x) - x``; Stan's reference manual, "Unit simplex", the same). The product
``prod_{k<K-1} (1 - z_k)`` is the stick left at the end, ``y_{K-1}``, so
``log |det J| = sum_{k=0}^{K-1} log y_k``: the sum of the logs of *every* component
(:func:`stick_breaking_log_det`), whatever the shift ``log(K - k)``.

**Recomputed** (:func:`pfa_potential_energy`, :func:`hmm_potential_energy`,
:func:`bayesfa.validation.pdia.oracle.pdfa_potential_energy`, beside that oracle's exact Gibbs
references), never calling the model, numpyro or JAX:

- the priors' log densities, ``log Dir(y; c) = lgamma(sum c) - sum lgamma(c) + sum (c - 1)
  log y`` (scipy's ``gammaln``): Eq. 2's ``c = (N beta, beta, ..., beta)`` per state for the
  PFA; ``Dir(alpha)`` over the ``A`` symbols and ``Dir(beta)`` over the ``N`` next states for
  the HMM (no ``theta`` when ``N = 1``); ``Dir(gamma / |Q|)`` for the PDFA's ``mu``;
- the likelihood: the PFA and HMM by a forward algorithm in log space over every distinct
  string of the training data (:func:`forward_log_lik`, written here, numpy and scipy's
  ``logsumexp``), weighted by multiplicity; the PDFA's ``phi`` and ``pi`` integrated out,
  by :func:`bayesfa.validation.pdia.oracle.log_target` (the Pólya urns of each column given
  ``mu`` and the Dirichlet-multinomials of the emission counts along ``delta``'s paths,
  counted by a plain loop; written apart from :mod:`bayesfa.models.pdfa`) plus its constants
  ``L (lgamma(alpha) - lgamma(alpha + |Q|))`` (the uniform ``Categorical`` of each entry and
  the model's ``+ |Q| L log |Q|`` cancel); with ``--hyperpriors`` ``- alpha - beta - gamma``
  (Gamma(1, 1));
- the Jacobian (PFA, HMM only): :func:`stick_breaking_log_det` of every Dirichlet draw.

**Tolerance** :data:`TOLERANCE` = 1e-9 relative to ``max(1, |U|)``, plus for the NUTS
oracles a per-draw allowance for the draw's own rounding. JAX runs the oracles in float64
(``jax_enable_x64``, set by :mod:`bayesfa.models.pfa` on import), so both sides are float64
sums of a few hundred terms of size at most ``|U|`` in a different order: below
``1e-13 |U|``. The allowance: numpyro evaluates the Jacobian's ``log(1 - z_k)`` from ``x``
(exactly), but the draw's last component ``y_{K-1} = prod (1 - z_l)`` from the rounded
``z_l``, so when a component takes nearly all of the stick left (``z_l`` near 1, e.g. a
component near 1e-14 ahead of the last) the kept ``y_{K-1}`` is off by a relative
``~ u / (1 - z_l)``, and the sum-of-logs closed form above, read from the kept ``y``, differs
from the recorded energy by exactly ``log(y_{K-1} / y*_{K-1})`` (the Dirichlet and likelihood
terms use the kept ``y`` on both sides). :func:`stick_rounding_bound` bounds it (twice the
first-order bound, ``u = 2^-53``); it is about 1e-15 for most draws. Measured on the ``tiny``
toy (``oracle-pfa``, 2 chains x 200 draws, seed 0): 396 draws within 1e-12 of the record,
4 with a near-1e-14 component off by 8e-9 to 2e-6, each at most 0.2 of its allowance (without
it they fail 1e-9); at ``validate``'s budget (4 chains x 1000 draws, seed 0) ``oracle-pfa``
needs no allowance (largest 6e-10, median 2e-14), ``oracle-hmm`` fails 1e-9 on 6 of 4000
draws without it (by up to 8.1e-4, largest allowance 3.6e-3) and stays at most 0.23 of it. A wrong term is at least one prior or likelihood term of one draw, orders
of magnitude above both (an offset of 1e-6 on one well-conditioned draw's record is caught,
``tests/test_oracle_recorded.py``). ``oracle-pdfa``'s energy has no Jacobian (every site
conditioned, constrained ``mu``): 1e-9 alone.

**Not recomputable** (:class:`~bayesfa.validation.recorded.NotRecomputable`, each row says
why; shape ``[chain, draw]`` and range checked): NUTS's ``accept_prob`` (the mean Metropolis
acceptance over the trajectory's candidate states; in ``[0, 1]``), ``diverging`` (a
trajectory's energy error beyond numpyro's ``max_delta_energy``; 0 or 1) and ``num_steps``
(leapfrog steps of the trajectory; in ``[1, 2^10 - 1]``, numpyro's default
``max_tree_depth`` of 10, which :func:`bayesfa.models.pfa._kernel` does not change): each
describes the trajectory that led to the draw, of which only its end is kept. The PDFA's
``alpha``, ``beta``, ``gamma`` under ``--hyperpriors`` are the draws themselves, the state
the potential energy is recomputed from (positive, finite).

Tests: ``tests/test_oracle_recorded.py`` (the closed forms against numpyro's own transform and
potential on hand-made draws; a real fit of each oracle passes, and fails with one draw's
record moved by 1e-6).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus

#: Relative tolerance (to ``max(1, |U|)``) of the recomputed potential energy (module docstring).
TOLERANCE = 1e-9
#: numpyro NUTS's default ``max_tree_depth`` (the oracles do not set it): at most
#: ``2^10 - 1`` leapfrog steps per draw.
MAX_TREE_DEPTH = 10


# -- the reference (numpy/scipy only) -------------------------------------------------------------

def log_dirichlet(y: np.ndarray, conc: np.ndarray | float) -> np.ndarray:
    """``log Dir(y; conc)`` over the last axis of ``y`` ``[..., K]`` (``conc`` ``[K]`` or a
    scalar for every component)."""
    y = np.asarray(y, dtype=np.float64)
    conc = np.broadcast_to(np.asarray(conc, dtype=np.float64), y.shape[-1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        return gammaln(conc.sum()) - gammaln(conc).sum() + ((conc - 1.0) * np.log(y)).sum(-1)


def stick_breaking_log_det(y: np.ndarray) -> np.ndarray:
    """``log |det J|`` of numpyro's stick-breaking transform at the simplex point ``y``
    ``[..., K]``: ``sum_k log y_k`` over all ``K`` components (module docstring)."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(y, dtype=np.float64)).sum(-1)


def stick_rounding_bound(y: np.ndarray) -> np.ndarray:
    """A bound ``[...]`` on ``|log y_{K-1} - log y*_{K-1}|``, the relative rounding of the last
    component of a stick-breaking draw ``y`` ``[..., K]`` as numpyro computes it
    (``y*``: exact for the draw's unconstrained ``x``; module docstring, "Tolerance"):
    ``sum_{l < K-1} (4 u R_l / R_{l+1} + 2 u)`` with ``u = 2^-53`` and ``R_l = sum_{m >= l} y_m``
    the stick left before component ``l`` (``1 - z_l = R_{l+1} / R_l``)."""
    u = np.finfo(np.float64).eps / 2
    y = np.asarray(y, dtype=np.float64)
    left = np.cumsum(y[..., ::-1], axis=-1)[..., ::-1]          # R_l
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = left[..., :-1] / left[..., 1:]
    return (4 * u * ratio + 2 * u).sum(-1)


def distinct_strings(corpus: Corpus) -> list[tuple[tuple[int, ...], int]]:
    """``[(string, multiplicity)]`` of ``corpus`` (0-based letters), in first-seen order."""
    seen: dict[tuple[int, ...], int] = {}
    for s in range(corpus.n_strings):
        key = tuple(int(a) for a in corpus.string(s))
        seen[key] = seen.get(key, 0) + 1
    return list(seen.items())


def forward_log_lik(xi: np.ndarray, corpus: Corpus) -> np.ndarray:
    """``sum_strings log Pr(x | xi_s)`` ``[S]`` for automata ``xi`` ``[S, Q, A, Q]`` (PFA form:
    symbol 0 the end marker back to state 0, letter ``a`` symbol ``a + 1``), every path summed
    out by the forward recursion in log space from state 0."""
    xi = np.asarray(xi, dtype=np.float64)
    n_q = xi.shape[1]
    with np.errstate(divide="ignore"):
        log_xi = np.log(xi)
    total = np.zeros(xi.shape[0])
    for string, mult in distinct_strings(corpus):
        f = np.full((xi.shape[0], n_q), -np.inf)
        f[:, 0] = 0.0
        for a in string:
            f = logsumexp(f[:, :, None] + log_xi[:, :, a + 1, :], axis=1)
        total += mult * logsumexp(f + log_xi[:, :, 0, 0], axis=1)
    return total


def pfa_parts(xi: np.ndarray) -> np.ndarray:
    """Eq. 2's Dirichlet draws ``w`` ``[S, N+1, 1 + (A-1) N]`` read back from ``xi``
    ``[S, N+1, A, N+1]``: ``w[i, 0] = xi[i, 0, 0]``, then ``xi[i, a, j]`` for ``a, j >= 1``."""
    xi = np.asarray(xi, dtype=np.float64)
    n = xi.shape[1] - 1
    return np.concatenate([xi[:, :, 0, :1], xi[:, :, 1:, 1:].reshape(xi.shape[0], n + 1, -1)],
                          axis=-1)


def rounding_allowance(model: str, xi: np.ndarray) -> np.ndarray:
    """Per draw ``[S]``: :func:`stick_rounding_bound` summed over the draw's Dirichlet draws
    (``w`` of ``"pfa"``; ``eta`` and, with more than one state, ``theta`` of ``"hmm"``)."""
    if model == "pfa":
        return stick_rounding_bound(pfa_parts(xi)).sum(-1)
    eta, theta = hmm_parts(xi)
    out = stick_rounding_bound(eta).sum(-1)
    return out + (stick_rounding_bound(theta).sum(-1) if theta.shape[-1] > 1 else 0.0)


def pfa_potential_energy(xi: np.ndarray, corpus: Corpus, beta: float) -> np.ndarray:
    """NUTS's potential energy ``[S]`` of ``oracle-pfa`` at draws ``xi`` ``[S, N+1, A, N+1]``:
    minus (Eq. 2's Dirichlet per state + the stick-breaking Jacobian + the log likelihood)."""
    xi = np.asarray(xi, dtype=np.float64)
    n = xi.shape[1] - 1
    w = pfa_parts(xi)
    conc = np.full(w.shape[-1], float(beta))
    conc[0] = n * beta                                            # the end transition (Eq. 2)
    log_prior = log_dirichlet(w, conc).sum(-1)
    return -(log_prior + stick_breaking_log_det(w).sum(-1) + forward_log_lik(xi, corpus))


def hmm_parts(xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(eta [S, N+1, A], theta [S, N+1, N])`` read back from ``xi = eta theta``."""
    xi = np.asarray(xi, dtype=np.float64)
    eta = xi.sum(-1)                                              # [S, N+1, A]
    theta = xi[:, :, 1:, 1:].sum(2) / eta[:, :, 1:].sum(-1, keepdims=True)
    return eta, theta


def hmm_potential_energy(xi: np.ndarray, corpus: Corpus, alpha: float,
                         beta: float) -> np.ndarray:
    """NUTS's potential energy ``[S]`` of ``oracle-hmm`` at draws ``xi``: minus (``Dir(alpha)``
    of each ``eta_i`` and ``Dir(beta)`` of each ``theta_i``, their Jacobians, the log
    likelihood); with one state ``theta`` is the constant 1 (no site, no term)."""
    eta, theta = hmm_parts(xi)
    log_p = log_dirichlet(eta, alpha).sum(-1) + stick_breaking_log_det(eta).sum(-1)
    if theta.shape[-1] > 1:
        log_p = log_p + log_dirichlet(theta, beta).sum(-1) + stick_breaking_log_det(theta).sum(-1)
    return -(log_p + forward_log_lik(xi, corpus))


# -- the recorded check ----------------------------------------------------------------------------

def _nuts_statistics(trace: dict, shape: tuple, prefix: str = "") -> dict[str, Any]:
    """NUTS's statistics in ``trace`` as :class:`NotRecomputable` (module docstring)."""
    from bayesfa.validation.recorded import NotRecomputable

    why = {"accept_prob": (0.0, 1.0, "NUTS's mean acceptance probability over the candidate "
                                     "states of the trajectory that led to the draw"),
           "diverging": (0.0, 1.0, "NUTS's divergence flag of the trajectory that led to the "
                                   "draw (energy error beyond max_delta_energy)"),
           "num_steps": (1.0, 2.0 ** MAX_TREE_DEPTH - 1, "NUTS's leapfrog steps of the "
                         f"trajectory that led to the draw (max_tree_depth {MAX_TREE_DEPTH})")}
    out = {}
    for name, (low, high, text) in why.items():
        if name in trace:
            out[name] = NotRecomputable(np.asarray(trace[name], dtype=np.float64), shape, low,
                                        high, prefix + text + "; only the trajectory's end, "
                                        "the draw, is kept")
    return out


def _chain_draw(x: np.ndarray, shape: tuple) -> np.ndarray:
    """Chain-major draws ``[C * D, ...]`` as ``[C, D]`` of per-draw values ``[C * D]``."""
    return np.asarray(x).reshape(shape)


def recompute_nuts(model: str, arrays: dict, trace: dict, options: dict, train: Corpus):
    """``(recomputed, extra_rows)`` of ``oracle-pfa`` (``model="pfa"``) or ``oracle-hmm``
    (``"hmm"``): the potential energy from each draw's ``xi``, NUTS's statistics by range."""
    from bayesfa.validation.recorded import Recomputed

    pe = np.asarray(trace["potential_energy"], dtype=np.float64)
    shape = pe.shape
    xi = np.asarray(arrays["xi"], dtype=np.float64)
    if model == "pfa":
        values = pfa_potential_energy(xi, train, options["beta"])
        how = ("-[Eq. 2's Dirichlet log densities (end transition N beta) + the stick-breaking "
               "log|det J| (sum of log w) + the forward log likelihood], numpy/scipy from each "
               "draw's xi (bayesfa.validation.oracles)")
    else:
        values = hmm_potential_energy(xi, train, options["alpha"], options["beta"])
        how = ("-[log Dir(eta; alpha) + log Dir(theta; beta) + their stick-breaking log|det J| "
               "+ the forward log likelihood], numpy/scipy from each draw's xi (eta, theta read "
               "back; bayesfa.validation.oracles)")
    allowance = _chain_draw(rounding_allowance(model, xi), shape)
    how += (f"; plus per draw the stick-breaking rounding bound (largest "
            f"{float(allowance.max(initial=0.0)):.3g}; oracles.stick_rounding_bound)")
    out = {"potential_energy": Recomputed(_chain_draw(values, shape), pe, TOLERANCE, how,
                                          atol=allowance)}
    out.update(_nuts_statistics(trace, shape))
    return out, []


class OracleNUTSSpec:
    """Validation spec of ``oracle-pfa`` / ``oracle-hmm`` (``model`` ``"pfa"`` / ``"hmm"``): the
    ``recorded`` check; their predictive reference is the harness's own (by name)."""

    def __init__(self, model: str):
        self.model = model

    def check_names(self) -> list[str]:
        return ["predictive", "recorded"]

    def recompute_trace(self, arrays, trace, options, train):
        return recompute_nuts(self.model, arrays, trace, options, train)


ORACLE_PFA = OracleNUTSSpec("pfa")
ORACLE_HMM = OracleNUTSSpec("hmm")
