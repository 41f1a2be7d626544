"""Would a Jain-Neal split of a lumped state into an empty state of the truncation be accepted
in the iPFA's blocked chain from a start of 10 states? (issue 38; measured before building
the move)

    nice -n 10 python benchmarks/ipfa_split_feasibility.py [--strings 2000] [--truncate 200]
        [--sweeps 200] [--start 10] [--proposals 400] [--scans 3,10] [--seed 0]
        [--chain-seed 123] [--grid CHOICE:SCANS:ANCHORS:LAUNCH[:PROPOSALS],...] [--state-cache DIR]
        [--out benchmarks/results/ipfa_blocked/split_feasibility.json]

Data: :func:`ipfa_blocked.generator`'s 40-state, 8-letter PFA and its first ``--strings``
strings (the training strings of ``benchmarks/ipfa_blocked.py``). One chain of the blocked
sampler as ``--sampler blocked`` runs it (:func:`_ipfa_blocked_kernel.build_hybrid`: step 0
then steps 1-6; alpha and gamma under the default hyperpriors), its path started uniformly
over ``--start`` of the ``--truncate`` states, run ``--sweeps`` sweeps. On its end state
(``z``, ``beta``, ``alpha`` fixed) ``--proposals`` split proposals are drawn per setting
(:func:`bayesfa.samplers.pfa._ipfa_split_kernel.propose` with ``dry``: pairs of free
positions drawn as the move draws them, kept when both are in one state; each proposal is
evaluated and undone), for each choice of the empty state (uniform, proportional to beta,
uniform with the pair's weights re-split) and each number of launch scans; ``--grid`` also
varies the anchors (``letters``: the second anchor drawn among the positions of the first's
state followed by another letter) and the launch (``letter``: members followed by one
anchor's letter and not the other's start in that anchor's state;
:data:`bayesfa.samplers.pfa._ipfa_split_kernel.LAUNCH_LETTER`). Reported: the
quantiles of the log acceptance ratios, the fraction with ratio > 0 and the mean acceptance
probability ``min(1, exp(ratio))``, and the terms of the ratio.
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
from bayesfa.samplers.pfa._ipfa_kernel import log_joint, refresh_weights  # noqa: E402
from bayesfa.samplers.pfa.ipfa import _BlockedChain  # noqa: E402

CHOICES = {"uniform": sk.CHOICE_UNIFORM, "beta": sk.CHOICE_BETA, "resplit": sk.CHOICE_RESPLIT}
LAUNCHES = {"random": sk.LAUNCH_RANDOM, "letter": sk.LAUNCH_LETTER}


def _letter_pair(chain, rng):
    """``(m1, m2)``: ``t1`` uniform over the free positions, ``t2`` uniform over those in
    ``z[t1]``'s state followed by another letter (``(-1, -1)`` if there is none)."""
    pos = chain.positions
    m1 = int(rng.integers(pos.size))
    t1 = pos[m1]
    same = np.flatnonzero((chain.z[pos] == chain.z[t1]) & (chain.tokens[pos] != chain.tokens[t1]))
    if same.size == 0:
        return -1, -1
    return m1, int(same[rng.integers(same.size)])


def measure(chain, alpha, gamma, n_sym, n_prop, scans, choice, rng, kinds=(1,),
            anchors="uniform", launch=sk.LAUNCH_RANDOM) -> dict:
    members = np.zeros(chain.positions.size, np.int64)
    saved = np.zeros(chain.positions.size, np.int32)
    out = np.zeros(sk.OUT)
    rows = []
    z0 = chain.z.copy()
    tries = 0
    while len(rows) < n_prop and tries < 200 * n_prop:
        tries += 1
        m1, m2 = _letter_pair(chain, rng) if anchors == "letters" else (-1, -1)
        if anchors == "letters" and m1 < 0:
            continue
        kind = sk.propose(chain.positions, chain.tokens, chain.z, chain.c, chain.ct, chain.ci,
                          chain.recip, chain.bk, chain.beta, alpha, gamma, rng, scans, choice, True,
                          members, saved, out, m1, m2, launch,
                          sk.PAIRS_LETTERS if anchors == "move" else sk.PAIRS_UNIFORM)
        if kind in kinds:
            rows.append(out.copy())
    assert np.array_equal(chain.z, z0)  # every proposal undone
    r = np.array(rows)
    lr = r[:, sk.LOG_RATIO]
    q = np.quantile(lr, [0, .05, .25, .5, .75, .95, 1])
    return {"proposals": int(r.shape[0]), "pairs_drawn": tries,
            "log_ratio_quantiles": dict(zip(("min", "q05", "q25", "median", "q75", "q95", "max"),
                                            map(float, q))),
            "fraction_ratio_above_0": float(np.mean(lr > 0)),
            "fraction_ratio_above_minus_5": float(np.mean(lr > -5)),
            "mean_acceptance": float(np.mean(np.exp(np.minimum(lr, 0.0)))),
            "median_delta": float(np.median(r[:, sk.DELTA])),
            "median_log_q": float(np.median(r[:, sk.LOG_Q])),
            "median_log_choice": float(np.median(r[:, sk.LOG_CHOICE])),
            "median_members": float(np.median(r[:, sk.N_S])),
            "best": [[float(x[sk.LOG_RATIO]), float(x[sk.DELTA]), float(x[sk.LOG_Q]),
                      int(x[sk.STATE_I]), int(x[sk.CI_I])]
                     for x in r[np.argsort(-lr)[:5]]]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", type=int, default=10)
    ap.add_argument("--strings", type=int, default=2000)
    ap.add_argument("--truncate", type=int, default=200)
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--proposals", type=int, default=400)
    ap.add_argument("--scans", default="3,10")
    ap.add_argument("--grid", default="",
                    help="settings choice:scans:anchors:launch[:proposals], comma-separated "
                         "(anchors uniform, "
                         "letters, or move: the move's PAIRS_LETTERS; launch random or letter; "
                         "a choice merge-NAME measures merges); default: every choice at each "
                         "--scans, uniform anchors, random launch, then merges")
    ap.add_argument("--state-cache", default="",
                    help="folder for the chain's end state (reused by a later run of the same "
                         "settings; the state is a function of them)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chain-seed", type=int, default=123)
    ap.add_argument("--out", default="benchmarks/results/ipfa_blocked/split_feasibility.json")
    args = ap.parse_args(argv)
    out = Path(args.out)
    command = ("python benchmarks/ipfa_split_feasibility.py "
               + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    commit = git_commit()
    t0 = time.process_time()
    train, tokens, n_sym, rng = training_strings(args.seed, args.strings, args.chain_seed)
    key = f"{args.seed}-{args.strings}-{args.start}-{args.truncate}-{args.sweeps}-{args.chain_seed}"
    cache = Path(args.state_cache) / f"ipfa_split_state_{key}.npz" if args.state_cache else None
    if cache is not None and cache.exists():  # the end state of the same chain, run before
        saved = np.load(cache)
        chain = _BlockedChain.restore(tokens, n_sym, saved["z"], saved["beta"], saved["hyper"],
                                      args.truncate)
    else:
        chain = _BlockedChain(tokens, n_sym, args.start, rng, 1.0, 1.0, args.truncate)
        hybrid = bkern.build_hybrid(None)
        chain.run(args.sweeps, rng, PRIORS, hybrid)
        if cache is not None:
            np.savez(cache, z=chain.z, beta=chain.beta, hyper=chain.hyper)
    t_chain = time.process_time() - t0
    alpha, gamma = float(chain.hyper[0]), float(chain.hyper[1])
    refresh_weights(chain.ci, chain.recip, chain.bk, chain.beta, chain.meta, alpha, n_sym, True)
    ci = chain.ci[1:args.truncate + 1]
    used = ci > 0
    lj = log_joint(chain.c, chain.ci, chain.beta, np.array([args.truncate, args.truncate]),
                   alpha, False)
    state = {"alpha": alpha, "gamma": gamma, "states_in_use": int(used.sum()),
             "tokens_per_state": sorted(int(x) for x in ci[used])[::-1],
             "empty_states": int((~used).sum()),
             "empty_states_weight": float(chain.beta[1:][~used].sum()),
             "largest_empty_weight": float(chain.beta[1:][~used].max()),
             "median_empty_weight": float(np.median(chain.beta[1:][~used])),
             "median_used_weight": float(np.median(chain.beta[1:][used])),
             "log_joint": float(lj)}
    print(json.dumps(state), flush=True)
    res = {}
    mrng = np.random.default_rng(args.chain_seed + 1)
    grid = args.grid.split(",") if args.grid else [
        f"{name}:{scans}:uniform:random" for name in CHOICES for scans in args.scans.split(",")]
    for key in grid:
        name, scans, anchors, launch, *n = key.split(":")
        kinds = (2,) if name.startswith("merge-") else (1,)
        name = name.removeprefix("merge-")
        t1 = time.process_time()
        res[key] = measure(chain, alpha, gamma, n_sym, int(n[0]) if n else args.proposals,
                           int(scans), CHOICES[name], mrng, kinds=kinds, anchors=anchors,
                           launch=LAUNCHES[launch])
        res[key]["cpu_seconds"] = time.process_time() - t1
        print(key, json.dumps(res[key]), flush=True)
    if not args.grid:
        res["merges:uniform:3"] = measure(chain, alpha, gamma, n_sym, args.proposals // 4, 3,
                                          sk.CHOICE_UNIFORM, mrng, kinds=(2,))
    result = {"commit": commit, "command": command, "settings": vars(args),
              "train_strings": train.n_strings, "train_tokens": int(tokens.size),
              "end_state": state, "proposals": res, "chain_cpu_seconds": t_chain,
              "cpu_seconds": time.process_time() - t0}
    out.write_text(json.dumps(result, indent=1))
    _markdown(result, out.with_suffix(".md"))
    return result


def _markdown(r: dict, path: Path) -> None:
    s = r["end_state"]
    lines = [f"Command: `nice -n 10 {r['command']}` at {r['commit']} "
             f"({r['cpu_seconds']:.0f} CPU s)",
             "", f"{r['train_strings']} training strings ({r['train_tokens']} tokens) of the "
             f"generated 40-state PFA; one blocked chain (`--sampler blocked`: step 0 then steps "
             f"1-6) from {r['settings']['start']} states, L = {r['settings']['truncate']}, "
             f"{r['settings']['sweeps']} sweeps. End state: {s['states_in_use']} states in use "
             f"(tokens: {s['tokens_per_state']}), alpha {s['alpha']:.2f}, gamma {s['gamma']:.2f}; "
             f"{s['empty_states']} empty states of total weight {s['empty_states_weight']:.2e} "
             f"(largest {s['largest_empty_weight']:.2e}, median {s['median_empty_weight']:.2e}; "
             f"median weight of a state in use {s['median_used_weight']:.2e}).", "",
             "Split proposals on that state (z, beta, alpha fixed; dry: evaluated, then undone). "
             "Setting: choice:scans:anchors:launch. Choice of the empty state: uniform "
             "(Jain & Neal, 1/E), beta (proportional to "
             "beta_j), resplit (uniform, and the pair's weights redrawn uniformly on their sum, "
             "the Dir(gamma/L) prior density in the ratio). Last row: merge proposals (pairs in "
             "two states in use).", "",
             "| choice:scans | proposals | log ratio min/q05/q25/median/q75/q95/max | ratio > 0 | "
             "ratio > -5 | mean acceptance | median delta log joint | median log q | "
             "median log choice | median members | CPU s |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, m in r["proposals"].items():
        q = m["log_ratio_quantiles"]
        lines.append(f"| {key} | {m['proposals']} | " + "/".join(f"{q[k]:.1f}" for k in q)
                     + f" | {m['fraction_ratio_above_0']:.3f} | "
                     f"{m['fraction_ratio_above_minus_5']:.3f} | {m['mean_acceptance']:.2e} | "
                     f"{m['median_delta']:.1f} | {m['median_log_q']:.1f} | "
                     f"{m['median_log_choice']:.1f} | {m['median_members']:.0f} | "
                     f"{m.get('cpu_seconds', float('nan')):.0f} |")
    lines += ["", "Best five per setting (log ratio, delta, log q, state split, its tokens):", ""]
    for key, m in r["proposals"].items():
        lines.append(f"- {key}: " + "; ".join(
            f"({b[0]:.1f}, {b[1]:.1f}, {b[2]:.1f}, {b[3]}, {b[4]})" for b in m["best"]))
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
