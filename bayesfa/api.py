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
``text`` or ``fasta``; ``separator=`` for ``lines``); a :class:`~bayesfa.corpus.Corpus` is
taken as it is (letters ``0..alphabet_size-1``). No reader drops a string: ``""``, ``[]``, an
empty line of a lines file are the empty string, and :meth:`Run.predict` gives one value per
string, in order.

**Run folders.** ``fit(strings, out=DIR)`` records the alphabet (characters, words or
integers) in the manifest, so :func:`load` reads the folder back, and test data for it are
Python strings or a lines file of its symbols (written as ``str(x)``; one character each, or
separated by whitespace when a symbol is longer or an integer: the manifest's
``train.separator``). A run fitted on a PAutomaC file (no alphabet) takes Python strings of
its letter numbers (``[[0, 2], []]``), or files whose symbols are those numbers.
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
from bayesfa.corpus import CORPUS, FILE_FORMATS, SYMBOLS, Corpus
from bayesfa.errors import InputError
from bayesfa.methods import COMPILE_SECONDS, get_method, method_names

DataLike = "str | os.PathLike | Corpus | Sequence[Sequence]"



# -- what is registered ------------------------------------------------------------------------

def methods() -> list[str]:
    """The names of every registered method (``--method NAME``)."""
    return method_names()


def options(method: str) -> list[_options.Option]:
    """The options of ``method``: name, command-line flag, default, help, check."""
    return _options.declared(method)


# -- data ----------------------------------------------------------------------------------------

def read_file(path: str | os.PathLike, fmt: str | None, alphabet=None,
              separator: str | None = None) -> tuple[Corpus, list | None]:
    """``(corpus, alphabet symbols or None)`` of a data file in ``fmt`` (as ``--format``);
    ``separator`` (``--separator``, format ``lines`` only): split each line into symbols at
    it (:func:`bayesfa.textdata.load_lines`). Every string of the file is kept, empty ones
    included."""
    fmt = fmt or "pautomac"
    if fmt not in FILE_FORMATS:
        raise InputError(f"format {fmt!r} is unknown; choose from {', '.join(FILE_FORMATS)}")
    if separator is not None and fmt != "lines":
        raise InputError(f"--separator (separator=) is for --format lines, not {fmt}", path)
    if fmt == "pautomac":
        from bayesfa.pautomac import read_sample
        return read_sample(path), None
    from bayesfa import textdata
    alpha = None if alphabet is None else textdata.Alphabet(tuple(alphabet))
    if fmt == "lines":
        corpus, alpha = textdata.load_lines(path, alphabet=alpha, separator=separator)
    elif fmt == "text":
        corpus, alpha = textdata.load_text(path, alphabet=alpha)
    elif alpha is None:  # fasta: A C G T unless the run says otherwise
        corpus, alpha = textdata.load_fasta(path)
    else:
        corpus, alpha = textdata.load_fasta(path, alphabet=alpha)
    return corpus, list(alpha.symbols)


def _strings(data: Iterable) -> list[list]:
    out = []
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise InputError(f"data is a {type(data).__name__}, not a path or a sequence of strings")
    for i, s in enumerate(data):
        if isinstance(s, (str, bytes)):
            out.append(list(s.decode() if isinstance(s, bytes) else s))
        elif isinstance(s, Iterable):
            out.append([x.item() if isinstance(x, np.generic) else x for x in s])
        else:
            raise InputError(f"string {i} is a {type(s).__name__}, not a sequence of symbols")
    return out


def _alphabet_of(strings: list[list]) -> list:
    for s_i, s in enumerate(strings):
        for x in s:
            if isinstance(x, bool) or not isinstance(x, (str, int)):
                raise InputError(f"string {s_i} has the symbol {x!r}, a {type(x).__name__}: "
                                 f"symbols are strings or integers")
            if x == "":
                raise InputError(f"string {s_i} has the symbol '' (an empty string): a symbol "
                                 f"is a non-empty string or an integer")
    seen = list(dict.fromkeys(x for s in strings for x in s))
    try:
        return sorted(seen)
    except TypeError:  # strings and integers mixed
        return seen


def _encode(strings: list[list], alphabet: list) -> Corpus:
    index = {(type(x), x): i for i, x in enumerate(alphabet)}  # 1 and True, 1 and 1.0 apart
    letters = []
    for s_i, s in enumerate(strings):
        row = []
        for x in s:
            try:
                row.append(index[type(x), x])
            except (KeyError, TypeError):  # unknown, or unhashable (a list as a symbol)
                raise InputError(f"string {s_i} has the symbol {x!r}, which the training data "
                                 f"never had (alphabet: {_show(alphabet)})") from None
        letters.append(row)
    return Corpus.from_strings(letters, max(len(alphabet), 1))


def _letters(strings: list[list], alphabet_size: int, train_format: str) -> Corpus:
    """Python strings of letter numbers ``0..alphabet_size-1`` (a run without symbols)."""
    for s_i, s in enumerate(strings):
        for x in s:
            if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < alphabet_size:
                raise InputError(
                    f"string {s_i} has the symbol {x!r}, but the run was fitted on {train_format} "
                    f"data, whose symbols are the letter numbers 0..{alphabet_size - 1} (give "
                    f"lists of integers)")
    return Corpus.from_strings(strings, alphabet_size)


def _show(alphabet: list, most: int = 12) -> str:
    text = ", ".join(map(repr, alphabet[:most]))
    return text + (f", ... ({len(alphabet)} in all)" if len(alphabet) > most else "")


def default_separator(alphabet: list | None) -> str | None:
    """How a file of a run's symbols is split into them: no separator (each character a
    symbol) when every symbol is one character, else whitespace (words, integers)."""
    if alphabet is None or all(isinstance(x, str) and len(x) == 1 for x in alphabet):
        return None
    return " "


def _file_symbols(alphabet: list, path) -> list[str]:
    """The run's symbols as a file writes them (``str(x)``), each told apart from the others."""
    names = [str(x) for x in alphabet]
    if len(set(names)) != len(names):
        dup = next(n for i, n in enumerate(names) if n in names[:i])
        raise InputError(f"the run's symbols include two written {dup!r} (an integer and a "
                         f"string): a file cannot tell them apart; give Python strings", path)
    if "" in names:
        raise InputError("the run has the empty symbol '', which no file can hold; give Python "
                         "strings", path)
    return names


def _digest(corpus: Corpus, alphabet: list | None) -> str:
    return hashlib.sha256(corpus.tokens.tobytes() + corpus.offsets.tobytes()
                          + json.dumps(alphabet).encode()).hexdigest()


def as_corpus(data, *, format: str | None = None, separator: str | None = None,
              train: dict[str, Any] | None = None) -> tuple[Corpus, list | None, dict[str, Any]]:
    """``(corpus, alphabet, record)`` of ``data`` (module docstring); ``record`` describes the
    data for a run's manifest (path, SHA-256 and format of a file, and its ``separator``; a
    SHA-256 of the encoded strings otherwise).

    ``train``: the ``train`` record of a run's manifest, when ``data`` are test data for it;
    they are then read in the run's letters: by its alphabet, or, for a run without symbols
    (fitted on a PAutomaC file or a Corpus), as letter numbers ``0..A-1``. A test file is
    read in the run's format and separator unless ``format`` / ``separator`` say otherwise;
    for a run fitted on Python symbols, as lines of those symbols (written as ``str(x)``;
    split at whitespace unless every symbol is one character). Every string is kept."""
    from bayesfa.rundir import file_sha256

    if separator is not None and (not isinstance(separator, str) or not separator):
        raise InputError(f"separator= must be a non-empty string, got {separator!r}")
    if train is None:
        train_format, alphabet, size = None, None, None
    else:
        train_format, alphabet = train.get("format"), train.get("alphabet")
        size = int(train.get("alphabet_size") or 1)
    if isinstance(data, (str, os.PathLike)):
        if train is None:
            fmt, sep, names = format or "pautomac", separator, None
        else:
            native = train_format if train_format in FILE_FORMATS else (
                "lines" if train_format == SYMBOLS else "pautomac")
            fmt = format or native
            if separator is not None or fmt != "lines" or native != "lines":
                sep = separator
            elif train_format == SYMBOLS:  # recorded since it was; else what fit would record
                sep = train.get("separator", default_separator(alphabet))
            else:
                sep = train.get("separator")
            if alphabet is not None:
                names = _file_symbols(alphabet, data) if train_format == SYMBOLS else alphabet
                if train_format == SYMBOLS and fmt == "pautomac":
                    raise InputError("the run was fitted on Python symbols: a test file holds "
                                     "them as lines (--format lines), not as PAutomaC letter "
                                     "numbers", data)
            else:  # a run without symbols: letter numbers, in any format
                names = None if fmt == "pautomac" else [str(i) for i in range(size)]
        corpus, alpha = read_file(data, fmt, names, sep)
        if train_format == SYMBOLS and alphabet is not None:
            alpha = alphabet
        elif train is not None and alphabet is None:
            alpha = None
        record = {"path": str(Path(data).resolve()), "sha256": file_sha256(data), "format": fmt}
        if sep is not None:
            record["separator"] = sep
        return corpus, alpha, record
    if isinstance(data, Corpus):
        corpus, alpha, fmt = data, None, CORPUS
    else:
        strings = _strings(data)
        if not strings:
            raise InputError("no string in the data")
        if train is None:
            alpha = _alphabet_of(strings)
            if not alpha:
                raise InputError("every string is empty: no symbol to learn")
            corpus, fmt = _encode(strings, alpha), SYMBOLS
        elif alphabet is not None:
            corpus, alpha, fmt = _encode(strings, alphabet), alphabet, SYMBOLS
        else:
            corpus, alpha, fmt = _letters(strings, size, train_format or "pautomac"), None, CORPUS
    record = {"path": None, "sha256": _digest(corpus, alpha), "format": fmt}
    if train is None and fmt == SYMBOLS and default_separator(alpha) is not None:
        record["separator"] = default_separator(alpha)  # how `bayesfa predict` reads its files
    return corpus, alpha, record


def read_test(data, train: dict[str, Any], *, format: str | None = None,
              separator: str | None = None) -> tuple[Corpus, dict[str, Any]]:
    """``(corpus, record)`` of test ``data`` for a run whose manifest's ``train`` record is
    ``train``, in the run's letters (:func:`as_corpus`), over its alphabet size; an
    :class:`InputError` naming the data when they have letters the run never had."""
    corpus, _, record = as_corpus(data, format=format, separator=separator, train=train)
    trained = int(train.get("alphabet_size", corpus.alphabet_size))
    if corpus.alphabet_size > trained:
        raise InputError(f"alphabet of {corpus.alphabet_size} letters, but the run was trained "
                         f"on {trained}", record.get("path") or "data", 1)
    return corpus.with_alphabet(trained), record


# -- fit, load ---------------------------------------------------------------------------------

def fit(data, method: str = "cgs-pfa", *, seed: int = 0, out: str | os.PathLike | None = None,
        force: bool = False, progress: bool = False, format: str | None = None,
        separator: str | None = None, predict=None, max_draws: int | None = None,
        **options) -> "Run":
    """Fit ``method`` on ``data`` and return the :class:`Run`.

    ``options`` are the method's (:func:`options`), checked as the command line checks them;
    an unknown or invalid one raises :class:`~bayesfa.errors.InputError` with the CLI's
    message. ``out``: write the run folder there as ``bayesfa fit --out`` does (refuses to
    clobber what is not the same bayesfa run, resumes an interrupted identical fit, ``force``
    replaces a bayesfa run). ``predict``: test data whose Eq. 6 predictive is accumulated
    during the fit (``fit --predict``); ``max_draws``: keep the counts of that many draws per
    chain (methods that predict online). ``format`` / ``separator``: how a data file is read
    (``--format``, ``--separator``; :func:`read_file`); every string is kept, empty ones too.
    """
    return fit_resolved(data, method, _options.resolve(method, options), seed=seed, out=out,
                        force=force, progress=progress, format=format, separator=separator,
                        predict=predict, max_draws=max_draws).run


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
                 progress: bool = False, format: str | None = None,
                 separator: str | None = None, predict=None, max_draws: int | None = None,
                 say=None) -> FitOutcome:
    """:func:`fit` with every option of ``method`` already resolved: the one code path of
    ``bayesfa.fit`` and ``bayesfa fit`` (whose parser checks the options with the same
    declaration). ``say(message)`` receives the notes the command line prints (nothing to do,
    resuming, where the finished pieces of an interrupted fit are kept)."""
    from bayesfa.online import ONLINE_METHODS, supports_online

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed= must be a non-negative integer, got {seed!r}")
    opts = dict(options)
    entry = get_method(method)
    corpus, alphabet, record = as_corpus(data, format=format, separator=separator)
    if corpus.n_strings == 0:
        raise InputError("holds no string: nothing to fit", record.get("path") or "data")
    if max_draws is not None:
        if not supports_online(entry):
            raise InputError(f"--max-draws: method {method} keeps no draws to cap (only methods "
                             f"that predict online do: {', '.join(ONLINE_METHODS)})")
        opts["max_draws"] = max_draws
    train = {**record,
             # how test data relate to the training data (methods.py: perplexity hook)
             "data_shape": "sequence" if opts.get("sequence") else "sentences",
             "n_strings": corpus.n_strings, "n_letters": corpus.n_letters,
             "alphabet_size": corpus.alphabet_size, "alphabet": alphabet}
    test = test_record = None
    if predict is not None:  # read as `bayesfa predict` will read it: the run's letters
        test, test_record = read_test(predict, train)
        opts["predict_sha256"] = test_record["sha256"]
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
    """A fitted method, as :func:`fit` and :func:`load` return it (not made directly).

    It holds the run's manifest (method, options, seed, training data, what the fit
    reported), the arrays prediction needs and the per-draw trace, the last two read from
    the run folder when first used. It predicts (:meth:`predict`, :meth:`perplexity`),
    diagnoses (:meth:`diagnose`, :attr:`trace`), gives the automaton it learned
    (:meth:`automaton`, :meth:`export`, :meth:`components`) and draws or decodes strings
    (:meth:`sample`, :meth:`decode`).
    """

    #: The run folder (None for a run fitted in memory).
    path: Path | None
    #: The run's ``manifest.json`` as a dict, with ``method``, ``options``, ``seed``,
    #: ``train`` (the training data: file path or SHA-256, format, counts, alphabet),
    #: ``info`` (what the fit reported), the package versions and, in a folder, the SHA-256
    #: of every file.
    manifest: dict[str, Any]
    _arrays: dict[str, np.ndarray] | None = field(default=None, repr=False)
    _trace: dict[str, np.ndarray] | None = field(default=None, repr=False)
    _loaded: Any = field(default=None, repr=False)
    _prediction: Any = field(default=None, repr=False)

    # -- what it is
    @property
    def method(self) -> str:
        """The registered method's name (``--method NAME``, :func:`methods`)."""
        return self.manifest["method"]

    @property
    def options(self) -> dict[str, Any]:
        """Every option of the fit, defaults filled in."""
        return dict(self.manifest["options"])

    @property
    def seed(self) -> int | None:
        """The fit's random seed (the same seed gives the same run, bit for bit)."""
        return self.manifest.get("seed")

    @property
    def alphabet(self) -> list | None:
        """The training symbols in letter order, letter ``i`` being ``alphabet[i]``, or None
        for a run fitted on a PAutomaC file or a Corpus, whose letters are the integers
        ``0, 1, ...`` themselves."""
        return self.manifest.get("train", {}).get("alphabet")

    @property
    def info(self) -> dict[str, Any]:
        """What the fit reported, the manifest's ``info``, with the fit's ``seconds`` and the
        method's own figures (cgs-pfa its ``kernel``, hpyp its ``n_states`` and
        ``seconds_per_sweep``, the memoizer its ``train_log_prob``, ...; ``predict`` after
        ``fit --predict``)."""
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
        """The run's trace as ArviZ data (``InferenceData``; an ``xarray.DataTree`` under ArviZ
        1.x), None for a method that records none (the greedy learners, the memoizer).

        A sampler's: ``posterior`` holds each draw's model quantities (log joint, states or
        tables in use, sampled hyperparameters and, for models with ``A * N * N <= 10**4``
        (:data:`bayesfa.rundir.PLUGIN_MAX`), each draw's plug-in parameters ``trans [chain,
        draw, letter, state, next_state]`` and ``stop [chain, draw, state]``, the automata of
        :meth:`components`; under ArviZ 1.x only while the posterior's scalars stay within
        ``az.rcParams["plot.max_subplots"]``, as its ``plot_trace`` refuses more panels),
        ``sample_stats`` the sampler's own statistics (:data:`bayesfa.rundir.SAMPLE_STATS`), so
        ``az.summary``, ``az.rhat``, ``az.ess`` and ``az.plot_trace`` take it as it is. An
        optimiser's (cvb0, gcvb0, cvb2, hmm-em): the group ``optimisation_history`` with the
        dim ``iteration``, and no posterior (its iterations are not draws)."""
        from bayesfa.rundir import HISTORY, trace_datasets

        arrays = self._trace_arrays()
        if not arrays:
            return None
        import arviz as az

        arviz_1 = int(az.__version__.split(".")[0]) >= 1
        groups = trace_datasets(arrays)
        if HISTORY not in groups:
            chains, draws = np.shape(next(iter(arrays.values())))[:2]
            plugin = self._plugin_trace(chains, draws)
            panels = sum(int(np.prod(v.shape[2:])) for v in groups.get("posterior", {}).values())
            panels += sum(int(np.prod(v.shape[2:])) for _, v in plugin.values())
            if arviz_1 and panels > az.rcParams["plot.max_subplots"]:
                plugin = {}  # arviz 1.x's plot_trace refuses more panels than that (0.2x: warns)
            if plugin:
                groups["posterior"] = groups["posterior"].assign(plugin) if "posterior" in groups \
                    else trace_datasets(plugin)["posterior"]
        if arviz_1:  # arviz 1.x: an xarray DataTree of groups
            import xarray as xr

            return xr.DataTree.from_dict({f"/{g}": ds for g, ds in groups.items()})
        return az.InferenceData(**groups)  # arviz 0.2x

    def _plugin_trace(self, chains: int, draws: int) -> dict[str, Any]:
        """``{"trans": (dims, [chain, draw, A, Q, Q]), "stop": ...}``: the plug-in parameters of
        each draw (:meth:`components`, one automaton a draw) when ``A * Q * Q <=``
        :data:`bayesfa.rundir.PLUGIN_MAX`; empty for a method without per-draw automata of
        one size (a model without ``states``: ipfa, pdia, the n-grams)."""
        from bayesfa.rundir import PLUGIN_MAX, TRACE_DIMS

        states, letters = self.options.get("states"), self.manifest.get("train", {}).get("alphabet_size")
        if not isinstance(states, int) or (isinstance(letters, int) and letters * states * states > PLUGIN_MAX):
            return {}  # checked before building any automaton: Q >= states
        try:
            comps = self.components()
        except InputError:
            return {}
        if (len(comps) != chains * draws or len({c.trans.shape for c in comps}) != 1
                or comps[0].trans.size > PLUGIN_MAX):
            return {}
        out = {}
        for name in ("trans", "stop"):
            values = np.stack([getattr(c, name) for c in comps])
            values = values.reshape((chains, draws) + values.shape[1:])
            # an entry whose draws differ by no more than the rounding of its row's
            # normalisation (A * Q + 1 terms summed, in different orders: e.g. the initial
            # state's stop probability, an unvisited transition), in a chain or in all, is
            # one value: ArviZ's KDE (az.plot_trace, per chain or combined) overflows on such
            # a spread of a few ulps
            rounding = 4 * (comps[0].trans.shape[0] * comps[0].trans.shape[2] + 1) * np.finfo(np.float64).eps
            for axes in ((1,), (0, 1)):
                first = values[:, :1] if axes == (1,) else values[:1, :1]
                spread = np.ptp(values, axis=axes, keepdims=True)
                same = spread <= rounding * np.abs(values).max(axis=axes, keepdims=True)
                values = np.where(same, first, values)
            out[name] = (("chain", "draw") + TRACE_DIMS[name], values)
        return out

    def __repr__(self) -> str:
        where = str(self.path) if self.path is not None else "in memory"
        return f"Run({self.method!r}, {where}, seed={self.seed})"

    # -- data in the run's symbols
    def corpus(self, data, *, format: str | None = None, separator: str | None = None) -> Corpus:
        """``data`` read with the run's alphabet, format and separator (what :meth:`predict`
        reads; :func:`read_test`): every string kept, in order."""
        return read_test(data, self.manifest.get("train", {}), format=format,
                         separator=separator)[0]

    # -- prediction
    def predict(self, test, *, map: bool = False, format: str | None = None,
                separator: str | None = None) -> np.ndarray:
        """Natural-log posterior predictive probability of each test string (Eq. 6 for the
        samplers), shape ``[n_strings]``: one value per string of ``test``, in order (empty
        strings included). ``test``: Python strings or a file, read as the run's training
        data were (its format and ``separator`` unless given; :func:`read_test`).

        Each string is scored given the training data only, ``log p(string | train)`` (a run
        fitted with ``--sequence``: the strings continue the training sequence and one
        another, and the values are those sequential conditionals). Their sum is the held-out
        log likelihood that every method computes alike: the number to compare across
        methods. It is not always :meth:`perplexity`'s ``log_prob``: on sentences, pdfa, pdia,
        pdia-smoothed, hpyp and the memoizer read the test set there as one growing sample
        (each string given the training data and the test strings before it), another
        quantity, which that result's ``quantity`` names.

        ``map``: the single sample of highest joint probability (methods that support it). A
        run made with ``fit --predict TEST`` answers for that same file (SHA-256), read the
        same way, from what the fit accumulated."""
        corpus, record = read_test(test, self.manifest.get("train", {}), format=format,
                                   separator=separator)
        stored = None if map else self._stored_predictions(record, corpus.n_strings)
        logp = stored if stored is not None else self.log_prob(corpus, map=map)
        if logp.shape != (corpus.n_strings,):  # one row per string, never fewer
            raise InputError(f"{logp.size} predictions for {corpus.n_strings} strings",
                             record.get("path") or "data")
        return logp

    def _stored_predictions(self, record: dict[str, Any], n_strings: int):
        """The log predictive a ``fit --predict`` saved in the run folder when the test data
        (``record``: :func:`read_test`) are that same file (SHA-256) read the same way (format
        and separator); None otherwise."""
        from bayesfa.online import PREDICTIONS, load_predictions

        if self._loaded is None or record.get("path") is None:
            return None
        about = self.info.get("predict")
        if not isinstance(about, dict) or not (self.path / PREDICTIONS).is_file():
            return None
        if (record["format"], record.get("separator")) != (about.get("format"),
                                                           about.get("separator")):
            return None
        if record["sha256"] != about.get("sha256"):
            return None
        logp = load_predictions(self._loaded.verify(PREDICTIONS), n_strings, record["sha256"])
        return None if logp is None else np.minimum(logp, 0.0)

    def log_prob(self, corpus: Corpus, **kwargs) -> np.ndarray:
        """:meth:`predict` of a Corpus already in the run's letters. The arrays are input like
        any other: values that are not log probabilities (a damaged or edited run) are an
        :class:`InputError` naming the run. A Ctrl-C while numba compiles the prediction's
        kernels (first use) stops it at once (:func:`bayesfa.compiling.compile_notice`)."""
        method = _method_of(self)
        kwargs = {k: v for k, v in kwargs.items() if v}
        _check_supports(self.method, method.predict_log_prob, kwargs)
        with compile_notice(self.method, None):
            logp = np.asarray(_guarded(self, lambda: method.predict_log_prob(
                self.arrays, self.options, corpus, **kwargs)), dtype=np.float64)
        if logp.shape != (corpus.n_strings,) or np.isnan(logp).any() or (logp > 1e-9).any():
            raise InputError("the run's arrays and options give values that are not log "
                             "probabilities (a damaged or edited run)", self.path or "run")
        return np.minimum(logp, 0.0)

    def perplexity(self, test, *, map: bool = False, per_symbol: bool = False,
                   letters_only: bool = False, draw_sets: int | None = None,
                   mc_tolerance: float | None = None, max_particles: int | None = None,
                   proposal: str | None = None, format: str | None = None,
                   separator: str | None = None) -> dict[str, Any]:
        """Per-symbol perplexity of ``test`` with the conventions of ``bayesfa perplexity``
        (Pfau, Bartlett & Wood 2010, Sect. 4): ``{"perplexity", "n_symbols", "log_prob",
        "data_shape", "incremental", "mixture", "quantity", "estimator", "mc_se", ...}``.

        ``log_prob`` is the quantity ``quantity`` names, ``perplexity`` is
        ``exp(-log_prob / n_symbols)``. Methods with the perplexity hook (``"incremental":
        True``: pdfa, pdia, pdia-smoothed, hpyp, memoizer, hmm-em) give ``log p(test |
        train)`` with the test strings integrated into the model as they are read: string
        ``s`` given the training data and test strings ``1 .. s-1``. For the Bayesian ones on
        sentences that is not the sum of :meth:`predict` (each string given the training data
        only), and the two can rank methods differently; the other methods give that sum.
        Compare ``log_prob`` or the perplexity only between runs whose ``quantity`` is the
        same (as the PDIA paper's Table 1 compares the PDIA, HPYP n-grams and the memoizer);
        the sum of :meth:`predict` is the same quantity for every method.

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

        corpus = self.corpus(test, format=format, separator=separator)
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
            with compile_notice(self.method, None):  # Ctrl-C stops numba's first compile
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
        "warnings", "notes"}`` (``notes``: what cannot be diagnosed and why, e.g. R-hat with one
        chain; not a fault), ``"sampler_stats"`` (the mean of ``moved`` and of each acceptance
        rate over the draws, :func:`bayesfa.validation.diagnostics.sampler_means`); an optimiser (cvb0, gcvb0, cvb2, hmm-em): ``{"kind":
        "optimiser", "status" (objective, iterations, converged or not; its ``message`` says
        the trace is an optimisation history, not draws), "variables"}``."""
        from bayesfa.validation import diagnostics

        trace = self.scalar_trace()
        if diagnostics.is_optimiser(trace):
            return {"kind": "optimiser", "status": diagnostics.optimiser_status(trace, self.manifest),
                    "variables": diagnostics.optimiser_variables(trace)}
        summary = diagnostics.diagnose_trace(trace)
        return {"kind": "sampler", "variables": summary, "verdict": diagnostics.verdict(summary),
                "warnings": diagnostics.warnings(summary), "notes": diagnostics.notes(summary),
                "sampler_stats": diagnostics.sampler_means(trace)}

    # -- the automaton
    def automaton(self, which: str = "map"):
        """The run's automaton (a :class:`~bayesfa.automata.PDFA` or
        :class:`~bayesfa.automata.PFA`). The greedy learners: the one they learned, giving
        every string the probability :meth:`predict` gives it. The samplers and optimisers
        (:mod:`bayesfa.samplers.plugin`): ``which="map"`` the plug-in automaton of the draw of
        highest log joint (an optimiser's final iterate), ``which="mean"`` that of the
        posterior mean of the plug-in parameters where the states are the same in every draw
        (an InputError for the iPFA and the PDIA). The n-gram models: an InputError."""
        from bayesfa.export import run_automaton

        return _guarded(self, lambda: run_automaton(
            self, which, lambda: self._trace_arrays().get("log_joint")))

    def export(self, format: str = "pautomac", out: str | os.PathLike | None = None,
               max_edges: int | None = None, which: str = "map") -> str:
        """The automaton (:meth:`automaton` of ``which``) as a PAutomaC model file or Graphviz
        dot text; written to ``out`` when given (refusing to replace a file bayesfa did not
        write), returned as text."""
        from bayesfa import export as ex

        if format not in ex.FORMATS:
            raise InputError(f"format {format!r} is unknown; choose from {', '.join(ex.FORMATS)}")
        with compile_notice(self.method, None):  # Ctrl-C stops numba's first compile
            machine = self.automaton(which)
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
        :class:`~bayesfa.automata.PFA` objects: one per stored draw for the PFA-family samplers
        (the iPFA included) and the oracles (Eq. 6), one for CVB, HMM-EM and the greedy
        learners. Methods whose predictive is not a mixture of fixed automata (the PDFA /
        PDIA, whose unvisited transitions are drawn as the test is read, and the n-gram
        models) have none: an :class:`InputError` says so (their plug-in automaton is
        :meth:`automaton`)."""
        return _plugin_automata(self)

    def sample(self, n: int, seed: int = 0, *, which: str | None = None) -> list:
        """``n`` strings, in the run's symbols (lists of letters when the run has no alphabet;
        ``str`` when every symbol is one character); the same ``seed``, the same strings.

        ``which=None``: from the run's predictive distribution: a component of the mixture
        of :meth:`components` drawn uniformly, then a string from it; the PDFA / PDIA, whose
        predictive is no such mixture, draw from their MAP plug-in automaton; the n-gram
        models (hpyp, memoizer) symbol by symbol from their predictive given the context,
        until the end symbol. ``which="map"`` / ``"mean"``: from that :meth:`automaton`."""
        from bayesfa.samplers.plugin import check_which

        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"n must be a whole number, 0 or more, got {n!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InputError(f"seed must be a whole number, 0 or more, got {seed!r}")
        if which is not None:
            check_which(which)
        with compile_notice(self.method, None):  # Ctrl-C stops numba's first compile
            return self._sample(int(n), seed, which)

    def _sample(self, n: int, seed: int, which: str | None) -> list:
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        method = _method_of(self)
        if which is None and hasattr(method, "sample_strings"):
            drawn = _guarded(self, lambda: method.sample_strings(self.arrays, self.options,
                                                                  int(n), rng))
            return [self._symbols(s) for s in drawn]
        if which is None and getattr(method, "predictive_is_mixture", True):
            comps = self.components()
        else:
            comps = [self.automaton(which or "map").to_pfa()]
        pick = rng.integers(len(comps), size=int(n))
        strings: list = [None] * int(n)
        for k in np.unique(pick):
            idx = np.flatnonzero(pick == k)
            drawn = comps[k].sample(idx.size, rng)
            for i, s in zip(idx, drawn.strings()):
                strings[i] = self._symbols(s)
        return strings

    def decode(self, strings, *, format: str | None = None, separator: str | None = None,
               which: str = "map") -> list[np.ndarray]:
        """The most probable state path of each string under the run's :meth:`automaton`
        (``which``: ``map``, the draw of highest joint probability for the samplers, or
        ``mean``; Viterbi), its states numbered as in the exported model file: for a string
        of ``n`` letters, ``n + 1`` states, the first the initial state. A string the
        automaton gives probability 0 is an :class:`InputError` naming it."""
        with compile_notice(self.method, None):  # Ctrl-C stops numba's first compile
            return self._decode(strings, format, separator, which)

    def _decode(self, strings, format: str | None, separator: str | None,
                which: str) -> list[np.ndarray]:
        from bayesfa.forward import viterbi

        if hasattr(_method_of(self), "automaton"):
            pfa = self.automaton(which).to_pfa()
        else:  # the oracles: the draw of highest log joint among their components
            from bayesfa.samplers.plugin import check_which, map_index

            if check_which(which) == "mean":
                raise InputError(f"--which mean: method {self.method} has no posterior-mean "
                                 f"automaton; use --which map")
            comps = self.components()
            joint = self._trace_arrays().get("log_joint")
            joint = None if joint is None else np.asarray(joint).reshape(1, -1)
            pfa = comps[map_index(joint, (1, len(comps)))[1]]
        corpus = self.corpus(strings, format=format, separator=separator)
        out = []
        for s in range(corpus.n_strings):
            try:
                out.append(viterbi(pfa.init, pfa.trans, pfa.stop, corpus.string(s)))
            except ValueError:
                raise InputError(f"string {s} has probability 0 under the run's automaton: no "
                                 f"state path to decode") from None
        return out

    def _symbols(self, letters):
        letters = [int(x) for x in letters]
        if self.alphabet is None:
            return letters
        syms = [self.alphabet[x] for x in letters]
        return "".join(syms) if all(isinstance(x, str) and len(x) == 1 for x in self.alphabet) else syms


def _plugin_automata(run: Run) -> list:
    """:meth:`Run.components`: each stored draw's plug-in, from the method's front
    (:class:`bayesfa.samplers.plugin.DrawAutomata`), the oracles' draws or the one automaton."""
    from bayesfa.automata import PFA

    arrays, options, method = run.arrays, run.options, run.method
    entry = _method_of(run)
    if hasattr(entry, "draw_automata") and getattr(entry, "predictive_is_mixture", True):
        return _guarded(run, lambda: entry.draw_automata(arrays, options))
    if "xi" in arrays:  # the oracles' draws, PFA form
        xi = np.asarray(arrays["xi"], dtype=np.float64)
        return [PFA.from_xi(x) for x in xi.reshape((-1,) + xi.shape[-3:])]
    if hasattr(entry, "automaton") and not hasattr(entry, "draw_automata"):
        return [run.automaton().to_pfa()]
    raise InputError(f"method {method} has no plug-in automata whose mixture is its predictive "
                     f"(its predictive is not a mixture of fixed automata); its plug-in "
                     f"automaton is Run.automaton()", run.path or "run")


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
    "info"}`` (each check with its statistic, critical value and rows). A Ctrl-C while numba
    compiles the checks' kernels stops it at once (:func:`bayesfa.compiling.compile_notice`)."""
    from bayesfa.validation.harness import validate as _validate

    with compile_notice(str(method).split(":")[0], None):
        return _validate(method, toy, seed, kernel=kernel).to_dict()
