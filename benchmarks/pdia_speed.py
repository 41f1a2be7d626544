"""Seconds per sweep of the PDIA sampler (``--method pdia``) on the paper's Alice in Wonderland
training set, and the ratio to the authors' Java sampler (3.3 s per sweep, issue 9).

Data: ``../shared/data/text/aiw.train`` (100 sentences, one a line, letters a-z and space: 27
letters, 9,986 characters), read with :func:`bayesfa.textdata.load_lines`; the state resets
to q0 at each sentence and the end of a sentence is a symbol back to q0 (28 symbols).

What is timed. The sampler is driven only through the registry (``get_method("pdia").fit``).
A chain's first sweeps are cheaper than later ones (the automaton grows from a few states to
a few hundred), so besides the sampler's own average (``info["seconds_per_sweep"]`` over all
sweeps of a fit) we report the *marginal* cost of sweeps ``I1+1 .. I2``: with the same seed a
fit of ``I2`` sweeps repeats the first ``I1 - 1`` sweeps of the shorter fit exactly (same
seed, same chain, bit for bit), so ``(t(I2) - t(I1)) / (I2 - I1)`` is the cost of the later
sweeps. Every sweep but a fit's last is a burn-in sweep: ``pdia`` freezes its number of
random-scan moves per sweep at the end of burn-in, and a fit with ``--burn-in 0`` (as this
benchmark ran before 2026-11-23 16:30) makes only the one-state start's few dozen moves per
sweep, not a full sweep.

At the paper's size (about 365 states): ``--state FILE --grow N`` runs (or resumes) one chain
and saves its whole state every ``--block`` sweeps; ``--state FILE`` alone times full sweeps
from a saved state (wall and thread CPU time; the positions re-walked and the entries drawn
just in time per proposal), and ``--state FILE --profile`` splits a sweep's CPU time into
entry moves, table moves and the rest (what bounds the sweep).

Floor loop beside it: one pass of the deterministic automaton of the final sample over the
training data (``q = delta[q, x]``, counting ``c[q, x]``), the work of one full likelihood
evaluation. A sweep proposes a new value for every instantiated transition and re-walks the
data that the proposal affects; "passes/sweep" = sweep / floor says how many full passes one
sweep costs, i.e. how much of a sweep is path re-evaluation.

    python benchmarks/pdia_speed.py [--quick] [--method pdia] [--data FILE]
    python benchmarks/pdia_speed.py --state FILE [--grow N [--block B] | --profile |
                                    --time-sweeps K --repeats R]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from bayesfa.methods import get_method
from bayesfa.samplers.pdia._crf_kernel import sample_dish
from bayesfa.samplers.pdia._pdfa_kernel import ST_JIT, ST_WALKED
from machine import cpu_name  # benchmarks/ is on sys.path when this script runs
from bayesfa.textdata import LOWERCASE_AND_SPACE, load_lines

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "text" / "aiw.train"
JAVA_SECONDS_PER_SWEEP = 3.3     # the authors' Java sampler on this data and machine type (issue 9)


@njit(cache=True)
def path_pass(tokens, delta, counts):
    """Walk the sentences through ``delta`` (symbol 0 ends a sentence, back to q0) and count
    the emissions; returns the number of transitions that were missing (-1)."""
    counts[:] = 0
    q = 0
    missing = 0
    for t in range(tokens.shape[0]):
        x = tokens[t]
        counts[q, x] += 1
        if x == 0:
            q = 0
        else:
            r = delta[q, x]
            if r < 0:
                missing += 1
                r = 0
            q = r
    return missing


def floor_seconds(tokens: np.ndarray, delta: np.ndarray, repeats: int) -> float:
    counts = np.zeros(delta.shape, dtype=np.int64)
    delta = np.ascontiguousarray(delta, dtype=np.int64)
    path_pass(tokens, delta, counts)                      # compile / load from cache
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        path_pass(tokens, delta, counts)
        best = min(best, time.perf_counter() - t0)
    return best


def fit(method, corpus, iterations: int, seed: int):
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    # all sweeps but the last are burn-in: a sweep after burn-in makes as many random-scan
    # moves as there were transitions / tables at its end (with --burn-in 0: the start's few)
    options = vars(parser.parse_args(["--iterations", str(iterations), "--burn-in",
                                      str(iterations - 1), "--period", "1", "--chains", "1"]))
    t0 = time.perf_counter()
    result = method.fit(corpus, options, seed, False)
    return time.perf_counter() - t0, result


# -- a long chain, saved and resumed; timing from a saved chain state ------------------------

#: the arrays of :class:`bayesfa.samplers.pdia.pdfa.ChainState` that a saved chain state holds
STATE_KEYS = ("delta", "seat", "cnt", "ctot", "cnt2", "ctot2", "vis", "changed", "newq", "news",
              "oq", "os", "oseat", "nj", "v", "mu", "tabs", "col_tabs", "col_T", "sts", "meta",
              "lmu", "lg")


def new_chain(corpus, seed: int):
    """A PDIA chain on ``corpus`` as ``pdia`` starts it (default options: every hyperparameter
    sampled from its default start, state capacity of :func:`bayesfa.samplers.pdia.pdia.state_capacity`,
    one state besides q0)."""
    from bayesfa.samplers.pdia import pdfa as P
    from bayesfa.samplers.pdia.pdia import state_capacity
    from bayesfa.samplers.pdia._pdfa_kernel import N_STATS

    data = P.as_symbols(corpus, False)
    st = P.ChainState(P.CRF, data, state_capacity(corpus, {}))
    hyp, fixed = P.hyper_values(P.CRF, {})
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    P._init_chain(st, hyp, rng, 0)
    return {"state": st, "hyp": hyp, "fixed": fixed, "stats": np.zeros(N_STATS), "rng": rng,
            "sweeps": 0, "log": []}


def save_chain(path: Path, chain) -> None:
    """Every array of the chain, its hyperparameters, move counts and generator state
    (atomically), so that :func:`load_chain` continues it bit for bit."""
    import json

    from bayesfa.rundir import atomic_write

    st = chain["state"]

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **{k: getattr(st, k) for k in STATE_KEYS}, hyp=chain["hyp"],
                     fixed=chain["fixed"], stats=chain["stats"], sweeps=chain["sweeps"],
                     log=np.array(chain["log"], dtype=float).reshape(-1, 3),
                     rng=json.dumps(chain["rng"].bit_generator.state))

    atomic_write(path, write)


def load_chain(path: Path, corpus):
    """The chain saved by :func:`save_chain` (on the same ``corpus``)."""
    import json

    from bayesfa.samplers.pdia import pdfa as P
    from bayesfa.samplers.pdia._pdfa_kernel import N_STATS

    z = np.load(path)
    data = P.as_symbols(corpus, False)
    st = P.ChainState(P.CRF, data, int(z["delta"].shape[0]))
    for k in STATE_KEYS:
        if getattr(st, k).shape != z[k].shape:
            raise SystemExit(f"{path}: saved on other data ({k} {z[k].shape})")
        getattr(st, k)[...] = z[k]
    rng = np.random.default_rng()
    rng.bit_generator.state = json.loads(str(z["rng"]))
    stats = np.zeros(N_STATS)  # a state saved before a counter was added: the first ones
    stats[:z["stats"].size] = z["stats"]
    return {"state": st, "hyp": z["hyp"].copy(), "fixed": z["fixed"].copy(),
            "stats": stats, "rng": rng, "sweeps": int(z["sweeps"]),
            "log": [tuple(r) for r in z["log"]]}


def n_states(chain) -> int:
    from bayesfa.samplers.pdia._pdfa_kernel import n_states_used

    st = chain["state"]
    return int(n_states_used(st.ctot, int(st.meta[6])))


def run_sweeps(chain, n: int) -> tuple[float, float]:
    """``n`` sweeps as ``pdia`` runs them in burn-in (one move per instantiated transition
    and one per table); returns ``(wall seconds, CPU seconds of this thread)`` (the CPU time
    is what a shared, loaded machine does not inflate)."""
    from bayesfa.samplers.pdia import pdfa as P

    t0, c0 = time.perf_counter(), time.thread_time()
    P._sweeps(chain["state"], chain["hyp"], chain["fixed"], n, chain["rng"], chain["stats"],
              {}, 0)
    seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
    chain["sweeps"] += n
    return seconds, cpu


def grow(path: Path, corpus, sweeps: int, block: int, seed: int) -> None:
    """Run (or resume) one chain to ``sweeps`` sweeps, saving it every ``block`` sweeps and
    logging ``(sweeps, states, seconds per sweep)`` of each block."""
    chain = load_chain(path, corpus) if path.is_file() else new_chain(corpus, seed)
    while chain["sweeps"] < sweeps:
        n = min(block, sweeps - chain["sweeps"])
        sec, cpu = run_sweeps(chain, n)
        chain["log"].append((chain["sweeps"], n_states(chain), cpu / n))
        save_chain(path, chain)
        print(f"{chain['sweeps']:>7} sweeps {n_states(chain):>5} states {sec / n:.4f} s/sweep "
              f"(CPU {cpu / n:.4f})", flush=True)


def time_at(path: Path, corpus, n: int, repeats: int) -> None:
    """Seconds per sweep of ``n`` sweeps from the saved chain state (each repeat starts from
    the same saved state, so the repeats time the same sweeps)."""
    walls, cpus = [], []
    start = load_chain(path, corpus)
    st = start["state"]
    print(f"# {path.name}: after {start['sweeps']} sweeps, {n_states(start)} states, "
          f"{int(st.nj[1:].sum())} transitions, {int(st.meta[2])} tables; {n} sweeps from "
          f"there, {repeats} repeats; {cpu_name()}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for _ in range(repeats):
        chain = load_chain(path, corpus)
        run_sweeps(load_chain(path, corpus), 1)  # load the compiled kernel before timing
        wall, cpu = run_sweeps(chain, n)
        walls.append(wall / n)
        cpus.append(cpu / n)
    print(f"# {n_states(chain)} states at the end; seconds per sweep (best, median of repeats)")
    for name, t in (("wall", walls), ("CPU", cpus)):
        best, med = min(t), float(np.median(t))
        print(f"{name:>5} s/sweep {best:.4f} {med:.4f}   Java/ours "
              f"{JAVA_SECONDS_PER_SWEEP / best:.1f} {JAVA_SECONDS_PER_SWEEP / med:.1f}")
    # what bounds it: the positions the proposals re-walk and the entries they draw
    hi = int(st.meta[6])
    proposals = int(st.nj[1:].sum()) + int(st.meta[2])
    floor = floor_seconds(st.data.sym, st.delta[:hi], repeats=20)
    done = chain["stats"] - start["stats"]
    n_prop = done[1] + done[3]
    print(f"# {proposals} proposals per sweep at the start (transitions + tables); per proposal "
          f"{done[ST_WALKED] / n_prop:.1f} positions re-walked (of {st.data.sym.size}) and "
          f"{done[ST_JIT] / n_prop:.1f} entries drawn just in time; floor (one path pass) "
          f"{floor * 1e3:.3f} ms; best CPU sweep = {min(cpus) / floor:.0f} passes")


def profile_parts(path: Path, corpus, sweeps: int = 10) -> None:
    """Where a full sweep's CPU time goes, on the saved state: ``sweeps`` sweeps of entry moves
    only (as many as there are transitions), of table moves only (as many as tables, the
    hyperparameters fixed in both), of the hyperparameter moves alone (with the path index
    rebuilt, as every sweep does), and full sweeps; with the positions each proposal
    re-walked and the entries it drew just in time (``_pdfa_kernel.walk_changes``), and
    the CPU time per call of two loops a proposal runs: picking an instantiated entry by
    rejection, and a dish draw (``_crf_kernel.sample_dish``)."""
    from bayesfa.samplers.pdia import pdfa as P

    start = load_chain(path, corpus)
    n_tr, n_tab = int(start["state"].nj[1:].sum()), int(start["state"].meta[2])
    print(f"# CPU time of the thread on {path.name} ({n_states(start)} states, {n_tr} "
          f"transitions, {n_tab} tables), {sweeps} sweeps each after one untimed")
    print(f"{'moves':>12} {'ms/sweep':>9} {'proposals':>9} {'us/proposal':>11} "
          f"{'re-walked':>9} {'drawn':>6}  (per proposal)")
    for name, opts, moves, free in (("entry", {"table_moves": False}, (n_tr, 0), False),
                                     ("table", {}, (0, n_tab), False),
                                     ("hyper+index", {"table_moves": False}, (0, 0), True),
                                     ("full sweep", {}, (-1, -1), True)):
        chain = load_chain(path, corpus)
        st = chain["state"]
        fixed = chain["fixed"] if free else np.ones(5, dtype=np.int64)
        P._sweeps(st, chain["hyp"], fixed, 1, chain["rng"], chain["stats"], opts, 0, moves)
        s0 = chain["stats"].copy()
        c0 = time.thread_time()
        P._sweeps(st, chain["hyp"], fixed, sweeps, chain["rng"], chain["stats"], opts, 0, moves)
        per = (time.thread_time() - c0) / sweeps
        d = (chain["stats"] - s0) / sweeps
        n_prop = d[1] + d[3]
        line = f"{name:>12} {per * 1e3:9.2f} {n_prop:9.0f}"
        if n_prop:
            line += (f" {per / n_prop * 1e6:11.1f} {d[ST_WALKED] / n_prop:9.1f} "
                     f"{d[ST_JIT] / n_prop:6.1f}")
        print(line)
    st, hyp = start["state"], start["hyp"]
    rng = np.random.default_rng(0)
    for name, fn in (("pick an entry", _pick_entries), ("dish draw", _dish_draws)):
        args = ((st.delta, int(st.meta[6]), 1) if fn is _pick_entries
                else (st.sts, st.meta, hyp))
        fn(10, rng, *args)
        c0 = time.thread_time()
        fn(20_000, rng, *args)
        print(f"# {name}: {(time.thread_time() - c0) / 20_000 * 1e6:.2f} us per call")


@njit(cache=True)
def _pick_entries(n, rng, delta, hi, nf):
    """``n`` uniform picks of an instantiated entry as the PDIA sweep makes them."""
    acc = 0
    for _ in range(n):
        while True:
            q = int(rng.integers(0, hi))
            j = int(rng.integers(nf, delta.shape[1]))
            if delta[q, j] >= 0:
                break
        acc += q
    return acc


@njit(cache=True)
def _dish_draws(n, rng, sts, meta, hyp):
    """``n`` dish draws of a new table on a copy of ``meta`` (the state is not changed)."""
    acc = 0
    m = meta.copy()
    for _ in range(n):
        m[:] = meta
        acc += sample_dish(rng, sts, m, hyp, 0, sts.shape[1])
    return acc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="I1 = 10, I2 = 30 sweeps")
    parser.add_argument("--sweeps", type=int, nargs=2, default=None, metavar=("I1", "I2"),
                        help="the two fit lengths; default 50 150 (--quick: 10 30)")
    parser.add_argument("--method", default="pdia", help="registry name; default pdia")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--state", type=Path, default=None,
                        help="a saved chain state (.npz): with --grow, run or resume a long chain "
                             "into it; alone, time sweeps from it")
    parser.add_argument("--grow", type=int, default=None, metavar="SWEEPS",
                        help="run (or resume) the chain of --state to SWEEPS sweeps")
    parser.add_argument("--block", type=int, default=250, help="--grow: save every BLOCK sweeps")
    parser.add_argument("--time-sweeps", type=int, default=20,
                        help="--state alone: sweeps timed from the saved state; default 20")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="--state: CPU time of the pieces of a proposal (profile_parts)")
    args = parser.parse_args(argv)
    if args.state is not None:
        corpus, _ = load_lines(args.data, LOWERCASE_AND_SPACE)
        if args.profile:
            profile_parts(args.state, corpus)
        elif args.grow:
            grow(args.state, corpus, args.grow, args.block, args.seed)
        else:
            time_at(args.state, corpus, args.time_sweeps, args.repeats)
        return
    i1, i2 = args.sweeps or ((10, 30) if args.quick else (50, 150))
    if not 0 < i1 < i2:
        raise SystemExit("need 0 < I1 < I2")
    if not args.data.is_file():
        raise SystemExit(f"{args.data} not found (the shared data folder is needed)")
    corpus, _ = load_lines(args.data, LOWERCASE_AND_SPACE)
    method = get_method(args.method)
    fit(method, corpus.subset(np.arange(5)), 3, args.seed)        # compile (or load the cache)
    t1, _ = fit(method, corpus, i1, args.seed)
    t2, result = fit(method, corpus, i2, args.seed)
    marginal = (t2 - t1) / (i2 - i1)
    average = float(result.info["seconds_per_sweep"])
    delta = result.arrays["delta"][0, -1]
    floor = floor_seconds(corpus.tokens, delta, repeats=20)
    n_states = int(result.trace["n_states"][0, -1])
    print(f"# {args.method} sweep cost on {args.data.name}: {cpu_name()}, {os.cpu_count()} cores, "
          f"one thread, seed {args.seed}, {time.strftime('%Y-%m-%d')} (shared machine: noisy)")
    print(f"# {corpus.n_strings} sentences, {corpus.n_tokens - corpus.n_strings} characters, "
          f"{corpus.alphabet_size} letters + end; Java sampler: {JAVA_SECONDS_PER_SWEEP} s/sweep")
    print(f"{'sweeps':>9} {'states':>6} {'s/sweep':>9} {'Java/ours':>9} {'floor ms':>9} "
          f"{'passes/sweep':>12}")
    print(f"{'1-' + str(i2):>9} {n_states:>6} {average:>9.4f} {JAVA_SECONDS_PER_SWEEP / average:>9.1f} "
          f"{floor * 1e3:>9.3f} {average / floor:>12.0f}   (sampler's average over all sweeps)")
    print(f"{f'{i1 + 1}-{i2}':>9} {n_states:>6} {marginal:>9.4f} {JAVA_SECONDS_PER_SWEEP / marginal:>9.1f} "
          f"{floor * 1e3:>9.3f} {marginal / floor:>12.0f}   (marginal: later sweeps only)")


if __name__ == "__main__":
    main()
