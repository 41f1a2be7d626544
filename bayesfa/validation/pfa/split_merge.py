"""Exact checks of CGS-PFA's split-merge move (:mod:`bayesfa.samplers.pfa._split_merge_kernel`).

Both run on :data:`TOY`, a corpus of 8 letters fitted with ``N = 4`` (65,536 paths, whose
posterior :class:`~bayesfa.validation.pfa.reference.PathPosterior` enumerates), so that
configurations with one, two and three states in use, hence 3, 2 and 1 empty states, all
carry posterior mass (the move's ``1 / E`` choice of the empty state matters only when
``E > 1``).

:func:`move_rows` -- single moves from fixed paths against the move's exact transition
    probabilities. :func:`transition_row` computes ``T(z -> .)`` for a path ``z`` by
    enumerating every ordered pair of positions, every empty state, every launch, the
    restricted Gibbs scans (as distributions) and every outcome of the final scan, with
    ``Pr(alpha, z)`` read from the enumerated posterior. It is written from the move's
    definition (module docstring of the kernel), not from its code, and never calls it;
    ``tests/test_split_merge.py`` checks that it is in detailed balance with
    ``Pr(z | alpha)`` exactly. Each start path gets ``n_moves`` independent single moves of
    the kernel and a Pearson chi-square of the end paths against the row.

:func:`invariance` -- exact posterior draws, ``k`` moves each (no Gibbs sweep), end paths
    against ``Pr(z | alpha)`` (chi-square on paths and on count classes): a move in detailed
    balance leaves the posterior invariant.

Each check's false-alarm rate is ``alpha``, Bonferroni-split over its sub-tests. The move's
mutants (:data:`~bayesfa.samplers.pfa._split_merge_kernel.MUTATIONS`) must fail them.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus
from bayesfa.exact import free_positions
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
from bayesfa.samplers.pfa import _split_merge_kernel as sm
from bayesfa.validation.checks import Check, chi2_row
from bayesfa.validation.pfa.reference import path_codes, path_posterior
from bayesfa.validation.toys import Toy

ALPHA = 1e-3

TOY = Toy("split-merge", Corpus.from_strings([[], [0], [0, 0, 0], [1, 1], [0, 1]], 2),
          n_states=4, beta=0.5,
          description="5 literal strings, 8 letters (ε a aaa bb ab); N=4 (65,536 paths)")


# -- the move's exact transition probabilities (independent of the kernel) --------------------

def _restricted_scan(dist, lj_of):
    """One restricted Gibbs scan over bits ``0..n-1`` (bit set: state ``j``) of a
    distribution ``dist [2^n]`` over configurations, ``lj_of [2^n]`` their log joints."""
    n = int(dist.size).bit_length() - 1
    x = np.arange(dist.size)
    for r in range(n):
        x0 = x & ~(1 << r)
        x1 = x0 | (1 << r)
        l0, l1 = lj_of[x0], lj_of[x1]
        p_set = np.exp(l1 - np.logaddexp(l0, l1))
        both = dist[x0] + dist[x1]
        dist = np.where((x >> r) & 1, both * p_set, both * (1.0 - p_set))
    return dist


def _final_log_q(lj_of, outcomes):
    """``log q(f | x)`` ``[2^n, len(outcomes)]``: the probability that the final restricted
    scan, started at launch ``x``, ends at ``f`` (position ``r`` drawn given the outcomes
    before it and the launch after it)."""
    size = lj_of.size
    n = size.bit_length() - 1
    x = np.arange(size)[:, None]
    f = np.asarray(outcomes)[None, :]
    out = np.zeros((size, f.shape[1]))
    for r in range(n):
        low = (1 << r) - 1
        y0 = ((f & low) | (x & ~low)) & ~(1 << r)
        l0, l1 = lj_of[y0], lj_of[y0 | (1 << r)]
        out += np.where((f >> r) & 1, l1, l0) - np.logaddexp(l0, l1)
    return out


def transition_row(pp, z, scans: int = sm.SCANS) -> np.ndarray:
    """``T(z -> z')`` ``[P]`` over the paths of ``pp`` (a :class:`PathPosterior`) for one
    split-merge move from the path ``z`` ``[T + 1]``, by enumeration (module docstring)."""
    tokens = pp.train.tokens
    n_states = pp.n_states
    free = free_positions(tokens)
    n_free = free.size
    powers = n_states ** np.arange(n_free - 1, -1, -1, dtype=np.int64)
    z = np.asarray(z, dtype=np.int64)
    code_z = int(path_codes(z, tokens, n_states))
    lj = pp.log_joint
    lj_z = lj[code_z]
    row = np.zeros(lj.size)
    w_pair = 1.0 / (n_free * (n_free - 1))
    zf = z[free]

    def codes_of(base_code, members, i, j, configs):
        # path code of base (members and the anchors set) with member r in j when bit r is set
        delta = np.zeros(configs.size, dtype=np.int64)
        for r, m in enumerate(members):
            delta += ((configs >> r) & 1) * (j - i) * powers[m]
        return base_code + delta

    for m1 in range(n_free):
        for m2 in range(n_free):
            if m1 == m2:
                continue
            i = zf[m1]
            split = zf[m2] == i
            if split:
                empty = [k for k in range(1, n_states + 1) if not np.any(zf == k)]
                if not empty:
                    row[code_z] += w_pair
                    continue
                choices = [(k, w_pair / len(empty), len(empty)) for k in empty]
            else:
                choices = [(zf[m2], w_pair, 0)]
            for j, w, n_empty in choices:
                members = [m for m in range(n_free) if m not in (m1, m2) and zf[m] in (i, j)]
                n = len(members)
                configs = np.arange(1 << n)
                base = zf.copy()
                base[m1], base[m2] = i, j
                for m in members:
                    base[m] = i
                base_code = int(((base - 1) * powers).sum())
                lj_of = lj[codes_of(base_code, members, i, j, configs)]
                launch = np.full(1 << n, 1.0 / (1 << n))
                for _ in range(scans):
                    launch = _restricted_scan(launch, lj_of)
                if split:
                    log_q = _final_log_q(lj_of, configs)  # [launch, outcome]
                    q = np.exp(log_q)
                    acc = np.minimum(1.0, np.exp(lj_of[None, :] - lj_z + np.log(n_empty) - log_q))
                    moved = (launch[:, None] * q * acc).sum(axis=0)
                    row[codes_of(base_code, members, i, j, configs)] += w * moved
                    row[code_z] += w * (1.0 - moved.sum())
                else:
                    current = sum(1 << r for r, m in enumerate(members) if zf[m] == j)
                    log_q = _final_log_q(lj_of, [current])[:, 0]
                    merged = zf.copy()
                    merged[m2] = i
                    for m in members:
                        merged[m] = i
                    e_merged = sum(1 for k in range(1, n_states + 1) if not np.any(merged == k))
                    code_m = int(((merged - 1) * powers).sum())
                    acc = np.minimum(1.0, np.exp(lj[code_m] - lj_z + log_q - np.log(e_merged)))
                    moved = float((launch * acc).sum())
                    row[code_m] += w * moved
                    row[code_z] += w * (1.0 - moved)
    return row


# -- the kernel side -------------------------------------------------------------------------

@njit
def _run_from_starts(move, n_moves, starts, positions, tokens, c, ct, ci, recip, rng, beta,
                     scans, members, saved, stats, ends):
    for r in range(starts.shape[0]):
        z = starts[r].copy()
        gibbs.fill_counts(tokens, z, c, ct, ci, recip, beta)
        for _ in range(n_moves):
            move(positions, tokens, z, c, ct, ci, recip, rng, beta, scans, members, saved, stats)
        ends[r] = z


def run_moves(starts, n_moves: int, rng, variant: str | None = None, toy: Toy = TOY,
              scans: int = sm.SCANS):
    """End paths ``[R, T + 1]`` of ``n_moves`` split-merge moves (no sweep) from each path of
    ``starts``, on one Generator; ``variant`` a mutation of the move or None. Returns
    ``(ends, stats)``."""
    tokens = toy.train.tokens
    n_states = toy.n_states
    n_symbols = toy.train.alphabet_size + 1
    width = gibbs.padded_width(n_states)
    state = (np.zeros((n_states + 1, n_symbols, width), dtype=np.float32),
             np.zeros((n_symbols, n_states + 1, width), dtype=np.float32),
             np.zeros(n_states + 1, dtype=np.int32), np.zeros(width, dtype=np.float32))
    positions = free_positions(tokens).astype(np.int64)
    starts = np.ascontiguousarray(starts, dtype=np.int32)
    ends = np.empty_like(starts)
    stats = np.zeros(sm.STATS)
    _run_from_starts(sm.build_move(variant), n_moves, starts, positions, tokens, *state, rng,
                     float(toy.beta), int(scans), np.zeros(positions.size, dtype=np.int64),
                     np.zeros(positions.size, dtype=np.int32), stats, ends)
    return ends, stats


def start_paths(pp) -> dict[str, np.ndarray]:
    """The start paths of :func:`move_rows`: for 1, 2 and 3 states in use, the most probable
    path that uses exactly that many (so 3, 2 and 1 empty states)."""
    free = free_positions(pp.train.tokens)
    used = np.array([np.unique(p[free]).size for p in pp.paths])
    out = {}
    for k in (1, 2, 3):
        idx = np.flatnonzero(used == k)
        out[f"{k} state{'s' if k > 1 else ''} in use"] = pp.paths[idx[np.argmax(pp.log_joint[idx])]]
    return out


#: The launch scans the checks run at: none (where the launch's own distribution shows) and
#: the default.
CHECK_SCANS = (0, sm.SCANS)


def move_rows(variant: str | None = None, *, n_moves: int = 20_000, seed: int = 0,
              alpha: float = ALPHA, scans=CHECK_SCANS) -> Check:
    """``n_moves`` independent single moves from each of :func:`start_paths`, end paths against
    :func:`transition_row` (Pearson chi-square, cells with expectation < 5 pooled), for each
    number of launch scans in ``scans``."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    starts = start_paths(pp)
    rows, accepted = [], {}
    scans = tuple(np.atleast_1d(scans).tolist())
    n_tests = len(starts) * len(scans)
    each = alpha / n_tests
    for n_scans, (label, z) in ((s, item) for s in scans for item in starts.items()):
        exact = transition_row(pp, z, n_scans)
        ends, stats = run_moves(np.repeat(z[None, :], n_moves, axis=0), 1, rng, variant, scans=n_scans)
        observed = np.bincount(path_codes(ends, TOY.train.tokens, TOY.n_states), minlength=exact.size)
        rows.append(chi2_row(f"one move ({n_scans} launch scans) from the path with {label}",
                              observed, exact, each))
        accepted[f"{label}, {n_scans} scans"] = {"stay_exact": float(exact[path_codes(z, TOY.train.tokens, TOY.n_states)]),
                           "stay_observed": float(np.mean((ends == z[None, :]).all(axis=1))),
                           "splits": [int(stats[0]), int(stats[1])],
                           "merges": [int(stats[2]), int(stats[3])]}
    label = "cgs-pfa split-merge move" if variant is None else f"mutant split-merge move {variant!r}"
    return Check(
        name="split-merge-rows", passed=all(r["pass"] for r in rows),
        description=(f"{label}: {n_moves} single moves from each of {len(starts)} fixed paths of "
                     f"toy {TOY.name!r}, end paths vs the move's exact transition probabilities "
                     f"(enumerated; Pearson chi-square)"),
        alpha=alpha, columns=["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"],
        rows=rows,
        summary={"toy": TOY.name, "n_moves": n_moves, "scans": scans, "starts": accepted,
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {n_tests} chi-square tests)"])


def canonical_codes(paths, tokens, n_states: int) -> np.ndarray:
    """Index of each path's *partition* of the free positions (its states relabelled in order
    of first appearance), as the code of the relabelled path: label-invariant, so that the
    ``N!`` relabellings of a configuration, which have one posterior probability, share a
    cell."""
    free = free_positions(tokens)
    z = np.asarray(paths, dtype=np.int64)[:, free]
    relabel = np.zeros((z.shape[0], n_states + 1), dtype=np.int64)
    seen = np.zeros(z.shape[0], dtype=np.int64)
    out = np.zeros_like(z)
    rows = np.arange(z.shape[0])
    for f in range(z.shape[1]):
        label = relabel[rows, z[:, f]]
        new = label == 0
        seen += new
        label = np.where(new, seen, label)
        relabel[rows, z[:, f]] = label
        out[:, f] = label
    powers = n_states ** np.arange(z.shape[1] - 1, -1, -1, dtype=np.int64)
    return ((out - 1) * powers).sum(axis=1)


def invariance(variant: str | None = None, *, n_draws: int = 100_000, n_moves: int = 3,
               seed: int = 0, alpha: float = ALPHA, scans=CHECK_SCANS) -> Check:
    """``n_draws`` exact posterior draws of ``z`` on :data:`TOY`, ``n_moves`` split-merge moves
    each (no Gibbs sweep), end states against ``Pr(z | alpha)``: the number of states in use
    and the partition of the positions (:func:`canonical_codes`; labelled paths are too many
    for the draws)."""
    t0 = time.perf_counter()
    pp = path_posterior(TOY.train, TOY.n_states, TOY.beta)
    rng = np.random.default_rng(seed)
    tokens = TOY.train.tokens
    free = free_positions(tokens)
    parts_all = canonical_codes(pp.paths, tokens, TOY.n_states)
    _, parts_all = np.unique(parts_all, return_inverse=True)
    used_all = np.array([np.unique(p).size for p in pp.paths[:, free]])
    scans = tuple(np.atleast_1d(scans).tolist())
    each = alpha / (2 * len(scans))
    rows, moved, counters = [], {}, np.zeros(sm.STATS)
    for n_scans in scans:
        starts = pp.sample_paths(n_draws, rng)
        ends, stats = run_moves(starts, n_moves, rng, variant, scans=n_scans)
        counters += stats
        codes = path_codes(ends, tokens, TOY.n_states)
        rows += [chi2_row(f"states in use ({n_scans} launch scans)",
                           np.bincount(used_all[codes], minlength=TOY.n_states + 1),
                           np.bincount(used_all, weights=pp.prob, minlength=TOY.n_states + 1), each),
                 chi2_row(f"partition of the positions ({n_scans} launch scans)",
                           np.bincount(parts_all[codes], minlength=parts_all.max() + 1),
                           np.bincount(parts_all, weights=pp.prob), each)]
        moved[str(n_scans)] = float(np.mean((ends != starts).any(axis=1)))
    stats = counters
    label = "cgs-pfa split-merge move" if variant is None else f"mutant split-merge move {variant!r}"
    return Check(
        name="split-merge-invariance", passed=all(r["pass"] for r in rows),
        description=(f"{label}: {n_draws} exact posterior draws of z on toy {TOY.name!r}, "
                     f"{n_moves} moves each (no Gibbs sweep), end states vs Pr(z | alpha) "
                     f"(Pearson chi-square)"),
        alpha=alpha, columns=["test", "cells", "chi2", "dof", "p_value", "threshold", "pass"],
        rows=rows,
        summary={"toy": TOY.name, "n_draws": n_draws, "n_moves": n_moves, "scans": scans,
                 "moved": moved, "splits": [int(stats[0]), int(stats[1])],
                 "merges": [int(stats[2]), int(stats[3])], "no_empty_state": int(stats[4]),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (Bonferroni over the {len(rows)} chi-square tests)"])


#: The names of :func:`split_merge_checks`'s checks, in order (``bayesfa validate --list``).
CHECK_NAMES = ("split-merge-rows", "split-merge-invariance")


def split_merge_checks(variant: str | None = None, *, seed: int = 0, alpha: float = ALPHA) -> list[Check]:
    """The split-merge checks ``bayesfa validate cgs-pfa`` runs (CI settings)."""
    return [move_rows(variant, seed=seed, alpha=alpha), invariance(variant, seed=seed, alpha=alpha)]
