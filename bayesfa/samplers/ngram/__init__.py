"""n-gram baselines of the PDIA paper's Table 1.

- ``hpyp`` + ``_hpyp_kernel``: the HPYP-smoothed n-gram (Teh 2006), Gibbs-sampled seatings;
- ``memoizer``: the sequence memoizer (Wood et al. 2009), unbounded contexts.

Their checks: :mod:`bayesfa.validation.ngram`.
"""
