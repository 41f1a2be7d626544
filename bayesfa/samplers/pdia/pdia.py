"""The PDIA sampler (``--method pdia``): the probabilistic deterministic infinite automaton of
Pfau, Bartlett & Wood (2010), Sect. "The Probabilistic Deterministic Infinite Automaton", with
the hierarchical Pitman-Yor prior of the poster (discounts ``d0, d``; concentrations
``alpha0, alpha``; non-atomic base ``H``: a new dish is a new state).

MH on every instantiated ``delta_ij`` proposing from the Chinese restaurant franchise,
unvisited transitions drawn just in time as the proposed path needs them, zero-count
transitions deleted on acceptance; the dish of every table resampled the same way
(Eq. crf:high with ``d0``); ``alpha, alpha0, beta`` by MH under Gamma(1, 1) priors and
``d, d0`` under Uniform(0, 1) priors unless an option fixes them. The acceptance ratio is
exact (:mod:`bayesfa.samplers.pdia._pdfa_kernel` explains the proposal-ratio terms the paper's
Eq. delta:mh leaves out). Data shapes, prediction and ``--map``: :mod:`bayesfa.samplers.pdia.pdfa`.

The number of states is unbounded in the model; the sampler keeps at most ``--max-states``
(state capacity, including ``q0``). A proposal that would need more is rejected (counted as
``capacity_rejections`` in the manifest's info): with the default capacity and the data
sizes of the paper this never happens, and at capacity ``2 T + 1`` it cannot happen.

Resumable: with a work directory (``bayesfa fit``'s), each chain saves its whole state every
``--checkpoint-every`` seconds and when it ends, and an interrupted fit run again resumes
mid-chain and ends bit-identical (:func:`bayesfa.samplers.pdia.pdfa.fit_model`).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.methods import (FitResult, add_jobs_argument, fraction, nonnegative_int,
                             positive_float, positive_int)
from bayesfa.samplers.chains import add_checkpoint_argument
from bayesfa.samplers.pdia.pdfa import (CRF, MIXTURE_MAX_PARTICLES, MIXTURE_TOLERANCE,
                                        PlugInAutomata, add_common_arguments, fit_model,
                                        memory_bytes, perplexity_log_prob, predict)

DEFAULT_MAX_STATES = 5000


def state_capacity(corpus: Corpus, options: dict[str, Any]) -> int:
    """States the sampler can hold: ``min(2 T + 2, --max-states + 1)`` (T tokens visit at most
    T transitions, and a proposal holds the old and the new ones at once)."""
    return int(min(2 * corpus.n_tokens + 2, int(options.get("max_states", DEFAULT_MAX_STATES)) + 1))


class _PDIA(PlugInAutomata):
    """The ``pdia`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "pdia"
    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)
    summary = ("PDIA: hierarchical Pitman-Yor prior over PDFAs of unbounded size, MH in the "
               "Chinese restaurant franchise (Pfau, Bartlett & Wood 2010)")
    validation = "bayesfa.validation.pdia.pdfa:PDIA"
    variant = 0
    model = CRF
    mean_plugin = False
    no_mean_reason = ("its states come and go from sample to sample, so a mean of the samples' "
                      "parameters is not the parameters of any one automaton")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--iterations", type=positive_int, default=1000,
                            help="sweeps per chain, burn-in included; default 1000")
        parser.add_argument("--burn-in", type=nonnegative_int, default=500,
                            help="sweeps discarded at the start of each chain; a later sweep "
                                 "makes as many random-scan moves as there were transitions "
                                 "and tables at its end (with 0: the one-state start's few); "
                                 "default 500")
        parser.add_argument("--period", type=positive_int, default=10,
                            help="keep one sample every PERIOD sweeps after burn-in; default 10")
        parser.add_argument("--chains", type=positive_int, default=4,
                            help="independent chains; default 4")
        add_jobs_argument(parser, "the chains run one after the other in this process")
        add_common_arguments(parser)
        parser.add_argument("--alpha0", type=positive_float, default=None,
                            help="concentration of the top restaurant (mu); fixed if given, "
                                 "else sampled under Gamma(1, 1) from 1.0")
        parser.add_argument("--d", type=fraction, default=None,
                            help="discount of the restaurants phi_j; fixed if given, else "
                                 "sampled under Uniform(0, 1) from 0.5")
        parser.add_argument("--d0", type=fraction, default=None,
                            help="discount of the top restaurant; fixed if given, else sampled "
                                 "under Uniform(0, 1) from 0.5")
        parser.add_argument("--max-states", type=positive_int, default=DEFAULT_MAX_STATES,
                            help="state capacity besides q0; default 5000")
        add_checkpoint_argument(parser)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir=None) -> FitResult:
        """The chains of :func:`bayesfa.samplers.pdia.pdfa.fit_model`; ``workdir``: their
        checkpoints (resumable)."""
        return fit_model(CRF, corpus, options, seed, progress, state_capacity(corpus, options),
                         self.variant, self.name, workdir=workdir)

    def predict_log_prob(self, arrays, options, corpus, map: bool = False) -> np.ndarray:
        return predict(CRF, arrays, options, corpus, map=map, variant=self.variant)

    def perplexity_log_prob(self, arrays, options, corpus, *, continuation: bool,
                            map: bool = False, per_symbol: bool = False,
                            letters_only: bool = False, draw_sets: int | None = None,
                            mc_tolerance: float = MIXTURE_TOLERANCE,
                            max_particles: int = MIXTURE_MAX_PARTICLES,
                            details: dict | None = None, proposal: str | None = None) -> float:
        """:func:`bayesfa.samplers.pdia.pdfa.perplexity_log_prob` (the default estimator,
        ``draw_sets``, ``proposal``, ``per_symbol``, ``details``)."""
        return perplexity_log_prob(CRF, arrays, options, corpus, continuation=continuation,
                                   map=map, per_symbol=per_symbol, variant=self.variant,
                                   letters_only=letters_only, draw_sets=draw_sets,
                                   mc_tolerance=mc_tolerance, max_particles=max_particles,
                                   details=details, proposal=proposal)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        return memory_bytes(CRF, corpus, options, state_capacity(corpus, options))


METHOD = _PDIA()
