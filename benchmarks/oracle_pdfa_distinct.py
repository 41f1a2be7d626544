"""Re-measure oracle-pdfa's three Gibbs kernel checks (gibbs-sweep, gibbs-chain,
gibbs-chain-hyper) at the distinct hyperparameters of ``bayesfa.validation.pdia.oracle.FIXED``
(issue 39 item 2), for the correct oracle and each model mutant, one JSON line per check row.

Each check is called with the arguments ``OraclePDFASpec(variant).kernel_checks(toy, seed=s)``
passes (toy ``tiny``, ``alpha = 1e-3``), one check at a time so that a row is written as soon as
it is measured. ``margin = chi2 / chi2_crit``, ``chi2_crit`` the statistic at which the row's
p-value equals its threshold (a row fails when ``margin > 1``).

    nice -n 10 python benchmarks/oracle_pdfa_distinct.py --seeds 0-4 --variants ,no-mu,end-mass \\
        --out benchmarks/results/oracle_pdfa_distinct/rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from scipy import stats as sps


def _seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def table(path: Path) -> str:
    """Markdown table of the rows in ``path``: per oracle / mutant, check and toy, the
    statistic / threshold ``chi2 / chi2_crit`` (margin) of each seed and the verdict."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    keys, cells = [], {}
    for r in rows:
        k = (r["variant"], r["check"], r["toy"])
        if k not in cells:
            keys.append(k)
            cells[k] = {}
        cells[k][r["seed"]] = r
    seeds = sorted({r["seed"] for r in rows})
    out = ["| oracle | check | toy | df | chi2_crit (p threshold) | "
           + " | ".join(f"seed {s}: chi2 (margin)" for s in seeds) + " | verdict |",
           "|---|---|---|---:|---:|" + "---:|" * len(seeds) + "---|"]
    for k in keys:
        c = cells[k]
        any_row = next(iter(c.values()))
        vals = [f"{c[s]['chi2']:.4g} ({c[s]['margin']:.3g})" if s in c else "-" for s in seeds]
        fails = sum(not c[s]["pass"] for s in c)
        verdict = (f"passes {len(c) - fails}/{len(c)}" if k[0] == "correct"
                   else f"fails {fails}/{len(c)}, min margin {min(c[s]['margin'] for s in c):.3g}")
        dfs = sorted({c[s]["df"] for s in c})
        crits = sorted({round(c[s]["chi2_crit"], 1) for s in c})
        df_text = f"{dfs[0]}" if len(dfs) == 1 else f"{dfs[0]}-{dfs[-1]}"
        crit_text = f"{crits[0]:g}" if len(crits) == 1 else f"{crits[0]:g}-{crits[-1]:g}"
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {df_text} | {crit_text} "
                   f"({any_row['p_threshold']:g}) | " + " | ".join(vals) + f" | {verdict} |")
    return "\n".join(out)


def main() -> None:
    from bayesfa.validation.pdia import oracle
    from bayesfa.validation.toys import get_toy

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--variants", default=",no-mu,end-mass",
                    help="comma-separated; the empty name is the correct oracle")
    ap.add_argument("--checks", default="gibbs-sweep,gibbs-chain,gibbs-chain-hyper")
    ap.add_argument("--out", default="benchmarks/results/oracle_pdfa_distinct/rows.jsonl")
    ap.add_argument("--table", action="store_true",
                    help="print the markdown table of the rows in --out and stop")
    args = ap.parse_args()
    if args.table:
        print(table(Path(args.out)))
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    toy = get_toy("tiny")
    calls = {"gibbs-sweep": lambda s, v: oracle.gibbs_sweep_check(toy, seed=s, variant=v),
             "gibbs-chain": lambda s, v: oracle.gibbs_chain_check(seed=s, variant=v),
             "gibbs-chain-hyper": lambda s, v: oracle.gibbs_chain_hyper_check(seed=s, variant=v)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for seed in _seeds(args.seeds):
        for variant in args.variants.split(","):
            for name in args.checks.split(","):
                t0 = time.process_time()
                w0 = time.time()
                check = calls[name](seed, variant)
                cpu, wall = time.process_time() - t0, time.time() - w0
                crit = check.summary["p_threshold"]
                for r in check.rows:
                    chi2_crit = float(sps.chi2.isf(crit, r["df"]))
                    row = {"commit": commit + ("-dirty" if dirty else ""), "seed": seed,
                           "variant": variant or "correct", "check": name, "toy": r["toy"],
                           "chi2": float(r["chi2"]), "df": int(r["df"]), "z": float(r["z"]),
                           "p": float(r["p"]), "p_threshold": crit, "chi2_crit": chi2_crit,
                           "margin": float(r["chi2"]) / chi2_crit, "pass": bool(r["pass"]),
                           "check_passed": bool(check.passed), "cpu_s": round(cpu, 1),
                           "wall_s": round(wall, 1), "fixed": dict(oracle.FIXED)}
                    with out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
