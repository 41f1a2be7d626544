"""The NumPyro oracles: slow, exact-by-construction models of the PFA (``pfa``), HMM (``hmm``)
and finite PDFA (``pdfa``) priors, and their registry entries (``oracle_methods``). They import
nothing of the samplers; the exact enumeration they share with validation is
:mod:`bayesfa.exact`.
"""
