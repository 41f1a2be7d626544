"""Validation of the methods that do not sample (:mod:`bayesfa.learners`): exact checks that can
fail, each against a reference written apart from the method's code.

- :mod:`.cvb`: CVB0 / CVB2 (their moments and fixed-point equations, Shibata & Yoshinaka 2013
  Eq. 12, 14-16 and the appendix, against enumeration of every path under ``q``) and GCVB0
  (``D0`` and its gradient Eq. 17 against finite differences; ``D0`` never increasing);
- :mod:`.greedy`: EStateMerge, EVGram, CVGram, ALERGIA against small independent
  implementations on toys, with the merge criterion's value at each step;
- :mod:`.hmm_em`: each EM step against a brute-force Baum-Welch step, the objective never
  decreasing, the fixed point, the predictive against enumeration of the state paths.

Each module defines the specs the learners name by ``validation = "module:OBJECT"``
(:func:`bayesfa.validation.harness.hooks`), with ``deterministic_checks``, ``check_names``
and, where there are some, ``mutant_names`` / ``mutant``.
"""
