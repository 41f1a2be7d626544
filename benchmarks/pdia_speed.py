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
from a saved state (wall and thread CPU time), and ``--state FILE --profile`` times the
pieces of a proposal on it (what bounds the sweep).

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
import platform
import time
from pathlib import Path

import numpy as np
from numba import njit

from bayesfa.methods import get_method
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

#: the arrays of :class:`bayesfa.samplers.pdfa.ChainState` that a saved chain state holds
STATE_KEYS = ("delta", "seat", "cnt", "ctot", "cnt2", "ctot2", "vis", "changed", "newq", "news",
              "oq", "os", "oseat", "nj", "v", "mu", "tabs", "col_tabs", "col_T", "sts", "meta",
              "lmu", "lg")


def new_chain(corpus, seed: int):
    """A PDIA chain on ``corpus`` as ``pdia`` starts it (default options: every hyperparameter
    sampled from its default start, state capacity of :func:`bayesfa.samplers.pdia.state_capacity`,
    one state besides q0)."""
    from bayesfa.samplers import pdfa as P
    from bayesfa.samplers.pdia import state_capacity
    from bayesfa.samplers._pdfa_kernel import N_STATS

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

    from bayesfa.samplers import pdfa as P

    z = np.load(path)
    data = P.as_symbols(corpus, False)
    st = P.ChainState(P.CRF, data, int(z["delta"].shape[0]))
    for k in STATE_KEYS:
        if getattr(st, k).shape != z[k].shape:
            raise SystemExit(f"{path}: saved on other data ({k} {z[k].shape})")
        getattr(st, k)[...] = z[k]
    rng = np.random.default_rng()
    rng.bit_generator.state = json.loads(str(z["rng"]))
    return {"state": st, "hyp": z["hyp"].copy(), "fixed": z["fixed"].copy(),
            "stats": z["stats"].copy(), "rng": rng, "sweeps": int(z["sweeps"]),
            "log": [tuple(r) for r in z["log"]]}


def n_states(chain) -> int:
    from bayesfa.samplers._pdfa_kernel import n_states_used

    st = chain["state"]
    return int(n_states_used(st.ctot, int(st.meta[6])))


def run_sweeps(chain, n: int) -> tuple[float, float]:
    """``n`` sweeps as ``pdia`` runs them in burn-in (one move per instantiated transition
    and one per table); returns ``(wall seconds, CPU seconds of this thread)`` (the CPU time
    is what a shared, loaded machine does not inflate)."""
    from bayesfa.samplers import pdfa as P

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
        wall, cpu = run_sweeps(chain, n)
        walls.append(wall / n)
        cpus.append(cpu / n)
    print(f"# {n_states(chain)} states at the end; seconds per sweep (best, median of repeats)")
    for name, t in (("wall", walls), ("CPU", cpus)):
        best, med = min(t), float(np.median(t))
        print(f"{name:>5} s/sweep {best:.4f} {med:.4f}   Java/ours "
              f"{JAVA_SECONDS_PER_SWEEP / best:.1f} {JAVA_SECONDS_PER_SWEEP / med:.1f}")
    # what bounds it: every proposal re-walks the whole data (eval_path); count them
    hi = int(st.meta[6])
    proposals = int(st.nj[1:].sum()) + int(st.meta[2])
    floor = floor_seconds(st.data.sym, st.delta[:hi], repeats=20)
    print(f"# proposals per sweep {proposals} (transitions + tables), each walking all "
          f"{st.data.sym.size} tokens and clearing {hi} x {st.delta.shape[1]} counts; floor "
          f"(one path pass) {floor * 1e3:.3f} ms; best CPU sweep = {min(cpus) / floor:.0f} "
          f"passes = {min(cpus) / floor / proposals:.2f} passes per proposal")


def profile_parts(path: Path, corpus, repeats: int = 200) -> None:
    """CPU time per call of the pieces every proposal runs (on the saved state, nothing
    changed: the path instantiates nothing new), times the proposals of one sweep: the
    path walk with the clearing of the proposal's counts (``eval_path``), the comparison of
    the counts (``delta_loglik``), the scan for entries the path no longer visits
    (``_collect_old``), and the ambiguity rule (``_ambiguous``, run only when that scan finds
    some: it allocates and zeroes arrays of the table capacity)."""
    from bayesfa.samplers import _pdfa_kernel as K

    chain = load_chain(path, corpus)
    st, hyp = chain["state"], chain["hyp"]
    rng = np.random.default_rng(0)
    hi = int(st.meta[6])
    proposals = int(st.nj[1:].sum()) + int(st.meta[2])
    sym, nf = st.data.sym, st.data.nf

    def ev():
        K.eval_path(1, 0, sym, nf, st.delta, st.seat, st.cnt2, st.ctot2, st.vis, st.newq,
                    st.news, *st.seating(), hyp, rng)

    parts = {
        "eval_path (walk + clear)": ev,
        "delta_loglik": lambda: K.delta_loglik(st.cnt, st.ctot, st.cnt2, st.ctot2, hi, st.lg,
                                               st.changed),
        "_collect_old": lambda: K._collect_old(st.delta, st.seat, st.vis, st.meta[7], hi, nf,
                                               st.oq, st.os, st.oseat),
        "_ambiguous": lambda: K._ambiguous(-1, -1, -1, 1, st.delta, st.seat, st.vis, st.meta[7],
                                           hi, nf, 0, st.newq, st.news, st.tabs),
    }
    print(f"# per-call CPU time on {path.name} ({n_states(chain)} states, hi {hi}, capacity "
          f"{st.delta.shape[0]} x {st.delta.shape[1]}), x {proposals} proposals per sweep")
    for name, fn in parts.items():
        fn()
        c0 = time.thread_time()
        for _ in range(repeats):
            fn()
        per = (time.thread_time() - c0) / repeats
        print(f"{name:>26} {per * 1e3:8.3f} ms/call {per * proposals:8.3f} s/sweep if every "
              f"proposal runs it")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


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
