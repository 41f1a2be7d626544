"""The iPFA blocked sampler's step 2, dense FFBS against the slice-sampled FFBS (``--paths
slice``, issue 38), on one chain state, in one process: CPU seconds a pass, their ratio, the
cells the slice filters looked at a token, and the fraction of positions each moved.

    python benchmarks/ipfa_slice.py --problem 43 --states 50 --sweeps 20 400 \
        --data ../shared/data/pautomac --out benchmarks/results/ipfa-slice/p43.json

For each number of sweeps S: one blocked chain (the default options: dense paths, the annealed
start over the first half, alpha and gamma sampled; seed 1) of S sweeps from ``--states``
states on the problem's training strings, its state (``z``, ``beta``, ``alpha``) taken from
its checkpoint; then from that state ``theta`` is drawn once (the sweep's step 1) and each
draw of step 2 is run on it: the dense FFBS (``_ffbs_kernel.ffbs_paths``) ``--reps`` times and
the slice FFBS (``_ffbs_kernel.slice_paths``, its rows sorted within the pass) ``--reps``
times, each from the chain's path (thread CPU seconds, the first pass of each untimed: numba
compiles or loads). The ratio is dense over slice. Then where a whole sweep's CPU goes, for each
draw of step 2: step 0 (the direct sweep over the ``L`` labels, as
``_ipfa_blocked_kernel.build_hybrid`` runs it) and the blocked steps 1-6 (``build_sweeps``),
each ``--reps`` times from the chain's state restored afresh; a hybrid sweep is their sum, and
steps 1 and 3-6 the blocked steps less step 2. Nothing here is scored on test strings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_text  # noqa: E402  (this folder's modules)
from machine import git_commit  # noqa: E402


def chain_state(corpus, states: int, sweeps: int, seed: int) -> dict:
    """The state after ``sweeps`` sweeps of one default blocked chain (its checkpoint)."""
    import warnings

    from bayesfa.samplers.pfa.ipfa import sample_ipfa

    with tempfile.TemporaryDirectory() as work:
        t0 = time.thread_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the truncation may bind: recorded below
            res = sample_ipfa(corpus, states=states, iterations=sweeps, burn_in=sweeps // 2,
                              period=max(1, sweeps // 20), chains=1, seed=seed,
                              checkpoint_dir=work)
        cpu = time.thread_time() - t0
        saved = np.load(next(Path(work).glob("*.npz")))
        return {"z": np.asarray(saved["z"], dtype=np.int32), "beta": np.asarray(saved["beta"]),
                "alpha": float(saved["hyper"][0]), "gamma": float(saved["hyper"][1]),
                "states_in_use": int(res.n_states[0, -1]), "truncate": int(res.info["truncate"]),
                "chain_cpu_seconds": cpu}


def timed(fn, reps: int) -> float:
    fn()  # compiled or loaded from numba's cache
    t0 = time.thread_time()
    for _ in range(reps):
        fn()
    return (time.thread_time() - t0) / reps


def compare(corpus, state: dict, reps: int, seed: int) -> dict:
    from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions
    from bayesfa.samplers.pfa._ffbs_kernel import ffbs_paths, slice_paths
    from bayesfa.samplers.pfa._ipfa_blocked_kernel import draw_theta, scratch

    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    n_st = state["beta"].size - 1
    a = corpus.alphabet_size + 1
    c = np.zeros((n_st + 1, a, n_st + 1), dtype=np.float32)
    ct = np.zeros((a, n_st + 1, n_st + 1), dtype=np.float32)
    ci = np.zeros(n_st + 1, dtype=np.float32)
    count_transitions(tokens, state["z"], c, ct, ci)
    theta, filt = scratch(tokens, n_st, a)
    rng = np.random.default_rng(seed)
    draw_theta(c, state["beta"], state["alpha"], rng, theta)
    out = {}
    for name, fn in (("dense", ffbs_paths), ("slice", slice_paths)):
        z = state["z"].copy()
        last = {}

        def one():
            z[:] = state["z"]
            last["r"] = fn(theta, tokens, z, filt, rng)

        out[f"{name}_cpu_seconds"] = timed(one, reps)
        out[f"{name}_moved"] = float(np.mean(z != state["z"]))
        if name == "slice":
            out["slice_cells_per_token"] = float(last["r"]) / tokens.size
    out["ratio"] = out["dense_cpu_seconds"] / out["slice_cpu_seconds"]
    out.update(sweep_profile(corpus, state, reps, seed))
    return out


def sweep_profile(corpus, state: dict, reps: int, seed: int) -> dict:
    """CPU seconds of a sweep's parts from the chain's state (the sampler's default priors:
    alpha and gamma sampled), each timed on its own from a chain restored afresh: step 0 (the
    weights refreshed, then one direct sweep over the ``L`` labels, as ``build_hybrid`` runs
    it) and the blocked steps 1-6 for each draw of step 2; a sweep is their sum."""
    from bayesfa.samplers.pfa._ipfa_blocked_kernel import build_sweeps
    from bayesfa.samplers.pfa._ipfa_kernel import build_sweeps as build_direct
    from bayesfa.samplers.pfa._ipfa_kernel import refresh_weights
    from bayesfa.samplers.pfa.ipfa import ALPHA_PRIOR, GAMMA_PRIOR, _BlockedChain, parse_gamma_prior

    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    n_sym = corpus.alphabet_size + 1
    priors = np.asarray([*parse_gamma_prior(ALPHA_PRIOR), *parse_gamma_prior(GAMMA_PRIOR)],
                        dtype=np.float64)
    rng = np.random.default_rng(seed)

    def fresh():
        return _BlockedChain.restore(tokens, n_sym, state["z"], state["beta"],
                                     np.array([state["alpha"], state["gamma"]]),
                                     state["truncate"])

    direct = build_direct(None)
    ch = fresh()

    def step0():
        refresh_weights(ch.ci, ch.recip, ch.bk, ch.beta, ch.meta, ch.hyper[0], n_sym, True)
        direct(1, 0, ch.positions, ch.uniforms, ch.tokens, ch.z, ch.c, ch.ct, ch.ci, ch.recip,
               ch.bk, ch.beta, ch.meta, ch.mcol, ch.mrow, ch.hyper, priors, rng, True)

    out = {"step0_cpu_seconds": timed(step0, reps)}
    for name in ("dense", "slice"):
        blocked = build_sweeps(None, name)
        ch = fresh()
        out[f"{name}_steps1to6_cpu_seconds"] = timed(
            lambda: blocked(1, ch.tokens, ch.z, ch.c, ch.ct, ch.ci, ch.beta, ch.meta, ch.mcol,
                            ch.mrow, ch.hyper, priors, rng, ch.theta, ch.filt), reps)
        out[f"{name}_sweep_cpu_seconds"] = (out["step0_cpu_seconds"]
                                            + out[f"{name}_steps1to6_cpu_seconds"])
    return out


def main(argv=None) -> int:
    from bayesfa.pautomac import read_sample

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=int, default=43)
    p.add_argument("--states", type=int, default=50)
    p.add_argument("--sweeps", type=int, nargs="+", default=[20, 400])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    command = f"python benchmarks/{Path(__file__).name} {shown}"
    check_out(args.out)  # a file bayesfa did not write is refused before any work
    corpus = read_sample(Path(args.data) / f"{args.problem}.pautomac.train")
    rows = []
    for sweeps in args.sweeps:
        state = chain_state(corpus, args.states, sweeps, args.seed)
        row = {"sweeps": sweeps, **{k: state[k] for k in ("states_in_use", "truncate", "alpha",
                                                         "gamma", "chain_cpu_seconds")},
               **compare(corpus, state, args.reps, args.seed)}
        rows.append(row)
        print(f"after {sweeps} sweeps: {row['states_in_use']} of {row['truncate']} states in use, "
              f"alpha {row['alpha']:.3g}; a pass dense {row['dense_cpu_seconds']:.3f} CPU s, slice "
              f"{row['slice_cpu_seconds']:.3f} (ratio {row['ratio']:.2f}; "
              f"{row['slice_cells_per_token']:.0f} cells a token); moved {row['dense_moved']:.3f} "
              f"and {row['slice_moved']:.3f}; step 0 {row['step0_cpu_seconds']:.3f}, steps 1-6 dense "
              f"{row['dense_steps1to6_cpu_seconds']:.3f}, slice {row['slice_steps1to6_cpu_seconds']:.3f}",
              flush=True)
    write_out_text(args.out, json.dumps({"command": command, "commit": git_commit(),
                                         "problem": args.problem, "tokens": int(corpus.n_tokens),
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
