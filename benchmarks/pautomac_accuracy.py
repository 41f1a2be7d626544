"""CGS-PFA on the small PAutomaC problems: score ratio at a fixed budget, beside the paper.

    python benchmarks/pautomac_accuracy.py [--problems 43,29,...] [--states 30] [--beta 0.05]
        [--iterations 4000] [--burn-in 2000] [--period 20] [--chains 4] [--jobs 2]
        [--data ../shared/data/pautomac] [--out benchmarks/results/pautomac_accuracy.json]

Each finished problem is written (atomically) into the JSON file at once, and a rerun with the
same settings skips it, so an interrupted run loses no finished work. Prints one row a problem:
score, minimal score, score - min (the quantity of the paper's Table 3) and the ratio.

Reference figures: Shibata & Yoshinaka (2013), Table 3, CGS with 10,000 sweeps, one chain,
N chosen by 10-fold CV (score - min).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bayesfa.pautomac import read_sample, read_solution
from guarded_out import check_out, write_out_json
from bayesfa.samplers.pfa.cgs_pfa import predict_log_prob, sample_cgs_pfa
from bayesfa.scoring import score_all

ROOT = Path(__file__).resolve().parents[1]
# The ten problems with the fewest training letters (98,777 to 144,378).
SMALL = (43, 29, 7, 30, 31, 24, 28, 42, 38, 3)
PAPER_TABLE3_CGS10K = {43: 0.1105, 5: 0.1792, 15: 0.0371, 11: 0.0670, 32: 0.0098, 41: 0.0112,
                       47: 0.0006, 36: 0.0273, 18: 0.0037, 22: 0.0095}


def run_problem(k: int, data: Path, args) -> dict:
    train = read_sample(data / f"{k}.pautomac.train")
    test = read_sample(data / f"{k}.pautomac.test").with_alphabet(train.alphabet_size)
    solution = read_solution(data / f"{k}.pautomac_solution.txt")
    t0 = time.perf_counter()
    res = sample_cgs_pfa(train, n_states=args.states, beta=args.beta, iterations=args.iterations,
                         burn_in=args.burn_in, period=args.period, chains=args.chains,
                         seed=args.seed, jobs=args.jobs)
    fit_seconds = time.perf_counter() - t0
    logp = predict_log_prob(res.counts, args.beta, test)
    s = score_all(np.exp(logp), solution)
    return {"problem": k, "n_letters": train.n_letters, "states": args.states, "beta": args.beta,
            "iterations": args.iterations, "burn_in": args.burn_in, "period": args.period,
            "chains": args.chains, "seed": args.seed, "fit_seconds": round(fit_seconds, 2),
            "ns_per_state_token": res.info["ns_per_state_token"],
            "score": s.score, "min_score": s.min_score, "excess": s.score - s.min_score,
            "ratio": s.ratio, "paper_cgs10k_excess": PAPER_TABLE3_CGS10K.get(k)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problems", default=",".join(map(str, SMALL)))
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--states", type=int, default=30)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--iterations", type=int, default=4000)
    p.add_argument("--burn-in", type=int, default=2000)
    p.add_argument("--period", type=int, default=20)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pautomac_accuracy.json"))
    args = p.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    check_out(out)  # before reading it: refuse a file bayesfa did not write
    settings = {k: getattr(args, k) for k in ("states", "beta", "iterations", "burn_in", "period",
                                               "chains", "seed")}
    done = json.loads(out.read_text()) if out.exists() else {"settings": settings, "rows": {}}
    if done["settings"] != settings:
        sys.exit(f"{out} holds results for other settings {done['settings']}; choose another --out")
    print(f"{'prob':>4} {'letters':>8} {'seconds':>8} {'score':>10} {'min':>10} {'score-min':>10} "
          f"{'ratio':>8} {'paper10k':>9}")
    for k in (int(v) for v in args.problems.split(",")):
        if str(k) not in done["rows"]:
            done["rows"][str(k)] = run_problem(k, data, args)
            write_out_json(out, done)
        r = done["rows"][str(k)]
        paper = "" if r["paper_cgs10k_excess"] is None else f"{r['paper_cgs10k_excess']:.4f}"
        print(f"{k:>4} {r['n_letters']:>8} {r['fit_seconds']:>8.1f} {r['score']:>10.4f} "
              f"{r['min_score']:>10.4f} {r['excess']:>10.4f} {r['ratio']:>8.5f} {paper:>9}", flush=True)
    ratios = [done["rows"][str(k)]["ratio"] for k in map(int, args.problems.split(","))]
    print(f"mean ratio - 1 = {np.mean(ratios) - 1:.5f} over {len(ratios)} problems "
          f"(paper, PAutomaC I with 20,000 sweeps x 10 chains and CV-chosen N, beta: 0.00129)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
