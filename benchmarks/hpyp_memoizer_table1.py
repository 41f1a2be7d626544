"""HPYP n-grams (orders 2-6) and the sequence memoizer on the PDIA paper's data (issue 10):
test perplexity beside Pfau, Bartlett & Wood (2010), Table 1, with run times.

    python benchmarks/hpyp_memoizer_table1.py [--data aiw,dna] [--orders 2,3,4,5,6]
        [--iterations 1100] [--burn-in 100] [--seed 0] [--json OUT]

AIW: ../shared/data/text/aiw.train / aiw.test (the PDIA authors' split, one sentence a
line, 27 symbols + the end of a sentence). DNA: ../shared/data/dna/mm10.fa, the first
150,000 bases train, the rest test, one sequence (``--sequence``). Perplexity as
``bayesfa perplexity`` computes it: the test data integrated into the model as read,
per symbol (AIW: letters and ends; DNA: bases). For AIW also ``perplexity_letters_only``:
the same test pass with the 50 end predictions left out of the count.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
ALPHABET = "abcdefghijklmnopqrstuvwxyz "
#: Table 1 of the paper: bigram .. 6-gram, sequence memoizer
PAPER = {"aiw": {2: 9.71, 3: 6.45, 4: 5.13, 5: 4.80, 6: 4.69, "memoizer": 4.78},
         "dna": {2: 3.77, 3: 3.75, 4: 3.74, 5: 3.73, 6: 3.72, "memoizer": 3.56}}


def load(name: str):
    from bayesfa.textdata import load_fasta, load_lines, split_corpus

    if name == "aiw":
        train, _ = load_lines(DATA / "text" / "aiw.train", ALPHABET)
        test, _ = load_lines(DATA / "text" / "aiw.test", ALPHABET)
        return train, test, False
    dna, _ = load_fasta(DATA / "dna" / "mm10.fa")
    train, test = split_corpus(dna, 150_000)
    return train, test, True


def main(argv=None) -> int:
    from bayesfa.methods import get_method

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="aiw,dna")
    ap.add_argument("--orders", default="2,3,4,5,6")
    ap.add_argument("--memoizer", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--iterations", type=int, default=1100)
    ap.add_argument("--burn-in", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in args.data.split(","):
        train, test, seq = load(name)
        n_sym = test.n_letters if seq else test.n_tokens
        runs = [("hpyp", int(k)) for k in args.orders.split(",") if k]
        if args.memoizer:
            runs.append(("memoizer", None))
        for method_name, order in runs:
            method = get_method(method_name)
            parser = argparse.ArgumentParser()
            method.add_arguments(parser)
            opts = vars(parser.parse_args([]))
            opts["sequence"] = seq
            if order is not None:
                opts.update(order=order, iterations=args.iterations, burn_in=args.burn_in)
            t0 = time.perf_counter()
            fit = method.fit(train, opts, args.seed, False)
            t1 = time.perf_counter()
            total = method.perplexity_log_prob(fit.arrays, opts, test, continuation=seq)
            t2 = time.perf_counter()
            letters = None
            if not seq:  # the same, with the end predictions left out of the count
                is_letter = test.tokens != 0
                if order is None:
                    tok = method.predict_log_prob(fit.arrays, opts, test, per_token=True)
                    letters = float(tok[is_letter].sum())
                else:
                    from bayesfa.forward import log_mean_exp
                    from bayesfa.samplers.ngram.hpyp import per_sample_log_prob

                    tok = per_sample_log_prob(fit.arrays, opts, test, per_token=True)
                    tok = tok.reshape(-1, tok.shape[-1])
                    letters = float(log_mean_exp(tok[:, is_letter].sum(axis=1), axis=0))
            row = {"data": name, "method": method_name, "order": order,
                   "perplexity": float(np.exp(-total / n_sym)), "n_symbols": int(n_sym),
                   "paper": PAPER[name][order if order is not None else "memoizer"],
                   "fit_seconds": round(t1 - t0, 1), "perplexity_seconds": round(t2 - t1, 1)}
            if letters is not None:
                row["perplexity_letters_only"] = float(np.exp(-letters / test.n_letters))
            if order is not None:
                row["seconds_per_sweep"] = round(fit.info["seconds_per_sweep"], 4)
                row["iterations"], row["burn_in"] = args.iterations, args.burn_in
                row["d"] = np.round(fit.arrays["disc"].mean(axis=(0, 1)), 3).tolist()
                row["theta"] = np.round(fit.arrays["conc"].mean(axis=(0, 1)), 3).tolist()
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
