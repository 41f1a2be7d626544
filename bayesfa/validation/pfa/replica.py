"""Exact checks of CGS-PFA's replica exchange (``--replicas``, :mod:`bayesfa.samplers.pfa._replica_kernel`).

Both run on :data:`TOY` (the ``tiny`` toy: 7 strings, 11 letters, ``N = 2``: 2,048 paths, whose
posterior :class:`~bayesfa.validation.pfa.reference.PathPosterior` enumerates) with :data:`LADDER`
(R = 3). The tempered posteriors ``pi_b(z) ∝ Pr(alpha, z)^b`` are computed here from the
enumerated log joints of Eq. 4 (Shibata & Yoshinaka 2013), never from the sampler.

:func:`swap_invariance` -- (a) detailed balance of the swap: ``n_draws`` independent triples
    of paths, slot ``r``'s drawn exactly from ``pi_{b_r}`` (the product of the tempered
    posteriors, the joint over replicas), then one even and one odd swap round (the move's
    numba swap, non-reversible order); each slot's paths against its ``pi_{b_r}``: Pearson
    chi-square on the labelled paths and on the count vectors ``C_iaj`` (classes). A swap
    with the exact acceptance leaves the product invariant.

:func:`replica_chain` -- (b) ``n_chains`` independent replica-exchange chains through the
    front's own chain (:func:`bayesfa.samplers.pfa.cgs_pfa._run_chain`, adaptive ladder from
    1 to :data:`MIN_B` during :data:`BURN_IN` sweeps, one draw :data:`PERIOD` sweeps later),
    from uniformly random paths; the recorded (``b = 1``) paths against the exact posterior
    ``Pr(z | alpha)`` (chi-square as above), and each chain's ladder at the end of burn-in
    equal to its ladder at the end (the adaptation is frozen after burn-in: a row that is
    exact, no error rate). The burn-in and period are long enough for a ladder update to
    fall after burn-in (at the 60th swap round), so that adaptation there would show.

:func:`replica_blocked_chain` -- (c) ``--replicas`` with ``--blocked-every``: ``n_chains``
    independent sets of replicas at the fixed :data:`LADDER` (the driver,
    :class:`~bayesfa.samplers.pfa._replica_kernel.Replicas`, burn-in 0 so the ladder never
    adapts), a swap round after every sweep and a blocked whole-string move of slot 0 (``b =
    1``) after every :data:`BLOCKED_EVERY`; after ``BURN_IN + PERIOD`` sweeps from random
    paths, *every* slot's paths against its tempered posterior ``pi_{b_r}``: the product is
    the target, so a move that leaves a hot replica's law (the mutant
    ``rex-blocked-every-slot``, the move on every replica) shows there even where the b = 1
    chain, mixing fast on a toy, hides it. Measured at 2,000 chains (2026-12-02): the move
    passes on seeds 0-4 (smallest p 0.016-0.38 against 1e-3 / 6); the mutant fails on each (slot
    1, b = 0.6: p 1e-14 to 1e-26; catch margin 3.7-6.1). At 1,000 chains every hot slot's cells
    pool into one (expected counts below 5 over 2,048 paths) and the mutant passed on all five.

Each check's false-alarm rate is ``alpha`` (Bonferroni over its chi-square rows), with fixed
seeds. The mutants (:data:`~bayesfa.samplers.pfa._replica_kernel.MUTATIONS`) must fail
them; what each was seen to do on seeds 0-4 is recorded in ``tests/test_replica.py``.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from bayesfa.samplers.pfa import _replica_kernel as rex
from bayesfa.validation.checks import Check, chi2_row
from bayesfa.validation.pfa.reference import path_codes, path_posterior
from bayesfa.validation.toys import get_toy

ALPHA = 1e-3
TOY = get_toy("tiny")
#: The inverse temperatures of the swap check (slot order).
LADDER = (1.0, 0.6, 0.3)
#: The chain check's hottest replica, burn-in and period (sweeps).
MIN_B = 0.3
BURN_IN = 40
PERIOD = 24
#: The combined check's blocked move: after every second sweep of the chain.
BLOCKED_EVERY = 2
_COLUMNS = ["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"]


def tempered(pp, b: float) -> tuple[np.ndarray, np.ndarray]:
    """``(pi_b over the paths [P], pi_b over the count classes [U])`` of the exact posterior
    ``pp``: ``pi_b(z) ∝ exp(b log Pr(alpha, z))``."""
    lj = b * pp.log_joint
    prob = np.exp(lj - lj.max())
    prob /= prob.sum()
    return prob, np.bincount(pp.classes, weights=prob, minlength=pp.class_prob.size)


def _slot_rows(pp, codes, b: float, each: float, label: str) -> list[dict]:
    prob, class_prob = tempered(pp, b)
    return [chi2_row(f"{label}: labelled paths vs pi_{b:g}",
                     np.bincount(codes, minlength=prob.size), prob, each),
            chi2_row(f"{label}: count vectors vs pi_{b:g}",
                     np.bincount(pp.classes[codes], minlength=class_prob.size), class_prob, each)]


def _label(variant):
    return "cgs-pfa replica exchange" if variant is None else f"mutant replica exchange {variant!r}"


@njit
def _swap_rounds(swap, b, ell, rng, codes):
    """Per row ``m`` of ``ell`` and ``codes`` ``[M, R]``: an even then an odd swap round on a
    fresh copy of ``b``; ``codes[m]`` permuted as the states move."""
    n = b.shape[0]
    tried = np.zeros(n - 1, np.int64)
    accepted = np.zeros(n - 1, np.int64)
    for m in range(ell.shape[0]):
        bm = b.copy()
        for parity in range(2):
            order = np.arange(n)
            swap(parity, bm, ell[m], order, rng, tried, accepted)
            ell[m] = ell[m][order]
            codes[m] = codes[m][order]
    return accepted


def swap_invariance(variant: str | None = None, *, n_draws: int = 200_000, seed: int = 0,
                    alpha: float = ALPHA) -> Check:
    """(a): exact draws of the product of tempered posteriors on :data:`TOY`, an even and an
    odd swap round each, every slot's paths against its tempered posterior."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    b = np.array(LADDER)
    codes = np.stack([rng.choice(pp.prob.size, size=n_draws, p=tempered(pp, x)[0]) for x in b], axis=1)
    ell = pp.log_joint[codes]
    accepted = _swap_rounds(rex.build_swap(variant), b, ell, rng, codes)
    each = alpha / (2 * b.size)
    rows = [row for r in range(b.size)
            for row in _slot_rows(pp, codes[:, r], b[r], each, f"slot {r} after the swaps")]
    return Check(
        name="replica-swap-invariance", passed=all(r["pass"] for r in rows),
        description=(f"{_label(variant)}: {n_draws} exact draws of prod_r Pr(z_r | alpha)^b_r "
                     f"(b = {', '.join(f'{x:g}' for x in LADDER)}) on toy {TOY.name!r}, an even "
                     f"and an odd swap round each, every slot vs its tempered posterior "
                     f"(Eq. 4 enumerated; Pearson chi-square)"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"toy": TOY.name, "n_draws": n_draws, "ladder": list(LADDER),
                 "swap_rate": (accepted / n_draws).tolist(), "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


def run_chains(n_chains: int, seed: int, variant: str | None = None, replicas: int = len(LADDER),
               blocked_every: int = 0):
    """The recorded paths ``[n_chains, T + 1]`` and the stats of ``n_chains`` replica-exchange
    chains of the front (:func:`~bayesfa.samplers.pfa.cgs_pfa._run_chain`, one draw each,
    chain ``k`` seeded by ``SeedSequence(seed).spawn(n_chains)[k]``; ``blocked_every``: its
    ``--blocked-every``)."""
    from bayesfa.samplers.pfa.cgs_pfa import _run_chain

    tokens, n_symbols = TOY.train.tokens, TOY.train.alphabet_size + 1
    ends = np.empty((n_chains, tokens.size + 1), dtype=np.int32)
    stats = []
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(n_chains)):
        out = _run_chain(tokens, n_symbols, TOY.n_states, TOY.beta, BURN_IN, PERIOD, 1, child,
                         replicas=replicas, replica_min_b=MIN_B, replica_mutation=variant,
                         blocked_every=blocked_every)
        ends[k] = out[5]
        stats.append(out[9])
    return ends, stats


def replica_chain(variant: str | None = None, *, n_chains: int = 2_000, seed: int = 0,
                  alpha: float = ALPHA) -> Check:
    """(b): ``n_chains`` replica-exchange chains on :data:`TOY` from uniformly random paths,
    the recorded paths against ``Pr(z | alpha)``, and the ladders frozen after burn-in."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    ends, stats = run_chains(n_chains, seed, variant)
    rows = _slot_rows(pp, path_codes(ends, TOY.train.tokens, TOY.n_states), 1.0, alpha / 2,
                      "recorded draws (b = 1)")
    moved = sum(s["ladder"] != s["ladder_at_burn_in"] for s in stats)
    rows.append({"test": f"ladder frozen after burn-in ({moved} of {n_chains} chains changed it)",
                 "cells": n_chains, "chi2": None, "dof": None, "p_value": None, "threshold": None,
                 # exact: its margin (issue 39 item 4) is inf when any ladder moved
                 "error": moved, "tolerance": 0, "pass": moved == 0})
    rates = np.array([s["swap_rate"] for s in stats])
    return Check(
        name="replica-chain", passed=all(r["pass"] for r in rows),
        description=(f"{_label(variant)}: {n_chains} chains of {len(LADDER)} replicas on toy "
                     f"{TOY.name!r} (ladder adapted from 1..{MIN_B:g} over {BURN_IN} burn-in "
                     f"sweeps), one b = 1 draw {PERIOD} sweeps later each, vs Pr(z | alpha) "
                     f"(Eq. 4 enumerated; Pearson chi-square), and the ladder frozen after burn-in"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"toy": TOY.name, "n_chains": n_chains, "burn_in": BURN_IN, "period": PERIOD,
                 "mean_swap_rate": np.nanmean(rates, axis=0).tolist(),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the 2 chi-square tests; the "
               f"ladder row is exact)"])


def run_fixed_ladder(n_chains: int, seed: int, variant: str | None = None,
                     blocked_every: int = BLOCKED_EVERY) -> np.ndarray:
    """Every slot's path ``[R, n_chains, T + 1]`` after ``BURN_IN + PERIOD`` sweeps of
    ``n_chains`` independent :class:`~bayesfa.samplers.pfa._replica_kernel.Replicas` on
    :data:`TOY` at the fixed ladder :data:`LADDER` (no adaptation: its burn-in is 0), every slot
    from a uniformly random path, a swap round after every sweep and, with ``blocked_every``, a
    blocked move after every ``blocked_every``-th (chain ``k`` seeded by
    ``SeedSequence(seed).spawn(n_chains)[k]``)."""
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
    from bayesfa.samplers.pfa.cgs_pfa import new_counts

    tokens, n_symbols = TOY.train.tokens, TOY.train.alphabet_size + 1
    positions = free_positions(tokens)
    ends = None
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(n_chains)):
        rng = np.random.default_rng(child)
        states = []
        for _ in LADDER:
            z = random_path(tokens, TOY.n_states, rng)
            counts = new_counts(TOY.n_states, n_symbols)
            gibbs.fill_counts(tokens, z, *counts, float(TOY.beta))
            states.append((z, *counts))
        chain = rex.Replicas(tokens, positions, states, TOY.beta, rng, 0, 1, MIN_B, variant,
                             blocked_every)
        chain.b = np.array(LADDER, dtype=np.float64)
        chain.sweeps(BURN_IN + PERIOD)
        if ends is None:
            ends = np.empty((len(LADDER), n_chains, states[0][0].size), dtype=np.int32)
        for r, st in enumerate(chain.states):
            ends[r, k] = st[0]
    return ends


def replica_blocked_chain(variant: str | None = None, *, n_chains: int = 2_000, seed: int = 0,
                          alpha: float = ALPHA) -> Check:
    """(c): ``n_chains`` replica-exchange chains at the fixed :data:`LADDER` with a blocked move
    of slot 0 after every :data:`BLOCKED_EVERY` sweeps (:func:`run_fixed_ladder`); each slot's
    paths against its tempered posterior ``pi_b`` (the product over replicas is the target)."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    ends = run_fixed_ladder(n_chains, seed, variant)
    rows = []
    for r, b in enumerate(LADDER):
        rows += _slot_rows(pp, path_codes(ends[r], TOY.train.tokens, TOY.n_states), b,
                           alpha / (2 * len(LADDER)), f"slot {r} (b = {b:g})")
    return Check(
        name="replica-blocked-chain", passed=all(r["pass"] for r in rows),
        description=(f"{_label(variant)}: {n_chains} chains of {len(LADDER)} replicas on toy "
                     f"{TOY.name!r} at the fixed ladder {LADDER}, a swap round after every sweep "
                     f"and a blocked move of the b = 1 replica after every {BLOCKED_EVERY} "
                     f"(--replicas with --blocked-every), {BURN_IN + PERIOD} sweeps from random "
                     f"paths; each slot's paths vs its tempered posterior (Eq. 4 enumerated; "
                     f"Pearson chi-square)"),
        alpha=alpha, columns=_COLUMNS, rows=rows,
        summary={"toy": TOY.name, "n_chains": n_chains, "sweeps": BURN_IN + PERIOD,
                 "blocked_every": BLOCKED_EVERY, "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


#: The names of :func:`replica_checks`'s checks, in order (``bayesfa validate --list``).
CHECK_NAMES = ("replica-swap-invariance", "replica-chain", "replica-blocked-chain")


def replica_checks(variant: str | None = None, *, seed: int = 0, alpha: float = ALPHA) -> list[Check]:
    """The replica-exchange checks ``bayesfa validate cgs-pfa`` runs (CI settings)."""
    return [swap_invariance(variant, seed=seed, alpha=alpha), replica_chain(variant, seed=seed, alpha=alpha),
            replica_blocked_chain(variant, seed=seed, alpha=alpha)]
