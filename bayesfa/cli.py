"""The ``bayesfa`` command line.

Commands: ``prob``, ``score``, ``fit``, ``predict``, ``perplexity``, ``diagnose``, ``select``,
``validate``, ``export``, ``data``, ``pautomac run`` (:mod:`bayesfa.production`). Shared
conventions: ``--seed S``, ``--out PATH``, ``--quiet`` (no progress bar; none either when stderr
is not a terminal), ``--json`` (one line of JSON on stdout).
Bad input ends with one line on stderr and exit status 2, never a traceback.

Every file a command writes for the user goes through :func:`bayesfa.rundir.write_output`:
it is refused, before any work, when it is a directory or a file bayesfa did not write;
written atomically, with the umask's permissions; ``--out -`` is standard output for
``prob``, ``predict`` and ``export``. Paths and integers are checked before any work
(:func:`_check_paths`, the argparse types of :mod:`bayesfa.methods`), and a reader that
closes the pipe early (``| head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from bayesfa import __version__
from bayesfa.errors import InputError
from bayesfa.methods import get_method, method_names, positive_float, positive_int, seed_int
from bayesfa.online import ONLINE_METHODS

from bayesfa.corpus import FILE_FORMATS as FORMATS

# argparse destinations that are not the method's own options.
_CLI_KEYS = {"command", "train", "test", "out", "seed", "quiet", "method", "format", "separator",
             "func", "json", "force", "predict", "max_draws"}


def _positive_list(cast):
    def parse(text: str):
        try:
            values = [cast(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list, got {text!r}") from None
        if not values or any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive values, got {text!r}")
        return values
    return parse


def _method_from_argv(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--method" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--method="):
            return arg.split("=", 1)[1]
    return None


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's error convention: a bad option is one line on stderr (which
    names the option and points to ``--help``) and exit status 2, without the usage block."""

    #: where a refused option should send the user (set by :func:`main` for the command and
    #: method given, so that ``fit --method NAME --states 4`` points to NAME's own options)
    help_hint: str | None = None

    def error(self, message: str):
        hint = self.help_hint or f"{self.prog} --help"
        self.exit(2, f"{self.prog}: error: {message} (see {hint})\n")


def build_parser(method: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``method`` known, ``fit`` and ``select`` also get its options."""
    parser = _Parser(
        prog="bayesfa", description="Bayesian learning of probabilistic finite automata.")
    parser.add_argument("--version", action="version", version=f"bayesfa {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("prob", help="exact probabilities of a test set under a PAutomaC model file",
                       description="Exact probability of every string of TEST under the PAutomaC "
                                   "model file MODEL, written in the solution layout.")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--out", required=True, metavar="PRED",
                   help="output file (solution layout); - for standard output")
    p.set_defaults(func=cmd_prob)

    p = sub.add_parser("score", help="PAutomaC score of a prediction against a solution",
                       description="Score (Eq. 19 of Shibata & Yoshinaka 2013), minimal score "
                                   "and ratio.")
    p.add_argument("pred", metavar="PRED")
    p.add_argument("solution", metavar="SOLUTION")
    p.add_argument("--json", action="store_true",
                   help='print {"score": ..., "min_score": ..., "ratio": ...}')
    p.set_defaults(func=cmd_score)

    methods_help = "; ".join(method_names())
    p = sub.add_parser("fit", help="learn from a training set into a run directory",
                       description="Fit a method to TRAIN and save a run directory. "
                                   "`bayesfa fit --method NAME --help` lists NAME's options.",
                       epilog=f"methods: {methods_help}")
    p.add_argument("train", metavar="TRAIN")
    _add_method_choice(p)
    p.add_argument("--seed", type=seed_int, default=0,
                   help="random seed, 0 or more (same seed, same result); default 0")
    p.add_argument("--out", required=True, metavar="RUN_DIR",
                   help="the run directory: new or empty, or this same run (resumed if "
                        "unfinished, left alone if finished)")
    p.add_argument("--force", action="store_true",
                   help="replace a bayesfa run made with other data or settings in RUN_DIR "
                        "(the old run stays whole until the new one is complete)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--predict", metavar="TEST",
                   help="also predict TEST's strings (Eq. 6) into the run directory: draw by draw "
                        f"during the chains for methods that can ({', '.join(ONLINE_METHODS)}), at "
                        "the end of the fit for the others; `bayesfa predict RUN_DIR TEST` then "
                        "reuses them")
    p.add_argument("--max-draws", type=positive_int, default=None, metavar="K",
                   help="keep the counts of only K draws per chain, evenly thinned (methods that "
                        f"predict online: {', '.join(ONLINE_METHODS)}); the trace and --predict "
                        "still use every draw")
    _add_format(p)
    if method is not None and method in method_names():
        get_method(method).add_arguments(p.add_argument_group(f"options of {method}"))
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("predict", help="posterior predictive probabilities of a test set",
                       description="Probabilities of TEST's strings under a fitted run, written in "
                                   "the solution layout (unnormalised).")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--out", required=True, metavar="PRED",
                   help="output file (solution layout); - for standard output")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--map", action="store_true",
                   help="use only the sample of highest joint probability (e.g. PDIA-MAP), "
                        "for methods that support it")
    _add_format(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("perplexity", help="per-symbol perplexity of a test set under a run",
                       description="Per-symbol perplexity exp(-log p(TEST | train) / n_symbols) "
                                   "under the conventions of Pfau, Bartlett & Wood (2010), "
                                   "Sect. 4: for a run on sentences every test string starts "
                                   "at the initial state and n_symbols counts every letter and "
                                   "every end of string; for a run on one long sequence "
                                   "(--sequence) the test continues the training sequence from "
                                   "the state reached at its end and n_symbols counts letters. "
                                   "Methods with the perplexity hook (bayesfa/methods.py) fold "
                                   "the test data into the model as they are read "
                                   "(\"incremental\": true): string s is given the training "
                                   "data and test strings 1..s-1, so for pdfa, pdia, "
                                   "pdia-smoothed, hpyp and memoizer on sentences the log prob "
                                   "is not the sum of `bayesfa predict`'s; others score each "
                                   "string given the training data only (that sum). --json "
                                   "names the quantity (\"quantity\"), and so does the text "
                                   "for those five methods. Compare methods on the same "
                                   "quantity: the sum of `bayesfa predict`'s log probabilities "
                                   "is the same quantity for every method; this log prob, only "
                                   "between runs whose quantity is the same.")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--json", action="store_true")
    p.add_argument("--map", action="store_true",
                   help="use only the sample of highest joint probability (e.g. PDIA-MAP), "
                        "for methods that support it")
    p.add_argument("--per-symbol", action="store_true",
                   help="the PDIA authors' estimator: each symbol's predictive averaged over "
                        "the samples with equal weights, sum_t log mean_k p_k(x_t | x_<t); it "
                        "converges to sum_t log E[p(x_t | x_<t)], not to log p(TEST | train) "
                        "(the samples are not reweighted by the test read before x_t), for "
                        "methods that support it")
    p.add_argument("--letters-only", action="store_true",
                   help="sentence data: leave the predictions of the sentence ends out of the "
                        "count (the same pass; n_symbols counts letters, as the PDIA paper "
                        "counts Alice in Wonderland), for methods that support it")
    p.add_argument("--draw-sets", type=positive_int, default=None, metavar="K",
                   help="pdfa, pdia, pdia-smoothed: a fixed estimator instead of the default "
                        "one: each sample reads the test K times (a particle filter of its "
                        "own; --per-symbol: K equal-weight readings), each with its own draws "
                        "of the transitions the sample has not instantiated; no standard error; "
                        "--proposal says how those draws are made. "
                        "Default: per-sample particle filters with the adapted proposal (an "
                        "unvisited transition's destination drawn with the next symbol's "
                        "predictive), particles doubled until the standard error and the change "
                        "on doubling are at most --mc-tolerance")
    p.add_argument("--proposal", choices=("adapted", "prior"), default=None,
                   help="pdfa, pdia, pdia-smoothed, --draw-sets K without --per-symbol: the "
                        "filters' draws of an unvisited transition's destination: adapted "
                        "(default; the default estimator's, weighted by the next symbol's "
                        "predictive) or prior (the earlier blind draws; K = 1 reads once per "
                        "sample, far too low a log probability on Alice, and K = 300 is 0.08 "
                        "in perplexity above the converged value there)")
    p.add_argument("--mc-tolerance", type=positive_float, default=None, metavar="NATS",
                   help="pdfa, pdia, pdia-smoothed, default estimator: the Monte Carlo standard "
                        "error (and change on doubling the particles) per symbol to reach, in "
                        "nats; default 0.002")
    p.add_argument("--max-particles", type=positive_int, default=None, metavar="N",
                   help="pdfa, pdia, pdia-smoothed, default estimator: the cap on particles per "
                        "filter (also capped at 1 GiB of particles); default 4096")
    _add_format(p)
    p.set_defaults(func=cmd_perplexity)

    p = sub.add_parser("diagnose", help="convergence of a run: R-hat and ESS (samplers), "
                                        "objective and convergence (optimisers)",
                       description="Samplers: mean, R-hat and bulk ESS of every trace variable "
                                   "of RUN_DIR; warns when R-hat > 1.01 or ESS < 400 (R-hat "
                                   "needs 2 chains or more: a run of one chain gets a note). "
                                   "Optimisers (cvb0, gcvb0, cvb2, hmm-em) record an "
                                   "optimisation history, not draws: the objective (D0, or "
                                   "hmm-em's log-likelihood), the iterations used and whether "
                                   "the run converged (--tol).")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="DIR",
                   help="also write trace.png and, for several chains, rank.png into DIR "
                        "(never over files bayesfa did not write)")
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser("select", help="choose states and beta by K-fold cross-validation",
                       description="Sect. 4.1 of Shibata & Yoshinaka (2013): N over a grid at "
                                   "beta=0.5, then beta over a grid at that N, by held-out "
                                   "log-likelihood.",
                       conflict_handler="resolve")
    p.add_argument("train", metavar="TRAIN")
    _add_method_choice(p)
    if method is not None and method in method_names():
        get_method(method).add_arguments(p.add_argument_group(f"options of {method}"))
    p.add_argument("--states", type=_positive_list(int),
                   default=[10, 20, 30, 40, 50, 60, 70, 80, 90],
                   help="grid of N, comma-separated; default 10,20,...,90")
    p.add_argument("--beta", type=_positive_list(float), default=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
                   help="grid of beta; default 0.01,0.02,0.05,0.1,0.2,0.5")
    p.add_argument("--folds", type=positive_int, default=10, help="K of K-fold CV; default 10")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="Dask worker processes for the (candidate, fold) fits; default 1 (no Dask)")
    p.add_argument("--one-se", action="store_true",
                   help="one-standard-error rule: the fewest states, then the largest beta, whose "
                        "mean is within one standard error of the best (default: the best mean)")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed, 0 or more; default 0")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="results: a new or empty folder, or one of select's own (resumable: "
                        "finished folds are kept)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    _add_format(p)
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("validate", help="check a sampler against exact enumeration and its oracle",
                       description="Run METHOD on a toy automaton and compare its posterior "
                                   "predictive with the exact one, within Monte Carlo error; "
                                   "deterministic methods get exact checks. --list: every "
                                   "method with its checks and mutants.")
    p.add_argument("method", metavar="METHOD", nargs="?")
    p.add_argument("--list", action="store_true",
                   help="list every method with its checks and mutant names (no run)")
    p.add_argument("--toy", default=None, help="toy data set name")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed, 0 or more; default 0")
    p.add_argument("--json", action="store_true")
    p.add_argument("--kernel", choices=("gibbs", "alias-mh", "bucket-mh"), default=None,
                   help="cgs-pfa only: validate this sweep kernel (default: the method's own "
                        "choice)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("export",
                       help="write a run's automaton (PAutomaC model file or dot)",
                       description="Write a run's automaton as a PAutomaC model file, which "
                                   "`bayesfa prob` reads back, or as Graphviz dot: the one a "
                                   "greedy learner learned (estatemerge, evgram, cvgram, "
                                   "alergia; its probabilities are the run's predictions), or "
                                   "the plug-in automaton of a sampler or optimiser (cgs-pfa, "
                                   "cgs-sg, cgs-hmm, cgs-hmm-star, ipfa, pdfa, pdia, "
                                   "pdia-smoothed, cvb0, gcvb0, cvb2, hmm-em): the posterior "
                                   "mean of the parameters given the draw of highest log joint "
                                   "(--which map), or the posterior mean of the plug-in "
                                   "parameters over the draws (--which mean, where the states "
                                   "are the same in every draw).")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("--format", choices=("pautomac", "dot"), required=True,
                   help="pautomac (model file) or dot (Graphviz picture)")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output file; - for standard output")
    p.add_argument("--max-edges", type=positive_int, default=200,
                   help="dot: draw only the N most probable transitions (default 200)")
    _add_which(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("sample", help="draw strings from a run's predictive distribution",
                       description="Draw N strings from the run's posterior predictive (a draw "
                                   "of the Eq. 6 mixture, then a string from its plug-in "
                                   "automaton; pdfa / pdia: the MAP plug-in automaton; hpyp, "
                                   "memoizer: symbol by symbol from the predictive given the "
                                   "context, "
                                   "until the end symbol; bayesfa.Run.sample), or with --which "
                                   "from that exported automaton. A run on PAutomaC data "
                                   "writes a PAutomaC sample (which `bayesfa fit` reads); a run "
                                   "with an alphabet writes one string a line in its symbols.")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("n", type=positive_int, metavar="N", help="number of strings")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed; default 0")
    _add_which(p, default=None)
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output file; - for standard output")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("decode", help="most probable state path of each test string (Viterbi)",
                       description="The most probable state path of each string of TEST under "
                                   "the run's automaton, the one `bayesfa export --which` "
                                   "writes (by default the plug-in of the draw of highest "
                                   "joint probability; bayesfa.Run.decode), its states "
                                   "numbered as in that model file: one line a string, its "
                                   "n + 1 states separated by spaces.")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("test", metavar="TEST")
    _add_format(p)
    _add_which(p)
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output file; - for standard output")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("pautomac",
                       help="production runs over PAutomaC problems on Dask (pautomac run)",
                       description="Production runs over PAutomaC problems: `bayesfa pautomac run "
                                   "--help` (bayesfa.production).")
    from bayesfa.production import add_cli

    add_cli(p, method)

    p = sub.add_parser("data", help="write the PDIA paper's natural data sets (Alice, DNA)",
                       description="Write NAME.train and NAME.test in the PAutomaC sample layout, "
                                   "prepared as Pfau, Bartlett & Wood (2010), Sect. 4: alice (27 "
                                   "symbols, a-z = 0-25, space = 26, one sentence a line; the "
                                   "paper's own 100/50 split, or --resplit) or dna (one sequence "
                                   "each, A C G T = 0-3, the first 150,000 bases for training).")
    p.add_argument("name", choices=("alice", "dna"), metavar="NAME", help="alice or dna")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for NAME.train and NAME.test (never over files bayesfa did not "
                        "write)")
    p.add_argument("--resplit", action="store_true",
                   help="alice: a fresh random 100/50 split of the whole book (see --seed)")
    p.add_argument("--seed", type=seed_int, default=None,
                   help="alice --resplit: the split's seed, 0 or more; default 0")
    p.add_argument("--fasta", metavar="PATH", default=None,
                   help="dna: the FASTA to split (default: the bundled mouse region, 178,393 bp)")
    p.set_defaults(func=cmd_data)
    return parser


def _add_method_choice(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", required=True, choices=method_names(), metavar="NAME",
                   help=f"one of: {', '.join(method_names())}")


def _add_format(p: argparse.ArgumentParser, separator: bool = True) -> None:
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="input format: pautomac (default; '<count> <alphabet size>' then "
                        "'<length> s1 s2 ...' a line, the empty string written '0'), lines "
                        "(one string a line: an empty line is the empty string; a final "
                        "newline ends the last line and adds no string), text (raw prose split "
                        "into sentences at . ! ? and blank lines: it holds no empty string, "
                        "so give strings that may be empty as lines) or fasta (one string a "
                        "record; a record without sequence is the empty string). Every string "
                        "is kept. Commands on a run default to the run's training format "
                        "(lines, for a run fitted on Python strings)")
    if separator:
        p.add_argument("--separator", default=None, metavar="SEP",
                       help="--format lines: the symbols of a line are the words between SEP "
                            "(' ': runs of any whitespace, e.g. words or integers; ',': each "
                            "comma, an empty field being an error); default: every character "
                            "is a symbol. fit records it, so commands on the run read lines "
                            "the same way unless given")


# -- reading inputs ---------------------------------------------------------------------------
def _load(path: str, fmt: str | None, alphabet=None, separator: str | None = None):
    """``(corpus, alphabet symbols or None)`` of a data file in ``fmt``."""
    from bayesfa.api import read_file

    return read_file(path, fmt, alphabet, separator)


def _progress(args) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def _options(args) -> dict:
    return {k: v for k, v in vars(args).items() if k not in _CLI_KEYS}


def _print_json(obj, reasons: dict[str, str] | None = None) -> None:
    """One line of strict JSON: non-finite numbers are ``null`` with a ``<key>_note``
    (``reasons[key]`` says why)."""
    from bayesfa.rundir import dumps_json

    print(dumps_json(obj, reasons))


# -- commands ---------------------------------------------------------------------------------
def cmd_prob(args) -> int:
    from bayesfa.corpus import Corpus
    from bayesfa.forward import forward_log_prob
    from bayesfa.pautomac import read_model, read_sample

    pfa = read_model(args.model)
    test = read_sample(args.test)
    # letters the model never emits have probability 0: score the other strings only (the
    # header's alphabet size may be anything, so nothing is sized by it)
    unknown = np.zeros(test.n_tokens + 1, dtype=np.int64)
    np.cumsum(test.tokens > pfa.alphabet_size, out=unknown[1:])
    known = np.flatnonzero(unknown[test.offsets[1:]] == unknown[test.offsets[:-1]])
    logp = np.full(test.n_strings, -np.inf)
    if known.size:
        sub = test.subset(known)
        sub = Corpus(sub.tokens, sub.offsets, pfa.alphabet_size)
        logp[known] = forward_log_prob(pfa.init, pfa.trans, pfa.stop, sub)
    _write_solution(args.out, logp)
    return 0


def _write_solution(out: str, logp: np.ndarray) -> None:
    """``--out`` of prob and predict: the solution layout, through the guarded writer
    (``-``: standard output)."""
    from bayesfa.pautomac import write_solution
    from bayesfa.rundir import write_output

    write_output(out, lambda tmp: write_solution(tmp, log_probs=logp), stream=True)


def cmd_score(args) -> int:
    from bayesfa.pautomac import read_solution
    from bayesfa.scoring import score_all_log

    # in log space, so that probabilities written below float64's range (log p < -745) count
    pred, solution = read_solution(args.pred, log=True), read_solution(args.solution, log=True)
    if pred.size != solution.size:
        raise InputError(f"{pred.size} probabilities, but SOLUTION {args.solution} has "
                         f"{solution.size}", args.pred)
    for path, logp in ((args.pred, pred), (args.solution, solution)):
        if not np.isfinite(logp).any():
            raise InputError("every probability is 0 (or the file has none): nothing to "
                             "normalise", path)
    result = score_all_log(pred, solution)
    if args.json:
        zero = "the prediction gives probability 0 to a string the solution gives mass"
        _print_json(result.as_dict(), {"score": zero, "ratio": zero})
    else:
        print(f"score      {result.score:.6f}\nmin_score  {result.min_score:.6f}\n"
              f"ratio      {result.ratio:.6f}")
    return 0


def _say(args):
    """How a command says its notes (``bayesfa: ...`` on stderr), None with ``--quiet``."""
    from bayesfa.compiling import stderr_say

    return None if getattr(args, "quiet", False) else stderr_say


def _compiling(method: str, args, seconds: bool = True):
    """:func:`bayesfa.compiling.compile_notice` around a command's work with ``method``'s
    kernels: one line when numba compiles them (``seconds``: say the fit kernels' usual
    time, :data:`bayesfa.methods.COMPILE_SECONDS`), Ctrl-C stops it at once."""
    from bayesfa.compiling import compile_notice
    from bayesfa.methods import COMPILE_SECONDS

    return compile_notice(method, _say(args), COMPILE_SECONDS.get(method) if seconds else None)


def cmd_fit(args) -> int:
    from bayesfa.api import fit_resolved

    say = _say(args)
    outcome = fit_resolved(args.train, args.method, _options(args), seed=args.seed, out=args.out,
                           force=args.force, progress=_progress(args), format=args.format,
                           separator=args.separator,
                           predict=args.predict, max_draws=args.max_draws, say=say)
    if say is not None and outcome.status != "done":
        run = outcome.run
        if outcome.status == "swap":
            say(f"completed the replacement of the run; run directory {args.out}")
        else:
            note = _convergence_note(run.info, run.options)
            say(f"fitted {args.method} on {run.manifest['train']['n_strings']} strings in "
                f"{outcome.seconds:.1f} s{note}; run directory {args.out}")
    return 0


def _convergence_note(info: dict, options: dict) -> str:
    """``"; not converged: ..."`` for an optimiser that used up ``--iterations`` (its info
    says ``converged: false``), else ``""``."""
    if info.get("converged") is not False:
        return ""
    used = info.get("iterations_run", options.get("iterations"))
    tol = info.get("tol", options.get("tol"))
    return (f"; NOT converged: stopped at --iterations {used} before --tol {tol:g} was met "
            f"(see bayesfa diagnose; run more --iterations)" if isinstance(tol, (int, float))
            else f"; NOT converged: stopped at --iterations {used}")


def cmd_predict(args) -> int:
    from bayesfa.api import load

    run = load(args.run)
    with _compiling(run.method, args, seconds=False):  # the prediction's kernels, if any
        logp = run.predict(args.test, map=bool(getattr(args, "map", False)), format=args.format,
                           separator=args.separator)
    _write_solution(args.out, logp)
    return 0


def cmd_perplexity(args) -> int:
    from bayesfa.api import load

    run = load(args.run)
    with _compiling(run.method, args, seconds=False):  # the prediction's kernels, if any
        out = run.perplexity(
            args.test, map=args.map, per_symbol=args.per_symbol, letters_only=args.letters_only,
            draw_sets=args.draw_sets, mc_tolerance=args.mc_tolerance,
            max_particles=args.max_particles, proposal=args.proposal, format=args.format,
            separator=args.separator)
    if args.json:
        zero = ("the test data have probability 0 under the run"
                if out["zero_probability_strings"] is None else
                f"{out['zero_probability_strings']} test string(s) have probability 0 under "
                "the run")
        _print_json(out, {"perplexity": zero, "log_prob": zero})
    else:
        print(f"perplexity {out['perplexity']:.6f} per symbol ({out['n_symbols']} symbols, log "
              f"prob {out['log_prob']:.3f}, {out['data_shape']}"
              f"{', incremental' if out['incremental'] else ''})")
        if out["estimator"] is not None:
            se = out["mc_se"]
            print(f"{out['quantity']}; {out['estimator']}"
                  + (f", {out['replicates']} replicates" if (out["replicates"] or 1) > 1 else "")
                  + ("" if se is None else
                     f"; Monte Carlo s.e. {out['mc_se_per_symbol']:.4f} nats per symbol "
                     f"({se:.2f} nats)"))
    if out["mc_converged"] is False:
        print(f"warning: Monte Carlo s.e. {out['mc_se_per_symbol']:.4f} nats per symbol (change "
              f"{out['mc_change_per_symbol']:.4f} on doubling the particles) is above "
              f"{out['mc_tolerance']} at the cap of {out['mc_cap']} particles: the estimate "
              "is not converged; its log probability is biased low (a perplexity too high, "
              "in expectation); raise --max-particles or --mc-tolerance", file=sys.stderr)
    return 0


def cmd_diagnose(args) -> int:
    from bayesfa.api import load
    from bayesfa.validation import diagnostics

    run = load(args.run)  # the manifest and the trace: diagnose never reads arrays.npz
    trace = run.scalar_trace()
    if args.plot:
        diagnostics.plot_paths(trace, args.plot)  # refuse before printing anything
    report = run.diagnose()
    if args.json:
        _print_json(report)
    elif report["kind"] == "optimiser":
        print(diagnostics.optimiser_table(trace))
        print(f"status (optimiser {run.method}): {report['status']['message']}")
    else:
        print(diagnostics.format_table(report["variables"]))
        print(f"verdict ({report['verdict']['kind']}): {report['verdict']['message']}")
        rates = {k: v for k, v in report.get("sampler_stats", {}).items() if v is not None}
        if rates:  # the sampler's own statistics, averaged over the draws (not diagnosed)
            print("sampler: " + ", ".join(f"{k} {v:.3g}" for k, v in rates.items()))
        for note in report.get("notes", []):
            print(f"note: {note}")
    if report["kind"] == "optimiser" and report["status"]["converged"] is False:
        print(f"bayesfa: warning: {run.method} did not converge within "
              f"{report['status'].get('iterations_option', '--iterations')} "
              f"{report['status']['iterations']}", file=sys.stderr)
    for warning in report.get("warnings", []):
        print(f"bayesfa: warning: {warning}", file=sys.stderr)
    if args.plot:
        diagnostics.plot_trace(args.run, args.plot, trace=trace)
    return 0


def cmd_select(args) -> int:
    from bayesfa.memory import check_fits
    from bayesfa.selection import choice_note, format_table, run_selection

    from bayesfa.selection import check_selection_dir

    check_selection_dir(args.out)  # before any work
    corpus, _ = _load(args.train, args.format, separator=args.separator)
    if corpus.n_strings == 0:
        raise InputError("holds no string: nothing to select on", args.train)
    base = _options(args)
    for key in ("states", "beta", "folds", "workers", "one_se"):
        base.pop(key, None)
    if base.get("shards") is not None or base.get("scheduler") is not None:
        raise InputError("--shards splits one fit across a cluster (bayesfa fit); select spreads "
                         "whole fits over its --workers")
    if "holdout" in base:  # the folds are the held-out data here: fit each on all its strings
        base["holdout"] = 0.0
    # before any work: the largest candidate, fitted on (at most) the whole corpus, in every
    # worker at once (each with one job when there are several workers)
    biggest = {**base, "states": max(args.states), "beta": max(args.beta)}
    if args.workers > 1 and "jobs" in biggest:
        biggest["jobs"] = 1
    check_fits(get_method(args.method), corpus, biggest, copies=args.workers,
               what=f"select with --states up to {max(args.states)}")
    with _compiling(args.method, args):  # the fits here (--workers 1) or in each worker
        result = run_selection(args.method, corpus, args.states, args.beta, args.folds, args.seed,
                               base, args.out, args.workers, _progress(args), one_se=args.one_se,
                               notice=_say(args) is not None)
    if args.json:
        _print_json(result)
    else:
        for stage in ("stage1", "stage2"):
            print(format_table(result[stage]))
            print()
        print(f"choice: states={result['choice']['states']} beta={result['choice']['beta']} "
              f"({choice_note(result)})")
    return 0


def cmd_validate(args) -> int:
    from bayesfa.validation.harness import list_main, validate_main

    if args.list:
        if args.method is not None:
            raise InputError("--list takes no METHOD")
        print(list_main(args.json))
        return 0
    if args.method is None:
        raise InputError("validate needs a METHOD (or --list)")
    with _compiling(args.method.split(":")[0], args, seconds=False):  # its checks' kernels
        text, passed = validate_main(args.method, args.toy, args.json, seed=args.seed,
                                     kernel=args.kernel)
    print(text)
    return 0 if passed else 1


def _add_which(parser, default: str | None = "map") -> None:
    """``--which map|mean``: which automaton of a sampler's run (bayesfa.samplers.plugin)."""
    parser.add_argument("--which", choices=("map", "mean"), default=default,
                        help="map: the plug-in automaton of the draw of highest log joint (an "
                             "optimiser's final iterate); mean: that of the posterior mean of "
                             "the plug-in parameters (methods whose states are the same in "
                             "every draw)" + ("; default map" if default else
                                              "; default: the run's predictive"))


def cmd_export(args) -> int:
    from bayesfa.export import export_run

    export_run(args.run, args.format, args.out, args.max_edges, args.which,
               compiling=lambda method: _compiling(method, args, seconds=False))
    return 0


def cmd_sample(args) -> int:
    from bayesfa.api import load
    from bayesfa.rundir import write_output_text

    run = load(args.run)
    with _compiling(run.method, args, seconds=False):  # the sampling's kernels, if any
        strings = run.sample(args.n, seed=args.seed, which=args.which)
    if run.alphabet is None:  # a PAutomaC sample, letters 0..A-1
        size = int(run.manifest.get("train", {}).get("alphabet_size") or 1)
        lines = [f"{len(strings)} {size}"] + [" ".join(map(str, [len(s), *s])) for s in strings]
        text = "\n".join(lines) + "\n"
    else:  # one string a line, split as the run's training lines were (fit --separator)
        from bayesfa.api import default_separator
        from bayesfa.textdata import format_lines

        train = run.manifest.get("train", {})
        try:
            text = format_lines(strings, train.get("separator", default_separator(run.alphabet)))
        except ValueError as err:
            raise InputError(f"cannot write the samples as lines: {err}", args.run) from None
    write_output_text(args.out, text, "--out", stream=True)
    return 0


def cmd_decode(args) -> int:
    from bayesfa.api import load
    from bayesfa.rundir import write_output_text

    run = load(args.run)
    with _compiling(run.method, args, seconds=False):  # the automaton's kernels, if any
        paths = run.decode(args.test, format=args.format, separator=args.separator,
                           which=args.which)
    write_output_text(args.out, "".join(" ".join(map(str, p)) + "\n" for p in paths), "--out",
                      stream=True)
    return 0


def cmd_data(args) -> int:
    from bayesfa import naturaldata

    if args.name == "dna":
        if args.resplit or args.seed is not None:
            raise InputError("--resplit and --seed are for alice; dna has one split")
        train, test = naturaldata.dna_split(args.fasta)
    else:
        if args.fasta is not None:
            raise InputError("--fasta is for dna")
        if args.seed is not None and not args.resplit:
            raise InputError("--seed needs --resplit (the paper's own split has no seed)")
        train, test = (naturaldata.alice_resplit(args.seed or 0) if args.resplit
                       else naturaldata.alice_paper_split())
    summary = naturaldata.write_split(args.out, args.name, train, test)
    for part in ("train", "test"):
        print(f"{summary[part]['path']}: {summary[part]['strings']} strings, "
              f"{summary[part]['letters']} letters")
    return 0


#: Per command: its input files (dest, option), checked before any work by :func:`_check_paths`.
_INPUT_FILES = {"prob": (("model", "MODEL"), ("test", "TEST")),
                "score": (("pred", "PRED"), ("solution", "SOLUTION")),
                "fit": (("train", "TRAIN"), ("predict", "--predict")),
                "predict": (("test", "TEST"),), "perplexity": (("test", "TEST"),),
                "select": (("train", "TRAIN"),), "data": (("fasta", "--fasta"),)}
#: Per command: ``--out`` is a file (``-``: standard output) or a folder.
_OUTPUT_FILE = {"prob", "predict", "export"}
_OUTPUT_DIR = {"fit", "select", "data"}


def _check_paths(args) -> None:
    """Every path option checked before any work, each failure one line naming the path:
    input files exist, are files and are readable; ``--out`` is not a directory where a
    file is written (nor an existing file bayesfa did not write), not a file where a folder
    is; ``--plot`` likewise (:func:`bayesfa.rundir.check_output`)."""
    from bayesfa.rundir import check_output, check_output_dir

    for dest, option in _INPUT_FILES.get(args.command, ()):
        path = getattr(args, dest, None)
        if path is None:
            continue
        if path == "":
            raise InputError(f"{option} is empty; give a file")
        if not os.path.exists(path):
            raise InputError("no such file", path)
        if os.path.isdir(path):
            raise InputError(f"is a directory; {option} must be a file", path)
        if not os.access(path, os.R_OK):
            raise InputError("cannot read: permission denied", path)
    if args.command in _OUTPUT_FILE:
        check_output(args.out, "--out", stream=True)
    elif args.command in _OUTPUT_DIR:
        check_output_dir(args.out, "--out")
    if getattr(args, "plot", None) is not None:
        check_output_dir(args.plot, "--plot")


def _help_hint(argv: list[str]) -> str | None:
    """Where an option error should point: ``bayesfa fit --method NAME --help`` for a fit or
    select with a known method (its own options are listed there), else the command's help."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is None:
        return None
    method = _method_from_argv(argv)
    if command in ("fit", "select") and method in method_names():
        return f"bayesfa {command} --method {method} --help"
    return f"bayesfa {command} --help"


def _quiet_stdout() -> None:
    """After a broken pipe (``bayesfa score ... | head -1``): send what is left of standard
    output to /dev/null, so that the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (tests' capture)
        pass


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _Parser.help_hint = _help_hint(argv)
    try:
        # the parser imports the method's module (numba: seconds), so a Ctrl-C there too is caught
        args = build_parser(_method_from_argv(argv)).parse_args(argv)
        if args.command != "pautomac":  # pautomac run checks its own paths (bayesfa.production)
            _check_paths(args)
        rc = args.func(args)
        sys.stdout.flush()  # here, so that a closed pipe is caught below
        return rc
    except BrokenPipeError:  # the reader left (| head): not an error of the command
        _quiet_stdout()
        return 0
    except InputError as err:
        print(f"bayesfa: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # e.g. --out in a missing or read-only folder
        where = f"{err.filename}: " if err.filename else ""
        print(f"bayesfa: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bayesfa: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
