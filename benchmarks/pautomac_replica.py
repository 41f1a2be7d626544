"""One plain CGS-PFA chain against one replica-exchange chain, at equal CPU (issue 37, item 1).

    nice -n 19 python benchmarks/pautomac_replica.py [--problem 5] [--seeds 0,1,2]
        [--sweeps 10000] [--replicas 4] [--min-b 0.5] [--period 100] [--beta 0.05]
        [--data ../shared/data/pautomac] [--out benchmarks/results/pautomac_replica/results.json]

Two arms per seed, one chain each, on all training strings of PAutomaC ``--problem`` at Table
3's N (problem 5: N = 10) and ``--beta``, in the harness of ``benchmarks/pautomac_mixing.py``
(its :class:`_Unit`: data, Eq. 6 of the test strings over the draws of the chain's second
half, ``score - min``, the recorded chain's log joint of Eq. 4; BLAS on one thread), as
``benchmarks/pautomac_blocked.py`` does:

``plain``
    ``--sweeps`` collapsed Gibbs sweeps (Algorithm 1), draws from sweep 0, Eq. 6 over the
    second half: pautomac_mixing's ``single``.
``replica``
    the same seed (slot 0 starts from the plain chain's random start), ``cgs-pfa --replicas R
    --replica-min-b B``: every chain sweep is one tempered sweep of each of the R replicas and a
    swap round; the ladder adapts over the first half (burn-in), Eq. 6 over the b = 1 draws of
    the second half. It runs ``round(sweeps * s / x)`` chain sweeps, ``s`` the CPU of a plain
    sweep and ``x`` that of a chain sweep with its swap round, both measured in this process
    before the units (``calibration`` in the output): equal CPU by construction; each unit's
    CPU seconds are recorded to check it.

The output (``--out`` and its ``.md``) holds the commit and the command; reruns of the same
command skip finished units.
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


def calibrate(u: _Unit, replicas: int, min_b: float, sweeps: int = 30, blocked_every: int = 0) -> dict:
    """CPU seconds of one plain sweep and of one replica-exchange chain sweep (R tempered
    sweeps and a swap round; with ``blocked_every`` K, a blocked move of the b = 1 replica
    every K-th) on ``u``'s training strings, after a first call of each (so that compiling is
    not timed); ``x`` their ratio."""
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
    from bayesfa.samplers.pfa._replica_kernel import Replicas
    from bayesfa.samplers.pfa.cgs_pfa import new_counts

    tokens, n_symbols = u.train.tokens, u.train.alphabet_size + 1
    rng = np.random.default_rng(12345)
    positions = free_positions(tokens)
    zs = [random_path(tokens, u.n_states, rng) for _ in range(replicas + 1)]
    states = [(z, *new_counts(u.n_states, n_symbols)) for z in zs]
    for z, *counts in states:
        gibbs.fill_counts(tokens, z, *counts, u.beta)
    zp, *state = states.pop()  # the plain chain's
    rex = Replicas(tokens, positions, states, u.beta, rng, 0, 1, min_b, None, blocked_every)
    gibbs.sweeps(1, positions, tokens, zp, *state, rng, u.beta)
    rex.sweeps(max(1, blocked_every))
    t = time.process_time()
    gibbs.sweeps(sweeps, positions, tokens, zp, *state, rng, u.beta)
    sweep = (time.process_time() - t) / sweeps
    t = time.process_time()
    rex.sweeps(sweeps)
    chain_sweep = (time.process_time() - t) / sweeps
    return {"sweep_cpu_s": sweep, "chain_sweep_cpu_s": chain_sweep, "x": chain_sweep / sweep}


def run_arm(u: _Unit, sweeps: int, replicas: int, min_b: float, keep_trace: bool = False,
            blocked_every: int = 0) -> dict:
    """One chain of ``sweeps`` sweeps (chain sweeps of ``replicas`` replicas; 1: plain),
    scored; CPU seconds of the fit and its scoring. ``keep_trace``: the whole log joint trace
    too (``log_joint_trace``, one per draw: with replicas, the second half's only).
    ``blocked_every``: with replicas, ``--blocked-every`` (the b = 1 replica's blocked moves)."""
    from bayesfa.samplers.pfa import auto, cgs_pfa

    cpu, wall = time.process_time(), time.perf_counter()
    with auto.front_session(cgs_pfa):
        period, n_draws, first = chain_plan(sweeps, u.settings["period"])
        if replicas == 1:
            res = cgs_pfa.sample_cgs_pfa(u.train, u.n_states, u.beta, n_draws * period, 0, period, 1,
                                         u.seed, kernel=u.kernel, holdout=0.0)
            tests, _, recs = u.scored_chains(res, period, first)
        else:  # the first half is burn-in (the ladder adapts there): only the second half's draws
            res = cgs_pfa.sample_cgs_pfa(u.train, u.n_states, u.beta, n_draws * period, first * period,
                                         period, 1, u.seed, kernel=u.kernel, holdout=0.0,
                                         replicas=replicas, replica_min_b=min_b,
                                         blocked_every=blocked_every)
            tests, _, recs = u.scored_chains(res, period, 0)
            recs[0]["sweeps"] = n_draws * period
    out = {**recs[0], "replicas": replicas, **u.score(tests[0])}
    if not keep_trace:
        out.pop("log_joint_trace")
    out["log_joint_trace_every_10th"] = [float(v) for v in res.log_joint[0][::10]]
    if replicas > 1:
        out["replica_stats"] = res.info["replica_stats"][0]
    out["cpu_seconds"] = round(time.process_time() - cpu, 2)
    out["wall_seconds"] = round(time.perf_counter() - wall, 2)
    return out


def table(rows: dict, seeds: list[int]) -> str:
    head = ("| seed | arm | chain sweeps | replicas | cpu s | score - min | ratio - 1 | "
            "final log joint | mean log joint (Eq. 6 draws) | swap rates | ladder |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for seed in seeds:
        for arm in ("plain", "replica"):
            r = rows.get(f"{seed}/{arm}")
            if r is None:
                continue
            st = r.get("replica_stats")
            rates = "" if st is None else ", ".join(f"{x:.2f}" for x in st["swap_rate"])
            ladder = "" if st is None else ", ".join(f"{x:.3f}" for x in st["ladder"])
            lines.append(f"| {seed} | {arm} | {r['sweeps']} | {r['replicas']} | {r['cpu_seconds']:.1f} "
                         f"| {r['excess']:.4f} | {r['ratio_minus_1']:.5f} | {r['final_log_joint']:.1f} "
                         f"| {r['mean_log_joint']:.1f} | {rates} | {ladder} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", type=int, default=5)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--sweeps", type=int, default=10_000, help="the plain chain's sweeps")
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("--min-b", type=float, default=0.5)
    p.add_argument("--period", type=int, default=100)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pautomac_replica" / "results.json"))
    args = p.parse_args(argv)
    if args.sweeps < 2 or args.replicas < 2 or args.period < 1 or not args.beta > 0 or not 0 < args.min_b < 1:
        p.error("--sweeps >= 2, --replicas >= 2, --period >= 1, --beta > 0 and --min-b in (0, 1) are required")
    settings = {"problem": args.problem, "sweeps": args.sweeps, "replicas": args.replicas,
                "min_b": args.min_b, "period": args.period, "beta": args.beta}

    def arms(done):
        done["replica_sweeps"] = int(round(args.sweeps / done["calibration"]["x"]))
        return (("plain", args.sweeps, 1), ("replica", done["replica_sweeps"], args.replicas))

    def head(done, seeds):
        cal = done["calibration"]
        return (f"PAutomaC problem {args.problem}, N = {done['rows'][f'{seeds[0]}/plain']['states']}, "
                f"beta = {args.beta}; calibration: a plain sweep {cal['sweep_cpu_s'] * 1e3:.2f} ms CPU, a "
                f"chain sweep of {args.replicas} replicas with its swap round {cal['chain_sweep_cpu_s'] * 1e3:.2f} ms "
                f"(x = {cal['x']:.2f} sweeps), so the replica arm runs {done['replica_sweeps']} chain sweeps "
                f"(ladder from 1 to {args.min_b}, adapted over the first half). Shared, loaded 2-core "
                f"machine, run under nice.")

    return paired_arms(p, args, argv, "pautomac_replica.py", settings,
                       lambda u: calibrate(u, args.replicas, args.min_b), arms,
                       lambda u, sweeps, replicas: run_arm(u, sweeps, replicas, args.min_b), table, head)


if __name__ == "__main__":
    sys.exit(main())
