"""Exact automata: PFA, PDFA and HMM, each convertible to the PFA form.

The PFA form is the one of PAutomaC (and of :mod:`bayesfa.forward`): ``init[q]``,
``trans[a, q, r]`` (emit ``a`` and move ``q -> r``) and ``stop[q]``, with
``stop[q] + sum_{a,r} trans[a, q, r] = 1`` for every ``q``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob, xi_to_pfa

_TOL = 1e-6


def _check_distribution(values: np.ndarray, what: str, axis=-1) -> None:
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(f"{what} must be finite and non-negative")
    sums = values.sum(axis=axis)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _TOL)
    if bad.size:
        raise ValueError(f"{what} of state {bad[0]} sums to {float(np.ravel(sums)[bad[0]]):.9g}, not 1")


@dataclass(frozen=True, eq=False)
class PFA:
    """Probabilistic finite automaton.

    init : ``[Q]``; trans : ``[A, Q, Q]``; stop : ``[Q]``.
    """

    init: np.ndarray
    trans: np.ndarray
    stop: np.ndarray

    def __post_init__(self):
        init = np.asarray(self.init, dtype=np.float64)
        trans = np.asarray(self.trans, dtype=np.float64)
        stop = np.asarray(self.stop, dtype=np.float64)
        if trans.ndim != 3 or trans.shape[1] != trans.shape[2]:
            raise ValueError("trans must have shape [A, Q, Q]")
        if init.shape != (trans.shape[1],) or stop.shape != (trans.shape[1],):
            raise ValueError("init and stop must have shape [Q]")
        _check_distribution(init, "initial distribution", axis=0)
        # Every entry, not per-letter sums: a negative entry must not hide behind a large one.
        outgoing = np.concatenate([stop[:, None],
                                   trans.transpose(1, 0, 2).reshape(trans.shape[1], -1)], axis=1)
        _check_distribution(outgoing, "outgoing probability (stop + transitions)")
        object.__setattr__(self, "init", init)
        object.__setattr__(self, "trans", trans)
        object.__setattr__(self, "stop", stop)

    @property
    def n_states(self) -> int:
        return self.trans.shape[1]

    @property
    def alphabet_size(self) -> int:
        return self.trans.shape[0]

    @classmethod
    def from_xi(cls, xi: np.ndarray) -> "PFA":
        """From the paper's ``xi[i, a, j]`` with end marker 0 and initial state 0 (Sect. 2.1)."""
        return cls(*xi_to_pfa(xi))

    def log_prob(self, corpus: Corpus) -> np.ndarray:
        """Exact natural-log probability of each string, shape ``[n_strings]``."""
        return forward_log_prob(self.init, self.trans, self.stop, corpus)

    def prob(self, corpus: Corpus) -> np.ndarray:
        return np.exp(self.log_prob(corpus))

    def to_pfa(self) -> "PFA":
        return self

    def sample(self, n_strings: int, rng: np.random.Generator, max_length: int = 100_000) -> Corpus:
        """Draw ``n_strings`` strings (``max_length`` guards against non-stopping machines)."""
        n_letters, n_states = self.alphabet_size, self.n_states
        # Per state: categorical over "stop" then every (letter, next state).
        table = np.concatenate([self.stop[:, None],
                                self.trans.transpose(1, 0, 2).reshape(n_states, -1)], axis=1)
        cdf = np.cumsum(table, axis=1)
        cdf /= cdf[:, -1:]
        init_cdf = np.cumsum(self.init)
        init_cdf /= init_cdf[-1]  # ends at exactly 1 > u: never past the last state
        strings = []
        for _ in range(n_strings):
            q = int(np.searchsorted(init_cdf, rng.random(), side="right"))
            letters = []
            while True:
                k = int(np.searchsorted(cdf[q], rng.random(), side="right"))
                if k == 0:
                    break
                a, q = divmod(k - 1, n_states)
                letters.append(a)
                if len(letters) > max_length:
                    raise RuntimeError("sampled string exceeds max_length; does the automaton stop?")
            strings.append(letters)
        return Corpus.from_strings(strings, n_letters)


@dataclass(frozen=True, eq=False)
class PDFA:
    """Probabilistic deterministic finite automaton.

    delta : ``[Q, A]`` int, next state (``-1`` where the transition is undefined);
    pi : ``[Q, A]`` emission probabilities; stop : ``[Q]``; start : initial state.
    ``stop[q] + sum_a pi[q, a] = 1``, and ``pi[q, a] = 0`` wherever ``delta[q, a] = -1``.
    """

    delta: np.ndarray
    pi: np.ndarray
    stop: np.ndarray
    start: int = 0

    def __post_init__(self):
        delta = np.asarray(self.delta, dtype=np.int64)
        pi = np.asarray(self.pi, dtype=np.float64)
        stop = np.asarray(self.stop, dtype=np.float64)
        n_states = delta.shape[0]
        if delta.ndim != 2 or pi.shape != delta.shape or stop.shape != (n_states,):
            raise ValueError("delta and pi must be [Q, A], stop [Q]")
        if delta.min(initial=0) < -1 or delta.max(initial=0) >= n_states:
            raise ValueError("delta names a state that does not exist")
        if np.any(pi[delta < 0] > 0):
            raise ValueError("pi puts mass on an undefined transition")
        if not 0 <= self.start < n_states:
            raise ValueError("start state does not exist")
        _check_distribution(np.concatenate([stop[:, None], pi], axis=1), "outgoing probability")
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "pi", pi)
        object.__setattr__(self, "stop", stop)

    @classmethod
    def from_pfa(cls, pfa: PFA) -> "PDFA":
        """The PDFA of a PFA whose start state and every (state, letter) transition are unique.

        A ``ValueError`` names the first state that makes ``pfa`` non-deterministic.
        """
        starts = np.flatnonzero(pfa.init > 0)
        if starts.size != 1:
            raise ValueError(f"not a PDFA: {starts.size} initial states")
        targets = (pfa.trans > 0).sum(axis=2)  # [A, Q]
        a, q = np.nonzero(targets > 1)
        if a.size:
            raise ValueError(f"not a PDFA: state {q[0]} moves to {targets[a[0], q[0]]} states on symbol {a[0]}")
        delta = np.where(targets.T > 0, pfa.trans.argmax(axis=2).T, -1)
        return cls(delta, pfa.trans.sum(axis=2).T, pfa.stop, int(starts[0]))

    def to_pfa(self) -> PFA:
        n_states, n_letters = self.delta.shape
        trans = np.zeros((n_letters, n_states, n_states))
        q, a = np.nonzero(self.delta >= 0)
        trans[a, q, self.delta[q, a]] = self.pi[q, a]
        init = np.zeros(n_states)
        init[self.start] = 1.0
        return PFA(init, trans, self.stop)

    def log_prob(self, corpus: Corpus) -> np.ndarray:
        return self.to_pfa().log_prob(corpus)


@dataclass(frozen=True, eq=False)
class HMM:
    """Hidden Markov model with stopping (PAutomaC's HMM form, Shibata & Yoshinaka Sect. 4.4).

    init : ``[Q]``; emit : ``[Q, A]``; stop : ``[Q]`` with ``stop[q] + sum_a emit[q, a] = 1``;
    theta : ``[Q, Q]`` state transitions taken after each emitted letter, rows summing to 1.
    So ``trans[a, q, r] = emit[q, a] * theta[q, r]``.
    """

    init: np.ndarray
    emit: np.ndarray
    theta: np.ndarray
    stop: np.ndarray

    @classmethod
    def from_pfa(cls, pfa: PFA, tol: float = _TOL) -> "HMM":
        """The HMM of a PFA whose next-state distribution after a letter does not depend on
        the letter (``trans[a, q, :] / sum_r trans[a, q, r]`` the same for every ``a``).

        A ``ValueError`` names the first state where it does. States that never emit get
        ``theta[q] = e_q`` (never used).
        """
        emit = pfa.trans.sum(axis=2).T  # [Q, A]
        n_states = pfa.n_states
        theta = np.eye(n_states)
        for q in range(n_states):
            letters = np.flatnonzero(emit[q] > 0)
            if letters.size == 0:
                continue
            rows = pfa.trans[letters, q, :] / emit[q, letters, None]
            if np.max(np.abs(rows - rows[0])) > tol:
                raise ValueError(f"not an HMM: the next state of state {q} depends on the symbol")
            theta[q] = rows.mean(axis=0)
        return cls(pfa.init, emit, theta, pfa.stop)

    def to_pfa(self) -> PFA:
        emit = np.asarray(self.emit, dtype=np.float64)
        theta = np.asarray(self.theta, dtype=np.float64)
        _check_distribution(theta, "state transition row")
        trans = emit.T[:, :, None] * theta[None, :, :]
        return PFA(self.init, trans, self.stop)

    def log_prob(self, corpus: Corpus) -> np.ndarray:
        return self.to_pfa().log_prob(corpus)


def classify(pfa: PFA) -> str:
    """``"pdfa"``, ``"hmm"`` or ``"pfa"``: the narrowest class whose form ``pfa`` has
    (PDFA if deterministic, else HMM if its next state does not depend on the letter)."""
    for name, cls in (("pdfa", PDFA), ("hmm", HMM)):
        try:
            cls.from_pfa(pfa)
            return name
        except ValueError:
            pass
    return "pfa"
