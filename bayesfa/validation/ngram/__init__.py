"""Checks of the n-gram family (:mod:`bayesfa.samplers.ngram`): ``hpyp``, the exact
marginal likelihood of the HPYP and of the memoizer on tiny data, and the spec of
``validate hpyp``.
"""
