"""Checks of the PFA family (:mod:`bayesfa.samplers.pfa`).

- ``reference``: vectorised exact references of the collapsed PFA model (every state path);
- ``kernel_tests``: exact tests of the CGS-PFA kernels (one sweep from every start, Geweke);
- ``mutants``: CGS-PFA kernels compiled with one deliberate error, as methods;
- ``split_merge``, ``blocked``: exact checks of the split-merge and blocked whole-string moves;
- ``variants``: the validation specs of CGS-SG, CGS-HMM and CGS-HMM(*).
"""
