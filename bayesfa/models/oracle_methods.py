"""The NumPyro oracles as ``bayesfa fit --method oracle-pfa | oracle-hmm | oracle-pdfa``.

Slow, exact-by-construction references for the collapsed samplers (toy sizes):

- ``oracle-pfa``: NUTS on the PFA prior of Eq. 2 (:mod:`bayesfa.models.pfa`);
- ``oracle-hmm``: NUTS on the HMM prior of Sect. 4.4 (:mod:`bayesfa.models.hmm`);
- ``oracle-pdfa``: the finite PDFA prior of Pfau et al. (2010) by exact enumeration of the
  transition tables when there are at most ``--max-tables`` of them, else DiscreteHMCGibbs
  (:mod:`bayesfa.models.pdfa`).

MCMC schedule: ``--burn-in`` NUTS warm-up steps, then ``--iterations - --burn-in`` steps of
which every ``--period``-th is kept, in each of ``--chains`` chains run one after the other
(``--jobs`` is accepted and ignored). Predictions are the posterior predictive
``(1/S) sum_s Pr(b | xi^(s))`` over the saved draws ``xi`` ``[S, N+1, A, N+1]`` (chain-major).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, add_mcmc_arguments, check_schedule, positive_float, positive_int


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


class OraclePFA:
    name = "oracle-pfa"
    summary = "NUTS on the fully connected PFA prior (Eq. 2), paths summed out (slow oracle)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=2, beta=0.1, iterations=2000, burn_in=1000, period=1,
                           parallel_chains=False)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        from bayesfa.models import pfa

        start = time.perf_counter()
        samples, trace = pfa.run_nuts(corpus, options["states"], options["beta"], seed,
                                      progress=progress, **_schedule(options))
        xi = pfa.posterior_xi(samples, options["states"], corpus.alphabet_size)
        return _nuts_result(xi, samples, trace, start)

    def predict_log_prob(self, arrays, options, corpus):
        return _predict_xi(arrays, corpus)


class OracleHMM:
    name = "oracle-hmm"
    summary = "NUTS on the HMM prior of Sect. 4.4 (xi = eta theta), paths summed out (slow oracle)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=2, beta=0.1, iterations=2000, burn_in=1000, period=1,
                           parallel_chains=False)
        parser.add_argument("--alpha", type=positive_float, default=0.1,
                            help="Dirichlet hyperparameter of the emissions eta; default 0.1 "
                                 "(--beta is that of the state transitions theta)")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        from bayesfa.models import hmm

        start = time.perf_counter()
        samples, trace = hmm.run_nuts(corpus, options["states"], options["alpha"],
                                      options["beta"], seed, progress=progress, **_schedule(options))
        xi = hmm.posterior_xi(samples, options["states"])
        return _nuts_result(xi, samples, trace, start)

    def predict_log_prob(self, arrays, options, corpus):
        return _predict_xi(arrays, corpus)


class OraclePDFA:
    name = "oracle-pdfa"
    summary = ("finite PDFA prior (Pfau et al. 2010) with an end symbol back to q0: exact "
               "enumeration of the transition tables, or DiscreteHMCGibbs")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=2, beta=None, iterations=2000, burn_in=500, period=1,
                           parallel_chains=False)
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

        start = time.perf_counter()
        mode = self._mode(options, corpus)
        n, a, b, g = options["states"], options["alpha"], options["beta"], options["gamma"]
        if mode == "enumerate":
            tables = pdfa.n_tables(n, corpus.alphabet_size)
            if tables > 10 * options["max_tables"]:
                raise InputError(f"{tables} transition tables are too many to enumerate; "
                                 "use --pdfa-inference mcmc")
            post = pdfa.enumerate_posterior(corpus, n, a, b, g)
            arrays = {k: post[k] for k in ("delta", "log_weight", "counts")}
            info = {"inference": "enumerate", "tables": tables,
                    "log_marginal": float(post["log_marginal"]),
                    "seconds": time.perf_counter() - start}
            return FitResult(arrays, {}, info)
        samples, extra = pdfa.run_gibbs(corpus, n, a, b, g, seed, progress=progress,
                                        **_schedule(options))
        delta = samples["delta"]
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        xi = pdfa.posterior_xi(delta, corpus, b, rng)
        trace = {"potential_energy": extra["block_states.0.potential_energy"],
                 "diverging": extra["block_states.1.diverging"],
                 "accept_prob": extra["block_states.1.accept_prob"]}
        info = {"inference": "mcmc", "seconds": time.perf_counter() - start,
                "divergences": int(trace["diverging"].sum()),
                **_diagnostics({"mu": samples["mu"], "potential_energy": trace["potential_energy"]})}
        return FitResult({"xi": xi.reshape((-1,) + xi.shape[2:]),
                          "delta": delta.reshape((-1,) + delta.shape[2:])}, trace, info)

    def predict_log_prob(self, arrays, options, corpus):
        if "xi" in arrays:
            return _predict_xi(arrays, corpus)
        from bayesfa.models.pdfa import mixture_log_prob

        n_letters = arrays["delta"].shape[-1]
        if corpus.alphabet_size > n_letters:
            raise InputError(f"corpus has {corpus.alphabet_size} letters, the automaton {n_letters}")
        return mixture_log_prob(arrays["delta"], arrays["log_weight"], arrays["counts"],
                                options["beta"], corpus.with_alphabet(n_letters))


ORACLE_PFA = OraclePFA()
ORACLE_HMM = OracleHMM()
ORACLE_PDFA = OraclePDFA()
