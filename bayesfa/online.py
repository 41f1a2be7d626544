"""Online posterior predictive (Eq. 6 of Shibata & Yoshinaka 2013), draw by draw.

Eq. 6 averages ``Pr(b | xi~(s))`` over the recorded draws ``s``. A production unit (one
chain of 10,000 sweeps or more) cannot keep every draw's counts, so it folds each draw's
``log Pr(b | xi~(s))`` for the test strings ``b`` into a running float64 log-sum-exp as the
draw is made (:class:`LogMeanAccumulator`), and keeps only the sum and the number of draws.
Fits of the same test set combine exactly (:func:`combine`): the log mean over all draws of
all fits, each fit weighted by its number of draws.

:func:`fit_and_predict` is the one entry point for "fit a method and predict a test set":

- methods that predict online (``online_predict = True`` on the registry object: cgs-pfa, ipfa)
  fold each draw into the accumulator inside their chain loop, without keeping its counts;
- every other method is fitted, then its ``predict_log_prob`` is called on the test set once
  at the end of the fit (the fallback; :attr:`OnlinePrediction.info` says ``"online": False``).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Sequence

import numpy as np
from scipy.special import logsumexp

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

#: Format of ``predictions.npz`` in a run directory (see :func:`save_predictions`).
PREDICTIONS_FORMAT = "bayesfa-predictions/1"
PREDICTIONS = "predictions.npz"


class LogMeanAccumulator:
    """Running ``log sum_s Pr(b | s)`` (float64) per test string ``b`` and the draw count.

    :meth:`add` folds draws one at a time in the order given (``np.logaddexp``), so the
    result does not depend on how the draws were grouped into calls: a chain that is saved
    (:meth:`state`) and restored (:meth:`from_state`) between two draws ends bit-identical.
    """

    def __init__(self, n_strings: int):
        self.log_sum = np.full(int(n_strings), -np.inf)
        self.n_draws = 0

    def add(self, log_probs: np.ndarray) -> None:
        """Fold ``log_probs`` ``[k, n_strings]`` (``log Pr(b | draw)`` of ``k`` draws)."""
        log_probs = np.asarray(log_probs, dtype=np.float64)
        if log_probs.ndim != 2 or log_probs.shape[1] != self.log_sum.size:
            raise ValueError(f"expected [draws, {self.log_sum.size}] log probabilities, "
                             f"got shape {log_probs.shape}")
        for row in log_probs:
            np.logaddexp(self.log_sum, row, out=self.log_sum)
        self.n_draws += log_probs.shape[0]

    def log_mean(self) -> np.ndarray:
        """``log mean_s Pr(b | s)`` per string (Eq. 6 over the draws so far); NaN before any."""
        if self.n_draws == 0:
            return np.full(self.log_sum.size, np.nan)
        return self.log_sum - np.log(self.n_draws)

    def state(self) -> dict[str, np.ndarray]:
        """Arrays that :meth:`from_state` restores exactly (for checkpoints)."""
        return {"log_sum": self.log_sum.copy(), "n_draws": np.int64(self.n_draws)}

    @classmethod
    def from_state(cls, log_sum: np.ndarray, n_draws: int) -> "LogMeanAccumulator":
        acc = cls(np.asarray(log_sum).size)
        acc.log_sum[:] = np.asarray(log_sum, dtype=np.float64)
        acc.n_draws = int(n_draws)
        return acc


class OnlinePrediction(NamedTuple):
    """One fit's posterior predictive of a test set.

    log_mean : float64 ``[n_test]``, log of the mean over this fit's draws (all chains) of
        ``Pr(string | draw)`` (Eq. 6); for a method without draws, its ``predict_log_prob``.
    n_draws : the number of draws averaged (all chains; 1 for a method without draws).
    trace : name -> small per-draw array ``[chain, draw]`` (log joint, ...; may be empty).
    info : JSON-able facts (``"online"``: whether the draws were folded in as they were made,
        ``"max_draws"``, the fit's own info, ...).
    """

    log_mean: np.ndarray
    n_draws: int
    trace: dict[str, np.ndarray]
    info: dict[str, Any]


def combine(predictions: Sequence[OnlinePrediction]) -> np.ndarray:
    """Eq. 6 over the draws of several fits (chains, seeds) of the same test set:
    ``logsumexp_c(log_mean_c + log n_c) - log sum_c n_c``, float64 ``[n_test]``."""
    if not predictions:
        raise ValueError("combine needs at least one prediction")
    return combine_log_means([p.log_mean for p in predictions], [p.n_draws for p in predictions])


def combine_log_means(log_means, n_draws) -> np.ndarray:
    """:func:`combine` on arrays: ``log_means`` ``[C, n_test]`` (each the log mean over
    ``n_draws[c]`` draws) -> the log mean over all ``sum_c n_draws[c]`` draws."""
    log_means = np.asarray(log_means, dtype=np.float64)
    n = np.asarray(n_draws, dtype=np.float64)
    if log_means.ndim != 2 or n.shape != (log_means.shape[0],) or log_means.shape[0] == 0:
        raise ValueError(f"expected [C, n_test] log means and C draw counts, got shapes "
                         f"{log_means.shape} and {n.shape}")
    if (n <= 0).any():
        raise ValueError("every prediction must average at least one draw")
    return logsumexp(log_means + np.log(n)[:, None], axis=0) - np.log(n.sum())


#: the methods whose registry object has ``online_predict`` (named in help texts; a test
#: checks it against the registry)
ONLINE_METHODS = ("cgs-pfa", "ipfa")


def supports_online(method: Any) -> bool:
    """Whether a registry object folds Eq. 6 into its chain loop: its ``fit(..., predict=TEST)``
    returns, besides its own arrays, ``predict_log_mean`` (float64 ``[n_test]``, the log mean
    over all its draws) and ``predict_n_draws`` (how many), and it honours
    ``options["max_draws"]``."""
    return bool(getattr(method, "online_predict", False))


def fit_and_predict(method_name: str, corpus: Corpus, options: dict[str, Any], seed: int,
                    test_corpus: Corpus, *, progress: bool = False,
                    workdir: str | os.PathLike | None = None,
                    return_fit: bool = False):
    """Fit ``method_name`` to ``corpus`` and predict ``test_corpus`` (Eq. 6).

    Online methods (:func:`supports_online`) fold every draw into a
    :class:`LogMeanAccumulator` inside the chain loop; with ``options["max_draws"] = K`` they
    keep only K draws' counts. Other methods are fitted, then their ``predict_log_prob`` is
    called once (``info["online"]`` is False). ``workdir``: the checkpoint folder of a
    resumable method. Returns an :class:`OnlinePrediction`, or ``(OnlinePrediction,
    FitResult)`` with ``return_fit`` (what ``bayesfa fit --predict`` saves).
    """
    from bayesfa.methods import get_method

    method = get_method(method_name)
    test_corpus = _check_test(corpus, test_corpus)
    extra: dict[str, Any] = {}
    if workdir is not None and getattr(method, "resumable", False):
        extra["workdir"] = workdir
    if supports_online(method):
        # the method returns the accumulated Eq. 6 as two extra arrays (ONLINE_ARRAYS)
        fit = method.fit(corpus, options, seed, progress, predict=test_corpus, **extra)
        arrays = dict(fit.arrays)
        log_mean = np.asarray(arrays.pop("predict_log_mean"), dtype=np.float64)
        n_draws = int(arrays.pop("predict_n_draws"))
        fit = fit._replace(arrays=arrays)
        online = True
    else:
        if options.get("max_draws") is not None:
            raise InputError(f"method {method_name} has no cap on saved draws (--max-draws); "
                             f"only methods that predict online have one")
        fit = method.fit(corpus, options, seed, progress, **extra)
        with np.errstate(invalid="ignore"):
            log_mean = np.asarray(method.predict_log_prob(fit.arrays, options, test_corpus),
                                  dtype=np.float64)
        n_draws = 1
        online = False
    info = {"online": online, "max_draws": options.get("max_draws"), "n_draws": n_draws,
            "fit": fit.info}
    prediction = OnlinePrediction(log_mean, n_draws, dict(fit.trace), info)
    return (prediction, fit) if return_fit else prediction


def _check_test(corpus: Corpus, test_corpus: Corpus, name: str = "test_corpus",
                what: str = "the test strings") -> Corpus:
    """``test_corpus`` in ``corpus``'s alphabet; a TypeError if it is no Corpus (``name``: the
    argument), an InputError if it uses more letters."""
    if not isinstance(test_corpus, Corpus):
        raise TypeError(f"{name} must be a bayesfa.Corpus")
    if test_corpus.alphabet_size > corpus.alphabet_size:
        raise InputError(f"{what} use {test_corpus.alphabet_size} letters, the training "
                         f"strings {corpus.alphabet_size}")
    return test_corpus.with_alphabet(corpus.alphabet_size)


def check_online_arguments(corpus: Corpus, predict: Corpus | None, max_draws) -> Corpus | None:
    """The checks a front that predicts online makes of its ``predict=`` and ``max_draws=``:
    ``predict`` in the training alphabet (None without one)."""
    if max_draws is not None and (isinstance(max_draws, bool)
                                  or not isinstance(max_draws, (int, np.integer)) or max_draws < 1):
        raise InputError(f"max_draws must be an integer >= 1, got {max_draws!r}")
    return None if predict is None else _check_test(corpus, predict, "predict", "the strings to predict")


def save_predictions(path: str | os.PathLike, prediction: OnlinePrediction, test_sha256: str) -> None:
    """Write ``prediction``'s ``log_mean`` and ``n_draws`` and the test file's SHA-256 (as 32
    uint8) to ``path`` (``predictions.npz`` of a run directory being built), atomically; the
    run's manifest then records its SHA-256 (:func:`bayesfa.rundir.save_run`)."""
    from bayesfa.rundir import atomic_write

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, log_mean=np.asarray(prediction.log_mean, dtype=np.float64),
                     n_draws=np.int64(prediction.n_draws),
                     test_sha256=np.frombuffer(bytes.fromhex(test_sha256), dtype=np.uint8))

    atomic_write(path, write)


def load_predictions(path: str | os.PathLike, n_strings: int, test_sha256: str) -> np.ndarray | None:
    """The ``log_mean`` saved by :func:`save_predictions` (float64 ``[n_strings]``) if it was
    saved for the test file of SHA-256 ``test_sha256``, else None; an :class:`InputError`
    naming the file when it is unreadable or of another size."""
    from bayesfa.rundir import read_arrays

    arrays = read_arrays(path)
    if arrays.get("test_sha256", np.zeros(0, np.uint8)).tobytes().hex() != test_sha256:
        return None
    log_mean = arrays.get("log_mean")
    if log_mean is None or log_mean.shape != (n_strings,) or np.isnan(log_mean).any():
        raise InputError(f"the saved predictions do not fit the test set's {n_strings} strings "
                         f"(a damaged or edited run)", path)
    return log_mean.astype(np.float64)
