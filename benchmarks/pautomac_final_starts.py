"""Where ``--auto``'s final chains start: both from phase 2's winning path, or each from its own
path of phase 2 (issue 37, problem 1's spread over seeds).

    nice -n 10 python benchmarks/pautomac_final_starts.py --problem 1 --states 76
        [--betas 0.02,0.05] [--seeds 1,2,3,4,5] [--ancestor 1400] [--branch 1770]
        [--sweeps 3300] [--draws 100] [--blocked-every 10] [--lineage-blocked-every 0]
        [--data ../shared/data/pautomac] --out benchmarks/results/final_starts/p1.json

``--auto``'s two final chains (:func:`bayesfa.samplers.pfa.auto.run_final`) both start from
the path of phase 2's winning beta, so they begin on one plateau. Two chains on two plateaus
average to a better predictive than either alone (``benchmarks/results/draw_window/``: on
problem 1, the two chains' Eq. 6 beat each chain's own on held-out strings). Phase 2 already
ends with ``BETA_KEEP`` paths at the winning N (one per beta of its second round), so the second
chain could start from the runner-up's path at no extra CPU.

This emulates the phases on one seed's kept strings (the split of ``cgs_pfa.holdout_split``,
1,000 held-out *training* strings): an ancestor chain of ``--ancestor`` sweeps at the first
beta from a random path (standing in for the ladder), a branch of ``--branch`` sweeps from it
at each of ``--betas`` (phase 2), then final chains of ``--sweeps`` sweeps at the first beta
with blocked moves after every ``--blocked-every`` sweeps and ``--draws`` draws over the last
nine tenths (``auto.final_plan``): ``A0`` and ``A1`` from the first branch's path (what
``--auto`` runs: arm *shared*), ``B1`` from the second branch's path with ``A1``'s seed (arm
*distinct* is ``A0`` and ``B1``). Equal CPU by construction. ``--lineage-blocked-every K``
runs the ancestor and the branches with a blocked move after every K sweeps too (``--auto``'s
phases 1-2 run none). Each arm's Eq. 6 over both
chains' draws: the held-out *training* strings' total log-likelihood decides; the test ratio
- 1 (Eq. 19's score over the solution's) is reported and chooses nothing. The output (``--out``
and its ``.md``) holds the commit and the command; a rerun skips finished seeds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # BLAS on one thread, as --auto runs
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import run_script_seeds  # noqa: E402  (this folder's module)


def log_mean(*per_draw: np.ndarray) -> np.ndarray:
    """Eq. 6 over every draw of the given chains (each [draw, string] of log probabilities)."""
    from bayesfa.forward import log_mean_exp

    return log_mean_exp(np.concatenate(per_draw), axis=0)


def run_seed(args, seed: int) -> dict:
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.samplers.pfa import auto, cgs_pfa
    from bayesfa.scoring import score_all_log

    data = Path(args.data)
    train = read_sample(data / f"{args.problem}.pautomac.train")
    test = read_sample(data / f"{args.problem}.pautomac.test").with_alphabet(train.alphabet_size)
    solution = read_solution(data / f"{args.problem}.pautomac_solution.txt", log=True)
    root = np.random.SeedSequence(seed)
    kept_idx, held_idx = cgs_pfa.holdout_split(train.n_strings, auto.HOLDOUT, root)
    kept, held = train.subset(kept_idx), train.subset(held_idx)
    ss = root.spawn(5)
    betas = [float(b) for b in args.betas.split(",")]
    n = args.states
    t0 = time.process_time()

    def lineage(beta, sweeps, seed_seq, z0):  # auto._chain, with blocked moves when asked
        burn, period, n_draws = auto.draw_plan(sweeps, 1)
        return cgs_pfa._run_chain(kept.tokens, kept.alphabet_size + 1, n, beta, burn, period,
                                  n_draws, seed_seq, init_z=None if z0 is None else z0.copy(),
                                  blocked_every=args.lineage_blocked_every)[5]

    z_anc = lineage(betas[0], args.ancestor, ss[0], None)
    branch_ss = ss[1].spawn(len(betas))
    z_branch = [lineage(b, args.branch, branch_ss[i], z_anc) for i, b in enumerate(betas)]
    burn, period, n_draws = auto.draw_plan(args.sweeps, args.draws)
    burn = args.sweeps - n_draws * period  # every sweep run, as final_plan does

    def final(z0, seed_seq):
        out = cgs_pfa._run_chain(kept.tokens, kept.alphabet_size + 1, n, betas[0], burn, period,
                                 n_draws, seed_seq, init_z=z0.copy(),
                                 blocked_every=args.blocked_every)
        counts, log_joint = out[0], out[1]
        return (cgs_pfa.plugin_log_prob(counts, betas[0], held),
                cgs_pfa.plugin_log_prob(counts, betas[0], test), np.asarray(log_joint))

    a0 = final(z_branch[0], ss[2])
    a1 = final(z_branch[0], ss[3])
    b1 = final(z_branch[1], ss[3])
    cpu = time.process_time() - t0

    def arm(x, y):
        return {"heldout_loglik": float(log_mean(x[0], y[0]).sum()),
                "test_ratio_minus_1": float(score_all_log(log_mean(x[1], y[1]), solution).ratio - 1)}

    def one(x):
        return {"heldout_loglik": float(log_mean(x[0]).sum()),
                "test_ratio_minus_1": float(score_all_log(log_mean(x[1]), solution).ratio - 1),
                "log_joint_last": float(x[2][-1])}

    return {"seed": seed, "cpu_seconds": cpu, "burn_in": burn, "period": period,
            "n_draws": n_draws, "shared": arm(a0, a1), "distinct": arm(a0, b1),
            "chains": {"A0": one(a0), "A1": one(a1), "B1": one(b1)}}


def table(result: dict) -> str:
    lines = [f"Command: `{result['command']}` at {result['commit']}", "",
             "Eq. 6 over both final chains' draws: held-out *training* strings' total "
             "log-likelihood (decides) and test ratio - 1 (reported, chooses nothing).", "",
             "| seed | shared: held-out | distinct: held-out | distinct - shared | shared: test | "
             "distinct: test | A0, A1, B1 alone: test | CPU s |",
             "|---:|---:|---:|---:|---:|---:|---|---:|"]
    for s in result["seeds"]:
        sh, di, ch = s["shared"], s["distinct"], s["chains"]
        lines.append(f"| {s['seed']} | {sh['heldout_loglik']:.1f} | {di['heldout_loglik']:.1f} | "
                     f"{di['heldout_loglik'] - sh['heldout_loglik']:+.1f} | "
                     f"{sh['test_ratio_minus_1']:.5f} | {di['test_ratio_minus_1']:.5f} | "
                     + ", ".join(f"{ch[k]['test_ratio_minus_1']:.5f}" for k in ("A0", "A1", "B1"))
                     + f" | {s['cpu_seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, default=1)
    p.add_argument("--states", type=int, default=76)
    p.add_argument("--betas", default="0.02,0.05")
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--ancestor", type=int, default=1400)
    p.add_argument("--branch", type=int, default=1770)
    p.add_argument("--sweeps", type=int, default=3300)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--blocked-every", type=int, default=10)
    p.add_argument("--lineage-blocked-every", type=int, default=0,
                   help="blocked moves in the ancestor and branch chains too (0: none, as "
                        "--auto's phases 1-2 run)")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", required=True)

    def one(args, seed):
        from bayesfa.samplers.pfa import auto, cgs_pfa

        with auto.front_session(cgs_pfa):
            return run_seed(args, seed)

    return run_script_seeds(__file__, p.parse_args(argv), argv, one, table)


if __name__ == "__main__":
    sys.exit(main())
