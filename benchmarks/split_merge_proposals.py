"""What CGS-PFA's split-merge moves propose on a PAutomaC problem, and why they are (not) accepted
(issue 22, item 2).

    python benchmarks/split_merge_proposals.py --problem 5 --states 22 --burn-in 1500 \
        --moves 300 [--scans 3] [--beta 0.05] [--seed 0] [--data ../shared/data/pautomac] \
        [--out benchmarks/results/split_merge_proposals_5.json]

One chain of CGS-PFA (``--states`` N, ``--beta``, a uniformly random start from ``--seed``)
runs ``--burn-in`` Gibbs sweeps, then ``--moves`` split-merge moves one after another
(:mod:`bayesfa.samplers.pfa._split_merge_kernel`, no sweep between them). For each move it
records its kind, the change of the collapsed log joint (Eq. 4) its proposal would make
(``delta``: split or merged configuration minus current) and the log probability of its final
restricted Gibbs scan (``log_q``), whose sum or difference with ``delta`` (and ``log E``) is the
log acceptance ratio, and whether it was accepted. The JSON has every move; the printout gives
quantiles per kind and the accepted moves.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from guarded_out import check_out, write_out_json  # noqa: E402


def run(problem: int, n_states: int, burn_in: int, n_moves: int, scans: int, beta: float, seed: int,
        data: Path) -> dict:
    from bayesfa.pautomac import read_sample
    from bayesfa.samplers.chains import free_positions, random_path
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
    from bayesfa.samplers.pfa import _split_merge_kernel as sm
    from bayesfa.samplers.pfa.cgs_pfa import new_counts

    train = read_sample(data / f"{problem}.pautomac.train")
    tokens = train.tokens
    rng = np.random.default_rng(seed)
    positions = free_positions(tokens)
    z = random_path(tokens, n_states, rng)
    state = new_counts(n_states, train.alphabet_size + 1)
    gibbs.fill_counts(tokens, z, *state, beta)
    cpu = time.process_time()
    gibbs.sweeps(burn_in, positions, tokens, z, *state, rng, beta)
    burn_cpu = time.process_time() - cpu
    members = np.zeros(positions.size, dtype=np.int64)
    saved = np.zeros(positions.size, dtype=np.int32)
    stats = np.zeros(sm.STATS)
    start_lj = float(gibbs.log_joint(state[0], beta))
    start_used = int(gibbs.n_states_used(state[2]))
    moves = []
    cpu = time.process_time()
    for _ in range(n_moves):
        accepted = stats[sm.SPLITS_ACCEPTED] + stats[sm.MERGES_ACCEPTED]
        sm.moves(1, positions, tokens, z, *state, rng, beta, scans, members, saved, stats)
        kind = int(stats[sm.LAST_KIND])
        if kind:
            moves.append({"kind": "split" if kind == 1 else "merge",
                          "delta": float(stats[sm.LAST_DELTA]), "log_q": float(stats[sm.LAST_LOG_Q]),
                          "accepted": bool(stats[sm.SPLITS_ACCEPTED] + stats[sm.MERGES_ACCEPTED] > accepted)})
    move_cpu = time.process_time() - cpu
    return {"problem": problem, "states": n_states, "burn_in": burn_in, "moves_tried": n_moves,
            "scans": scans, "beta": beta, "seed": seed, "n_free_positions": int(positions.size),
            "burn_in_cpu_seconds": burn_cpu, "moves_cpu_seconds": move_cpu,
            "log_joint_before_moves": start_lj, "log_joint_after_moves": float(gibbs.log_joint(state[0], beta)),
            "states_used_before_moves": start_used, "states_used_after_moves": int(gibbs.n_states_used(state[2])),
            "no_empty_state": int(stats[sm.NO_EMPTY_STATE]), "moves": moves}


def summary(out: dict) -> str:
    lines = [f"problem {out['problem']}, N = {out['states']}, after {out['burn_in']} sweeps: "
             f"{out['states_used_before_moves']} states used, log joint {out['log_joint_before_moves']:.1f}; "
             f"{out['moves_tried']} moves in {out['moves_cpu_seconds']:.1f} CPU s "
             f"({out['no_empty_state']} splits found no empty state)"]
    for kind in ("split", "merge"):
        ms = [m for m in out["moves"] if m["kind"] == kind]
        if not ms:
            lines.append(f"{kind}: none proposed")
            continue
        d = np.percentile([m["delta"] for m in ms], [0, 25, 50, 75, 100])
        q = np.percentile([m["log_q"] for m in ms], [0, 25, 50, 75, 100])
        acc = [m for m in ms if m["accepted"]]
        lines.append(f"{kind}: {len(ms)} proposed, {len(acc)} accepted; delta log joint quantiles "
                     f"(0, 25, 50, 75, 100%) {' '.join(f'{x:.1f}' for x in d)}; log q "
                     f"{' '.join(f'{x:.1f}' for x in q)}")
        for m in acc:
            lines.append(f"  accepted {kind}: delta {m['delta']:.1f}, log q {m['log_q']:.1f}")
    lines.append(f"after the moves: {out['states_used_after_moves']} states used, log joint "
                 f"{out['log_joint_after_moves']:.1f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    from machine import git_commit

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, required=True)
    p.add_argument("--states", type=int, required=True)
    p.add_argument("--burn-in", type=int, default=1500)
    p.add_argument("--moves", type=int, default=300)
    p.add_argument("--scans", type=int, default=3)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    data = Path(args.data)
    if not (data / f"{args.problem}.pautomac.train").is_file():
        print(f"split_merge_proposals.py: error: --data {data}: no file {args.problem}.pautomac.train",
              file=sys.stderr)
        return 2
    out_path = Path(args.out or HERE / "results" / f"split_merge_proposals_{args.problem}.json")
    check_out(out_path)
    out = run(args.problem, args.states, args.burn_in, args.moves, args.scans, args.beta, args.seed, data)
    out["commit"] = git_commit()
    out["command"] = "python benchmarks/split_merge_proposals.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    write_out_json(out_path, out)
    print(summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
