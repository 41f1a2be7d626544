"""Seconds numba spends compiling a method's kernels on its first fit, per compiled function (the
README's test command and a user's first fit pay them; the on-disk cache spares later processes).

    python benchmarks/compile_times.py --method pdfa --states 3 [--top 15]

Runs one small fit of ``--method`` (the toy of tests/test_export.py) in this process with an
empty ``NUMBA_CACHE_DIR`` of its own, and listens to numba's ``numba:compile`` events
(:mod:`numba.core.event`). Prints each function's compile seconds (inclusive: a function's
time contains its callees' compiles), how many specialisations it compiled (more than one per
signature means literal or mixed-width arguments: section "The README's test command under its
10 minutes" of benchmarks/RESULTS.md), and the top-level total.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOY = ["ab", "", "abb", "b", "aab", "ab", "", "ba", "abab", "b", "ab", "abb"] * 3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", default="pdfa")
    p.add_argument("--states", type=int, help="N, for the methods that take it")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache  # before numba is imported
        from numba.core import event

        import bayesfa

        seconds, count, open_ = collections.defaultdict(float), collections.Counter(), {}
        top = [0, 0.0, 0.0]  # depth, start, total

        class Listener(event.Listener):
            def on_start(self, ev):
                if top[0] == 0:
                    top[1] = time.perf_counter()
                top[0] += 1
                open_[id(ev.data["dispatcher"]), str(ev.data["args"])] = time.perf_counter()

            def on_end(self, ev):
                top[0] -= 1
                if top[0] == 0:
                    top[2] += time.perf_counter() - top[1]
                d = ev.data["dispatcher"]
                name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
                t0 = open_.pop((id(d), str(ev.data["args"])))
                seconds[name] += time.perf_counter() - t0
                count[name] += 1

        event.register("numba:compile", Listener())
        kw = {} if args.states is None else {"states": args.states}
        t0 = time.perf_counter()
        bayesfa.fit(TOY, method=args.method, iterations=60, burn_in=20, period=5, chains=2, **kw)
        wall = time.perf_counter() - t0
    print(f"{args.method}: first fit {wall:.1f} s, of which compiling {top[2]:.1f} s (top level)")
    print("seconds  compiles  function (inclusive of its callees' compiles)")
    for name, s in sorted(seconds.items(), key=lambda x: -x[1])[:args.top]:
        print(f"{s:7.2f}  {count[name]:8d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
