"""Checks of the PDFA / PDIA family (:mod:`bayesfa.samplers.pdia`).

- ``pdfa``: the specs of ``pdfa`` and ``pdia``: exact predictive references (every transition
  table; the franchise's seatings), move checks, hyperparameter references and mutants;
- ``smoothed``: the spec of ``pdia-smoothed``.
"""
