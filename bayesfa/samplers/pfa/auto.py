"""CGS-PFA with N and beta chosen within a CPU budget: ``bayesfa fit --method cgs-pfa --auto
--budget CPU_SECONDS`` (Shibata & Yoshinaka 2013, Sect. 4.1 chooses N and beta by 10-fold
cross-validation; this replaces that by held-out training strings and a budget).

Three phases, all on the training file only (the test and solution files are never read):

1. **N ladder** at ``beta = 0.05``. A held-out slice of the training strings (:data:`HOLDOUT`,
   :func:`bayesfa.samplers.pfa.cgs_pfa.holdout_split`) is kept out of sampling. One chain
   starts at N = 10 from a random path; each rung runs ``rung_sweeps`` sweeps (the second half
   recorded as :data:`RUNG_DRAWS` draws) and is scored by the held-out log predictive of Eq. 6
   (the mean over its draws of ``Pr(b | xi~)``, summed over held-out strings ``b``). The next
   rung (N x 1.5, :func:`ladder`) starts from the last path by splitting the busiest states
   (:func:`split_states`): in a fully connected PFA every path is valid, and merging the
   copies back gives the parent path exactly, so the larger chain starts where the smaller
   one was instead of burning in from scratch. A rung that improves on the best so far by no
   more than the standard error of the paired per-string difference (:func:`compare`) is a
   miss; the ladder stops at :data:`PATIENCE` misses in a row (:func:`ladder_step`), or at the
   last rung that its budget and the phases after it afford (:func:`ladder_ceiling`: phase 2
   its minimum sweeps, phase 3 a rung's sweeps), and the best rung wins (a miss's path still
   seeds the next rung: it is a valid path of the larger chain, the best one two rungs back is
   not). The ceiling is planned from the calibration and then, for each rung above it, priced
   again by the CPU measured on the rung below (:func:`measured_scale`: never above the
   calibration's prices; recorded in the schedule as ``ladder_scales``): the calibration's
   sweeps on a random path cost more than a chain's, and more again under load. At
   ``d944b04`` the planned ceiling stopped 14 and 16 of the 47 PAutomaC ladders (seeds 1, 2),
   their last rungs measured at 0.46-0.94 of the model (one at 1.8), and problem 34's seed 3,
   calibrated while five processes shared two cores, planned its ceiling at 76 instead of 114
   and scored ratio - 1 0.0296 against 0.0009 (benchmarks/RESULTS.md). A winner above the
   planned ceiling has phase 2 planned with the same measured prices (:func:`phase2_schedule`).
2. **beta by successive halving** at the winning N, every candidate starting from the winning
   rung's path (a change of beta changes the target, not the path's validity): all of
   :data:`BETAS` for ``beta_sweeps`` sweeps, then the best :data:`BETA_KEEP` for
   :data:`BETA_GROWTH` times as many from where they stopped, scored on their new draws; the
   best of those wins. The second round is longer because a short run from the ladder's path
   (sampled at ``beta = 0.05``) favours the smallest beta: the same path gives a sharper plug-in
   at a smaller beta before the path itself has moved. Measured on PAutomaC 21 (N = 76, from
   the ladder's path; benchmarks/results/pautomac_beta_windows_21.md): beta = 0.005 leads 0.01
   on the held-out strings after 100 and 300 sweeps (by 13 and 10 nats) and trails it from 700
   sweeps on (by 55-147 nats), as it does on the test strings (ratio - 1 after 3,100 sweeps:
   0.0049 against 0.0026).
3. **Final chains** of the winner (``chains`` of them) on all training strings, each from the
   winner's path with the held-out strings' states drawn by Gibbs sweeps over their positions
   only, then as many sweeps as the rest of the budget buys (:func:`final_plan`); Eq. 6 over
   every draw of every chain. After every :data:`FINAL_BLOCKED_EVERY` collapsed sweeps (Eq. 9)
   a final chain makes one blocked whole-string move (:mod:`bayesfa.samplers.pfa._ffbs_kernel`:
   theta drawn from its Dirichlet posterior given the counts, Eq. 2 times Eq. 3, every
   string's path by forward filtering-backward sampling, theta dropped: a Gibbs step of the
   uncollapsed joint that keeps Eq. 4's posterior), the strategy benchmarks/RESULTS.md's
   measurements favour (:data:`FINAL_BLOCKED_EVERY`); ``--final-blocked-every K`` sets K, 0
   turns the moves off, and by default they are off when phase 3's share of the plan is under
   :data:`BLOCKED_MIN_SECONDS` (:func:`final_blocked_every`). Predicting test strings online
   (``bayesfa fit --predict``, and ``pautomac run``) costs CPU within the budget, so it
   shortens the final chains; it never changes phases 1-2 (the test strings are only
   predicted, never scored for a decision).

Blocked moves in phases 1-2. With ``--search-blocked-every K`` each chain of the ladder and of
the beta phase makes one blocked move after every K sweeps as well (off by default,
:data:`SEARCH_BLOCKED_EVERY`; off when the phases' share of the budget is under
:data:`BLOCKED_MIN_SECONDS`, :func:`search_blocked_every`): the final chains start from the
winner's path and inherit its plateau, so the lineage's plateau decides much of the score
(benchmarks/RESULTS.md, "Problem 1's final chains"). Their sweeps are planned with the moves'
modelled cost (:func:`move_cost`, timed by :func:`calibrate`), so phases 1-2 keep their money
with fewer sweeps.

Counts. Every chain keeps its counts in the type CGS-PFA chooses for its strings
(:func:`bayesfa.samplers.pfa.cgs_pfa.count_dtype`: float32 below 2**24 tokens, float64, exact
to 2**53, from 2**24 on), so a corpus of any size that fits in memory runs; with float64 counts
the final chains make no blocked moves (:func:`wide_counts`, as ``--blocked-every`` for
CGS-PFA: only the plain gibbs sweep runs float64 counts), and ``info["count_dtype"]`` records
the final chains' type.

Budget and reproducibility. The budget is CPU seconds of this process and its children
(``os.times``), so a loaded machine does not change it much. The same seed must give the same
result, so timings enter the decisions only through the run's recorded ``schedule``
(``info.auto.schedule``); ``--schedule FILE`` (that JSON, or the run's manifest.json) skips
every timing and reproduces the run bit for bit. Phases 1-2 are sized by a short timing of
fixed size (:func:`calibrate`: a sweep at every N of the ladder on at most
:data:`CALIBRATION_POSITIONS` positions, or at N = 31 and N = 127 only under
:data:`RUNG_TABLE_BUDGET`; a forward pass at N = 64), each cost rounded up to a
power of 2**(1/4), within ``SAFETY`` (0.85) of the budget less the calibration's CPU; from
these costs their plan (:func:`sweep_cost`, :func:`rung_sweeps`) is a pure function, and each
of their steps is charged its *modelled* cost. Phase 3 is sized from measurements at the
winner's N, recorded in the schedule before it starts: the CPU per position of the collapsed
sweeps and per letter of the held-out forward passes of the phases 1-2 chains at that N
(:func:`measured_costs`), the CPU of recording a draw and of a blocked round (K sweeps and
a blocked move) on all kept strings from the winner's path (:func:`calibrate_final`, which
also compiles the blocked chain's drivers), and the CPU the fit has spent so far
(``final_start_seconds``), each rounded to a power of 2**(1/32). The final chains then get ``TARGET * budget -
final_start_seconds`` (:data:`TARGET` = 0.97), so whatever phases 1-2 left unspent (a ladder
that stopped early, a cost model that erred) goes to them; each chain after the first is
sized again from the CPU the chains before it measured (:data:`RESIZE_LIMITS`). The same
seed with ``--budget`` alone reproduces a run whenever the rounded timings come out the same, which a CPU budget
cannot promise (a seed alone fixing the result would need a budget in sweeps, not seconds).

The measured CPU is recorded beside the plan (``cpu_planned``, ``cpu_seconds``). The overshoot
is bounded by how far the last final chain's costs, scaled by the chains before it, err (and
by the :data:`MIN_RUNG_SWEEPS` floor of a final chain when the budget is tiny); tests/test_auto.py allows 10%. Measured:
benchmarks/RESULTS.md, "--auto spends its budget". Before phase 3 was sized so (``SAFETY``
alone, phase 3 modelled from the calibration): 58-76% (benchmarks/results/pautomac-auto-trial,
300 s), 67% over the 47 problems at 14,400 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

HOLDOUT = 0.05          # fraction of the training strings held out (at most HOLDOUT_MAX)
LADDER_START, LADDER_RATIO, LADDER_MAX = 10, 1.5, 384
BETA0 = 0.05
BETAS = (0.005, 0.01, 0.02, 0.05, 0.1)
#: Round 1 of phase 2 steps past an edge of :data:`BETAS` that wins it: while the best
#: candidate so far is the smallest (largest) one tried, the next of BETAS_BELOW (BETAS_ABOVE)
#: runs too, at most BETA_EXTEND of them; each is charged to phase 3's money (phase 3 gets what
#: phases 1-2 leave), so the ladder's ceiling and phase 2's sweeps stay as planned. Off (0):
#: beta = 0.005 wins phase 2 on about half of the 47 PAutomaC problems, but with BETA_EXTEND =
#: 2 the held-out strings then chose 0.001-0.002 on all five such problems replayed, and the
#: test ratio - 1 rose on two (21: 0.00190 -> 0.00325, 35: 0.00070 -> 0.00099) and held on three
#: (judged on test strings; benchmarks/RESULTS.md, "The beta grid's edge"), at equal budget:
#: a short run from the ladder's path favours the smallest beta (phase 2 below), or the final
#: chains' fewer sweeps cost what the smaller beta gained; the replays do not separate the two.
BETAS_BELOW, BETAS_ABOVE = (0.002, 0.001), (0.2, 0.5)
BETA_EXTEND = 0
BETA_KEEP = 2
BETA_GROWTH = 4    # round 2 of the beta phase runs this many times round 1's sweeps
RUNG_DRAWS = 10
#: The ladder stops after PATIENCE rungs in a row that do not gain on the best rung by more than
#: the standard error (:func:`ladder_step`), and keeps the best. With 1 (the rule until
#: benchmarks/RESULTS.md, "The ladder's patience"), one noisy rung decided N: PAutomaC 2 seed 1
#: stopped at N = 10 (the 15-state rung gained -1.4 +- 2.3 held-out nats) and scored 0.00488,
#: seed 2 climbed to N = 76 and scored 0.00056.
PATIENCE = 2
FINAL_DRAWS = 100
MIN_RUNG_SWEEPS = 20
LADDER_SHARE, BETA_SHARE = 0.45, 0.2
SAFETY = 0.85   # phases 1-2 are sized within SAFETY of the budget (after the calibration)
#: Phase 3 is sized so that the whole fit's CPU comes to TARGET of the budget: its money is
#: TARGET * budget less the CPU measured before it, its costs measured at the winner's N.
TARGET = 0.97
#: Each final chain after the first is sized again before it starts (:func:`resized_chain`):
#: its money is what is left of ``TARGET * budget`` over the chains still to run, its costs
#: the schedule's times the final chains' measured CPU over their modelled CPU so far, that
#: factor held within RESIZE_LIMITS (a chain of a few clock ticks measures little). So a load
#: that rises during phase 3 (a CI pre-check at ``a921a85``: 3.01 CPU s spent of 2.5) or costs
#: measured low shorten the later chains, and costs measured high lengthen them. Recorded in
#: the schedule (``final_chain_resize``), so that ``--schedule`` replays it.
RESIZE_LIMITS = (0.5, 2.0)
#: The final chains' blocked whole-string moves (:mod:`bayesfa.samplers.pfa._ffbs_kernel`): one
#: after every FINAL_BLOCKED_EVERY collapsed sweeps (``--final-blocked-every K`` overrides it,
#: 0: off). Chosen by benchmarks/RESULTS.md, "Latest measurements", *Blocked whole-string
#: moves* (benchmarks/results/pautomac_blocked/, at 3655558): PAutomaC 5 at N = 10, one chain
#: per seed 0-2 at about equal CPU, K = 10 gave score - min 0.0022 / 0.0021 / 0.0021 against
#: 0.4454 / 0.1074 / 0.0031 for plain chains, every blocked chain 8,000-11,300 nats higher in
#: Eq. 4. K = 10 is the only ratio measured so far; a blocked move costs O(T N^2) against a
#: sweep's O(T N), so at larger N the same K spends a larger share of the CPU on the moves
#: (3.1 sweeps a move at N = 10 there, about 6.5 at N = 34 on the same problem).
FINAL_BLOCKED_EVERY = 10
#: The final chains run blocked moves only when phase 3's share of the plan (its modelled
#: money, a function of the schedule) is at least this many CPU seconds: the blocked kernels'
#: first use in a process costs about 2.3 CPU s (loaded from numba's cache and compiled,
#: measured on PAutomaC 5 at N = 34), which a budget of a few seconds cannot carry.
BLOCKED_MIN_SECONDS = 30.0
#: Phases 1-2's chains (the ladder's rungs and the beta candidates) make one blocked move after
#: every SEARCH_BLOCKED_EVERY collapsed sweeps (``--search-blocked-every K`` sets it, 0: off;
#: :func:`search_blocked_every`), when their share of the budget is at least
#: :data:`BLOCKED_MIN_SECONDS`. Off by default (0): on PAutomaC 1 at its 306 CPU s share, five
#: seeds, K = 10 gave ratio - 1 0.00265-0.00403 (median 0.00352) against 0.00297-0.00386
#: (median 0.00371) without, not a clear gain, and a move costs 20-100 collapsed sweeps at N =
#: 76-114, so the ladder ran 78 sweeps a rung instead of about 500 (benchmarks/RESULTS.md,
#: "Blocked moves in --auto's search"); on problems whose ladder climbs further it would cost
#: more, unmeasured.
SEARCH_BLOCKED_EVERY = 0
CALIBRATION_POSITIONS = 20_000
STORED_BYTES = 1 << 28  # counts kept by the final chains (without online prediction)
SCHEDULE_FORMAT = "bayesfa-cgs-pfa-schedule/2"
_KEY = 0x6175746F  # spawn-key word of the auto phases' Generators
_COSTS = ("position_seconds", "lane_seconds", "forward_seconds")
#: Phase 3's measured sweep and forward costs are taken as at least this fraction of the
#: calibrated model's (:func:`measured_costs`): a measurement far below it is noise.
MEASURED_FLOOR = 0.25
#: measured before phase 3 (:func:`final_costs`) and recorded in the schedule
_FINAL_COSTS = ("final_sweep_seconds", "final_forward_seconds", "final_draw_seconds",
                "final_start_seconds")
_BLOCKED_COSTS = ("blocked_round_seconds", "blocked_round_every")  # with blocked final chains
#: a blocked move of phases 1-2 per free position: ``move_seconds + (N+1)**2 move_square_seconds``
_MOVE_COSTS = ("move_seconds", "move_square_seconds")
#: CPU seconds over which :func:`calibrate_final` repeats a blocked round (at least once)
BLOCKED_TIMING = 1.0
#: From this budget on, :func:`calibrate` times a sweep at every N of the ladder (about 1.5 CPU
#: s on PAutomaC's larger problems, RUNG_ROUNDS windows per N) and :func:`sweep_cost` plans
#: from that table; under it, from the line through N = 31 and N = 127 (a few tenths of a
#: second, and a small budget never climbs to the N where the line errs).
RUNG_TABLE_BUDGET = 60.0
RUNG_ROUNDS = 3


# -- options ---------------------------------------------------------------------------------

def budget_arg(text: str) -> float:
    """argparse type of a CPU budget (``--budget``): a positive finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of CPU seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive finite number of CPU seconds, got {text}")
    return value


def add_auto_arguments(parser) -> None:
    """``--auto``, ``--budget``, ``--schedule`` of ``bayesfa fit --method cgs-pfa``."""
    # absent from the options unless given (argparse.SUPPRESS), so that runs without --auto
    # keep the identity they had before these options existed
    parser.add_argument("--auto", action="store_true", default=argparse.SUPPRESS,
                        help="choose N and beta by held-out training strings within --budget, then "
                             "spend the rest on --chains chains of the winner (ignores --states, "
                             "--beta, --iterations, --burn-in, --period, --holdout, --kernel, "
                             "--interleave; runs in this process; an interrupted fit starts again)")
    parser.add_argument("--budget", type=budget_arg, default=argparse.SUPPRESS, metavar="CPU_SECONDS",
                        help="--auto: CPU seconds (user + system) for the whole fit, calibration included; "
                             "the fit plans 0.85 of it")
    parser.add_argument("--schedule", default=argparse.SUPPRESS, metavar="FILE",
                        help="--auto: the calibration a run recorded (its manifest.json or the "
                             "schedule JSON), instead of timing it here: reproduces that run")
    parser.add_argument("--final-blocked-every", type=_nonnegative_int, default=argparse.SUPPRESS,
                        metavar="K",
                        help=f"--auto: the final chains run one blocked whole-string move (as "
                             f"--blocked-every) after every K sweeps; 0: off; default "
                             f"{FINAL_BLOCKED_EVERY} (benchmarks/RESULTS.md), then off when the "
                             f"final chains get under {BLOCKED_MIN_SECONDS:g} CPU seconds or "
                             f"keep float64 counts (2**24 tokens or more)")
    parser.add_argument("--search-blocked-every", type=_nonnegative_int, default=argparse.SUPPRESS,
                        metavar="K",
                        help=f"--auto: the chains that choose N and beta (phases 1-2) run one "
                             f"blocked whole-string move after every K sweeps; 0: off; default "
                             f"{SEARCH_BLOCKED_EVERY} (off: no clear gain measured, "
                             f"benchmarks/RESULTS.md); none when those phases get under "
                             f"{BLOCKED_MIN_SECONDS:g} CPU seconds or their strings keep float64 "
                             f"counts")


#: --auto's options, absent from a fit's options unless given (argparse.SUPPRESS)
AUTO_OPTIONS = ("auto", "budget", "schedule", "final_blocked_every", "search_blocked_every")


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def check_auto_options(options: dict[str, Any]) -> None:
    """One-line :class:`InputError` for ``--budget``/``--schedule``/``--final-blocked-every``/
    ``--search-blocked-every`` without ``--auto``, a bad budget or a bad ``K`` (the library
    path; the CLI's parser already refuses non-numbers)."""
    auto, budget, schedule = options.get("auto"), options.get("budget"), options.get("schedule")
    if not auto:
        if any(options.get(k) is not None for k in AUTO_OPTIONS[1:]):
            raise InputError("--budget, --schedule, --final-blocked-every and --search-blocked-every "
                             "need --auto")
        return
    for key in ("final_blocked_every", "search_blocked_every"):
        every = options.get(key)
        if every is not None and (isinstance(every, bool) or not isinstance(every, (int, np.integer))
                                  or every < 0):
            flag = "--" + key.replace("_", "-")
            raise InputError(f"{flag} must be an integer >= 0, got {every!r}")
    if budget is None and schedule is None:
        raise InputError("--auto needs --budget CPU_SECONDS (or --schedule FILE)")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))
                               or not (budget > 0 and math.isfinite(budget))):
        raise InputError(f"--budget must be a positive finite number of CPU seconds, got {budget!r}")


def read_schedule(path: str | os.PathLike) -> dict[str, Any]:
    """The schedule in ``path``: a schedule JSON or a run's manifest.json (``info.auto.schedule``).
    One without phase 3's measured costs (:data:`_FINAL_COSTS`, all of them absent) replays
    phases 1-2 and measures phase 3 at its winner, as a timed run does."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path) from None
    except ValueError:
        raise InputError("not JSON", path) from None
    return check_schedule(data, path)


def check_schedule(data: Any, path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The schedule in ``data`` (a schedule's JSON, or a manifest's with ``info.auto.schedule``,
    already parsed, e.g. the ``schedule`` of a recorded ``auto.json``), checked as
    :func:`read_schedule` checks a file's; ``path`` names its source in the errors."""
    if isinstance(data, dict) and "info" in data:
        data = (data.get("info") or {}).get("auto", {}).get("schedule")
    keys = ("format", "budget", *_COSTS, "overhead_seconds")
    if not isinstance(data, dict) or data.get("format") != SCHEDULE_FORMAT or any(
            not isinstance(data.get(k), (int, float)) for k in keys[1:]):
        raise InputError(f"not a {SCHEDULE_FORMAT} schedule (nor a --auto run's manifest; "
                         f"a schedule of an older bayesfa does not reproduce its run here)", path)
    out = {k: data[k] for k in keys}
    # phase 3's measured costs: all of them (a run's record), or none (phase 3 measures them)
    final = [isinstance(data.get(k), (int, float)) for k in _FINAL_COSTS]
    if any(final) and not all(final):
        raise InputError(f"a schedule has all of {', '.join(_FINAL_COSTS)} or none of them", path)
    out.update({k: data[k] for k in _FINAL_COSTS if k in data})
    if "rung_seconds" in data:  # a budget of RUNG_TABLE_BUDGET or more
        table = data["rung_seconds"]
        if not isinstance(table, dict) or not table or any(
                not str(n).isdigit() or isinstance(x, bool) or not isinstance(x, (int, float))
                or not (x > 0 and math.isfinite(x)) for n, x in table.items()):
            raise InputError("rung_seconds must map each N to positive CPU seconds per position", path)
        out["rung_seconds"] = {str(int(n)): float(x) for n, x in table.items()}
    if all(isinstance(data.get(k), (int, float)) for k in _BLOCKED_COSTS):  # when blocked moves ran
        out.update({k: data[k] for k in _BLOCKED_COSTS})
    if all(isinstance(data.get(k), (int, float)) for k in _MOVE_COSTS):  # phases 1-2's blocked moves
        out.update({k: data[k] for k in _MOVE_COSTS})
    if "ladder_scales" in data:  # from the measured ceiling on (run_ladder); {} until a ladder meets it
        scales = data["ladder_scales"]
        if not isinstance(scales, dict) or any(
                not str(n).isdigit() or not isinstance(x, list) or len(x) != 2 or any(
                    isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1
                    for v in x) for n, x in scales.items()):
            raise InputError("ladder_scales must map each N to two factors in (0, 1]", path)
        out["ladder_scales"] = {str(int(n)): [float(v) for v in x] for n, x in scales.items()}
    if "final_chain_resize" in data:  # from per-chain sizing on (run_final); [] with one chain
        resize = data["final_chain_resize"]
        if not isinstance(resize, list) or any(
                not isinstance(x, list) or len(x) != 2 or any(
                    isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                    for v in x) or not x[1] > 0 for x in resize):
            raise InputError("final_chain_resize must list [money, scale] per chain after the "
                             "first, scale > 0", path)
        out["final_chain_resize"] = [[float(v) for v in x] for x in resize]
    return out


# -- CPU and calibration ---------------------------------------------------------------------

def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


#: seconds of CPU over which one calibration timing repeats its call (a clock that ticks every
#: 10 ms then errs by at most a fifth)
TIMING_WINDOW = 0.05


def _round_up(x: float) -> float:
    """``x`` rounded up to a power of 2**(1/4) (relative step 19%)."""
    return float(2.0 ** (math.ceil(4 * math.log2(max(x, 1e-15))) / 4))


def _round_fine(x: float, up: bool = False) -> float:
    """``x`` rounded to the nearest power of 2**(1/32) (relative step 2.2%, so at most 1.1%
    off), or up to one with ``up``: phase 3's measured costs, fine enough to size its chains
    within a few per cent of the budget."""
    e = 32 * math.log2(max(x, 1e-15))
    return float(2.0 ** ((math.ceil(e) if up else round(e)) / 32))


def _min_time(fn, repeats: int = 3, cap: float = math.inf) -> float:
    """The least CPU seconds of a call of ``fn`` over ``repeats`` timings (the least is the
    steadiest), each timing calls ``fn`` until :data:`TIMING_WINDOW` seconds have passed; no
    further timing starts once ``cap`` seconds have passed in all (a call that long is timed
    well enough once).

    The clock is this thread's CPU time (the kernels run in the calling thread), and a call is
    timed over a window, not alone: a process's CPU clock can tick coarsely (measured: under
    a CPU-time limit, ``ulimit -t``, ``process_time`` read 4 microseconds for a 1 ms sweep),
    and a sweep timed as free made ``--auto`` plan far past its budget."""
    best, total = math.inf, 0.0
    for _ in range(repeats):
        calls, t0 = 0, time.thread_time()
        while True:
            fn()
            calls += 1
            elapsed = time.thread_time() - t0
            if elapsed >= TIMING_WINDOW:
                break
        best = min(best, elapsed / calls)
        total += elapsed
        if total >= cap:
            break
    return best


def calibrate(kept: Corpus, held: Corpus, rungs: bool = False, moves: bool = False) -> dict[str, Any]:
    """Seconds per unit of work, timed on fixed sizes, each rounded up by :func:`_round_up`.

    A sweep costs ``M (position_seconds + W lane_seconds)`` (M positions, W = padded width),
    fitted from the fastest of 3 sweeps at N = 31 and at N = 127 on the first
    :data:`CALIBRATION_POSITIONS` positions; a held-out or test forward pass ``n_strings
    max_len (N+1)**2 forward_seconds`` (the fastest of 3 calls on one draw at N = 64, as the
    final chains call it draw by draw).

    With ``rungs`` (:func:`_schedule`: budgets of at least :data:`RUNG_TABLE_BUDGET`), a sweep
    is timed at every N of the ladder instead (:func:`ladder`, 10 to 384) on the same
    positions: ``rung_seconds[str(N)]``, CPU seconds per position, the fastest of
    :data:`RUNG_ROUNDS` windows with the N interleaved within each round (a change of the
    machine's load falls on all of them alike), rounded up and then made non-decreasing in N
    (a larger N never costs less per position). :func:`sweep_cost` reads that table. The line
    missed by up to 3.3x at N = 256-384, where the counts leave the cache
    (benchmarks/results/auto_calibration.md: N = 384 cost 8-23 times N = 34 per position, its W
    6.5 times), so the ladder's ceiling and phase 2 were planned on a wrong cost there; the
    line's two costs are then the table's through N = 34 and N = 114.

    With ``moves`` (phases 1-2 make blocked moves, :func:`search_blocked_every`), one blocked
    move (:func:`bayesfa.samplers.pfa._ffbs_kernel.blocked_move`: O(T (N+1)**2)) is timed on
    the same positions at the line's two N, the fastest of 3 (:func:`_min_time`, at most
    :data:`TIMING_WINDOW` seconds of repeats), its cost per position fitted as
    ``move_seconds + (N+1)**2 move_square_seconds`` (:func:`move_cost`), and the blocked
    chain's drivers are compiled (:func:`compile_blocked`), so that loading and compiling them
    is part of the calibration's CPU, not of the first rung's."""
    from bayesfa.samplers.chains import free_positions
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern

    front = _front()
    new_counts, plugin_log_prob = front.new_counts, front.plugin_log_prob
    dtype = front.count_dtype(kept.n_tokens)  # the counts the phases' chains will keep

    n_strings = int(np.searchsorted(kept.offsets, CALIBRATION_POSITIONS)) or 1
    part = kept.subset(np.arange(min(n_strings, kept.n_strings)))
    tokens, n_symbols = part.tokens, part.alphabet_size + 1
    positions = free_positions(tokens)
    rng = np.random.default_rng(0)
    sizes = ladder() if rungs else [31, 127]
    chains = {}
    for n in sizes:
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n + 1, size=positions.size, dtype=np.int32)
        state = new_counts(n, n_symbols, dtype)
        kern.fill_counts(tokens, z, *state, 0.05)
        kern.sweeps(1, positions, tokens, z, *state, rng, 0.05)  # compiled / loaded from cache
        chains[n] = (z, state)

    def timer(n):
        z, state = chains[n]
        return lambda: kern.sweeps(1, positions, tokens, z, *state, rng, 0.05)

    out: dict[str, Any] = {}
    if rungs:
        best = dict.fromkeys(sizes, math.inf)
        for _ in range(RUNG_ROUNDS):
            for n in sizes:
                best[n] = min(best[n], _min_time(timer(n), repeats=1))
        per = np.maximum.accumulate([_round_up(best[n] / max(1, positions.size)) for n in sizes])
        out["rung_seconds"] = {str(n): float(x) for n, x in zip(sizes, per)}
        lo, hi = 34, 114
        per_sweep = [out["rung_seconds"][str(lo)], out["rung_seconds"][str(hi)]]
    else:
        lo, hi = 31, 127
        per_sweep = [_min_time(timer(n)) / max(1, positions.size) for n in sizes]
    w_lo, w_hi = kern.padded_width(lo), kern.padded_width(hi)
    lane = max((per_sweep[1] - per_sweep[0]) / (w_hi - w_lo), 1e-12)
    position = max(per_sweep[0] - w_lo * lane, 1e-12)
    if moves:
        out.update(_time_moves(tokens, positions, n_symbols, {n: chains[n] for n in (lo, hi)}, rng))
        compile_blocked(kept, lo)
    sample = held if held.n_strings else kept.subset(np.arange(min(200, kept.n_strings)))
    counts = np.ones((1, 65, n_symbols, 65), dtype=np.int32)  # one draw a call, as at large N
    plugin_log_prob(counts, 0.05, sample)
    forward = _min_time(lambda: plugin_log_prob(counts, 0.05, sample)) / (_forward_size(sample) * 65 ** 2)
    return {"position_seconds": _round_up(position), "lane_seconds": _round_up(lane),
            "forward_seconds": _round_up(forward), **out}


def _time_moves(tokens, positions, n_symbols, chains: dict, rng) -> dict[str, float]:
    """:func:`calibrate`'s blocked-move timing: ``chains`` maps two N to a ``(z, counts)`` chain
    state on ``tokens``; each rounded up by :func:`_round_up`."""
    from bayesfa.samplers.pfa import _ffbs_kernel as blk

    per = {}
    for n, (z, state) in chains.items():
        scratch = blk.scratch(tokens, n, n_symbols)
        blk.blocked_move(tokens, z, *state, rng, 0.05, *scratch)  # loaded from cache / compiled
        per[n] = _min_time(lambda: blk.blocked_move(tokens, z, *state, rng, 0.05, *scratch),
                           cap=TIMING_WINDOW) / max(1, positions.size)
    (lo, c_lo), (hi, c_hi) = sorted(per.items())
    square = max((c_hi - c_lo) / ((hi + 1) ** 2 - (lo + 1) ** 2), 1e-15)
    return {"move_seconds": _round_up(max(c_lo - square * (lo + 1) ** 2, 1e-15)),
            "move_square_seconds": _round_up(square)}


def _forward_size(corpus: Corpus) -> int:
    """``n_strings * max_len``: the padded letters a forward pass steps through."""
    lengths = np.diff(corpus.offsets)
    return int(corpus.n_strings * (lengths.max() if lengths.size else 0))


# -- the plan (pure functions of the schedule) ----------------------------------------------

def ladder(max_states: int = LADDER_MAX) -> list[int]:
    """N = 10, 15, 22, 34, 51, 76, 114, 171, 256, 384: ``round(10 * 1.5**k)`` up to ``max_states``."""
    out, k = [], 0
    while round(LADDER_START * LADDER_RATIO ** k) <= max_states:
        out.append(int(round(LADDER_START * LADDER_RATIO ** k)))
        k += 1
    return out


def sweep_cost(schedule: dict, n_states: int, n_positions: int) -> float:
    """Modelled CPU seconds of one sweep (:func:`calibrate`): from the schedule's
    ``rung_seconds`` table where it has one (its entry at N; off the table linear in N
    between the two nearest N, not in the padded width W, which several rungs share while
    their costs differ; its smallest N's cost below them, the line through its last two beyond
    them), else ``position_seconds + W lane_seconds`` per position (the schedules of budgets under
    :data:`RUNG_TABLE_BUDGET`, and of bayesfa before the table: they replay unchanged)."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    table = schedule.get("rung_seconds")
    if not table:
        return n_positions * (schedule["position_seconds"] + padded_width(n_states) * schedule["lane_seconds"])
    if str(n_states) in table:
        return n_positions * float(table[str(n_states)])
    ns = sorted(int(n) for n in table)
    per = [float(table[str(n)]) for n in ns]
    if n_states <= ns[0]:
        return n_positions * per[0]
    if len(ns) == 1:  # a table of one N: proportional to N above it
        return n_positions * per[0] * n_states / ns[0]
    k = min(int(np.searchsorted(ns, n_states)), len(ns) - 1)
    n0, n1, c0, c1 = ns[k - 1], ns[k], per[k - 1], per[k]
    return n_positions * (c0 + (c1 - c0) * (n_states - n0) / (n1 - n0))


def forward_cost(schedule: dict, n_states: int, size: int) -> float:
    """Modelled CPU seconds of one draw's forward pass over strings of ``size`` padded letters."""
    return size * (n_states + 1) ** 2 * schedule["forward_seconds"]


def move_cost(schedule: dict, n_states: int, n_positions: int) -> float:
    """Modelled CPU seconds of one blocked move of phases 1-2 (:func:`calibrate` with
    ``moves``): ``n_positions (move_seconds + (N+1)**2 move_square_seconds)``."""
    return n_positions * (schedule["move_seconds"] + (n_states + 1) ** 2 * schedule["move_square_seconds"])


def mean_sweep_cost(schedule: dict, n_states: int, n_positions: int, every: int = 0) -> float:
    """A sweep's modelled CPU seconds with one blocked move after every ``every`` sweeps (0:
    none) spread over them: :func:`sweep_cost` ``+`` :func:`move_cost` ``/ every``."""
    cost = sweep_cost(schedule, n_states, n_positions)
    return cost + move_cost(schedule, n_states, n_positions) / every if every else cost


def run_cost(schedule, n_states, n_positions, sweeps, draws, forward_size, every: int = 0) -> float:
    """A phase 1-2 chain's modelled CPU seconds: its sweeps, ``floor(sweeps / every)`` blocked
    moves (``every`` 0: none) and ``draws`` forward passes over ``forward_size`` letters."""
    moves = sweeps // every * move_cost(schedule, n_states, n_positions) if every else 0.0
    return sweeps * sweep_cost(schedule, n_states, n_positions) + moves + draws * forward_cost(
        schedule, n_states, forward_size)


def rung_sweeps(schedule: dict, money: float, n_positions: int, held_size: int,
                every: int = 0) -> tuple[int, list[int]]:
    """``(sweeps per rung, rungs)``: the longest ladder whose rungs all get at least
    :data:`MIN_RUNG_SWEEPS` sweeps within ``money`` seconds, and the sweeps it affords each
    (even; ``(0, [])`` when not even two rungs fit); with a blocked move after every ``every``
    sweeps (:func:`mean_sweep_cost`)."""
    rungs = ladder()
    while len(rungs) >= 2:
        per_sweep = sum(mean_sweep_cost(schedule, n, n_positions, every) for n in rungs)
        fwd = sum(RUNG_DRAWS * forward_cost(schedule, n, held_size) for n in rungs)
        sweeps = 2 * int((money - fwd) / per_sweep / 2)
        if sweeps >= MIN_RUNG_SWEEPS:
            return sweeps, rungs
        rungs = rungs[:-1]
    return 0, []


def beta_sweeps(schedule: dict, money: float, n_states: int, n_positions: int, held_size: int,
                every: int = 0) -> int:
    """Round 1's sweeps per candidate of phase 2 at ``n_states`` within ``money`` (even; round
    2 runs :data:`BETA_GROWTH` times as many): :func:`run_betas` runs it when it is at least
    :data:`MIN_RUNG_SWEEPS`; with a blocked move after every ``every`` sweeps."""
    runs = len(BETAS) + BETA_KEEP * BETA_GROWTH  # in units of a round-1 run's sweeps
    draws = (len(BETAS) + BETA_KEEP) * RUNG_DRAWS * forward_cost(schedule, n_states, held_size)
    per_sweep = mean_sweep_cost(schedule, n_states, n_positions, every)
    return 2 * int((money - draws) / runs / per_sweep / 2)


def ladder_ceiling(schedule: dict, money: float, chains: int, n_positions: int, all_positions: int,
                   held_size: int, sweeps: int, every: int = 0) -> int:
    """The largest N of the ladder that the phases after it afford: phase 2 at least
    :data:`MIN_RUNG_SWEEPS` sweeps per candidate within ``BETA_SHARE * money``
    (:func:`beta_sweeps`), and phase 3's ``chains`` chains at least the ladder's ``sweeps``
    per rung each, on all ``all_positions`` free positions, within its share ``(1 -
    LADDER_SHARE - BETA_SHARE) * money`` (its sweeps only: it gets more, whatever phases 1-2
    leave, and pays for blocked moves and draws from it). At least the ladder's second rung.
    ``every``: phase 2's blocked moves (:func:`beta_sweeps`).

    Without it (until benchmarks/RESULTS.md, "The ladder's ceiling") the ladder climbed as far
    as its own share afforded and the phases after it starved: PAutomaC 21, seed 3 of the
    all-47 run at 30f74f0, climbed to N = 384, won at 256, skipped phase 2 (-10 sweeps a
    candidate: beta stayed 0.05) and ran final chains of 119 sweeps; problem 13 ran final
    chains of 29 sweeps at N = 384. A pure function of the schedule: a run whose ladder stays
    under it is unchanged."""
    rungs = ladder()
    final_money = (1.0 - LADDER_SHARE - BETA_SHARE) * money
    top = rungs[min(1, len(rungs) - 1)]
    for n in rungs:
        if (beta_sweeps(schedule, BETA_SHARE * money, n, n_positions, held_size, every) >= MIN_RUNG_SWEEPS
                and max(1, chains) * sweeps * sweep_cost(schedule, n, all_positions) <= final_money):
            top = max(top, n)
        else:
            break
    return top


def measured_scale(step: dict) -> list[float]:
    """``[sweep, forward]``: a ladder rung's measured CPU over its modelled CPU (``step``, the
    ledger's record of the rung), its sweeps' and its held-out forward passes' apart, each
    taken at least :data:`MEASURED_FLOOR` (a measurement under it is the clock's noise),
    rounded up to a power of 2**(1/4) (:func:`_round_up`) and at most 1: the factor by which
    :func:`ladder_ceiling` may price the phases after the ladder below the calibration, never
    above it (:func:`run_ladder`'s measured ceiling only rises above the planned one)."""
    sweep = step["cpu_sweeps"] / max(step["cpu_model_sweeps"], 1e-15)
    forward = (step["cpu"] - step["cpu_sweeps"]) / max(step["cpu_model"] - step["cpu_model_sweeps"], 1e-15)
    return [min(1.0, _round_up(max(x, MEASURED_FLOOR))) for x in (sweep, forward)]


def scaled_schedule(schedule: dict, sweep: float, forward: float) -> dict:
    """``schedule`` with its sweep costs (``rung_seconds``, ``position_seconds``,
    ``lane_seconds``) times ``sweep`` and its forward cost times ``forward``
    (:func:`measured_scale`); its blocked-move costs as they are."""
    out = dict(schedule, position_seconds=schedule["position_seconds"] * sweep,
               lane_seconds=schedule["lane_seconds"] * sweep,
               forward_seconds=schedule["forward_seconds"] * forward)
    if schedule.get("rung_seconds"):
        out["rung_seconds"] = {n: float(x) * sweep for n, x in schedule["rung_seconds"].items()}
    return out


def phase2_schedule(schedule: dict, records: list[dict], best: int, ceiling: int) -> dict:
    """The schedule phase 2 is planned with: ``schedule`` itself, or for a winner (``records[best]``,
    the ladder's records) above the planned ``ceiling``, ``schedule`` priced by the scale
    that admitted it (``ladder_scales`` of the rung below, :func:`scaled_schedule`): the
    measured ceiling counted on phase 2 getting its minimum sweeps at those prices, and at
    the calibration's it could get fewer and be skipped."""
    if records[best]["states"] <= ceiling:
        return schedule
    return scaled_schedule(schedule, *schedule["ladder_scales"][str(records[best - 1]["states"])])


def draw_plan(sweeps: int, draws: int) -> tuple[int, int, int]:
    """``(burn_in, period, n_draws)`` of a run of about ``sweeps`` sweeps, its second half
    recorded as at most ``draws`` draws."""
    burn = sweeps // 2
    n_draws = max(1, min(draws, sweeps - burn))
    period = max(1, (sweeps - burn) // n_draws)
    return burn, period, n_draws


# -- state split and held-out scores ---------------------------------------------------------

def split_states(z: np.ndarray, tokens: np.ndarray, n_from: int, n_to: int,
                 rng: np.random.Generator) -> np.ndarray:
    """A path of ``n_to`` states from one of ``n_from``: each of the ``n_to - n_from`` most
    visited states ``k`` (ties by index) gets a copy ``n_from + 1 + r`` (r its rank), and each
    visit of ``k`` moves to the copy with probability 1/2. Positions that are not free (state
    0) are untouched; mapping every copy back to its ``k`` gives ``z`` again. z int32 ``[T+1]``."""
    if not n_from <= n_to <= 2 * n_from:
        raise ValueError(f"cannot split {n_from} states into {n_to}")
    visits = np.bincount(z[:-1], minlength=n_from + 1)[1:n_from + 1]  # C_i of Definition 2
    busiest = np.argsort(-visits, kind="stable")[:n_to - n_from] + 1
    copy_of = np.zeros(n_from + 1, dtype=np.int32)
    copy_of[busiest] = n_from + 1 + np.arange(busiest.size, dtype=np.int32)
    out = np.array(z, dtype=np.int32)
    coin = rng.random(out.size) < 0.5
    move = (copy_of[out] > 0) & coin
    out[move] = copy_of[out[move]]
    return out


def merge_copies(z: np.ndarray, n_from: int, n_to: int, z_parent: np.ndarray, tokens) -> np.ndarray:
    """Inverse of :func:`split_states` (for tests): each copy mapped back to its state."""
    visits = np.bincount(z_parent[:-1], minlength=n_from + 1)[1:n_from + 1]
    busiest = np.argsort(-visits, kind="stable")[:n_to - n_from] + 1
    back = np.arange(n_to + 1, dtype=np.int32)
    back[n_from + 1:] = busiest
    return back[z]


def heldout_per_string(counts: np.ndarray, beta: float, held: Corpus) -> np.ndarray:
    """Eq. 6 of each held-out string over the draws ``counts [D, N+1, A, N+1]``:
    ``log mean_d Pr(b | xi~(d))`` (the plug-in of Sect. 2.3), ``[n_held]``."""
    from bayesfa.forward import log_mean_exp
    plugin_log_prob = _front().plugin_log_prob

    return log_mean_exp(plugin_log_prob(counts, beta, held), axis=0)


def _scores(per: np.ndarray) -> dict[str, float]:
    """A candidate's held-out log predictive (sum over strings) and its standard error
    ``sqrt(n) sd`` (of the sum itself; comparisons use the paired SE of :func:`compare`)."""
    return {"heldout": float(per.sum()), "heldout_se": float(np.sqrt(per.size) * per.std(ddof=1))}


def compare(new: np.ndarray, old: np.ndarray) -> tuple[float, float]:
    """``(gain, se)``: ``sum(new - old)`` over the held-out strings and the standard error of
    that sum, ``sqrt(n) * sd(new - old)`` (paired: both scored on the same strings)."""
    d = np.asarray(new) - np.asarray(old)
    se = float(np.sqrt(d.size) * d.std(ddof=1)) if d.size > 1 else float("inf")
    return float(d.sum()), se


# -- the phases ------------------------------------------------------------------------------

def _seed(seed, *index: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=(_KEY,) + tuple(int(i) for i in index))


class _Ledger:
    """Modelled and measured CPU of each step; phases 1-2 decide by the modelled figures only
    (phase 3 by the costs the schedule records, :func:`run_final`)."""

    def __init__(self, money: float):
        self.money, self.spent, self.steps = money, 0.0, []

    def run(self, what: dict, cost: float, fn, score=None, sweeps_cost: float | None = None):
        """``fn()`` charged ``cost``; with ``score``, then ``score(fn())`` (the held-out
        forward passes), the two timed apart (``sweeps_cost`` is the first's share)."""
        t0 = cpu_seconds()
        out = fn()
        t1 = cpu_seconds()
        step = {**what, "cpu_model": cost, "cpu": t1 - t0}
        if score is not None:
            out = (out, score(out))
            step.update(cpu_model_sweeps=sweeps_cost, cpu_sweeps=t1 - t0, cpu=cpu_seconds() - t0)
        self.spent += cost
        self.steps.append(step)
        return out


def _chain(corpus: Corpus, n_states, beta, sweeps, draws, seed_seq, init_z, predict=None,
           max_draws=None, blocked_every=0):
    _run_chain = _front()._run_chain

    burn, period, n_draws = draw_plan(sweeps, draws)
    return _run_chain(corpus.tokens, corpus.alphabet_size + 1, n_states, beta, burn, period, n_draws,
                      seed_seq, init_z=init_z, predict=predict, max_draws=max_draws,
                      blocked_every=blocked_every)


def run_ladder(kept: Corpus, held: Corpus, schedule: dict, money: float, seed, ledger: _Ledger,
               max_states: int | None = None, every: int = 0, ceiling=None):
    """Phase 1 (module docstring): returns ``(rung records, winner index, paths by rung,
    sweeps per rung)``. ``max_states``: the ladder stops before a larger rung
    (:func:`ladder_ceiling`); the sweeps per rung are planned as without it. ``every``: a
    blocked move after every ``every`` sweeps of each rung (0: none).

    ``ceiling`` (a function of a schedule, :func:`ladder_ceiling` with the fit's other
    arguments): a rung above ``max_states`` runs when ``ceiling`` of the schedule priced by
    the costs measured on the rung below it (:func:`measured_scale`, :func:`scaled_schedule`)
    admits it; its record holds that ``ceiling``. The scales are recorded in the schedule's
    ``ladder_scales`` (N of the measured rung -> ``[sweep, forward]``; :func:`_schedule` starts
    it empty), and a scale the schedule has (``--schedule``) is read, not measured, so the
    replay repeats the decision."""
    from bayesfa.samplers.chains import n_free_positions

    m, size = n_free_positions(kept.tokens), _forward_size(held)
    sweeps, rungs = rung_sweeps(schedule, money, m, size, every)
    moves = {"blocked_every": every} if every else {}
    if max_states is not None and ceiling is None:
        rungs = [n for n in rungs if n <= max_states]
    records, paths, best, z, misses = [], [], None, None, 0
    for r, n in enumerate(rungs):
        above = {}
        if max_states is not None and n > max_states:
            scales = schedule.setdefault("ladder_scales", {})
            key = str(rungs[r - 1])
            if key not in scales:
                scales[key] = measured_scale(ledger.steps[-1])
            top = int(ceiling(scaled_schedule(schedule, *scales[key])))
            if top < n:
                break
            above = {"ceiling": top}
        if z is not None:
            z = split_states(z, kept.tokens, rungs[r - 1], n, np.random.default_rng(_seed(seed, 9, r)))
        cost = run_cost(schedule, n, m, sweeps, RUNG_DRAWS, size, every)
        out, per = ledger.run({"phase": "ladder", "states": n, "beta": BETA0, "sweeps": sweeps, **moves},
                              cost,
                              lambda: _chain(kept, n, BETA0, sweeps, RUNG_DRAWS, _seed(seed, 0, r), z,
                                             blocked_every=every),
                              lambda o: heldout_per_string(o[0], BETA0, held),
                              run_cost(schedule, n, m, sweeps, 0, size, every))
        z = out[5]
        rec = {"states": n, "beta": BETA0, "sweeps": sweeps, **_scores(per), **above}
        records.append(rec)
        paths.append((z.copy(), per))
        best, misses, stop = ladder_step(rec, per, paths[best][1] if best is not None else None,
                                         r, best, misses)
        if stop:
            break
    return records, best, paths, sweeps


def ladder_step(rec: dict, per: np.ndarray, best_per: np.ndarray | None, r: int, best: int | None,
                misses: int) -> tuple[int, int, bool]:
    """The ladder's stopping rule after rung ``r`` (record ``rec``, held-out scores ``per``):
    ``(best rung, misses in a row, stop)``. A rung that gains on the best so far by more than
    the standard error of the paired difference (:func:`compare`; recorded as ``gain`` and
    ``gain_se``) becomes the best; one that does not is a miss (``rec["miss"]``, its count in
    a row), and the ladder stops at the :data:`PATIENCE`-th miss in a row (``rec["stop"]``),
    its winner the best rung, not the last."""
    if best_per is None:
        return r, 0, False
    rec["gain"], rec["gain_se"] = compare(per, best_per)
    if rec["gain"] > rec["gain_se"]:
        return r, 0, False
    misses += 1
    rec["miss"] = misses
    if misses >= PATIENCE:
        rec["stop"] = f"{PATIENCE} rungs in a row gained within their standard error"
        return best, misses, True
    return best, misses, False


def run_betas(kept: Corpus, held: Corpus, schedule: dict, money: float, n_states: int, z0, seed,
              ledger: _Ledger, every: int = 0):
    """Phase 2: successive halving over :data:`BETAS` from the path ``z0``; returns
    ``(records, winning beta, its path)``; ``(records, BETA0, z0)`` when the budget affords
    fewer than :data:`MIN_RUNG_SWEEPS` sweeps per candidate. ``every``: a blocked move after
    every ``every`` sweeps of each candidate (0: none)."""
    from bayesfa.samplers.chains import n_free_positions

    m, size = n_free_positions(kept.tokens), _forward_size(held)
    sweeps = beta_sweeps(schedule, money, n_states, m, size, every)
    if sweeps < MIN_RUNG_SWEEPS:
        return [{"skipped": "budget", "sweeps": sweeps}], BETA0, z0
    cost = run_cost(schedule, n_states, m, sweeps, RUNG_DRAWS, size, every)
    sweeps2 = BETA_GROWTH * sweeps
    cost2 = run_cost(schedule, n_states, m, sweeps2, RUNG_DRAWS, size, every)
    moves = {"blocked_every": every} if every else {}
    records, state, betas = [], {}, list(BETAS)

    def round1(b: int, beta: float, **extra) -> None:
        out, per = ledger.run(
            {"phase": "beta", "round": 1, "states": n_states, "beta": beta, "sweeps": sweeps, **moves}, cost,
            lambda: _chain(kept, n_states, beta, sweeps, RUNG_DRAWS, _seed(seed, 1, b), z0,
                           blocked_every=every),
            lambda o: heldout_per_string(o[0], beta, held), run_cost(schedule, n_states, m, sweeps, 0, size, every))
        records.append({"round": 1, "states": n_states, "beta": beta, "sweeps": sweeps, **_scores(per), **extra})
        state[b] = out[5]

    for b, beta in enumerate(BETAS):
        round1(b, beta)
    below, above = list(BETAS_BELOW), list(BETAS_ABOVE)
    for _ in range(BETA_EXTEND):  # past a winning edge (BETA_EXTEND)
        best = betas[max(range(len(betas)), key=lambda b: (records[b]["heldout"], -b))]
        edge = below if best == min(betas) else above if best == max(betas) else []
        if not edge:
            break
        betas.append(edge.pop(0))
        round1(len(betas) - 1, betas[-1], extension=True)
    order = sorted(range(len(betas)), key=lambda b: -records[b]["heldout"])[:BETA_KEEP]
    final, where = {}, {}
    for b in sorted(order):
        where[b] = len(records)
        beta = betas[b]
        out, per = ledger.run(
            {"phase": "beta", "round": 2, "states": n_states, "beta": beta, "sweeps": sweeps2, **moves}, cost2,
            lambda: _chain(kept, n_states, beta, sweeps2, RUNG_DRAWS, _seed(seed, 2, b), state[b],
                           blocked_every=every),
            lambda o: heldout_per_string(o[0], beta, held), run_cost(schedule, n_states, m, sweeps2, 0, size, every))
        records.append({"round": 2, "states": n_states, "beta": beta, "sweeps": sweeps2, **_scores(per)})
        final[b] = (float(per.sum()), out[5], per)
    win = max(final, key=lambda b: (final[b][0], -b))
    for b in final:
        if b != win:
            gain, se = compare(final[win][2], final[b][2])
            records[where[b]].update(winner_gain=gain, winner_gain_se=se)
    return records, betas[win], final[win][1]


def embed_path(z_kept: np.ndarray, corpus: Corpus, kept_idx: np.ndarray, n_states: int,
               rng: np.random.Generator) -> np.ndarray:
    """A path of the whole ``corpus`` whose kept strings (``kept_idx``, in order) follow
    ``z_kept`` and whose other strings have uniformly random states (0 where Algorithm 1
    fixes it)."""
    from bayesfa.samplers.chains import free_positions

    z = np.zeros(corpus.n_tokens + 1, dtype=np.int32)
    pos = free_positions(corpus.tokens)
    z[pos] = rng.integers(1, n_states + 1, size=pos.size, dtype=np.int32)
    starts, lengths = corpus.offsets[kept_idx], np.diff(corpus.offsets)[kept_idx]
    k_off = np.concatenate([[0], np.cumsum(lengths)])
    src = np.arange(int(k_off[-1]))
    z[np.repeat(starts - k_off[:-1], lengths) + src] = z_kept[src]
    return z


WARM_SWEEPS = 20  # Gibbs sweeps over the held-out strings' positions only, before a final chain


def warm_path(corpus: Corpus, z: np.ndarray, positions: np.ndarray, n_states: int, beta: float,
              rng: np.random.Generator) -> np.ndarray:
    """:data:`WARM_SWEEPS` Gibbs sweeps (Eq. 9) of ``z`` over ``positions`` only (the held-out
    strings'), the counts of every string in place: each update leaves the posterior of Eq. 4
    invariant, so the final chain starts from the winner's path with those strings drawn
    given it."""
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern
    front = _front()

    z = np.array(z, dtype=np.int32)
    state = front.new_counts(n_states, corpus.alphabet_size + 1, front.count_dtype(corpus.n_tokens))
    kern.fill_counts(corpus.tokens, z, *state, float(beta))
    if positions.size:
        kern.sweeps(WARM_SWEEPS, positions, corpus.tokens, z, *state, rng, float(beta))
    return z


def final_plan(costs: dict, money: float, chains: int, n_states: int, n_symbols: int,
               stored: bool, blocked_every: int = 0) -> dict:
    """Phase 3's sweeps: ``chains`` chains of equal length within ``money`` (fewer chains when
    one would get under :data:`MIN_RUNG_SWEEPS`; at least one of that many), about a tenth as
    burn-in, at most :data:`FINAL_DRAWS` draws each (fewer when their counts are kept and
    would pass :data:`STORED_BYTES`), one blocked move after every ``blocked_every`` sweeps
    (0: none). Every sweep the plan affords is run: the draws' period is rounded down and the
    sweeps it leaves over go to the burn-in.

    ``costs`` (CPU seconds, :func:`run_final`): ``sweep`` one collapsed sweep of all training
    strings, ``round`` (with ``blocked_every = K``) K such sweeps and the blocked move after
    them, ``draw`` recording one draw, ``forward`` one draw's forward pass over the test
    strings (0 without them), ``start`` a chain's start (its warm-up sweeps and counts). A
    chain of ``S`` sweeps and ``D`` draws is modelled as ``start + floor(S / K) round +
    (S mod K) sweep + D (draw + forward)`` (``start + S sweep + D (draw + forward)`` without
    blocked moves)."""
    draws = FINAL_DRAWS
    if stored:
        per_draw = (n_states + 1) ** 2 * n_symbols * 4
        draws = max(1, min(draws, STORED_BYTES // (per_draw * chains)))
    every = int(blocked_every)
    record = costs["draw"] + costs["forward"]

    def chain_cost(n_sweeps: int, n_draws: int) -> float:
        return _chain_cost(costs, every, n_sweeps, n_draws)

    per_sweep = costs["round"] / every if every else costs["sweep"]
    while True:
        each = money / chains
        sweeps = max(0, int((each - costs["start"] - draws * record) / per_sweep))
        if sweeps - sweeps // 10 < draws:  # short chains: a draw after every recorded sweep
            sweeps = max(0, int((each - costs["start"]) / (per_sweep + 0.9 * record)))

        def n_draws_of(n_sweeps: int) -> int:
            return max(1, min(draws, n_sweeps - n_sweeps // 10))

        # the estimate above averages the blocked moves over the sweeps; floor(S / K) moves
        # are run, so step to the longest chain whose exact cost fits
        while chain_cost(sweeps + 1, n_draws_of(sweeps + 1)) <= each:
            sweeps += 1
        while sweeps > 0 and chain_cost(sweeps, n_draws_of(sweeps)) > each:
            sweeps -= 1
        if sweeps >= MIN_RUNG_SWEEPS or chains == 1:
            break
        chains -= 1
    sweeps = max(sweeps, MIN_RUNG_SWEEPS)
    n_draws = max(1, min(draws, sweeps - sweeps // 10))
    period = max(1, (sweeps - sweeps // 10) // n_draws)
    burn = sweeps - n_draws * period
    return {"chains": chains, "burn_in": burn, "period": period, "n_draws": n_draws,
            "sweeps": sweeps, "blocked_every": every,
            "blocked_moves": sweeps // every if every else 0,
            "cpu_model_per_chain": chain_cost(sweeps, n_draws)}


def _chain_cost(costs: dict, every: int, n_sweeps: int, n_draws: int) -> float:
    """:func:`final_plan`'s model of a final chain of ``n_sweeps`` sweeps and ``n_draws`` draws."""
    rounds, rest = divmod(n_sweeps, every) if every else (0, n_sweeps)
    return (costs["start"] + rounds * costs["round"] + rest * costs["sweep"]
            + n_draws * (costs["draw"] + costs["forward"]))


def chain_resize(target: float, spent: float, chains_left: int, cpu: float, model: float) -> list[float]:
    """``[money, scale]`` of the next final chain (:data:`RESIZE_LIMITS`): ``target`` (CPU
    seconds the fit aims at) less ``spent`` (the fit's CPU so far, rounded up), over the
    ``chains_left`` chains still to run (this one among them); and the final chains' measured
    ``cpu`` over their modelled ``model`` so far, held within RESIZE_LIMITS. Both rounded to a
    power of 2**(1/32) (:func:`_round_fine`), as phase 3's costs are."""
    left = target - _round_fine(spent, up=True)
    scale = min(max(cpu / max(model, 1e-15), RESIZE_LIMITS[0]), RESIZE_LIMITS[1])
    return [_round_fine(max(left, 1e-15) / chains_left), _round_fine(scale)]


def resized_chain(costs: dict, money: float, scale: float, n_draws: int, every: int) -> dict:
    """A final chain after the first, sized again (:data:`RESIZE_LIMITS`): the most sweeps whose
    modelled CPU, :func:`final_plan`'s model with ``costs`` times ``scale``, fits ``money``,
    with ``n_draws`` draws as the first chain's (the chains' draws stack) and at least a tenth
    as burn-in; at least the fewest sweeps that hold those draws so. Returns ``sweeps``,
    ``burn_in``, ``period`` and ``cpu_model`` (the scaled model)."""
    def cost(n_sweeps):
        return scale * _chain_cost(costs, every, n_sweeps, n_draws)

    least = n_draws
    while least - least // 10 < n_draws:
        least += 1
    per_sweep = costs["round"] / every if every else costs["sweep"]
    rest = money / scale - costs["start"] - n_draws * (costs["draw"] + costs["forward"])
    sweeps = max(least, int(rest / per_sweep) if per_sweep > 0 else least)
    while cost(sweeps + 1) <= money:
        sweeps += 1
    while sweeps > least and cost(sweeps) > money:
        sweeps -= 1
    period = (sweeps - sweeps // 10) // n_draws
    return {"sweeps": sweeps, "burn_in": sweeps - n_draws * period, "period": period,
            "cpu_model": cost(sweeps)}


def measured_costs(steps: list[dict], n_states: int, n_positions: int, held_size: int,
                   draw_seconds: float, schedule: dict | None = None) -> dict[str, float]:
    """Phase 3's sweep and forward costs at the winner's N, measured on the chains of phases
    1-2 that ran at that N (``steps``: the ledger's; the beta phase's when it ran, else the
    ladder's rung): ``final_sweep_seconds``, CPU seconds of a sweep per free position (their
    sweeps' CPU less their draws' recording, ``draw_seconds`` each, over sweeps x
    ``n_positions``), and ``final_forward_seconds``, of a forward pass per draw, padded letter
    and ``(N+1)**2`` (their held-out scoring over ``held_size`` letters). Each rounded to the
    nearest power of 2**(1/32) (:func:`_round_fine`). With the ``schedule`` (:func:`calibrate`'s
    model), neither is taken below :data:`MEASURED_FLOOR` times the model's. Steps that made
    blocked moves (``blocked_every``) count the share of their sweeps' CPU that the model gives
    the sweeps (:func:`sweep_cost` against :func:`move_cost`): an error of the model's split
    moves that share, not the whole CPU as subtracting the moves' modelled CPU would."""
    at_n = [s for s in steps if s.get("states") == n_states and "cpu_sweeps" in s]
    beta = [s for s in at_n if s["phase"] == "beta"]
    use = beta or at_n
    n_draws = [draw_plan(s["sweeps"], RUNG_DRAWS)[2] for s in use]
    sweep_cpu = sum(s["cpu_sweeps"] for s in use) - sum(n_draws) * draw_seconds
    moves = sum(s["sweeps"] // s["blocked_every"] for s in use if s.get("blocked_every"))
    if moves:  # the sweeps' share of their CPU, in the proportion the model gives them
        swept = sum(s["sweeps"] for s in use) * sweep_cost(schedule, n_states, n_positions)
        sweep_cpu *= swept / (swept + moves * move_cost(schedule, n_states, n_positions))
    work = sum(s["sweeps"] for s in use) * n_positions
    forward_cpu = sum(s["cpu"] - s["cpu_sweeps"] for s in use)
    forward_work = sum(n_draws) * held_size * (n_states + 1) ** 2
    sweep = max(sweep_cpu, 1e-9) / max(work, 1)
    forward = max(forward_cpu, 1e-9) / max(forward_work, 1)
    if schedule is not None:
        # a measurement under MEASURED_FLOOR of the calibrated model is the clock's or the
        # draws' subtraction's noise, not a sweep (a few strings, a sweep of microseconds):
        # sized from it, phase 3 planned 1e11 sweeps for a 1 s budget; the model stands then
        sweep = max(sweep, MEASURED_FLOOR * sweep_cost(schedule, n_states, 1))
        forward = max(forward, MEASURED_FLOOR * schedule["forward_seconds"])
    return {"final_sweep_seconds": _round_fine(sweep), "final_forward_seconds": _round_fine(forward)}


def calibrate_final(kept: Corpus, z_kept: np.ndarray, n_states: int, beta: float,
                    blocked_every: int) -> dict[str, float]:
    """Timings at the winner's N on the kept strings from the winner's path ``z_kept`` (a copy
    is moved, never the chain's; its Generator is seeded apart): ``final_draw_seconds``, the
    CPU seconds of recording one draw (Eq. 4's log joint, the counts; :func:`_min_time`), and
    with ``blocked_every = K`` ``blocked_round_seconds``, of a blocked round per free position:
    K collapsed sweeps and one blocked move, as the final chains run them, repeated from the
    winner's path for :data:`BLOCKED_TIMING` seconds (at least once) and averaged (a round
    times the move and also the sweeps after it, which move more states than a settled chain's;
    the mean, not the least, as the final chains pay the mean), with ``blocked_round_every =
    K``. Each rounded up by :func:`_round_fine`. With K, the blocked chain's drivers (compiled
    per process) are first called on a few strings, so that their compiling is billed here,
    before phase 3 is sized, and not to the final chains."""
    from bayesfa.samplers.chains import free_positions
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern

    new_counts = _front().new_counts
    tokens, n_symbols = kept.tokens, kept.alphabet_size + 1
    positions = free_positions(tokens)
    z = np.array(z_kept, dtype=np.int32)
    state = new_counts(n_states, n_symbols, _front().count_dtype(kept.n_tokens))
    kern.fill_counts(tokens, z, *state, float(beta))
    rng = np.random.default_rng(0)
    n = n_states + 1
    outs = (np.zeros((1, n, n_symbols, n), dtype=np.int32), np.zeros(1), np.zeros(1, dtype=np.int32),
            np.zeros(1, dtype=np.int32), np.zeros((1, kern.STATS), dtype=np.int64))
    # compiled per process on its first call: with blocked moves in phases 1-2 no chain has called
    # it yet, and its compiling (0.68 s on PAutomaC 1) timed as a draw cut phase 3 to half its money
    kern.sample_draws(0, positions, tokens, z, *state, rng, float(beta), *outs)
    draw = _min_time(lambda: kern.sample_draws(0, positions, tokens, z, *state, rng, float(beta), *outs),
                     cap=TIMING_WINDOW)
    out = {"final_draw_seconds": _round_fine(draw, up=True)}
    every = int(blocked_every)
    if every:
        from bayesfa.samplers.pfa import _ffbs_kernel as blk

        compile_blocked(kept, n_states)
        scratch = blk.scratch(tokens, n_states, n_symbols)
        rounds, t0 = 0, time.thread_time()
        while True:
            blk.sweeps(every, 0, every, positions, tokens, z, *state, rng, float(beta), *scratch)
            rounds += 1
            elapsed = time.thread_time() - t0
            if elapsed >= BLOCKED_TIMING:
                break
        out["blocked_round_seconds"] = _round_fine(elapsed / rounds / max(1, positions.size), up=True)
        out["blocked_round_every"] = every
    return out


def compile_blocked(kept: Corpus, n_states: int) -> None:
    """The blocked chain's drivers (:func:`bayesfa.samplers.pfa._ffbs_kernel.sweeps` and
    ``sample_draws``, compiled per process) called on a few of ``kept``'s strings at
    ``n_states``, so that their compiling is billed to the timing that calls this, before the
    phases it sizes, and not to their first chain."""
    from bayesfa.samplers.chains import free_positions
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kern
    from bayesfa.samplers.pfa import _ffbs_kernel as blk

    few = kept.subset(np.arange(min(10, kept.n_strings)))
    n_symbols = few.alphabet_size + 1
    zf = np.zeros(few.n_tokens + 1, dtype=np.int32)
    pf = free_positions(few.tokens)
    zf[pf] = 1
    sf = _front().new_counts(n_states, n_symbols)
    kern.fill_counts(few.tokens, zf, *sf, 0.05)
    scratch_f = blk.scratch(few.tokens, n_states, n_symbols)
    rng = np.random.default_rng(0)
    n = n_states + 1
    outs = (np.zeros((1, n, n_symbols, n), dtype=np.int32), np.zeros(1), np.zeros(1, dtype=np.int32),
            np.zeros(1, dtype=np.int32), np.zeros((1, kern.STATS), dtype=np.int64))
    blk.sweeps(1, 0, 1, pf, few.tokens, zf, *sf, rng, 0.05, *scratch_f)
    blk.sample_draws(0, 0, 1, pf, few.tokens, zf, *sf, rng, 0.05, *scratch_f, *outs)


_FRONT = None  # the cgs-pfa front module while fit_auto runs (see fit_auto)


def _front():
    """The cgs-pfa front (:mod:`bayesfa.samplers.pfa.cgs_pfa`: ``_run_chain``, ``new_counts``,
    ``plugin_log_prob``, ...) that :func:`fit_auto` was handed."""
    if _FRONT is None:
        raise RuntimeError("bayesfa.samplers.pfa.auto runs inside fit_auto(..., front=cgs_pfa) only")
    return _FRONT


@contextlib.contextmanager
def front_session(front):
    """The context :func:`fit_auto` runs in, for any caller of this module's phases (e.g.
    ``benchmarks/pautomac_mixing.py``): :func:`_front` returns ``front`` (the cgs-pfa front
    module), and BLAS runs on one thread (the forward passes' matrix products): on a shared
    machine OpenBLAS's threads spin and cost several times the CPU of one thread (measured:
    0.18 s against 0.03 s for one draw of N = 114 on PAutomaC 1's test strings). Needs
    threadpoolctl; without it BLAS keeps its threads. Results do not depend on it."""
    global _FRONT
    previous, _FRONT = _FRONT, front
    try:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - installed with scikit-learn
            limit = contextlib.nullcontext()
        else:
            limit = threadpool_limits(1, user_api="blas")
        with limit:
            yield
    finally:
        _FRONT = previous


def fit_auto(corpus: Corpus, options: dict[str, Any], seed, predict: Corpus | None = None, *, front):
    """The ``--auto`` fit of the cgs-pfa ``front`` (:mod:`bayesfa.samplers.pfa.cgs_pfa`, which
    calls this from its ``fit`` and hands itself in: the front imports this module, so this
    module does not import it back, and the import graph stays acyclic, as
    tests/test_architecture.py requires): :func:`_fit_auto` in :func:`front_session`."""
    with front_session(front):
        return _fit_auto(corpus, options, seed, predict)


def _fit_auto(corpus: Corpus, options: dict[str, Any], seed, predict: Corpus | None = None):
    """``bayesfa fit --method cgs-pfa --auto``: the three phases of the module docstring.

    Returns a :class:`bayesfa.methods.FitResult` as :meth:`_CGSPFA.fit` does (counts
    ``[chain, draw, N+1, A, N+1]`` of the final chains; ``arrays["beta"]``: the chosen beta,
    which predictions use), its ``info["auto"]`` holding every decision: the schedule, each
    candidate's held-out score with its standard error, modelled and measured CPU, the
    winner."""
    front = _front()
    holdout_split = front.holdout_split

    start = cpu_seconds()
    check_auto_options(options)
    wide_counts(corpus, options)
    kept_idx, held_idx = holdout_split(corpus.n_strings, HOLDOUT, np.random.SeedSequence(seed))
    if held_idx.size < 2:
        raise InputError(f"--auto holds out {HOLDOUT:g} of the training strings and needs at "
                         f"least 2 of them; there are {corpus.n_strings} strings")
    kept, held = corpus.subset(kept_idx), corpus.subset(held_idx)
    schedule = _schedule(options, kept, held, start)
    budget = schedule["budget"]
    money = budget * SAFETY - schedule["overhead_seconds"]
    every, every_off = search_blocked_every(options, budget, wide_counts(kept, options, "search"),
                                            schedule)
    ledger = _Ledger(money)
    from bayesfa.samplers.chains import free_positions, n_free_positions

    m, size = n_free_positions(kept.tokens), _forward_size(held)
    planned, _ = rung_sweeps(schedule, money * LADDER_SHARE, m, size, every)
    chains, all_m = int(options.get("chains", 1)), free_positions(corpus.tokens).size

    def measured_ceiling(priced: dict) -> int:  # the ceiling with the schedule ``priced``
        return ladder_ceiling(priced, money, chains, m, all_m, size, planned, every)

    ceiling = measured_ceiling(schedule)
    # a schedule of bayesfa before the measured ceiling has no ladder_scales: it replays as it ran
    rungs, best, paths, sweeps = run_ladder(
        kept, held, schedule, money * LADDER_SHARE, seed, ledger, max_states=ceiling, every=every,
        ceiling=measured_ceiling if "ladder_scales" in schedule else None)
    if best is None:
        raise InputError(f"--budget {budget:g} CPU seconds is too small for these "
                         f"{corpus.n_tokens} tokens: two rungs of the N ladder need more")
    n_star = rungs[best]["states"]
    betas, beta_star, z_win = run_betas(kept, held, phase2_schedule(schedule, rungs, best, ceiling),
                                        money * BETA_SHARE, n_star,
                                        paths[best][0], seed, ledger, every)
    plan, outs, planned = run_final(corpus, kept_idx, kept, held, z_win, n_star, beta_star, schedule,
                                    ledger, options, predict, seed, start)
    cpu = cpu_seconds() - start
    auto = {"schedule": schedule, "budget": budget, "plan_money": money,
            "holdout_strings": int(held_idx.size), "ladder_sweeps": sweeps,
            "ladder_ceiling": int(ceiling), "search_blocked_every": int(every),
            **({"search_blocked_off": every_off} if every_off is not None else {}), "ladder": rungs,
            "betas": betas, "winner": {"states": int(n_star), "beta": float(beta_star)},
            "final": plan, "steps": ledger.steps, "cpu_planned": planned,
            "cpu_seconds": cpu, "overshoot": cpu / budget - 1.0}
    return _result(outs, plan, n_star, beta_star, corpus, predict, auto)


def _schedule(options: dict, kept: Corpus, held: Corpus, start: float) -> dict:
    """The recorded schedule of ``--schedule FILE``, or a new one timed here (:func:`calibrate`;
    ``overhead_seconds``: the CPU spent so far, rounded up)."""
    budget = options.get("budget")
    if options.get("schedule") is not None:
        schedule = read_schedule(options["schedule"])
        if budget is not None and float(budget) != float(schedule["budget"]):
            raise InputError(f"--budget {budget} differs from the schedule's {schedule['budget']}",
                             options["schedule"])
        return {"format": SCHEDULE_FORMAT, **schedule, "budget": float(schedule["budget"])}
    moves = search_blocked_every(options, float(budget), wide_counts(kept, options, "search"))[0] > 0
    schedule = {"format": SCHEDULE_FORMAT, "budget": float(budget),
                **calibrate(kept, held, rungs=float(budget) >= RUNG_TABLE_BUDGET, moves=moves)}
    schedule["overhead_seconds"] = _round_up(cpu_seconds() - start)
    schedule["ladder_scales"] = {}  # filled by run_ladder when the ladder meets its ceiling
    return schedule


def wide_counts(corpus: Corpus, options: dict, phase: str = "final") -> bool:
    """Whether the chains of ``phase`` keep float64 counts (``corpus``, their strings, of 2**24
    tokens or more, :func:`bayesfa.samplers.pfa.cgs_pfa.count_dtype`): the final chains run on
    all training strings, phases 1-2's (``phase="search"``) on the kept ones. Then
    ``--final-blocked-every K > 0`` (``--search-blocked-every K > 0``) is a one-line error, as
    ``--blocked-every`` is for CGS-PFA (only the plain gibbs sweep runs float64 counts)."""
    front = _front()
    if front.count_dtype(corpus.n_tokens) is np.float32:
        return False
    key = "final_blocked_every" if phase == "final" else "search_blocked_every"
    if options.get(key):
        which = "training corpus" if phase == "final" else "training corpus less its held-out strings"
        raise InputError(f"the {which} has {corpus.n_tokens} tokens: from "
                         f"{front.FLOAT32_EXACT_TOKENS} tokens on the counts are float64, which "
                         f"only the plain gibbs sweep runs (not --{key.replace('_', '-')})")
    return True


def final_blocked_every(options: dict, share: float, wide: bool = False) -> tuple[int, str | None]:
    """``(K, why off)``: the final chains' blocked moves, one after every K sweeps (0: none):
    ``options["final_blocked_every"]`` when given, always (0 turns them off); else
    :data:`FINAL_BLOCKED_EVERY`, unless the counts are float64 (``wide``,
    :func:`wide_counts`) or phase 3's ``share`` of the plan (modelled CPU seconds) is under
    :data:`BLOCKED_MIN_SECONDS`."""
    given = options.get("final_blocked_every")
    if given is not None:
        return int(given), (None if given else "--final-blocked-every 0")
    if wide:
        return 0, "float64 counts (2**24 tokens or more): the plain gibbs sweep only"
    every = FINAL_BLOCKED_EVERY
    if every and share < BLOCKED_MIN_SECONDS:
        return 0, (f"phase 3's share of the plan, {share:.3g} CPU s, is under "
                   f"BLOCKED_MIN_SECONDS = {BLOCKED_MIN_SECONDS:g}")
    return every, None


def search_blocked_every(options: dict, budget: float, wide: bool = False,
                         schedule: dict | None = None) -> tuple[int, str | None]:
    """``(K, why off)``: phases 1-2's blocked moves, one after every K sweeps of each of their
    chains (0: none): ``options["search_blocked_every"]`` when given; else
    :data:`SEARCH_BLOCKED_EVERY`, unless the kept strings' counts are float64 (``wide``) or the
    phases' share of the ``budget``, ``(LADDER_SHARE + BETA_SHARE) SAFETY budget``, is under
    :data:`BLOCKED_MIN_SECONDS` (a function of the budget alone, so that it is known before
    :func:`calibrate`, which times the move only when it is used). A ``schedule`` without the
    move's timing (one recorded by a run without these moves, or by a bayesfa before them) turns
    them off, so that ``--schedule`` reproduces that run; ``K > 0`` given with it is a one-line
    error."""
    given = options.get("search_blocked_every")
    untimed = schedule is not None and any(k not in schedule for k in _MOVE_COSTS)
    if given and untimed:
        raise InputError("--search-blocked-every K > 0 needs a schedule that timed the blocked move; "
                         "this one has none (a run without phases 1-2's blocked moves recorded it)",
                         options.get("schedule"))
    if given is not None:
        return int(given), (None if given else "--search-blocked-every 0")
    if wide:
        return 0, "float64 counts (2**24 tokens or more): the plain gibbs sweep only"
    share = (LADDER_SHARE + BETA_SHARE) * SAFETY * float(budget)
    if SEARCH_BLOCKED_EVERY and share < BLOCKED_MIN_SECONDS:
        return 0, (f"phases 1-2's share of the budget, {share:.3g} CPU s, is under "
                   f"BLOCKED_MIN_SECONDS = {BLOCKED_MIN_SECONDS:g}")
    if not SEARCH_BLOCKED_EVERY:
        return 0, "SEARCH_BLOCKED_EVERY = 0"
    if untimed:
        return 0, "the schedule has no blocked-move timing (recorded by a run without these moves)"
    return SEARCH_BLOCKED_EVERY, None


def run_final(corpus: Corpus, kept_idx, kept: Corpus, held: Corpus, z_win, n_states: int,
              beta: float, schedule: dict, ledger: _Ledger, options: dict, predict: Corpus | None,
              seed, start: float):
    """Phase 3 (module docstring): the final chains, sized so that the fit's CPU comes to
    :data:`TARGET` of the budget. Unless the schedule has them (``--schedule``), their costs
    are measured here at the winner's N and recorded in it (:func:`calibrate_final`,
    :func:`measured_costs`), then ``final_start_seconds``, the CPU the fit has spent so far
    (``start``: the fit's CPU clock at its start; rounded up by :func:`_round_fine`); the plan
    (:func:`final_plan`) gets ``TARGET * budget - final_start_seconds``. Each chain after the
    first is sized again before it starts (:data:`RESIZE_LIMITS`, :func:`resized_chain`): in a
    timed run from the CPU measured so far, its ``[money, scale]`` appended to the schedule's
    ``final_chain_resize``; in a replay read from there (a schedule without that record runs
    every chain as the first). ``plan["chain_plans"]`` holds each chain's sweeps, burn-in,
    period and modelled CPU (the draws are the first chain's in every one). Returns ``(plan,
    chain outputs, planned)``, ``planned`` the fit's CPU as the plan stood when the last chain
    started (the start plus each chain's model)."""
    from bayesfa.samplers.chains import free_positions, n_free_positions

    front = _front()
    _Held, _run_chain = front._Held, front._run_chain

    every, off = final_blocked_every(options, ledger.money - ledger.spent,
                                     wide_counts(corpus, options))
    timed = "final_sweep_seconds" not in schedule
    calibration_cpu = 0.0  # measured; no decision reads it
    retime = bool(every) and schedule.get("blocked_round_every") != every
    if timed or retime:
        t0 = cpu_seconds()
        cal = calibrate_final(kept, z_win, n_states, beta, every if retime else 0)
        for key, value in cal.items():
            if key not in schedule or key in _BLOCKED_COSTS:
                schedule[key] = value
        calibration_cpu = cpu_seconds() - t0
    if timed:
        schedule.update(measured_costs(ledger.steps, n_states, n_free_positions(kept.tokens),
                                       _forward_size(held), schedule["final_draw_seconds"], schedule))
        schedule["final_start_seconds"] = _round_fine(cpu_seconds() - start, up=True)
    free = free_positions(corpus.tokens)
    held_pos = free[~_kept_mask(corpus, kept_idx)]
    position = schedule["final_sweep_seconds"]
    costs = {"sweep": free.size * position,
             "round": free.size * schedule["blocked_round_seconds"] if every else 0.0,
             "draw": schedule["final_draw_seconds"],
             "forward": 0.0 if predict is None else (
                 _forward_size(predict) * (n_states + 1) ** 2 * schedule["final_forward_seconds"]),
             # the warm-up sweeps, and the counts filled and the path embedded: one sweep's worth
             "start": (WARM_SWEEPS * held_pos.size + free.size) * position}
    plan = final_plan(costs, TARGET * schedule["budget"] - schedule["final_start_seconds"],
                      int(options.get("chains", 1)), n_states, corpus.alphabet_size + 1,
                      stored=predict is None or options.get("max_draws") is None,
                      blocked_every=every)
    plan["calibration_cpu"] = calibration_cpu
    if off is not None:
        plan["blocked_off"] = off
    test = None
    if predict is not None:
        predict = predict.with_alphabet(corpus.alphabet_size)
        test = _Held(predict.tokens, predict.offsets, predict.alphabet_size)
    # per-chain sizing (RESIZE_LIMITS): measured in a timed run, read from the schedule in a
    # replay; a schedule of a bayesfa before it (phase 3's costs and no record) replays equal chains
    if timed:  # measured afresh with phase 3's costs (a record without them is not this run's)
        schedule["final_chain_resize"] = []
    resize = schedule.get("final_chain_resize")
    target = TARGET * schedule["budget"]
    chain_plans = [{k: plan[k] for k in ("sweeps", "burn_in", "period")}
                   | {"cpu_model": plan["cpu_model_per_chain"]}]
    planned = schedule["final_start_seconds"] + plan["chains"] * plan["cpu_model_per_chain"]
    outs = []
    for c in range(plan["chains"]):
        if c and resize is not None:
            if timed:
                resize.append(chain_resize(target, cpu_seconds() - start, plan["chains"] - c,
                                           sum(s["cpu"] for s in ledger.steps[-c:]),
                                           sum(p["cpu_model"] for p in chain_plans)))
            if c <= len(resize):
                money, scale = resize[c - 1]
                chain_plans.append({**resized_chain(costs, money, scale, plan["n_draws"], every),
                                    "money": money, "scale": scale})
                # the plan as it stands when this chain starts: the target less the money
                # left unused by this and the later chains (their model as this one's)
                planned = target - (plan["chains"] - c) * (money - chain_plans[-1]["cpu_model"])
        if len(chain_plans) <= c:
            chain_plans.append(chain_plans[0])
        this = chain_plans[c]

        def one(c=c, this=this):
            rng = np.random.default_rng(_seed(seed, 3, c))
            z = warm_path(corpus, embed_path(z_win, corpus, kept_idx, n_states, rng), held_pos,
                          n_states, beta, rng)
            return _run_chain(corpus.tokens, corpus.alphabet_size + 1, n_states, beta,
                              this["burn_in"], this["period"], plan["n_draws"], _seed(seed, 4, c),
                              init_z=z, predict=test, max_draws=options.get("max_draws"),
                              blocked_every=every)

        outs.append(ledger.run({"phase": "final", "chain": c, "states": n_states, "beta": beta,
                                "sweeps": this["sweeps"], "blocked_every": every,
                                "scale": this.get("scale", 1.0)},
                               this["cpu_model"], one))
    plan["chain_plans"] = chain_plans
    return plan, outs, planned


def _result(outs, plan, n_states, beta, corpus, predict, auto):
    """The :class:`bayesfa.methods.FitResult` of the final chains (Eq. 6 of the test strings
    over all their draws when ``predict``)."""
    from bayesfa.methods import FitResult
    from bayesfa.online import combine_log_means
    from bayesfa.samplers.chains import free_positions

    counts, log_joint, used, edges, _, _, seconds, pred_log_sum, stats = (
        np.stack(x) for x in zip(*outs))
    info = {"kernel": "gibbs", "states": int(n_states), "beta": float(beta),
            "n_draws_per_chain": int(plan["n_draws"]), "n_tokens": int(corpus.n_tokens),
            # the final chains' counts (c, ct; cgs_pfa.count_dtype of the whole corpus)
            "count_dtype": np.dtype(_front().count_dtype(corpus.n_tokens)).name,
            "chain_seconds": [float(s) for s in seconds],
            **({"blocked_every": plan["blocked_every"]} if plan["blocked_every"] else {}),
            "auto": auto}
    arrays = {"counts": counts, "beta": np.float64(beta)}
    if predict is not None:
        arrays["predict_log_mean"] = combine_log_means(pred_log_sum - np.log(plan["n_draws"]),
                                                       np.full(plan["chains"], plan["n_draws"]))
        arrays["predict_n_draws"] = np.int64(log_joint.size)
    m = int(free_positions(corpus.tokens).size)
    per = [_front().sampler_stats(stats[c:c + 1], p["period"], m, "gibbs")  # each chain its period
           for c, p in enumerate(plan["chain_plans"])]
    moved = {k: np.concatenate([d[k] for d in per]) for k in per[0]}
    return FitResult(arrays, {"log_joint": log_joint, "n_states": used, "n_edges": edges, **moved}, info)


def _kept_mask(corpus: Corpus, kept_idx: np.ndarray) -> np.ndarray:
    """Over the free positions of ``corpus``: True where the position is in a kept string."""
    from bayesfa.samplers.chains import free_positions

    owner = np.searchsorted(corpus.offsets, free_positions(corpus.tokens), side="right") - 1
    keep = np.zeros(corpus.n_strings, dtype=bool)
    keep[kept_idx] = True
    return keep[owner]


def estimate_memory(corpus: Corpus, options: dict[str, Any], *, front) -> int:
    """Peak bytes of :func:`fit_auto` and of a ``predict_log_prob`` on a corpus of the same
    size (for ``bayesfa fit``'s memory check), at the ladder's largest N: the final chains'
    kept counts (at most :data:`STORED_BYTES`, twice while stacked) or one draw each when
    predicting online, a rung's :data:`RUNG_DRAWS` draws, chain states (their counts float32,
    or float64 from 2**24 tokens on: ``front.count_dtype``; the cgs-pfa front hands itself
    in, as to :func:`fit_auto`); then the larger of the held-out forward passes (a rung's
    draws on at most ``front.HOLDOUT_MAX`` strings) and Eq. 6 of the kept draws on a corpus of this size, which
    :func:`bayesfa.forward.log_mean_exp_by_strings` and
    :func:`bayesfa.forward.forward_log_prob` run over bounded blocks of strings
    (:func:`bayesfa.memory.eq6_bytes`), each with its chunk of plug-in ``xi~`` (at most
    64 MiB, three float64 copies). Before those blocks the estimate held one forward pass
    over every string at once: 24.2 GB at 16.8 M tokens against a measured peak of 1.4 GB
    (benchmarks/RESULTS.md, "Latest measurements")."""
    from bayesfa.memory import eq6_bytes, forward_bytes
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    n, a = LADDER_MAX, corpus.alphabet_size + 1
    draw = (n + 1) * a * (n + 1) * 4
    kept = 2 * STORED_BYTES if options.get("max_draws") is None else 2 * options.get("chains", 1) * draw
    width = np.dtype(front.count_dtype(corpus.n_tokens)).itemsize  # c, ct: float32 or float64
    state = 4 * (n + 1) * a * padded_width(n) * width + corpus.n_tokens * 24
    if options.get("final_blocked_every", FINAL_BLOCKED_EVERY):  # theta and the filters (float64)
        longest = int(np.diff(corpus.offsets).max()) if corpus.n_strings else 0
        state += ((n + 1) * a + max(1, longest)) * (n + 1) * 8
    xi = 2 * draw  # one plug-in xi~, float64

    def xi_chunk(samples):  # as cgs_pfa.plugin_log_prob builds them (_XI_CHUNK_BYTES)
        return max(1, min(samples, (1 << 26) // xi))

    held = min(front.HOLDOUT_MAX, corpus.n_strings)
    heldout = (3 * xi_chunk(RUNG_DRAWS) * xi + forward_bytes(xi_chunk(RUNG_DRAWS), n + 1, corpus, held)
               + 3 * RUNG_DRAWS * held * 8)
    samples = max(1, STORED_BYTES // draw if options.get("max_draws") is None
                  else options.get("chains", 1) * options["max_draws"])  # the draws Eq. 6 averages
    predict = eq6_bytes(samples, xi_chunk(samples), xi, n + 1, corpus)
    return int(kept + RUNG_DRAWS * draw + state + max(heldout, predict))
