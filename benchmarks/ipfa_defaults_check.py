"""Is `bayesfa fit --method ipfa` with default options the run of issue 38's done-when arms?

    python benchmarks/ipfa_defaults_check.py [--checkpoints benchmarks/results/ipfa_blocked_checkpoints]

The done-when asks for `bayesfa fit --method ipfa` with default options, 2 chains x 2,000
sweeps, from `--states 10` and `--states 100`. The arms `blocked-anneal300s0.5:S` of
`benchmarks/ipfa_blocked.py` ran the same sampler before these settings became the defaults.
Each chain's checkpoint holds its fingerprint: the data's digest, every setting that changes
the chain, and the seed (:func:`bayesfa.samplers.pfa.ipfa.sample_ipfa`). This script calls the
registry's fit (what `bayesfa fit` and `bayesfa.fit` call) with the options resolved from the
defaults, only `--states S` and `--chains 2` given (seed 0, and the arm's `--predict` strings
and `--max-draws 2`, which never change a chain), stops it where it reads each chain's
checkpoint, and prints whether the fingerprint it asks for is the stored one: if so, the fit
would reuse the arm's finished chains as its own, i.e. the arms are that fit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ipfa_blocked import data  # noqa: E402  (this folder's scripts)

from bayesfa.method_options import resolve  # noqa: E402
from bayesfa.methods import get_method  # noqa: E402
from bayesfa.samplers.pfa import ipfa  # noqa: E402


class _Stop(Exception):
    pass


def main(argv=None) -> bool:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoints", default="benchmarks/results/ipfa_blocked_checkpoints")
    args = ap.parse_args(argv)
    # the arms' data: ipfa_blocked.py with --seed 0 --strings 20000 --heldout 1000 --test 1000
    _, train, _, _, scored = data(0, 20000, 1000, 1000)
    asked: list[str] = []

    def capture(path, fingerprint, **kw):
        asked.append(fingerprint)
        if len(asked) == 2:
            raise _Stop
        return None

    ipfa._load_chain = capture
    same = True
    for start in (10, 100):
        folder = Path(args.checkpoints) / f"blocked-anneal300s0.5:{start}"
        asked.clear()
        options = resolve("ipfa", {"states": start, "chains": 2})
        try:
            get_method("ipfa").fit(train, {**options, "max_draws": 2}, 0, False, workdir=folder,
                                   predict=scored)
        except _Stop:
            pass
        for c in range(2):
            stored = str(np.load(folder / f"chain-{c:04d}.npz")["fingerprint"])
            ok = len(asked) > c and stored == asked[c]
            same &= ok
            print(f"--states {start}, chain {c}: the default fit's fingerprint is the arm's: {ok}")
    print("defaults:", {k: v for k, v in resolve("ipfa", {}).items()
                        if k in ("sampler", "iterations", "burn_in", "period", "anneal",
                                 "anneal_start", "truncate", "alpha_prior", "gamma_prior")})
    return same


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
