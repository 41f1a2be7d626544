"""Equal mixtures of two recorded runs' answers on one PAutomaC problem (issue 37: would two
independent lineages, their predictions averaged, take the seed lottery out of problem 1?).

    python benchmarks/pautomac_answer_mixtures.py --problem 1 --runs RUN [RUN ...]
        [--data ../shared/data/pautomac] [--bar 0.0032] --out benchmarks/results/p1-ladder-top/mixtures.json

Each ``RUN`` is a ``pautomac run`` folder (``RUN/answers/P.pautomac.predict``). For every pair
of runs the answer ``log((p_a + p_b) / 2)``, the mixture of their predictive distributions
over the test strings with equal weights, is scored (Eq. 19 over the solution, ratio - 1)
beside each run alone: the mixture's mean, worst and count over ``--bar`` against the mean of
the pair and the better of the pair. Each mixture spends the CPU of two runs. The test strings
score here and choose nothing; nothing in ``--auto`` reads this.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's modules)
from machine import git_commit  # noqa: E402


def main(argv=None) -> int:
    from bayesfa.pautomac import read_solution
    from bayesfa.scoring import score_all_log

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, default=1)
    p.add_argument("--runs", nargs="+", required=True, help="pautomac run folders")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--bar", type=float, default=0.0032)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    command = f"python benchmarks/{Path(__file__).name} {shown}"
    check_out(args.out)  # a file bayesfa did not write is refused before any work
    solution = read_solution(Path(args.data) / f"{args.problem}.pautomac_solution.txt", log=True)
    answers = {}
    for run in args.runs:
        path = Path(run) / "answers" / f"{args.problem}.pautomac.predict"
        answers[run] = read_solution(path, log=True)

    def ratio(log_pred) -> float:
        return float(score_all_log(log_pred, solution).ratio - 1.0)

    alone = {run: ratio(lp) for run, lp in answers.items()}
    pairs = []
    for a, b in itertools.combinations(answers, 2):
        mix = np.logaddexp(answers[a], answers[b]) - np.log(2.0)
        pairs.append({"runs": [a, b], "mixture": ratio(mix), "mean_of_two": (alone[a] + alone[b]) / 2,
                      "better_of_two": min(alone[a], alone[b])})
    mixtures = np.array([q["mixture"] for q in pairs])
    summary = {"pairs": len(pairs), "mixture_mean": float(mixtures.mean()),
               "mixture_worst": float(mixtures.max()),
               "mixture_over_bar": int((mixtures > args.bar).sum()),
               "mean_of_two_mean": float(np.mean([q["mean_of_two"] for q in pairs])),
               "better_of_two_mean": float(np.mean([q["better_of_two"] for q in pairs])),
               "alone_over_bar": int(sum(v > args.bar for v in alone.values()))}
    out = {"command": command, "commit": git_commit(),
           "problem": args.problem, "bar": args.bar, "alone": alone, "summary": summary, "pairs": pairs}
    write_out_text(args.out, json.dumps(out, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
