"""CGS-PFA on the problems of Table 3 of Shibata & Yoshinaka (2013), beside the paper's CGS(10k).

    nice -n 10 python benchmarks/pautomac_table3.py [--problems 43,5,15,11,32,41,47,36,18]
        [--seeds 0,1,2] [--iterations 10000] [--burn-in 5000] [--period 100] [--beta 0.05]
        [--workers 1] [--data ../shared/data/pautomac]
        [--out benchmarks/results/pautomac_table3.json]
    nice -n 10 python benchmarks/pautomac_table3.py --auto F [--chains 2] [--seeds 0,1,2]
        --out benchmarks/results/pautomac_table3_auto.json

``--auto F`` (issue 22, item 5): each unit is CGS-PFA ``--auto`` instead, N and beta chosen from
held-out training strings within a budget of F times the paper's CGS(10k) seconds for that
problem (F <= 0.1: at most a tenth of the paper's CPU), ``--chains`` chains of the winner mixed
by Eq. 6 with what is left; the table then shows the N chosen, beside the paper's CGS(10k) and
CGS(20k) scores.

Protocol (the paper's, Sect. 4.1 and 4.6): one chain per run, N from Table 3, L = 10,000
sweeps, burn-in L/2 (Sect. 4.6.1: "the burn-in period was set at L/2"), one draw every 100
sweeps (Period = 100, Sect. 4.1), so 50 draws; the answer is Eq. 6 over them. Table 3 does not
give beta (the paper chose it by 10-fold CV per problem); ``--beta`` sets it for all problems.
Each run predicts the test set online (:func:`bayesfa.online.fit_and_predict`, draws folded in
as they are made, ``max_draws = 1``), so memory stays at one chain's state whatever L.

Units (problem x seed) run in ``--workers`` processes; each finished unit is written atomically
into ``--out`` at once, and a running unit checkpoints its chain into ``OUT_work/`` every
``--checkpoint-every`` seconds, so a rerun of the same command skips finished units and resumes
unfinished ones mid-chain (bit-identical). Prints, per problem: the paper's seconds and score
- min, then each seed's CPU seconds (wall seconds in brackets: they follow the machine's load)
and score - min, their medians, and median CPU seconds / the paper's seconds.
Table 3 (PAutomaC II; 22's training file is missing from the shared set): problem -> (N, CGS(10k)
seconds, CGS(10k) score - min).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER_TABLE3 = {43: (30, 540, 0.1105), 5: (10, 350, 0.1792), 15: (40, 1800, 0.0371),
                11: (80, 5300, 0.0670), 32: (90, 10000, 0.0098), 41: (40, 5100, 0.0112),
                47: (90, 18000, 0.0006), 36: (50, 9900, 0.0273), 18: (50, 13000, 0.0037)}
#: the same table's CGS(20k) column: problem -> (seconds, score - min), N as for CGS(10k)
PAPER_TABLE3_20K = {43: (1100, 0.1062), 5: (680, 0.0019), 15: (3500, 0.0375), 11: (11000, 0.0670),
                    32: (20000, 0.0079), 41: (10000, 0.0089), 47: (36000, 0.0006),
                    36: (20000, 0.0228), 18: (25000, 0.0030)}


def _unit_options(problem: int, settings: dict) -> dict:
    """The cgs-pfa options of one unit: the paper's N and L, or --auto within its budget."""
    from bayesfa.method_options import resolve

    if settings.get("auto_fraction") is not None:
        budget = settings["auto_fraction"] * PAPER_TABLE3[problem][1]
        return {**resolve("cgs-pfa", {"auto": True, "budget": budget, "chains": settings["chains"]}),
                "max_draws": 1}
    return {"states": PAPER_TABLE3[problem][0], "beta": settings["beta"],
            "iterations": settings["iterations"], "burn_in": settings["burn_in"],
            "period": settings["period"], "chains": 1, "jobs": 1, "holdout": 0.0,
            "max_draws": 1, "checkpoint_every": settings["checkpoint_every"]}


def run_unit(problem: int, seed: int, data: str, settings: dict, workdir: str) -> dict:
    """One chain of CGS-PFA on ``problem`` with ``seed``, its test set predicted online."""
    import numpy as np

    from bayesfa.online import fit_and_predict
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.scoring import score_all_log

    data = Path(data)
    train = read_sample(data / f"{problem}.pautomac.train")
    test = read_sample(data / f"{problem}.pautomac.test")
    solution = read_solution(data / f"{problem}.pautomac_solution.txt", log=True)
    options = _unit_options(problem, settings)
    wall, cpu = time.perf_counter(), time.process_time()
    pred = fit_and_predict("cgs-pfa", train, options, seed, test, workdir=workdir)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    s = score_all_log(pred.log_mean, solution)
    fit = pred.info["fit"]
    auto = fit.get("auto")
    return {"problem": problem, "seed": seed,
            "states": auto["winner"]["states"] if auto else options["states"],
            **({"beta": auto["winner"]["beta"], "budget": options["budget"]} if auto else {}),
            "n_tokens": int(train.n_tokens), "n_draws": pred.n_draws,
            "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "chain_seconds": round(float(np.sum(fit["chain_seconds"])), 2),
            "resumed": bool(fit.get("chains_resumed") or fit.get("chains_resumed_mid_chain")),
            "ns_per_state_token": fit.get("ns_per_state_token"),
            "score": s.score, "min_score": s.min_score, "excess": s.score - s.min_score}


def table(rows: dict, problems: list[int], seeds: list[int], auto: bool = False) -> str:
    """The markdown table of ``rows``: each seed's CPU and score - min, their medians against
    the paper's CGS(10k) (and, for ``--auto`` rows, CGS(20k) and the N and beta chosen)."""
    head = ("| problem | N | paper s | paper score-min | "
            + ("paper 20k s | paper 20k score-min | budget cpu s | " if auto else "")
            + " | ".join(f"seed {s} cpu s (wall) | seed {s} score-min"
                         + (f" | seed {s} N, beta" if auto else "") for s in seeds)
            + " | median cpu s | median score-min | time / paper | better"
            + (" | better than 20k |" if auto else " |"))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for p in problems:
        n, paper_s, paper_x = PAPER_TABLE3[p]
        paper20_s, paper20_x = PAPER_TABLE3_20K[p]
        got = [rows.get(f"{p}/{s}") for s in seeds]
        cells = []
        for r in got:
            if r is None:
                cells += ["-"] * (3 if auto else 2)
                continue
            cells += [f"{r['cpu_seconds']:.0f} ({r['wall_seconds']:.0f})", f"{r['excess']:.4f}"]
            if auto:
                cells.append(f"{r['states']}, {r['beta']:g}")
        done = [r for r in got if r is not None]
        if done:
            med_s = statistics.median(r["cpu_seconds"] for r in done)
            med_x = statistics.median(r["excess"] for r in done)
            partial = "" if len(done) == len(seeds) else f" ({len(done)}/{len(seeds)} seeds)"
            tail = [f"{med_s:.0f}", f"{med_x:.4f}", f"{med_s / paper_s:.3f}",
                    ("yes" if med_x < paper_x else "no") + partial]
            if auto:
                tail.append(("yes" if med_x < paper20_x else "no") + partial)
        else:
            tail = ["-"] * (5 if auto else 4)
        left = [str(p), "chosen" if auto else str(n), str(paper_s), str(paper_x)]
        if auto:
            left += [str(paper20_s), str(paper20_x), f"{(done or [{}])[0].get('budget', 0):.0f}"]
        lines.append("| " + " | ".join(left + cells + tail) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from guarded_out import write_out_json
    from machine import git_commit

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problems", default=",".join(map(str, PAPER_TABLE3)))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--iterations", type=int, default=10_000)
    p.add_argument("--burn-in", type=int, default=None, help="default: iterations / 2 (the paper's)")
    p.add_argument("--period", type=int, default=100)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--checkpoint-every", type=float, default=120.0)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pautomac_table3.json"))
    p.add_argument("--table", action="store_true", help="only print the table of --out")
    p.add_argument("--auto", type=float, default=None, metavar="F",
                   help="CGS-PFA --auto within F x the paper's CGS(10k) seconds per unit (F <= 0.1)")
    p.add_argument("--chains", type=int, default=2, help="--auto: chains of the winner (default 2)")
    args = p.parse_args(argv)
    problems = [int(v) for v in args.problems.split(",")]
    unknown = [k for k in problems if k not in PAPER_TABLE3]
    if unknown:
        sys.exit(f"not a Table 3 problem with a training file: {unknown}")
    seeds = [int(v) for v in args.seeds.split(",")]
    burn_in = args.iterations // 2 if args.burn_in is None else args.burn_in
    if args.auto is not None and not 0 < args.auto <= 0.1:
        sys.exit(f"--auto must be in (0, 0.1] (at most a tenth of the paper's CPU), got {args.auto}")
    if args.auto is not None:
        settings = {"auto_fraction": args.auto, "chains": args.chains, "max_draws": 1}
    else:
        settings = {"iterations": args.iterations, "burn_in": burn_in, "period": args.period,
                    "beta": args.beta, "chains": 1, "max_draws": 1}
    out = Path(args.out)
    if not args.table:
        from guarded_out import check_out

        check_out(out)  # before reading it: refuse a file bayesfa did not write
    done = json.loads(out.read_text()) if out.exists() else {"settings": settings, "rows": {}}
    if done["settings"] != settings:
        sys.exit(f"{out} holds results for other settings {done['settings']}; choose another --out")
    if not args.table:
        commit = git_commit()
        done["command"] = "python benchmarks/pautomac_table3.py " + " ".join(sys.argv[1:] if argv is None else argv)
        work = out.with_name(out.stem + "_work")
        todo = [(k, s) for k in problems for s in seeds if f"{k}/{s}" not in done["rows"]]
        unit_settings = {**settings, "checkpoint_every": args.checkpoint_every}
        with concurrent.futures.ProcessPoolExecutor(max_workers=args.workers) as pool:
            futures = {pool.submit(run_unit, k, s, args.data, unit_settings, str(work / f"{k}-seed{s}")): (k, s)
                       for k, s in todo}
            for f in concurrent.futures.as_completed(futures):
                row = f.result()
                row["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                row["commit"] = commit  # the code the unit ran (``+dirty``: uncommitted changes)
                done["rows"][f"{row['problem']}/{row['seed']}"] = row
                write_out_json(out, done)
                print(f"problem {row['problem']} seed {row['seed']}: {row['chain_seconds']:.0f} s, "
                      f"score - min {row['excess']:.4f}", flush=True)
    print(table(done["rows"], problems, seeds, auto=args.auto is not None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
