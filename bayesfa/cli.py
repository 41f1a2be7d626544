"""The ``bayesfa`` command line.

Commands: ``prob``, ``score``, ``fit``, ``predict``, ``perplexity``, ``diagnose``, ``select``,
``validate``. Shared conventions: ``--seed S``, ``--out PATH``, ``--quiet`` (no progress
bar; none either when stderr is not a terminal), ``--json`` (one line of JSON on stdout).
Bad input ends with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from bayesfa import __version__
from bayesfa.errors import InputError
from bayesfa.methods import get_method, method_names, positive_int

FORMATS = ("pautomac", "lines", "text", "fasta")
WORKDIR = "partial"  # inside RUN_DIR: a method's finished pieces of an unfinished fit
# argparse destinations that are not the method's own options.
_CLI_KEYS = {"command", "train", "test", "out", "seed", "quiet", "method", "format", "func", "json"}


def _positive_list(cast):
    def parse(text: str):
        try:
            values = [cast(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}") from None
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


def build_parser(method: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``method`` known, ``fit`` and ``select`` also get its options."""
    parser = argparse.ArgumentParser(
        prog="bayesfa", description="Bayesian learning of probabilistic finite automata.")
    parser.add_argument("--version", action="version", version=f"bayesfa {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("prob", help="exact probabilities of a test set under a PAutomaC model file",
                       description="Exact probability of every string of TEST under the PAutomaC "
                                   "model file MODEL, written in the solution layout.")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--out", required=True, metavar="PRED", help="output file (solution layout)")
    p.set_defaults(func=cmd_prob)

    p = sub.add_parser("score", help="PAutomaC score of a prediction against a solution",
                       description="Score (Eq. 19 of Shibata & Yoshinaka 2013), minimal score and ratio.")
    p.add_argument("pred", metavar="PRED")
    p.add_argument("solution", metavar="SOLUTION")
    p.add_argument("--json", action="store_true", help='print {"score": ..., "min_score": ..., "ratio": ...}')
    p.set_defaults(func=cmd_score)

    methods_help = "; ".join(method_names())
    p = sub.add_parser("fit", help="learn from a training set into a run directory",
                       description="Fit a method to TRAIN and save a run directory. "
                                   "`bayesfa fit --method NAME --help` lists NAME's options.",
                       epilog=f"methods: {methods_help}")
    p.add_argument("train", metavar="TRAIN")
    _add_method_choice(p)
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same result); default 0")
    p.add_argument("--out", required=True, metavar="RUN_DIR")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    _add_format(p)
    if method is not None and method in method_names():
        get_method(method).add_arguments(p.add_argument_group(f"options of {method}"))
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("predict", help="posterior predictive probabilities of a test set",
                       description="Probabilities of TEST's strings under a fitted run, written in "
                                   "the solution layout (unnormalised).")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--out", required=True, metavar="PRED")
    p.add_argument("--quiet", action="store_true")
    _add_format(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("perplexity", help="per-symbol perplexity of a test set under a run",
                       description="Per-symbol perplexity exp(-sum log p / n_symbols), counting "
                                   "every letter and every end of string.")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("test", metavar="TEST")
    p.add_argument("--json", action="store_true")
    _add_format(p)
    p.set_defaults(func=cmd_perplexity)

    p = sub.add_parser("diagnose", help="R-hat and ESS of a run's trace (arviz)",
                       description="Mean, R-hat and bulk ESS of every trace variable of RUN_DIR; "
                                   "warns when R-hat > 1.01 or ESS < 400.")
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="DIR", help="also write trace and rank plots (PNG) into DIR")
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser("select", help="choose states and beta by K-fold cross-validation",
                       description="Sect. 4.1 of Shibata & Yoshinaka (2013): N over a grid at beta=0.5, "
                                   "then beta over a grid at that N, by held-out log-likelihood.",
                       conflict_handler="resolve")
    p.add_argument("train", metavar="TRAIN")
    _add_method_choice(p)
    if method is not None and method in method_names():
        get_method(method).add_arguments(p.add_argument_group(f"options of {method}"))
    p.add_argument("--states", type=_positive_list(int), default=[10, 20, 30, 40, 50, 60, 70, 80, 90],
                   help="grid of N, comma-separated; default 10,20,...,90")
    p.add_argument("--beta", type=_positive_list(float), default=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
                   help="grid of beta; default 0.01,0.02,0.05,0.1,0.2,0.5")
    p.add_argument("--folds", type=positive_int, default=10, help="K of K-fold CV; default 10")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="Dask worker processes for the (candidate, fold) fits; default 1 (no Dask)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, metavar="DIR", help="results (resumable: finished folds are kept)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    _add_format(p)
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("validate", help="check a sampler against exact enumeration and its oracle",
                       description="Run METHOD on a toy automaton and compare its posterior predictive "
                                   "with the exact one, within Monte Carlo error.")
    p.add_argument("method", metavar="METHOD")
    p.add_argument("--toy", default=None, help="toy data set name")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)
    return parser


def _add_method_choice(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", required=True, choices=method_names(), metavar="NAME",
                   help=f"one of: {', '.join(method_names())}")


def _add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="input format: pautomac (default), lines (one string a line), "
                        "text (raw text split into sentences) or fasta; predict and perplexity "
                        "default to the run's training format")


# -- reading inputs ---------------------------------------------------------------------------
def _load(path: str, fmt: str | None, alphabet=None):
    """``(corpus, alphabet symbols or None)`` of a data file in ``fmt``."""
    fmt = fmt or "pautomac"
    if fmt == "pautomac":
        from bayesfa.pautomac import read_sample
        return read_sample(path), None
    from bayesfa import textdata
    alpha = None if alphabet is None else textdata.Alphabet(tuple(alphabet))
    loader = {"lines": textdata.load_lines, "text": textdata.load_text, "fasta": textdata.load_fasta}[fmt]
    if fmt == "fasta" and alpha is None:
        corpus, alpha = loader(path)
    else:
        corpus, alpha = loader(path, alphabet=alpha)
    return corpus, list(alpha.symbols)


def _progress(args) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def _options(args) -> dict:
    return {k: v for k, v in vars(args).items() if k not in _CLI_KEYS}


def _print_json(obj) -> None:
    print(json.dumps(obj, sort_keys=False))


# -- commands ---------------------------------------------------------------------------------
def cmd_prob(args) -> int:
    from bayesfa.forward import forward_log_prob
    from bayesfa.pautomac import read_model, read_sample, write_solution

    pfa = read_model(args.model)
    test = read_sample(args.test)
    size = max(test.alphabet_size, pfa.alphabet_size)
    trans = np.zeros((size, pfa.n_states, pfa.n_states))
    trans[:pfa.alphabet_size] = pfa.trans  # letters the model never emits have probability 0
    logp = forward_log_prob(pfa.init, trans, pfa.stop, test.with_alphabet(size))
    write_solution(args.out, np.exp(logp))
    return 0


def cmd_score(args) -> int:
    from bayesfa.pautomac import read_solution
    from bayesfa.scoring import score_all

    pred, solution = read_solution(args.pred), read_solution(args.solution)
    if pred.size != solution.size:
        raise InputError(f"{pred.size} probabilities, but SOLUTION {args.solution} has {solution.size}",
                         args.pred)
    result = score_all(pred, solution)
    if args.json:
        _print_json(result.as_dict())
    else:
        print(f"score      {result.score:.6f}\nmin_score  {result.min_score:.6f}\nratio      {result.ratio:.6f}")
    return 0


def cmd_fit(args) -> int:
    from bayesfa.rundir import file_sha256, save_run

    method = get_method(args.method)
    corpus, alphabet = _load(args.train, args.format)
    options = _options(args)
    start = time.perf_counter()
    extra = {}
    if getattr(method, "resumable", False):
        # finished chains are kept here until the run is saved; a rerun reuses them
        extra["workdir"] = Path(args.out) / WORKDIR
    result = method.fit(corpus, options, args.seed, _progress(args), **extra)
    elapsed = time.perf_counter() - start
    train = {"path": str(Path(args.train).resolve()), "sha256": file_sha256(args.train),
             "format": args.format or "pautomac", "n_strings": corpus.n_strings,
             "n_letters": corpus.n_letters, "alphabet_size": corpus.alphabet_size,
             "alphabet": alphabet}
    info = {"seconds": round(elapsed, 3), **result.info}
    save_run(args.out, method=args.method, options=options, seed=args.seed, arrays=result.arrays,
             trace=result.trace, info=info, train=train)
    if "workdir" in extra:
        shutil.rmtree(extra["workdir"], ignore_errors=True)
    if not args.quiet:
        print(f"bayesfa: fitted {args.method} on {corpus.n_strings} strings in {elapsed:.1f} s; "
              f"run directory {args.out}", file=sys.stderr)
    return 0


def _run_and_test(args):
    from bayesfa.rundir import load_run

    run = load_run(args.run)
    train = run.manifest.get("train", {})
    fmt = args.format or train.get("format") or "pautomac"
    test, _ = _load(args.test, fmt, alphabet=train.get("alphabet"))
    trained = int(train.get("alphabet_size", test.alphabet_size))
    if test.alphabet_size > trained:
        raise InputError(f"alphabet of {test.alphabet_size} letters, but the run was trained on {trained}",
                         args.test, 1)
    return run, test.with_alphabet(trained)


def cmd_predict(args) -> int:
    from bayesfa.pautomac import write_solution

    run, test = _run_and_test(args)
    logp = get_method(run.method).predict_log_prob(run.arrays, run.options, test)
    write_solution(args.out, np.exp(logp))
    return 0


def cmd_perplexity(args) -> int:
    from bayesfa.scoring import perplexity

    run, test = _run_and_test(args)
    logp = get_method(run.method).predict_log_prob(run.arrays, run.options, test)
    value = perplexity(logp, test.n_tokens)
    out = {"perplexity": value, "n_symbols": test.n_tokens, "log_prob": float(logp.sum())}
    if args.json:
        _print_json(out)
    else:
        print(f"perplexity {value:.6f} per symbol ({test.n_tokens} symbols, log prob {logp.sum():.3f})")
    return 0


def cmd_diagnose(args) -> int:
    from bayesfa.rundir import load_run
    from bayesfa.validation import diagnostics

    run = load_run(args.run)
    if run.trace_path is None:
        raise InputError(f"method {run.method} saved no trace to diagnose", args.run)
    summary = diagnostics.diagnose(args.run)
    if args.json:
        _print_json(summary)
    else:
        print(f"{'variable':<16}{'mean':>14}{'r_hat':>10}{'ess_bulk':>12}")
        for name, row in summary.items():
            rhat = "nan" if row["rhat"] is None else f"{row['rhat']:.4f}"
            ess = "nan" if row["ess_bulk"] is None else f"{row['ess_bulk']:.1f}"
            print(f"{name:<16}{row['mean']:>14.6g}{rhat:>10}{ess:>12}")
    for warning in diagnostics.warnings(summary):
        print(f"bayesfa: warning: {warning}", file=sys.stderr)
    if args.plot:
        diagnostics.plot_trace(args.run, args.plot)
    return 0


def cmd_select(args) -> int:
    from bayesfa.selection import format_table, run_selection

    corpus, _ = _load(args.train, args.format)
    base = _options(args)
    for key in ("states", "beta", "folds", "workers"):
        base.pop(key, None)
    result = run_selection(args.method, corpus, args.states, args.beta, args.folds, args.seed, base,
                           args.out, args.workers, _progress(args))
    if args.json:
        _print_json(result)
    else:
        for stage in ("stage1", "stage2"):
            print(format_table(result[stage]))
            print()
        print(f"choice: states={result['choice']['states']} beta={result['choice']['beta']}")
    return 0


def cmd_validate(args) -> int:
    from bayesfa.validation.harness import validate_main

    text, passed = validate_main(args.method, args.toy, args.json, seed=args.seed)
    print(text)
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_method_from_argv(argv))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
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
