"""CGS-PFA on one PAutomaC problem at fixed N over a grid of beta, chain lengths and seeds: what
closes the gap of ``--auto`` on the problems that carry its mean (issue 22, goal).

    python benchmarks/pautomac_beta_sweeps.py --problem 9 --states 114 --betas 0.005,0.01,0.02,0.05 \
        --sweeps 2000,8000 --seeds 1 [--chains 2] [--data ../shared/data/pautomac] \
        [--out benchmarks/results/pautomac_beta_sweeps_9.json]

Each cell (beta, sweeps, seed) runs ``bayesfa fit --method cgs-pfa`` in this process
(:func:`bayesfa.samplers.pfa.cgs_pfa.sample_cgs_pfa`: ``--chains`` chains from uniformly random
paths, the first half of the sweeps burn-in, a draw every ``sweeps / 100`` sweeps after it) and
scores Eq. 6 of the test strings, accumulated online over every draw, against the solution file
(``score - min`` and ``ratio - 1`` as ``bayesfa pautomac score``). Cells are written as they
finish; a run started again skips the finished ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from guarded_out import check_out, write_out_json, write_out_text  # noqa: E402


def _list(text: str, kind):
    return [kind(x) for x in text.split(",") if x]


def run_cell(problem: int, n_states: int, beta: float, sweeps: int, seed: int, chains: int, data: Path) -> dict:
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.samplers.pfa.cgs_pfa import sample_cgs_pfa
    from bayesfa.scoring import score_all_log

    train = read_sample(data / f"{problem}.pautomac.train")
    test = read_sample(data / f"{problem}.pautomac.test")
    solution = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    cpu = time.process_time()
    res = sample_cgs_pfa(train, n_states, beta, sweeps, sweeps // 2, max(1, sweeps // 100), chains, seed,
                         predict=test, max_draws=1)
    s = score_all_log(res.predict_log_mean, solution)
    return {"problem": problem, "states": n_states, "beta": beta, "sweeps": sweeps, "seed": seed,
            "chains": chains, "score": s.score, "min_score": s.min_score,
            "excess": s.score - s.min_score, "ratio_minus_1": s.ratio - 1.0,
            "cpu_seconds": time.process_time() - cpu,
            "final_log_joint": [float(x) for x in res.log_joint[:, -1]],
            "final_states_used": [int(x) for x in res.n_states[:, -1]]}


def table(cells: dict) -> str:
    lines = ["| beta | sweeps | seed | ratio - 1 | score - min | CPU s | final log joint per chain | states used |",
             "|---:|---:|---:|---:|---:|---:|---|---|"]
    for c in sorted(cells.values(), key=lambda c: (c["beta"], c["sweeps"], c["seed"])):
        lines.append(f"| {c['beta']:g} | {c['sweeps']} | {c['seed']} | {c['ratio_minus_1']:.5f} | "
                     f"{c['excess']:.4f} | {c['cpu_seconds']:.0f} | "
                     f"{', '.join(f'{x:.0f}' for x in c['final_log_joint'])} | "
                     f"{', '.join(str(x) for x in c['final_states_used'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from machine import git_commit, missing_pautomac_file

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, required=True)
    p.add_argument("--states", type=int, required=True)
    p.add_argument("--betas", default="0.005,0.01,0.02,0.05")
    p.add_argument("--sweeps", default="2000")
    p.add_argument("--seeds", default="1")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    data = Path(args.data)
    missing = missing_pautomac_file(data, args.problem)
    if missing:
        print(f"pautomac_beta_sweeps.py: error: --data {data}: no file {missing}", file=sys.stderr)
        return 2
    out = Path(args.out or HERE / "results" / f"pautomac_beta_sweeps_{args.problem}.json")
    check_out(out, out.with_suffix(".md"))
    done = json.loads(out.read_text()) if out.exists() else {"cells": {}}
    command = "python benchmarks/pautomac_beta_sweeps.py " + " ".join(sys.argv[1:] if argv is None else argv)
    for beta in _list(args.betas, float):
        for sweeps in _list(args.sweeps, int):
            for seed in _list(args.seeds, int):
                key = f"{args.states}/{beta:g}/{sweeps}/{seed}/{args.chains}"
                if key in done["cells"]:
                    continue
                cell = run_cell(args.problem, args.states, beta, sweeps, seed, args.chains, data)
                cell.update(commit=git_commit(), command=command)
                done["cells"][key] = cell
                write_out_json(out, done)
                print(f"problem {args.problem} N {args.states} beta {beta:g} sweeps {sweeps} seed {seed}: "
                      f"ratio - 1 {cell['ratio_minus_1']:.5f} ({cell['cpu_seconds']:.0f} CPU s)", flush=True)
    text = table(done["cells"])
    commits = sorted({c["commit"] for c in done["cells"].values()})
    write_out_text(out.with_suffix(".md"), f"Problem {args.problem}; commits {', '.join(commits)}; "
                                           f"command: `{command}`\n\n{text}\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
