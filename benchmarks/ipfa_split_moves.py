"""How often the blocked iPFA's split-merge move (``--split-merge``) is accepted, and what it
does to the states in use (issue 38).

    nice -n 10 python benchmarks/ipfa_split_moves.py --start 10 [--strings 300] [--truncate 120]
        [--sweeps 600] [--rate 10] [--scans 100] [--seed 0] [--chain-seed 123]
        [--out benchmarks/results/ipfa_blocked/split_moves_10.json]

Data: :func:`ipfa_blocked.generator`'s 40-state PFA and its first ``--strings`` strings (the
training strings of ``benchmarks/ipfa_blocked.py``). One chain of the blocked sampler
(:func:`_ipfa_blocked_kernel.build_hybrid`, no moves), each sweep followed by ``--rate``
moves made here by :func:`bayesfa.samplers.pfa._ipfa_split_kernel.propose` exactly as
``build_hybrid(split_rate=...)`` makes them (weights refreshed, the beta choice, the letter
launch, pairs by letters), so that each move's kind and acceptance can be counted; alpha and
gamma under the default hyperpriors. Every 50 sweeps: states in use, splits and merges tried
and accepted in those sweeps.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ipfa_blocked_diagnose import PRIORS, training_strings  # noqa: E402  (this folder's script)
from machine import git_commit  # noqa: E402

from bayesfa.samplers.pfa import _ipfa_blocked_kernel as bkern  # noqa: E402
from bayesfa.samplers.pfa import _ipfa_split_kernel as sk  # noqa: E402
from bayesfa.samplers.pfa._cgs_pfa_kernel import n_states_used  # noqa: E402
from bayesfa.samplers.pfa._ipfa_kernel import refresh_weights  # noqa: E402
from bayesfa.samplers.pfa.ipfa import _BlockedChain  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--strings", type=int, default=300)
    ap.add_argument("--truncate", type=int, default=120)
    ap.add_argument("--sweeps", type=int, default=600)
    ap.add_argument("--rate", type=int, default=10)
    ap.add_argument("--scans", type=int, default=sk.SCANS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chain-seed", type=int, default=123)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out_path = Path(args.out or f"benchmarks/results/ipfa_blocked/split_moves_{args.start}.json")
    command = ("python benchmarks/ipfa_split_moves.py "
               + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    commit = git_commit()
    t0 = time.process_time()
    train, tokens, n_sym, rng = training_strings(args.seed, args.strings, args.chain_seed)
    chain = _BlockedChain(tokens, n_sym, args.start, rng, 1.0, 1.0, args.truncate)
    hybrid = bkern.build_hybrid(None)
    members = np.empty(chain.positions.size, np.int64)
    saved = np.empty(chain.positions.size, np.int32)
    out = np.zeros(sk.OUT)
    trace, window = [], np.zeros(4, np.int64)
    for s in range(args.sweeps):
        chain.run(1, rng, PRIORS, hybrid)
        refresh_weights(chain.ci, chain.recip, chain.bk, chain.beta, chain.meta, chain.hyper[0],
                        n_sym, True)
        for _ in range(args.rate):
            kind = sk.propose(chain.positions, chain.tokens, chain.z, chain.c, chain.ct, chain.ci,
                              chain.recip, chain.bk, chain.beta, chain.hyper[0], chain.hyper[1],
                              rng, args.scans, sk.CHOICE_BETA, False, members, saved, out, -1, -1,
                              sk.LAUNCH_LETTER, sk.PAIRS_LETTERS)
            if kind:
                window[2 * (kind - 1)] += 1
                window[2 * (kind - 1) + 1] += int(out[sk.ACCEPTED])
        if s % 50 == 49:
            trace.append({"sweep": s + 1, "states_in_use": int(n_states_used(chain.ci)),
                          "alpha": float(chain.hyper[0]), "gamma": float(chain.hyper[1]),
                          "splits_tried": int(window[0]), "splits_accepted": int(window[1]),
                          "merges_tried": int(window[2]), "merges_accepted": int(window[3])})
            window[:] = 0
            print(json.dumps(trace[-1]), flush=True)
    result = {"commit": commit, "command": command, "settings": vars(args), "trace": trace,
              "cpu_seconds": time.process_time() - t0}
    out_path.write_text(json.dumps(result, indent=1))
    lines = [f"Command: `nice -n 10 {command}` at {commit} ({result['cpu_seconds']:.0f} CPU s)", "",
             f"{train.n_strings} training strings of the generated 40-state PFA; one blocked chain "
             f"from {args.start} states, L = {args.truncate}, {args.rate} split-merge moves after "
             f"each sweep ({args.scans} launch scans).", "",
             "| sweeps | states in use | alpha | gamma | splits tried | accepted | merges tried | "
             "accepted |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t in trace:
        lines.append(f"| {t['sweep']} | {t['states_in_use']} | {t['alpha']:.2f} | {t['gamma']:.1f} "
                     f"| {t['splits_tried']} | {t['splits_accepted']} | {t['merges_tried']} | "
                     f"{t['merges_accepted']} |")
    out_path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return result


if __name__ == "__main__":
    main()
