"""Validation of ``hpyp`` (``bayesfa validate hpyp``) and exact references for the HPYP and
the sequence memoizer on tiny data.

Exact marginal likelihood. With the table counts ``t_uw`` the only latent variables left
(table sizes summed out), the joint of data and seating is (Teh 2006 TR, Eq. 13/App. A)

``prod_u [prod_{i=1}^{t_u.-1} (theta_u + i d_u) / prod_{i=1}^{c_u.-1} (theta_u + i)]
prod_w S_{d_u}(c_uw, t_uw) * prod_w G0(w)^{t_root,w}``

with ``S_d`` the generalised Stirling numbers (``S_d(c+1, t) = S_d(c, t-1) + (c - d t)
S_d(c, t)``) and ``c_uw`` = the data at ``u`` plus the children's ``t_vw``.
:func:`log_marginal` sums it over every table-count configuration by passing, up the tree,
each node's distribution over its table-count vector (exact; feasible for a few dozen
symbols). The posterior predictive of a string with its symbols folded in as they are read
(what :mod:`bayesfa.samplers.ngram.hpyp` estimates) is then ``p(train + string) / p(train)``.

The predictive check of the harness compares the sampler (fixed ``d``, ``theta``) with that
reference on the ``tiny`` toy; the mutant ``no-join-discount`` (the join weight without the
discount) must fail it.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus

MUTANTS = {"no-join-discount": 1}
#: fixed hyperparameters of the predictive check
FIXED = {"discount": 0.5, "concentration": 0.5}


@lru_cache(maxsize=None)
def log_stirling(d: float, c: int, t: int) -> float:
    """``log S_d(c, t)``: the summed weights ``prod_k (1 - d)_{n_k - 1}`` of the partitions of
    ``c`` customers into ``t`` tables (``-inf`` if there are none)."""
    if c == 0 and t == 0:
        return 0.0
    if t < 1 or t > c:
        return -math.inf
    a = log_stirling(d, c - 1, t - 1)
    b = log_stirling(d, c - 1, t)
    terms = [a, (math.log(c - 1 - d * t) + b) if b > -math.inf and c - 1 - d * t > 0 else -math.inf]
    m = max(terms)
    return m if m == -math.inf else m + math.log(sum(math.exp(x - m) for x in terms))


def _restaurant(cv, tv, d, th) -> float:
    C, T = sum(cv), sum(tv)
    if C == 0:
        return 0.0
    lp = sum(math.log(th + i * d) for i in range(1, T)) - sum(math.log(th + i) for i in range(1, C))
    return lp + sum(log_stirling(d, c, t) for c, t in zip(cv, tv))


def _logadd(table: dict, key, value: float) -> None:
    old = table.get(key)
    table[key] = value if old is None else np.logaddexp(old, value)


def log_marginal(parent: np.ndarray, nd: np.ndarray, nth: np.ndarray, tok_node: np.ndarray,
                 tok_sym: np.ndarray, n_sym: int) -> float:
    """``log p(data)`` of the hierarchical PY model on a context tree (module docstring):
    ``parent`` ``[U]``, per-node discount ``nd`` and concentration ``nth``, the data's
    deepest nodes ``tok_node`` and symbols ``tok_sym``, uniform base over ``n_sym``."""
    n = parent.size
    direct = np.zeros((n, n_sym), dtype=np.int64)
    np.add.at(direct, (tok_node, tok_sym), 1)
    children: list[list[int]] = [[] for _ in range(n)]
    for v in range(1, n):
        children[parent[v]].append(v)
    level = np.zeros(n, dtype=np.int64)
    for v in range(n):
        u = v
        while parent[u] >= 0:
            level[v] += 1
            u = parent[u]
    msg: dict[int, dict[tuple, float]] = {}
    for u in sorted(range(n), key=lambda x: -level[x]):
        incoming = {tuple(direct[u]): 0.0}
        for v in children[u]:
            nxt: dict[tuple, float] = {}
            for a, la in incoming.items():
                for b, lb in msg[v].items():
                    _logadd(nxt, tuple(x + y for x, y in zip(a, b)), la + lb)
            incoming = nxt
        out: dict[tuple, float] = {}
        for cv, lw in incoming.items():
            ranges = [range(1, c + 1) if c > 0 else range(0, 1) for c in cv]
            for tv in itertools.product(*ranges):
                _logadd(out, tv, lw + _restaurant(cv, tv, nd[u], nth[u]))
        msg[u] = out
    base = -math.log(n_sym)
    return float(np.logaddexp.reduce([lw + sum(tv) * base for tv, lw in msg[0].items()]))


def hpyp_log_marginal(corpus: Corpus, order: int, discount: float, concentration: float,
                      sequence: bool = False, n_letters: int | None = None) -> float:
    """``log p(corpus)`` under the order-``order`` HPYP with every ``d = discount``,
    ``theta = concentration`` (the conventions of :mod:`bayesfa.samplers.ngram.hpyp`)."""
    from bayesfa.samplers.ngram.hpyp import context_tree, flat_symbols

    F, n_sym, first = flat_symbols(corpus, sequence, n_letters)
    parent, depth, tok_node = context_tree(F, first, not sequence, order - 1, compress=False)
    nd = np.full(parent.size, discount)
    nth = np.full(parent.size, concentration)
    return log_marginal(parent, nd, nth, tok_node, F[first:].astype(np.int64), n_sym)


def memoizer_log_marginal(corpus: Corpus, discounts, d_inf: float, compress: bool,
                          sequence: bool = False) -> float:
    """``log p(corpus)`` under the sequence memoizer's model (concentration 0), on the
    compressed tree (products of discounts) or the uncompressed one (a restaurant per
    context length): the two must agree (coagulation)."""
    from bayesfa.samplers.ngram.hpyp import context_tree, flat_symbols
    from bayesfa.samplers.ngram.memoizer import node_discounts

    F, n_sym, first = flat_symbols(corpus, sequence)
    parent, depth, tok_node = context_tree(F, first, not sequence, None, compress)
    nd = node_discounts(parent, depth, discounts, d_inf)
    return log_marginal(parent, nd, np.zeros(parent.size), tok_node,
                        F[first:].astype(np.int64), n_sym)


def exact_predictive(train: Corpus, test: Corpus, order: int, discount: float,
                     concentration: float) -> np.ndarray:
    """``log p(string | train)`` for each test string (sentences): ``p(train + string) /
    p(train)``."""
    base = hpyp_log_marginal(train, order, discount, concentration)
    a = max(train.alphabet_size, test.alphabet_size)
    out = np.empty(test.n_strings)
    for s in range(test.n_strings):
        both = Corpus.from_strings(train.strings() + [test.string(s)], a)
        out[s] = hpyp_log_marginal(both, order, discount, concentration) - base
    return out


class HPYPSpec:
    """The validation spec of ``hpyp`` (:mod:`bayesfa.validation.harness`)."""

    validation_budget: dict[str, Any] = {"iterations": 4_100, "burn_in": 100, "period": 1,
                                         "chains": 4, "order": 2, **FIXED}

    def __init__(self, variant: int = 0, variant_name: str = ""):
        self.variant = variant
        self.variant_name = variant_name

    def exact_reference(self, toy, test, options):
        order = int(options.get("order", 2))
        d, th = options["discount"], options["concentration"]
        ref = exact_predictive(toy.train, test, order, d, th)
        return {"reference": ref, "exact": ref,
                "kind": f"exact HPYP predictive (order {order}, d={d}, theta={th}) by summing "
                        f"the table counts (generalised Stirling numbers)"}

    def per_sample_log_prob(self, arrays, options, test):
        from bayesfa.samplers.ngram.hpyp import per_sample_log_prob

        return per_sample_log_prob(arrays, options, test)

    def mutant_names(self):
        return list(MUTANTS)

    def mutant(self, variant: str):
        from bayesfa.samplers.ngram.hpyp import _HPYP

        from bayesfa.validation.harness import carry_spec

        method = _HPYP()
        method.variant = MUTANTS[variant]
        return carry_spec(method, HPYPSpec(MUTANTS[variant], variant), f"hpyp:mutant-{variant}")


HPYP = HPYPSpec()
