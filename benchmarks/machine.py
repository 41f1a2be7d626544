"""What the benchmark scripts share: the machine they ran on and how they time a call
(imported by the scripts, which put this folder on ``sys.path``)."""

from __future__ import annotations

import platform
import time


def cpu_name() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def best_of(fn, repeats: int, clock=time.thread_time) -> float:
    """The shortest of ``repeats`` calls of ``fn()`` in seconds of ``clock``. The default,
    CPU time of this thread: on a loaded machine, wall time also counts the time slices
    other processes get, and that inflates long calls (a sweep) more than short ones (a
    floor loop)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def git_commit(root=None) -> str:
    """The commit the code ran at (short hash), with ``+dirty`` when tracked files differ from it
    (:func:`bayesfa.provenance.git_commit` of this checkout)."""
    from pathlib import Path

    from bayesfa.provenance import git_commit as commit

    return commit(Path(root) if root else Path(__file__).resolve().parents[1])


def missing_pautomac_file(data, problem) -> str | None:
    """The first of problem ``problem``'s training, test and solution files missing from the
    folder ``data`` (a PAutomaC copy), or None when all three are there."""
    from pathlib import Path

    for name in (f"{problem}.pautomac.train", f"{problem}.pautomac.test",
                 f"{problem}.pautomac_solution.txt"):
        if not (Path(data) / name).is_file():
            return name
    return None


def run_seeds(out, seeds, command: str, run_seed, table) -> None:
    """The resumable loop of a script that measures one seed at a time: ``out`` (a JSON path)
    holds ``{"seeds": [...], "command", "commit"}``; each seed of ``seeds`` not in it yet is
    ``run_seed(seed)`` (a dict with ``"seed"``), appended and written atomically with the
    commit (:func:`git_commit`), and ``table(result)`` written beside it as ``.md``."""
    import json
    import os
    from pathlib import Path

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = json.loads(out.read_text()) if out.exists() else {"seeds": []}
    script = command.split()[:2]
    if not (isinstance(result, dict) and isinstance(result.get("seeds"), list)
            and result.get("command", " ".join(script)).split()[:2] == script):
        raise SystemExit(f"{out}: not a result of {script[-1]}; refusing to replace it")
    done = {s["seed"] for s in result["seeds"]}
    result["command"] = command
    for seed in seeds:
        if seed in done:
            continue
        result["seeds"].append(run_seed(seed))
        result["commit"] = git_commit()
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result))
        os.replace(tmp, out)
        out.with_suffix(".md").write_text(table(result))
        print(f"seed {seed} done", flush=True)


def run_script_seeds(script: str, args, argv, run_seed, table) -> int:
    """:func:`run_seeds` for a benchmark script's parsed ``args`` (its ``--out`` and its
    ``--seeds`` "1,2,3"), ``run_seed(args, seed)`` each; the command recorded is ``python
    benchmarks/SCRIPT`` with the script's arguments (``argv``, or ``sys.argv[1:]``)."""
    import sys
    from pathlib import Path

    shown = " ".join(sys.argv[1:] if argv is None else argv)
    run_seeds(args.out, [int(s) for s in args.seeds.split(",")],
              f"python benchmarks/{Path(script).name} {shown}", lambda seed: run_seed(args, seed), table)
    return 0
