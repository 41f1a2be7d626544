"""The kill matrix of CGS-SG, CGS-HMM and CGS-HMM(*): every method and mutant x every check x seeds.

``python -m bayesfa.validation.pfa.variants_matrix [--seeds 0-4] [--toy tiny] [--methods ...]``
runs ``bayesfa validate`` (:func:`bayesfa.validation.harness.validate`) on each correct method
and each of its named mutants (:data:`bayesfa.validation.pfa.variants.MUTANTS`) for each seed,
and prints a Markdown table: per row, the verdict on each seed and, per check, the verdicts and
the statistic on each seed (``predictive``: max |z| over the strings, ``inf`` when a string the
method predicts without Monte Carlo error differs; ``geweke``: max |z|; ``site-exact``: max
|row - exact conditional|; ``graph-move``: min chi-square p-value). A correct method must pass
on every seed, a mutant fail on every seed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

METHODS = ("cgs-hmm", "cgs-hmm-star", "cgs-sg")


def statistic(check) -> float:
    """The one number a row of the matrix shows for ``check`` (module docstring)."""
    if check.name == "predictive":
        z = [abs(r["z"]) for r in check.rows if r.get("z") is not None]
        return max(z) if z else math.nan
    if check.name == "geweke":
        return max(abs(r["z"]) for r in check.rows)
    if check.name == "site-exact":
        return max(r["max_row_error"] for r in check.rows)
    if check.name == "graph-move":
        return min(r["p_value"] for r in check.rows)
    return math.nan


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        return f"{x:.1e}"
    return f"{x:.2f}"


def run(methods=METHODS, seeds=range(5), toy: str = "tiny", out=sys.stdout) -> bool:
    """Print the matrix; True when every correct method passed and every mutant failed on
    every seed."""
    from bayesfa.validation.harness import mutant_names_of, validate

    ok = True
    names = [(m, name) for m in methods for name in [m] + mutant_names_of(m)]
    header = None
    for method, name in names:
        t0 = time.perf_counter()
        reports = [validate(name, toy, seed=s) for s in seeds]
        checks = [c.name for c in reports[0].checks]
        if header is None or header != checks:
            header = checks
            print(f"\n| method / mutant | verdicts (seeds {','.join(map(str, seeds))}) | "
                  + " | ".join(checks) + " |", file=out)
            print("|---|---|" + "---|" * len(checks), file=out)
        verdicts = "".join("P" if r.passed else "F" for r in reports)
        mutant = name != method
        good = all(not r.passed for r in reports) if mutant else all(r.passed for r in reports)
        ok &= good
        cells = []
        for cname in checks:
            parts = []
            for r in reports:
                c = r.check(cname)
                parts.append(("" if c.passed else "**F** ") + _fmt(statistic(c)))
            cells.append("; ".join(parts))
        label = name if not mutant else name.partition(":mutant-")[2]
        mark = "" if good else " (NOT AS REQUIRED)"
        print(f"| {method} {'' if not mutant else '· ' + label}{mark} | {verdicts} | "
              + " | ".join(cells) + f" |", file=out, flush=True)
        print(f"<!-- {name}: {time.perf_counter() - t0:.0f} s -->", file=sys.stderr, flush=True)
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 or 0,3")
    parser.add_argument("--toy", default="tiny")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    args = parser.parse_args(argv)
    if "-" in args.seeds:
        lo, hi = args.seeds.split("-")
        seeds = list(range(int(lo), int(hi) + 1))
    else:
        seeds = [int(s) for s in args.seeds.split(",")]
    ok = run(args.methods, seeds, args.toy)
    print(f"\nall as required (correct: pass on every seed; mutants: fail on every seed): {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
