"""The smoothed PDIA (``--method pdia-smoothed``): the PDIA of Pfau, Bartlett & Wood (2010)
whose per-state emission distributions back off to a shared base instead of the uniform one,
the hierarchical smoothing of the paper's "future directions".

    pi0 ~ Dir(beta0 / |Sigma|),   pi_q ~ Dir(beta pi0)   (every state q),

in place of the PDIA's ``pi_q ~ Dir(beta / |Sigma|)`` (Eq. x:end with pseudo-counts
``beta pi0_s``): a state that emitted little predicts like the states on the whole, not
uniformly. This is the hierarchical Dirichlet process (Teh, Jordan, Beal & Blei 2006) on the
finite alphabet, i.e. a two-level hierarchical Pitman-Yor process *without discounts*; the
``pi_q`` are integrated out, ``pi0`` is sampled (an exact Gibbs step with auxiliary table
counts), ``beta, beta0`` by MH under Gamma(1, 1) priors
(:mod:`bayesfa.samplers.pdia._smoothed_emission_kernel`). The transitions, their hierarchical
Pitman-Yor prior, its hyperparameters and every move on them are the PDIA's
(:mod:`bayesfa.samplers.pdia.pdia`), run by the same kernel, which reads the emission likelihood
off a 3-D table (:mod:`bayesfa.samplers.pdia._pdfa_kernel`).

Prediction (``predict``, ``--map``, ``perplexity``): the PDIA's, with each sample's
``beta pi0_s`` as the emission pseudo-counts. Checkpoints and resume (``--checkpoint-every``):
the PDIA's; a chain's checkpoint also holds the arrays :meth:`Emission.prepare` adds to its
state (``ehyp, pi0, lpi0, lg, lg_lim``), and a resumed chain calls ``prepare`` again for the
others (``sample_beta``, ``sample_beta0``, ``emission_options``, the ``fixed`` flag of
``beta``) before the saved arrays overwrite its own.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.methods import FitResult, draws_per_chain, nonnegative_int, positive_float
from bayesfa.samplers.pdia.pdfa import (CRF, MIXTURE_MAX_PARTICLES, MIXTURE_TOLERANCE,
                                        fit_model, memory_bytes, perplexity_log_prob, predict)
from bayesfa.samplers.pdia.pdia import _PDIA, state_capacity

#: mutants of the emission part (validation): 1 draws ``pi0`` from the emission counts
#: instead of the table counts, 2 predicts with the uniform base (the back-off dropped from
#: the predictive)
EMISSION_MUTANTS = {"counts-not-tables": 1, "uniform-predictive": 2}


class Emission:
    """The plug-in emission prior of :func:`bayesfa.samplers.pdia.pdfa.run_chain`."""

    def __init__(self, variant: int = 0):
        from bayesfa.samplers.pdia._pdfa_kernel import N_STATS

        self.variant = variant
        self.off = N_STATS
        self.n_stats = 6

    def prepare(self, st, hyp, fixed, options: dict[str, Any], rng) -> None:
        """Chain state of the module docstring of ``_smoothed_emission_kernel``: uniform
        ``pi0``, ``beta0`` from the options (1.0 when sampled); the kernel's own ``beta``
        move is switched off (``beta`` is moved here, its target depends on ``pi0``).
        Draws nothing from ``rng``: a resumed chain calls it again (module docstring)."""
        from bayesfa.samplers.pdia._crf_kernel import H_BETA
        from bayesfa.samplers.pdia._smoothed_emission_kernel import fill_lg_base

        s = st.data.n_symbols
        st.sample_beta = bool(fixed[H_BETA] == 0)
        fixed[H_BETA] = 1
        beta0 = options.get("beta0")
        st.sample_beta0 = beta0 is None
        st.ehyp = np.array([1.0 if beta0 is None else float(beta0)])
        st.pi0 = np.full(s, 1.0 / s)
        st.lpi0 = np.log(st.pi0)
        st.lg = np.zeros((1, s + 1, st.data.sym.size + 3))
        st.lg_lim = np.append(np.bincount(st.data.sym, minlength=s),
                              st.data.sym.size).astype(np.int64)
        fill_lg_base(st.lg, hyp[H_BETA], st.pi0, st.lg_lim)
        st.emission_options = (int(options.get("pi0_moves", 1)),
                               float(options.get("hyper_step", 0.5)))

    def sweep(self, st, hyp, rng, stats) -> None:
        from bayesfa.samplers.pdia._smoothed_emission_kernel import emission_moves

        n_pi0, step = st.emission_options
        emission_moves(st.cnt, st.ctot, int(st.meta[6]), hyp, st.ehyp, st.pi0, st.lpi0, st.lg,
                       st.lg_lim, n_pi0, st.sample_beta, st.sample_beta0, step, self.variant, rng, stats,
                       self.off)

    def record(self, st, out: dict[str, Any]) -> None:
        """``log pi0`` and ``beta0`` of the draw; ``log Dir(pi0 | beta0 / S)`` joins the log
        joint (which already holds the emission likelihood given ``pi0``)."""
        from bayesfa.samplers.pdia._smoothed_emission_kernel import log_dir_base

        out["lpi0"] = st.lpi0.copy()
        out["beta0"] = float(st.ehyp[0])
        out["log_joint"] += log_dir_base(st.lpi0, st.ehyp[0])

    def describe(self, outs, stats, arrays, trace, info, options) -> None:
        """Stack ``lpi0 [chain, draw, S]`` and ``beta0``; trace and acceptance rates."""
        arrays["lpi0"] = np.array([[d["lpi0"] for d in c["draws"]] for c in outs])
        arrays["beta0"] = np.array([[d["beta0"] for d in c["draws"]] for c in outs])
        trace["beta0"] = arrays["beta0"]
        # the entropy of the shared base (nats): how far it is from uniform
        p0 = np.exp(arrays["lpi0"])
        trace["pi0_entropy"] = -np.sum(np.where(p0 > 0, p0 * arrays["lpi0"], 0.0), axis=-1)
        acc = info["acceptance"]
        for name, k in (("pi0", 0), ("beta", 2), ("beta0", 4)):
            if stats[self.off + k + 1] > 0:
                acc[name] = float(stats[self.off + k] / stats[self.off + k + 1])
        if options.get("beta0") is None:
            info["sampled_hyperparameters"].append("beta0")

    def predict_lg(self, arrays, c: int, d: int) -> np.ndarray:
        """The emission pseudo-counts ``beta pi0_s`` of draw ``(c, d)`` in the last column of a
        3-D ``lg`` (all ``predict_strings`` reads of it)."""
        from bayesfa.samplers.pdia._crf_kernel import H_BETA

        beta = float(arrays["hyp"][c, d, H_BETA])
        lpi0 = np.asarray(arrays["lpi0"][c, d])
        lg = np.empty((1, lpi0.size + 1, 1))
        lg[0, :-1, 0] = (beta / lpi0.size if self.variant == 2 else beta * np.exp(lpi0))
        lg[0, -1, 0] = beta
        return lg


class _PDIASmoothed(_PDIA):
    """The ``pdia-smoothed`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "pdia-smoothed"
    summary = ("PDIA with hierarchically smoothed emissions: every state backs off to a shared "
               "base pi0 (HDP), emissions integrated out (Pfau et al. 2010, future directions)")
    validation = "bayesfa.validation.pdia.smoothed:PDIA_SMOOTHED"
    variant = 0
    emission_variant = 0

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--beta0", type=positive_float, default=None,
                            help="total mass of the shared emission base pi0 ~ "
                                 "Dir(beta0/|Sigma|) (--beta is then the concentration of "
                                 "pi_q ~ Dir(beta pi0)); fixed if given, else sampled under "
                                 "Gamma(1, 1) from 1.0")
        parser.add_argument("--pi0-moves", type=nonnegative_int, default=1,
                            help="Gibbs steps on pi0 (auxiliary table counts) per sweep; "
                                 "default 1")

    def _emission(self) -> Emission:
        return Emission(self.emission_variant)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir=None) -> FitResult:
        """The PDIA's chains with the smoothed emissions; ``workdir``: their checkpoints."""
        return fit_model(CRF, corpus, options, seed, progress, state_capacity(corpus, options),
                         self.variant, self.name, emission=self._emission(), workdir=workdir)

    def predict_log_prob(self, arrays, options, corpus, map: bool = False) -> np.ndarray:
        return predict(CRF, arrays, options, corpus, map=map, variant=self.variant,
                       emission=self._emission())

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
                                   emission=self._emission(), letters_only=letters_only,
                                   draw_sets=draw_sets, mc_tolerance=mc_tolerance,
                                   max_particles=max_particles, details=details,
                                   proposal=proposal)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """The PDIA's, plus the arrays :meth:`Emission.prepare` adds to a chain (the 3-D
        emission table ``lg``, ``lg_lim``, ``pi0``, ``lpi0``, ``ehyp``) and the stored
        ``log pi0`` and ``beta0`` of every draw (float64; ``S`` = the alphabet and the end
        symbol, the most a chain has)."""
        s = corpus.alphabet_size + 1
        n_draws = max(1, draws_per_chain(options))
        return (memory_bytes(CRF, corpus, options, state_capacity(corpus, options))
                + 8 * (s + 1) * (corpus.n_tokens + 3) + 8 * (3 * s + 2)
                + 8 * options["chains"] * n_draws * (s + 1))


METHOD = _PDIASmoothed()
