"""Where each file's mutants stand today, over every committed session (issue 39, item 3).

    CR_PYTHON benchmarks/mutation/standing.py [--files PATTERN ...] [--out DIR]
        [--retest [PATTERN ...] [--validate] --python PY --work DIR [--jit on|off]]

``CR_PYTHON``: a Python with cosmic-ray (8.7.0 made the sessions), as for ``retest.py``.

Each committed session (``benchmarks/results/**/verdicts.json``, :mod:`run`'s ``report``) ran
at its own commit, and samples of one file overlap. So a mutant is keyed by what it changes,
not by its job id: its operator, the text of its line at its session's commit (with the
line's rank among lines of the same text) and its rank among the operator's occurrences on
that line. A distinct mutant is *equivalent* when ``equivalent.json`` names any of its jobs,
*killed* when any session killed it, else a *survivor*. Jobs kept without line or operator
(sessions reported before ``verdicts.json``) cannot be keyed and are counted apart.

``--retest`` (of the files matching its patterns; none: every file) applies each survivor
that is not equivalent to a copy of HEAD (``git archive``
into ``WORK/main``; the line found by its text and rank, the occurrence by its rank on it;
none found: *gone*, its code since changed or removed, left out of the score) and runs the
file's fast killer tests (:func:`run.plan`, with :func:`run.pytest_args`' deselections) with
``-x``, under a CPU limit (a time-out is a kill, as cosmic-ray counts it), then with
``--validate`` ``bayesfa validate METHOD --seed 0`` of the file's methods (the sessions'
second killer). A survivor they kill is *killed now*; one they do not is *live* (without
``--validate``, a live mutant may still fail ``validate``). The killer must pass the
unmutated copy first.

Output: ``OUT/standing.md`` and ``OUT/standing.json``: per file, the distinct non-equivalent
mutants, killed in their session, killed now, gone, live, not retested,
the score (killed / (killed + live + not retested), gone left out) and its one-sided 95 %
Clopper-Pearson lower bound (issue 39's bar: 95 %), and each survivor's fate. Each fate is kept
in ``WORK/fates.json`` as it is found, by the copy's commit: a rerun at a commit of the same
code (:func:`run.same_code`; after an interruption, or to report more files) reuses it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as runner  # noqa: E402  (benchmarks/mutation/run.py: the plan and the paths)

ROOT = runner.ROOT
#: CPU seconds a retest's pytest may take (the sessions' limit with numba's JIT on)
RETEST_CPU = runner.JIT_CPU


def _git_show(commit: str, file: str) -> str | None:
    out = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{file}"],
                         capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


_POSITIONS: dict = {}


def positions(source: str, operator_name: str) -> list[tuple[int, int]]:
    """The start positions of ``operator_name``'s occurrences in ``source``, in cosmic-ray's
    order (``cosmic-ray init``: the module's nodes in order, each node's positions)."""
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.plugins import get_operator

    key = (hash(source), operator_name)
    if key not in _POSITIONS:
        op = get_operator(operator_name)()
        _POSITIONS[key] = [start for node in ast_nodes(get_ast(source))
                           for start, _ in op.mutation_positions(node)]
    return _POSITIONS[key]


def mutant_key(source: str, job: dict) -> tuple | None:
    """``(operator, line text, rank of the line among lines of that text, rank of the
    occurrence on the line)`` of ``job`` in ``source`` (its session's code), or None when its
    occurrence is not on its recorded line there."""
    pos = positions(source, job["operator"])
    k, line = job["occurrence"], job["line"]
    if not 0 <= k < len(pos) or pos[k][0] != line:
        return None
    lines = [s.strip() for s in source.splitlines()]
    text = lines[line - 1]
    same_text = sum(1 for i in range(line - 1) if lines[i] == text)
    on_line = sum(1 for j in range(k) if pos[j][0] == line)
    return job["operator"], text, same_text, on_line


def locate(source: str, key: tuple) -> int | None:
    """The occurrence index in ``source`` (today's code) of the mutant ``key``, or None."""
    operator, text, same_text, on_line = key
    lines = [s.strip() for s in source.splitlines()]
    hits = [i + 1 for i, s in enumerate(lines) if s == text]
    if same_text >= len(hits):
        return None
    line = hits[same_text]
    occ = [j for j, p in enumerate(positions(source, operator)) if p[0] == line]
    return occ[on_line] if on_line < len(occ) else None


def gather(files: list[str]) -> dict:
    """Per file, its distinct mutants over every committed session: ``{key: {"sessions":
    [(folder, commit, job, outcome)], "equivalent": reason or None}}``, and the jobs that
    could not be keyed."""
    equivalent = json.loads(runner.EQUIVALENT.read_text())
    out = {f: {"mutants": {}, "unkeyed": 0, "unlisted_kills": 0, "whole": []} for f in files}
    results = ROOT / "benchmarks/results"
    for path in sorted(results.rglob("verdicts.json")):
        for file, entry in json.loads(path.read_text())["files"].items():
            if file not in out:
                continue
            source = _git_show(entry["commit"], file)
            eq = equivalent.get(file, {})
            rec = out[file]
            rec["unlisted_kills"] += sum(entry.get("unlisted", {}).get(k, 0)
                                         for k in ("killed", "timeout"))
            if entry.get("skipped", 1) == 0 and entry.get("pending", 1) == 0 and entry["jobs"]:
                rec["whole"].append(entry["commit"])  # every mutant of the file ran
            for job in entry["jobs"]:
                key = (None if source is None or job["operator"] is None
                       else mutant_key(source, job))
                if key is None:
                    rec["unkeyed"] += 1
                    continue
                m = rec["mutants"].setdefault(key, {"sessions": [], "equivalent": None})
                m["sessions"].append((str(path.parent.relative_to(results)), entry["commit"], job["job"],
                                      job["outcome"]))
                if job["job"] in eq:
                    m["equivalent"] = eq[job["job"]]
    return out


def retest_file(file: str, survivors: list[tuple], args) -> dict:
    """``{key: "killed now" | "live" | "gone"}`` for ``survivors`` (keys) of ``file``, each
    applied to ``WORK/main`` (HEAD) in turn under the file's fast killer tests."""
    from cosmic_ray.mutating import use_mutation
    from cosmic_ray.plugins import get_operator

    main, cache = Path(args.work) / "main", Path(args.work) / "numba-cache"
    row = runner.plan(ROOT, [file])[0]
    tests = runner.pytest_args(row["tests"])
    env = {**os.environ, "PYTHONPATH": str(main), "PYTHONDONTWRITEBYTECODE": "1",
           "NUMBA_CACHE_DIR": str(cache), "NUMBA_DISABLE_JIT": "1" if args.jit == "off" else "0"}
    # numba does not notice a changed callee in another file: before each run, the compiled
    # code of the file and of every file that imports it is removed (as run.py's sessions do)
    stems = {m.rpartition(".")[2] for m in runner.dependents(row["module"],
                                                             runner.import_graph(ROOT))}

    def clean_cache() -> None:
        for f in (cache.rglob("*") if cache.exists() else ()):
            if f.is_file() and f.name.split(".")[0] in stems:
                f.unlink()

    def call(cmd: list[str], cpu: int) -> int:
        clean_cache()
        return subprocess.call(cmd, cwd=main, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu)))

    def killer() -> str | None:
        """What kills the copy as it is now: "tests", "validate M" or None."""
        if row["tests"] and call([args.python, "-m", "pytest", "-x", "-q", "-p",
                                  "no:cacheprovider", *tests], RETEST_CPU) != 0:
            return "tests"
        for m in (row["methods"] if args.validate else ()):
            if call([args.python, "-m", "bayesfa.cli", "validate", m, "--seed", "0"],
                    runner.VALIDATE_CPU) != 0:
                return f"validate {m}"
        return None

    shutil.rmtree(cache, ignore_errors=True)  # another file's last mutant may live on in it
    fates_file = Path(args.work) / "fates.json"
    fates = json.loads(fates_file.read_text()) if fates_file.exists() else {}
    # fates found at a commit of the same code (bayesfa/, tests/, ...: run.same_code) hold
    for commit in list(fates):
        if commit != args.head and runner.same_code(commit, args.head):
            for f, got in fates[commit].items():
                fates.setdefault(args.head, {}).setdefault(f, {}).update(got)
    known = fates.setdefault(args.head, {}).setdefault(file, {})
    source = (main / file).read_text()
    for k in survivors:  # a survivor whose line is gone needs no killer
        if repr(k) not in known and locate(source, k) is None:
            known[repr(k)] = "gone"
    if all(repr(k) in known for k in survivors):
        return {k: known[repr(k)] for k in survivors}
    if killer() is not None:
        print(f"standing.py: {file}: its killer fails on the unmutated copy of HEAD: "
              "its survivors are not retested", file=sys.stderr, flush=True)
        return {k: "not retested (the killer fails unmutated)" for k in survivors}
    source = (main / file).read_text()
    fate = {}
    for key in survivors:
        occurrence = locate(source, key)
        if occurrence is None:
            fate[key] = known[repr(key)] = "gone"
            continue
        if repr(key) in known:
            fate[key] = known[repr(key)]
            continue
        with use_mutation(main / file, get_operator(key[0])(), occurrence):
            by = killer()
        fate[key] = known[repr(key)] = "live" if by is None else f"killed now ({by})"
        tmp = fates_file.with_suffix(".tmp")  # kept as found: an interrupted run loses nothing
        tmp.write_text(json.dumps(fates, indent=1) + "\n")
        tmp.replace(fates_file)
        print(f"{file}: {fate[key]}: {key[0].split('/')[-1]} on '{key[1]}'", flush=True)
    return fate


def guarded(python: str, call: str, *paths: Path, text: str = "") -> None:
    """``benchmarks/guarded_out.py``'s ``call`` (``check_out`` or ``write_out_text``) on
    ``paths``, run by ``python`` (the project's: the writer needs bayesfa, this interpreter
    need not have it): a file bayesfa did not write is refused in one line, exit 2."""
    code = ("import sys; sys.argv[0] = 'standing.py'; sys.path.insert(0, sys.argv[1]); "
            "import guarded_out as g; "
            + ("g.check_out(*sys.argv[2:])" if call == "check_out"
               else "g.write_out_text(sys.argv[2], sys.stdin.read())"))
    proc = subprocess.run([python, "-c", code, str(ROOT / "benchmarks"), *map(str, paths)],
                          input=text, text=True, capture_output=True)
    if proc.returncode:
        sys.stderr.write(proc.stderr.strip().splitlines()[-1] + "\n" if proc.stderr.strip()
                         else f"standing.py: {call} failed\n")
        sys.exit(proc.returncode)


def lower_bound(k: int, n: int) -> float | None:
    """The one-sided 95 % Clopper-Pearson lower bound of a proportion, ``k`` of ``n``."""
    if n == 0:
        return None
    if k == 0:
        return 0.0
    from math import comb

    def tail(p: float) -> float:  # Pr(X >= k), X ~ Binomial(n, p): rises with p
        return sum(comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))

    lo, hi = 0.0, 1.0  # bisection for tail(p) = 0.05 (cosmic-ray's venv need not have scipy)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) < 0.05 else (lo, mid)
    return lo


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="*", help="patterns of the target files (default: all)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/mutation-standing"))
    ap.add_argument("--retest", nargs="*", metavar="PATTERN",
                    help="retest the survivors of these files (none given: of every file)")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python with bayesfa and its dependencies: it runs the tests and "
                         "the guarded writer of the outputs (default: this one)")
    ap.add_argument("--work", default=str(ROOT.parent / "mutation-standing"))
    ap.add_argument("--jit", choices=("on", "off"), default="on")
    ap.add_argument("--validate", action="store_true",
                    help="with --retest: a survivor of the tests also meets bayesfa validate of "
                         "the file's methods (run.py's second killer; minutes a method)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    guarded(args.python, "check_out", out / "standing.json", out / "standing.md")  # before work
    files = [str(p.relative_to(ROOT)) for p in runner.targets(ROOT, args.files)]
    retested = set() if args.retest is None else {
        str(p.relative_to(ROOT)) for p in runner.targets(ROOT, args.retest or None)}
    data = gather(files)
    head = args.head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    if retested:  # a copy of HEAD (made again when HEAD has moved)
        main_copy, stamp = Path(args.work) / "main", Path(args.work) / "commit"
        if not stamp.exists() or stamp.read_text().strip() != head:
            shutil.rmtree(main_copy, ignore_errors=True)
            main_copy.mkdir(parents=True)
            subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {main_copy}", shell=True,
                           check=True)
            stamp.write_text(head + "\n")
    rows, table = [], []
    pct = lambda x: "-" if x is None else f"{100 * x:.1f} %"  # noqa: E731
    for file in files:
        rec = data[file]
        live = {k: m for k, m in rec["mutants"].items() if m["equivalent"] is None}
        killed = [k for k, m in live.items()
                  if any(s[3] in ("killed", "timeout") for s in m["sessions"])]
        survivors = [k for k in live if k not in killed]
        fate = (retest_file(file, survivors, args) if file in retested and survivors
                else {k: "not retested" for k in survivors})
        count = {f: sum(v.startswith(f) for v in fate.values())
                 for f in ("killed now", "gone", "live", "not retested")}
        k_all = len(killed) + count["killed now"]
        n = k_all + count["live"] + count["not retested"]
        # the score's one-sided 95 % lower bound, when every survivor has been judged today
        lo = lower_bound(k_all, n) if not count["not retested"] else None
        # a session that ran every mutant of the file at a commit where it is as at HEAD: the
        # score is then the file's own (exact), not a sample's estimate
        exact = next((c for c in rec["whole"] if subprocess.run(
            ["git", "-C", str(ROOT), "diff", "--quiet", c, "HEAD", "--", file]).returncode == 0),
            None) if lo is not None else None
        at_bar = bool((lo is not None and lo >= 0.95) or (exact and n and k_all / n >= 0.95))
        rows.append({"file": file, "distinct": len(rec["mutants"]),
                     "equivalent": len(rec["mutants"]) - len(live), "non_equivalent": len(live),
                     "killed_in_session": len(killed), **{k.replace(" ", "_"): v
                                                          for k, v in count.items()},
                     "score": k_all / n if n else None, "lower_bound_95": lo,
                     "whole_at": exact, "at_bar": at_bar,
                     "unkeyed_jobs": rec["unkeyed"], "unlisted_kills": rec["unlisted_kills"],
                     "survivors": [{"operator": k[0], "line": k[1], "fate": fate[k],
                                    "sessions": live[k]["sessions"]} for k in survivors]})
        table.append(f"| {file} | {len(live)} | {len(killed)} | {count['killed now']} | "
                     f"{count['gone']} | {count['live']} | {count['not retested']} | "
                     f"{pct(rows[-1]['score'])} | {pct(lo)} | "
                     f"{'exact, every mutant at `' + exact + '`' if exact else '-'} | "
                     f"{'yes' if at_bar else 'no'} |")
    command = ("python benchmarks/mutation/standing.py"
               + ("" if args.retest is None else " --retest" + "".join(f" {p}" for p in args.retest))
               + (" --validate" if retested and args.validate else "")
               + (" --files " + " ".join(args.files) if args.files else ""))
    guarded(args.python, "write_out_text", out / "standing.json",
            text=json.dumps({"commit": head, "command": command, "files": rows}, indent=1) + "\n")
    guarded(args.python, "write_out_text", out / "standing.md", text=
        f"Mutants of each file over every committed session, at `{head}`: `{command}` "
        f"(module docstring). Distinct non-equivalent mutants; killed in their session; their "
        f"survivors killed now at `{head}` by the file's fast tests"
        f"{' or validate' if retested and args.validate else ''}; gone (their line since "
        f"changed); live (they pass); not retested. Score: killed / (killed + live + not "
        f"retested); lower bound: one-sided 95 % Clopper-Pearson when every survivor was "
        f"retested (issue 39's bar: 95 %), or the exact score where a session ran every mutant "
        f"of the file at a commit where it is as at `{head}` (no sample).\n\n"
        f"| file | non-equivalent | killed in session | killed now | gone | live | not retested "
        f"| score | 95 % lower bound | whole file | at the bar |\n"
        f"|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n"
        + "\n".join(table) + "\n\nEach survivor of its sessions:\n\n"
        "| file | operator | line (at its session) | sessions (folder, commit, job) | fate |\n"
        "|---|---|---|---|---|\n"
        + "\n".join(f"| {r['file']} | {x['operator'].split('/')[-1]} | "
                     f"`{x['line'].replace('|', chr(92) + '|')}` | "
                     + "; ".join(f"{a}, `{b}`, {c[:8]}" for a, b, c, _ in x["sessions"])
                     + f" | {x['fate']} |" for r in rows for x in r["survivors"]) + "\n")
    print((out / "standing.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
