"""The greedy learners on PAutomaC: seconds, score - min and states, beside the paper's Table 3.

    nice -n 10 python benchmarks/greedy_speed.py [--problems 43,5,...|all] [--methods ...]
        [--beta 0.5] [--alpha 0.05] [--data ../shared/data/pautomac]
        [--out benchmarks/results/greedy_speed.json]

Default problems: those of Table 3 (Shibata & Yoshinaka 2013) that are here (problem 22 has
no training file). ``sec`` is the CPU time of ``fit`` alone (one thread; on a loaded shared
machine the wall time, also recorded, is several times larger), after a warm-up fit on a
tiny corpus so that numba's compilation is not counted. Each finished (problem, method) is written
into the JSON file at once and a rerun skips it, so an interrupted run loses nothing.

Prints one row per problem and method: our seconds, the paper's seconds (2013 hardware), our
score - min and the paper's, our number of states (trie nodes for the VGrams) and the paper's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.methods import get_method
from bayesfa.pautomac import read_sample, read_solution
from guarded_out import check_out, write_out_json
from bayesfa.scoring import score_all

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("estatemerge", "cvgram", "evgram", "alergia")
TABLE3_PROBLEMS = (43, 5, 15, 11, 32, 41, 47, 36, 18, 22)
#: Table 3 of the paper: problem -> method -> (seconds, score - min, states).
PAPER_TABLE3 = {
    43: {"cgs-pfa": (540, 0.1105, 30), "estatemerge": (5.7, 0.9464, 13), "cvgram": (1.6, 0.1648, 79), "evgram": (0.89, 0.1828, 43)},
    5: {"cgs-pfa": (350, 0.1792, 10), "estatemerge": (1.4, 2.4717, 9), "cvgram": (1.1, 0.0135, 99), "evgram": (0.87, 0.0135, 99)},
    15: {"cgs-pfa": (1800, 0.0371, 40), "estatemerge": (120, 0.5464, 174), "cvgram": (9.7, 0.6289, 29776), "evgram": (14, 0.7015, 597556)},
    11: {"cgs-pfa": (5300, 0.0670, 80), "estatemerge": (85, 0.2934, 47), "cvgram": (80, 0.9273, 171886), "evgram": (584, 1.0444, 7229083)},
    32: {"cgs-pfa": (10000, 0.0098, 90), "estatemerge": (13, 1.8411, 40), "cvgram": (3.4, 0.1004, 19616), "evgram": (3.6, 0.1323, 15446)},
    41: {"cgs-pfa": (5100, 0.0112, 40), "estatemerge": (130, 0.1500, 30), "cvgram": (2.0, 0.0272, 377), "evgram": (2.4, 0.0887, 105)},
    47: {"cgs-pfa": (18000, 0.0006, 90), "estatemerge": (170, 0.0538, 61), "cvgram": (18, 0.0049, 37377), "evgram": (31, 0.0065, 644417)},
    36: {"cgs-pfa": (9900, 0.0273, 50), "estatemerge": (670, 0.4523, 127), "cvgram": (4.9, 0.2848, 5931), "evgram": (7, 0.5153, 33411)},
    18: {"cgs-pfa": (13000, 0.0037, 50), "estatemerge": (250, 0.9027, 24), "cvgram": (8.9, 0.0643, 8023), "evgram": (11, 0.0587, 62245)},
    22: {"cgs-pfa": (28000, 0.0095, 80), "estatemerge": (7600, 0.2876, 583), "cvgram": (130, 0.1279, 214303), "evgram": (260, 0.2110, 6039155)},
}


def warm_up(methods, options) -> None:
    tiny = Corpus.from_strings([[0, 1], [1, 1, 0], [], [0]], 2)
    for name in methods:
        m = get_method(name)
        result = m.fit(tiny, dict(options, folds=2), 0, False)
        m.predict_log_prob(result.arrays, dict(options, folds=2), tiny)


def run_one(name: str, k: int, data: Path, options: dict) -> dict:
    train = read_sample(data / f"{k}.pautomac.train")
    test = read_sample(data / f"{k}.pautomac.test").with_alphabet(train.alphabet_size)
    solution = read_solution(data / f"{k}.pautomac_solution.txt")
    method = get_method(name)
    start, cpu = time.perf_counter(), time.process_time()
    result = method.fit(train, options, 0, False)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    logp = method.predict_log_prob(result.arrays, options, test)
    score = log_space_score(logp, solution)
    min_score = score_all(solution, solution).score
    return {"problem": k, "method": name, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
            "load_average": round(os.getloadavg()[0], 1),
            "states": int(result.info["n_states"]), "score": score, "min_score": min_score,
            "score_minus_min": score - min_score, "ratio": score / min_score,
            "min_test_log_prob": float(logp.min()), "n_tokens": train.n_tokens}


def log_space_score(logp: np.ndarray, solution: np.ndarray) -> float:
    """Eq. 19 from natural-log predictions, normalised over the test set in log space (a
    probability below 1e-308 is positive but ``exp`` would round it to 0)."""
    from scipy.special import logsumexp

    log_pc = (logp - logsumexp(logp)) / np.log(2.0)
    p_t = solution / solution.sum()
    mass = p_t > 0
    return float(2.0 ** (-np.sum(p_t[mass] * log_pc[mass])))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", default="table3", help="comma-separated, 'table3' (default) or 'all'")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--beta", type=float, default=0.5)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "pautomac")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "greedy_speed.json")
    args = p.parse_args(argv)
    check_out(args.out)  # before reading it: refuse a file bayesfa did not write
    if args.problems == "table3":
        problems = list(TABLE3_PROBLEMS)
    elif args.problems == "all":
        problems = list(range(1, 49))
    else:
        problems = [int(v) for v in args.problems.split(",")]
    problems = [k for k in problems if (args.data / f"{k}.pautomac.train").is_file()]
    methods = args.methods.split(",")
    options = {"beta": args.beta, "alpha": args.alpha, "folds": 10, "first_fit": False}
    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    settings = {"beta": args.beta, "alpha": args.alpha, "folds": 10}
    if results.get("settings") not in (None, settings):
        print(f"{args.out} holds results for other settings {results['settings']}; use another --out",
              file=sys.stderr)
        return 2
    results["settings"] = settings
    results.setdefault("machine", f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    rows = results.setdefault("rows", {})
    warm_up(methods, options)
    print(f"{'prob':>4} {'method':<12} {'cpu s':>8} {'wall s':>8} {'paper s':>8} {'score-min':>10} "
          f"{'paper':>8} {'states':>8} {'paper N':>8}", flush=True)
    for k in problems:
        for name in methods:
            key = f"{k}:{name}"
            if key not in rows:
                rows[key] = run_one(name, k, args.data, options)
                write_out_json(args.out, results)
            r = rows[key]
            paper = PAPER_TABLE3.get(k, {}).get(name)
            ps, pscore, pn = (f"{paper[0]:g}", f"{paper[1]:.4f}", f"{paper[2]}") if paper else ("", "", "")
            print(f"{k:>4} {name:<12} {r['cpu_seconds']:>8.2f} {r['seconds']:>8.2f} {ps:>8} {r['score_minus_min']:>10.4f} "
                  f"{pscore:>8} {r['states']:>8} {pn:>8}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
