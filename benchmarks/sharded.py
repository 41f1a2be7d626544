"""Sharded CGS-PFA against one process on PAutomaC (issue 41 item 4).

    nice -n 19 python benchmarks/sharded.py --data ../shared/data/pautomac \\
        --problems 5 18 43 --seeds 1 2 3 --out benchmarks/results/sharded.json

For each problem, at equal settings (``--states``, ``--beta``, ``--iterations``, ``--burn-in``,
``--period``, one chain, every training string):

- accuracy: the PAutomaC ratio - 1 of Eq. 6 over the draws of the one-process sampler
  (``sample_cgs_pfa``) for each seed, and of the sharded sampler (``sample_sharded``, ``--shards``
  shards on a ``LocalCluster`` of ``--workers`` processes) for the same seeds; the sharded
  run is *within the spread* when its ratio - 1 lies in [min, max] of the one-process runs'.
- speed: seconds a sweep, once compiled (the one-process kernel's sweep driven directly; the
  sharded chain's rounds after the first; medians of 8 in each of 5 interleaved bursts, then
  the median of the bursts), one process against sharded K = 1 (one worker: the price of the
  transport) and K = shards on the workers (the speed-up);
- communication: the count table (N + 1) A (N + 1) int32 is sent to each shard and each
  shard's delta comes back, 2 K (N + 1) A (N + 1) 4 bytes a sweep; written down for 8 and 64
  workers with the speed-up a simple model expects: a sweep costs ``t1 / W + a + b W + 2 W
  table / LINK`` (``t1``: the one-process sweep; ``a + b K``: the round's overhead, fitted
  to rounds on a tiny corpus, 4 K strings, at K = 1 and K = shards; LINK: the driver's link on
  a cluster of hosts, 1 Gbit/s assumed).

Each unit (problem, mode, seed) is written to ``--out`` atomically as it finishes; a rerun
with the same settings keeps the finished units (a run killed midway resumes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bayesfa.provenance import portable_command

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_json  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402

from bayesfa.pautomac import read_sample, read_solution  # noqa: E402
from bayesfa.samplers.pfa import cgs_pfa, sharded  # noqa: E402
from bayesfa.scoring import score_all_log  # noqa: E402


def ratio_minus_one(counts, beta, test, log_solution) -> float:
    logp = cgs_pfa.predict_log_prob(counts, beta, test)
    return float(score_all_log(logp, log_solution).ratio - 1.0)


def table_bytes(n_states: int, n_symbols: int) -> int:
    return (n_states + 1) * n_symbols * (n_states + 1) * 4


#: The speed units' method (a unit measured otherwise is measured again).
SPEED_VERSION = 3
#: Sweeps timed one by one in each burst, and bursts (the three timings interleaved, so that
#: the load of a shared machine weighs on them alike).
TIMED, BURSTS = 8, 5
#: The driver's link assumed for a cluster of hosts (1 Gbit/s), in bytes a second.
LINK = 125e6


class OneProcess:
    """The one-process chain's sweep (the front's kernel, ``_cgs_pfa_kernel.sweeps``, driven
    directly on its state: compiled, nothing else timed)."""

    def __init__(self, train, args):
        from bayesfa.samplers.chains import free_positions, random_path
        from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel

        self.kernel, self.beta = kernel, args.beta
        self.rng = np.random.default_rng(1)
        self.tokens = train.tokens
        self.z = random_path(self.tokens, args.states, self.rng)
        self.state = cgs_pfa.new_counts(args.states, train.alphabet_size + 1)
        kernel.fill_counts(self.tokens, self.z, *self.state, args.beta)
        self.positions = free_positions(self.tokens)

    def median_sweep(self) -> float:
        times = []
        for _ in range(TIMED):
            t = time.perf_counter()
            self.kernel.sweeps(1, self.positions, self.tokens, self.z, *self.state, self.rng, self.beta)
            times.append(time.perf_counter() - t)
        return float(np.median(times))


def rounds(corpus, kw, client, shards) -> float:
    """The median sweep (round) of a sharded chain on ``client``, after its first."""
    res = sharded.sample_sharded(corpus, **{**kw, "iterations": TIMED + 1, "burn_in": TIMED,
                                            "period": 1}, seed=1, shards=shards, front=cgs_pfa,
                                 client=client)
    return float(res.info["round_seconds_median"])


def speed(train, args, kw, many, single) -> dict:
    """One process against sharded K = 1 (one worker) and K = shards (on the workers), medians
    over :data:`BURSTS` interleaved bursts, and the round's overhead ``a + b K`` fitted on a
    corpus of 4 K strings (compute negligible), from which the speed-up expected with W
    workers: ``t1 / (t1 / W + a + b W + 2 W table / LINK)`` (None when the fit is not
    resolved: a or b below 0, noise)."""
    a = train.alphabet_size + 1
    one = OneProcess(train, args)
    tiny = train.subset(np.arange(4 * args.shards))
    t1s, r1s, rks, o1s, oks = [], [], [], [], []
    for _ in range(BURSTS):
        t1s.append(one.median_sweep())
        r1s.append(rounds(train, kw, single, 1))
        rks.append(rounds(train, kw, many, args.shards))
        o1s.append(rounds(tiny, kw, single, 1))
        oks.append(rounds(tiny, kw, many, args.shards))
    t1, r1, rk, o1, ok = (float(np.median(x)) for x in (t1s, r1s, rks, o1s, oks))
    b = (ok - o1) / (args.shards - 1) if args.shards > 1 else 0.0
    a0 = o1 - b
    table = table_bytes(args.states, a)
    expect = {}
    for w in (8, 64):
        t = t1 / w + a0 + b * w + 2 * w * table / LINK
        resolved = a0 >= 0 and b >= 0
        expect[str(w)] = {"bytes_per_sweep": 2 * w * table,
                          "expected_sweep_seconds": t if resolved else None,
                          "expected_speed_up": t1 / t if resolved else None}
    return {"n_tokens": int(train.n_tokens), "n_symbols": a, "table_bytes": table,
            "one_process_sweep_seconds": t1, "sharded_k1_round_seconds": r1,
            f"sharded_k{args.shards}_round_seconds": rk, "speed_up": t1 / rk,
            "bursts": {"one": t1s, "k1": r1s, f"k{args.shards}": rks, "tiny_k1": o1s,
                       f"tiny_k{args.shards}": oks},
            "overhead_k1_seconds": o1, f"overhead_k{args.shards}_seconds": ok,
            "overhead_a_seconds": a0, "overhead_b_seconds_per_shard": b,
            "bytes_per_sweep": 2 * args.shards * table, "link_bytes_per_second": LINK,
            "expected": expect, "load_average": os.getloadavg()}


def best_of_model(unit: dict, shards: int) -> dict:
    """The speed-up model of :func:`speed` from the fastest burst of each timing (the one the
    machine's other load disturbed least) instead of the medians."""
    best = {k: min(v) for k, v in unit["bursts"].items()}
    t1, rk = best["one"], best[f"k{shards}"]
    b = (best[f"tiny_k{shards}"] - best["tiny_k1"]) / max(1, shards - 1)
    a0 = best["tiny_k1"] - b
    out = {"one_process_sweep_seconds": t1, "sharded_k1_round_seconds": best["k1"],
           f"sharded_k{shards}_round_seconds": rk, "speed_up": t1 / rk,
           "overhead_a_seconds": a0, "overhead_b_seconds_per_shard": b, "expected": {}}
    for w in (8, 64):
        t = t1 / w + max(a0, 0.0) + b * w + 2 * w * unit["table_bytes"] / LINK
        out["expected"][str(w)] = {"bytes_per_sweep": 2 * w * unit["table_bytes"],
                                   "expected_sweep_seconds": t, "expected_speed_up": t1 / t}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--problems", nargs="+", type=int, default=[5, 18, 43])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--states", type=int, default=20)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--burn-in", type=int, default=100)
    p.add_argument("--period", type=int, default=10)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    check_out(args.out)
    settings = {k: getattr(args, k) for k in ("states", "beta", "iterations", "burn_in", "period",
                                              "shards", "workers")}
    out = Path(args.out)
    doc = {"settings": settings, "units": {}}
    if out.exists():
        old = json.loads(out.read_text())
        if old.get("settings") == settings:
            doc["units"] = old.get("units", {})  # resume: keep the finished units
    doc.update({"cpu": cpu_name(), "commit": git_commit(), "command": portable_command([sys.executable] + sys.argv)})

    def save():
        doc["load_average"] = os.getloadavg()
        write_out_json(out, doc)

    kw = dict(n_states=args.states, beta=args.beta, iterations=args.iterations,
              burn_in=args.burn_in, period=args.period, chains=1, holdout=0.0)
    from bayesfa.cluster import open_cluster

    data = Path(args.data)
    with open_cluster("local", args.workers) as cluster, open_cluster("local", 1) as single:
        warm = read_sample(data / f"{args.problems[0]}.pautomac.train")
        warm = warm.subset(np.arange(min(200, warm.n_strings)))
        for client in (cluster.client, single.client):  # compile the kernels on every worker
            sharded.sample_sharded(warm, **{**kw, "iterations": 3, "burn_in": 1, "period": 1},
                                   seed=0, shards=args.shards, front=cgs_pfa, client=client)
        cgs_pfa.sample_cgs_pfa(warm, **{**kw, "iterations": 3, "burn_in": 1, "period": 1}, seed=0)
        for k in args.problems:
            train = read_sample(data / f"{k}.pautomac.train")
            test = read_sample(data / f"{k}.pautomac.test").with_alphabet(train.alphabet_size)
            log_solution = read_solution(data / f"{k}.pautomac_solution.txt", log=True)
            for seed in args.seeds:
                for mode in ("one", "sharded"):
                    key = f"{k}/{mode}/{seed}"
                    if key in doc["units"]:
                        continue
                    t0 = time.perf_counter()
                    if mode == "one":
                        res = cgs_pfa.sample_cgs_pfa(train, **kw, seed=seed)
                        sweep = None
                    else:
                        res = sharded.sample_sharded(train, **kw, seed=seed, shards=args.shards,
                                                     front=cgs_pfa, client=cluster.client)
                        sweep = res.info["round_seconds_median"]
                    unit = {"problem": k, "mode": mode, "seed": seed, "n_tokens": int(train.n_tokens),
                            "ratio_minus_one": ratio_minus_one(res.counts, args.beta, test, log_solution),
                            "seconds": time.perf_counter() - t0, "sweep_seconds": sweep}
                    doc["units"][key] = unit
                    save()
                    print(json.dumps(unit), file=sys.stderr)
            key = f"{k}/speed"
            if doc["units"].get(key, {}).get("version") == SPEED_VERSION:
                continue
            doc["units"][key] = speed(train, args, kw, cluster.client, single.client)
            doc["units"][key].update({"version": SPEED_VERSION, "problem": k})
            save()
            print(json.dumps(doc["units"][key]), file=sys.stderr)
    # the summary: each problem's sharded ratio - 1 against the one-process spread
    summary = {}
    for k in args.problems:
        one = [u["ratio_minus_one"] for key, u in doc["units"].items() if key.startswith(f"{k}/one/")]
        sh = [u["ratio_minus_one"] for key, u in doc["units"].items() if key.startswith(f"{k}/sharded/")]
        if one and sh:
            summary[str(k)] = {"one_min": min(one), "one_max": max(one), "one_mean": float(np.mean(one)),
                               "sharded": sh, "sharded_mean": float(np.mean(sh)),
                               "within_spread": [min(one) <= x <= max(one) for x in sh]}
    doc["summary"] = summary
    doc["model_best_of"] = {str(k): best_of_model(doc["units"][f"{k}/speed"], args.shards)
                            for k in args.problems if f"{k}/speed" in doc["units"]}
    save()
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
