"""Peers on natural data (issue 40, item 2): the peers of ``benchmarks/peers.py`` on the PDIA
paper's Alice in Wonderland split (``aiw-paper``) and the DNA split, per-letter perplexity
beside bayesfa's PDIA and HPYP n-grams / sequence memoizer, one row per (dataset, method).

Data: ``bayesfa data alice`` (the authors' 100 / 50 sentences, 27 letters) and ``bayesfa data
dna`` (the first 150,000 bases train, the remaining 28,393 test), written once by
:func:`pdia_table1.split_files` into ``--runs``.

Peers (:mod:`peers`'s functions and grids, nothing copied): ``spectral`` (the Hankel spectral
WFA of Balle et al. 2014, rank chosen), ``alergia`` (AALpy, eps chosen), ``hmm-em`` (hmmlearn
through bayesfa's hmm-em, states chosen), bayesfa's ``estatemerge`` (beta chosen) and
``cvb0`` (states chosen, beta 0.1). Each size is chosen on held-out *training* data, never on
the test: AIW, 20 % of the training sentences (:func:`peers.heldout_split`, seed 1, key
"aiw-paper"); DNA, the last 20 % of the training bases (the first 120,000 fit, the next 30,000
are held out, read as the test is read). The winner (:func:`peers.choose`: fewest held-out
zeros, then highest held-out log-likelihood, then the smaller size) is refitted on all the
training data and scores the test. The grids are :data:`peers.GRIDS`; where the held-out
choice is a grid's largest size, the sizes of :data:`EXTEND` are tried in turn while it stays
the last one tried (added after the first Alice runs chose the top of the PAutomaC grids).

Conventions, as the PDIA rows' (``bayesfa perplexity``, ``benchmarks/pdia_table1.py``):

- AIW (sentences): every test sentence from the initial state, its end predicted and counted:
  ``perplexity = exp(-sum_s log p(s) / (letters + ends))`` over the 3,891 letters + 50 ends,
  ``p(s)`` the peer's own string probability (:func:`natural_perplexity`). Beside it
  ``perplexity_letters_only``: the ends left out, each sentence's prefix probability ``p(s
  Sigma*)`` over the 3,891 letters (the paper's count). The peers are fixed models: nothing
  is updated as the test is read (the PDIA and n-gram rows fold the test in; a point estimate
  has nothing to fold), which is what ``bayesfa perplexity`` does for them too.
- DNA (one sequence): the test continues the training sequence. ``hmm-em`` is fitted with
  ``--sequence`` and scored as a continuation from the state distribution at the end of
  training, exactly the PDIA rows' convention. The other peers model whole strings, and a
  string model learned from one string of 150,000 letters is degenerate (a prefix tree of one
  chain, or an end seen once), so the convention cannot apply to them. The nearest honest
  reading (:data:`WINDOW`): the training sequence is cut into consecutive windows of 100
  bases (strings), the test likewise, each test window scored from the initial state by its
  prefix probability (letters only: no end predicted), every base counted. So each window
  restarts without the bases before it: a handicap against the continuation, at most a few
  bases of context lost per 100.

A peer that gives a test sentence (window) zero or non-positive probability has no perplexity:
its row's ``status`` says ``zero probability (K of N test sentences)``. ``cpu_seconds``: the
unit's ``time.process_time`` for the choice, the refit and the scoring (imports and reading
excluded). Units: one process per (dataset, method) on the Dask cluster of ``--scheduler``
(:func:`peers.run_units`), its row written to ``OUT/natural_units/DATASET.METHOD.json``; a rerun skips finished units; the
summary (``natural.csv``, ``natural.json``) is rebuilt from them, with bayesfa's committed
PDIA, smoothed PDIA, PDIA-MAP, n-gram and memoizer rows read from the files that hold them
(:data:`COMMITTED`; each row names the file and its commit; not rerun).

    nice -n 10 python benchmarks/peers_natural.py --natural aiw-paper,dna --workers 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # noqa: E402
from guarded_out import check_out, write_out_json, write_out_text  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402

ROOT = peers.ROOT
OUT = peers.OUT
RUNS = ROOT / "runs" / "peers_natural"
RESULTS = ROOT / "benchmarks" / "results"
COLUMNS = ["dataset", "method", "perplexity", "cpu_seconds", "size", "chosen_by", "status"]
DATASETS = {"aiw-paper": "sentences", "dna": "sequence"}
WINDOW = 100  # bases per string for the string models on DNA (fixed beforehand, not chosen)
#: hmm-em's EM budget: peers.py's defaults (5 restarts of 100) on AIW; on DNA, 15 times the
#: data, Table 1's (benchmarks/pdia_table1.py HMM_OPTIONS["dna"]: 2 restarts of 100)
HMM_EM = {"sentences": {}, "sequence": {"restarts": 2, "n_iter": 100}}
RUN = list(peers.GRIDS)
#: sizes beyond peers.py's PAutomaC grid, tried in turn only while the held-out choice is the
#: last size tried (Alice's 27 letters need more states, or more smoothing, than PAutomaC's
#: first choices): the choice stays on held-out training data
EXTEND = {"hmm-em": [64], "cvb0": [80], "estatemerge": [3.0, 10.0], "alergia": [1.0]}
#: (dataset, method) whose grid is not extended, and why
NO_EXTEND = {("dna", "hmm-em"): "K = 64 on 120,000 then 150,000 bases (about 4 times the K = 32 "
                                "fits) does not fit the CPU this benchmark was given on the "
                                "shared machine"}
#: bayesfa's committed natural-data rows: (method, file, entry key or (data, method, order))
COMMITTED = {
    "aiw-paper": [("pdia", "pdia_table1_pdia_paperbudget_aiw-paper.json", "aiw-paper/pdia"),
                  ("pdia-map", "pdia_table1_pdia_paperbudget_aiw-paper.json", "aiw-paper/pdia-map"),
                  ("pdia-smoothed", "pdia_table1_pdia_smoothed_paperbudget_aiw-paper.json",
                   "aiw-paper/pdia-smoothed")],
    "dna": [("pdia", "pdia_table1_pdia_paperbudget_dna.json", "dna/pdia"),
            ("pdia-map", "pdia_table1_pdia_paperbudget_dna.json", "dna/pdia-map"),
            ("pdia-smoothed", "pdia_table1_pdia_smoothed_paperbudget_dna.json", "dna/pdia-smoothed")],
}
NGRAMS = "hpyp_memoizer_table1.json"
METHODS = RUN + ["pdia", "pdia-map", "pdia-smoothed"] + [f"{k}-gram" for k in range(2, 7)] \
    + ["memoizer"]


def nat_row(dataset, method, *, perplexity=None, cpu_seconds=None, size=None, chosen_by="",
            status="ok") -> dict:
    """One row of ``natural.csv``; a failed unit has ``perplexity`` None and says why."""
    return {"dataset": dataset, "method": method, "perplexity": perplexity,
            "cpu_seconds": cpu_seconds, "size": size, "chosen_by": chosen_by, "status": status}


# -- conventions ------------------------------------------------------------------------------

def natural_perplexity(log_probs, n_symbols: int) -> tuple[float | None, int]:
    """``(exp(-sum log p / n_symbols), 0)`` from natural-log probabilities of the test's
    strings (or one total); ``(None, K)`` when ``K`` of them are not finite (zero or
    non-positive probability: no perplexity)."""
    lp = np.asarray(log_probs, dtype=np.float64).reshape(-1)
    bad = int(np.count_nonzero(~np.isfinite(lp)))
    if bad:
        return None, bad
    return float(np.exp(-lp.sum() / n_symbols)), 0


def windows(corpus, length: int = WINDOW):
    """The letters of ``corpus`` in reading order cut into consecutive strings of ``length``
    letters (the last one shorter if need be), over the same alphabet."""
    from bayesfa.corpus import Corpus

    letters = corpus.tokens[corpus.tokens != 0].astype(np.int64) - 1
    return Corpus.from_strings([letters[i:i + length] for i in range(0, letters.size, length)],
                               corpus.alphabet_size)


def prefix_wfa(substring_wfa):
    """The WFA of prefix probabilities ``p(x Sigma*) = sum_y f(x y)`` from the WFA of the
    substring expectations (Balle et al. 2014, Sect. 5): the string WFA's initial weights
    (:func:`peers.substring_to_string`) with the substring WFA's final ones, since
    ``sum_k A_Sigma^k (I - A_Sigma) alpha_inf = alpha_inf``."""
    alpha0, A, _ = peers.substring_to_string(substring_wfa)
    return alpha0, A, substring_wfa[2]


def pfa_prefix_log_prob(pfa, corpus) -> np.ndarray:
    """``log p(x Sigma*)`` of each string of ``corpus``: the forward mass after its letters
    (a PFA's stop and transitions sum to one in every state, so that is the probability that
    a string begins with them)."""
    from bayesfa.forward import forward_log_prob

    return forward_log_prob(pfa.init, pfa.trans, np.ones(pfa.n_states), corpus)


# -- the peers: models(train, values, seed, shape) -> [(score, size)], score(test) -> (full, prefix)

def _spectral(train, ranks, seed, shape):
    f = peers.substring_expectations(train, 2 * peers.SPECTRAL_MAX_LEN + 1)
    words = peers.frequent_basis(f, peers.SPECTRAL_BASIS, peers.SPECTRAL_MAX_LEN)
    blocks = peers.hankel_blocks(f, words, words, train.alphabet_size)
    for rank in ranks:
        rank = min(rank, len(words))
        ws = peers.spectral_wfa(*blocks, rank)
        full, pref = peers.substring_to_string(ws), prefix_wfa(ws)

        def score(t, full=full, pref=pref):
            xs = [s.tolist() for s in t.strings()]
            return (peers._log_positive(peers.wfa_values(full, xs)),
                    peers._log_positive(peers.wfa_values(pref, xs)))
        yield score, int(rank)


def _alergia(train, eps_grid, seed, shape):
    for eps in eps_grid:
        mc = peers.alergia_learn(train, eps)
        yield (lambda t, mc=mc: (peers.alergia_log_probs(mc, t),
                                 peers.alergia_log_probs(mc, t, end=False))), len(mc.states)


def _bayesfa(name, key, fixed):
    def models(train, values, seed, shape):
        from bayesfa.method_options import resolve
        from bayesfa.methods import get_method

        method = get_method(name)
        sequence = shape == "sequence" and name == "hmm-em"  # the others read windows
        for value in values:
            extra = {**HMM_EM[shape], "sequence": sequence} if name == "hmm-em" else {}
            options = resolve(name, {**fixed, key: value, **extra})
            fit = method.fit(train, options, seed, False)
            size = fit.info.get("n_states", options.get("states"))
            if sequence:
                def score(t, arrays=fit.arrays, options=options):
                    total = method.perplexity_log_prob(arrays, options, t, continuation=True)
                    return np.array([total]), np.array([total])
            else:
                pfa = (method.draw_pfa(fit.arrays, options, 0, 0) if hasattr(method, "draw_pfa")
                       else method.automaton(fit.arrays, options).to_pfa())

                def score(t, arrays=fit.arrays, options=options, pfa=pfa):
                    return (np.asarray(method.predict_log_prob(arrays, options, t), dtype=float),
                            pfa_prefix_log_prob(pfa, t))
            yield score, size
    return models


PEERS = {
    "spectral": _spectral,
    "alergia": _alergia,
    "estatemerge": _bayesfa("estatemerge", "beta", {}),
    "cvb0": _bayesfa("cvb0", "states", {"beta": 0.1}),
    "hmm-em": _bayesfa("hmm-em", "states", {}),
}


def reading(dataset: str, method: str) -> str:
    """How the unit reads the data (the convention, or the nearest reading of it)."""
    if DATASETS[dataset] == "sentences":
        return ("sentences from the initial state, ends predicted and counted (letters + ends); "
                "letters only beside it")
    if method == "hmm-em":
        return "continuation of the training sequence (--sequence), every base counted"
    return (f"continuation does not apply to a model of whole strings: training and test cut "
            f"into windows of {WINDOW} bases, each test window from the initial state, its "
            f"prefix probability (no end), every base counted")


def load(dataset: str, runs: Path):
    """``(train, test)`` of the split, written by ``bayesfa data`` (``pdia_table1.split_files``)."""
    from bayesfa.pautomac import read_sample
    from pdia_table1 import split_files

    train_path, test_path = split_files(dataset, runs)
    train = read_sample(train_path)
    return train, read_sample(test_path).with_alphabet(train.alphabet_size)


def heldout(dataset: str, train, seed: int):
    """``(fit part, held-out part, description)`` of the training data."""
    if DATASETS[dataset] == "sentences":
        fit_idx, held_idx = peers.heldout_split(train.n_strings, seed, dataset)
        return (train.subset(fit_idx), train.subset(held_idx),
                f"{int(peers.HELDOUT * 100)}% of the training sentences held out, seed {seed}")
    from bayesfa.textdata import split_corpus

    cut = int(round((1 - peers.HELDOUT) * train.n_letters))
    first, rest = split_corpus(train, cut)
    return first, rest, (f"the last {int(peers.HELDOUT * 100)}% of the training bases held out "
                         f"({cut:,} fit)")


def evaluate(score, corpus, dataset: str, method: str):
    """``(log probs of the convention, letters-only log probs, strings scored)`` of ``corpus``
    (the string models on DNA read it as windows)."""
    sequence = DATASETS[dataset] == "sequence"
    if sequence and method != "hmm-em":
        corpus = windows(corpus)
    full, pref = score(corpus)
    return (pref if sequence else full), pref, corpus.n_strings


def run_unit(dataset: str, method: str, runs: Path, seed: int) -> dict:
    """Choose the size on held-out training data, refit on all of it, score the test."""
    train, test = load(dataset, runs)
    fit_part, held_part, held_desc = heldout(dataset, train, seed)
    sequence = DATASETS[dataset] == "sequence"
    prep = (lambda c: windows(c)) if sequence and method != "hmm-em" else (lambda c: c)
    models, grid = PEERS[method], list(peers.GRIDS[method])
    t0 = time.process_time()
    trials = []

    def trial(values):
        for value, (score, size) in zip(values, models(prep(fit_part), values, seed,
                                                       DATASETS[dataset])):
            lp, _, _ = evaluate(score, held_part, dataset, method)
            zeros, loglik = peers.heldout_fit(lp)
            trials.append({"value": value, "size": size, "zeros": zeros, "loglik": loglik})
    trial(grid)
    for value in [] if (dataset, method) in NO_EXTEND else EXTEND.get(method, []):
        if peers.choose(trials) is not trials[-1]:
            break
        grid.append(value)
        trial([value])
    best = peers.choose(trials)
    [(score, size)] = list(models(prep(train), [best["value"]], seed, DATASETS[dataset]))
    lp, pref, n_scored = evaluate(score, test, dataset, method)
    cpu = time.process_time() - t0
    n_symbols = test.n_letters if sequence else test.n_tokens
    perp, bad = natural_perplexity(lp, n_symbols)
    letters, _ = natural_perplexity(pref, test.n_letters)
    out = nat_row(dataset, method, perplexity=perp, cpu_seconds=round(cpu, 2), size=size,
                  chosen_by=(f"{peers.CHOSEN[method]}={best['value']} of {grid} by held-out "
                             f"log-likelihood ({held_desc})"))
    out.update(trials=trials, reading=reading(dataset, method), n_symbols=n_symbols,
               perplexity_letters_only=None if sequence else letters)
    if bad:
        what = ("test sentences" if not sequence else
                "test sequence" if method == "hmm-em" else f"test windows of {WINDOW} bases")
        out["status"] = f"zero probability ({bad} of {n_scored} {what})"
    if sequence and method != "hmm-em":
        out["status"] += f"; windows of {WINDOW} bases, not a continuation"
    return out


# -- committed bayesfa rows -------------------------------------------------------------------

def _file_commit(path: Path) -> str:
    """The last commit that changed ``path`` (short hash)."""
    return subprocess.run(["git", "log", "-1", "--format=%h", "--", str(path)], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()


def committed_rows(datasets) -> list[dict]:
    """bayesfa's PDIA rows (Table 1 benchmark, paper budget) and HPYP n-gram / memoizer rows,
    read from the committed files, each row naming its file and commit."""
    out = []
    for ds in datasets:
        for method, name, key in COMMITTED.get(ds, []):
            path = RESULTS / name
            where = f"benchmarks/results/{name} (git {_file_commit(path)})"
            e = json.loads(path.read_text())["entries"].get(key)
            if e is None:
                out.append(nat_row(ds, method, chosen_by=where, status=f"not in {where}"))
                continue
            r = nat_row(ds, method, perplexity=e["perplexity"], size=round(e["n_states"], 1),
                        chosen_by=f"states inferred (mean over draws; MAP: its draw); {where}, "
                                  f"not rerun")
            r.update(perplexity_letters_only=e.get("perplexity_letters_only"),
                     n_symbols=e["n_symbols"], fit_seconds_recorded=e.get("fit_seconds"),
                     fit_command=e.get("fit_command"), perplexity_command=e.get("perplexity_command"))
            out.append(r)
        path = RESULTS / NGRAMS
        where = f"benchmarks/results/{NGRAMS} (git {_file_commit(path)})"
        data = "aiw" if ds == "aiw-paper" else "dna"
        last = {}
        for r in json.loads(path.read_text())["rows"]:  # later rows win (DNA 6-gram: 100 + 1,000)
            if r["data"] == data:
                last[f"{r['order']}-gram" if r["method"] == "hpyp" else "memoizer"] = r
        for method, r in sorted(last.items()):
            budget = (f"{r['burn_in']} + {r['iterations'] - r['burn_in']} sweeps"
                      if r.get("iterations") else "one particle")
            row = nat_row(ds, method, perplexity=r["perplexity"],
                          chosen_by=f"order fixed (Table 1's rows), {budget}; {where}, not rerun")
            row.update(perplexity_letters_only=r.get("perplexity_letters_only"),
                       n_symbols=r["n_symbols"], fit_seconds_recorded=r.get("fit_seconds"))
            out.append(row)
    return out


def merge(rows) -> list[dict]:
    """One row per (dataset, method), the last given winning, in :data:`DATASETS`' then
    :data:`METHODS`' order."""
    last = {(r["dataset"], r["method"]): r for r in rows}
    ds_order = {d: i for i, d in enumerate(DATASETS)}
    m_order = {m: i for i, m in enumerate(METHODS)}
    return [last[k] for k in sorted(last, key=lambda k: (ds_order.get(k[0], 99), m_order.get(k[1], 99), k))]


def rows_csv(rows) -> str:
    """The rows as ``natural.csv``: :func:`peers.rows_csv` in this table's columns."""
    return peers.rows_csv(rows, COLUMNS)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--natural", default=",".join(DATASETS), help=f"datasets, of {list(DATASETS)}")
    p.add_argument("--methods", default=",".join(RUN), help=f"peers to run, of {RUN}")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scheduler", default="local", help="as benchmarks/peers.py's")
    p.add_argument("--workers", type=int, default=None, help="as benchmarks/peers.py's")
    p.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per unit")
    p.add_argument("--runs", default=str(RUNS), help="where bayesfa data writes the splits")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--note", default="")
    p.add_argument("--summarize-only", action="store_true")
    p.add_argument("--unit", help=argparse.SUPPRESS)  # DATASET:METHOD
    args = p.parse_args(argv)
    if args.unit:
        dataset, method = args.unit.split(":")
        print(json.dumps(run_unit(dataset, method, Path(args.runs), args.seed)))
        return 0
    datasets = [d for d in args.natural.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    for d in datasets:
        if d not in DATASETS:
            p.error(f"--natural: unknown {d}; choose from {list(DATASETS)}")
    for m in methods:
        if m not in PEERS:
            p.error(f"--methods: unknown {m}; choose from {RUN}")
    peers.check_cluster(p, args)
    out, units = Path(args.out), Path(args.out) / "natural_units"
    check_out(out / "natural.csv", out / "natural.json")

    def cmd_of(d, m):
        return [sys.executable, str(Path(__file__).resolve()), "--unit", f"{d}:{m}",
                "--runs", str(args.runs), "--seed", str(args.seed)]

    if not args.summarize_only:
        for d in datasets:  # write the splits once, before the units read them
            load(d, Path(args.runs))
        peers.run_units([(d, m) for d in datasets for m in methods], args, units,
                        cmd_of=cmd_of, failed=nat_row)
    done = [json.loads(f.read_text()) for f in sorted(units.glob("[!.]*.json"))]
    missing = [nat_row(d, m, status="not run yet (partial run)") for d in datasets for m in RUN
               if not (units / f"{d}.{m}.json").exists()]
    rows = merge(committed_rows(datasets) + missing + done)
    write_out_text(out / "natural.csv", rows_csv(rows))
    write_out_json(out / "natural.json", {
        "commit": git_commit(), "command": peers._portable([sys.executable] + sys.argv),
        "machine": cpu_name(), "datasets": datasets, "methods_run": RUN,
        "conventions": {f"{d}/{m}": reading(d, m) for d in datasets for m in RUN},
        "window": WINDOW, "grids": peers.GRIDS, "grids_extended_by": EXTEND,
        "not_extended": {f"{d}/{m}": why for (d, m), why in NO_EXTEND.items()}, "hmm_em_options": HMM_EM,
        "heldout_fraction": peers.HELDOUT, "seed": args.seed,
        "not_run": peers.NOT_RUN, "note": args.note,
        "unit_commands": "each unit's row in natural_units/DATASET.METHOD.json has its command",
        "committed": "pdia, pdia-map, pdia-smoothed, n-gram and memoizer rows: read from the "
                     "files their chosen_by names, not rerun",
        "rows": rows})
    print(rows_csv(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
