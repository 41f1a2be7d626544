"""The iPFA's weak-limit blocked sampler against its direct sampler, from starts of 10 and 100
states, on a generated 40-state PFA (issue 38, item 1: a first measurement).

    nice -n 19 python benchmarks/ipfa_blocked.py [--strings 2000] [--heldout 500]
        [--sweeps 200] [--truncate 120] [--seed 0] [--checkpoint-dir DIR]
        [--out benchmarks/results/ipfa_blocked/results.json]

Data: a random PFA with 40 states and 8 letters (:func:`generator`: from each state 6 random
(letter, next state) transitions with Dirichlet(1) weights sharing 0.9, the end 0.1), from
which ``--strings + --heldout`` strings are drawn; the last ``--heldout`` are held out. They
are *training* strings of the generator (no test set is read): everything reported is chosen
on them only.

Arms (each ``bayesfa fit --method ipfa`` with 2 chains, ``--sweeps`` sweeps, the first half
burn-in, a draw every 10 sweeps, alpha and gamma sampled under the default hyperpriors, one
``--seed``): ``--sampler blocked --truncate L`` from ``--states 10`` and from ``--states 100``
(the same ``L`` for both), and ``--sampler direct`` from the same two starts; an arm
``blocked-smR:S`` is the blocked sampler with ``--split-merge R`` (R split-merge moves per
sweep, :mod:`bayesfa.samplers.pfa._ipfa_split_kernel`) from ``--states S``, and an arm
``blocked-holdHaA:S`` the blocked sampler with ``--alpha A --alpha-hold H`` (alpha held at A
for the first H sweeps of the burn-in, sampled after; the draws are of the same posterior), and an arm
``blocked-annealAsB:S`` the blocked sampler with ``--anneal A --anneal-start B`` (the first A
sweeps' paths drawn at an inverse temperature rising from B to 1; a start of the burn-in); the
prefix ``blocked-slice`` in place of ``blocked`` (``blocked-slice:S``,
``blocked-slice-annealAsB:S``) draws the paths with ``--paths slice``. Each records the
states in use of every draw (per chain: min, 5 %, median, 95 %, max), the mean held-out
log-likelihood per string (Eq. 6 over the draws, accumulated online), the generator's own on
the held-out strings, and the process CPU seconds. With ``--test T`` (default 0) each arm also
scores a PAutomaC-style test set: ``T`` strings drawn from the generator with seed
``--seed + 2``, repeats removed (PAutomaC's test sets are distinct strings), and reports the
ratio of Eq. 19's score to the generator's own (:func:`bayesfa.scoring.score_all_log`; 1 is
perfect), the figure issue 38's done-when names. The test strings are read only to score:
nothing is chosen on them. The output (``--out`` and its ``.md``)
holds the commit, the command and the load average; each is written through bayesfa's
guarded writer (``guarded_out``: atomic, and a file bayesfa did not write is refused).

Resuming: finished arms are kept in ``--out`` and skipped when the command is run again. With
``--checkpoint-dir DIR`` an arm's chains also keep their state in ``DIR/<arm>/`` (the sampler's
own checkpoints, :func:`bayesfa.samplers.pfa.ipfa.sample_ipfa`'s ``checkpoint_dir``), so an
interrupted arm resumes mid-chain, bit for bit the uninterrupted run (``DIR`` under
``benchmarks/results/*_work/`` is ignored by git). An arm so resumed reports
``cpu_seconds`` of its last invocation only; its ``chain_seconds`` (the chains' own wall
clocks, summed over invocations, any pause of the process included) then bounds its cost from
above.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's scripts)
from machine import git_commit  # noqa: E402

from bayesfa.automata import PFA  # noqa: E402
from bayesfa.corpus import Corpus  # noqa: E402
from bayesfa.samplers.pfa.auto import cpu_seconds  # noqa: E402
from bayesfa.samplers.pfa.ipfa import sample_ipfa  # noqa: E402
from bayesfa.scoring import score_all_log  # noqa: E402

N_STATES, N_LETTERS, FAN_OUT, END = 40, 8, 6, 0.1


def generator(seed: int) -> PFA:
    """The 40-state, 8-letter PFA of the module docstring (state 0 initial)."""
    rng = np.random.default_rng(seed)
    xi = np.zeros((N_STATES + 1, N_LETTERS + 1, N_STATES + 1))
    for i in range(N_STATES + 1):
        cells = rng.choice(N_LETTERS * N_STATES, size=FAN_OUT, replace=False)
        w = (1.0 - END) * rng.dirichlet(np.ones(FAN_OUT))
        for cell, p in zip(cells, w):
            a, j = divmod(int(cell), N_STATES)
            xi[i, a + 1, j + 1] += p
        xi[i, 0, 0] = END
    return PFA.from_xi(xi)


def _distinct(corpus: Corpus) -> Corpus:
    """``corpus`` without its repeated strings (the first of each kept, in order)."""
    seen, keep = set(), []
    for i, x in enumerate(corpus.strings()):
        key = tuple(int(a) for a in x)
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return corpus.subset(np.asarray(keep, dtype=np.int64))


def data(seed: int, strings: int, heldout: int, test: int):
    """``(pfa, train, held, test, scored)``: the generator of ``seed``, its ``strings + heldout``
    strings (seed + 1) split into training and held-out *training* strings, ``test`` distinct
    test strings (seed + 2; None when 0) and the strings each arm scores (held-out, then test)."""
    pfa = generator(seed)
    sample = pfa.sample(strings + heldout, np.random.default_rng(seed + 1))
    train = sample.subset(np.arange(strings))
    held = sample.subset(np.arange(strings, strings + heldout))
    if not test:
        return pfa, train, held, None, held
    tested = _distinct(pfa.sample(test, np.random.default_rng(seed + 2)))
    scored = Corpus.from_strings(held.strings() + tested.strings(), pfa.alphabet_size)
    return pfa, train, held, tested, scored


def _quantiles(x) -> dict:
    x = np.asarray(x)
    q = np.quantile(x, [0.0, 0.05, 0.5, 0.95, 1.0])
    return dict(zip(("min", "q05", "median", "q95", "max"), (float(v) for v in q)))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strings", type=int, default=2000)
    ap.add_argument("--heldout", type=int, default=500)
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--truncate", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1,
                    help="an arm's two chains in this many processes (the draws do not depend "
                         "on it; CPU seconds then include the workers')")
    ap.add_argument("--test", type=int, default=0)
    ap.add_argument("--arms", default="blocked:10,blocked:100,direct:10,direct:100")
    ap.add_argument("--out", default="benchmarks/results/ipfa_blocked/results.json")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="keep each arm's chain states in DIR/<arm>/ (resume mid-chain)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    check_out(out, out.with_suffix(".md"))  # a file bayesfa did not write is refused
    done = json.loads(out.read_text()) if out.exists() else {"arms": {}}
    command = ("python benchmarks/ipfa_blocked.py " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    done.update(commit=git_commit(), command=command, settings=vars(args))
    pfa, train, held, test, scored = data(args.seed, args.strings, args.heldout, args.test)
    done["data"] = {"train_strings": train.n_strings, "train_tokens": int(train.tokens.size),
                    "heldout_strings": held.n_strings,
                    "generator_heldout_loglik_per_string": float(pfa.log_prob(held).mean())}
    if args.test:
        done["data"]["test_strings_distinct"] = test.n_strings
        solution = pfa.log_prob(test)
    for arm in args.arms.split(","):
        if arm in done["arms"]:
            continue
        sampler, states = arm.split(":")
        split, hold, alpha0, anneal = 0.0, 0, 1.0, (0, 1.0)
        paths = "dense"
        if sampler.startswith("blocked-slice"):  # blocked-slice[-...]: --paths slice
            paths, sampler = "slice", "blocked" + sampler[len("blocked-slice"):]
        if sampler.startswith("blocked-anneal"):  # blocked-annealAsB: A sweeps from b = B
            a, b = sampler[len("blocked-anneal"):].split("s")
            anneal, sampler = (int(a), float(b)), "blocked"
        elif sampler.startswith("blocked-sm"):  # blocked-smR: R split-merge moves per sweep
            split = float(sampler[len("blocked-sm"):])
            sampler = "blocked"
        elif sampler.startswith("blocked-hold"):  # blocked-holdHaA: alpha held at A, H sweeps
            hold, alpha0 = sampler[len("blocked-hold"):].split("a")
            hold, alpha0, sampler = int(hold), float(alpha0), "blocked"
        load0 = os.getloadavg()
        t0 = cpu_seconds()
        res = sample_ipfa(train, states=int(states), iterations=args.sweeps,
                          burn_in=args.sweeps // 2, period=10, chains=2, seed=args.seed,
                          sampler=sampler, truncate=args.truncate if sampler == "blocked" else 0,
                          predict=scored, max_draws=2, split_merge=split, paths=paths,
                          jobs=args.jobs,
                          checkpoint_dir=(None if args.checkpoint_dir is None
                                          else Path(args.checkpoint_dir) / arm),
                          **({"alpha": alpha0, "alpha_hold": hold} if hold else {}),
                          **({"anneal": anneal[0], "anneal_start": anneal[1]} if anneal[0] else {}))
        cpu = cpu_seconds() - t0
        log_mean = np.asarray(res.predict_log_mean)
        test_ratio = (float(score_all_log(log_mean[held.n_strings:], solution).ratio)
                      if args.test else None)
        done["arms"][arm] = {
            "sampler": sampler, "paths": paths, "start_states": int(states),
            "split_merge_per_sweep": split,
            "alpha_hold": hold, "alpha_held_at": alpha0 if hold else None,
            "anneal": list(anneal) if anneal[0] else None,
            "truncate": args.truncate if sampler == "blocked" else 0,
            "states_in_use_per_chain": [_quantiles(ch) for ch in res.n_states],
            "states_in_use_trace": res.n_states.tolist(),
            "alpha_median": float(np.median(res.alpha)), "gamma_median": float(np.median(res.gamma)),
            "heldout_loglik_per_string": float(np.mean(log_mean[:held.n_strings])),
            "test_ratio": test_ratio,
            "cpu_seconds": cpu, "chain_seconds": float(sum(res.info["chain_seconds"])),
            "chains_resumed": int(res.info["chains_resumed"] + res.info["chains_resumed_mid_chain"]),
            "load_average_before": list(load0),
            "load_average_after": list(os.getloadavg())}
        write_out_text(out, json.dumps(done, indent=1))
        print(arm, json.dumps({k: v for k, v in done["arms"][arm].items()
                               if k != "states_in_use_trace"}), flush=True)
    _markdown(done, out.with_suffix(".md"))
    return done


def _markdown(done: dict, path: Path) -> None:
    d = done["data"]
    lines = [f"Command: `{done['command']}` at {done['commit']}", "",
             f"Generated 40-state, 8-letter PFA: {d['train_strings']} training strings "
             f"({d['train_tokens']} tokens), {d['heldout_strings']} held-out training strings; "
             f"the generator's held-out log-likelihood {d['generator_heldout_loglik_per_string']:.4f} "
             f"per string.", "",
             "| arm | truncation | states in use per chain (q05-median-q95) | mean states in use | "
             "held-out loglik / string | test ratio | "
             "alpha (median) | gamma (median) | CPU s | load avg (1 min) before/after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for arm, r in done["arms"].items():
        ranges = "; ".join(f"{q['q05']:.0f}-{q['median']:.0f}-{q['q95']:.0f}"
                           for q in r["states_in_use_per_chain"])
        mean_states = float(np.mean(r["states_in_use_trace"]))
        ratio = "-" if r.get("test_ratio") is None else f"{r['test_ratio']:.4f}"
        cpu = (f"{r['cpu_seconds']:.0f}" if not r.get("chains_resumed")
               else f"at most {r['chain_seconds']:.0f} (chains' wall clocks; resumed)")
        lines.append(f"| {arm} | {r['truncate'] or '-'} | {ranges} | {mean_states:.1f} | "
                     f"{r['heldout_loglik_per_string']:.4f} | {ratio} | {r['alpha_median']:.3g} | "
                     f"{r['gamma_median']:.3g} | {cpu} | "
                     f"{r['load_average_before'][0]:.1f}/{r['load_average_after'][0]:.1f} |")
    write_out_text(path, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
