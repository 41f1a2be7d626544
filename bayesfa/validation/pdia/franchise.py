"""The PDIA's Chinese restaurant franchise, enumerated (plain Python): the core that the exact
references of ``pdia`` and ``pdia-smoothed`` (:mod:`bayesfa.validation.pdia.pdfa`,
:mod:`bayesfa.validation.pdia.smoothed`) and the move checks (:mod:`bayesfa.validation.pdia.moves`)
share. Written from the model's definition (Pfau, Bartlett & Wood 2010, Sect. 3.4), never
from the sampler's kernels.
"""

from __future__ import annotations


class Franchise:
    """A Pitman-Yor Chinese restaurant franchise with a non-atomic base (plain Python)."""

    def __init__(self, alpha, d, alpha0, d0):
        self.alpha, self.d, self.alpha0, self.d0 = alpha, d, alpha0, d0
        self.tables: dict[int, list[list[int]]] = {}   # column -> [[n, dish], ...]
        self.m: dict[int, int] = {}                     # dish -> tables

    def options(self, j: int, k_max: int):
        """``[(prob, kind, arg)]`` for a new customer of column ``j``; kind ``"join"`` (table
        index), ``"old"`` (existing dish), ``"new"`` (a new state); plus the probability of
        the new-state branches cut off by ``k_max`` states."""
        tabs = self.tables.get(j, [])
        n = sum(t[0] for t in tabs)
        out = []
        for idx, (nt, _) in enumerate(tabs):
            out.append(((nt - self.d) / (self.alpha + n), "join", idx))
        p_new_table = (self.alpha + self.d * len(tabs)) / (self.alpha + n) if n else 1.0
        big_m = sum(self.m.values())
        n_dish = len(self.m)
        for k, mk in self.m.items():
            out.append((p_new_table * (mk - self.d0) / (self.alpha0 + big_m), "old", k))
        p_new_dish = p_new_table * ((self.alpha0 + self.d0 * n_dish) / (self.alpha0 + big_m)
                                    if big_m else 1.0)
        if n_dish < k_max:
            out.append((p_new_dish, "new", n_dish + 1))
            return out, 0.0
        return out, p_new_dish

    def seat(self, j, kind, arg):
        """Seat; returns ``(dish, undo)``."""
        tabs = self.tables.setdefault(j, [])
        if kind == "join":
            tabs[arg][0] += 1
            return tabs[arg][1], ("join", j, arg)
        k = arg
        tabs.append([1, k])
        self.m[k] = self.m.get(k, 0) + 1
        return k, ("table", j, k)

    def unseat(self, undo):
        kind, j, arg = undo
        if kind == "join":
            self.tables[j][arg][0] -= 1
            return
        self.tables[j].pop()
        self.m[arg] -= 1
        if self.m[arg] == 0:
            del self.m[arg]


def walk_seatings(tokens, pos, q, weight, crf, delta, k_max, leaf, emit, unemit, on_cut,
                  seat=None):
    """Depth-first over every way the franchise ``crf`` (a :class:`Franchise`) seats the
    new transitions that ``tokens[pos:]`` visit from state ``q``, at most ``k_max`` dishes;
    ``delta`` (``(state, letter) -> state``) holds the branch's transitions, restored on
    return. The walker of both exact references (:func:`pdia_log_marginals`,
    :func:`bayesfa.validation.pdia.smoothed.log_marginals`).

    ``emit(q, s, weight) -> weight`` counts the emission of symbol ``s`` at ``q`` into the
    branch and returns the branch weight times its factor; ``unemit(touched)`` takes back
    the emissions ``touched`` (a list of ``(q, s)``) when the walk returns. ``on_cut(weight, cut)`` is called at every new transition: the
    fraction ``cut`` (maybe 0) of the branch's seatings that ``k_max`` cuts off.
    ``leaf(weight)`` is called at the end of ``tokens`` with the weight of that branch
    (prior of the seating times the emission factors), while ``delta`` (and, if given,
    ``seat``: ``(state, letter) -> table index in the column``) hold its configuration."""
    touched = []
    while pos < len(tokens):
        s = tokens[pos]
        weight = emit(q, s, weight)
        touched.append((q, s))
        pos += 1
        if s == 0:
            q = 0
            continue
        if (q, s) in delta:
            q = delta[(q, s)]
            continue
        opts, cut = crf.options(s, k_max)
        on_cut(weight, cut)
        for prob, kind, arg in opts:
            k, undo = crf.seat(s, kind, arg)
            delta[(q, s)] = k
            if seat is not None:
                seat[(q, s)] = arg if kind == "join" else len(crf.tables[s]) - 1
            walk_seatings(tokens, pos, k, weight * prob, crf, delta, k_max, leaf, emit, unemit,
                          on_cut, seat)
            del delta[(q, s)]
            crf.unseat(undo)
        break
    else:
        leaf(weight)
    unemit(touched)
