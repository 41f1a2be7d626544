"""Plain CGS-PFA chains against chains with blocked whole-string moves, at equal CPU (issue 37, item 2).

    nice -n 19 python benchmarks/pautomac_blocked.py [--problem 5] [--seeds 0,1,2]
        [--sweeps 20000] [--blocked-every 10] [--period 100] [--beta 0.05]
        [--data ../shared/data/pautomac] [--out benchmarks/results/pautomac_blocked/results.json]

Two arms per seed, one chain each, on all training strings of PAutomaC ``--problem`` at Table
3's N (problem 5: N = 10) and ``--beta``, in the harness of ``benchmarks/pautomac_mixing.py``
(its :class:`_Unit`: data, Eq. 6 of the test strings over the draws of the chain's second
half, ``score - min``, each chain's log joint of Eq. 4; the context ``--auto`` runs in, BLAS on
one thread):

``plain``
    ``--sweeps`` collapsed Gibbs sweeps (Algorithm 1): pautomac_mixing's ``single``.
``blocked``
    the same seed (same random start), ``cgs-pfa --blocked-every K``: one blocked move
    (:mod:`bayesfa.samplers.pfa._ffbs_kernel`: theta from its Dirichlet posterior, every
    string's path by forward filtering-backward sampling) after every K sweeps, for
    ``round(sweeps / (1 + r / K))`` sweeps, ``r`` the CPU of one blocked move in sweeps,
    measured in this process before the units (``calibration`` in the output): equal CPU by
    construction; each unit's CPU seconds are recorded to check it.

Both record a draw every ``--period`` sweeps from sweep 0 and Eq. 6 is over the second half
(:func:`pautomac_mixing.chain_plan`). The output (``--out`` and its ``.md``) holds the commit
and the command; reruns of the same command skip finished units.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pautomac_mixing import _Unit, chain_plan, paired_arms  # noqa: E402  (this folder's script)

ROOT = Path(__file__).resolve().parents[1]


def calibrate(u: _Unit, sweeps: int = 40, moves: int = 15) -> dict:
    """CPU seconds of one collapsed sweep and of one blocked move on ``u``'s training strings
    (after a first call of each and of both arms' drivers, so that compiling is timed neither
    here nor in the arms); ``r`` their ratio."""
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
    from bayesfa.samplers.pfa import _ffbs_kernel as ffbs
    from bayesfa.samplers.pfa.cgs_pfa import new_counts

    tokens, n_symbols = u.train.tokens, u.train.alphabet_size + 1
    rng = np.random.default_rng(12345)
    positions = free_positions(tokens)
    z = random_path(tokens, u.n_states, rng)
    state = new_counts(u.n_states, n_symbols)
    gibbs.fill_counts(tokens, z, *state, u.beta)
    scratch = ffbs.scratch(tokens, u.n_states, n_symbols)
    gibbs.sweeps(1, positions, tokens, z, *state, rng, u.beta)
    ffbs.blocked_move(tokens, z, *state, rng, u.beta, *scratch)
    # both arms' drivers (compiled per process) too, so that neither arm's CPU bills a compile
    n = u.n_states + 1
    outs = (np.zeros((1, n, n_symbols, n), dtype=np.int32), np.zeros(1), np.zeros(1, dtype=np.int32),
            np.zeros(1, dtype=np.int32), np.zeros((1, gibbs.STATS), dtype=np.int64))
    gibbs.sample_draws(1, positions, tokens, z, *state, rng, u.beta, *outs)
    ffbs.sample_draws(1, 0, 1, positions, tokens, z, *state, rng, u.beta, *scratch, *outs)
    t = time.process_time()
    gibbs.sweeps(sweeps, positions, tokens, z, *state, rng, u.beta)
    sweep = (time.process_time() - t) / sweeps
    t = time.process_time()
    for _ in range(moves):
        ffbs.blocked_move(tokens, z, *state, rng, u.beta, *scratch)
    move = (time.process_time() - t) / moves
    return {"sweep_cpu_s": sweep, "move_cpu_s": move, "r": move / sweep}


def run_arm(u: _Unit, sweeps: int, blocked_every: int, keep_trace: bool = False, **moves) -> dict:
    """One chain of ``sweeps`` sweeps (with a blocked move after every ``blocked_every``-th,
    0: none), scored; CPU seconds of the fit and its scoring. ``moves``: other options of
    :func:`~bayesfa.samplers.pfa.cgs_pfa.sample_cgs_pfa` (e.g. ``split_merge``), recorded in the
    output with the mean of each acceptance rate the sampler reports (``accept_*``).
    ``keep_trace``: the whole log joint trace too (``log_joint_trace``, one per draw)."""
    from bayesfa.samplers.pfa import auto, cgs_pfa

    cpu, wall = time.process_time(), time.perf_counter()
    with auto.front_session(cgs_pfa):
        period, n_draws, first = chain_plan(sweeps, u.settings["period"])
        res = cgs_pfa.sample_cgs_pfa(u.train, u.n_states, u.beta, n_draws * period, 0, period, 1,
                                     u.seed, kernel=u.kernel, holdout=0.0, blocked_every=blocked_every,
                                     **moves)
        tests, _, recs = u.scored_chains(res, period, first)
    out = {**recs[0], "blocked_every": blocked_every, **moves, **u.score(tests[0])}
    if moves:
        out["accept_rates"] = {k: (float(np.nanmean(v[0])) if np.isfinite(v[0]).any() else None)
                               for k, v in (res.sample_stats or {}).items() if k.startswith("accept_")}
    if not keep_trace:
        out.pop("log_joint_trace")
    out["log_joint_trace_every_10th"] = [float(v) for v in res.log_joint[0][::10]]
    out["cpu_seconds"] = round(time.process_time() - cpu, 2)
    out["wall_seconds"] = round(time.perf_counter() - wall, 2)
    return out


def table(rows: dict, seeds: list[int]) -> str:
    head = ("| seed | arm | sweeps | blocked moves | cpu s | score - min | ratio - 1 | "
            "final log joint | mean log joint (Eq. 6 draws) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for seed in seeds:
        for arm in ("plain", "blocked"):
            r = rows.get(f"{seed}/{arm}")
            if r is None:
                continue
            moves = r["sweeps"] // r["blocked_every"] if r["blocked_every"] else 0
            lines.append(f"| {seed} | {arm} | {r['sweeps']} | {moves} | {r['cpu_seconds']:.1f} "
                         f"| {r['excess']:.4f} | {r['ratio_minus_1']:.5f} | {r['final_log_joint']:.1f} "
                         f"| {r['mean_log_joint']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", type=int, default=5)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--sweeps", type=int, default=20_000, help="the plain chain's sweeps")
    p.add_argument("--blocked-every", type=int, default=10)
    p.add_argument("--period", type=int, default=100)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pautomac_blocked" / "results.json"))
    args = p.parse_args(argv)
    if args.sweeps < 2 or args.blocked_every < 1 or args.period < 1 or not args.beta > 0:
        p.error("--sweeps >= 2, --blocked-every >= 1, --period >= 1 and --beta > 0 are required")
    settings = {"problem": args.problem, "sweeps": args.sweeps, "blocked_every": args.blocked_every,
                "period": args.period, "beta": args.beta}

    def arms(done):
        done["blocked_sweeps"] = int(round(args.sweeps / (1.0 + done["calibration"]["r"] / args.blocked_every)))
        return (("plain", args.sweeps, 0), ("blocked", done["blocked_sweeps"], args.blocked_every))

    def head(done, seeds):
        cal = done["calibration"]
        return (f"PAutomaC problem {args.problem}, N = {done['rows'][f'{seeds[0]}/plain']['states']}, "
                f"beta = {args.beta}; calibration: a sweep {cal['sweep_cpu_s'] * 1e3:.2f} ms CPU, a blocked "
                f"move {cal['move_cpu_s'] * 1e3:.2f} ms (r = {cal['r']:.2f} sweeps), so the blocked arm runs "
                f"{done['blocked_sweeps']} sweeps with a move after every {args.blocked_every}.")

    return paired_arms(p, args, argv, "pautomac_blocked.py", settings, calibrate, arms,
                       lambda u, sweeps, every: run_arm(u, sweeps, every), table, head)


if __name__ == "__main__":
    sys.exit(main())
