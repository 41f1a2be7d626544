"""Numba kernels of the smoothed PDIA's emissions (``--method pdia-smoothed``): every state's
emission distribution backs off to one shared base ``pi0`` instead of the uniform one.

Model (Pfau, Bartlett & Wood 2010, "future directions": hierarchical smoothing of the
emission distributions; the hierarchical Dirichlet process of Teh, Jordan, Beal & Blei 2006
restricted to a finite alphabet):

    pi0 ~ Dir(beta0 / S, ..., beta0 / S),    pi_q ~ Dir(beta pi0)   (each state q),

``beta, beta0 ~ Gamma(1, 1)``. The ``pi_q`` are integrated out as in the PDIA (Eq. x:end with
the pseudo-counts ``beta pi0_s`` in place of ``beta / S``); ``pi0`` is part of the chain
state. The transitions, their prior and their moves are the PDIA's
(:mod:`bayesfa.samplers.pdia._pdfa_kernel`), which reads the emission likelihood off a 3-D ``lg``
(that module's docstring) and so needs no other change.

Chain state added to the PDIA's (``S`` symbols, ``T`` training tokens):

- ``lpi0`` float64 ``[S]``: ``log pi0`` (authoritative; drawn in log space, components may lie
  far below the smallest double), ``pi0`` float64 ``[S]`` = ``exp(lpi0)`` (may underflow to 0
  only for a symbol no state emits: then that symbol has predictive 0 until ``pi0`` moves).
- ``lg`` float64 ``[1, S + 1, T + 3]``: row ``s < S`` ``lgamma(a_s + n) - lgamma(a_s)``,
  ``a_s = beta pi0_s``; row ``S`` ``lgamma(beta) - lgamma(beta + n)``; last column the
  pseudo-counts ``a_s`` and ``beta``. Row ``s`` is filled for ``n <= lim[s]`` only
  (``lim`` int64 ``[S + 1]``: the number of ``s`` in the data, ``T`` for row ``S``; no count
  can exceed it), which makes a refill cost ``2 T`` lgamma calls instead of ``S T``.
  Invariant: it matches ``hyp[H_BETA]`` and ``pi0`` after every :func:`emission_moves`.
- ``ehyp`` float64 ``[1]``: ``beta0``.
- ``stats`` float64: accepted / proposed at ``off + 0..5`` for ``pi0`` (Gibbs: always
  accepted), ``beta``, ``beta0``.

Moves (one call of :func:`emission_moves` per sweep, after the PDIA's sweep, whose own
``beta`` move is switched off):

- ``pi0``: exact Gibbs step with auxiliary table counts -- the same step as the finite
  PDFA's ``mu`` (:func:`bayesfa.samplers.pdia._pdfa_kernel.move_mu`, Teh et al. 2006, Sect. 5.3)
  with the roles of states and symbols exchanged: ``c_qs`` customers of restaurant ``q``
  eating ``s``, concentration ``beta``, top mass ``beta0``.
- ``beta``: random-walk MH on ``log beta`` under Gamma(1, 1), target ``sum_q log DirMult(c_q |
  beta pi0)`` (lgamma calls on the nonzero counts).
- ``beta0``: random-walk MH on ``log beta0`` under Gamma(1, 1), target ``log Dir(pi0 |
  beta0 / S)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pdia._crf_kernel import H_ALPHA, H_BETA, H_GAMMA
from bayesfa.samplers.pdia._pdfa_kernel import log_dirichlet_variate, move_mu

ST_PI0, ST_BETA, ST_BETA0 = 0, 2, 4
N_STATS = 6


@njit(cache=True)
def fill_lg_base(lg, beta, pi0, lim):
    """``lg`` (module docstring) for ``beta`` and ``pi0``, row ``s`` up to ``n = lim[s]``; a
    symbol with ``pi0_s = 0`` gets ``0`` for ``n = 0`` and ``-inf`` beyond."""
    n_sym = pi0.shape[0]
    last = lg.shape[2] - 1
    for s in range(n_sym):
        a = beta * pi0[s]
        lg[0, s, last] = a
        top = min(lim[s] + 1, last)
        if a > 0.0:
            la = math.lgamma(a)
            for n in range(top):
                lg[0, s, n] = math.lgamma(a + n) - la
        else:
            lg[0, s, 0] = 0.0
            for n in range(1, top):
                lg[0, s, n] = -np.inf
    lb = math.lgamma(beta)
    for n in range(min(lim[n_sym] + 1, last)):
        lg[0, n_sym, n] = lb - math.lgamma(beta + n)
    lg[0, n_sym, last] = beta


@njit(cache=True)
def log_emission_beta(cnt, ctot, hi, beta, pi0):
    """``sum_q log DirMult(c_q | beta pi0)`` over the rows ``q < hi`` (Eq. x:end, base
    ``pi0``), by lgamma calls (the target of the ``beta`` move)."""
    out = 0.0
    for q in range(hi):
        if ctot[q] == 0:
            continue
        out += math.lgamma(beta) - math.lgamma(beta + ctot[q])
        for s in range(cnt.shape[1]):
            if cnt[q, s] > 0:
                a = beta * pi0[s]
                if a <= 0.0:
                    return -np.inf
                out += math.lgamma(a + cnt[q, s]) - math.lgamma(a)
    return out


@njit(cache=True)
def log_dir_base(lpi0, beta0):
    """``log Dir(pi0 | beta0 / S)`` from ``lpi0 = log pi0``."""
    n_sym = lpi0.shape[0]
    out = math.lgamma(beta0) - n_sym * math.lgamma(beta0 / n_sym)
    for s in range(n_sym):
        out += (beta0 / n_sym - 1.0) * lpi0[s]
    return out


@njit(cache=True)
def _log_rw(old, step, rng):
    """A log-scale random-walk proposal and its log Jacobian."""
    eps = step * rng.standard_normal()
    return old * math.exp(eps), eps


@njit(cache=True)
def emission_moves(cnt, ctot, hi, hyp, ehyp, pi0, lpi0, lg, lim, n_pi0, sample_beta,
                   sample_beta0, step, variant, rng, stats, off):
    """``n_pi0`` Gibbs steps on ``pi0``, then MH on ``beta`` (``hyp[H_BETA]``) and ``beta0``
    (``ehyp[0]``) if sampled, then ``lg`` refilled (module docstring). ``variant`` 1 (a
    validation mutant) draws ``pi0 ~ Dir(beta0 / S + sum_q c_q)``, the emission counts in
    place of the table counts."""
    h = np.zeros(5)
    scratch = np.zeros(8)
    nj = np.zeros(1, dtype=np.int32)
    n_sym = pi0.shape[0]
    for _ in range(n_pi0):
        if variant == 1:
            a = np.full(n_sym, ehyp[0] / n_sym)
            for q in range(hi):
                for s in range(n_sym):
                    a[s] += cnt[q, s]
            log_dirichlet_variate(a, rng, lpi0)
            for s in range(n_sym):
                pi0[s] = math.exp(lpi0[s])
        else:
            h[H_ALPHA] = hyp[H_BETA]
            h[H_GAMMA] = ehyp[0]
            # move_mu's restaurants are the columns of v: here the states (rows of cnt)
            move_mu(pi0, lpi0, cnt[:hi].T, nj, h, np.int64(0), rng, scratch, np.int64(0))
        stats[off + ST_PI0] += 1
        stats[off + ST_PI0 + 1] += 1
    if sample_beta:
        old = hyp[H_BETA]
        new, jac = _log_rw(old, step, rng)
        stats[off + ST_BETA + 1] += 1
        if 1e-300 < new < 1e300:
            cur = -old + log_emission_beta(cnt, ctot, hi, old, pi0)
            prop = -new + log_emission_beta(cnt, ctot, hi, new, pi0)
            if math.log(rng.random()) < prop - cur + jac:
                hyp[H_BETA] = new
                stats[off + ST_BETA] += 1
    if sample_beta0:
        old = ehyp[0]
        new, jac = _log_rw(old, step, rng)
        stats[off + ST_BETA0 + 1] += 1
        if 1e-300 < new < 1e300:
            cur = -old + log_dir_base(lpi0, old)
            prop = -new + log_dir_base(lpi0, new)
            if math.log(rng.random()) < prop - cur + jac:
                ehyp[0] = new
                stats[off + ST_BETA0] += 1
    fill_lg_base(lg, hyp[H_BETA], pi0, lim)
