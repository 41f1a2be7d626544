"""Replica exchange (parallel tempering) for CGS-PFA: the swap move, the ladder, the replicas.

Target. Replica ``r`` of ``R`` targets the whole collapsed joint of Eq. 4 (Shibata &
Yoshinaka 2013) raised to an inverse temperature, ``pi_r(z) ∝ Pr(alpha, z)^{b_r}``, with
``1 = b_0 > b_1 > ... > b_{R-1} = b_min > 0`` (slot 0 is the replica recorded). The whole joint
is tempered, prior included, not only its likelihood part: after collapsing ``xi`` the prior
and the likelihood are no longer separate factors of ``Pr(alpha, z)`` (Eq. 4 is one product of
Gamma-function ratios), so tempering the likelihood alone would need the uncollapsed ``xi``;
tempering the whole joint keeps every replica a collapsed chain whose exact Gibbs sweep is
:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.tempered_sweeps` (the one ``--anneal`` runs), and
``pi_r`` is proper for every ``b_r > 0`` (finitely many paths). The product
``prod_r pi_r(z_r)`` is the joint over replicas that the sweeps and the swaps leave invariant.

Swap. Neighbours ``(i, i + 1)`` exchange their states with probability
``min(1, exp((b_i - b_{i+1}) (l_{i+1} - l_i)))``, ``l = log Pr(alpha, z)`` of each state (Eq. 4,
untempered): the Metropolis ratio of the exchange under the product target, so a swap keeps
it invariant. The pairs proposed alternate between the even ``(0,1), (2,3), ...`` and the odd
``(1,2), (3,4), ...`` ones from one swap round to the next: the non-reversible deterministic
even-odd scheme of Syed, Bouchard-Côté, Deligiannidis & Doucet (2022, JRSS B 84(2), Sect. 3).
Every proposed pair draws one uniform, accepted or not, so the Generator's stream does not
depend on the outcomes' history beyond the draws themselves.

Ladder. During burn-in only, after swap rounds that double in number (4, 8, 16, ... rounds
since the last update), the ladder is updated by the schedule of Syed et al. (2022,
Algorithm 4): with ``r_i`` the rejection rate of pair ``(i, i + 1)`` over those rounds, the
communication barrier ``Lambda(b)`` is the piecewise-linear function with
``Lambda(b_i) = sum_{j < i} r_j``, and the new ``b_i = Lambda^{-1}(i Lambda(b_min) / (R - 1))``
(``np.interp``), ``b_0 = 1`` and ``b_{R-1} = b_min`` kept. After burn-in the ladder is frozen,
so the recorded chain is a fixed, time-homogeneous kernel.

Chain state (:class:`Replicas`): ``R`` CGS-PFA chain states ``(z, c, ct, ci, recip)`` of
:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel` in slot order (slot ``r`` at ``b[r]``), the
ladder ``b`` float64 ``[R]``, the swap counters per pair, the chain's ``np.random.Generator``
for the swaps and the blocked moves, and one Generator per slot for that slot's tempered
sweeps (:func:`slot_generators`, derived from the chain's ``SeedSequence``). A swap exchanges
two slots' states (the arrays), never their temperatures.

Threads. Each slot sweeps its own state with its own Generator, so the ``R`` sweeps of a round
are independent and can run at once: with ``threads = T > 1`` they run on ``T`` threads
(:func:`~bayesfa.samplers.pfa._cgs_pfa_kernel.tempered_sweeps` releases the GIL), and the swap
round waits for all of them. The numbers drawn do not depend on ``T``, so neither does the
chain: the same seed gives the same draws bit for bit on one thread or on ``R``.

The swap itself is the numba function :func:`build_swap` compiles; the
mutants of :data:`MUTATIONS` are compile-time switches of its one source, and the driver's
``mutation`` argument (for ``adapt-after-burn-in`` and ``blocked-every-slot``).

Blocked moves (``--replicas R --blocked-every K``, issue 37 item 3's combination). After every
``K``-th chain sweep (and its swap round), slot 0, the replica at ``b = 1``, gets one blocked
whole-string move (:func:`bayesfa.samplers.pfa._ffbs_kernel.blocked_move`: ``theta`` from its
Dirichlet posterior given slot 0's counts, every string's path by forward filtering-backward
sampling, ``theta`` dropped), which leaves ``pi_0``, the untempered posterior, invariant, and
so the product over replicas. The hot replicas get none: their targets ``Pr(alpha, z)^b`` are
not the collapsed form of a joint with ``theta`` that the move could sample exactly.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs

#: ``--swap-every`` default: a swap round after every sweep.
SWAP_EVERY = 1
#: ``--replica-min-b`` default: the inverse temperature of the hottest replica.
MIN_B = 0.5
#: The spawn-key element that marks the slots' Generators (:func:`slot_generators`) apart from
#: every ``SeedSequence.spawn`` child of the chain's seed (a one-element extension of its key).
SLOT_KEY = 0x5245
#: Swap rounds before the first ladder update; each update doubles the next window.
FIRST_WINDOW = 4
#: A pair's rejection rate is floored at this in the ladder update (a pair that always
#: swaps still separates its two temperatures, so ``Lambda`` stays strictly increasing).
MIN_REJECTION = 1e-3

#: Deliberate errors for the validation suite (``bayesfa validate cgs-pfa:mutant-rex-NAME``).
MUTATIONS: dict[str, str] = {
    "rex-no-temperature-difference": "swap accepted with min(1, exp(l_j - l_i)), without the factor (b_i - b_j)",
    "rex-swap-temperatures": "the slots' temperatures exchanged instead of their states (slot 0, the one recorded, leaves b = 1)",
    "rex-adapt-after-burn-in": "the ladder still adapted after burn-in, while draws are recorded",
    "rex-blocked-every-slot": "with --blocked-every, the blocked move (theta from its b = 1 posterior, "
                              "every path by FFBS) run on every replica, not only on b = 1: the hot "
                              "replicas leave their tempered targets",
}

#: What a replica chain's checkpoint holds beside the chain's own fields
#: (:meth:`Replicas.checkpoint`): every slot's path, the ladder, the swap counters, the sweep
#: and window counts, the ladder at the end of burn-in and the slots' Generators.
CHECKPOINT_FIELDS = ("rex_z", "rex_b", "rex_counters", "rex_counts", "rex_ladder_at_burn_in",
                     "rex_slot_rngs")

_BUILT: dict = {}


def build_swap(mutation: str | None = None):
    """The swap round, compiled with ``mutation`` (a key of :data:`MUTATIONS` that changes
    the swap) or none: ``swap(parity, b, ell, order, rng, tried, accepted)`` proposes the
    pairs ``(i, i + 1)`` with ``i = parity, parity + 2, ...`` in turn; ``ell`` float64 ``[R]``
    the log joint of the state in each slot (before the round), ``order`` int64 ``[R]`` the
    identity on entry and on return the slot each slot's new state comes from; ``tried``,
    ``accepted`` int64 ``[R - 1]`` are incremented per pair. ``b`` float64 ``[R]`` is changed
    only by the ``rex-swap-temperatures`` mutant."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    key = mutation if mutation in ("rex-no-temperature-difference", "rex-swap-temperatures") else None
    if key in _BUILT:
        return _BUILT[key]
    no_temperature = key == "rex-no-temperature-difference"
    swap_temperatures = key == "rex-swap-temperatures"

    @njit(cache=True)
    def swap(parity, b, ell, order, rng, tried, accepted):
        for i in range(parity, b.shape[0] - 1, 2):
            u = rng.random()
            diff = ell[order[i + 1]] - ell[order[i]]
            log_ratio = diff if no_temperature else (b[i] - b[i + 1]) * diff
            tried[i] += 1
            if log_ratio >= 0.0 or u < math.exp(log_ratio):
                accepted[i] += 1
                if swap_temperatures:
                    b[i], b[i + 1] = b[i + 1], b[i]
                else:
                    order[i], order[i + 1] = order[i + 1], order[i]

    _BUILT[key] = swap
    return swap


def initial_ladder(n_replicas: int, min_b: float) -> np.ndarray:
    """``b`` float64 ``[R]``: geometric from 1 down to ``min_b`` (1 alone for ``R = 1``)."""
    if n_replicas == 1:
        return np.ones(1)
    return min_b ** (np.arange(n_replicas) / (n_replicas - 1))


def update_ladder(b: np.ndarray, tried: np.ndarray, accepted: np.ndarray, min_b: float) -> np.ndarray:
    """Syed et al. (2022), Algorithm 4: the ladder whose pairs share the communication barrier
    equally, from the rejection rates ``1 - accepted / tried`` of the pairs of ``b`` (each
    floored at :data:`MIN_REJECTION`); ``b`` unchanged where a pair was never tried."""
    if b.size < 3 or np.any(tried == 0):
        return b.copy()
    rejection = np.maximum(1.0 - accepted / tried, MIN_REJECTION)
    barrier = np.concatenate(([0.0], np.cumsum(rejection)))
    new = np.interp(barrier[-1] * np.arange(b.size) / (b.size - 1), barrier, b)
    new[0], new[-1] = 1.0, min_b
    return new


def slot_generators(rng: np.random.Generator, n_replicas: int) -> list[np.random.Generator]:
    """One Generator per slot, from the ``SeedSequence`` behind ``rng`` (its
    ``bit_generator.seed_seq``): slot ``r`` gets ``SeedSequence(entropy, spawn_key=key +
    (SLOT_KEY, r))``. They depend on the chain's seed only, not on what ``rng`` has drawn, and
    deriving them leaves ``rng``'s seed sequence untouched (``SeedSequence.spawn`` would count
    its children, and a second chain of the same seed would get others)."""
    ss = rng.bit_generator.seed_seq
    return [np.random.default_rng(np.random.SeedSequence(
        ss.entropy, spawn_key=tuple(ss.spawn_key) + (SLOT_KEY, r), pool_size=ss.pool_size))
        for r in range(n_replicas)]


class Replicas:
    """``R`` replicas of one CGS-PFA chain (module docstring), run interleaved in this process.

    ``states``: each replica's ``(z, c, ct, ci, recip)`` with the counts filled from ``z``
    (``_cgs_pfa_kernel.fill_counts``), slot 0 first; they are swept in place. ``done``: the
    sweeps made (the burn-in sweeps left and the swap rounds' parity follow from it).
    :meth:`sweeps` runs sweeps, each followed by a swap round every ``swap_every`` sweeps;
    slot 0 (``b = 1``) is the chain to record (:attr:`state`). ``blocked_every = K > 0``: a
    blocked move of slot 0 after every ``K``-th sweep (module docstring). ``threads``: the
    slots' sweeps of a round run on this many threads (at most ``R``); the chain is the same
    bit for bit whatever it is (module docstring)."""

    def __init__(self, tokens, positions, states: list, beta: float, rng: np.random.Generator,
                 burn_in: int, swap_every: int = SWAP_EVERY, min_b: float = MIN_B,
                 mutation: str | None = None, blocked_every: int = 0, threads: int = 1):
        self.tokens, self.positions, self.rng, self.beta = tokens, positions, rng, float(beta)
        self.burn_in, self.swap_every, self.min_b = int(burn_in), int(swap_every), float(min_b)
        self.states = list(states)
        n = len(self.states)
        self.slot_rngs = slot_generators(rng, n)
        self.threads = max(1, min(int(threads), n))
        self.b = initial_ladder(n, self.min_b)
        self.swap = build_swap(mutation)
        self.adapt_always = mutation == "rex-adapt-after-burn-in"
        self.done = 0
        self.window, self.in_window = FIRST_WINDOW, 0
        self.win_tried, self.win_accepted = np.zeros(n - 1, np.int64), np.zeros(n - 1, np.int64)
        self.tried, self.accepted = np.zeros(n - 1, np.int64), np.zeros(n - 1, np.int64)
        self.ladder_at_burn_in = self.b.copy() if self.burn_in == 0 else None
        self.blocked_every, self.blocked_scratch = int(blocked_every), None
        if self.blocked_every:
            from bayesfa.samplers.pfa import _ffbs_kernel as ffbs

            c = self.states[0][1]
            self.blocked_move = ffbs.blocked_move
            self.blocked_scratch = ffbs.scratch(tokens, c.shape[0] - 1, c.shape[1])
            self.blocked_slots = range(n) if mutation == "rex-blocked-every-slot" else (0,)

    @property
    def state(self) -> tuple:
        """Slot 0's ``(z, c, ct, ci, recip)``."""
        return self.states[0]

    def sweeps(self, n_sweeps: int) -> tuple[int, int, int]:
        """``n_sweeps`` rounds: one tempered Gibbs sweep of every replica (slot order), then,
        every ``swap_every``-th sweep of the chain, a swap round, and every
        ``blocked_every``-th a blocked move of slot 0; during burn-in the ladder is updated at
        the end of each window of swap rounds. Returns ``(moved, tried,
        accepted)``, summed over the rounds: the positions slot 0's sweeps (``b = 1``, the
        recorded chain) moved, and the swaps tried and accepted (every pair)."""
        if self.threads > 1:
            with ThreadPoolExecutor(self.threads) as pool:
                return self._rounds(n_sweeps, pool.map)
        return self._rounds(n_sweeps, map)

    def _sweep_slot(self, r: int) -> int:
        """One tempered sweep of slot ``r`` at ``b[r]`` with the slot's Generator."""
        z, c, ct, ci, recip = self.states[r]
        return int(gibbs.tempered_sweeps(1, self.positions, self.tokens, z, c, ct, ci, recip,
                                         self.slot_rngs[r], self.beta, float(self.b[r])))

    def _rounds(self, n_sweeps: int, each) -> tuple[int, int, int]:
        moved = tried = accepted = 0
        for _ in range(n_sweeps):
            moved += list(each(self._sweep_slot, range(len(self.states))))[0]
            self.done += 1
            if len(self.states) > 1 and self.done % self.swap_every == 0:
                t, a = self._swap_round()
                tried += t
                accepted += a
            if self.blocked_every and self.done % self.blocked_every == 0:
                for r in self.blocked_slots:
                    z, c, ct, ci, recip = self.states[r]
                    self.blocked_move(self.tokens, z, c, ct, ci, recip, self.rng, self.beta,
                                      *self.blocked_scratch)
            if self.done == self.burn_in:
                self.ladder_at_burn_in = self.b.copy()
        return moved, tried, accepted

    def checkpoint(self) -> dict:
        """The chain's state beyond its Generator (:data:`CHECKPOINT_FIELDS`), for
        :func:`bayesfa.samplers.chains.save_checkpoint`: every slot's ``z`` in slot order (the
        counts follow from them), ``b``, the swap counters (after burn-in and of the current
        window), ``done``, the window and its rounds so far, the ladder at the end of burn-in
        (NaN before) and each slot's Generator state (JSON)."""
        n = len(self.states)
        at_burn_in = np.full(n, np.nan) if self.ladder_at_burn_in is None else self.ladder_at_burn_in
        return {"rex_z": np.stack([st[0] for st in self.states]), "rex_b": self.b.copy(),
                "rex_counters": np.stack([self.tried, self.accepted, self.win_tried, self.win_accepted]),
                "rex_counts": np.array([self.done, self.window, self.in_window], dtype=np.int64),
                "rex_ladder_at_burn_in": np.array(at_burn_in, dtype=np.float64),
                "rex_slot_rngs": json.dumps([g.bit_generator.state for g in self.slot_rngs])}

    def restore(self, saved: dict) -> None:
        """Continue from :meth:`checkpoint`'s ``saved`` (shapes checked by the front's loader):
        the ladder, the counters and the slots' Generators. The slots' states must already be
        those of ``saved["rex_z"]`` with their counts (the front builds them so, in slot
        order); the chain then goes on exactly as the uninterrupted one."""
        self.b = np.array(saved["rex_b"], dtype=np.float64)
        self.tried, self.accepted, self.win_tried, self.win_accepted = (
            np.array(row, dtype=np.int64) for row in saved["rex_counters"])
        self.done, self.window, self.in_window = (int(v) for v in saved["rex_counts"])
        at_burn_in = np.asarray(saved["rex_ladder_at_burn_in"], dtype=np.float64)
        self.ladder_at_burn_in = None if np.isnan(at_burn_in).any() else at_burn_in.copy()
        for g, state in zip(self.slot_rngs, json.loads(str(saved["rex_slot_rngs"]))):
            g.bit_generator.state = state

    def _swap_round(self) -> tuple[int, int]:
        n = len(self.states)
        rnd = self.done // self.swap_every - 1  # 0-based swap round: its parity
        ell = np.array([gibbs.log_joint(s[1], self.beta) for s in self.states])
        order = np.arange(n, dtype=np.int64)
        tried, accepted = np.zeros(n - 1, np.int64), np.zeros(n - 1, np.int64)
        self.swap(rnd % 2, self.b, ell, order, self.rng, tried, accepted)
        self.states = [self.states[k] for k in order]
        if self.done > self.burn_in:
            self.tried += tried
            self.accepted += accepted
        if self.done <= self.burn_in or self.adapt_always:
            self.win_tried += tried
            self.win_accepted += accepted
            self.in_window += 1
            if self.in_window == self.window:
                self.b = update_ladder(self.b, self.win_tried, self.win_accepted, self.min_b)
                self.win_tried[:] = 0
                self.win_accepted[:] = 0
                self.in_window, self.window = 0, 2 * self.window
        return int(tried.sum()), int(accepted.sum())

    def stats(self) -> dict:
        """The swap counts after burn-in per pair, their acceptance rates, and the ladder at
        the end of burn-in and now (equal unless adapted after burn-in)."""
        rates = np.divide(self.accepted, self.tried, out=np.full(self.tried.size, np.nan),
                          where=self.tried > 0)
        return {"swap_tried": self.tried.tolist(), "swap_accepted": self.accepted.tolist(),
                "swap_rate": [float(r) for r in rates],
                "ladder_at_burn_in": None if self.ladder_at_burn_in is None else self.ladder_at_burn_in.tolist(),
                "ladder": self.b.tolist()}
