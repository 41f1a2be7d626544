"""Deliberately wrong CGS-PFA kernels, to prove that the validation suite has power.

The mutants are the production sweep itself compiled with one deliberate error:
:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.build_sweep` builds every variant from the one source
of :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweep_positions`, with the switches of
:data:`bayesfa.samplers.pfa._cgs_pfa_kernel.MUTATIONS` as compile-time constants (there is no
copy of the kernel to keep in step). They cover Eq. 9's delta term, each of the three
exact-weight corrections, ``C`` versus ``C^{-t}`` in each factor and in the denominator, the
denominator itself, the end prior (``beta`` instead of ``N beta``), which positions are
sampled, the keep-the-current-state shortcut of the inversion, and a frozen kernel.

Each mutant is also a method (same interface as :mod:`bayesfa.methods`) named
``cgs-pfa:mutant-<name>``, whose ``fit`` runs the mutant sweeps with the schedule, seeding
and random-number use of ``cgs-pfa`` and whose ``predict_log_prob`` is that of ``cgs-pfa``,
so every check of :mod:`bayesfa.validation.harness` runs on it unchanged. :class:`Kernel`
gives the checks of :mod:`bayesfa.validation.pfa.kernel_tests` one interface to the production
kernel (``None``) and to the mutants. The variant ``"control"`` is the production
``sweep_positions`` driven by :func:`run_sweeps` (not a mutant: the tests check that it
reproduces ``cgs-pfa`` draw for draw, which shows that the driver adds nothing).

The alias-MH kernel (``cgs-pfa --kernel alias-mh``,
:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel`) has its own mutants, :data:`ALIAS_MUTANTS`
(``cgs-pfa:mutant-alias-no-delta``, ``cgs-pfa:mutant-alias-stale-table``), compiled the same
way by its ``build_sweep``; :class:`Kernel` runs it with ``kernel="alias-mh"``. Likewise the
bucket-MH kernel (``--kernel bucket-mh``, :mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`) and
:data:`BUCKET_MUTANTS`. The split-merge move (``--split-merge``,
:mod:`bayesfa.samplers.pfa._split_merge_kernel`) has :data:`SPLIT_MERGE_MUTANTS`
(``cgs-pfa:mutant-sm-...``): their sweep is the production one, and the split-merge checks of
:mod:`bayesfa.validation.pfa.split_merge` run their move. Likewise the blocked whole-string
move (``--blocked-every``, :mod:`bayesfa.samplers.pfa._ffbs_kernel`) has :data:`BLOCKED_MUTANTS`
(``cgs-pfa:mutant-blocked-...``), run by the checks of :mod:`bayesfa.validation.pfa.blocked`,
and replica exchange (``--replicas``, :mod:`bayesfa.samplers.pfa._replica_kernel`) has
:data:`REPLICA_MUTANTS` (``cgs-pfa:mutant-rex-...``), run by the checks of
:mod:`bayesfa.validation.pfa.replica`. :data:`RECORD_MUTANTS`
(``cgs-pfa:mutant-log-joint-end-prior``) leave the sampling alone and slip in what is recorded:
their fit runs the production sweep and writes the trace's log joint with the mutant
:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.build_log_joint`, which only the harness's
``recorded`` check (every recorded quantity recomputed) can see.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus
from bayesfa.methods import FitResult, check_schedule
from bayesfa.samplers.pfa import _cgs_pfa_alias_kernel as alias_kernel
from bayesfa.samplers.pfa import _cgs_pfa_bucket_kernel as bucket_kernel
from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel
from bayesfa.samplers.pfa import _ffbs_kernel as blocked_kernel
from bayesfa.samplers.pfa import _replica_kernel as replica_kernel
from bayesfa.samplers.pfa import _split_merge_kernel as split_merge_kernel
from bayesfa.samplers.pfa.cgs_pfa import KERNELS  # the sweep kernels a Kernel can run

MUTANTS: dict[str, str] = dict(kernel.MUTATIONS)
#: Mutants of the alias-MH kernel (``cgs-pfa --kernel alias-mh``).
ALIAS_MUTANTS: dict[str, str] = dict(alias_kernel.MUTATIONS)
#: Mutants of the bucket-MH kernel (``cgs-pfa --kernel bucket-mh``).
BUCKET_MUTANTS: dict[str, str] = dict(bucket_kernel.MUTATIONS)
#: Mutants of the split-merge move (``cgs-pfa --split-merge``): the Gibbs sweep is the
#: production one; :mod:`bayesfa.validation.pfa.split_merge`'s checks run the mutant move.
SPLIT_MERGE_MUTANTS: dict[str, str] = dict(split_merge_kernel.MUTATIONS)
#: Mutants of the blocked move (``cgs-pfa --blocked-every``): the Gibbs sweep is the production
#: one; :mod:`bayesfa.validation.pfa.blocked`'s checks run the mutant move.
BLOCKED_MUTANTS: dict[str, str] = dict(blocked_kernel.MUTATIONS)
#: Mutants of replica exchange (``cgs-pfa --replicas``): the Gibbs sweep is the production one;
#: :mod:`bayesfa.validation.pfa.replica`'s checks run the mutant swap or ladder.
REPLICA_MUTANTS: dict[str, str] = dict(replica_kernel.MUTATIONS)
#: Mutants of what the front records (the trace's log joint), not of the sweep.
RECORD_MUTANTS: dict[str, str] = dict(kernel.RECORD_MUTATIONS)
#: The Metropolis-Hastings kernels' modules, which build their own ``sweeps`` (mutants included).
MH_KERNELS = {"alias-mh": alias_kernel, "bucket-mh": bucket_kernel}
#: Not a mutant: the production sweep through this module's driver.
VARIANTS = (*MUTANTS, *ALIAS_MUTANTS, *BUCKET_MUTANTS, *SPLIT_MERGE_MUTANTS, *BLOCKED_MUTANTS,
            *REPLICA_MUTANTS, *RECORD_MUTANTS, "control")
PREFIX = "cgs-pfa:mutant-"


def _check_variant(variant: str | None) -> None:
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown mutant {variant!r}; choose from "
                         f"{', '.join(v for v in VARIANTS if v != 'control')}")


def kernel_of(variant: str | None, kernel_name: str = "gibbs") -> str:
    """The kernel a variant runs: ``alias-mh`` for :data:`ALIAS_MUTANTS`, ``gibbs`` for the
    other mutants, ``kernel_name`` for the production kernel (``None``) and ``"control"``."""
    if kernel_name not in KERNELS:
        raise ValueError(f"unknown kernel {kernel_name!r}; choose from {', '.join(KERNELS)}")
    if variant in ALIAS_MUTANTS:
        return "alias-mh"
    if variant in BUCKET_MUTANTS:
        return "bucket-mh"
    if variant in MUTANTS:
        return "gibbs"
    return kernel_name


def _new_state(n_states: int, n_symbols: int):
    """Zeroed ``(c, ct, ci, recip)`` in the layout of :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`."""
    width = kernel.padded_width(n_states)
    return (np.zeros((n_states + 1, n_symbols, width), dtype=np.float32),
            np.zeros((n_symbols, n_states + 1, width), dtype=np.float32),
            np.zeros(n_states + 1, dtype=np.int32),
            np.zeros(width, dtype=np.float32))


@njit
def run_sweeps(sweep, n_sweeps, positions, tokens, z, c, ct, ci, recip, g, rng, beta):
    """``n_sweeps`` calls of the compiled ``sweep`` (a variant of
    :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweep_positions`), each on ``rng.random(M)``: the
    loop of :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweeps` with the sweep as an argument
    (numba compiles it once per variant; not cached on disk, as the argument's type is not)."""
    for _ in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        sweep(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta)


@njit
def run_draws(sweep, burn_in, period, positions, tokens, z, c, ct, ci, recip, g, rng, beta, out_z):
    """``burn_in`` sweeps, then ``out_z.shape[0]`` times: ``period`` sweeps and ``out_z[d] = z``
    (:func:`run_sweeps`'s random-number use; one compiled call per chain)."""
    run_sweeps(sweep, burn_in, positions, tokens, z, c, ct, ci, recip, g, rng, beta)
    for d in range(out_z.shape[0]):
        run_sweeps(sweep, period, positions, tokens, z, c, ct, ci, recip, g, rng, beta)
        out_z[d] = z


@njit
def run_from_starts(sweep, n_sweeps, starts, positions, tokens, c, ct, ci, recip, g, rng, beta, ends):
    """For each path ``starts[r]`` ``[R, T+1]``: fill the counts, ``n_sweeps`` sweeps
    (:func:`run_sweeps`), ``ends[r] = z``; independent chains on one generator, in one
    compiled call."""
    for r in range(starts.shape[0]):
        z = starts[r].copy()
        kernel.fill_counts(tokens, z, c, ct, ci, recip, beta)
        run_sweeps(sweep, n_sweeps, positions, tokens, z, c, ct, ci, recip, g, rng, beta)
        ends[r] = z


class Kernel:
    """A kernel for ``z | alpha``: ``init`` builds its chain state for ``(tokens, z)``,
    ``sweeps`` runs ``n`` sweeps in place, ``refill`` recomputes the state after ``tokens``
    or ``z`` were changed from outside. ``variant`` None is the production kernel
    ``kernel_name`` (``gibbs``: :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweeps`; ``alias-mh``:
    :func:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel.sweeps`); a Gibbs mutant runs its own
    compiled ``sweep_positions`` through :func:`run_sweeps`, on the random numbers the
    production ``sweeps`` draws; an alias-MH mutant (:data:`ALIAS_MUTANTS`) its own compiled
    alias ``sweeps``, which draws its random numbers itself."""

    def __init__(self, variant: str | None = None, kernel_name: str = "gibbs"):
        _check_variant(variant)
        self.variant = variant
        self.kernel_name = kernel_of(variant, kernel_name)
        self._alias = None  # the sweeps of an MH kernel (alias-mh or bucket-mh)
        if self.kernel_name in MH_KERNELS:
            module = MH_KERNELS[self.kernel_name]
            self._alias = module.build_sweep(variant if variant in module.MUTATIONS else None)
        elif variant is None or variant == "control" or variant in (*SPLIT_MERGE_MUTANTS,
                                                                     *BLOCKED_MUTANTS,
                                                                     *REPLICA_MUTANTS,
                                                                     *RECORD_MUTANTS):
            self._sweep = kernel.sweep_positions
        else:
            self._sweep = kernel.build_sweep(variant)

    @property
    def label(self) -> str:
        if self.variant is None:
            return "cgs-pfa kernel" if self.kernel_name == "gibbs" else f"cgs-pfa {self.kernel_name} kernel"
        return f"mutant kernel {self.variant!r}"

    def init(self, tokens, z, n_states: int, n_symbols: int, beta: float):
        state = _new_state(n_states, n_symbols)
        kernel.fill_counts(tokens, z, *state, float(beta))
        return state

    def refill(self, tokens, z, state, beta: float) -> None:
        kernel.fill_counts(tokens, z, *state, float(beta))

    def run_from(self, starts, n_sweeps: int, positions, tokens, n_states: int, n_symbols: int,
                 rng, beta: float) -> np.ndarray:
        """End paths ``[R, T+1]`` of ``n_sweeps`` sweeps from each path of ``starts``
        ``[R, T+1]`` (the random numbers of :meth:`init` then :meth:`sweeps` per start)."""
        state = _new_state(n_states, n_symbols)
        ends = np.empty_like(starts)
        if self._alias is not None:  # a Python loop: cheaper than compiling a driver per variant
            for r in range(starts.shape[0]):
                z = starts[r].copy()
                kernel.fill_counts(tokens, z, *state, float(beta))
                self._alias(n_sweeps, positions, tokens, z, *state, rng, float(beta))
                ends[r] = z
            return ends
        g = np.zeros(state[0].shape[2], dtype=np.float32)
        run_from_starts(self._sweep, n_sweeps, starts, positions, tokens, *state, g, rng,
                        float(beta), ends)
        return ends

    def draw_paths(self, burn_in: int, n_draws: int, period: int, positions, tokens, z, state,
                   rng, beta: float) -> np.ndarray:
        """``burn_in`` sweeps, then ``n_draws`` paths ``[n_draws, T+1]`` ``period`` sweeps
        apart: the same random numbers as the same sweeps through :meth:`sweeps`."""
        out = np.empty((n_draws, z.size), dtype=z.dtype)
        if self._alias is not None:
            self._alias(burn_in, positions, tokens, z, *state, rng, float(beta))
            for d in range(n_draws):
                self._alias(period, positions, tokens, z, *state, rng, float(beta))
                out[d] = z
            return out
        g = np.zeros(state[0].shape[2], dtype=np.float32)
        run_draws(self._sweep, burn_in, period, positions, tokens, z, *state, g, rng, float(beta), out)
        return out

    def sweeps(self, n_sweeps: int, positions, tokens, z, state, rng, beta: float) -> None:
        if self._alias is not None:
            self._alias(n_sweeps, positions, tokens, z, *state, rng, float(beta))
            return
        if self.variant is None:
            kernel.sweeps(n_sweeps, positions, tokens, z, *state, rng, float(beta))
            return
        g = np.zeros(state[0].shape[2], dtype=np.float32)
        run_sweeps(self._sweep, n_sweeps, positions, tokens, z, *state, g, rng, float(beta))


def sample_variant(corpus: Corpus, variant: str, n_states: int, beta: float, iterations: int,
                   burn_in: int, period: int, chains: int, seed: int | None,
                   kernel_name: str = "gibbs"):
    """CGS-PFA with the kernel ``variant``: the schedule and seeding of
    :func:`bayesfa.samplers.pfa.cgs_pfa.sample_cgs_pfa` (one chain per ``SeedSequence`` child,
    uniform random start, same random-number use), in this process. Returns
    ``(counts, log_joint, n_states, n_edges)`` with a leading ``(chain, draw)``."""
    from bayesfa.validation.pfa.reference import batch_counts, batch_log_joint

    _check_variant(variant)
    n_draws = check_schedule({"iterations": iterations, "burn_in": burn_in, "period": period})
    tokens = corpus.tokens
    n_symbols = corpus.alphabet_size + 1
    positions = (np.flatnonzero(tokens[:-1] != 0) + 1).astype(np.int64)
    counts = np.zeros((chains, n_draws, n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
    kern = Kernel(variant, kernel_name)
    for ch, child in enumerate(np.random.SeedSequence(seed).spawn(chains)):
        rng = np.random.default_rng(child)
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        state = kern.init(tokens, z, n_states, n_symbols, beta)
        paths = kern.draw_paths(burn_in, n_draws, period, positions, tokens, z, state, rng, beta)
        counts[ch] = batch_counts(tokens, paths, n_states, n_symbols)
    if variant in RECORD_MUTANTS:  # the front's recording, with the mutant log joint
        lj = kernel.build_log_joint(variant)
        log_joint = np.array([[lj(c, float(beta)) for c in chain] for chain in counts])
    else:
        log_joint = batch_log_joint(counts, beta)
    used = (counts[:, :, 1:].sum(axis=(3, 4)) > 0).sum(axis=2).astype(np.int32)
    edges = (counts > 0).sum(axis=(2, 3, 4)).astype(np.int32)
    return counts, log_joint, used, edges


class MutantMethod:
    """A mutant CGS-PFA as a :class:`bayesfa.methods.Method` (``cgs-pfa`` options)."""

    def __init__(self, variant: str):
        described = {**MUTANTS, **ALIAS_MUTANTS, **BUCKET_MUTANTS, **SPLIT_MERGE_MUTANTS,
                     **BLOCKED_MUTANTS, **REPLICA_MUTANTS, **RECORD_MUTANTS}
        if variant not in described:
            raise ValueError(f"unknown mutant {variant!r}; choose from {', '.join(described)}")
        self.variant = variant
        self.name = PREFIX + variant
        self.summary = (f"CGS-PFA with a deliberately wrong kernel ({described[variant]}); "
                        f"for validation only")

    def add_arguments(self, parser) -> None:
        from bayesfa.samplers.pfa.cgs_pfa import METHOD

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
        from bayesfa.samplers.pfa.cgs_pfa import predict_log_prob

        return predict_log_prob(arrays["counts"], options["beta"], corpus)


def mutant_names() -> list[str]:
    """The mutants of the Gibbs kernel (:data:`MUTANTS`)."""
    return [PREFIX + v for v in MUTANTS]


def all_mutant_names() -> list[str]:
    """Every mutant ``bayesfa validate`` knows: the Gibbs kernel's, then the alias-MH
    kernel's (:data:`ALIAS_MUTANTS`), the bucket-MH kernel's (:data:`BUCKET_MUTANTS`), the
    split-merge move's (:data:`SPLIT_MERGE_MUTANTS`), the blocked move's
    (:data:`BLOCKED_MUTANTS`), replica exchange's (:data:`REPLICA_MUTANTS`) and the
    recording's (:data:`RECORD_MUTANTS`)."""
    return [PREFIX + v for v in (*MUTANTS, *ALIAS_MUTANTS, *BUCKET_MUTANTS, *SPLIT_MERGE_MUTANTS,
                                 *BLOCKED_MUTANTS, *REPLICA_MUTANTS, *RECORD_MUTANTS)]


def get_mutant(name: str) -> MutantMethod:
    """The method ``cgs-pfa:mutant-<variant>``."""
    if not name.startswith(PREFIX):
        raise ValueError(f"not a mutant name: {name!r}")
    return MutantMethod(name[len(PREFIX):])
