"""CGS-PFA with beta sampled against beta fixed, at equal sweeps from one random path (issue 37,
problem 1's spread: is the held-out choice of beta the lever?).

    nice -n 10 python benchmarks/pautomac_beta_sampled.py --problem 1 --states 76
        [--arms 0.05,0.02,0.01,sampled] [--start-beta 0.05] [--seeds 1,2,3] [--sweeps 4000]
        [--draws 50] [--data ../shared/data/pautomac] --out benchmarks/results/beta_sampled/p1.json

``--auto`` chooses beta on held-out training strings with short chains, one chain per
candidate (``auto.run_betas``). An alternative is to put a prior on beta and sample it with
the path: Eq. 4 of Shibata & Yoshinaka (2013) gives ``Pr(alpha, z | beta)`` in closed form
(``_cgs_pfa_kernel.log_joint``, with ``R(beta)`` of Eq. 2), so a Metropolis-Hastings step on
``log beta`` (a Gaussian random walk of scale 0.1, three proposals after every sweep, a
uniform prior on ``log beta`` over [1e-3, 1], so the walk's acceptance is the ratio of Eq. 4
alone) leaves the joint posterior of ``(z, beta)`` invariant. The counts' cached
denominators are rebuilt at the new beta (``fill_counts``).

Per seed, on the kept strings of ``cgs_pfa.holdout_split`` (the 5 % ``--auto`` holds out are
the held-out *training* strings), every arm runs one chain of ``--sweeps`` Gibbs sweeps (Eq. 9)
from the same uniformly random path at N = ``--states``: a fixed beta, or ``sampled`` (beta
starting at ``--start-beta``). ``--draws`` draws over the second half; Eq. 6 over them (each
draw's plug-in at its own beta). The held-out strings' total log-likelihood is the figure that
would decide; the test ratio - 1 (Eq. 19 over the solution's) is reported and chooses nothing.
The output (``--out`` and its ``.md``) holds the commit and the command; a rerun skips finished
seeds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import run_script_seeds  # noqa: E402  (this folder's module)

LOG_BETA_MIN, LOG_BETA_MAX = np.log(1e-3), np.log(1.0)
STEP, PROPOSALS = 0.1, 3


def beta_step(counts, beta: float, rng: np.random.Generator) -> tuple[float, int]:
    """``PROPOSALS`` random-walk MH steps on ``log beta`` given the counts (Eq. 4; uniform prior
    on ``log beta`` over its range): ``(beta, accepted)``."""
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as k

    current, accepted = k.log_joint(counts, beta), 0
    for _ in range(PROPOSALS):
        lb = np.log(beta) + STEP * rng.standard_normal()
        u = rng.random()
        if LOG_BETA_MIN <= lb <= LOG_BETA_MAX:
            new = k.log_joint(counts, float(np.exp(lb)))
            if np.log(u) < new - current:
                beta, current, accepted = float(np.exp(lb)), new, accepted + 1
    return beta, accepted


def run_seed(args, seed: int) -> dict:
    from bayesfa.forward import log_mean_exp
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as k
    from bayesfa.samplers.pfa import auto, cgs_pfa
    from bayesfa.scoring import score_all_log

    data, n = Path(args.data), args.states
    full = read_sample(data / f"{args.problem}.pautomac.train")
    test = read_sample(data / f"{args.problem}.pautomac.test")
    solution = read_solution(data / f"{args.problem}.pautomac_solution.txt", log=True)
    kept_idx, held_idx = cgs_pfa.holdout_split(full.n_strings, auto.HOLDOUT, np.random.SeedSequence(seed))
    kept, held = full.subset(kept_idx), full.subset(held_idx)
    positions = free_positions(kept.tokens)
    z0 = random_path(kept.tokens, n, np.random.default_rng(seed))
    half = args.sweeps // 2
    period = max(1, (args.sweeps - half) // args.draws)
    arms = {}
    for a, arm in enumerate(args.arms.split(",")):
        sampled = arm == "sampled"
        beta = args.start_beta if sampled else float(arm)
        rng = np.random.default_rng([seed, a])
        z = z0.copy()
        state = cgs_pfa.new_counts(n, kept.alphabet_size + 1, cgs_pfa.count_dtype(kept.n_tokens))
        k.fill_counts(kept.tokens, z, *state, beta)
        held_lp, test_lp, betas, accepted = [], [], [], 0
        t0 = time.process_time()
        for s in range(args.sweeps):
            k.sweeps(1, positions, kept.tokens, z, *state, rng, beta)
            if sampled:
                beta, acc = beta_step(state[0], beta, rng)
                accepted += acc
                k.fill_counts(kept.tokens, z, *state, beta)
            if s >= half and (s - half) % period == 0:
                counts = state[0][None, :, :, :n + 1].copy()
                held_lp.append(cgs_pfa.plugin_log_prob(counts, beta, held)[0])
                test_lp.append(cgs_pfa.plugin_log_prob(counts, beta, test)[0])
                betas.append(beta)
        arms[arm] = {"heldout_loglik": float(log_mean_exp(np.array(held_lp), axis=0).sum()),
                     "test_ratio_minus_1": float(score_all_log(log_mean_exp(np.array(test_lp), axis=0),
                                                               solution).ratio - 1),
                     "log_joint_last": float(k.log_joint(state[0], beta)),
                     "beta_mean": float(np.mean(betas)), "beta_last": float(beta),
                     "accept_rate": accepted / (PROPOSALS * args.sweeps) if sampled else None,
                     "cpu_seconds": time.process_time() - t0, "draws": len(betas)}
    return {"seed": seed, "arms": arms}


def table(result: dict) -> str:
    arms = list(result["seeds"][0]["arms"]) if result["seeds"] else []
    lines = [f"Command: `{result['command']}` at {result['commit']}", "",
             "One chain per arm from the same random path; Eq. 6 over the second half's draws: "
             "held-out *training* strings' total log-likelihood (would decide) and test ratio - 1 "
             "(reported, chooses nothing); beta: the mean over the draws.", "",
             "| seed | arm | held-out | test ratio - 1 | beta | log joint, last | CPU s |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for s in result["seeds"]:
        for arm in arms:
            r = s["arms"][arm]
            lines.append(f"| {s['seed']} | {arm} | {r['heldout_loglik']:.1f} | {r['test_ratio_minus_1']:.5f} | "
                         f"{r['beta_mean']:.4f} | {r['log_joint_last']:.0f} | {r['cpu_seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, default=1)
    p.add_argument("--states", type=int, default=76)
    p.add_argument("--arms", default="0.05,0.02,0.01,sampled")
    p.add_argument("--start-beta", type=float, default=0.05)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--sweeps", type=int, default=4000)
    p.add_argument("--draws", type=int, default=50)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", required=True)
    return run_script_seeds(__file__, p.parse_args(argv), argv, run_seed, table)


if __name__ == "__main__":
    sys.exit(main())
