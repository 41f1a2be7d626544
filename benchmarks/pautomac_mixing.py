"""Why single CGS-PFA chains end in poor modes, and what helps at equal sweeps (issue 22, item 2).

    nice -n 19 python benchmarks/pautomac_mixing.py [--problems 5,43] [--seeds 0,1,2,3,4]
        [--strategies single,eq6,screen,heldout-weighted,anneal,split-merge] [--sweeps 10000]
        [--chains 4] [--screen-fraction 0.1] [--anneal 2000] [--anneal-start 0.1]
        [--split-merge 0.1] [--split-merge-scans 3] [--period 100] [--beta 0.05]
        [--workers 1]
        [--data ../shared/data/pautomac] [--out benchmarks/results/pautomac_mixing.json]

Each unit (problem x strategy x seed) runs CGS-PFA (Shibata & Yoshinaka 2013, Algorithm 1) at
the paper's N of Table 3 (:data:`pautomac_table3.PAPER_TABLE3`) and ``--beta``, for a total of
``--sweeps`` sweeps (default 10,000: one Table-3 chain), by one of six strategies (k =
``--chains``):

``single``
    one chain of ``--sweeps`` sweeps on all training strings, Eq. 6 over the draws of its second
    half (burn-in L/2, one draw every ``--period`` sweeps: Table 3's protocol; the same seed
    gives the chain of ``pautomac_table3.py``'s row).
``eq6-k``
    k chains of ``--sweeps / k`` sweeps each on all training strings (chains ``0..k-1`` of
    ``SeedSequence(seed)``, as ``--chains k``), each chain's second-half draws, the chains
    mixed by Eq. 6 with equal weights (:func:`mix_equal`). This is posterior sampling.
``screen-k``
    k chains of ``--screen-fraction x --sweeps`` sweeps each on the training strings less a
    held-out slice (5% of the TRAINING strings, at most 1000,
    :func:`bayesfa.samplers.pfa.cgs_pfa.holdout_split` from the seed, as ``--auto`` holds them
    out; the test and solution files are never used for a decision). The chain with the highest
    held-out predictive log-likelihood (Eq. 6 of each held-out string over its second-half
    draws, summed) is kept; it is continued on ALL training strings, as ``--auto`` continues its
    winner (:func:`bayesfa.samplers.pfa.auto.embed_path`, then
    :data:`~bayesfa.samplers.pfa.auto.WARM_SWEEPS` Gibbs sweeps over the held-out strings'
    positions only, :func:`~bayesfa.samplers.pfa.auto.warm_path`), for the remaining
    ``--sweeps - k x screen`` sweeps, and Eq. 6 is over the second half of that continuation.
    This is MODEL SELECTION among chains (a chain is picked by held-out data), not posterior
    sampling: the answer is the posterior predictive of one chain's mode.
``heldout-weighted-k``
    as ``eq6-k`` but the chains sample the training strings less the held-out slice, and their
    Eq. 6 predictions are mixed with weights ``softmax_c(H_c)`` (:func:`heldout_weights`,
    :func:`mix_weighted`), ``H_c`` chain c's held-out predictive log-likelihood. This is MODEL
    AVERAGING (pseudo-Bayesian model averaging of the chains as separate models, weighted by
    held-out likelihood), NOT posterior sampling: Eq. 6 weights every draw equally, and the
    weights here do not converge to the posterior's as the chains lengthen. With held-out
    sums that differ by many nats the weights are almost one-hot (then it is selection too).
    The unit also records the equal-weight mix of the same chains (``equal_weight_excess``), so
    the weighting is compared without the 5% of training strings it costs.
``anneal``
    ``single``'s chain (same seed, same random start) with its first ``--anneal`` sweeps
    tempered (``bayesfa fit --method cgs-pfa --anneal``: the Gibbs sweep of ``Pr(alpha, z)^b``,
    Eq. 4 tempered, ``b`` rising geometrically from ``--anneal-start`` to 1), then untempered
    to ``--sweeps``; its log joint is recorded from sweep ``--anneal`` on (the tempered sweeps
    are burn-in), and Eq. 6 is over the same second-half draws as ``single``'s. This is
    posterior sampling (every draw is from the untempered chain); only the start differs.
``split-merge``
    ``single``'s chain (same seed, same random start) with ``--split-merge`` split-merge moves
    per sweep (``bayesfa fit --method cgs-pfa --split-merge``, each launched by
    ``--split-merge-scans`` restricted Gibbs scans; Metropolis-Hastings moves that keep Eq. 4's
    posterior, checked by ``bayesfa validate cgs-pfa``). Posterior sampling; the same sweeps,
    so its CPU is ``single``'s plus the moves' (reported per unit).

Measuring why. Every chain records its collapsed log joint ``log Pr(alpha, z)`` of Eq. 4 (the
trace's ``log_joint``, as ``bayesfa diagnose`` reads it) every ``--period`` sweeps from its
first sweep (the chains record from sweep 0 with burn-in 0; a draw is a ``--period`` sweeps
then a record, so this changes nothing in the chain, and only the second half enters Eq. 6):
``final_log_joint``, ``mean_log_joint`` (over its Eq. 6 draws) and ``log_joint_trace``, and its
own Eq. 6 score. For ``single`` (all training strings, so log joints compare across seeds) the
table gives Spearman's rho between final log joint and score - min across seeds
(:func:`scipy.stats.spearmanr`): rho < 0 (chains that score worse sit at a lower log joint)
says the posterior prefers the good mode and the poor chains are stuck (a mixing failure);
rho >= 0 says the poor modes are not less probable under the posterior at this N and beta
(the model, not the sampler). With 3 seeds rho takes few values; use 5 or more.

Equal CPU is checked, not assumed: each unit records its process CPU seconds
(:func:`time.process_time` of the worker, fit and predictions, BLAS on one thread as
``--auto`` runs) and the sweeps it ran. Sweeps of screen and heldout-weighted chains cover 95%
of the tokens, so they cost a little less each. The same seed gives strategies related chains
(paired comparison): chain 0 of ``eq6-k`` is the first ``sweeps / k`` sweeps of ``single``'s
chain, and the screen chains are the first sweeps of the heldout-weighted chains.

Units run in ``--workers`` processes; each finished unit is written atomically into ``--out``
at once (with the commit and the exact command), and its chains checkpoint into ``OUT_work/``
every ``--checkpoint-every`` seconds, so a rerun of the same command skips finished units and
resumes unfinished chains (the screen winner's continuation, not checkpointed, starts again).
The markdown table is printed and written beside ``--out`` (``.md``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pautomac_table3 import PAPER_TABLE3  # noqa: E402  (this folder's script)

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ("single", "eq6", "screen", "heldout-weighted", "anneal", "split-merge")
_KEY = 0x6D6978  # spawn-key word of the screen continuation's Generators ("mix")


# -- the pure parts (tests/test_pautomac_mixing.py) -------------------------------------------

def chain_plan(sweeps: int, period: int) -> tuple[int, int, int]:
    """``(period, n_draws, first)`` of a chain of ``sweeps`` sweeps recorded from sweep 0: a draw
    every ``period`` sweeps (fewer when ``sweeps < 2 period``, so both halves have a draw),
    ``n_draws = sweeps // period`` draws (sweeps past the last are not run), and Eq. 6 over the
    draws ``first..`` made after half the sweeps run (the paper's burn-in L/2, Sect. 4.6.1).
    10,000 sweeps, period 100: draws at sweeps 100..10,000, Eq. 6 over those at 5,100..10,000
    (50 draws), as Table 3's burn-in 5000."""
    if sweeps < 1 or period < 1:
        raise ValueError(f"sweeps and period must be >= 1, got {sweeps}, {period}")
    period = min(period, max(1, sweeps // 2))
    n_draws = sweeps // period
    return period, n_draws, (n_draws * period // 2) // period


def mix_equal(log_means: np.ndarray, n_draws) -> np.ndarray:
    """Eq. 6 over the draws of every chain: ``log_means [C, n]`` (each chain's log mean over
    its ``n_draws[c]`` draws) -> ``[n]`` (:func:`bayesfa.online.combine_log_means`)."""
    from bayesfa.online import combine_log_means

    return combine_log_means(log_means, n_draws)


def heldout_weights(heldout: np.ndarray) -> np.ndarray:
    """``softmax_c(H_c)`` of the chains' held-out log-likelihoods ``H [C]`` (model averaging
    weights, not posterior weights; :func:`scipy.special.softmax`)."""
    from scipy.special import softmax

    return softmax(np.asarray(heldout, dtype=np.float64))


def mix_weighted(log_means: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``log sum_c w_c Pr_c(b)`` per string: ``log_means [C, n]``, ``weights [C]`` summing to
    1 -> ``[n]`` (:func:`scipy.special.logsumexp` with ``b = w``; a weight 0 drops its chain)."""
    from scipy.special import logsumexp

    log_means = np.asarray(log_means, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if log_means.ndim != 2 or w.shape != (log_means.shape[0],):
        raise ValueError(f"expected [C, n] log means and C weights, got {log_means.shape}, {w.shape}")
    return logsumexp(log_means, axis=0, b=w[:, None])


def spearman(x, y) -> tuple[float | None, float | None]:
    """Spearman's ``(rho, p)`` (:func:`scipy.stats.spearmanr`); ``(None, None)`` under 3 pairs
    or when either side is constant."""
    from scipy.stats import spearmanr

    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    res = spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


# -- one unit ---------------------------------------------------------------------------------

class _Unit:
    """What the strategies of one unit share: data, settings, and how a chain is scored."""

    def __init__(self, train, test, log_solution, n_states: int, beta: float, seed: int,
                 settings: dict, workdir: str):
        from bayesfa.method_options import resolve
        from bayesfa.samplers.pfa.cgs_pfa import choose_kernel

        self.train, self.test, self.solution = train, test, log_solution
        self.seed, self.settings, self.workdir = seed, settings, Path(workdir)
        # the options bayesfa fit --method cgs-pfa resolves (kernel auto -> the kernel it runs)
        opts = resolve("cgs-pfa", {"states": n_states, "beta": beta})
        self.n_states, self.beta = opts["states"], opts["beta"]
        self.kernel = choose_kernel(opts["kernel"], self.n_states)

    @classmethod
    def load(cls, problem: int, seed: int, data: str, settings: dict, workdir: str,
             states: int | None = None) -> "_Unit":
        """The unit of PAutomaC ``problem`` at ``states`` (default: Table 3's N) and
        ``settings["beta"]``."""
        from bayesfa.pautomac import read_sample, read_solution

        data = Path(data)
        return cls(read_sample(data / f"{problem}.pautomac.train"),
                   read_sample(data / f"{problem}.pautomac.test"),
                   read_solution(data / f"{problem}.pautomac_solution.txt", log=True),
                   PAPER_TABLE3[problem][0] if states is None else states, settings["beta"], seed,
                   settings, workdir)

    def split(self):
        """``(kept corpus, held corpus, kept_idx)``: the held-out slice of the seed, as
        :func:`bayesfa.samplers.pfa.cgs_pfa.sample_cgs_pfa` and ``--auto`` draw it."""
        from bayesfa.samplers.pfa.auto import HOLDOUT
        from bayesfa.samplers.pfa.cgs_pfa import holdout_split

        kept_idx, held_idx = holdout_split(self.train.n_strings, HOLDOUT, np.random.SeedSequence(self.seed))
        return self.train.subset(kept_idx), self.train.subset(held_idx), kept_idx

    def chains(self, corpus, sweeps: int, k: int, name: str, anneal: int = 0, split_merge: int = 0):
        """k chains of ``sweeps`` sweeps on ``corpus`` (chains of ``SeedSequence(seed)``),
        recorded from sweep 0: ``(CGSResult, period, first Eq. 6 draw)``. ``anneal > 0``: the
        first ``anneal`` sweeps are tempered burn-in (``--anneal``) and recording starts
        after them; the first Eq. 6 draw is still the first one past half the sweeps."""
        from bayesfa.samplers.pfa.cgs_pfa import sample_cgs_pfa

        period, n_draws, first = chain_plan(sweeps, self.settings["period"])
        extra = {}
        if anneal:
            half = n_draws * period // 2
            n_draws = (n_draws * period - anneal) // period
            first = max(0, (half - anneal) // period)  # draw d is at sweep anneal + (d + 1) period
            extra = {"anneal": anneal, "anneal_start": self.settings["anneal_start"]}
        if split_merge:
            extra.update(split_merge=split_merge, split_merge_scans=self.settings["split_merge_scans"])
        res = sample_cgs_pfa(corpus, self.n_states, self.beta, anneal + n_draws * period, anneal,
                             period, k, self.seed, checkpoint_dir=self.workdir / name,
                             kernel=self.kernel, checkpoint_every=self.settings["checkpoint_every"],
                             holdout=0.0, **extra)
        return res, period, first

    def eq6(self, counts: np.ndarray, corpus) -> np.ndarray:
        """Eq. 6 of ``corpus``'s strings over one chain's draws ``counts [D, N+1, A, N+1]``."""
        from bayesfa.samplers.pfa.cgs_pfa import predict_log_prob

        return predict_log_prob(counts, self.beta, corpus)

    def score(self, log_mean: np.ndarray) -> dict:
        from bayesfa.scoring import score_all_log

        s = score_all_log(log_mean, self.solution)
        return {"score": s.score, "min_score": s.min_score, "excess": s.score - s.min_score,
                "ratio_minus_1": s.ratio - 1.0}

    def record(self, log_joint, used, period: int, first: int, log_mean) -> dict:
        """One chain: its log joint (Eq. 4) every ``period`` sweeps, and its own Eq. 6 score."""
        lj = np.asarray(log_joint, dtype=np.float64)
        return {"sweeps": int(lj.size * period), "period": int(period), "eq6_draws": int(lj.size - first),
                "final_log_joint": float(lj[-1]), "mean_log_joint": float(lj[first:].mean()),
                "final_states_used": int(used[-1]), "log_joint_trace": lj.tolist(),
                **{k: v for k, v in self.score(log_mean).items() if k != "min_score"}}

    def scored_chains(self, res, period: int, first: int, held=None):
        """Each chain's Eq. 6 of the test strings ``[C, n_test]``, of the held-out strings
        summed ``[C]`` (None without ``held``) and its record."""
        tests, heldout, recs = [], [], []
        for c in range(res.log_joint.shape[0]):
            tests.append(self.eq6(res.counts[c, first:], self.test))
            rec = self.record(res.log_joint[c], res.n_states[c], period, first, tests[-1])
            if held is not None:
                heldout.append(float(self.eq6(res.counts[c, first:], held).sum()))
                rec["heldout_log_lik"] = heldout[-1]
            recs.append(rec)
        return np.stack(tests), (np.array(heldout) if held is not None else None), recs


def _single(u: _Unit, sweeps: int, k: int) -> dict:
    res, period, first = u.chains(u.train, sweeps, 1, "single")
    tests, _, recs = u.scored_chains(res, period, first)
    return {"log_mean": tests[0], "chains": recs, "sweeps": recs[0]["sweeps"]}


def _anneal(u: _Unit, sweeps: int, k: int) -> dict:
    anneal = u.settings["anneal"]
    res, period, first = u.chains(u.train, sweeps, 1, "anneal", anneal=anneal)
    tests, _, recs = u.scored_chains(res, period, first)
    recs[0]["sweeps"] += anneal  # the tempered burn-in, not in the trace
    recs[0]["anneal"] = anneal
    return {"log_mean": tests[0], "chains": recs, "sweeps": recs[0]["sweeps"],
            "anneal": anneal, "anneal_start": u.settings["anneal_start"]}


def _split_merge(u: _Unit, sweeps: int, k: int) -> dict:
    moves = u.settings["split_merge"]
    res, period, first = u.chains(u.train, sweeps, 1, "split-merge", split_merge=moves)
    tests, _, recs = u.scored_chains(res, period, first)
    return {"log_mean": tests[0], "chains": recs, "sweeps": recs[0]["sweeps"],
            "split_merge": moves, "split_merge_scans": u.settings["split_merge_scans"]}


def _eq6(u: _Unit, sweeps: int, k: int) -> dict:
    res, period, first = u.chains(u.train, sweeps // k, k, "eq6")
    tests, _, recs = u.scored_chains(res, period, first)
    return {"log_mean": mix_equal(tests, [r["eq6_draws"] for r in recs]), "chains": recs,
            "sweeps": sum(r["sweeps"] for r in recs)}


def _heldout_weighted(u: _Unit, sweeps: int, k: int) -> dict:
    kept, held, _ = u.split()
    res, period, first = u.chains(kept, sweeps // k, k, "weighted")
    tests, heldout, recs = u.scored_chains(res, period, first, held)
    weights = heldout_weights(heldout)
    equal = u.score(mix_equal(tests, [r["eq6_draws"] for r in recs]))
    return {"log_mean": mix_weighted(tests, weights), "chains": recs, "weights": weights.tolist(),
            "equal_weight_excess": equal["excess"], "heldout_strings": int(held.n_strings),
            "sweeps": sum(r["sweeps"] for r in recs)}


def _screen(u: _Unit, sweeps: int, k: int) -> dict:
    from bayesfa.samplers.chains import free_positions
    from bayesfa.samplers.pfa import auto
    from bayesfa.samplers.pfa.cgs_pfa import _run_chain

    screen = max(2, int(round(u.settings["screen_fraction"] * sweeps)))
    kept, held, kept_idx = u.split()
    res, period, first = u.chains(kept, screen, k, "screen")
    _, heldout, recs = u.scored_chains(res, period, first, held)
    win = int(np.argmax(heldout))  # the first of equal maxima
    done = sum(r["sweeps"] for r in recs)
    rest = sweeps - done
    if rest < 1:
        raise ValueError(f"--chains {k} screens of {screen} sweeps leave nothing of {sweeps} sweeps")
    rng = np.random.default_rng(np.random.SeedSequence(u.seed, spawn_key=(_KEY, 0)))
    # the winner continued on all strings as --auto continues its own (in _run_strategy's
    # auto.front_session: warm_path reads new_counts from the front)
    z = auto.embed_path(res.z[win], u.train, kept_idx, u.n_states, rng)
    held_pos = free_positions(u.train.tokens)[~auto._kept_mask(u.train, kept_idx)]
    z = auto.warm_path(u.train, z, held_pos, u.n_states, u.beta, rng)
    warm = auto.WARM_SWEEPS
    period2, n_draws2, first2 = chain_plan(rest, u.settings["period"])
    out = _run_chain(u.train.tokens, u.train.alphabet_size + 1, u.n_states, u.beta, 0, period2,
                     n_draws2, np.random.SeedSequence(u.seed, spawn_key=(_KEY, 1)), init_z=z,
                     kernel=u.kernel)
    counts, log_joint, used = out[0], out[1], out[2]
    log_mean = u.eq6(counts[first2:], u.test)
    cont = u.record(log_joint, used, period2, first2, log_mean)
    return {"log_mean": log_mean, "chains": recs, "winner": win, "continued": cont,
            "screen_sweeps": screen, "heldout_strings": int(held.n_strings),
            "warm_sweeps_heldout_positions": warm, "sweeps": done + cont["sweeps"]}


_RUN = {"single": _single, "eq6": _eq6, "screen": _screen, "heldout-weighted": _heldout_weighted,
        "anneal": _anneal, "split-merge": _split_merge}


def paired_arms(p: argparse.ArgumentParser, args, argv, script: str, settings: dict, calibrate,
                arms, run, table, head) -> int:
    """The resumable main of ``pautomac_blocked.py`` and ``pautomac_replica.py`` (one plain arm
    against one other at equal CPU): checks ``--seeds``, ``--data`` and ``--out`` (the guarded
    writer), keeps ``--out``'s finished units when its ``settings`` match, measures
    ``calibrate(unit)`` once, then for every seed and every ``(arm, sweeps, param)`` of
    ``arms(done)`` not done yet runs ``run(unit, sweeps, param)`` (a row dict) and writes the
    JSON at once; at the end ``table(rows, seeds)`` under the command, the commit and
    ``head(done, seeds)`` to ``--out``'s ``.md``. ``script``: the file name in the recorded
    command."""
    from guarded_out import check_out, write_out_json, write_out_text
    from machine import git_commit, missing_pautomac_file

    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        p.error(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    missing = missing_pautomac_file(args.data, args.problem)
    if missing:
        p.error(f"--data {args.data}: no file {missing}")
    out = Path(args.out)
    check_out(out, out.with_suffix(".md"))
    done = json.loads(out.read_text()) if out.exists() else {"settings": settings, "rows": {}}
    if done["settings"] != settings:
        p.error(f"--out {out} holds results for other settings {done['settings']}")
    done["commit"] = git_commit()
    done["command"] = (f"python benchmarks/{script} "
                       + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    if "calibration" not in done:
        done["calibration"] = calibrate(_Unit.load(args.problem, seeds[0], args.data, settings, ""))
    plan = arms(done)
    for seed in seeds:
        for arm, sweeps, param in plan:
            key = f"{seed}/{arm}"
            if key in done["rows"]:
                continue
            u = _Unit.load(args.problem, seed, args.data, settings, "")
            row = run(u, sweeps, param)
            row.update(seed=seed, arm=arm, states=u.n_states, commit=done["commit"],
                       finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            done["rows"][key] = row
            write_out_json(out, done)
            print(f"seed {seed} {arm}: {row['sweeps']} sweeps, {row['cpu_seconds']:.1f} cpu s, "
                  f"score - min {row['excess']:.4f}, final log joint {row['final_log_joint']:.1f}",
                  flush=True)
    text = f"Command: `{done['command']}` at {done['commit']}\n\n{head(done, seeds)}\n\n" + table(done["rows"], seeds)
    print(text)
    write_out_text(out.with_suffix(".md"), text + "\n")
    return 0


def strategy_name(strategy: str, k: int) -> str:
    return strategy if strategy in ("single", "anneal", "split-merge") else f"{strategy}-{k}"


def _run_strategy(u: _Unit, strategy: str) -> tuple[dict, float, float]:
    """``(output, CPU seconds, wall seconds)`` of ``strategy`` on the unit ``u``, in the
    context ``--auto`` runs in (:func:`bayesfa.samplers.pfa.auto.front_session`: BLAS on one
    thread, since OpenBLAS's spinning threads would bill the forward passes several times
    over, and the cgs-pfa front handed to the auto module the screen continuation uses)."""
    from bayesfa.samplers.pfa import auto, cgs_pfa

    wall, cpu = time.perf_counter(), time.process_time()
    with auto.front_session(cgs_pfa):
        out = _RUN[strategy](u, u.settings["sweeps"], u.settings["chains"])
    return out, time.process_time() - cpu, time.perf_counter() - wall


def warm_up() -> None:
    """Every strategy once on a toy corpus (in each worker, before its units), so that loading
    the numba kernels from their cache is not billed to the first unit's CPU seconds."""
    import tempfile

    from bayesfa.corpus import Corpus

    rng = np.random.default_rng(0)
    strings = [rng.integers(0, 3, size=rng.integers(1, 6)) for _ in range(60)]
    train, test = Corpus.from_strings(strings[:40], 3), Corpus.from_strings(strings[40:], 3)
    settings = {"sweeps": 16, "chains": 2, "screen_fraction": 0.1, "period": 2, "beta": 0.05,
                "checkpoint_every": 120.0, "anneal": 4, "anneal_start": 0.1, "split_merge": 0.5,
                "split_merge_scans": 1}
    with tempfile.TemporaryDirectory() as work:
        for strategy in STRATEGIES:
            _run_strategy(_Unit(train, test, np.full(test.n_strings, -np.log(test.n_strings)), 3,
                                0.05, 0, settings, work), strategy)


def run_unit(problem: int, strategy: str, seed: int, data: str, settings: dict, workdir: str) -> dict:
    """One unit: ``strategy`` on ``problem`` with ``seed``; its score, CPU and chains."""
    u = _Unit.load(problem, seed, data, settings, workdir)
    out, cpu, wall = _run_strategy(u, strategy)
    log_mean = out.pop("log_mean")
    return {"problem": problem, "strategy": strategy_name(strategy, settings["chains"]), "seed": seed,
            "states": u.n_states, "beta": u.beta, "kernel": u.kernel, "n_tokens": int(u.train.n_tokens),
            "cpu_seconds": round(cpu, 2), "wall_seconds": round(wall, 2), **u.score(log_mean), **out}


# -- the table --------------------------------------------------------------------------------

def _span(values, fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)} - {format(max(values), fmt)})"


def table(rows: dict, problems: list[int], strategies: list[str], seeds: list[int]) -> str:
    """Per problem and strategy: seeds done, median (range) of score - min and ratio - 1, CPU s
    and sweeps per unit; for ``single``, Spearman's rho of final log joint and score - min."""
    head = ("| problem | N | strategy | seeds | score - min: median (range) | ratio - 1: median (range) "
            "| cpu s / unit: median (range) | sweeps / unit | spearman(final log joint, score - min) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    per_seed = []
    for p in problems:
        for s in strategies:
            got = [rows[f"{p}/{s}/{seed}"] for seed in seeds if f"{p}/{s}/{seed}" in rows]
            if not got:
                lines.append(f"| {p} | {PAPER_TABLE3[p][0]} | {s} | 0/{len(seeds)} | - | - | - | - | - |")
                continue
            rho = "-"
            if s == "single":
                r, pv = spearman([g["chains"][0]["final_log_joint"] for g in got], [g["excess"] for g in got])
                rho = "n/a (< 3 seeds or constant)" if r is None else f"{r:+.2f} (p = {pv:.2f})"
                per_seed += [(p, g) for g in got]
            sweeps = sorted({g["sweeps"] for g in got})
            lines.append(f"| {p} | {got[0]['states']} | {s} | {len(got)}/{len(seeds)} "
                         f"| {_span([g['excess'] for g in got], '.4f')} "
                         f"| {_span([g['ratio_minus_1'] for g in got], '.5f')} "
                         f"| {_span([g['cpu_seconds'] for g in got], '.1f')} "
                         f"| {', '.join(map(str, sweeps))} | {rho} |")
    if per_seed:
        lines += ["", "single, seed by seed (log joint of Eq. 4 on all training strings):", "",
                  "| problem | seed | final log joint | mean log joint (Eq. 6 draws) | states used | score - min |",
                  "|---|---|---|---|---|---|"]
        for p, g in per_seed:
            c = g["chains"][0]
            lines.append(f"| {p} | {g['seed']} | {c['final_log_joint']:.1f} | {c['mean_log_joint']:.1f} "
                         f"| {c['final_states_used']} | {g['excess']:.4f} |")
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------------

def _fail(message: str) -> None:
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _ints(text: str, option: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        _fail(f"{option}: expected comma-separated integers, got {text!r}")


def main(argv=None) -> int:
    from guarded_out import check_out, write_out_json, write_out_text
    from machine import git_commit, missing_pautomac_file

    from bayesfa.samplers.pfa.auto import HOLDOUT

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problems", default="5,43")
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--sweeps", type=int, default=10_000, help="total sweeps per unit (default 10000)")
    p.add_argument("--chains", type=int, default=4, help="k of eq6-k, screen-k, heldout-weighted-k")
    p.add_argument("--screen-fraction", type=float, default=0.1,
                   help="screen-k: each screen chain's share of --sweeps (default 0.1)")
    p.add_argument("--anneal", type=int, default=2000,
                   help="anneal: the tempered sweeps at the start of the chain (default 2000)")
    p.add_argument("--split-merge", type=float, default=0.1,
                   help="split-merge: moves per sweep (default 0.1)")
    p.add_argument("--split-merge-scans", type=int, default=3,
                   help="split-merge: the launch scans of each move (default 3)")
    p.add_argument("--anneal-start", type=float, default=0.1,
                   help="anneal: the inverse temperature of the first sweep (default 0.1)")
    p.add_argument("--period", type=int, default=100)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--checkpoint-every", type=float, default=120.0)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pautomac"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pautomac_mixing.json"))
    p.add_argument("--table", action="store_true", help="only print the table of --out")
    args = p.parse_args(argv)
    problems, seeds = _ints(args.problems, "--problems"), _ints(args.seeds, "--seeds")
    unknown = [k for k in problems if k not in PAPER_TABLE3]
    if unknown:
        _fail(f"--problems: not a Table 3 problem with a training file: {unknown}")
    for k in problems:
        missing = missing_pautomac_file(args.data, k)
        if missing:
            _fail(f"--data {args.data}: no file {missing}")
    strategies = args.strategies.split(",")
    if any(s not in STRATEGIES for s in strategies):
        _fail(f"--strategies: choose from {', '.join(STRATEGIES)}, got {args.strategies!r}")
    if args.sweeps < 2 or args.chains < 2 or args.period < 1 or args.workers < 1 or not args.beta > 0:
        _fail("--sweeps >= 2, --chains >= 2, --period >= 1, --workers >= 1 and --beta > 0 are required")
    if args.sweeps // args.chains < 2:
        _fail(f"--sweeps {args.sweeps} gives each of --chains {args.chains} chains under 2 sweeps")
    screen = max(2, int(round(args.screen_fraction * args.sweeps)))
    if "screen" in strategies and not (0 < args.screen_fraction and args.chains * screen < args.sweeps):
        _fail(f"--screen-fraction {args.screen_fraction}: {args.chains} screens of {screen} sweeps "
              f"leave nothing of --sweeps {args.sweeps}")
    if "anneal" in strategies and not (0 < args.anneal <= args.sweeps // 2 and 0 < args.anneal_start <= 1):
        _fail(f"--anneal {args.anneal} must be in 1..--sweeps / 2 and --anneal-start {args.anneal_start} "
              f"in (0, 1]")
    settings = {"sweeps": args.sweeps, "chains": args.chains, "screen_fraction": args.screen_fraction,
                "period": args.period, "beta": args.beta, "holdout": HOLDOUT}
    if "anneal" in strategies:  # (absent otherwise: earlier --out files keep their settings)
        settings.update(anneal=args.anneal, anneal_start=args.anneal_start)
    if "split-merge" in strategies:
        if not args.split_merge > 0 or args.split_merge_scans < 0:
            _fail("--split-merge > 0 and --split-merge-scans >= 0 are required")
        settings.update(split_merge=args.split_merge, split_merge_scans=args.split_merge_scans)
    names = [strategy_name(s, args.chains) for s in strategies]
    out = Path(args.out)
    if not args.table:
        check_out(out, out.with_suffix(".md"))  # before reading it: refuse a file bayesfa did not write
    done = json.loads(out.read_text()) if out.exists() else {"settings": settings, "rows": {}}
    # the settings the run's rows share; --anneal's are checked only when anneal runs
    unit_settings = {"anneal": args.anneal, "anneal_start": args.anneal_start,
                     "split_merge": args.split_merge, "split_merge_scans": args.split_merge_scans,
                     **settings}
    if done["settings"] != settings:
        _fail(f"--out {out} holds results for other settings {done['settings']}; choose another --out")
    if not args.table:
        commit = git_commit()
        done["commit"] = commit
        done["command"] = ("python benchmarks/pautomac_mixing.py "
                           + " ".join(sys.argv[1:] if argv is None else argv)).strip()
        work = out.with_name(out.stem + "_work")
        todo = [(k, s, seed) for k in problems for s in strategies for seed in seeds
                if f"{k}/{strategy_name(s, args.chains)}/{seed}" not in done["rows"]]
        unit_settings = {**unit_settings, "checkpoint_every": args.checkpoint_every}
        with concurrent.futures.ProcessPoolExecutor(max_workers=args.workers, initializer=warm_up) as pool:
            futures = {pool.submit(run_unit, k, s, seed, args.data, unit_settings,
                                   str(work / f"{k}-{strategy_name(s, args.chains)}-seed{seed}")): (k, s, seed)
                       for k, s, seed in todo}
            for f in concurrent.futures.as_completed(futures):
                row = f.result()
                row["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                row["commit"] = commit  # the code the unit ran (``+dirty``: uncommitted changes)
                row["command"] = done["command"]
                done["rows"][f"{row['problem']}/{row['strategy']}/{row['seed']}"] = row
                write_out_json(out, done)
                k, s, seed = futures[f]
                shutil.rmtree(work / f"{k}-{strategy_name(s, args.chains)}-seed{seed}", ignore_errors=True)
                print(f"problem {row['problem']} {row['strategy']} seed {row['seed']}: "
                      f"{row['cpu_seconds']:.1f} cpu s, {row['sweeps']} sweeps, "
                      f"score - min {row['excess']:.4f}", flush=True)
        if work.exists() and not any(work.iterdir()):
            work.rmdir()
    text = table(done["rows"], problems, names, seeds)
    print(text)
    if not args.table:
        write_out_text(out.with_suffix(".md"), f"Command: `{done['command']}` at {done['commit']}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
