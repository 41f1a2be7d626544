"""Which beta the held-out strings of ``--auto`` prefer after how many sweeps, from the ladder's
path (issue 22, goal; the reason for ``auto.BETA_GROWTH``).

    python benchmarks/pautomac_beta_windows.py --problem 21 \\
        --schedule benchmarks/results/pautomac47-auto/problems/21/auto.json \\
        --betas 0.005,0.01,0.02,0.05 --sweeps 3100 [--seed 1] [--data ../shared/data/pautomac] \\
        [--out benchmarks/results/pautomac_beta_windows_21.json]

Phase 1 of ``bayesfa fit --auto`` (:func:`bayesfa.samplers.pfa.auto.run_ladder`) is run as that
run did: the same held-out slice (``holdout_split`` of ``--seed``), the schedule and planned
money recorded in ``--schedule`` (a ``pautomac run --auto`` problem's ``auto.json``), the same
seed. From the winning rung's path, one chain per beta runs windows of 100, 200, 400, ...
sweeps (``--sweeps`` in all), each continuing from where the last stopped; a window's second
half is recorded as 10 draws, and those draws are scored by Eq. 6 on the held-out training
strings (``heldout``: the sum of ``log mean_d Pr(b | xi~(d))``, what ``--auto`` compares) and
on the test strings against the solution file (``ratio - 1``, never used by ``--auto``).
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


def run(problem: int, schedule_file: Path, betas: list[float], total: int, seed: int, data: Path) -> dict:
    import numpy as np

    from bayesfa.forward import log_mean_exp
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.samplers.pfa import auto
    from bayesfa.samplers.pfa import cgs_pfa as front
    from bayesfa.scoring import score_all_log

    train = read_sample(data / f"{problem}.pautomac.train")
    test = read_sample(data / f"{problem}.pautomac.test").with_alphabet(train.alphabet_size)
    solution = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    recorded = json.loads(schedule_file.read_text())
    recorded = recorded.get("auto", recorded)
    schedule, money = recorded["schedule"], recorded["plan_money"]
    kept_idx, held_idx = front.holdout_split(train.n_strings, auto.HOLDOUT, np.random.SeedSequence(seed))
    kept, held = train.subset(kept_idx), train.subset(held_idx)
    rows = []
    with auto.front_session(front):
        rungs, best, paths, _ = auto.run_ladder(kept, held, schedule, money * auto.LADDER_SHARE, seed,
                                                auto._Ledger(money))
        n_states, z0 = rungs[best]["states"], paths[best][0]
        for beta in betas:
            z, done, width, cpu = z0, 0, 100, time.process_time()
            while done < total:
                out = front._run_chain(kept.tokens, kept.alphabet_size + 1, n_states, beta, width // 2,
                                       width // 20, 10, np.random.SeedSequence([seed, done, round(beta * 1e4)]),
                                       init_z=z)
                z, done = out[5], done + width
                held_score = float(auto.heldout_per_string(out[0], beta, held).sum())
                test_log = log_mean_exp(front.plugin_log_prob(out[0], beta, test), axis=0)
                s = score_all_log(test_log, solution)
                rows.append({"beta": beta, "sweeps": done, "window": width, "heldout": held_score,
                             "ratio_minus_1": s.ratio - 1.0, "cpu_seconds": time.process_time() - cpu,
                             "log_joint": float(out[1][-1])})
                print(f"beta {beta:g} after {done} sweeps: held-out {held_score:.1f}, "
                      f"ratio - 1 {s.ratio - 1.0:.5f}", flush=True)
                width *= 2
    return {"problem": problem, "states": int(n_states),
            "ladder": [{"states": r["states"], "heldout": r["heldout"]} for r in rungs], "rows": rows}


def table(result: dict) -> str:
    betas = sorted({r["beta"] for r in result["rows"]})
    ends = sorted({r["sweeps"] for r in result["rows"]})
    cell = {(r["beta"], r["sweeps"]): r for r in result["rows"]}
    head = "| sweeps (window) | " + " | ".join(f"beta {b:g}: held-out, ratio - 1" for b in betas) + " |"
    lines = [head, "|---|" + "---:|" * len(betas)]
    for e in ends:
        w = next(r["window"] for r in result["rows"] if r["sweeps"] == e)
        lines.append(f"| {e} ({e - w // 2}-{e}) | " + " | ".join(
            f"{cell[b, e]['heldout']:.1f}, {cell[b, e]['ratio_minus_1']:.5f}" for b in betas) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from machine import git_commit, missing_pautomac_file

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, required=True)
    p.add_argument("--schedule", required=True, help="a pautomac run --auto problem's auto.json")
    p.add_argument("--betas", default="0.005,0.01,0.02,0.05")
    p.add_argument("--sweeps", type=int, default=3100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    data = Path(args.data)
    missing = missing_pautomac_file(data, args.problem)
    if missing:
        print(f"pautomac_beta_windows.py: error: --data {data}: no file {missing}", file=sys.stderr)
        return 2
    if not Path(args.schedule).is_file():
        print(f"pautomac_beta_windows.py: error: --schedule {args.schedule}: no such file", file=sys.stderr)
        return 2
    out = Path(args.out or HERE / "results" / f"pautomac_beta_windows_{args.problem}.json")
    check_out(out, out.with_suffix(".md"))
    command = "python benchmarks/pautomac_beta_windows.py " + " ".join(sys.argv[1:] if argv is None else argv)
    result = run(args.problem, Path(args.schedule), [float(b) for b in args.betas.split(",") if b],
                 args.sweeps, args.seed, data)
    result.update(commit=git_commit(), command=command)
    write_out_json(out, result)
    text = table(result)
    write_out_text(out.with_suffix(".md"), f"Problem {args.problem}, N = {result['states']} (the ladder's "
                                           f"winner); commit {result['commit']}; command: `{command}`\n\n"
                                           f"{text}\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
