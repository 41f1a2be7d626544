"""Methods that do not sample: ``cvb`` + ``_cvb_kernel`` (CVB0, GCVB0, CVB2; Shibata &
Yoshinaka 2013, Sect. 2.4-2.5 and appendix), ``hmm_em`` (Baum-Welch, hmmlearn) and the greedy
learners of ``greedy/``.
"""
