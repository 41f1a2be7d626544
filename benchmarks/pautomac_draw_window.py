"""Which of a final chain's draws to average: all after a tenth of burn-in, or only the later
ones (issue 37, problem 1's spread over seeds).

    nice -n 10 python benchmarks/pautomac_draw_window.py --problem 1 --states 76 --beta 0.02
        [--seeds 1,2,3,4,5] [--warm 1400] [--sweeps 3300] [--draws 100] [--blocked-every 10]
        [--data ../shared/data/pautomac] --out benchmarks/results/draw_window/p1.json

``--auto``'s final chains (:func:`bayesfa.samplers.pfa.auto.final_plan`) burn in about a tenth
of their sweeps and average Eq. 6 over draws spread evenly over the rest. On problem 1 their
log joint (Eq. 4) still climbs by thousands of nats through the draws, so the early draws may
weigh down the average. This measures, on one seed's chains, the predictive of the draws kept
after dropping the first fraction ``f`` of them (``f`` in 0, 0.1, ..., 0.9), and the fraction
MSER (the marginal standard error rule, White 1997: the truncation minimising the standard
error of the mean of what is left) picks on each chain's log-joint trace.

Per seed: the training strings split as ``--auto`` splits them (``cgs_pfa.holdout_split``,
1,000 held-out *training* strings, ``auto.HOLDOUT``); ``--chains`` chains of ``bayesfa fit
--method cgs-pfa`` on the kept strings at ``--states`` and ``--beta`` with ``--blocked-every``,
``--warm + --sweeps`` sweeps, the first ``--warm`` standing in for the ladder's sweeps that
``--auto``'s final chains start from, then ``--draws`` draws evenly over the last ``0.9
--sweeps`` (``--auto``'s plan). Each draw's plug-in predictive (Eq. 6's term) of the held-out
strings and of the problem's test strings. The decision reads the held-out *training*
strings only (their total log-likelihood per window); the test score of each window (ratio
of Eq. 19's score to the solution's) is reported beside it and chooses nothing.
The output (``--out`` and its ``.md``) holds the commit and the command.
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

FRACTIONS = [round(0.1 * k, 1) for k in range(10)]


def mser(trace: np.ndarray) -> int:
    """MSER's truncation point of ``trace`` (White 1997): the ``d`` minimising
    ``var(trace[d:]) / (n - d)`` over ``d`` up to half the trace (the rule's usual bound)."""
    n = trace.size
    best, arg = np.inf, 0
    for d in range(n // 2 + 1):
        rest = trace[d:]
        value = rest.var() / rest.size
        if value < best:
            best, arg = value, d
    return arg


def window_log_mean(per_draw: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Eq. 6 over draws ``first[c]:`` of each chain ``c``: ``per_draw`` [chain, draw, string]
    of log probabilities -> [string], every kept draw weighing the same."""
    from bayesfa.forward import log_mean_exp

    kept = np.concatenate([per_draw[c, first[c]:] for c in range(per_draw.shape[0])])
    return log_mean_exp(kept, axis=0)


def run_seed(args, seed: int) -> dict:
    import bayesfa
    from bayesfa.pautomac import read_sample, read_solution
    from bayesfa.samplers.pfa import auto, cgs_pfa
    from bayesfa.scoring import score_all_log

    data = Path(args.data)
    train = read_sample(data / f"{args.problem}.pautomac.train")
    test = read_sample(data / f"{args.problem}.pautomac.test").with_alphabet(train.alphabet_size)
    solution = read_solution(data / f"{args.problem}.pautomac_solution.txt", log=True)
    kept_idx, held_idx = cgs_pfa.holdout_split(train.n_strings, auto.HOLDOUT,
                                               np.random.SeedSequence(seed))
    kept, held = train.subset(kept_idx), train.subset(held_idx)
    n_draws = args.draws
    period = max(1, (args.sweeps - args.sweeps // 10) // n_draws)
    burn = args.warm + args.sweeps - n_draws * period
    t0 = time.process_time()
    run = bayesfa.fit(kept, "cgs-pfa", seed=seed, states=args.states, beta=args.beta,
                      iterations=burn + n_draws * period, burn_in=burn, period=period,
                      chains=args.chains, blocked_every=args.blocked_every)
    fit_cpu = time.process_time() - t0
    counts = run.arrays["counts"]  # [chain, draw, N+1, A, N+1]
    log_joint = np.asarray(run._trace_arrays()["log_joint"])  # [chain, draw]
    flat = counts.reshape((-1,) + counts.shape[-3:])
    shape = counts.shape[:2]
    held_lp = cgs_pfa.plugin_log_prob(flat, args.beta, held).reshape(shape + (-1,))
    test_lp = cgs_pfa.plugin_log_prob(flat, args.beta, test).reshape(shape + (-1,))
    rows = []
    for f in FRACTIONS:
        first = np.full(shape[0], int(round(f * shape[1])))
        rows.append({"drop": f, "heldout_loglik": float(window_log_mean(held_lp, first).sum()),
                     "test_ratio_minus_1": float(score_all_log(window_log_mean(test_lp, first),
                                                               solution).ratio - 1)})
    cut = np.array([mser(log_joint[c]) for c in range(shape[0])])
    per_chain = [{"heldout_loglik": float(window_log_mean(held_lp[c:c + 1], np.zeros(1, int)).sum()),
                  "test_ratio_minus_1": float(score_all_log(window_log_mean(test_lp[c:c + 1],
                                                                            np.zeros(1, int)),
                                                            solution).ratio - 1)}
                 for c in range(shape[0])]
    return {"seed": seed, "fit_cpu_seconds": fit_cpu, "burn_in": burn, "period": period,
            "n_draws": n_draws, "windows": rows,
            "mser_first_draw": cut.tolist(),
            "mser": {"heldout_loglik": float(window_log_mean(held_lp, cut).sum()),
                     "test_ratio_minus_1": float(score_all_log(window_log_mean(test_lp, cut),
                                                               solution).ratio - 1)},
            "per_chain_all_draws": per_chain,
            "log_joint": log_joint.tolist()}


def table(result: dict) -> str:
    lines = [f"Command: `{result['command']}` at {result['commit']}", "",
             "Held-out *training* strings' total log-likelihood (decides) and the test ratio - 1 "
             "(reported, chooses nothing) of Eq. 6 over the draws kept after dropping the first "
             "fraction of each chain's draws, and over MSER's cut of each chain's log joint.", "",
             "| seed | " + " | ".join(f"drop {f}" for f in FRACTIONS) + " | MSER |",
             "|---:|" + "---:|" * (len(FRACTIONS) + 1)]
    for s in result["seeds"]:
        base = s["windows"][0]["heldout_loglik"]
        cells = [f"{w['heldout_loglik'] - base:+.1f} / {w['test_ratio_minus_1']:.5f}"
                 for w in s["windows"]]
        cells.append(f"{s['mser']['heldout_loglik'] - base:+.1f} / "
                     f"{s['mser']['test_ratio_minus_1']:.5f} (cut {s['mser_first_draw']})")
        lines.append(f"| {s['seed']} | " + " | ".join(cells) + " |")
    lines += ["", "Each cell: held-out log-likelihood gain over keeping every draw (nats) / test "
              "ratio - 1. Per chain, all draws (held-out, test ratio - 1):", ""]
    for s in result["seeds"]:
        lines.append(f"- seed {s['seed']}: " + "; ".join(
            f"{c['heldout_loglik']:.1f}, {c['test_ratio_minus_1']:.5f}" for c in s["per_chain_all_draws"])
            + f" (fit {s['fit_cpu_seconds']:.0f} CPU s)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, default=1)
    p.add_argument("--states", type=int, default=76)
    p.add_argument("--beta", type=float, default=0.02)
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--warm", type=int, default=1400)
    p.add_argument("--sweeps", type=int, default=3300)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--blocked-every", type=int, default=10)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", required=True)
    return run_script_seeds(__file__, p.parse_args(argv), argv, run_seed, table)


if __name__ == "__main__":
    sys.exit(main())
