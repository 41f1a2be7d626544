"""Exact checks of the greedy state mergers (``bayesfa validate estatemerge | alergia``) against
a small independent implementation of red-blue state merging, written from the papers
(Carrasco & Oncina 1994; Shibata & Yoshinaka 2013, Sect. 4.5.1, Eq. 21) with Python dicts:
nothing of :mod:`bayesfa.learners.greedy` is called for the expected values.

The reference builds the prefix tree (a node per prefix, named by the prefix; its order is
``(len(prefix), prefix)``), takes the smallest blue state (a non-red child of a red state),
tries it against every red state in that order and merges (redirecting its parent's edge to
the red state and folding the subtree recursively) or promotes it:

- EStateMerge: each trial fold is done on a copy and scored by the *whole* automaton's
  ``log Pr(alpha | G)`` of Eq. 21 (every live state's factor summed again from scratch, not the
  method's incremental sum over the touched states); the red state with the largest rise is
  taken if the rise is positive (the first of equal ones);
- ALERGIA: the first red state compatible with the blue one by the Hoeffding test on the
  prefix-tree counts, recursively over their common letters.

Data: :data:`N_STRINGS` strings (ALERGIA: :data:`N_STRINGS_ALERGIA`, so that its mutant
changes a decision) sampled (seeded by ``--seed``) from the toy's source automaton
(the ``three`` toy's for a toy without one): the toys' own 7-10 strings are too few for the
Hoeffding test to reject anything or for Eq. 21 to keep more than 2-3 states.

Checks (exact):

``merges``
    the sequence of decisions (each blue state, the red state it went into or "red"), with the
    criterion at each step (EStateMerge: the rise of Eq. 21 and the evidence after the step;
    ALERGIA: the largest ``|f1/n1 - f2/n2| - bound`` over the recursion, <= 0 means
    compatible), and the learned machine: the method's ``delta`` and ``counts`` must equal the
    reference's.
``evidence`` (EStateMerge)
    the ``log_evidence`` the method reports equals Eq. 21 of the reference machine (<= 1e-9).
``predictive``
    the method's ``predict_log_prob`` of every string up to length 3 equals the reference's
    smoothed PDFA (Dirichlet(beta) posterior mean per state, a unigram sink for missing edges)
    (<= 1e-10).
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

import numpy as np
from scipy.special import gammaln

from bayesfa.corpus import Corpus
from bayesfa.validation.checks import Check

N_STRINGS = 300
N_STRINGS_ALERGIA = 3000
EVIDENCE_TOL = 1e-9
PREDICT_TOL = 1e-10
CRITERION_TOL = 1e-9


class Automaton:
    """A partially merged prefix tree: ``child[node][a] -> node`` and ``count[node]``
    ``[A+1]`` (column 0: ends), nodes named by their prefix (tuples of tokens ``1..A``)."""

    def __init__(self, corpus: Corpus):
        self.n_sym = corpus.alphabet_size + 1
        self.child: dict[tuple, dict[int, tuple]] = {(): {}}
        self.count: dict[tuple, np.ndarray] = {(): np.zeros(self.n_sym, dtype=np.int64)}
        for s in range(corpus.n_strings):
            node: tuple = ()
            for letter in corpus.string(s):
                a = int(letter) + 1
                self.count[node][a] += 1
                nxt = node + (a,)
                if nxt not in self.child:
                    self.child[nxt] = {}
                    self.count[nxt] = np.zeros(self.n_sym, dtype=np.int64)
                self.child[node][a] = nxt
                node = nxt
            self.count[node][0] += 1

    def live(self) -> list[tuple]:
        """The states reachable from the root, in prefix order."""
        seen, todo = {()}, [()]
        while todo:
            x = todo.pop()
            for c in self.child[x].values():
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return sorted(seen, key=key)

    def fold(self, x: tuple, y: tuple) -> None:
        """Fold the subtree of ``y`` into ``x`` (counts added; a child ``x`` lacks attached)."""
        self.count[x][0] += self.count[y][0]
        for a, yc in sorted(self.child[y].items()):
            self.count[x][a] += self.count[y][a]
            if a in self.child[x]:
                self.fold(self.child[x][a], yc)
            else:
                self.child[x][a] = yc

    def merge(self, red: tuple, blue: tuple) -> None:
        self.child[blue[:-1]][blue[-1]] = red
        self.fold(red, blue)

    def log_evidence(self, beta: float) -> float:
        """``log Pr(alpha | G)`` of Eq. 21 over the live states (a state without counts: 1)."""
        total = 0.0
        for q in self.live():
            c = self.count[q].astype(float)
            if c.sum() == 0:
                continue
            total += float(np.sum(gammaln(c + beta) - gammaln(beta))
                           + gammaln(self.n_sym * beta) - gammaln(c.sum() + self.n_sym * beta))
        return total


def key(prefix: tuple) -> tuple:
    return (len(prefix), prefix)


def red_blue(corpus: Corpus, choose: Callable) -> tuple[Automaton, list[tuple], list[dict]]:
    """Red-blue merging (module docstring): ``(automaton, red states, steps)``;
    ``choose(automaton, blue, reds) -> (red or None, step info)``."""
    m = Automaton(corpus)
    reds = [()]
    steps = []
    while True:
        blues = sorted({c for r in reds for c in m.child[r].values() if c not in reds}, key=key)
        if not blues:
            break
        b = blues[0]
        r, info = choose(m, b, list(reds))
        steps.append(dict(info, blue=_name(b), into=_name(r) if r is not None else "red"))
        if r is None:
            reds.append(b)
            reds.sort(key=key)
        else:
            m.merge(r, b)
    return m, reds, steps


def _name(prefix: tuple) -> str:
    return "".join(chr(ord("a") + a - 1) for a in prefix) or "ε"


def machine(m: Automaton, reds: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """``(delta [Q, A+1], counts [Q, A+1])`` of the red states in prefix order."""
    index = {r: i for i, r in enumerate(reds)}
    delta = np.full((len(reds), m.n_sym), -1, dtype=np.int64)
    counts = np.zeros((len(reds), m.n_sym), dtype=np.int64)
    for i, r in enumerate(reds):
        counts[i] = m.count[r]
        for a, c in m.child[r].items():
            delta[i, a] = index[c]
    return delta, counts


def smoothed_log_prob(delta, counts, unigram, beta: float, corpus: Corpus) -> np.ndarray:
    """``log Pr(x)`` under the smoothed PDFA: ``(C_qa + beta) / (C_q + (A+1) beta)`` per
    state; a missing edge goes to a sink emitting ``(U_a + beta) / (U + (A+1) beta)``."""
    n_sym = counts.shape[1]
    out = np.empty(corpus.n_strings)
    sink = (unigram + beta) / (unigram.sum() + n_sym * beta)
    for s in range(corpus.n_strings):
        q, lp = 0, 0.0
        for letter in list(corpus.string(s)) + [-1]:
            a = int(letter) + 1
            p = sink if q < 0 else (counts[q] + beta) / (counts[q].sum() + n_sym * beta)
            lp += math.log(p[a])
            if a and q >= 0:
                q = int(delta[q, a])  # -1: the sink, which loops on itself
        out[s] = lp
    return out


# -- criteria ---------------------------------------------------------------------------------

def estatemerge_choose(beta: float) -> Callable:
    def choose(m: Automaton, b: tuple, reds: list[tuple]):
        before = m.log_evidence(beta)
        best, best_gain, gains = None, 0.0, []
        for r in reds:
            trial = copy.deepcopy(m)
            trial.merge(r, b)
            gain = trial.log_evidence(beta) - before
            gains.append(gain)
            if gain > best_gain:
                best, best_gain = r, gain
        after = before + best_gain if best is not None else before
        return best, {"best_rise": max(gains), "evidence_after": after}
    return choose


def hoeffding_margin(pta: Automaton, x: tuple, y: tuple, log_term: float) -> float:
    """The largest ``|f1(a)/n1 - f2(a)/n2| - (1/sqrt(n1) + 1/sqrt(n2)) sqrt(ln(2/alpha)/2)``
    over ``x``, ``y`` and their common successors in the prefix tree (``-inf`` if no pair
    has counts on both sides); compatible iff <= 0 (Carrasco & Oncina 1994)."""
    worst = -math.inf
    cx, cy = pta.count[x], pta.count[y]
    n1, n2 = int(cx.sum()), int(cy.sum())
    if n1 and n2:
        bound = (math.sqrt(1 / n1) + math.sqrt(1 / n2)) * log_term
        worst = max(abs(cx[a] / n1 - cy[a] / n2) for a in range(cx.size)) - bound
    for a in sorted(set(pta.child[x]) & set(pta.child[y])):
        worst = max(worst, hoeffding_margin(pta, pta.child[x][a], pta.child[y][a], log_term))
    return worst


def alergia_choose(pta: Automaton, alpha: float) -> Callable:
    log_term = math.sqrt(0.5 * math.log(2 / alpha))

    def choose(m: Automaton, b: tuple, reds: list[tuple]):
        margins = []
        for r in reds:
            margin = hoeffding_margin(pta, r, b, log_term)
            margins.append(margin)
            if margin <= 0:
                return r, {"margins": margins}
        return None, {"margins": margins}
    return choose


# -- the spec ----------------------------------------------------------------------------------

def _check(name, passed, description, columns, rows, summary=None, notes=None) -> Check:
    return Check(name=name, passed=bool(passed), description=description, alpha=0.0,
                 columns=columns, rows=rows, summary=summary or {}, notes=notes or [])


def check_corpus(toy, seed: int, n_strings: int = N_STRINGS) -> Corpus:
    """``n_strings`` strings from the toy's source (module docstring)."""
    from bayesfa.validation.toys import get_toy

    source = toy.source if toy.source is not None else get_toy("three").source
    return source.sample(n_strings, np.random.default_rng(seed))


def _defaults(method) -> dict[str, Any]:
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    method.add_arguments(parser)
    return vars(parser.parse_args([]))


class _MutantsOfModule:
    """What the greedy learners' specs share: the method of ``bayesfa.learners.greedy.NAME``
    with its kernel's ``variant`` (0: the method itself), and its mutants, the module's
    ``MUTATIONS``."""

    def __init__(self, name: str, variant: int = 0):
        self.name, self.variant = name, variant

    def _module(self):
        import importlib

        return importlib.import_module(f"bayesfa.learners.greedy.{self.name}")

    def mutant_names(self) -> list[str]:
        return list(self._module().MUTATIONS)

    def mutant(self, variant: str):
        from bayesfa.validation.harness import carry_spec

        spec = type(self)(self.name, self._module().MUTATIONS[variant])
        return carry_spec(spec._method(), spec, f"{self.name}:mutant-{variant}")

    def _method(self):
        """The method the checks fit (:func:`~bayesfa.validation.harness.variant_method`)."""
        from bayesfa.validation.harness import variant_method

        return variant_method(self.name, self._module().METHOD, self.variant)


class GreedySpec(_MutantsOfModule):
    """The validation spec of ``estatemerge`` and ``alergia`` (module docstring). Mutants
    (the methods' ``MUTATIONS``, compile-time switches of their kernels):
    ``estatemerge:mutant-no-folded-factor`` (the gain of a fold forgets to remove the folded
    states' factors of Eq. 21), ``alergia:mutant-merged-counts-test`` (the Hoeffding test
    reads the merged counts instead of the prefix tree's)."""

    def check_names(self) -> list[str]:
        return ["merges", "evidence", "predictive"] if self.name == "estatemerge" else \
            ["merges", "predictive"]

    def deterministic_checks(self, toy, *, seed: int = 0, alpha: float = 0.0) -> list[Check]:
        from bayesfa.validation.toys import all_strings

        method = self._method()
        opts = _defaults(method)
        corpus = check_corpus(toy, seed, N_STRINGS if self.name == "estatemerge"
                              else N_STRINGS_ALERGIA)
        beta = float(opts["beta"])
        if self.name == "estatemerge":
            m, reds, steps = red_blue(corpus, estatemerge_choose(beta))
            columns = ["blue", "into", "best_rise", "evidence_after"]
            what = "Eq. 21 evidence rise of the best merge and the evidence after the step"
        else:
            m, reds, steps = red_blue(corpus, alergia_choose(Automaton(corpus), opts["alpha"]))
            columns = ["blue", "into", "margins"]
            what = ("Hoeffding margin against each red state tried (<= 0: compatible, "
                    f"alpha = {opts['alpha']})")
        delta, counts = machine(m, reds)
        fit = method.fit(corpus, opts, seed, False)
        got_delta = np.asarray(fit.arrays["delta"], dtype=np.int64)
        got_counts = np.asarray(fit.arrays["counts"], dtype=np.int64)
        same = got_delta.shape == delta.shape and np.array_equal(got_delta, delta) \
            and np.array_equal(got_counts, counts)
        notes = [f"the reference learned {len(reds)} states, the method "
                 f"{got_counts.shape[0]}" + ("" if same else "; the machines differ")]
        checks = [_check("merges", same,
                         f"the method's learned machine (delta, counts) equals an independent "
                         f"red-blue {self.name} on the toy; the table is the reference's "
                         f"decisions with the {what}", columns, steps,
                         {"states": len(reds), "method_states": int(got_counts.shape[0])}, notes)]
        if self.name == "estatemerge":
            ref = m.log_evidence(beta)
            got = float(fit.info["log_evidence"])
            ok = abs(ref - got) <= EVIDENCE_TOL * max(1.0, abs(ref))
            checks.append(_check("evidence", ok,
                                 "log Pr(alpha | G) of Eq. 21 reported by the method vs the "
                                 "reference machine's", ["method", "reference", "pass"],
                                 [{"method": got, "reference": ref, "pass": ok}]))
        test = all_strings(3, corpus.alphabet_size)
        unigram = np.bincount(corpus.tokens, minlength=corpus.alphabet_size + 1)
        ref_lp = smoothed_log_prob(delta, counts, unigram, beta, test)
        got_lp = np.asarray(method.predict_log_prob(fit.arrays, opts, test))
        err = float(np.abs(ref_lp - got_lp).max())
        checks.append(_check("predictive", err <= PREDICT_TOL,
                             f"predict_log_prob of the {test.n_strings} strings up to length 3 vs "
                             f"the reference machine smoothed with beta = {beta} "
                             f"(tolerance {PREDICT_TOL:g})", ["max_abs_error", "pass"],
                             [{"max_abs_error": err, "pass": err <= PREDICT_TOL}]))
        return checks


ESTATEMERGE = GreedySpec("estatemerge")
ALERGIA = GreedySpec("alergia")


# -- variable-length grams (EVGram, CVGram) ----------------------------------------------------
#
# An independent trie: a context is a tuple of tokens read backwards from the predicted
# position (``(x_{t-1}, x_{t-2}, ...)``), ending in 0 when it reaches the start ``^``. Every
# leaf is examined once, level by level, nodes in creation order and children by token
# (``^`` first): it is expanded into all its children when the criterion summed over its
# positions rises (Shibata & Yoshinaka 2013, Sect. 4.5.2; Niesler & Woodland 1999).
#
# Checks (exact): ``growth``, the method's trie equals the reference's; ``criterion``, every
# leaf the method examined (its ``growth_steps``), in order, has the reference's context,
# number of positions, criterion and gain (relative 1e-9; a mutant of the criterion whose
# decisions happen to agree on the toy is caught here); ``predictive``, as for the mergers.

def evidence_criterion(c: np.ndarray, beta: float) -> float:
    """One context's factor of Eq. 21 (``c [folds, A+1]`` summed over the folds)."""
    x = c.sum(axis=0).astype(float)
    if x.sum() == 0:
        return 0.0
    n_sym = x.size
    return float(np.sum(gammaln(x + beta) - gammaln(beta)) + gammaln(n_sym * beta)
                 - gammaln(x.sum() + n_sym * beta))


def cv_criterion(c: np.ndarray, beta: float) -> float:
    """K-fold cross-validated log-likelihood of one context: the positions of fold ``k``
    predicted by ``(C_a - C_ka + beta) / (C - C_k + (A+1) beta)``."""
    col, row = c.sum(axis=0), c.sum(axis=1)
    total, n_sym = c.sum(), c.shape[1]
    s = 0.0
    for k in range(c.shape[0]):
        for a in range(n_sym):
            if c[k, a]:
                s += c[k, a] * math.log((col[a] - c[k, a] + beta) / (total - row[k] + n_sym * beta))
    return s


def _positions(corpus: Corpus, n_folds: int) -> list[tuple[tuple, int, int]]:
    """``(reversed history with the start marked 0, symbol, fold)`` of every position."""
    out = []
    for s in range(corpus.n_strings):
        letters = [int(a) + 1 for a in corpus.string(s)]
        for i, sym in enumerate(letters + [0]):
            out.append((tuple(reversed(letters[:i])) + (0,), sym, s % n_folds))
    return out


def grow_vgram(corpus: Corpus, beta: float, criterion: Callable, n_folds: int):
    """``(nodes in creation order, steps)``; each node ``(context, counts [A+1])``."""
    n_sym = corpus.alphabet_size + 1
    pos = _positions(corpus, n_folds)

    def table(items):
        c = np.zeros((n_folds, n_sym), dtype=np.int64)
        for _, sym, f in items:
            c[f, sym] += 1
        return c

    nodes = [((), table(pos).sum(axis=0))]
    level = [()]
    steps = []
    d = 0
    while level:
        nxt = []
        for w in level:
            if w and w[-1] == 0:
                continue  # a context reaching ^ has no extension
            mine = [p for p in pos if p[0][:d] == w]  # w is no caret: each has an extension
            if not mine:
                continue
            by_b: dict[int, list] = {}
            for p in mine:
                by_b.setdefault(p[0][d], []).append(p)
            own = criterion(table(mine), beta)
            kids = sum(criterion(table(v), beta) for v in by_b.values())
            expand = kids - own > 0
            steps.append({"context": _context_name(w), "positions": len(mine), "leaf": own,
                          "children": kids, "gain": kids - own, "expanded": bool(expand)})
            if expand:
                for b in sorted(by_b):
                    nodes.append((w + (b,), table(by_b[b]).sum(axis=0)))
                    nxt.append(w + (b,))
        level = nxt
        d += 1
    return nodes, steps


def _context_name(w: tuple) -> str:
    """A context as it reads forwards (``^ab``: ``b`` then ``a`` before the predicted symbol)."""
    return "".join("^" if a == 0 else chr(ord("a") + a - 1) for a in reversed(w)) or "(empty)"


def vgram_arrays(nodes, n_sym: int):
    index = {w: i for i, (w, _) in enumerate(nodes)}
    child = np.full((len(nodes), n_sym), -1, dtype=np.int64)
    counts = np.zeros((len(nodes), n_sym), dtype=np.int64)
    caret = np.zeros(len(nodes), dtype=bool)
    for i, (w, c) in enumerate(nodes):
        counts[i] = c
        caret[i] = bool(w) and w[-1] == 0
        if w:
            child[index[w[:-1]], w[-1]] = i
    return child, counts, caret


def vgram_log_prob_reference(nodes, beta: float, corpus: Corpus) -> np.ndarray:
    """Each symbol predicted at the deepest trie context matching its history."""
    found = {w: c for w, c in nodes}
    n_sym = corpus.alphabet_size + 1
    out = np.zeros(corpus.n_strings)
    for s in range(corpus.n_strings):
        letters = [int(a) + 1 for a in corpus.string(s)]
        for i, sym in enumerate(letters + [0]):
            h = tuple(reversed(letters[:i])) + (0,)
            w = ()
            while len(w) < len(h) and h[:len(w) + 1] in found:
                w = h[:len(w) + 1]
            c = found[w]
            out[s] += math.log((c[sym] + beta) / (c.sum() + n_sym * beta))
    return out


def method_contexts(child: np.ndarray) -> list[tuple]:
    """The context of each node of a method's trie ``child [n, A+1]`` (node 0 the empty
    context; ``child[w, b] = v``: ``v`` is ``w`` extended by ``b``), read from the array."""
    ctx: list = [None] * child.shape[0]
    ctx[0] = ()
    todo = [0]
    while todo:
        w = todo.pop()
        for b in range(child.shape[1]):
            v = int(child[w, b])
            if v >= 0:
                ctx[v] = ctx[w] + (b,)
                todo.append(v)
    return ctx


def criterion_rows(steps: list[dict], got: np.ndarray, child: np.ndarray) -> tuple[list[dict], float]:
    """Each leaf the reference examined against the method's ``got [L, 4]`` (node, positions,
    leaf criterion, gain), in order; ``(rows, largest relative error)`` (``inf`` when the
    contexts, the positions or the number of leaves examined differ)."""
    names = method_contexts(child)
    rows, worst = [], 0.0 if len(steps) == got.shape[0] else math.inf
    for i in range(max(len(steps), got.shape[0])):
        ref = steps[i] if i < len(steps) else None
        row = {"context": ref["context"] if ref else "-", "method_context": "-",
               "leaf": ref["leaf"] if ref else math.nan, "method_leaf": math.nan,
               "gain": ref["gain"] if ref else math.nan, "method_gain": math.nan,
               "rel_error": math.inf}
        if i < got.shape[0]:
            node = int(got[i, 0])
            row.update(method_context=_context_name(names[node]) if 0 <= node < len(names)
                       and names[node] is not None else f"node {node}",
                       method_leaf=float(got[i, 2]), method_gain=float(got[i, 3]))
            if ref is not None and row["method_context"] == ref["context"] \
                    and int(got[i, 1]) == ref["positions"]:
                row["rel_error"] = max(abs(row["method_leaf"] - ref["leaf"])
                                       / max(1.0, abs(ref["leaf"])),
                                       abs(row["method_gain"] - ref["gain"])
                                       / max(1.0, abs(ref["leaf"]), abs(ref["children"])))
        row["pass"] = row["rel_error"] <= CRITERION_TOL
        worst = max(worst, row["rel_error"])
        rows.append(row)
    return rows, worst


class VGramSpec(_MutantsOfModule):
    """The validation spec of ``evgram`` and ``cvgram`` (module docstring of this section).
    Mutants (the fronts' ``MUTATIONS``, variant switches of the kernel's criterion, each one
    term changed): ``evgram:mutant-end-outside-alphabet`` (the Dirichlet of Eq. 21 over the
    A letters, ``A beta`` for ``(A+1) beta``), ``evgram:mutant-no-prior-factor`` (without
    ``1 / Gamma(beta)`` per symbol seen), ``evgram:mutant-no-normaliser-prior`` (without
    ``Gamma((A+1) beta)``); ``cvgram:mutant-end-outside-alphabet``,
    ``cvgram:mutant-fold-not-held-out`` (``C_wa`` for ``C_wa - C_wka`` in the numerator),
    ``cvgram:mutant-denominator-not-held-out`` (``C_w`` for ``C_w - C_wk``),
    ``cvgram:mutant-folds-by-position`` (position ``t`` in fold ``t mod K`` instead of its
    string's). Checks: ``growth`` (the trie), ``criterion`` (the criterion of every leaf
    examined, in order, against the reference's: a mutant whose decisions happen to agree
    on the toy still reports other values) and ``predictive``."""

    def check_names(self) -> list[str]:
        return ["growth", "criterion", "predictive"]

    def deterministic_checks(self, toy, *, seed: int = 0, alpha: float = 0.0) -> list[Check]:
        from bayesfa.validation.toys import all_strings

        method = self._method()
        opts = _defaults(method)
        corpus = check_corpus(toy, seed)
        beta = float(opts["beta"])
        n_folds = int(opts.get("folds", 1)) if self.name == "cvgram" else 1
        crit = evidence_criterion if self.name == "evgram" else cv_criterion
        nodes, steps = grow_vgram(corpus, beta, crit, n_folds)
        child, counts, caret = vgram_arrays(nodes, corpus.alphabet_size + 1)
        fit = method.fit(corpus, opts, seed, False)
        got = [np.asarray(fit.arrays[k]) for k in ("child", "counts", "caret")]
        same = all(g.shape == r.shape and np.array_equal(g.astype(r.dtype), r)
                   for g, r in zip(got, (child, counts, caret)))
        what = ("Eq. 21 evidence of the leaf and of its children" if self.name == "evgram"
                else f"{n_folds}-fold cross-validated log-likelihood of the leaf and of its children")
        checks = [_check("growth", same,
                         f"the method's trie (child, counts, caret) equals an independent "
                         f"level-by-level growth on {corpus.n_strings} strings; the table is every "
                         f"leaf examined with the {what} (beta = {beta})",
                         ["context", "positions", "leaf", "children", "gain", "expanded"], steps,
                         {"contexts": len(nodes), "method_contexts": int(got[1].shape[0])})]
        rows, worst = criterion_rows(steps, np.asarray(method.growth_steps(corpus, opts)),
                                     got[0])
        checks.append(_check("criterion", worst <= CRITERION_TOL,
                             f"every leaf the method examined, in order: its context, positions, "
                             f"the {what.replace(' and of its children', '')} and the gain of "
                             f"expanding it equal the reference's (relative tolerance "
                             f"{CRITERION_TOL:g})",
                             ["context", "method_context", "leaf", "method_leaf", "gain",
                              "method_gain", "rel_error", "pass"], rows,
                             {"statistic": worst, "leaves": len(steps),
                              "method_leaves": len(rows)}))
        test = all_strings(3, corpus.alphabet_size)
        ref_lp = vgram_log_prob_reference(nodes, beta, test)
        got_lp = np.asarray(method.predict_log_prob(fit.arrays, opts, test))
        err = float(np.abs(ref_lp - got_lp).max())
        checks.append(_check("predictive", err <= PREDICT_TOL,
                             f"predict_log_prob of the {test.n_strings} strings up to length 3 vs "
                             f"the reference trie (deepest matching context, beta = {beta}; "
                             f"tolerance {PREDICT_TOL:g})", ["max_abs_error", "pass"],
                             [{"max_abs_error": err, "pass": err <= PREDICT_TOL}],
                             {"statistic": err}))
        return checks


EVGRAM = VGramSpec("evgram")
CVGRAM = VGramSpec("cvgram")
