"""Deliberately wrong CGS-PFA kernels, to prove that the validation suite has power.

:func:`sweep_positions_variant` is a copy of
:func:`bayesfa.samplers._cgs_pfa_kernel.sweep_positions` with two switches; with both on it
is the real kernel (the tests check that it reproduces the real one draw for draw from the
same uniforms), and each mutant turns one off:

``no-correction``
    drops the ``delta((z_{t-1}, a_{t-1}, k), (k, a_t, z_{t+1}))`` term of Eq. 9 -- the
    correction for a self-loop ``k -> k`` read twice with the same letter, so runs like
    ``aaa`` staying in one state are under-weighted;
``end-beta``
    uses ``beta`` instead of ``N beta`` as the prior weight of the end transition
    ``(k, 0, 0)`` in Eq. 9 (case ``a_t = 0``), i.e. samples under a different prior than Eq. 2.

Each mutant is also a method (same interface as :mod:`bayesfa.methods`) named
``cgs-pfa:mutant-<name>``, whose ``fit`` runs the mutant sweeps on CPU like ``cgs-pfa`` and
whose ``predict_log_prob`` is that of ``cgs-pfa``, so every check of
:mod:`bayesfa.validation.harness` runs on it unchanged. :class:`Kernel` gives the checks of
:mod:`bayesfa.validation.kernel_tests` one interface to the production kernel and the copies.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus
from bayesfa.methods import FitResult, check_schedule

MUTANTS: dict[str, dict[str, bool]] = {
    "no-correction": {"correction": False, "end_n_beta": True},
    "end-beta": {"correction": True, "end_n_beta": False},
}
# Not a mutant: the correct sweep through the same code (to test the copy and the driver).
VARIANTS = {**MUTANTS, "control": {"correction": True, "end_n_beta": True}}
PREFIX = "cgs-pfa:mutant-"


# -- the copied kernel (own, simple state layout) ----------------------------------------------
#
# State: c int32 [N+1, A, N+1] (C_iaj), ct int32 [A, N+1, N+1] (ct[a, j, i] = C_iaj),
# ci int32 [N+1] (C_i), recip float32 [N+1] (1 / (C_i + N A beta)). Independent of the
# production kernel's layout, which is free to change for speed.

@njit(cache=True)
def fill_counts(tokens, z, c, ct, ci, recip, beta):
    """Recompute the state from ``tokens`` and ``z`` (Definition 2)."""
    n_states = c.shape[0] - 1
    n_symbols = c.shape[1]
    c[:] = 0
    ct[:] = 0
    ci[:] = 0
    for t in range(tokens.shape[0]):
        i = z[t]
        a = tokens[t]
        j = z[t + 1]
        c[i, a, j] += 1
        ct[a, j, i] += 1
        ci[i] += 1
    nab = n_states * n_symbols * beta
    for i in range(n_states + 1):
        recip[i] = 1.0 / (ci[i] + nab)


@njit(cache=True)
def sweep_positions_variant(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta,
                            correction, end_n_beta):
    """Resample ``z[t]`` for each ``t`` of ``positions`` with ``g_k`` of Eq. 9, drawing by
    inversion of ``uniforms[m]`` (as the production kernel does). Switches: ``correction``
    (the delta term of Eq. 9) and ``end_n_beta`` (``N beta`` rather than ``beta`` on the end
    transition). Both True is the correct sampler."""
    n_states = c.shape[0] - 1
    n_symbols = c.shape[1]
    nab = n_states * n_symbols * beta
    beta32 = np.float32(beta)
    nbeta32 = np.float32(n_states * beta) if end_n_beta else np.float32(beta)
    for m in range(positions.shape[0]):
        t = positions[m]
        ap = tokens[t - 1]  # a_{t-1} != 0
        a = tokens[t]
        p = z[t - 1]
        n = z[t + 1]
        old = z[t]
        # C^{-t}
        c[p, ap, old] -= 1
        ct[ap, old, p] -= 1
        c[old, a, n] -= 1
        ct[a, n, old] -= 1
        ci[old] -= 1
        recip[old] = 1.0 / (ci[old] + nab)
        b_out = nbeta32 if a == 0 else beta32
        total = np.float32(0.0)
        for k in range(1, n_states + 1):
            w = (np.float32(ct[a, n, k]) + b_out) * (np.float32(c[p, ap, k]) + beta32) * recip[k]
            g[k] = w
            total += w
        if correction and p == n and ap == a:
            # delta((z_{t-1}, a_{t-1}, k), (k, a_t, z_{t+1})) = 1 only at k = p = n
            extra = (np.float32(ct[a, n, n]) + b_out) * recip[n]
            g[n] += extra
            total += extra
        target = np.float32(uniforms[m]) * total
        k = n_states
        acc = np.float32(0.0)
        for kk in range(1, n_states + 1):
            acc += g[kk]
            if target < acc:
                k = kk
                break
        c[p, ap, k] += 1
        ct[ap, k, p] += 1
        c[k, a, n] += 1
        ct[a, n, k] += 1
        ci[k] += 1
        recip[k] = 1.0 / (ci[k] + nab)
        z[t] = k


@njit(cache=True)
def sweeps_variant(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta, correction, end_n_beta):
    """``n_sweeps`` sweeps, one ``rng.random(len(positions))`` each (as the production kernel)."""
    g = np.zeros(c.shape[0], dtype=np.float32)
    for _ in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        sweep_positions_variant(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta,
                                correction, end_n_beta)


@njit(cache=True)
def sample_draws_variant(period, positions, tokens, z, c, ct, ci, recip, rng, beta, correction,
                         end_n_beta, out_counts):
    """For each draw: ``period`` sweeps, then record ``c`` into ``out_counts[d]``."""
    for d in range(out_counts.shape[0]):
        sweeps_variant(period, positions, tokens, z, c, ct, ci, recip, rng, beta, correction, end_n_beta)
        out_counts[d] = c


# -- a uniform interface to the real and the copied kernels ------------------------------------

class Kernel:
    """A Gibbs kernel for ``z | alpha``: ``init`` builds its chain state for ``(tokens, z)``,
    ``sweeps`` runs ``n`` sweeps in place, ``refill`` recomputes the state after ``tokens``
    or ``z`` were changed from outside. ``variant`` None is the production kernel
    (:mod:`bayesfa.samplers._cgs_pfa_kernel`, through its public entry points only)."""

    def __init__(self, variant: str | None = None):
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown mutant {variant!r}; choose from {', '.join(MUTANTS)}")
        self.variant = variant

    @property
    def label(self) -> str:
        return "cgs-pfa kernel" if self.variant is None else f"mutant kernel {self.variant!r}"

    def init(self, tokens, z, n_states: int, n_symbols: int, beta: float):
        if self.variant is None:
            from bayesfa.samplers import _cgs_pfa_kernel as kernel
            from bayesfa.samplers.cgs_pfa import new_counts

            state = new_counts(n_states, n_symbols)
            kernel.fill_counts(tokens, z, *state, float(beta))
            return state
        state = (np.zeros((n_states + 1, n_symbols, n_states + 1), dtype=np.int32),
                 np.zeros((n_symbols, n_states + 1, n_states + 1), dtype=np.int32),
                 np.zeros(n_states + 1, dtype=np.int32),
                 np.zeros(n_states + 1, dtype=np.float32))
        fill_counts(tokens, z, *state, float(beta))
        return state

    def refill(self, tokens, z, state, beta: float) -> None:
        if self.variant is None:
            from bayesfa.samplers import _cgs_pfa_kernel as kernel

            kernel.fill_counts(tokens, z, *state, float(beta))
        else:
            fill_counts(tokens, z, *state, float(beta))

    def sweeps(self, n_sweeps: int, positions, tokens, z, state, rng, beta: float) -> None:
        if self.variant is None:
            from bayesfa.samplers import _cgs_pfa_kernel as kernel

            kernel.sweeps(n_sweeps, positions, tokens, z, *state, rng, float(beta))
        else:
            f = VARIANTS[self.variant]
            sweeps_variant(n_sweeps, positions, tokens, z, *state, rng, float(beta),
                           f["correction"], f["end_n_beta"])


def sample_variant(corpus: Corpus, variant: str, n_states: int, beta: float, iterations: int,
                   burn_in: int, period: int, chains: int, seed: int | None):
    """CGS-PFA with the copied kernel ``variant``: the schedule and seeding of
    :func:`bayesfa.samplers.cgs_pfa.sample_cgs_pfa` (one chain per ``SeedSequence`` child,
    uniform random start, same random-number use), in this process. Returns
    ``(counts, log_joint, n_states, n_edges)`` with a leading ``(chain, draw)``."""
    from bayesfa.validation.reference import batch_log_joint

    flags = VARIANTS[variant]
    n_draws = check_schedule({"iterations": iterations, "burn_in": burn_in, "period": period})
    tokens = corpus.tokens
    n_symbols = corpus.alphabet_size + 1
    positions = (np.flatnonzero(tokens[:-1] != 0) + 1).astype(np.int64)
    counts = np.zeros((chains, n_draws, n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
    kern = Kernel(variant)
    for ch, child in enumerate(np.random.SeedSequence(seed).spawn(chains)):
        rng = np.random.default_rng(child)
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        state = kern.init(tokens, z, n_states, n_symbols, beta)
        kern.sweeps(burn_in, positions, tokens, z, state, rng, beta)
        sample_draws_variant(period, positions, tokens, z, *state, rng, float(beta),
                             flags["correction"], flags["end_n_beta"], counts[ch])
    log_joint = batch_log_joint(counts, beta)
    used = (counts[:, :, 1:].sum(axis=(3, 4)) > 0).sum(axis=2).astype(np.int32)
    edges = (counts > 0).sum(axis=(2, 3, 4)).astype(np.int32)
    return counts, log_joint, used, edges


class MutantMethod:
    """A mutant CGS-PFA as a :class:`bayesfa.methods.Method` (``cgs-pfa`` options)."""

    def __init__(self, variant: str):
        if variant not in VARIANTS:
            raise ValueError(f"unknown mutant {variant!r}; choose from {', '.join(MUTANTS)}")
        self.variant = variant
        self.name = PREFIX + variant
        self.summary = f"CGS-PFA with a deliberately wrong kernel ({variant}); for validation only"

    def add_arguments(self, parser) -> None:
        from bayesfa.samplers.cgs_pfa import METHOD

        METHOD.add_arguments(parser)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        t0 = time.perf_counter()
        counts, log_joint, used, edges = sample_variant(
            corpus, self.variant, options["states"], options["beta"], options["iterations"],
            options["burn_in"], options["period"], options["chains"], seed)
        info = {"mutant": self.variant, "seconds": time.perf_counter() - t0}
        return FitResult({"counts": counts},
                         {"log_joint": log_joint, "n_states": used, "n_edges": edges}, info)

    def predict_log_prob(self, arrays, options, corpus):
        from bayesfa.samplers.cgs_pfa import predict_log_prob

        return predict_log_prob(arrays["counts"], options["beta"], corpus)


def mutant_names() -> list[str]:
    return [PREFIX + v for v in MUTANTS]


def get_mutant(name: str) -> MutantMethod:
    """The method ``cgs-pfa:mutant-<variant>``."""
    if not name.startswith(PREFIX):
        raise ValueError(f"not a mutant name: {name!r}")
    return MutantMethod(name[len(PREFIX):])
