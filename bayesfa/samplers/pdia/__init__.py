"""The PDFA / PDIA family (Pfau, Bartlett & Wood 2010): deterministic automata whose
transitions are sampled by exact Metropolis-Hastings, emissions integrated out.

- ``pdfa``: the shared front (chains, checkpoints, prediction, perplexity, the particle filter
  of ``perplexity --draw-sets``) and the finite PDFA (``--method pdfa``);
- ``pdia``: the PDIA, hierarchical Pitman-Yor prior in the Chinese restaurant franchise;
- ``pdia_smoothed``: the PDIA with hierarchically smoothed emissions;
- kernels: ``_pdfa_kernel`` (the transition sweep), ``_crf_kernel`` (the franchise's seating
  and hyperparameter moves), ``_smoothed_emission_kernel``.

Their checks and mutants: :mod:`bayesfa.validation.pdia`.
"""
