"""The Python API: everything the command line does, from Python.

>>> import bayesfa
>>> run = bayesfa.fit(["ab", "abab", "b", "ab"], method="estatemerge")
>>> run.alphabet
['a', 'b']
>>> bool(run.predict(["ab", "ba"])[0] > run.predict(["ab", "ba"])[1])
True

- :func:`fit` fits any registered method (:func:`methods`) on a data file, a
  :class:`~bayesfa.corpus.Corpus` or Python sequences of symbols, with the command line's
  option names (``--burn-in`` is ``burn_in=``), defaults and checks (:mod:`bayesfa.method_options`);
  with ``out=`` it writes the same run folder as ``bayesfa fit --out``.
- :func:`load` reads a run folder made by the command line or by :func:`fit`.
- :class:`Run` predicts (``predict``, ``perplexity``), diagnoses (``diagnose``, ``trace``),
  exports the automaton (``export``), draws strings (``sample``) and decodes state paths
  (``decode``).

The command line (:mod:`bayesfa.cli`) is built on these functions: one code path.

**Symbols.** Python data are sequences of strings: a ``str`` is a string of characters
(``"abc"``), any other sequence is a string of its items (``["the", "cat"]``, or integers).
The alphabet is the sorted set of the training symbols (order of first appearance when they
cannot be sorted); it is kept in the run, so predictions on new Python strings use the same
letters. A symbol the training data never had is an :class:`~bayesfa.errors.InputError`
naming it: the methods' smoothing spreads mass over the letters they were trained on only.
A file (a path) is read as the command line reads it (``format=`` ``pautomac``, ``lines``,
``text`` or ``fasta``); a :class:`~bayesfa.corpus.Corpus` is taken as it is (letters
``0..alphabet_size-1``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import numpy as np

from bayesfa import method_options as _options
from bayesfa.compiling import compile_notice
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import COMPILE_SECONDS, get_method, method_names

DataLike = "str | os.PathLike | Corpus | Sequence[Sequence]"

#: Formats of a data file, as ``bayesfa fit --format``.
FILE_FORMATS = ("pautomac", "lines", "text", "fasta")
#: ``train.format`` of a run fitted on Python symbols, or on a Corpus given directly.
SYMBOLS, CORPUS = "symbols", "corpus"


# -- what is registered ------------------------------------------------------------------------

def methods() -> list[str]:
    """The names of every registered method (``--method NAME``)."""
    return method_names()


def options(method: str) -> list[_options.Option]:
    """The options of ``method``: name, command-line flag, default, help, check."""
    return _options.declared(method)


# -- data ----------------------------------------------------------------------------------------

def read_file(path: str | os.PathLike, fmt: str | None, alphabet=None) -> tuple[Corpus, list | None]:
    """``(corpus, alphabet symbols or None)`` of a data file in ``fmt`` (as ``--format``)."""
    fmt = fmt or "pautomac"
    if fmt not in FILE_FORMATS:
        raise InputError(f"format {fmt!r} is unknown; choose from {', '.join(FILE_FORMATS)}")
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


def _strings(data: Iterable) -> list[list]:
    out = []
    for i, s in enumerate(data):
        if isinstance(s, (str, bytes)):
            out.append(list(s.decode() if isinstance(s, bytes) else s))
        elif isinstance(s, Iterable):
            out.append([x.item() if isinstance(x, np.generic) else x for x in s])
        else:
            raise InputError(f"string {i} is a {type(s).__name__}, not a sequence of symbols")
    return out


def _alphabet_of(strings: list[list]) -> list:
    seen = list(dict.fromkeys(x for s in strings for x in s))
    for x in seen:
        if isinstance(x, bool) or not isinstance(x, (str, int)):
            raise InputError(f"symbol {x!r} is a {type(x).__name__}: symbols are strings or integers")
    try:
        return sorted(seen)
    except TypeError:  # strings and integers mixed
        return seen


def _encode(strings: list[list], alphabet: list) -> Corpus:
    index = {x: i for i, x in enumerate(alphabet)}
    letters = []
    for s_i, s in enumerate(strings):
        try:
            letters.append([index[x] for x in s])
        except KeyError as err:
            raise InputError(f"string {s_i} has the symbol {err.args[0]!r}, which the training data "
                             f"never had (alphabet: {_show(alphabet)})") from None
    return Corpus.from_strings(letters, max(len(alphabet), 1))


def _show(alphabet: list, most: int = 12) -> str:
    text = ", ".join(map(repr, alphabet[:most]))
    return text + (f", ... ({len(alphabet)} in all)" if len(alphabet) > most else "")


def as_corpus(data, *, format: str | None = None, alphabet: list | None = None,
              train_format: str | None = None) -> tuple[Corpus, list | None, dict[str, Any]]:
    """``(corpus, alphabet, record)`` of ``data`` (module docstring). With ``alphabet`` (a run's),
    symbols are mapped by it. ``record`` describes the data for a run's manifest (path and
    SHA-256 of a file; a SHA-256 of the encoded strings otherwise)."""
    from bayesfa.rundir import file_sha256

    if isinstance(data, (str, os.PathLike)):
        fmt = format or (train_format if train_format in FILE_FORMATS else None) or "pautomac"
        if train_format in (SYMBOLS, CORPUS):
            raise InputError(f"the run was fitted on Python data ({train_format}): give Python "
                             f"strings, not a file", data)
        file_alphabet = alphabet if fmt != "pautomac" else None
        corpus, alpha = read_file(data, fmt, file_alphabet)
        return corpus, alpha, {"path": str(Path(data).resolve()), "sha256": file_sha256(data),
                               "format": fmt}
    if isinstance(data, Corpus):
        corpus, alpha, fmt = data, None, CORPUS
    else:
        strings = _strings(data)
        if not strings:
            raise InputError("no string in the data")
        if train_format in (None, SYMBOLS) or alphabet is not None:
            alpha = alphabet if alphabet is not None else _alphabet_of(strings)
            if not alpha:
                raise InputError("every string is empty: no symbol to learn")
            corpus, fmt = _encode(strings, alpha), SYMBOLS
        else:
            corpus, alpha, fmt = Corpus.from_strings(strings), None, CORPUS
    digest = hashlib.sha256(corpus.tokens.tobytes() + corpus.offsets.tobytes()
                            + json.dumps(alpha).encode()).hexdigest()
    return corpus, alpha, {"path": None, "sha256": digest, "format": fmt}


# -- fit, load ---------------------------------------------------------------------------------

def fit(data, method: str = "cgs-pfa", *, seed: int = 0, out: str | os.PathLike | None = None,
        force: bool = False, progress: bool = False, format: str | None = None,
        predict=None, max_draws: int | None = None, **options) -> "Run":
    """Fit ``method`` on ``data`` and return the :class:`Run`.

    ``options`` are the method's (:func:`options`), checked as the command line checks them;
    an unknown or invalid one raises :class:`~bayesfa.errors.InputError` with the CLI's
    message. ``out``: write the run folder there as ``bayesfa fit --out`` does (refuses to
    clobber what is not the same bayesfa run, resumes an interrupted identical fit, ``force``
    replaces a bayesfa run). ``predict``: test data whose Eq. 6 predictive is accumulated
    during the fit (``fit --predict``); ``max_draws``: keep the counts of that many draws per
    chain (methods that predict online).
    """
    return fit_resolved(data, method, _options.resolve(method, options), seed=seed, out=out,
                        force=force, progress=progress, format=format, predict=predict,
                        max_draws=max_draws).run


class FitOutcome(NamedTuple):
    """What :func:`fit_resolved` did: the run, and ``status``: ``"memory"`` (no ``out``),
    ``"new"``, ``"resume"``, ``"replace"`` (fitted), ``"done"`` (the same run was already
    finished there: nothing fitted) or ``"swap"`` (a finished replacement swapped in);
    ``seconds`` of fitting (None when nothing was fitted)."""

    run: "Run"
    status: str
    seconds: float | None


def fit_resolved(data, method: str, options: dict[str, Any], *, seed: int = 0,
                 out: str | os.PathLike | None = None, force: bool = False,
                 progress: bool = False, format: str | None = None, predict=None,
                 max_draws: int | None = None, say=None) -> FitOutcome:
    """:func:`fit` with every option of ``method`` already resolved: the one code path of
    ``bayesfa.fit`` and ``bayesfa fit`` (whose parser checks the options with the same
    declaration). ``say(message)`` receives the notes the command line prints (nothing to do,
    resuming, where the finished pieces of an interrupted fit are kept)."""
    from bayesfa.online import ONLINE_METHODS, supports_online

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed= must be a non-negative integer, got {seed!r}")
    opts = dict(options)
    entry = get_method(method)
    corpus, alphabet, record = as_corpus(data, format=format)
    if corpus.n_strings == 0:
        raise InputError("holds no string: nothing to fit", record.get("path") or "data")
    if max_draws is not None:
        if not supports_online(entry):
            raise InputError(f"--max-draws: method {method} keeps no draws to cap (only methods "
                             f"that predict online do: {', '.join(ONLINE_METHODS)})")
        opts["max_draws"] = max_draws
    test = test_record = None
    if predict is not None:  # read with the training data's format and alphabet
        test, _, test_record = as_corpus(predict, format=record["format"] if record["format"] in
                                         FILE_FORMATS else None, alphabet=alphabet,
                                         train_format=record["format"])
        if test.alphabet_size > corpus.alphabet_size:
            raise InputError(f"alphabet of {test.alphabet_size} letters, but the training data "
                             f"has {corpus.alphabet_size}", test_record.get("path") or "predict", 1)
        opts["predict_sha256"] = test_record["sha256"]
    train = {**record,
             # how test data relate to the training data (methods.py: perplexity hook)
             "data_shape": "sequence" if opts.get("sequence") else "sentences",
             "n_strings": corpus.n_strings, "n_letters": corpus.n_letters,
             "alphabet_size": corpus.alphabet_size, "alphabet": alphabet}
    job = _Fit(method, entry, corpus, opts, int(seed), progress, train, test, test_record,
               say or (lambda message: None))
    return job.in_memory() if out is None else job.into(Path(out), force)


@dataclass
class _Fit:
    method: str
    entry: Any
    corpus: Corpus
    options: dict[str, Any]
    seed: int
    progress: bool
    train: dict[str, Any]
    test: Corpus | None
    test_record: dict[str, Any] | None
    say: Any

    def _run_method(self, workdir: Path | None):
        extra = {"workdir": workdir} if workdir is not None and getattr(self.entry, "resumable", False) else {}
        start = time.perf_counter()
        with compile_notice(self.method, self.say, COMPILE_SECONDS.get(self.method)):
            if self.test is None:
                result, prediction = self.entry.fit(self.corpus, self.options, self.seed, self.progress, **extra), None
            else:
                from bayesfa.online import fit_and_predict

                prediction, result = fit_and_predict(self.method, self.corpus, self.options, self.seed,
                                                     self.test, progress=self.progress,
                                                     workdir=extra.get("workdir"), return_fit=True)
                about = {**self.test_record, "n_strings": self.test.n_strings,
                         "n_draws": prediction.n_draws, "online": prediction.info["online"],
                         "max_draws": self.options.get("max_draws")}
                result = result._replace(info={**result.info, "predict": about})
        seconds = time.perf_counter() - start
        return result._replace(info={"seconds": round(seconds, 3), **result.info}), prediction, seconds

    def in_memory(self) -> FitOutcome:
        from bayesfa.memory import check_fits

        check_fits(self.entry, self.corpus, self.options)  # before any work
        result, prediction, seconds = self._run_method(None)
        manifest = {"method": self.method, "options": self.options, "seed": self.seed,
                    "train": self.train, "info": result.info}
        run = Run(None, manifest, dict(result.arrays), dict(result.trace))
        run._prediction = prediction
        return FitOutcome(run, "memory", seconds)

    def into(self, out: Path, force: bool) -> FitOutcome:
        from bayesfa.memory import check_fits
        from bayesfa.online import PREDICTIONS, save_predictions
        from bayesfa.rundir import plan_run, run_identity, save_run

        plan = plan_run(out, run_identity(self.method, self.options, self.seed, self.train), force)
        if plan.status == "done":
            self.say(f"{out} already holds this finished run (same data, method, options and "
                     f"seed); nothing to do")
            return FitOutcome(load(out), "done", None)
        seconds = None
        if plan.status != "swap":
            check_fits(self.entry, self.corpus, self.options)  # before any work
            if plan.status == "resume" and plan.has_work():
                self.say(f"resuming the unfinished run in {out} (its finished pieces are kept "
                         f"in {plan.workdir.name}/)")
            plan.begin()
            try:
                result, prediction, seconds = self._run_method(plan.workdir)
                if prediction is not None:
                    Path(plan.build).mkdir(parents=True, exist_ok=True)
                    save_predictions(Path(plan.build) / PREDICTIONS, prediction,
                                     self.options["predict_sha256"])
                save_run(plan.build, method=self.method, options=self.options, seed=self.seed,
                         arrays=result.arrays, trace=result.trace, info=result.info,
                         train=self.train)
            except BaseException as err:
                # refused or failed before saving work: leave the folder as it was
                kept = plan.abandon()
                if kept and isinstance(err, KeyboardInterrupt):
                    self.say(f"the finished pieces are kept in {plan.build}; the same command "
                             f"resumes the run")
                raise
        plan.finish()
        return FitOutcome(load(out), plan.status, seconds)


def load(run_dir: str | os.PathLike) -> "Run":
    """A run folder made by ``bayesfa fit --out`` or :func:`fit` (``out=``)."""
    from bayesfa.rundir import load_run

    loaded = load_run(run_dir)
    return Run(loaded.path, loaded.manifest, None, None, _loaded=loaded)


# -- the run -------------------------------------------------------------------------------------

@dataclass
class Run:
    """A fitted method: its manifest, options, arrays and trace, and what it predicts.

    ``path`` is the run folder (None for a run fitted in memory).
    """

    path: Path | None
    manifest: dict[str, Any]
    _arrays: dict[str, np.ndarray] | None = field(default=None, repr=False)
    _trace: dict[str, np.ndarray] | None = field(default=None, repr=False)
    _loaded: Any = field(default=None, repr=False)
    _prediction: Any = field(default=None, repr=False)

    # -- what it is
    @property
    def method(self) -> str:
        return self.manifest["method"]

    @property
    def options(self) -> dict[str, Any]:
        """Every option of the fit, defaults filled in."""
        return dict(self.manifest["options"])

    @property
    def seed(self) -> int | None:
        return self.manifest.get("seed")

    @property
    def alphabet(self) -> list | None:
        """The symbols of letters ``0, 1, ...`` (None: a PAutomaC file or a Corpus)."""
        return self.manifest.get("train", {}).get("alphabet")

    @property
    def info(self) -> dict[str, Any]:
        return self.manifest.get("info", {})

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """What prediction needs (``arrays.npz`` of a run folder)."""
        if self._arrays is None:
            self._arrays = self._loaded.arrays
        return self._arrays

    def _trace_arrays(self) -> dict[str, np.ndarray]:
        if self._trace is None:
            from bayesfa.rundir import read_trace

            path = self._loaded.trace_path if self._loaded is not None else None
            self._trace = read_trace(path) if path is not None else {}
        return self._trace

    @property
    def trace(self):
        """The per-draw diagnostics as an ArviZ ``InferenceData`` (group ``sample_stats``, dims
        ``(chain, draw)``); None for a method that records none (the greedy learners)."""
        arrays = self._trace_arrays()
        if not arrays:
            return None
        import arviz as az

        stats = {k: np.asarray(v) for k, v in arrays.items()}
        if int(az.__version__.split(".")[0]) >= 1:  # arviz 1.x: {group: {variable: array}}
            return az.from_dict({"sample_stats": stats})
        return az.from_dict(sample_stats=stats)  # arviz 0.2x: one keyword per group

    def __repr__(self) -> str:
        where = str(self.path) if self.path is not None else "in memory"
        return f"Run({self.method!r}, {where}, seed={self.seed})"

    # -- data in the run's symbols
    def corpus(self, data, *, format: str | None = None) -> Corpus:
        """``data`` read with the run's alphabet and format (what :meth:`predict` reads)."""
        train = self.manifest.get("train", {})
        corpus, _, record = as_corpus(data, format=format, alphabet=self.alphabet,
                                      train_format=train.get("format"))
        trained = int(train.get("alphabet_size", corpus.alphabet_size))
        if corpus.alphabet_size > trained:
            raise InputError(f"alphabet of {corpus.alphabet_size} letters, but the run was trained "
                             f"on {trained}", record.get("path") or "data", 1)
        return corpus.with_alphabet(trained)

    # -- prediction
    def predict(self, test, *, map: bool = False, format: str | None = None) -> np.ndarray:
        """Natural-log posterior predictive probability of each test string (Eq. 6 for the
        samplers), shape ``[n_strings]``. ``map``: the single sample of highest joint
        probability (methods that support it). A run made with ``fit --predict TEST`` answers
        for that same file (SHA-256) from what the fit accumulated."""
        corpus = self.corpus(test, format=format)
        stored = None if map else self._stored_predictions(test, format, corpus.n_strings)
        return stored if stored is not None else self.log_prob(corpus, map=map)

    def _stored_predictions(self, test, fmt: str | None, n_strings: int):
        """The log predictive a ``fit --predict`` saved in the run folder when ``test`` is
        that same file (SHA-256) read in the same format; None otherwise."""
        from bayesfa.online import PREDICTIONS, load_predictions
        from bayesfa.rundir import file_sha256

        if self._loaded is None or not isinstance(test, (str, os.PathLike)):
            return None
        about = self.info.get("predict")
        if not isinstance(about, dict) or not (self.path / PREDICTIONS).is_file():
            return None
        if (fmt or self.manifest.get("train", {}).get("format") or "pautomac") != about.get("format"):
            return None
        sha = file_sha256(test)
        if sha != about.get("sha256"):
            return None
        logp = load_predictions(self._loaded.verify(PREDICTIONS), n_strings, sha)
        return None if logp is None else np.minimum(logp, 0.0)

    def log_prob(self, corpus: Corpus, **kwargs) -> np.ndarray:
        """:meth:`predict` of a Corpus already in the run's letters. The arrays are input like
        any other: values that are not log probabilities (a damaged or edited run) are an
        :class:`InputError` naming the run."""
        method = _method_of(self)
        kwargs = {k: v for k, v in kwargs.items() if v}
        _check_supports(self.method, method.predict_log_prob, kwargs)
        logp = np.asarray(_guarded(self, lambda: method.predict_log_prob(
            self.arrays, self.options, corpus, **kwargs)), dtype=np.float64)
        if logp.shape != (corpus.n_strings,) or np.isnan(logp).any() or (logp > 1e-9).any():
            raise InputError("the run's arrays and options give values that are not log "
                             "probabilities (a damaged or edited run)", self.path or "run")
        return np.minimum(logp, 0.0)

    def perplexity(self, test, *, map: bool = False, per_symbol: bool = False,
                   letters_only: bool = False, draw_sets: int | None = None,
                   mc_tolerance: float | None = None, max_particles: int | None = None,
                   proposal: str | None = None, format: str | None = None) -> dict[str, Any]:
        """Per-symbol perplexity of ``test`` with the conventions of ``bayesfa perplexity``
        (Pfau, Bartlett & Wood 2010, Sect. 4): ``{"perplexity", "n_symbols", "log_prob",
        "data_shape", "incremental", "mixture", "quantity", "estimator", "mc_se", ...}``.
        pdfa / pdia / pdia-smoothed: by default ``log p(test | train)`` of the joint posterior
        mixture with its Monte Carlo standard error ``mc_se`` (nats; particles doubled until
        it and the change on doubling are at most ``mc_tolerance`` per symbol, default 0.002,
        or ``max_particles``;
        ``mc_converged`` says which); ``draw_sets=K`` the fixed estimators, their filters'
        ``proposal`` ``"adapted"`` (default) or ``"prior"``
        (:func:`bayesfa.samplers.pdia.pdfa.perplexity_log_prob`); ``per_symbol`` the authors'
        estimator, which converges to ``sum_t log E[p(x_t | x_<t)]``, not to
        ``log p(test | train)``."""
        from bayesfa.scoring import perplexity

        corpus = self.corpus(test, format=format)
        train = self.manifest.get("train", {})
        shape = train.get("data_shape") or ("sequence" if self.options.get("sequence") else "sentences")
        continuation = shape == "sequence"
        n_symbols = corpus.n_letters if continuation or letters_only else corpus.n_tokens
        method = _method_of(self)
        hook = getattr(method, "perplexity_log_prob", None)
        asked = {k: True for k, v in (("map", map), ("per_symbol", per_symbol),
                                      ("letters_only", letters_only)) if v}
        for key, value in (("draw_sets", draw_sets), ("mc_tolerance", mc_tolerance),
                           ("max_particles", max_particles), ("proposal", proposal)):
            if value is not None:
                asked[key] = value
        details: dict[str, Any] = {}
        zeros = None
        if hook is None:
            logp = self.log_prob(corpus, **asked)
            total, zeros = float(logp.sum()), int(np.isneginf(logp).sum())
        else:
            import inspect

            _check_supports(self.method, hook, asked)
            if "details" in inspect.signature(hook).parameters:
                asked["details"] = details
            total = float(_guarded(self, lambda: hook(self.arrays, self.options, corpus,
                                                       continuation=continuation, **asked)))
            if np.isnan(total) or total > 1e-9:
                raise InputError("the run's arrays and options give a value that is not a log "
                                 "probability (a damaged or edited run)", self.path or "run")
        return {"perplexity": perplexity(np.array([min(total, 0.0)]), n_symbols),
                "n_symbols": n_symbols, "n_letters": corpus.n_letters, "log_prob": total,
                "data_shape": shape, "incremental": hook is not None,
                "mixture": ("map " if map and per_symbol else "")
                + ("per-symbol" if per_symbol else ("map" if map else "joint")),
                "letters_only": bool(letters_only), "draw_sets": draw_sets,
                "proposal": proposal,
                "quantity": details.get("quantity", "log p(test | train), the method's estimate"
                                        if hook is not None and not per_symbol else
                                        "sum_t log mean_k p_k(x_t | x_<t), the per-symbol "
                                        "average over samples" if hook is not None else
                                        "sum over test strings of log p(string | train)"),
                "estimator": details.get("estimator"), "particles": details.get("particles"),
                "replicates": details.get("replicates"), "mc_se": details.get("se"),
                "mc_se_per_symbol": (None if details.get("se") is None
                                     else details["se"] / max(n_symbols, 1)),
                "mc_converged": details.get("converged"),
                "mc_tolerance": details.get("tolerance"), "mc_cap": details.get("cap"),
                "mc_change_per_symbol": details.get("change_per_symbol"),
                "zero_probability_strings": zeros}

    # -- diagnostics
    def scalar_trace(self) -> dict[str, np.ndarray]:
        """The scalar ``(chain, draw)`` variables of the trace (of a run folder: its
        ``trace.nc``, checked against the manifest)."""
        from bayesfa.validation import diagnostics

        if self._loaded is not None:
            if self._loaded.trace_path is None:
                raise InputError(f"method {self.method} saved no trace to diagnose", self.path)
            from bayesfa.rundir import TRACE

            return diagnostics.scalar_trace(self._loaded.verify(TRACE))
        trace = {k: np.asarray(v, dtype=np.float64) for k, v in self._trace_arrays().items()
                 if np.ndim(v) == 2}
        if not trace:
            raise InputError(f"method {self.method} saved no trace to diagnose", "run")
        return trace

    def diagnose(self) -> dict[str, Any]:
        """``bayesfa diagnose --json`` as a dict. A sampler: ``{"kind": "sampler", "variables"
        (R-hat and ESS of every traced variable, per chain and across chains), "verdict",
        "warnings"}``; an optimiser (cvb0, gcvb0, cvb2): ``{"kind": "optimiser", "status"
        (objective, iterations, converged or not), "variables"}``."""
        from bayesfa.validation import diagnostics

        trace = self.scalar_trace()
        if diagnostics.is_optimiser(trace):
            return {"kind": "optimiser", "status": diagnostics.optimiser_status(trace, self.manifest),
                    "variables": diagnostics.optimiser_variables(trace)}
        summary = diagnostics.diagnose_trace(trace)
        return {"kind": "sampler", "variables": summary, "verdict": diagnostics.verdict(summary),
                "warnings": diagnostics.warnings(summary)}

    # -- the automaton
    def automaton(self):
        """The one automaton the method learned (a :class:`~bayesfa.automata.PDFA` or
        :class:`~bayesfa.automata.PFA` giving every string the probability :meth:`predict`
        gives it), for the methods that learn one; an InputError otherwise."""
        from bayesfa.export import run_automaton

        return run_automaton(self)

    def export(self, format: str = "pautomac", out: str | os.PathLike | None = None,
               max_edges: int | None = None) -> str:
        """The automaton as a PAutomaC model file or Graphviz dot text; written to ``out``
        when given (refusing to replace a file bayesfa did not write), returned as text."""
        from bayesfa import export as ex

        machine = self.automaton()
        if format not in ex.FORMATS:
            raise InputError(f"format {format!r} is unknown; choose from {', '.join(ex.FORMATS)}")
        if format == "dot":
            symbols = [str(x) for x in self.alphabet] if self.alphabet is not None else None
            text = ex.dot_text(machine, max_edges or ex.DEFAULT_MAX_EDGES, symbols)
        else:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                ex.write_pautomac(Path(tmp) / "model", machine)
                text = (Path(tmp) / "model").read_text()
        if out is not None:  # ``-``: standard output
            from bayesfa.rundir import write_output_text

            write_output_text(out, text, "--out", stream=True)
        return text

    def components(self) -> list:
        """The plug-in automata whose equal-weight mixture is the run's predictive, as
        :class:`~bayesfa.automata.PFA` objects: one per recorded draw for the PFA-family
        samplers and the oracles (Eq. 6), one for CVB, HMM-EM and the greedy learners. Methods
        whose predictive is not a mixture of fixed automata (the PDFA / PDIA, whose unvisited
        transitions are drawn as the test is read, and the n-gram models) have none: an
        :class:`InputError` says so."""
        return _plugin_automata(self)

    def sample(self, n: int, seed: int = 0) -> list:
        """``n`` strings drawn from the run's predictive distribution (a draw of the mixture of
        :meth:`components`, then a string from it), in the run's symbols (lists of letters
        when the run has no alphabet; ``str`` when every symbol is one character)."""
        comps = self.components()
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        which = rng.integers(len(comps), size=int(n))
        strings: list = [None] * int(n)
        for k in np.unique(which):
            idx = np.flatnonzero(which == k)
            drawn = comps[k].sample(idx.size, rng)
            for i, s in zip(idx, drawn.strings()):
                strings[i] = self._symbols(s)
        return strings

    def decode(self, strings, *, format: str | None = None) -> list[np.ndarray]:
        """The most probable state path of each string under the plug-in automaton (Viterbi;
        the draw of highest joint probability for the samplers): for a string of ``n``
        letters, ``n + 1`` states, the first the initial state. A string the automaton gives
        probability 0 is an :class:`InputError` naming it."""
        from bayesfa.forward import viterbi

        comps = self.components()
        pfa = comps[self._map_draw(len(comps))]
        corpus = self.corpus(strings, format=format)
        out = []
        for s in range(corpus.n_strings):
            try:
                out.append(viterbi(pfa.init, pfa.trans, pfa.stop, corpus.string(s)))
            except ValueError:
                raise InputError(f"string {s} has probability 0 under the run's automaton: no "
                                 f"state path to decode") from None
        return out

    def _map_draw(self, n: int) -> int:
        trace = self._trace_arrays()
        joint = trace.get("log_joint")
        if n == 1 or joint is None or np.size(joint) != n:
            return 0
        return int(np.nanargmax(np.asarray(joint, dtype=np.float64).reshape(-1)))

    def _symbols(self, letters):
        letters = [int(x) for x in letters]
        if self.alphabet is None:
            return letters
        syms = [self.alphabet[x] for x in letters]
        return "".join(syms) if all(isinstance(x, str) and len(x) == 1 for x in self.alphabet) else syms


def _plugin_automata(run: Run) -> list:
    """:meth:`Run.components`: read from the arrays each method family saves."""
    from bayesfa.automata import PFA

    arrays, options, method = run.arrays, run.options, run.method

    def from_xi(xi):
        xi = np.asarray(xi, dtype=np.float64)
        return [PFA.from_xi(x) for x in xi.reshape((-1,) + xi.shape[-3:])]

    if method in ("cgs-pfa", "cgs-hmm-star", "cvb0", "gcvb0", "cvb2"):
        from bayesfa.samplers.pfa.cgs_pfa import plugin_xi

        counts = arrays["expected_counts"] if method.startswith(("cvb", "gcvb")) else arrays["counts"]
        return from_xi(plugin_xi(counts, options["beta"]))
    if method == "cgs-hmm":
        from bayesfa.samplers.pfa.cgs_hmm import hmm_xi

        return from_xi(hmm_xi(arrays["counts"], options["alpha"], options["beta"]))
    if method == "cgs-sg":
        from bayesfa.samplers.pfa.cgs_sg import sg_xi

        return from_xi(sg_xi(arrays["counts"], arrays["graph"], options["beta"]))
    if "xi" in arrays:  # the oracles' draws, PFA form
        return from_xi(arrays["xi"])
    if method == "hmm-em" and not options.get("sequence"):
        from bayesfa.learners.hmm_em import to_pfa

        return [PFA(*to_pfa(arrays["startprob"], arrays["transmat"], arrays["emissionprob"], False))]
    entry = _method_of(run)
    if hasattr(entry, "automaton"):
        return [run.automaton().to_pfa()]
    raise InputError(f"method {method} has no plug-in automata to sample or decode from (its "
                     f"predictive is not a mixture of fixed automata)", run.path or "run")


def _method_of(run: Run):
    if run.method not in method_names():
        raise InputError(f"unknown method {run.method!r} in the manifest", run.path or "run")
    return get_method(run.method)


def _check_supports(method: str, fn, options: dict) -> None:
    """An InputError if ``fn`` lacks a keyword asked for (``--map``, ...)."""
    import inspect

    for key in options:
        if key not in inspect.signature(fn).parameters:
            raise InputError(f"method {method} does not support --{key.replace('_', '-')}")


def _guarded(run: Run, call):
    """``call()`` on a run's arrays: what a damaged or edited run raises is an InputError
    naming the run (NaN is left for the caller to report)."""
    try:
        with np.errstate(invalid="ignore"):
            return call()
    except InputError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise InputError(f"arrays.npz does not fit the manifest's {run.method} run "
                         f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})",
                         run.path or "run") from None


# -- validation ---------------------------------------------------------------------------------

def validate(method: str, toy: str = "tiny", seed: int = 0, *, kernel: str | None = None) -> dict[str, Any]:
    """``bayesfa validate METHOD`` as data: ``{"method", "toy", "passed", "checks": [...],
    "info"}`` (each check with its statistic, critical value and rows)."""
    from bayesfa.validation.harness import validate as _validate

    return _validate(method, toy, seed, kernel=kernel).to_dict()
