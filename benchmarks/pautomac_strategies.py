"""Final-chain strategies for CGS-PFA at equal CPU, five arms on one problem (issue 37, item 3).

    nice -n 10 python benchmarks/pautomac_strategies.py --problem 5 [--states 10] [--beta 0.05]
        [--seeds 0,1,2,3,4] [--sweeps 20000]
        [--arms plain,replica,blocked,blocked+replica,split-merge]
        [--blocked-every 10] [--replicas 4] [--min-b 0.95] [--split-merge 0.1]
        [--split-merge-scans 3] [--period 100]
        [--data ../shared/data/pautomac] [--out benchmarks/results/pautomac_strategies/p5.json]

One chain per arm and seed on all training strings of PAutomaC ``--problem`` at ``--states``
(default: Table 3's N) and ``--beta``, in the harness of ``benchmarks/pautomac_mixing.py``
(:class:`pautomac_mixing._Unit`: data, Eq. 6 of the test strings over the draws of the chain's
second half, ``score - min``, the chain's log joint of Eq. 4; BLAS on one thread, as ``--auto``
runs), each arm run by the code of the script that measured it alone:

``plain``
    ``--sweeps`` collapsed Gibbs sweeps (Algorithm 1; ``pautomac_blocked.run_arm`` with no move).
``blocked``
    ``cgs-pfa --blocked-every K``: a blocked whole-string move (theta from its Dirichlet
    posterior, every path by forward filtering-backward sampling) after every K-th sweep, for
    ``round(sweeps / (1 + r / K))`` sweeps, ``r`` the CPU of one move in sweeps
    (``pautomac_blocked.calibrate``, ``pautomac_blocked.run_arm``).
``replica``
    ``cgs-pfa --replicas R --replica-min-b B``: each chain sweep is a tempered sweep of every
    replica and a swap round; the ladder adapts over the first half (burn-in) and Eq. 6 is over
    the b = 1 draws of the second half; ``round(sweeps / x)`` chain sweeps, ``x`` the CPU of a
    chain sweep in plain sweeps (``pautomac_replica.calibrate``, ``pautomac_replica.run_arm``).
    The default ``--min-b 0.95``, not the sampler's 0.5: at N = 10 on problem 5 no swap was
    accepted with the ladder down to 0.5 (``benchmarks/results/pautomac_replica/README.md``).
``blocked+replica``
    ``--replicas R --replica-min-b B --blocked-every K``: the replica arm with a blocked move of
    the b = 1 replica after every K-th chain sweep (from ``a7c3d8a``; before it the sampler
    refused the combination, and the cells run then record that refusal and no score: a rerun
    at a commit whose sampler accepts it runs them). Calibrated as the replica arm, the moves
    included.
``split-merge``
    ``cgs-pfa --split-merge RATE --split-merge-scans S`` (Jain & Neal moves, RATE per sweep),
    ``round(sweeps / y)`` sweeps, ``y`` the CPU of a sweep with its moves in plain sweeps
    (:func:`calibrate_split_merge`; ``pautomac_blocked.run_arm`` with ``split_merge``).

Equal CPU by construction: the three ratios are measured in this process, on the first seed's
unit from a random path, before the units, and saved in the output (``calibration``), so that a
rerun gives every arm the same sweeps. Each cell's CPU seconds (fit and scoring) are recorded
to check it. Every arm records a draw every ``--period`` sweeps (:func:`pautomac_mixing.chain_plan`).

Per cell: score - min and ratio - 1; the log joint (Eq. 4) at the end and its plateau: the mean,
least, greatest and rise (last minus first) of the draws in the chain's last quarter of sweeps
(:func:`plateau`); CPU and wall seconds; the whole log joint trace; swap rates and ladder
(replica) or the split-merge acceptance rate. Per arm over the seeds: median, worst and best
score - min, worst / best, median CPU.

The output ``--out`` (JSON) and its ``.md`` hold the commit and the exact command; every finished
cell is written at once (atomically, ``guarded_out``), and a rerun of the same command skips
finished cells (``--out`` of other settings is refused). Only ``--arms`` and ``--seeds`` may
change between runs into one file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pautomac_blocked as blocked  # noqa: E402  (this folder's scripts)
import pautomac_replica as replica  # noqa: E402
from pautomac_mixing import _Unit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("plain", "replica", "blocked", "blocked+replica", "split-merge")


# -- calibration and sweeps per arm --------------------------------------------------------------

def calibrate_split_merge(u: _Unit, rate: float, scans: int, sweeps: int = 100) -> dict:
    """CPU seconds of one plain sweep and of one sweep with its ``rate`` split-merge moves (of
    ``scans`` launch scans) on ``u``'s training strings from a random path, after a first call of
    each (compiling not timed); ``y`` their ratio."""
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
    from bayesfa.samplers.pfa import _split_merge_kernel as sm
    from bayesfa.samplers.pfa.cgs_pfa import new_counts

    tokens, n_symbols = u.train.tokens, u.train.alphabet_size + 1
    rng = np.random.default_rng(12345)
    positions = free_positions(tokens)
    runs = []
    for _ in range(2):
        z = random_path(tokens, u.n_states, rng)
        state = new_counts(u.n_states, n_symbols)
        gibbs.fill_counts(tokens, z, *state, u.beta)
        runs.append((z, state))
    sm_args = (float(rate), int(scans), np.zeros(positions.size, dtype=np.int64),
               np.zeros(positions.size, dtype=np.int32), np.zeros(sm.STATS))
    (zp, sp), (zs, ss) = runs
    gibbs.sweeps(1, positions, tokens, zp, *sp, rng, u.beta)
    sm.sweeps(1, positions, tokens, zs, *ss, rng, u.beta, *sm_args)
    t = time.process_time()
    gibbs.sweeps(sweeps, positions, tokens, zp, *sp, rng, u.beta)
    sweep = (time.process_time() - t) / sweeps
    t = time.process_time()
    sm.sweeps(sweeps, positions, tokens, zs, *ss, rng, u.beta, *sm_args)
    sm_sweep = (time.process_time() - t) / sweeps
    return {"sweep_cpu_s": sweep, "sm_sweep_cpu_s": sm_sweep, "y": sm_sweep / sweep}


def calibrate(u: _Unit, arm: str, settings: dict) -> dict | None:
    """The calibration ``arm`` needs (None for ``plain`` and an arm the sampler refuses)."""
    if arm == "blocked":
        return blocked.calibrate(u)
    if arm == "replica":
        return replica.calibrate(u, settings["replicas"], settings["min_b"])
    if arm == "blocked+replica" and unsupported(arm, settings) is None:
        return replica.calibrate(u, settings["replicas"], settings["min_b"],
                                 blocked_every=settings["blocked_every"])
    if arm == "split-merge":
        return calibrate_split_merge(u, settings["split_merge"], settings["split_merge_scans"])
    return None


def arm_sweeps(arm: str, settings: dict, cal: dict | None) -> int:
    """The sweeps (chain sweeps for replicas) that give ``arm`` the plain arm's CPU."""
    s = settings["sweeps"]
    if arm == "blocked":
        return int(round(s / (1.0 + cal["r"] / settings["blocked_every"])))
    if arm in ("replica", "blocked+replica"):
        return int(round(s / cal["x"]))
    if arm == "split-merge":
        return int(round(s / cal["y"]))
    return s


def unsupported(arm: str, settings: dict) -> str | None:
    """The sampler's own refusal of ``arm``'s options (one line), or None when it runs them."""
    if arm != "blocked+replica":
        return None
    from bayesfa.errors import InputError
    from bayesfa.samplers.pfa._replica_kernel import SWAP_EVERY
    from bayesfa.samplers.pfa.cgs_pfa import check_replicas

    try:
        check_replicas(settings["replicas"], SWAP_EVERY, settings["min_b"], "gibbs", 0, 0)
    except InputError as err:
        return f"the sampler refuses it: {err}"
    return None


# -- one cell ---------------------------------------------------------------------------------------

def plateau(trace, period: int, sweeps: int) -> dict:
    """The log joint over the chain's last quarter of sweeps: ``trace`` one value per draw,
    the last at sweep ``sweeps`` and one every ``period`` before it (a replica chain's trace
    holds only its second half). Mean, least, greatest, and rise (last minus first) of the draws
    made after ``3/4`` of the sweeps (at least the last draw)."""
    lj = np.asarray(trace, dtype=np.float64)
    at = sweeps - period * np.arange(lj.size - 1, -1, -1)
    last = lj[at > 0.75 * sweeps]
    if last.size == 0:
        last = lj[-1:]
    return {"last_quarter_mean": float(last.mean()), "last_quarter_min": float(last.min()),
            "last_quarter_max": float(last.max()), "last_quarter_rise": float(last[-1] - last[0]),
            "last_quarter_draws": int(last.size)}


def run_cell(u: _Unit, arm: str, sweeps: int, settings: dict) -> dict:
    """One chain of ``arm`` for ``sweeps`` sweeps on ``u``, scored (the scripts' ``run_arm``)."""
    if arm == "plain":
        out = blocked.run_arm(u, sweeps, 0, keep_trace=True)
    elif arm == "blocked":
        out = blocked.run_arm(u, sweeps, settings["blocked_every"], keep_trace=True)
    elif arm == "split-merge":
        out = blocked.run_arm(u, sweeps, 0, keep_trace=True, split_merge=settings["split_merge"],
                              split_merge_scans=settings["split_merge_scans"])
    elif arm == "replica":
        out = replica.run_arm(u, sweeps, settings["replicas"], settings["min_b"], keep_trace=True)
    elif arm == "blocked+replica":
        out = replica.run_arm(u, sweeps, settings["replicas"], settings["min_b"], keep_trace=True,
                              blocked_every=settings["blocked_every"])
    else:
        raise ValueError(f"no runner for arm {arm!r}")
    out.pop("log_joint_trace_every_10th", None)
    out["plateau"] = plateau(out["log_joint_trace"], out["period"], out["sweeps"])
    return out


# -- tables -------------------------------------------------------------------------------------------

def summary(rows: dict, arms: list[str], seeds: list[int]) -> list[dict]:
    """Per arm over the seeds done: median, worst (largest) and best score - min, worst / best,
    median and range of CPU seconds, sweeps, median last-quarter log joint."""
    out = []
    for arm in arms:
        got = [rows[f"{arm}/{s}"] for s in seeds if f"{arm}/{s}" in rows]
        ran = [g for g in got if g.get("supported", True)]
        if got and not ran:
            out.append({"arm": arm, "seeds": len(got), "supported": False, "reason": got[0]["reason"]})
            continue
        if not ran:
            out.append({"arm": arm, "seeds": 0})
            continue
        ex = [g["excess"] for g in ran]
        cpu = [g["cpu_seconds"] for g in ran]
        out.append({"arm": arm, "seeds": len(ran), "median_excess": statistics.median(ex),
                    "worst_excess": max(ex), "best_excess": min(ex),
                    "worst_over_best": max(ex) / min(ex) if min(ex) > 0 else None,
                    "median_cpu_seconds": statistics.median(cpu), "min_cpu_seconds": min(cpu),
                    "max_cpu_seconds": max(cpu), "sweeps": sorted({g["sweeps"] for g in ran}),
                    "median_last_quarter_log_joint": statistics.median(
                        g["plateau"]["last_quarter_mean"] for g in ran)})
    return out


def _num(x, fmt: str) -> str:
    return "-" if x is None or not np.isfinite(x) else format(x, fmt)  # (a NaN is null in the JSON)


def _extra(r: dict) -> str:
    st = r.get("replica_stats")
    if st is not None:
        return ("swap rates " + ", ".join(_num(x, ".2f") for x in st["swap_rate"]) + "; ladder "
                + ", ".join(_num(x, ".3f") for x in st["ladder"]))
    acc = (r.get("accept_rates") or {}).get("accept_split_merge", "absent")
    if acc != "absent":
        return "split-merge acceptance " + ("n/a (none tried)" if acc is None else f"{acc:.4f}")
    return ""


def table(rows: dict, arms: list[str], seeds: list[int]) -> str:
    head = ("| arm | seeds | score - min: median | worst | best | worst / best | cpu s: median (range) "
            "| sweeps | last-quarter log joint: median |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for s in summary(rows, arms, seeds):
        if s.get("supported") is False:
            lines.append(f"| {s['arm']} | not supported | {s['reason']} | | | | | | |")
        elif not s["seeds"]:
            lines.append(f"| {s['arm']} | 0/{len(seeds)} | - | - | - | - | - | - | - |")
        else:
            wb = "-" if s["worst_over_best"] is None else f"{s['worst_over_best']:.2f}"
            lines.append(f"| {s['arm']} | {s['seeds']}/{len(seeds)} | {s['median_excess']:.4f} "
                         f"| {s['worst_excess']:.4f} | {s['best_excess']:.4f} | {wb} "
                         f"| {s['median_cpu_seconds']:.1f} ({s['min_cpu_seconds']:.1f} - {s['max_cpu_seconds']:.1f}) "
                         f"| {', '.join(map(str, s['sweeps']))} | {s['median_last_quarter_log_joint']:.1f} |")
    head = ("| seed | arm | sweeps | cpu s | score - min | ratio - 1 | final log joint "
            "| last quarter: mean (min - max) | last quarter: rise | states used | notes |")
    lines += ["", "Each cell (one chain):", "", head, "|" + "---|" * (head.count("|") - 1)]
    for seed in seeds:
        for arm in arms:
            r = rows.get(f"{arm}/{seed}")
            if r is None:
                continue
            if not r.get("supported", True):
                lines.append(f"| {seed} | {arm} | - | - | - | - | - | - | - | - | not supported: {r['reason']} |")
                continue
            p = r["plateau"]
            lines.append(f"| {seed} | {arm} | {r['sweeps']} | {r['cpu_seconds']:.1f} | {r['excess']:.4f} "
                         f"| {r['ratio_minus_1']:.5f} | {r['final_log_joint']:.1f} "
                         f"| {p['last_quarter_mean']:.1f} ({p['last_quarter_min']:.1f} - {p['last_quarter_max']:.1f}) "
                         f"| {p['last_quarter_rise']:+.1f} | {r['final_states_used']} | {_extra(r)} |")
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------------------

def warm_up(settings: dict, arms: list[str]) -> None:
    """Every arm once on a toy corpus, so that loading the numba kernels is billed to no cell."""
    from bayesfa.corpus import Corpus

    rng = np.random.default_rng(0)
    strings = [rng.integers(0, 3, size=rng.integers(1, 6)) for _ in range(60)]
    train, test = Corpus.from_strings(strings[:40], 3), Corpus.from_strings(strings[40:], 3)
    toy = {**settings, "period": 2}
    u = _Unit(train, test, np.full(test.n_strings, -np.log(test.n_strings)), 3, 0.05, 0, toy, "")
    for arm in arms:
        if unsupported(arm, settings) is None:
            run_cell(u, arm, 8, toy)


def main(argv=None) -> int:
    from guarded_out import check_out, write_out_json, write_out_text
    from machine import git_commit, missing_pautomac_file
    from pautomac_table3 import PAPER_TABLE3

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", type=int, required=True)
    p.add_argument("--states", type=int, default=None, help="N (default: Table 3's)")
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--sweeps", type=int, default=20_000, help="the plain arm's sweeps")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--blocked-every", type=int, default=10)
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("--min-b", type=float, default=0.95)
    p.add_argument("--split-merge", type=float, default=0.1, help="split-merge moves per sweep")
    p.add_argument("--split-merge-scans", type=int, default=3)
    p.add_argument("--period", type=int, default=100)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        p.error(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    arms = args.arms.split(",")
    if any(a not in ARMS for a in arms):
        p.error(f"--arms: choose from {', '.join(ARMS)}, got {args.arms!r}")
    if args.states is None and args.problem not in PAPER_TABLE3:
        p.error(f"--states: problem {args.problem} has no Table 3 N; give one")
    if (args.sweeps < 2 or args.blocked_every < 1 or args.replicas < 2 or not 0 < args.min_b < 1
            or not args.split_merge > 0 or args.split_merge_scans < 0 or args.period < 1
            or not args.beta > 0 or (args.states is not None and args.states < 1)):
        p.error("--sweeps >= 2, --blocked-every >= 1, --replicas >= 2, --min-b in (0, 1), --split-merge > 0, "
                "--split-merge-scans >= 0, --period >= 1, --beta > 0 and --states >= 1 are required")
    missing = missing_pautomac_file(args.data, args.problem)
    if missing:
        p.error(f"--data {args.data}: no file {missing}")
    out = Path(args.out)
    check_out(out, out.with_suffix(".md"))
    states = PAPER_TABLE3[args.problem][0] if args.states is None else args.states
    settings = {"problem": args.problem, "states": states, "beta": args.beta, "sweeps": args.sweeps,
                "period": args.period, "blocked_every": args.blocked_every, "replicas": args.replicas,
                "min_b": args.min_b, "split_merge": args.split_merge,
                "split_merge_scans": args.split_merge_scans}
    done = json.loads(out.read_text()) if out.exists() else {"settings": settings, "rows": {},
                                                              "calibration": {}}
    if done["settings"] != settings:
        p.error(f"--out {out} holds results for other settings {done['settings']}")
    done["commit"] = git_commit()
    done["command"] = ("python benchmarks/pautomac_strategies.py "
                       + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    load = lambda seed: _Unit.load(args.problem, seed, args.data, settings, "", states=states)  # noqa: E731
    def finished(arm, seed):  # a cell refused by an earlier sampler that now runs it is redone
        row = done["rows"].get(f"{arm}/{seed}")
        return row is not None and (row.get("supported", True) or unsupported(arm, settings) is not None)

    todo = [(arm, seed) for seed in seeds for arm in arms if not finished(arm, seed)]
    if todo:
        warm_up(settings, arms)
    for arm in arms:
        if (arm in ("blocked", "replica", "blocked+replica", "split-merge")
                and done["calibration"].get(arm) is None and unsupported(arm, settings) is None
                and any(a == arm for a, _ in todo)):
            done["calibration"][arm] = calibrate(load(seeds[0]), arm, settings)
            write_out_json(out, done)
    done["sweeps"] = {arm: arm_sweeps(arm, settings, done["calibration"].get(arm)) for arm in arms
                      if unsupported(arm, settings) is None
                      and (arm == "plain" or done["calibration"].get(arm) is not None)}
    for arm, seed in todo:
        key = f"{arm}/{seed}"
        reason = unsupported(arm, settings)
        if reason is not None:
            row = {"supported": False, "reason": reason}
        else:
            u = load(seed)
            row = run_cell(u, arm, done["sweeps"][arm], settings)
            row["states"] = u.n_states
        row.update(arm=arm, seed=seed, commit=done["commit"], command=done["command"],
                   finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        done["rows"][key] = row
        done["summary"] = summary(done["rows"], list(ARMS), sorted({r["seed"] for r in done["rows"].values()}))
        write_out_json(out, done)
        write_out_text(out.with_suffix(".md"), _page(done, arms, seeds))
        if reason is None:
            print(f"{arm} seed {seed}: {row['sweeps']} sweeps, {row['cpu_seconds']:.1f} cpu s, "
                  f"score - min {row['excess']:.4f}, final log joint {row['final_log_joint']:.1f}", flush=True)
        else:
            print(f"{arm} seed {seed}: not run ({reason})", flush=True)
    text = _page(done, arms, seeds)
    print(text)
    write_out_text(out.with_suffix(".md"), text)
    return 0


def _page(done: dict, arms: list[str], seeds: list[int]) -> str:
    st, cal = done["settings"], done["calibration"]
    notes = []
    if "blocked" in cal:
        notes.append(f"a blocked move {cal['blocked']['r']:.2f} sweeps (one every {st['blocked_every']})")
    if "replica" in cal:
        notes.append(f"a chain sweep of {st['replicas']} replicas with its swap round {cal['replica']['x']:.2f} "
                     f"sweeps (ladder 1 .. {st['min_b']}, adapted over the first half)")
    if "split-merge" in cal:
        notes.append(f"a sweep with {st['split_merge']} split-merge moves ({st['split_merge_scans']} launch "
                     f"scans) {cal['split-merge']['y']:.3f} sweeps")
    sweeps = ", ".join(f"{a} {n}" for a, n in done.get("sweeps", {}).items())
    return (f"Command: `{done['command']}` at {done['commit']}\n\n"
            f"PAutomaC problem {st['problem']}, N = {st['states']}, beta = {st['beta']}, one chain per cell, "
            f"a draw every {st['period']} sweeps, Eq. 6 over the second half. Calibration (CPU, this process, "
            f"first seed's strings from a random path): {'; '.join(notes) or 'none'}. Sweeps per arm for "
            f"equal CPU: {sweeps}.\n\n{table(done['rows'], arms, seeds)}\n")


if __name__ == "__main__":
    sys.exit(main())
