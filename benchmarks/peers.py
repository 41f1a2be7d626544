"""Peers side by side on PAutomaC: the learners a user could install instead of bayesfa, on
the same problems and CPU, one row per (problem, method) (issue 40, item 1).

Peers, each at its documented practice, its size chosen on held-out *training* strings:

- ``spectral``: the Hankel-matrix spectral method for weighted automata of Balle, Carreras,
  Luque & Quattoni (2014), Machine Learning 96, implemented here (:func:`spectral_wfa`):
  scikit-splearn 1.2.1, the package a user would pick, installs on Python 3.11 but does not
  run with numpy 2.x (``np.float_`` in ``splearn.automaton``). The Hankel of empirical
  substring expectations (their Sect. 5, denser than string frequencies) over the 300
  substrings of at most 4 letters of most mass as prefixes and as suffixes, rank chosen, then
  turned into the WFA of string probabilities (:func:`substring_to_string`). Its weighted
  automaton is reported as is: a test string of weight <= 0 has no probability and the row
  says "zero probability" (no smoothing is added);
- ``hmm-em``: hmmlearn's ``CategoricalHMM`` by Baum-Welch, through bayesfa's ``hmm-em`` method
  (5 random restarts, the best training likelihood kept), number of states chosen; or, with
  ``--grid trimmed``, the cheaper practice of :data:`TRIMMED` (its reason there);
- ``alergia``: AALpy's ``run_Alergia`` (Carrasco & Oncina 1994) learning a Markov chain
  over the letters and an end symbol, its Hoeffding bound ``eps`` chosen (size: states
  learned); unsmoothed, so an unseen transition is a zero probability;
- bayesfa's own: ``cvb0`` (states chosen, beta 0.1) and ``estatemerge`` (beta chosen) are run
  here; ``auto`` (``cgs-pfa --auto --budget 14400``) and ``ipfa`` (the default infinite PFA)
  are the committed rows of benchmarks/results/pautomac47-auto-4h and
  benchmarks/results/pautomac47-ipfa, with their commit, not rerun.

Not run (summary.json's ``not_run`` says why): dynamax's categorical HMM (it installs, but its
EM takes a batch of equal-length sequences, and PAutomaC strings differ in length: padding
changes the likelihood); pomegranate's DenseHMM (it installs, torch with it, but a first try
was too slow and gave no finite probability: see ``NOT_RUN``).

Size choice. The training strings are split 80/20 by ``np.random.default_rng(SeedSequence
(seed, problem))`` (``heldout_split``); each candidate size is fitted on the 80 % and scored on
the 20 %; the winner has the fewest held-out strings of zero (or non-positive, or NaN)
probability, then the highest held-out log-likelihood of the others, then the smaller size
(:func:`choose`). The winner is refitted on all training strings and predicts the test
strings; the test strings and their solution are read only for that.

A row (:data:`COLUMNS`): ``ratio_minus_one`` is PAutomaC's score (Eq. 19 of Shibata &
Yoshinaka 2013, :func:`bayesfa.scoring.score_all_log`) over the minimum, minus one, empty when
the peer failed; ``status`` is ``ok``, ``zero probability (K of N test strings)``, ``time-out
(S s)`` or ``error: ...``; ``cpu_seconds`` is the CPU of the selection, the refit and the
prediction (``time.process_time`` in the unit's process, every thread; imports and reading
excluded); ``size`` the fitted model's (states, or rank); ``chosen_by`` how the size was chosen.

Units. Each (problem, method) is one process (``--unit``), started by a task on the Dask
cluster of ``--scheduler`` (``local``: ``--workers`` single-thread workers on this machine;
or a running scheduler's address, as ``bayesfa pautomac run --scheduler``: :func:`run_units`);
its row is written atomically here to ``OUT/units/P.METHOD.json`` when it ends, failed or
not, and a rerun skips the units that have a file. The summary (``summary.csv``, ``summary.json``: commit,
portable command, problems done) is rebuilt from the unit files at the end.

Grids. ``--grid full`` (the default) runs :data:`GRIDS` with each method's defaults;
``--grid trimmed`` runs :data:`TRIMMED`'s grid and fixed options instead (only for the methods
it lists). A unit's row records which (``grid`` in its JSON, and in ``chosen_by`` and its
command), and a rerun with the other grid does not reuse it.

    nice -n 10 python benchmarks/peers.py --problems 24,12,5 --workers 1
    nice -n 10 python benchmarks/peers.py --methods hmm-em --grid trimmed --workers 1 --timeout 900
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from guarded_out import check_out, write_out_json, write_out_text  # noqa: E402
from machine import cpu_name, git_commit, missing_pautomac_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/pautomac"
AUTO = ROOT / "benchmarks/results/pautomac47-auto-4h"
IPFA = ROOT / "benchmarks/results/pautomac47-ipfa"
OUT = ROOT / "benchmarks/results/peers"
#: summary.csv's columns: issue 40's six, then ``status`` and where the row comes from
#: (``command``: repository-relative, ``commit``: the code it ran at)
COLUMNS = ["problem", "method", "ratio_minus_one", "cpu_seconds", "size", "chosen_by", "status",
           "command", "commit"]
HELDOUT = 0.2
SPECTRAL_BASIS = 300  # prefixes (and as many suffixes) in the spectral method's Hankel basis
SPECTRAL_MAX_LEN = 4  # letters of a basis string at most

#: candidate sizes of each peer run here (the held-out split picks one)
GRIDS = {
    "spectral": [2, 4, 6, 8, 12, 16, 24, 32, 48],
    "alergia": [0.001, 0.005, 0.02, 0.05, 0.1, 0.3],
    "estatemerge": [0.01, 0.1, 1.0],
    "cvb0": [5, 10, 20, 40],
    "hmm-em": [2, 4, 8, 16, 32],  # bayesfa's hmm-em defaults: 5 restarts, 100 iterations
}
#: ``--grid trimmed``: a cheaper practice for a peer whose full grid costs too much CPU on the
#: project's 2-core machine, ``{method: {"grid": sizes, "fixed": options}}``.
#:
#: hmm-em: the full grid (5 sizes x 5 restarts x 100 EM iterations, on the 80 % and the refit)
#: is about 20 CPU minutes on a 20,000-string problem and over an hour on a 100,000-string one
#: (hours over the 47). Measured (hmmlearn 'scaling', one restart, this machine, niced, shared):
#: one EM iteration costs about 0.42 CPU s at 2 to 16 states and 0.7 at 32 on problem 43
#: (20,000 strings, 119,000 symbols), 2.5 s at 2 to 8 states, 3.7 at 16 and 8.9 at 32 on
#: problem 18 (100,000 strings, 1.6 M symbols): the per-string work of hmmlearn dominates up to
#: 16 states. On problem 1, the log-likelihood per symbol from a random start rises by less than
#: 1e-3 a step after 14 iterations (4 states) and 17 (16 states), then creeps. So: two sizes, 4
#: and 16 states (the held-out choice still picks between them), one restart (no best-of-5), and
#: at most 15 EM iterations per fit (hmm-em's tolerance, 1e-3 on the total log-likelihood, does
#: not stop it earlier on these data): about 120 CPU s of EM per iteration over all 47
#: problems, about 35 CPU minutes with the reading and scoring. An HMM stopped at 15 iterations,
#: of at most 16 states, from one start: a weaker practice than the full one, named as such.
TRIMMED = {
    "hmm-em": {"grid": [4, 16], "fixed": {"restarts": 1, "n_iter": 15}},
}
RUN = list(GRIDS)           # the methods fitted here
COMMITTED = ["auto", "ipfa"]  # the methods read from committed runs
METHODS = RUN + COMMITTED
NOT_RUN = {
    "dynamax-hmm": "dynamax 1.0.3 installs with jax 0.10 on Python 3.11, but its EM "
                   "(fit_em) takes a batch of equal-length emission sequences and PAutomaC's "
                   "strings differ in length (padding would change the likelihood)",
    "pomegranate-densehmm": "pomegranate 1.1.2 installs from PyPI (torch 2.14 and its CUDA "
                            "wheels, about 3 GB). A first try, DenseHMM of 2 Categorical states "
                            "over the letters and an end symbol, its defaults (max_iter 1000, "
                            "tol 0.1), fitted on 2,000 strings of problem 24 as equal-length "
                            "batches, took 71 CPU s and gave no finite log probability to any "
                            "of 500 held-out strings (a check on 200 strings, 20 iterations, "
                            "gave finite ones: not understood); at that cost a grid of sizes "
                            "on the full training files is hours per problem on this machine",
}

#: the status of a method's rows on the problems it has no unit for, where the reason is known
#: (otherwise "not run yet (partial run)")
NOT_YET = {
    "cvb0": "not run: its full grid took 187.5 CPU s on problem 24 (20,000 strings) and passed "
            "the 1800 s time-out on problem 12; several CPU-hours over the 47 on the project's "
            "2-core machine, and no trimmed grid is defined for it",
}


# -- rows ------------------------------------------------------------------------------------

def row(problem, method, *, ratio_minus_one=None, cpu_seconds=None, size=None, chosen_by="",
        status="ok", command=None, commit=None) -> dict:
    """One summary row; a failed unit has ``ratio_minus_one`` None and says why in ``status``;
    ``command`` and ``commit`` say what made it (a unit's are set when it is written)."""
    return {"problem": str(problem), "method": method, "ratio_minus_one": ratio_minus_one,
            "cpu_seconds": cpu_seconds, "size": size, "chosen_by": chosen_by, "status": status,
            "command": command, "commit": commit}


def merge_rows(rows) -> list[dict]:
    """One row per (problem, method), the last given winning; ordered by problem number, then
    by :data:`METHODS`' order (unknown methods last, by name)."""
    last = {(str(r["problem"]), r["method"]): r for r in rows}
    order = {m: i for i, m in enumerate(METHODS)}

    def key(k):
        p, m = k
        return (int(p) if p.isdigit() else 10**9, p, order.get(m, len(order)), m)
    return [last[k] for k in sorted(last, key=key)]


def rows_csv(rows, columns=COLUMNS) -> str:
    """The rows as ``summary.csv`` (empty cells for None), in ``columns``."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r[k]) for k in columns})
    return buf.getvalue()


# -- held-out choice ---------------------------------------------------------------------------

def heldout_split(n_strings: int, seed: int, problem: str, fraction: float = HELDOUT):
    """``(fit, held)``: sorted indices, ``floor(fraction * n)`` held-out strings drawn without
    replacement from ``SeedSequence(seed, spawn_key=(problem key,))`` (the same for every peer)."""
    key = int.from_bytes(hashlib.sha256(str(problem).encode()).digest()[:4], "little")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))
    k = max(1, min(n_strings - 1, int(fraction * n_strings)))
    held = np.sort(rng.choice(n_strings, size=k, replace=False))
    return np.setdiff1d(np.arange(n_strings), held), held


def heldout_fit(log_probs) -> tuple[int, float]:
    """``(zeros, log-likelihood)``: the held-out strings without a positive finite probability,
    and the summed log probability of the others."""
    lp = np.asarray(log_probs, dtype=np.float64)
    ok = np.isfinite(lp)
    return int(np.count_nonzero(~ok)), float(lp[ok].sum())


def choose(trials: list[dict]) -> dict:
    """The trial with the fewest held-out zeros, then the highest held-out log-likelihood,
    then the first (the smaller size: grids are increasing)."""
    return min(enumerate(trials), key=lambda it: (it[1]["zeros"], -it[1]["loglik"], it[0]))[1]


# -- the peers: fit_predict(train, tests, params, seed) -> [(log probs of each test, size)] ----

def substring_expectations(corpus, max_len: int) -> dict[tuple, float]:
    """``{x: f_s(x)}`` for every substring ``x`` of at most ``max_len`` letters of the training
    strings: ``f_s(x)`` the mean number of occurrences of ``x`` in a string (``f_s(()) = mean
    length + 1``), the substring statistics of Balle et al. (2014), Sect. 5."""
    from collections import Counter

    counts: Counter = Counter()
    for s in corpus.strings():
        x = tuple(s.tolist())
        for i in range(len(x)):
            for j in range(i + 1, min(len(x), i + max_len) + 1):
                counts[x[i:j]] += 1
    n = corpus.n_strings
    out = {x: c / n for x, c in counts.items()}
    out[()] = (corpus.n_tokens) / n  # len + 1 positions per string (tokens count the end)
    return out


def frequent_basis(f: dict[tuple, float], size: int, max_len: int) -> list[tuple]:
    """The ``size`` strings of at most ``max_len`` letters of largest ``f`` (ties by length,
    then letters), the empty string first: the prefixes and the suffixes of the Hankel basis
    (Balle et al. 2014, Sect. 6: a basis of frequent substrings)."""
    keys = [x for x in f if 0 < len(x) <= max_len]
    return [()] + sorted(keys, key=lambda u: (-f[u], len(u), u))[:size - 1]


def hankel_blocks(f, prefixes, suffixes, n_letters: int):
    """``(H [P, S], H_a [A, P, S], h_p [P], h_s [S])``: ``H[u, v] = f(uv)``, ``H_a[u, v] =
    f(u a v)``, ``h_p[u] = f(u)``, ``h_s[v] = f(v)`` (Balle et al. 2014, Sect. 3); ``f`` maps a
    string (tuple of 0-based letters) to its value, missing strings are 0."""
    get = f.get
    H = np.array([[get(u + v, 0.0) for v in suffixes] for u in prefixes])
    Ha = np.array([[[get(u + (a,) + v, 0.0) for v in suffixes] for u in prefixes]
                   for a in range(n_letters)]).reshape(n_letters, len(prefixes), len(suffixes))
    h_p = np.array([get(u, 0.0) for u in prefixes])
    h_s = np.array([get(v, 0.0) for v in suffixes])
    return H, Ha, h_p, h_s


def spectral_wfa(H, Ha, h_p, h_s, rank: int):
    """The rank-``rank`` weighted automaton ``(alpha0 [n], A [A, n, n], alpha_inf [n])`` of
    Balle, Carreras, Luque & Quattoni (2014), Machine Learning 96, Sect. 4 (Algorithm 1):
    ``H = U D V^T`` truncated to ``rank``; ``alpha0^T = h_s^T V``, ``alpha_inf = (H V)^+ h_p``,
    ``A_a = (H V)^+ H_a V``; then ``f(x) = alpha0^T A_x1 ... A_xk alpha_inf``."""
    _, _, vt = np.linalg.svd(H, full_matrices=False)
    v = vt[:rank].T
    pinv = np.linalg.pinv(H @ v)
    return h_s @ v, np.einsum("ij,ajk,kl->ail", pinv, Ha, v), pinv @ h_p


def substring_to_string(wfa):
    """The WFA of ``f(x)`` from the WFA of the substring expectations ``f_s`` (Balle et al.
    2014, Sect. 5): ``alpha0^T (I - A_Sigma)`` and ``(I - A_Sigma) alpha_inf``, with
    ``A_Sigma = sum_a A_a`` (as ``f_s(x) = sum_{u, v} f(u x v)``)."""
    alpha0, A, alpha_inf = wfa
    m = np.eye(A.shape[1]) - A.sum(axis=0)
    return alpha0 @ m, A, m @ alpha_inf


def wfa_values(wfa, strings) -> np.ndarray:
    """``f(x)`` of each string (0-based letters), the forward product left to right."""
    alpha0, A, alpha_inf = wfa
    out = np.empty(len(strings))
    for i, x in enumerate(strings):
        state = alpha0
        for a in x:
            state = state @ A[a]
        out[i] = state @ alpha_inf
    return out


def _log_positive(values) -> np.ndarray:
    """``log f``, ``-inf`` where ``f <= 0`` or is not finite (no probability)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v) & (v > 0)
    return np.where(ok, np.log(np.where(ok, v, 1.0)), -np.inf)


def _spectral(train, tests, ranks, seed, basis=SPECTRAL_BASIS, max_len=SPECTRAL_MAX_LEN):
    f = substring_expectations(train, 2 * max_len + 1)
    words = frequent_basis(f, basis, max_len)
    blocks = hankel_blocks(f, words, words, train.alphabet_size)
    strings = [[s.tolist() for s in t.strings()] for t in tests]
    out = []
    for rank in ranks:
        rank = min(rank, len(words))
        wfa = substring_to_string(spectral_wfa(*blocks, rank))
        out.append(([_log_positive(wfa_values(wfa, xs)) for xs in strings], int(rank)))
    return out


def _bayesfa(name, key, fixed):
    def fit_predict(train, tests, params, seed):
        from bayesfa.method_options import resolve
        from bayesfa.online import fit_and_predict

        out = []
        for value in params:
            options = resolve(name, {**fixed, key: value})
            preds, size = [], None
            for t in tests:
                pred = fit_and_predict(name, train, options, seed, t)
                preds.append(np.asarray(pred.log_mean, dtype=np.float64))
                fit = pred.info["fit"]
                size = fit.get("n_states", options.get("states"))
            out.append((preds, size))
        return out
    return fit_predict


def alergia_learn(corpus, eps: float):
    """AALpy's ``run_Alergia`` Markov chain of ``corpus``'s strings, each read as ``^``
    (the initial output), its letters, then ``$`` (the end)."""
    from aalpy.learning_algs import run_Alergia

    data = [["^"] + [str(int(a)) for a in s] + ["$"] for s in corpus.strings()]
    return run_Alergia(data, automaton_type="mc", eps=eps)


def alergia_log_probs(mc, corpus, end: bool = True) -> np.ndarray:
    """``log`` probability of each string of ``corpus`` under ALERGIA's chain ``mc``: its
    letters, then (``end``) the end ``$``; without ``end`` the prefix probability, the letters
    alone. ``-inf`` from the first unseen transition on (unsmoothed)."""
    step = {id(q): {t.output: (t, p) for t, p in q.transitions} for q in mc.states}
    lp = np.empty(corpus.n_strings)
    for i, s in enumerate(corpus.strings()):
        q, total = mc.initial_state, 0.0
        for sym in [str(int(a)) for a in s] + (["$"] if end else []):
            nxt = step[id(q)].get(sym)
            if nxt is None or nxt[1] <= 0:
                total = -np.inf
                break
            q, total = nxt[0], total + np.log(nxt[1])
        lp[i] = total
    return lp


def _alergia(train, tests, params, seed):
    out = []
    for eps in params:
        mc = alergia_learn(train, eps)
        out.append(([alergia_log_probs(mc, t) for t in tests], len(mc.states)))
    return out


PEERS = {
    "spectral": _spectral,
    "hmm-em": _bayesfa("hmm-em", "states", {}),
    "alergia": _alergia,
    "cvb0": _bayesfa("cvb0", "states", {"beta": 0.1}),
    "estatemerge": _bayesfa("estatemerge", "beta", {}),
}
CHOSEN = {"spectral": "rank", "hmm-em": "states", "alergia": "eps",
          "cvb0": "states", "estatemerge": "beta"}


def setting(method: str, grid: str = "full"):
    """``(fit_predict, sizes, note)`` of ``method`` under ``--grid`` ``grid`` (``full``:
    :data:`PEERS` and :data:`GRIDS`; ``trimmed``: :data:`TRIMMED`'s sizes and fixed options);
    ``note`` is what a row's ``chosen_by`` says of the setting (empty for ``full``)."""
    if grid == "full":
        return PEERS[method], GRIDS[method], ""
    if grid != "trimmed" or method not in TRIMMED:
        raise ValueError(f"no {grid!r} grid for {method} (trimmed: {sorted(TRIMMED)})")
    t = TRIMMED[method]
    fixed = ", ".join(f"{k}={v}" for k, v in t["fixed"].items())
    return (_bayesfa(method, CHOSEN[method], t["fixed"]), t["grid"],
            f"; grid trimmed ({fixed}; see peers.TRIMMED)")


def run_unit(problem: str, method: str, data: Path, seed: int, grid: str = "full") -> dict:
    """Choose the size on held-out training strings, refit on all of them, score the test;
    ``grid``: ``full`` or ``trimmed`` (:func:`setting`)."""
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.scoring import score_all_log

    train = read_sample(data / f"{problem}.pautomac.train")
    test = read_sample(data / f"{problem}.pautomac.test").with_alphabet(train.alphabet_size)
    fit_idx, held_idx = heldout_split(train.n_strings, seed, problem)
    fit_predict, sizes, note = setting(method, grid)
    t0 = time.process_time()
    trials = []
    for value, (preds, size) in zip(sizes, fit_predict(train.subset(fit_idx),
                                                       [train.subset(held_idx)], sizes, seed)):
        zeros, loglik = heldout_fit(preds[0])
        trials.append({"value": value, "size": size, "zeros": zeros, "loglik": loglik})
    best = choose(trials)
    [(preds, size)] = fit_predict(train, [test], [best["value"]], seed)
    cpu = time.process_time() - t0
    chosen = (f"{CHOSEN[method]}={best['value']} of {sizes} by held-out log-likelihood "
              f"({int(HELDOUT * 100)}% of training strings, seed {seed}){note}")
    lp = preds[0]
    bad = int(np.count_nonzero(~np.isfinite(lp)))
    out = row(problem, method, cpu_seconds=round(cpu, 2), size=size, chosen_by=chosen)
    out["trials"] = trials
    out["grid"] = grid
    if bad:
        out["status"] = f"zero probability ({bad} of {lp.size} test strings)"
        return out
    sol = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    out["ratio_minus_one"] = score_all_log(lp, sol).ratio - 1
    return out


# -- committed bayesfa rows --------------------------------------------------------------------

def committed_rows(problems) -> list[dict]:
    """``auto`` and ``ipfa`` rows of the committed 47-problem runs (a problem they lack gets a
    row that says so)."""
    out = []
    for method, folder in (("auto", AUTO), ("ipfa", IPFA)):
        summary = json.loads((folder / "summary.json").read_text())
        commit = summary["code"].split("git ")[-1]
        got = {r["problem"]: r for r in csv.DictReader((folder / "summary.csv").open())}
        where = f"{folder.relative_to(ROOT)} (git {commit})"
        made = {"command": run_command(folder), "commit": commit}
        for p in problems:
            r = got.get(p)
            if r is None:
                out.append(row(p, method, chosen_by=where, status=f"not in {where}", **made))
            elif method == "auto":
                out.append(row(p, method, ratio_minus_one=float(r["ratio"]) - 1,
                               cpu_seconds=float(r["cpu_seconds"]), size=int(r["states"]),
                               chosen_by=f"cgs-pfa --auto: N and beta={r['beta']} from held-out "
                                         f"training strings; {where}", **made))
            else:
                out.append(row(p, method, ratio_minus_one=float(r["ratio"]) - 1,
                               cpu_seconds=float(r["seconds"]), size=round(float(r["states"]), 1),
                               chosen_by=f"inferred (mean states in use); cpu_seconds = the "
                                         f"units' compute seconds; {where}", **made))
    return out


def run_command(folder: Path) -> str:
    """The ``bayesfa pautomac run`` command that made ``folder`` (the first line of its
    ``summary.md`` in backquotes, as the runner writes it)."""
    for line in (folder / "summary.md").read_text().splitlines():
        if line.startswith("`bayesfa ") and line.endswith("`"):
            return line.strip("`")
    raise ValueError(f"{folder / 'summary.md'}: no command line in backquotes")


# -- the driver --------------------------------------------------------------------------------

def default_problems() -> list[str]:
    return [r["problem"] for r in csv.DictReader((AUTO / "summary.csv").open())]


def _unit_command(problem, method, args) -> list[str]:
    grid = getattr(args, "grid", "full")
    return [sys.executable, str(Path(__file__).resolve()), "--unit", f"{problem}:{method}",
            "--data", str(args.data), "--seed", str(args.seed)] + \
        (["--grid", grid] if grid != "full" else [])


_lock = threading.Lock()


def unit_row(problem, method, args, units: Path, cmd, outcome: dict, failed=None) -> dict:
    """The row of a unit from its process's ``outcome`` (:func:`bayesfa.cluster.run_command`): the row it
    printed as its last line, or one made by ``failed`` (default :func:`row`) that says why;
    with its grid, portable command and commit, written atomically to
    ``units/P.METHOD.json``."""
    make_row = failed or row
    if outcome.get("timeout"):
        res = make_row(problem, method, status=f"time-out ({args.timeout:g} s wall, "
                                                f"{outcome['cpu']:.0f} CPU s)")
    else:
        stdout = outcome["stdout"].strip()
        last = stdout.splitlines()[-1] if stdout else ""
        if outcome["returncode"] == 0 and last.startswith("{"):
            res = json.loads(last)
        else:
            why = (outcome["stderr"].strip().splitlines() or [f"exit {outcome['returncode']}"])[-1][:200]
            res = make_row(problem, method, status=f"error: {why}")
    res.setdefault("grid", getattr(args, "grid", "full"))
    res["command"] = _portable(cmd)
    res["commit"] = getattr(args, "commit", None) or git_commit()
    with _lock:
        write_out_json(units / f"{problem}.{method}.json", res)
    key = "ratio_minus_one" if "ratio_minus_one" in res else "perplexity"
    print(f"{problem:>3} {method:<17} {res['status']:<30} {key}={res.get(key)} "
          f"cpu={res['cpu_seconds']} size={res['size']}", flush=True)
    return res


def _done(problem, method, args, units: Path, cmd) -> dict | None:
    """The row of a unit already run (its file), or None; a unit of the other grid is refused
    (move its file away to rerun it)."""
    path = units / f"{problem}.{method}.json"
    if not path.exists():
        return None
    done = json.loads(path.read_text())
    want = getattr(args, "grid", "full")
    if cmd is None and done.get("grid", "full") != want:
        raise SystemExit(f"{path} ran grid {done.get('grid', 'full')!r}, not {want!r}: "
                         f"move it away to rerun")
    return done


def drive_unit(problem, method, args, units: Path, cmd=None, failed=None) -> dict:
    """Run one unit in its own process here (killed after ``--timeout`` seconds), write its
    row. ``cmd`` (default :func:`_unit_command`'s) prints the row as its last line; ``failed``
    (default :func:`row`) makes the row of a unit that failed or timed out."""
    done = _done(problem, method, args, units, cmd)
    if done is not None:
        return done
    from bayesfa.cluster import run_command

    cmd = cmd or _unit_command(problem, method, args)
    return unit_row(problem, method, args, units, cmd, run_command(cmd, args.timeout), failed)


def run_units(jobs, args, units: Path, cmd_of=None, failed=None, processes: bool = True) -> list[dict]:
    """Every unit of ``jobs`` (``(problem, method)`` pairs) without a file, one process each,
    on the Dask cluster of ``--scheduler``/``--workers`` (:func:`bayesfa.cluster.open_cluster`:
    ``local`` starts ``--workers`` single-thread workers here; an address joins a running
    scheduler, whose workers need this checkout at the same path and its Python). Each row is
    written here as its unit ends, so an interrupted run loses no finished unit and a rerun
    skips them. ``cmd_of(problem, method)``: a unit's command (default :func:`_unit_command`'s);
    ``processes=False``: worker threads of this process (tests)."""
    from dask.distributed import as_completed

    from bayesfa.cluster import open_cluster, run_command

    rows, todo = [], []
    for problem, method in jobs:
        cmd = cmd_of(problem, method) if cmd_of else None
        done = _done(problem, method, args, units, cmd)
        if done is not None:
            rows.append(done)
        else:
            todo.append((problem, method, cmd or _unit_command(problem, method, args)))
    if not todo:
        return rows
    with open_cluster(args.scheduler, args.workers, processes=processes) as cluster:
        # the task is bayesfa's (importable on every worker); only the command travels
        futures = {cluster.client.submit(run_command, cmd, args.timeout, pure=False,
                                         key=f"peers-{problem}.{method}"): (problem, method, cmd)
                   for problem, method, cmd in todo}
        for fut in as_completed(futures):
            problem, method, cmd = futures[fut]
            rows.append(unit_row(problem, method, args, units, cmd, fut.result(), failed))
    return rows


def check_cluster(parser, args) -> None:
    """``--scheduler``/``--workers`` as ``bayesfa pautomac run`` takes them, or a one-line
    usage error."""
    from bayesfa.cluster import check_scheduler
    from bayesfa.errors import InputError

    try:
        check_scheduler(args.scheduler, args.workers)
    except InputError as e:
        parser.error(str(e))


def _portable(cmd) -> str:
    from bayesfa.provenance import portable_command

    return portable_command(cmd)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", default=None, help="comma-separated problems (default: the 47 of "
                   "benchmarks/results/pautomac47-auto-4h)")
    p.add_argument("--methods", default=",".join(RUN), help=f"peers to run, of {RUN}")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scheduler", default="local", help="the Dask cluster the units run on: "
                   "local (--workers single-thread workers here) or a running scheduler's "
                   "address, tcp://HOST:PORT (its workers need this checkout at the same path)")
    p.add_argument("--workers", type=int, default=None,
                   help="with --scheduler local: units at once (default 1)")
    p.add_argument("--grid", choices=["full", "trimmed"], default="full",
                   help="full: GRIDS at each method's defaults; trimmed: TRIMMED's cheaper "
                        f"practice (methods {sorted(TRIMMED)})")
    p.add_argument("--timeout", type=float, default=3600.0, help="wall seconds per unit")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--note", default="", help="a note for summary.json (e.g. where the units ran)")
    p.add_argument("--summarize-only", action="store_true",
                   help="run nothing: rebuild the summary from OUT/units (a run stopped early)")
    p.add_argument("--unit", help=argparse.SUPPRESS)  # P:METHOD, one unit, its row on stdout
    args = p.parse_args(argv)
    if args.unit:
        problem, method = args.unit.split(":")
        print(json.dumps(run_unit(problem, method, Path(args.data), args.seed, args.grid)))
        return 0
    problems = default_problems() if args.problems is None else \
        [s.strip() for s in args.problems.split(",") if s.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    check_cluster(p, args)
    unknown = [m for m in methods if m not in PEERS]
    if unknown:
        p.error(f"--methods: unknown {unknown}; choose from {RUN}")
    if args.grid == "trimmed" and not args.summarize_only and set(methods) - set(TRIMMED):
        p.error(f"--grid trimmed: no trimmed grid for {sorted(set(methods) - set(TRIMMED))}")
    for q in problems:
        missing = missing_pautomac_file(args.data, q)
        if missing:
            p.error(f"--data: no {missing} in {args.data}")
    out, units = Path(args.out), Path(args.out) / "units"
    check_out(out / "summary.csv", out / "summary.json")
    # the code's commit, read before any file is written (a unit's row records it)
    args.commit = git_commit()
    jobs = [(q, m) for m in methods for q in problems]  # each peer on every problem in turn
    if not args.summarize_only:
        run_units(jobs, args, units)
    done = [json.loads(f.read_text()) for f in sorted(units.glob("[!.]*.json"))]
    done_problems = sorted({r["problem"] for r in done}, key=lambda s: int(s) if s.isdigit() else 0)
    missing = [row(q, m, status=NOT_YET.get(m, "not run yet (partial run)"))
               for q in done_problems for m in RUN if not (units / f"{q}.{m}.json").exists()]
    # the peers not run here get a row on every problem that says why (not a missing row)
    absent = [row(q, m, status=f"not run: {why}") for q in done_problems for m, why in NOT_RUN.items()]
    rows = merge_rows(committed_rows(done_problems) + missing + done + absent)
    ran = sorted({r["method"] for r in done})
    complete = [q for q in done_problems if all((units / f"{q}.{m}.json").exists() for m in RUN)]
    over = [r for r in rows if r["problem"] in complete]
    commit = args.commit
    write_out_text(out / "summary.csv", rows_csv(rows))
    write_out_json(out / "summary.json", {
        "commit": commit, "command": _portable([sys.executable] + sys.argv),
        "machine": cpu_name(), "partial": len(complete) < 47,
        "problems": complete, "methods_run": RUN, "methods_with_rows": ran,
        "problems_by_method": {m: [r["problem"] for r in merge_rows(done) if r["method"] == m]
                               for m in ran},
        "methods_committed": COMMITTED,
        "unit_commands": "each row has its command and commit (a unit's from units/P.METHOD.json)",
        "note": args.note,
        "grids": GRIDS, "trimmed": TRIMMED,
        "grid_by_method": {m: sorted({r.get("grid", "full") for r in done if r["method"] == m})
                           for m in ran},
        "heldout_fraction": HELDOUT, "not_run": NOT_RUN,
        "mean_ratio_minus_one": {m: _mean(over, m) for m in RUN + COMMITTED} if complete else {},
        "mean_over": "the problems every method has a row for (problems); None: a failed row",
        "rows": rows})
    print(rows_csv(rows))
    return 0


def _mean(rows, method):
    vals = [r["ratio_minus_one"] for r in rows if r["method"] == method]
    if not vals or any(v is None for v in vals):
        return None  # a failed problem: no mean over all of them
    return float(np.mean(vals))


if __name__ == "__main__":
    sys.exit(main())
