"""The round trip of one sharded sweep's transport, without the sweep (issue 41 item 4): two
ways of keeping a shard's state on a Dask worker and getting a small array back each round.

    nice -n 19 python benchmarks/dask_round_trip.py --workers 2 --rounds 50

- actors: one Dask actor per worker (``client.submit(Cls, actor=True)``), one method call a
  round each, the (21, 7, 21) int32 table as the argument, an array back (what
  ``bayesfa.samplers.pfa.sharded.ShardActor`` does);
- futures: the state as a future, each round one task that returns the next state and one
  task that reads a small array from it, gathered (the first design).

Prints the milliseconds of a round (mean of ``--rounds``, after one warm-up pass of each).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


class Holder:
    def __init__(self, n):
        self.x = np.zeros(n)

    def step(self, table):
        self.x += 1
        return table * 0 + 1


def step_fn(state, table):
    return state + 1


def read(state):
    return np.ones(10)


def main(argv=None) -> int:
    from bayesfa.cluster import open_cluster

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=50)
    args = p.parse_args(argv)
    table = np.zeros((21, 7, 21), dtype=np.int32)
    with open_cluster("local", args.workers) as cluster:
        c = cluster.client
        workers = sorted(c.scheduler_info()["workers"])
        actors = [c.submit(Holder, 1000, actor=True, workers=[w]).result() for w in workers]
        states = [c.submit(np.zeros, 1000, workers=[w], pure=False) for w in workers]
        for rep in range(2):
            t = time.perf_counter()
            for _ in range(args.rounds):
                [f.result() for f in [a.step(table) for a in actors]]
            actor_ms = (time.perf_counter() - t) / args.rounds * 1e3
            t = time.perf_counter()
            for _ in range(args.rounds):
                states = [c.submit(step_fn, s, table, pure=False) for s in states]
                c.gather([c.submit(read, s, pure=False) for s in states])
            futures_ms = (time.perf_counter() - t) / args.rounds * 1e3
        print(f"workers {args.workers}: actors {actor_ms:.1f} ms a round, futures {futures_ms:.1f} ms "
              f"a round (load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
