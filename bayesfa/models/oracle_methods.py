"""The NumPyro oracles as ``bayesfa fit --method oracle-pfa | oracle-hmm | oracle-pdfa``.

Slow, exact-by-construction references for the collapsed samplers (toy sizes):

- ``oracle-pfa``: NUTS on the PFA prior of Eq. 2 (:mod:`bayesfa.models.pfa`);
- ``oracle-hmm``: NUTS on the HMM prior of Sect. 4.4 (:mod:`bayesfa.models.hmm`);
- ``oracle-pdfa``: the finite PDFA prior of Pfau et al. (2010) by exact enumeration of the
  transition tables when there are at most ``--max-tables`` of them, else DiscreteHMCGibbs
  (:mod:`bayesfa.models.pdfa`); ``--hyperpriors`` puts the paper's Gamma(1, 1) priors on
  alpha, beta, gamma (sampled by NUTS, or integrated by quadrature when enumerating).

Size limits (the oracles are references for toy data): before fitting, the data size is
``distinct strings x longest string x states^2``, the cells of one forward pass of a
gradient (:func:`data_cells`); the time is estimated as that times the MCMC steps (chains x
iterations) times :data:`SECONDS_PER_CELL_STEP`, measured on oracle-pfa (the first 400 strings
of PAutomaC 24, 2 states, 40 steps: 15.5 s on one core, compilation included). Above
:data:`WARN_CELLS` a one-line warning with the estimate goes to standard error; above
:data:`REFUSE_CELLS` the fit is refused (InputError) unless ``--allow-large``. The full
PAutomaC 24 training set (4998 distinct strings up to 98 letters) is 1.96e6 cells at 2 states.

MCMC schedule: ``--burn-in`` NUTS warm-up steps, then ``--iterations - --burn-in`` steps of
which every ``--period``-th is kept, in each of ``--chains`` chains run one after the other
(``--jobs`` is accepted and ignored). Predictions are the posterior predictive
``(1/S) sum_s Pr(b | xi^(s))`` over the saved draws ``xi`` ``[S, N+1, A, N+1]`` (chain-major).
``oracle-pdfa``'s MCMC also keeps each draw's table ``delta`` ``[S, Q, L]`` and ``mu``
``[S, Q]``, from which ``validate``'s ``recorded`` check recomputes the potential energy its
trace records (:mod:`bayesfa.validation.oracles`; NUTS oracles: from ``xi``).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import (FitResult, add_mcmc_arguments, check_schedule, draws_per_chain,
                             positive_float, positive_int)


def _schedule(options: dict[str, Any]) -> dict[str, int]:
    kept = check_schedule(options)
    return {"num_warmup": options["burn_in"], "num_samples": kept * options["period"],
            "thinning": options["period"], "num_chains": options["chains"]}


def _diagnostics(samples: dict[str, Any]) -> dict[str, float]:
    """Worst split R-hat and smallest ESS over every scalar of ``samples`` ``[chain, draw, ...]``."""
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

    r_hat, ess = [], []
    for values in samples.values():
        values = np.asarray(values, dtype=np.float64)
        if values.shape[1] < 4:
            continue
        r_hat.append(np.nanmax(split_gelman_rubin(values)))
        ess.append(np.nanmin(effective_sample_size(values)))
    return {"max_r_hat": float(max(r_hat)) if r_hat else float("nan"),
            "min_ess": float(min(ess)) if ess else float("nan")}


def _predict_xi(arrays: dict[str, np.ndarray], corpus: Corpus) -> np.ndarray:
    from bayesfa.models.pfa import predictive_log_prob

    return predictive_log_prob(arrays["xi"], corpus)


def _nuts_result(xi: np.ndarray, samples, trace, start: float) -> FitResult:
    """FitResult of a NUTS oracle: ``xi [chain, draw, ...]`` flattened to samples, NUTS info."""
    info = {"seconds": time.perf_counter() - start,
            "divergences": int(trace["diverging"].sum()),
            "mean_accept_prob": float(trace["accept_prob"].mean()),
            **_diagnostics(samples)}
    return FitResult({"xi": xi.reshape((-1,) + xi.shape[2:])}, trace, info)


# -- size limits (module docstring) ------------------------------------------------------------

#: Above this many cells (:func:`data_cells`) an oracle warns, with its estimated time.
WARN_CELLS = 10_000
#: Above this many cells an oracle refuses to fit unless ``--allow-large``.
REFUSE_CELLS = 100_000
#: Seconds per cell and MCMC step (module docstring: a rough rate from one measurement).
SECONDS_PER_CELL_STEP = 1.5e-5


def data_cells(corpus: Corpus, states: int) -> int:
    """``distinct strings x longest string x states^2``: the cells of one forward pass."""
    from bayesfa.memory import distinct_strings

    width = int(corpus.lengths.max()) if corpus.n_strings else 0
    return distinct_strings(corpus) * max(1, width) * states * states


def add_size_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-large", action="store_true",
                        help=f"fit even data beyond toy size (more than {REFUSE_CELLS:,} cells "
                             "= distinct strings x longest string x states^2), which the "
                             "oracle otherwise refuses: it may take hours")


def check_size(name: str, corpus: Corpus, options: dict[str, Any]) -> None:
    """Refuse (InputError) or warn (one line on standard error) when the data are beyond toy
    size for an oracle (module docstring); nothing is fitted before this check."""
    cells = data_cells(corpus, options["states"])
    if cells <= WARN_CELLS:
        return
    from bayesfa.memory import distinct_strings

    steps = options["iterations"] * options.get("chains", 1)
    seconds = cells * steps * SECONDS_PER_CELL_STEP
    width = int(corpus.lengths.max()) if corpus.n_strings else 0
    size = (f"{distinct_strings(corpus)} distinct strings up to {width} letters with "
            f"{options['states']} states ({cells:.3g} cells)")
    estimate = f"roughly {seconds:.2g} s for {steps} MCMC steps"
    if cells > REFUSE_CELLS and not options.get("allow_large", False):
        raise InputError(f"{name} is a reference for toy data: {size} is beyond its limit of "
                         f"{REFUSE_CELLS:,} cells ({estimate}); fit a collapsed sampler "
                         "(e.g. cgs-pfa) on data this size, or pass --allow-large")
    print(f"bayesfa: warning: {name} is a reference for toy data: {size}, {estimate}",
          file=sys.stderr, flush=True)


# -- memory estimates (bayesfa.memory) ---------------------------------------------------------

def _kept(options: dict[str, Any]) -> int:
    """Draws kept over all chains."""
    return options["chains"] * draws_per_chain(options)


def _nuts_memory(corpus: Corpus, options: dict[str, Any]) -> int:
    """Peak bytes of a NUTS oracle's fit and prediction: the draws on the JAX side, as numpy and
    as ``xi`` (float64, ``jax_enable_x64``); the reverse-mode tape of the log-space forward scan
    (per letter position: ``[n, N, N]`` sums, gathered transitions and their exponentials, for
    the distinct strings); then :func:`~bayesfa.memory.xi_predictive_bytes`."""
    from bayesfa.memory import distinct_strings, padded_bytes, xi_predictive_bytes

    n, q, a = options["states"], options["states"] + 1, corpus.alphabet_size + 1
    samples = _kept(options)
    width = int(corpus.lengths.max()) if corpus.n_strings else 0
    tape = 3 * max(1, width) * distinct_strings(corpus) * n * n * 8
    fit = 3 * samples * q * a * q * 8 + tape + 2 * padded_bytes(corpus)
    return int(max(fit, xi_predictive_bytes(samples, q, a, corpus)))


def _path_counts_bytes(tables: int, n_strings: int, q: int, letters: int) -> int:
    """:func:`bayesfa.models.pdfa.path_counts` for ``tables`` tables: its float64 output
    ``[K, n, Q, L+1]``, the state array and the fancy-index temporaries."""
    return tables * n_strings * (q * (letters + 1) * 8 + 5 * 8)


class OraclePFA:
    name = "oracle-pfa"
    validation = "bayesfa.validation.oracles:ORACLE_PFA"
    summary = "NUTS on the fully connected PFA prior (Eq. 2), paths summed out (slow oracle)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=2, beta=0.1, iterations=2000, burn_in=1000, period=1,
                           parallel_chains=False)
        add_size_argument(parser)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        from bayesfa.models import pfa

        check_size(self.name, corpus, options)
        start = time.perf_counter()
        samples, trace = pfa.run_nuts(corpus, options["states"], options["beta"], seed,
                                      progress=progress, **_schedule(options))
        xi = pfa.posterior_xi(samples, options["states"], corpus.alphabet_size)
        return _nuts_result(xi, samples, trace, start)

    def predict_log_prob(self, arrays, options, corpus):
        return _predict_xi(arrays, corpus)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        return _nuts_memory(corpus, options)


class OracleHMM:
    name = "oracle-hmm"
    validation = "bayesfa.validation.oracles:ORACLE_HMM"
    summary = "NUTS on the HMM prior of Sect. 4.4 (xi = eta theta), paths summed out (slow oracle)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=2, beta=0.1, iterations=2000, burn_in=1000, period=1,
                           parallel_chains=False)
        add_size_argument(parser)
        parser.add_argument("--alpha", type=positive_float, default=0.1,
                            help="Dirichlet hyperparameter of the emissions eta; default 0.1 "
                                 "(--beta is that of the state transitions theta)")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        from bayesfa.models import hmm

        check_size(self.name, corpus, options)
        start = time.perf_counter()
        samples, trace = hmm.run_nuts(corpus, options["states"], options["alpha"],
                                      options["beta"], seed, progress=progress, **_schedule(options))
        xi = hmm.posterior_xi(samples, options["states"])
        return _nuts_result(xi, samples, trace, start)

    def predict_log_prob(self, arrays, options, corpus):
        return _predict_xi(arrays, corpus)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        return _nuts_memory(corpus, options)


class OraclePDFA:
    name = "oracle-pdfa"
    validation = "bayesfa.validation.pdia.oracle:ORACLE_PDFA"
    #: a mutant of the model's potential (bayesfa.models.pdfa.MODEL_VARIANTS); "" is the model
    variant = ""
    summary = ("finite PDFA prior (Pfau et al. 2010) with an end symbol back to q0: exact "
               "enumeration of the transition tables, or DiscreteHMCGibbs")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=2, beta=None, iterations=2000, burn_in=500, period=1,
                           parallel_chains=False)
        add_size_argument(parser)
        parser.add_argument("--beta", type=positive_float, default=1.0,
                            help="total mass of the emission prior pi_q ~ Dir(beta/(L+1)), "
                                 "end symbol included; default 1.0")
        parser.add_argument("--alpha", type=positive_float, default=1.0,
                            help="concentration of phi_j ~ Dir(alpha mu); default 1.0")
        parser.add_argument("--gamma", type=positive_float, default=1.0,
                            help="total mass of mu ~ Dir(gamma/|Q|); default 1.0")
        parser.add_argument("--pdfa-inference", choices=("auto", "enumerate", "mcmc"),
                            default="auto",
                            help="enumerate every transition table, or DiscreteHMCGibbs; auto "
                                 "enumerates when there are at most --max-tables; default auto")
        parser.add_argument("--max-tables", type=positive_int, default=100_000,
                            help="largest |Q|^(|Q| L) that auto enumerates; default 100000")
        parser.add_argument("--hyperpriors", action="store_true",
                            help="the paper's Gamma(1, 1) hyperpriors on alpha, beta, gamma "
                                 "(then --alpha, --beta, --gamma are ignored): sampled by NUTS, "
                                 "or integrated by Gauss-Laguerre quadrature when enumerating")

    @staticmethod
    def _mode(options: dict[str, Any], corpus: Corpus) -> str:
        from bayesfa.models.pdfa import n_tables

        mode = options.get("pdfa_inference", "auto")
        if mode == "auto":
            small = n_tables(options["states"], corpus.alphabet_size) <= options["max_tables"]
            mode = "enumerate" if small else "mcmc"
        return mode

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        from bayesfa.models import pdfa

        check_size(self.name, corpus, options)
        start = time.perf_counter()
        mode = self._mode(options, corpus)
        n, a, b, g = options["states"], options["alpha"], options["beta"], options["gamma"]
        if mode == "enumerate":
            tables = pdfa.n_tables(n, corpus.alphabet_size)
            if tables > 10 * options["max_tables"]:
                raise InputError(f"{tables} transition tables are too many to enumerate; "
                                 "use --pdfa-inference mcmc")
            hyper = options.get("hyperpriors", False)
            if hyper:
                post = pdfa.enumerate_posterior_hyper(corpus, n)
                arrays = {k: post[k] for k in ("delta", "log_weight", "counts", "beta_nodes")}
                means = {f"posterior_mean_{h}": float(post[f"mean_{h}"])
                         for h in ("alpha", "beta", "gamma")}
            else:
                post = pdfa.enumerate_posterior(corpus, n, a, b, g)
                arrays = {k: post[k] for k in ("delta", "log_weight", "counts")}
                means = {}
            info = {"inference": "enumerate", "tables": tables, "hyperpriors": hyper,
                    "log_marginal": float(post["log_marginal"]), **means,
                    "seconds": time.perf_counter() - start}
            return FitResult(arrays, {}, info)
        hyper = options.get("hyperpriors", False)
        samples, extra = pdfa.run_gibbs(corpus, n, a, b, g, seed, progress=progress,
                                        hyperpriors=hyper, variant=self.variant,
                                        **_schedule(options))
        delta = samples["delta"]
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        xi = pdfa.posterior_xi(delta, corpus, samples["beta"] if hyper else b, rng)
        trace = {"potential_energy": extra["block_states.0.potential_energy"],
                 "diverging": extra["block_states.1.diverging"],
                 "accept_prob": extra["block_states.1.accept_prob"]}
        continuous = {"mu": samples["mu"], "potential_energy": trace["potential_energy"]}
        if hyper:
            for h in ("alpha", "beta", "gamma"):
                trace[h] = samples[h]
                continuous[h] = samples[h]
        info = {"inference": "mcmc", "hyperpriors": hyper, "seconds": time.perf_counter() - start,
                "divergences": int(trace["diverging"].sum()), **_diagnostics(continuous)}
        mu = np.asarray(samples["mu"], dtype=np.float64)
        return FitResult({"xi": xi.reshape((-1,) + xi.shape[2:]),
                          "delta": delta.reshape((-1,) + delta.shape[2:]),
                          "mu": mu.reshape((-1,) + mu.shape[2:])}, trace, info)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Enumeration: every table as Python tuples and as an array, the path counts of every
        table and string, and the same per chunk of 256 strings in the prediction (four
        copies: counts, sum, two ``gammaln``). MCMC: the path counts of every kept table (for
        the exact ``pi`` draws) and the ``xi`` draws, then their predictive."""
        from bayesfa.memory import distinct_strings, xi_predictive_bytes
        from bayesfa.models.pdfa import n_tables

        q, letters, n = options["states"] + 1, corpus.alphabet_size, distinct_strings(corpus)
        if self._mode(options, corpus) == "enumerate":
            k = n_tables(options["states"], letters)
            tables = k * (56 + 8 * q * letters) + k * q * letters * 8
            fit = tables + _path_counts_bytes(k, n, q, letters) + k * q * (letters + 1) * 8
            predict = 4 * _path_counts_bytes(k, min(corpus.n_strings, 256), q, letters) + k * q * (letters + 2) * 8
            if options.get("hyperpriors", False):     # [K, B] weights and marginals, B nodes
                from bayesfa.models.pdfa import HYPER_ORDER
                fit += 3 * k * HYPER_ORDER * 8
            return int(max(fit, tables + predict))
        samples = _kept(options)
        xi = samples * q * (letters + 1) * q * 8
        fit = (_path_counts_bytes(samples, n, q, letters) + 2 * xi + samples * q * letters * 16
               + samples * q * 8)                             # mu, kept for validate's check
        return int(max(fit, xi_predictive_bytes(samples, q, letters + 1, corpus)))

    def predict_log_prob(self, arrays, options, corpus):
        if "xi" in arrays:
            return _predict_xi(arrays, corpus)
        from bayesfa.models.pdfa import mixture_log_prob, mixture_log_prob_hyper

        n_letters = arrays["delta"].shape[-1]
        if corpus.alphabet_size > n_letters:
            raise InputError(f"corpus has {corpus.alphabet_size} letters, the automaton {n_letters}")
        if "beta_nodes" in arrays:          # --hyperpriors: beta integrated over its nodes
            return mixture_log_prob_hyper(arrays["delta"], arrays["log_weight"], arrays["counts"],
                                          arrays["beta_nodes"], corpus.with_alphabet(n_letters))
        return mixture_log_prob(arrays["delta"], arrays["log_weight"], arrays["counts"],
                                options["beta"], corpus.with_alphabet(n_letters))


ORACLE_PFA = OraclePFA()
ORACLE_HMM = OracleHMM()
ORACLE_PDFA = OraclePDFA()
