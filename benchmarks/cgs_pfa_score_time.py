"""Score - min against seconds of sampling, per CGS-PFA kernel, on PAutomaC problems (issue 12, 4b).

An alias-MH sweep can cost less than a Gibbs sweep but mixes less, so the figure that counts
is the score reached in a given time. For each run ``PROBLEM:N:SECONDS`` every kernel of
``cgs_pfa_kernels.py`` (``gibbs``, ``alias-mh``, ``bucket-mh``, ``bucket-mh-2step``, ``alias-before`` with
``--before FILE``, and the multi-chain kernel when ``bayesfa.samplers.pfa._cgs_pfa_multichain_kernel``
exists; ``--kernels`` picks some) runs the same chains from the same seeds (chain ``c``: the ``c``-th child of
``SeedSequence(seed)``, the uniform start of Algorithm 1 line 1, identical for every kernel)
for ``SECONDS`` of its own sweeping per chain (CPU seconds of the thread by default,
``--budget-clock``). The kernels take turns in slices of about
``--slice`` seconds in one process, so they share the machine's load alike (it is recorded).

Every ``period`` sweeps the chain's plug-in ``xi~`` is a draw; its ``Pr(b | xi~)`` of the test
strings is stored. At time ``t`` the estimate is Eq. 6 over the draws made in ``(t/2, t]`` of
every chain (the first half is burn-in), and its PAutomaC score minus the score of the
solution is plotted against ``t`` (wall seconds of the kernel's own sweeps, not of the
scoring), and against CPU seconds of the thread (less affected by a shared machine's load).
Results: JSON and a PNG (both clocks) under ``benchmarks/results/``.

    python benchmarks/cgs_pfa_score_time.py [--runs 43:30:60 47:90:120] [--chains 2] [--seed 0] \
        [--kernels bucket-mh ...] [--before FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cgs_pfa_kernels import (Chains, add_kernel_arguments, bench, kernel_names,  # noqa: E402
                             random_start, select_kernels)
from cgs_pfa_speed import DEFAULT_DATA, synthetic  # noqa: E402

from bayesfa.forward import log_mean_exp  # noqa: E402
from bayesfa.pautomac import read_sample, read_solution  # noqa: E402
from guarded_out import check_out, write_out, write_out_json  # noqa: E402
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs  # noqa: E402
from bayesfa.samplers.pfa.cgs_pfa import plugin_log_prob  # noqa: E402
from bayesfa.samplers.chains import free_positions  # noqa: E402
from bayesfa.scoring import score_all_log  # noqa: E402


class Run:
    """The chains of one kernel (:class:`cgs_pfa_kernels.Chains`), their draws and the seconds
    spent sweeping them, per chain (total / number of chains: the chains run one after the
    other on one core, or all at once in the multi-chain kernel)."""

    def __init__(self, name, tokens, n_states, n_symbols, beta, children):
        positions = free_positions(tokens)
        rngs = [np.random.default_rng(s) for s in children]
        zs, states = [], []
        for rng in rngs:  # Algorithm 1, line 1, as the front does
            z, state = random_start(tokens, positions, n_states, n_symbols, beta, rng)
            zs.append(z)
            states.append(state)
        self.chains = Chains(name, positions, tokens, zs, states, rngs, beta)
        self.beta = beta
        self.counts = np.zeros((n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
        self.wall = self.cpu = 0.0
        self.n_sweeps = 0
        self.wall_at: list[float] = []
        self.cpu_at: list[float] = []
        self.log_probs: list[np.ndarray] = []  # [chains, n_test] per draw

    def run(self, n: int) -> None:
        w0, c0 = time.perf_counter(), time.thread_time()
        self.chains.run(n)
        h = self.chains.n_chains
        self.wall += (time.perf_counter() - w0) / h
        self.cpu += (time.thread_time() - c0) / h
        self.n_sweeps += n

    def draw(self, test) -> None:
        rows = []
        for h in range(self.chains.n_chains):
            gibbs.record(self.chains.counts(h), self.counts)
            rows.append(plugin_log_prob(self.counts[None], self.beta, test)[0])
        self.wall_at.append(self.wall)
        self.cpu_at.append(self.cpu)
        self.log_probs.append(np.stack(rows))


def curve(run: Run, log_solution: np.ndarray, clock: str = "wall", n_points: int = 40):
    """``[(t, score - min, draws)]`` at ``n_points`` log-spaced times ``t`` (seconds of
    ``clock`` per chain): Eq. 6 over every chain's draws made in ``(t/2, t]``."""
    at = np.array(run.wall_at if clock == "wall" else run.cpu_at)
    out = []
    for t in np.geomspace(at[min(1, at.size - 1)], at[-1], n_points):
        window = [lp for s, lp in zip(at, run.log_probs) if t / 2 < s <= t]
        if not window:
            continue
        s = score_all_log(log_mean_exp(np.concatenate(window), axis=0), log_solution)
        out.append((float(t), float(s.score - s.min_score), len(window)))
    return out


def run(problem: int, n_states: int, seconds: float, args) -> dict:
    train = read_sample(args.data / f"{problem}.pautomac.train")
    test = read_sample(args.data / f"{problem}.pautomac.test").with_alphabet(train.alphabet_size)
    log_solution = np.log(read_solution(args.data / f"{problem}.pautomac_solution.txt"))
    tokens, n_symbols = train.tokens, train.alphabet_size + 1
    children = np.random.SeedSequence(args.seed).spawn(args.chains)
    runs = {name: Run(name, tokens, n_states, n_symbols, args.beta, children) for name in kernel_names()}
    period = max(1, round(args.draw_units / (n_states * tokens.size)))
    load = [os.getloadavg()[0]]
    def spent(r: Run) -> float:
        return r.cpu if args.budget_clock == "cpu" else r.wall

    while any(spent(r) < seconds for r in runs.values()):
        for r in runs.values():
            end = min(seconds, spent(r) + args.slice)
            while spent(r) < end:
                r.run(period)
                r.draw(test)
        load.append(os.getloadavg()[0])
    out = {"problem": problem, "states": n_states, "seconds": seconds, "period": period,
           "n_tokens": int(tokens.size), "chains": args.chains, "seed": args.seed,
           "beta": args.beta, "budget_clock": args.budget_clock, "load_average": [min(load), max(load)], "kernels": {}}
    for name, r in runs.items():
        pts = curve(r, log_solution)
        out["kernels"][name] = {
            "curve": pts, "curve_cpu": curve(r, log_solution, "cpu"), "sweeps": r.n_sweeps,
            "wall_per_sweep": r.wall / r.n_sweeps, "cpu_per_sweep": r.cpu / r.n_sweeps,
            "final_excess": pts[-1][1]}
    for clock, key in (("wall", "curve"), ("cpu", "curve_cpu")):
        g = out["kernels"]["gibbs"][key][-1][1]
        for res in out["kernels"].values():  # when each kernel first reaches Gibbs' final score
            reach = [t for t, e, _ in res[key] if e <= g]
            res[f"{clock}_seconds_to_gibbs_final"] = reach[0] if reach else None
    return out


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(5.5 * len(results), 7.5), squeeze=False)
    for col, res in enumerate(results):
        for row, (key, clock) in enumerate((("curve", "wall"), ("curve_cpu", "CPU"))):
            ax = axes[row][col]
            for name, k in res["kernels"].items():
                t, e, _ = zip(*k[key])
                per = k["wall_per_sweep" if clock == "wall" else "cpu_per_sweep"] * 1e3
                ax.plot(t, e, marker=".", label=f"{name} ({per:.1f} ms/sweep)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(f"seconds of sampling per chain ({clock} time)")
            ax.set_ylabel("score - min")
            ax.set_title(f"PAutomaC {res['problem']}, N = {res['states']}, {res['chains']} chains, "
                         f"load {res['load_average'][0]:.0f}-{res['load_average'][1]:.0f}", fontsize=9)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")  # the guarded writer's temporary name has no suffix


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", nargs="+", default=["43:30:60", "47:90:120"], metavar="PROBLEM:N:SECONDS")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--beta", type=float, default=0.1)
    p.add_argument("--slice", type=float, default=2.0, help="seconds a kernel runs before the next")
    p.add_argument("--budget-clock", choices=("cpu", "wall"), default="cpu",
                   help="SECONDS and --slice count CPU time of the thread (default; robust to the "
                        "load of a shared machine) or wall time")
    p.add_argument("--draw-units", type=float, default=5e7,
                   help="N x T units of sweeping between two draws (period = this / (N T))")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--out", type=Path, default=HERE / "results" / "cgs_pfa_score_time.json")
    add_kernel_arguments(p)
    args = p.parse_args(argv)
    check_out(args.out, args.out.with_suffix(".png"))  # before any work: refuse a foreign file
    select_kernels(args)
    bench(synthetic(200), 3, args.beta, 1, 1, multichain=2)  # compile (or load from cache) first
    results = []
    for spec in args.runs:
        problem, n_states, seconds = spec.split(":")
        res = run(int(problem), int(n_states), float(seconds), args)
        results.append(res)
        for name, k in res["kernels"].items():
            print(f"problem {res['problem']} N={res['states']} {name:<10} final score-min "
                  f"{k['final_excess']:.5f}  sweeps {k['sweeps']}  ms/sweep "
                  f"{k['wall_per_sweep'] * 1e3:.2f} (cpu {k['cpu_per_sweep'] * 1e3:.2f})  reaches "
                  f"gibbs' final at {k['wall_seconds_to_gibbs_final']} s (cpu "
                  f"{k['cpu_seconds_to_gibbs_final']} s)", flush=True)
        print(f"  load average {res['load_average']}", flush=True)
    write_out_json(args.out, {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                          "command": " ".join(["python benchmarks/cgs_pfa_score_time.py", *(argv or sys.argv[1:])]),
                          "results": results})
    write_out(args.out.with_suffix(".png"), lambda tmp: plot(results, tmp))
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
