"""Numba kernel of CGS-PFA with O(1) table-free proposals: MH within Gibbs from token buckets.

The target of every update is the conditional of Shibata & Yoshinaka (2013), Eq. 9,

    Pr(z_t = k | z^{-t}, alpha)  ~  (C^{-t}_{k a_t z_{t+1}} + b) (C^{-t}_{z_{t-1} a_{t-1} k} + beta + delta)
                                     / (C^{-t}_k + N A beta),

evaluated exactly, delta term included, by :func:`bayesfa.samplers.pfa._cgs_pfa_kernel._exact_weight`
(the one home of that weight). Instead of summing it over all ``N`` states (the Gibbs kernel of
:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`, O(N) per token), each position gets Metropolis-Hastings
steps whose proposals follow the two factors of Eq. 9 and are drawn in O(1) *without any
table*, as LightLDA draws its doc-proposal (Yuan et al., "LightLDA: Big topic models on modest
computer clusters", WWW 2015, Sect. 3): a factor ``C'_x + w`` over ``k = 1..N`` is a mixture of
the empirical distribution of some tokens (pick one of the ``S = sum_k C'_x`` tokens uniformly
and read its state) and the uniform distribution over the ``N`` states (weight ``N w``):

1. the *out* proposal ``q_out(k) ~ C'_{k a_t z_{t+1}} + b``: a token ``s`` of the other block
   with ``(a_s, z_{s+1}) = (a_t, z_{t+1})`` and ``z_s != 0``, proposing its *source* state
   ``z_s`` (the denominator ``C_k + N A beta`` of Eq. 9 is left to the ratio);
2. the *in* proposal ``q_in(k) ~ C'_{z_{t-1} a_{t-1} k} + beta``: a token ``s`` with
   ``(z_s, a_s) = (z_{t-1}, a_{t-1})``, proposing its *successor* state ``z_{s+1}``.

Each proposal's probabilities are known in O(1) from the other block's counts ``C'``, up to its
normaliser ``S + N w`` (the bucket's size): a step accepts ``k`` with probability
``min(1, g_k q(z_t) / (g_{z_t} q(k)))``, ``g`` the exact weight of Eq. 9. With
``steps=2`` (:func:`build_sweep`) a position gets an out step then an in step (the LightLDA
cycle; two uniforms); with ``steps=1`` one step from the *mixture* ``(q_out + q_in) / 2`` of
the two normalised proposals (one uniform: its half picks the component), which
is at least as efficient as choosing one of the two kernels at random (Peskun order: the
mixture's off-diagonal ``min(q(k), g_k q(o) / g_o)`` is at least the average of the
components'). The production kernel, :func:`sweeps`, is ``steps=1`` (:data:`STEPS`; measured in
benchmarks/RESULTS.md). Both proposals give every state a positive probability, so each step
can reach every state.

Which counts ``C'`` the proposals use, and why (exactness): as in the alias-table kernel
(:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel`, whose block split this one shares), a proposal
built from the chain's current counts would depend on ``z_t`` itself, and the ratio would not
be that of the proposal made. So the strings are split into :data:`BLOCKS` contiguous blocks
and the sweep runs block by block (positions still in increasing ``t``, as Algorithm 1);
while block ``B`` is updated the proposals read the counts ``C'`` and the token *buckets* of
the *other* block, which do not change during that phase. A proposal for ``z_t``, ``t`` in ``B``, is then a function of ``z^{-t}`` only, so
each step is an exact Metropolis-Hastings step for Eq. 9 and the sweep leaves the posterior
invariant (checked by exact enumeration,
:func:`bayesfa.validation.pfa.kernel_tests.bucket_sweep_distribution`).
The buckets are built at the start of each phase by a counting sort of the other block's
tokens (:func:`_fill_buckets`, two passes over them): O(T) per phase, independent of ``N``
(the alias-table kernel builds up to ``2 A (N+1) N`` entries per phase). Each block's counts
are kept beside the full counts (counted once per call, then moved with every accepted
move). Everything lives inside one call of :func:`sweeps`, so the result does not depend on
how sweeps are grouped into calls (checkpoints resume bit-identically).

Chain state: exactly that of :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel` (``z [T+1]``, ``c [N+1, A,
W]``, ``ct [A, N+1, W]``, ``ci [N+1]``, ``recip [W]``, same invariants, float32 whole-number
counts exact below 2**24 tokens), so both kernels run on the same state and share
``fill_counts``, ``move_state`` and ``record_draw``. Scratch of one call
(:func:`scratch_bytes`): ``cb`` float32 ``[2, N+1, A, N+1]``, ``cb[B, i, a, j]`` the count
of ``(i, a, j)`` among block ``B``'s tokens (so ``C = cb[0] + cb[1]``; while block ``B`` is
updated ``C' = cb[1 - B]``); bucket offsets ``in_start``, ``out_start`` int64 ``[A (N+1) +
1]`` (keys ``p A + a'`` and ``a (N+1) + n``) and their fill cursors; bucket contents
``in_vals``, ``out_vals`` int32 ``[T]``: the states the buckets propose, grouped by key.

Random numbers: ``STEPS * M`` uniforms per sweep (``M`` positions), drawn as ``rng.random`` of
:data:`CHUNK` positions at a time (the same stream whatever the chunks). A uniform ``u`` (for
``steps=1`` first doubled, after its half picked the component) is scaled to ``x = u (S + N w)``:
``x < S`` picks bucket entry ``floor(x)``, else slot ``floor((x - S) / w)`` of the uniform part;
the fraction left over (``x - floor(x)``, resp. ``(x - S) / w`` minus its floor), uniform and
independent of the proposal, decides the acceptance. Its resolution is ``2**-52 (S + N w) / w``
at worst (about 2e-8 for ``S = 1e6``, ``w = 0.01``), the only departure from an exact
Metropolis-Hastings step besides float32 rounding of the weights (relative ~1e-7).

The sweep is built by :func:`build_sweep`, which can also compile it with one deliberate error
(:data:`MUTATIONS`) for the validation suite's mutants; the production kernel, :func:`sweeps`,
has every switch off. ``bayesfa fit --method cgs-pfa --kernel bucket-mh`` runs it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_alias_kernel import BLOCKS, CHUNK, _block_split  # noqa: F401
# fill_counts: the chain state is the Gibbs kernel's (cgs_pfa.kernel_module reads it here)
from bayesfa.samplers.pfa._cgs_pfa_kernel import (_exact_weight, fill_counts, move_state,  # noqa: F401
                                              record_draw)

#: Metropolis-Hastings steps per position of the production kernel (module docstring).
STEPS = 1

#: Deliberate errors that :func:`build_sweep` can compile into the sweep (validated as
#: ``bayesfa validate cgs-pfa:mutant-NAME``); the production sweep has none of them.
MUTATIONS: dict[str, str] = {
    "bucket-no-delta": "bucket-MH kernel whose acceptance ratio uses Eq. 9 without its delta term",
    "bucket-current-counts": "bucket-MH kernel whose ratio uses the current counts' factors "
                             "instead of the proposal's own probabilities (the other block's "
                             "counts)",
}


def scratch_bytes(n_states: int, n_symbols: int, n_tokens: int) -> int:
    """Bytes of the scratch one call of :func:`sweeps` allocates (module docstring)."""
    keys = n_symbols * (n_states + 1) + 1
    return 2 * (n_states + 1) * n_symbols * (n_states + 1) * 4 + 4 * keys * 8 + 2 * n_tokens * 4


@njit(cache=True)
def _count_block(tokens, z, lo, hi, cb):
    """``cb[z_s, a_s, z_{s+1}] += 1`` for the tokens ``s`` in ``[lo, hi)`` (Definition 2)."""
    for s in range(lo, hi):
        cb[z[s], tokens[s], z[s + 1]] += 1


@njit(cache=True)
def _fill_buckets(tokens, z, lo, hi, n_states, n_symbols, in_start, in_vals, out_start, out_vals,
                  cursor):
    """Counting sort of the tokens ``s`` in ``[lo, hi)`` into the in buckets (key
    ``z_s A + a_s``, value ``z_{s+1}``; letters only) and the out buckets (key
    ``a_s (N+1) + z_{s+1}``, value ``z_s``; ``z_s != 0`` only): bucket ``key`` holds
    ``vals[start[key]:start[key + 1]]``. cursor int64 ``[2, A (N+1) + 1]`` scratch."""
    in_start[:] = 0
    out_start[:] = 0
    for s in range(lo, hi):
        i, a, j = z[s], tokens[s], z[s + 1]
        if a != 0:
            in_start[i * n_symbols + a + 1] += 1
        if i != 0:
            out_start[a * (n_states + 1) + j + 1] += 1
    for key in range(in_start.shape[0] - 1):
        in_start[key + 1] += in_start[key]
        out_start[key + 1] += out_start[key]
    cursor[0] = in_start
    cursor[1] = out_start
    for s in range(lo, hi):
        i, a, j = z[s], tokens[s], z[s + 1]
        if a != 0:
            key = i * n_symbols + a
            in_vals[cursor[0, key]] = j
            cursor[0, key] += 1
        if i != 0:
            key = a * (n_states + 1) + j
            out_vals[cursor[1, key]] = i
            cursor[1, key] += 1


@njit(cache=True, inline="always")
def _draw(u, vals, lo, size, w, n_states):
    """``(k, f)``: a state from the bucket ``vals[lo:lo + size]`` mixed with the uniform
    distribution of weight ``N w`` (module docstring), from ``u`` in [0, 1), and the fraction
    of ``u`` left over (a uniform independent of ``k``)."""
    x = u * (size + n_states * w)
    if x < size:
        i = int(x)
        return vals[lo + i] + 0, x - i
    y = (x - size) / w
    i = min(int(y), n_states - 1)
    return i + 1, y - i


_BUILT: dict = {}


def build_sweep(mutation: str | None = None, steps: int = STEPS):
    """The bucket-MH ``sweeps`` (module docstring) with ``steps`` (1: one step from the mixture
    proposal; 2: an out step then an in step) Metropolis-Hastings steps per position, compiled
    with ``mutation`` (a key of :data:`MUTATIONS`) or, for ``None``, without any: that one with
    ``steps = STEPS`` is :func:`sweeps`. One source for every variant; the switches are closure
    constants that numba folds away."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if steps not in (1, 2):
        raise ValueError(f"steps must be 1 or 2, got {steps!r}")
    if (mutation, steps) in _BUILT:
        return _BUILT[mutation, steps]
    delta_term = mutation != "bucket-no-delta"
    current_ratio = mutation == "bucket-current-counts"
    mixture = steps == 1

    @njit(cache=True, fastmath=True, boundscheck=False)
    def sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta):
        """``n_sweeps`` bucket-MH sweeps over ``positions`` (the ``t`` with ``tokens[t-1] != 0``,
        increasing), block 0's positions then block 1's, each proposing from the other block's
        buckets and accepting with the exact Eq. 9 weight (module docstring). The arguments
        are the chain state of :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`. Returns
        ``(moved, proposed, accepted)`` int64, summed over the sweeps: the positions whose
        state changed, the steps that proposed another state and those accepted
        (``_cgs_pfa_kernel.STATS``)."""
        moved = 0
        proposed = 0
        accepted = 0
        n_states = c.shape[0] - 1
        n_symbols = c.shape[1]
        n_tokens = tokens.shape[0]
        nab = n_states * n_symbols * beta
        beta32 = np.float32(beta)
        nbeta32 = np.float32(n_states * beta)
        keys = n_symbols * (n_states + 1) + 1
        cb = np.zeros((2, n_states + 1, n_symbols, n_states + 1), dtype=np.float32)
        in_start = np.empty(keys, dtype=np.int64)
        out_start = np.empty(keys, dtype=np.int64)
        cursor = np.empty((2, keys), dtype=np.int64)
        in_vals = np.empty(n_tokens, dtype=np.int32)
        out_vals = np.empty(n_tokens, dtype=np.int32)
        h = _block_split(tokens)
        _count_block(tokens, z, 0, h, cb[0])
        _count_block(tokens, z, h, n_tokens, cb[1])
        m_split = np.searchsorted(positions, h)  # first index of block 1 in positions
        n_pos = positions.shape[0]
        for _ in range(n_sweeps):
            for block in range(2):
                if block == 0:  # the other block: tokens [h, T)
                    o_lo, o_hi, m_lo, m_hi = h, n_tokens, 0, m_split
                else:
                    o_lo, o_hi, m_lo, m_hi = 0, h, m_split, n_pos
                co = cb[1 - block]  # C', fixed in this phase
                cown = cb[block]
                _fill_buckets(tokens, z, o_lo, o_hi, n_states, n_symbols, in_start, in_vals,
                              out_start, out_vals, cursor)
                for m0 in range(m_lo, m_hi, CHUNK):
                    m1 = min(m0 + CHUNK, m_hi)
                    uniforms = rng.random(steps * (m1 - m0))
                    for m in range(m0, m1):
                        t = positions[m]
                        ap = tokens[t - 1]
                        a = tokens[t]
                        p = z[t - 1]
                        n = z[t + 1]
                        old = z[t]
                        b_out = nbeta32 if a == 0 else beta32
                        key_out = a * (n_states + 1) + n
                        lo_out = out_start[key_out]
                        s_out = out_start[key_out + 1] - lo_out
                        key_in = p * n_symbols + ap
                        lo_in = in_start[key_in]
                        s_in = in_start[key_in + 1] - lo_in
                        g_old = np.float32(-1.0)  # computed when first needed
                        start = old
                        for step in range(steps):
                            u = uniforms[steps * (m - m0) + step]
                            if mixture:
                                use_out = u < 0.5
                                u = 2.0 * u if use_out else 2.0 * u - 1.0
                            else:
                                use_out = step == 0
                            if use_out:
                                k, f = _draw(u, out_vals, lo_out, s_out, b_out, n_states)
                            else:
                                k, f = _draw(u, in_vals, lo_in, s_in, beta32, n_states)
                            if k == old:
                                continue
                            proposed += 1
                            if g_old < 0:
                                g_old = _exact_weight(old, p, ap, a, n, old, c, ct, ci, nab, b_out,
                                                      beta32, True, True, True, delta_term, True)
                            g_k = _exact_weight(k, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                                                True, True, True, delta_term, True)
                            # the proposal's own probabilities, up to a common factor
                            if current_ratio:  # mutant: the current counts instead of C'
                                o_old, o_k = ct[a, n, old], ct[a, n, k]
                                i_old, i_k = c[p, ap, old], c[p, ap, k]
                            else:
                                o_old, o_k = co[old, a, n], co[k, a, n]
                                i_old, i_k = co[p, ap, old], co[p, ap, k]
                            if mixture:
                                norm_out = 1.0 / (s_out + n_states * np.float64(b_out))
                                norm_in = 1.0 / (s_in + n_states * np.float64(beta32))
                                q_old = (o_old + b_out) * norm_out + (i_old + beta32) * norm_in
                                q_k = (o_k + b_out) * norm_out + (i_k + beta32) * norm_in
                            elif use_out:
                                q_old, q_k = np.float64(o_old + b_out), np.float64(o_k + b_out)
                            else:
                                q_old, q_k = np.float64(i_old + beta32), np.float64(i_k + beta32)
                            # accept with probability min(1, g_k q_old / (g_old q_k))
                            if f * (np.float64(g_old) * q_k) < np.float64(g_k) * q_old:
                                accepted += 1
                                move_state(t, k, old, p, ap, a, n, z, c, ct, ci, recip, nab)
                                cown[p, ap, old] -= 1
                                cown[p, ap, k] += 1
                                cown[old, a, n] -= 1
                                cown[k, a, n] += 1
                                old = k
                                g_old = g_k
                        moved += old != start
        return moved, proposed, accepted

    _BUILT[mutation, steps] = sweeps
    return sweeps


#: The production bucket-MH sweeps (no mutation, :data:`STEPS` steps); see :func:`build_sweep`.
sweeps = build_sweep(None)


@njit(cache=True)
def sample_draws(period, positions, tokens, z, c, ct, ci, recip, rng, beta,
                 out_counts, out_log_joint, out_n_states, out_n_edges, out_stats):
    """For each draw ``d``: ``period`` bucket-MH sweeps, then record the counts and trace values
    (the outputs of :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sample_draws`, ``out_stats``
    with its three columns)."""
    for d in range(out_counts.shape[0]):
        out_stats[d, 0], out_stats[d, 1], out_stats[d, 2] = sweeps(
            period, positions, tokens, z, c, ct, ci, recip, rng, beta)
        record_draw(d, c, ci, beta, out_counts, out_log_joint, out_n_states, out_n_edges)
