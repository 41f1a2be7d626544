"""Numba kernel of CGS-PFA with O(1) proposals: Metropolis-Hastings within Gibbs from alias tables.

The target of every update is the conditional of Shibata & Yoshinaka (2013), Eq. 9,

    Pr(z_t = k | z^{-t}, alpha)  ~  (C^{-t}_{k a_t z_{t+1}} + b) (C^{-t}_{z_{t-1} a_{t-1} k} + beta + delta)
                                     / (C^{-t}_k + N A beta),

evaluated exactly, delta term included, by :func:`bayesfa.samplers.pfa._cgs_pfa_kernel._exact_weight`
(the one home of that weight). Instead of summing it over all ``N`` states (the Gibbs kernel of
:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`, O(N) per token), each position gets two
Metropolis-Hastings steps whose proposals are drawn in O(1) from Walker/Vose alias tables of the
two factors of Eq. 9 -- the cycle proposals of LightLDA (Yuan et al., "LightLDA: Big topic
models on modest computer clusters", WWW 2015, Sect. 3) built as in AliasLDA (Li, Ahmed, Ravi &
Smola, "Reducing the sampling complexity of topic models", KDD 2014):

1. the *out* proposal ``q1(k) ~ (C'_{k a_t z_{t+1}} + b) / (C'_k + N A beta)``, one table per pair
   ``(a_t, z_{t+1})``;
2. the *in* proposal ``q2(k) ~ C'_{z_{t-1} a_{t-1} k} + beta``, one table per pair
   ``(z_{t-1}, a_{t-1})``;

each accepted with probability ``min(1, g_k q(z_t) / (g_{z_t} q(k)))``, ``g`` the exact weight of
Eq. 9 and ``q`` the table's *own* proposal probabilities (those its float32 alias entries
realise, stored beside them). Both tables give every state a positive weight, so each step can
reach every state.

Which counts ``C'`` the tables hold, and why (exactness). A table built from the chain's current
counts depends on ``z_t`` itself (its own token is in them), and then the Metropolis-Hastings
ratio, which uses the same table in both directions, is not that of the proposal actually made
(the reverse move would have been proposed from other counts). The bias is real: with the
tables built, as LightLDA does, from the current counts at the start of each phase and used
with their own probabilities, the exact-posterior path GOF of the "tiny" toy (20,000 chains,
5 sweeps) gives p = 2e-39. Here the strings are split into :data:`BLOCKS` contiguous blocks and the
sweep runs block by block (positions still in increasing ``t``, as Algorithm 1); while block
``B`` is updated the tables hold the counts ``C'`` of the *other* blocks, which do not change
during that phase. A proposal for ``z_t``, ``t`` in ``B``, is then a function of ``z^{-t}``
only, so each step is an exact Metropolis-Hastings step for Eq. 9 and the sweep leaves the
posterior invariant (checked by exact enumeration in :mod:`bayesfa.validation`). A table is
built lazily, on its first use in a phase, and is stale from then on: it is used for the whole
phase (on average ``T / (2 A (N + 1))`` times), always with its own probabilities in the ratio.
It cannot be kept into a later phase (it would then depend on the chain's past, as above), so
building costs up to ``2 A (N + 1) N`` entries per phase: O(1) per token only when ``T`` is large
against ``A N**2`` (measured in benchmarks/RESULTS.md). The tables live only inside one call of
:func:`sweeps`, so the result does not depend on how sweeps are grouped into calls
(checkpoints resume bit-identically).

Chain state: exactly that of :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel` (``z [T+1]``, ``c [N+1, A,
W]``, ``ct [A, N+1, W]``, ``ci [N+1]``, ``recip [W]``, same invariants, float32 whole-number
counts exact below 2**24 tokens), so both kernels run on the same state and share
``fill_counts``, ``move_state``, ``record_draw`` (the table-free variant of the same proposals,
:mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`, ``--kernel bucket-mh``, shares its block
split). Scratch of one call: ``co, cto, cio, recipo`` (the other block's counts, same layout) and ``tab`` float32 ``[2 A (N+1), N, 3]``: for table ``j`` and
slot ``i``: the alias probability, the alias (a state index ``< 2**24``, exact in float32) and
``N`` times the probability with which the table proposes state ``i + 1``. Tables ``a (N+1) + n`` are out tables, ``A (N+1) + p A + a'``
in tables.

Random numbers: ``2 M`` uniforms per sweep (``M`` positions), one per step, drawn as
``rng.random`` of :data:`CHUNK` positions at a time (the same stream whatever the chunks). The
uniform ``u`` picks the slot ``i = floor(u N)`` and its fraction ``f = u N - i`` the side of the
alias coin; ``f`` rescaled within the side taken is again uniform and independent of the
proposal, and decides the acceptance. (Its resolution is ``2**-53 N / q_i``; summed over the
``2 N`` sides, the error this adds to any transition probability is below ``2 N 2**-53``.)

The sweep is built by :func:`build_sweep`, which can also compile it with one deliberate error
(:data:`MUTATIONS`) for the validation suite's mutants; the production kernel, :func:`sweeps`,
has every switch off.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# fill_counts: the chain state is the Gibbs kernel's (cgs_pfa.kernel_module reads it here)
from bayesfa.samplers.pfa._cgs_pfa_kernel import (_exact_weight, fill_counts, move_state,  # noqa: F401
                                              record_draw)

#: Contiguous blocks of strings updated in turn, each with tables of the other's counts (the
#: sweep is written for two: block 0 is ``tokens[:h]``, block 1 ``tokens[h:]``, :func:`_block_split`).
BLOCKS = 2
#: Positions per ``rng.random`` call (the stream does not depend on it).
CHUNK = 4096

#: Deliberate errors that :func:`build_sweep` can compile into the sweep (validated as
#: ``bayesfa validate cgs-pfa:mutant-NAME``); the production sweep has none of them.
MUTATIONS: dict[str, str] = {
    "alias-no-delta": "alias-MH kernel whose acceptance ratio uses Eq. 9 without its delta term",
    "alias-stale-table": "alias-MH kernel whose ratio uses the current counts' factor instead of "
                         "the stale table's own proposal probabilities",
}


@njit(cache=True, inline="always")
def _block_split(tokens):
    """Token index ``h``: block 0 is ``tokens[:h]``, block 1 ``tokens[h:]``; ``h`` is just
    after the first end marker at or after the middle (``T`` if none)."""
    n_tokens = tokens.shape[0]
    h = (n_tokens - 1) // 2
    while h < n_tokens and tokens[h] != 0:
        h += 1
    return min(h + 1, n_tokens)


@njit(cache=True)
def _build_alias(tab, j, stacks, n_states):
    """Vose's alias table ``tab[j]`` for the weights in ``tab[j, :, 2]`` (states ``1..N`` in
    slots ``0..N-1``), whose ``tab[j, :, 2]`` is then overwritten with the proposal
    probabilities the table actually realises, ``N q_k = p_k + sum_{i: alias_i = k} (1 - p_i)``
    (the weights up to float32 rounding), so that the Metropolis-Hastings ratio uses exactly
    the proposal made. stacks int32 ``[2 N]`` scratch."""
    total = 0.0
    for i in range(n_states):
        total += tab[j, i, 2]
    scale = n_states / total
    n_small = 0
    n_large = 0
    for i in range(n_states):
        s = tab[j, i, 2] * scale
        tab[j, i, 0] = s
        tab[j, i, 1] = i
        if s < 1.0:
            stacks[n_small] = i
            n_small += 1
        else:
            stacks[n_states + n_large] = i
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        s = stacks[n_small]
        n_large -= 1
        big = stacks[n_states + n_large]
        tab[j, s, 1] = big
        rest = (np.float64(tab[j, big, 0]) + np.float64(tab[j, s, 0])) - 1.0
        tab[j, big, 0] = rest
        if rest < 1.0:
            stacks[n_small] = big
            n_small += 1
        else:
            stacks[n_states + n_large] = big
            n_large += 1
    for r in range(n_small):  # left over only through rounding: keep their own slot
        tab[j, stacks[r], 0] = 1.0
    for r in range(n_large):
        tab[j, stacks[n_states + r], 0] = 1.0
    for i in range(n_states):
        tab[j, i, 2] = 0.0
    for i in range(n_states):
        q = np.float64(tab[j, i, 0])
        tab[j, i, 2] += q
        tab[j, int(tab[j, i, 1]), 2] += 1.0 - q


_BUILT: dict = {}


def build_sweep(mutation: str | None = None):
    """The alias-MH ``sweeps`` (module docstring), compiled with ``mutation`` (a key of
    :data:`MUTATIONS`) or, for ``None``, without any: that one is :func:`sweeps`. One source
    for every variant; the switches are closure constants that numba folds away."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if mutation in _BUILT:
        return _BUILT[mutation]
    delta_term = mutation != "alias-no-delta"
    stale_ratio = mutation == "alias-stale-table"

    @njit(cache=True, fastmath=True, boundscheck=False)
    def sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta):
        """``n_sweeps`` alias-MH sweeps over ``positions`` (the ``t`` with ``tokens[t-1] != 0``,
        increasing): per position one out-table and one in-table Metropolis-Hastings step
        targeting Eq. 9 (module docstring), block 0's positions then block 1's; ``2 M``
        uniforms per sweep. The arguments are the chain state of the module docstring.
        Returns ``(moved, proposed, accepted)`` int64, summed over the sweeps: the positions
        whose state changed, the steps that proposed another state and those accepted
        (``_cgs_pfa_kernel.STATS``)."""
        moved = 0
        proposed = 0
        accepted = 0
        n_states = c.shape[0] - 1
        n_symbols = c.shape[1]
        nab = n_states * n_symbols * beta
        beta32 = np.float32(beta)
        nbeta32 = np.float32(n_states * beta)
        n_out = n_symbols * (n_states + 1)
        tab = np.empty((2 * n_out, n_states, 3), dtype=np.float32)
        stamp = np.zeros(2 * n_out, dtype=np.int64)
        stacks = np.empty(2 * n_states, dtype=np.int32)
        co = np.empty_like(c)
        cto = np.empty_like(ct)
        cio = np.empty_like(ci)
        recipo = np.empty_like(recip)
        h = _block_split(tokens)
        # first index m of block 1 in positions
        m_split = np.searchsorted(positions, h)
        n_pos = positions.shape[0]
        phase = 0
        for _ in range(n_sweeps):
            for block in range(2):
                phase += 1
                if block == 0:
                    fill_counts(tokens[h:], z[h:], co, cto, cio, recipo, beta)
                    m_lo, m_hi = 0, m_split
                else:
                    fill_counts(tokens[:h], z[:h + 1], co, cto, cio, recipo, beta)
                    m_lo, m_hi = m_split, n_pos
                for m0 in range(m_lo, m_hi, CHUNK):
                    m1 = min(m0 + CHUNK, m_hi)
                    uniforms = rng.random(2 * (m1 - m0))
                    for m in range(m0, m1):
                        t = positions[m]
                        ap = tokens[t - 1]
                        a = tokens[t]
                        p = z[t - 1]
                        n = z[t + 1]
                        old = z[t]
                        b_out = nbeta32 if a == 0 else beta32
                        g_old = np.float32(-1.0)  # computed when first needed
                        start = old
                        for step in range(2):
                            if step == 0:
                                j = a * (n_states + 1) + n
                            else:
                                j = n_out + p * n_symbols + ap
                            if stamp[j] != phase:
                                stamp[j] = phase
                                for kk in range(n_states):
                                    if step == 0:
                                        tab[j, kk, 2] = (cto[a, n, kk + 1] + b_out) * recipo[kk + 1]
                                    else:
                                        tab[j, kk, 2] = co[p, ap, kk + 1] + beta32
                                _build_alias(tab, j, stacks, n_states)
                            x = uniforms[2 * (m - m0) + step] * n_states
                            i = min(int(x), n_states - 1)
                            f = x - i
                            q_i = np.float64(tab[j, i, 0])
                            if f < q_i:
                                k = i + 1
                                f = f / q_i
                            else:
                                k = int(tab[j, i, 1]) + 1
                                f = (f - q_i) / (1.0 - q_i)
                            if k == old:
                                continue
                            proposed += 1
                            if g_old < 0:
                                g_old = _exact_weight(old, p, ap, a, n, old, c, ct, ci, nab, b_out,
                                                      beta32, True, True, True, delta_term, True)
                            g_k = _exact_weight(k, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                                                True, True, True, delta_term, True)
                            if stale_ratio:
                                if step == 0:
                                    w_old = (ct[a, n, old] + b_out) * recip[old]
                                    w_k = (ct[a, n, k] + b_out) * recip[k]
                                else:
                                    w_old = c[p, ap, old] + beta32
                                    w_k = c[p, ap, k] + beta32
                            else:
                                w_old = tab[j, old - 1, 2]
                                w_k = tab[j, k - 1, 2]
                            # accept with probability min(1, g_k w_old / (g_old w_k))
                            if f * (np.float64(g_old) * w_k) < np.float64(g_k) * w_old:
                                accepted += 1
                                move_state(t, k, old, p, ap, a, n, z, c, ct, ci, recip, nab)
                                old = k
                                g_old = g_k
                        moved += old != start
        return moved, proposed, accepted

    _BUILT[mutation] = sweeps
    return sweeps


#: The production alias-MH sweeps (no mutation); see :func:`build_sweep`.
sweeps = build_sweep(None)


@njit(cache=True)
def sample_draws(period, positions, tokens, z, c, ct, ci, recip, rng, beta,
                 out_counts, out_log_joint, out_n_states, out_n_edges, out_stats):
    """For each draw ``d``: ``period`` alias-MH sweeps, then record the counts and trace values
    (the outputs of :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sample_draws`, ``out_stats``
    with its three columns)."""
    for d in range(out_counts.shape[0]):
        out_stats[d, 0], out_stats[d, 1], out_stats[d, 2] = sweeps(
            period, positions, tokens, z, c, ct, ci, recip, rng, beta)
        record_draw(d, c, ci, beta, out_counts, out_log_joint, out_n_states, out_n_edges)

