"""Why the iPFA's blocked sampler keeps its start (issue 38, item 1): one chain's trajectory
and what merges and splits would do to its end state.

    nice -n 19 python benchmarks/ipfa_blocked_diagnose.py --start 100 [--strings 2000]
        [--truncate 200] [--sweeps 150] [--seed 0] [--chain-seed 123]
        [--out benchmarks/results/ipfa_blocked/diagnose_100.json]

Data: :func:`ipfa_blocked.generator`'s 40-state, 8-letter PFA and its first ``--strings``
strings (the same training strings as ``benchmarks/ipfa_blocked.py``; no test set is read).
One chain of the blocked sweep's steps 1-6 alone (:func:`bayesfa.samplers.pfa._ipfa_blocked_kernel.build_sweeps`:
theta, FFBS, tables, gamma, beta, alpha; the blocked sampler as it was before its step 0, the
direct-assignment sweep, was added), alpha and gamma under the default hyperpriors, the path
started uniformly over ``--start`` of the ``--truncate`` states; every 10 sweeps:
the states in use, alpha, gamma, the quantiles of the states' token counts, the states with
at most 5 tokens and the weight of the empty states. At the end, for every pair of states in
use, the change of ``log Pr(data, z | beta, alpha)`` (Eq. 4 with the prior ``alpha H``;
:func:`bayesfa.samplers.pfa._ipfa_kernel.log_joint`) if the second were merged into the first
(weights fixed, and with the pair's weights summed). The output (``--out`` and its ``.md``)
holds the commit, the command and the CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ipfa_blocked import generator  # noqa: E402  (this folder's script)
from machine import git_commit  # noqa: E402

from bayesfa.samplers.pfa import _ipfa_blocked_kernel as bkern  # noqa: E402
from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions  # noqa: E402
from bayesfa.samplers.pfa._ipfa_kernel import log_joint  # noqa: E402
from bayesfa.samplers.pfa.ipfa import ALPHA_PRIOR, GAMMA_PRIOR, _BlockedChain  # noqa: E402


def _snapshot(chain, sweep: int, n_st: int) -> dict:
    ci = chain.ci[1:n_st + 1].astype(np.int64)
    used = ci > 0
    n = np.sort(ci[used])
    return {"sweep": sweep, "states_in_use": int(used.sum()), "alpha": float(chain.hyper[0]),
            "gamma": float(chain.hyper[1]),
            "tokens_per_state": {q: float(np.quantile(n, p)) for q, p in
                                 (("min", 0), ("q10", .1), ("median", .5), ("max", 1))},
            "states_with_at_most_5_tokens": int(np.sum(n <= 5)),
            "empty_states_weight": float(chain.beta[1:n_st + 1][~used].sum())}


def merge_table(tokens, z, beta, alpha, n_st, n_sym) -> dict:
    """Every pair ``(k, j)`` of states in use: ``log Pr(data, z' | beta', alpha) - log Pr(data,
    z | beta, alpha)`` with ``z'`` = ``j`` relabelled ``k``, ``beta'`` = ``beta`` (fixed) or
    with ``beta_k + beta_j`` at ``k`` (summed)."""
    from bayesfa.samplers.pfa._ipfa_kernel import padded_width

    w = padded_width(n_st)
    c = np.zeros((n_st + 1, n_sym, w), np.float64)
    ct = np.zeros((n_sym, n_st + 1, w), np.float64)
    ci = np.zeros(n_st + 1, np.int32)
    meta = np.array([n_st, n_st, 0], np.int64)
    count_transitions(tokens, z, c, ct, ci)
    base = log_joint(c, ci, beta, meta, alpha, False)
    used = np.flatnonzero(ci[1:] > 0) + 1
    rows = []
    for x in range(used.size):
        for y in range(x + 1, used.size):
            k, j = int(used[x]), int(used[y])
            z2 = np.where(z == j, k, z).astype(np.int32)
            count_transitions(tokens, z2, c, ct, ci)
            fixed = log_joint(c, ci, beta, meta, alpha, False) - base
            b2 = beta.copy()
            b2[k] += b2[j]
            b2[j] = 0.0
            rows.append((fixed, log_joint(c, ci, b2, meta, alpha, False) - base, k, j))
    rows = np.array(rows)
    order = np.argsort(-rows[:, 1])
    taken, disjoint = set(), 0
    for d, k, j in rows[order][:, 1:]:
        if d <= 0:
            break
        if k not in taken and j not in taken:
            taken |= {k, j}
            disjoint += 1
    return {"pairs": int(rows.shape[0]),
            "pairs_raising_log_joint_beta_fixed": int(np.sum(rows[:, 0] > 0)),
            "pairs_raising_log_joint_beta_summed": int(np.sum(rows[:, 1] > 0)),
            "disjoint_pairs_raising_it_beta_summed": disjoint,
            "top10_beta_summed": [[float(r[1]), int(r[2]), int(r[3])] for r in rows[order][:10]]}


#: The default hyperpriors of alpha and gamma, (shape, rate) each, as one array.
PRIORS = np.array([float(x) for x in (ALPHA_PRIOR + "," + GAMMA_PRIOR).split(",")])


def training_strings(seed: int, n_strings: int, chain_seed: int):
    """``(train, tokens int32, n_symbols, Generator of chain_seed)``: the first ``n_strings`` of
    the generated PFA's sample (``benchmarks/ipfa_blocked.py``'s, whose next 500 strings it
    holds out), as this script and ``ipfa_split_*.py`` start their chains."""
    data = generator(seed).sample(n_strings + 500, np.random.default_rng(seed + 1))
    train = data.subset(np.arange(n_strings))
    return (train, np.ascontiguousarray(train.tokens, dtype=np.int32), train.alphabet_size + 1,
            np.random.default_rng(chain_seed))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--strings", type=int, default=2000)
    ap.add_argument("--truncate", type=int, default=200)
    ap.add_argument("--sweeps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chain-seed", type=int, default=123)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out = Path(args.out or f"benchmarks/results/ipfa_blocked/diagnose_{args.start}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    command = ("python benchmarks/ipfa_blocked_diagnose.py "
               + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    commit = git_commit()  # the code that runs (taken before, not after the run)
    t0 = time.process_time()
    train, tokens, n_sym, rng = training_strings(args.seed, args.strings, args.chain_seed)
    chain = _BlockedChain(tokens, n_sym, args.start, rng, 1.0, 1.0, args.truncate)
    sweeps = bkern.build_sweeps(None)
    trace = []
    for s in range(args.sweeps):
        sweeps(1, chain.tokens, chain.z, chain.c, chain.ct, chain.ci, chain.beta, chain.meta,
               chain.mcol, chain.mrow, chain.hyper, PRIORS, rng, chain.theta, chain.filt)
        if s % 10 == 9 or s == args.sweeps - 1:
            trace.append(_snapshot(chain, s + 1, args.truncate))
            print(json.dumps(trace[-1]), flush=True)
    alpha, gamma = float(chain.hyper[0]), float(chain.hyper[1])
    merges = merge_table(tokens, chain.z.copy(), chain.beta.copy(), alpha, args.truncate, n_sym)
    result = {"commit": commit, "command": command, "settings": vars(args),
              "train_strings": train.n_strings, "train_tokens": int(tokens.size),
              "trace": trace, "end": {"alpha": alpha, "gamma": gamma},
              "merges_of_the_end_state": merges,
              "cpu_seconds": time.process_time() - t0}
    out.write_text(json.dumps(result, indent=1))
    _markdown(result, out.with_suffix(".md"))
    return result


def _markdown(r: dict, path: Path) -> None:
    lines = [f"Command: `{r['command']}` at {r['commit']} ({r['cpu_seconds']:.0f} CPU s)", "",
             f"{r['train_strings']} training strings ({r['train_tokens']} tokens) of the generated "
             f"40-state PFA; one blocked chain from {r['settings']['start']} states, "
             f"L = {r['settings']['truncate']}.", "",
             "| sweep | states in use | alpha | gamma | tokens a state (min/q10/median/max) | "
             "states with <= 5 tokens | empty states' weight |", "|---:|---:|---:|---:|---|---:|---:|"]
    for t in r["trace"]:
        q = t["tokens_per_state"]
        lines.append(f"| {t['sweep']} | {t['states_in_use']} | {t['alpha']:.2f} | "
                     f"{t['gamma']:.1f} | {q['min']:.0f}/{q['q10']:.0f}/{q['median']:.0f}/"
                     f"{q['max']:.0f} | {t['states_with_at_most_5_tokens']} | "
                     f"{t['empty_states_weight']:.2e} |")
    m = r["merges_of_the_end_state"]
    lines += ["", f"End state: of {m['pairs']} pairs of states in use, merging raises log Pr(data, "
              f"z | beta, alpha) for {m['pairs_raising_log_joint_beta_fixed']} (weights fixed) and "
              f"{m['pairs_raising_log_joint_beta_summed']} (the pair's weights summed); "
              f"{m['disjoint_pairs_raising_it_beta_summed']} disjoint such pairs; the largest "
              f"gains (nats, k, j): {m['top10_beta_summed'][:5]}."]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
