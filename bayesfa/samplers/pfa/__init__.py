"""The PFA family of collapsed Gibbs samplers (Shibata & Yoshinaka 2013).

- ``cgs_pfa``: CGS-PFA (Alg. 1, Eq. 9), its front and four kernels: ``_cgs_pfa_kernel``
  (Gibbs), ``_cgs_pfa_alias_kernel`` (alias-MH), ``_cgs_pfa_bucket_kernel`` (bucket-MH),
  ``_cgs_pfa_multichain_kernel`` (chains in one compiled call);
- ``cgs_sg`` + ``_cgs_sg_kernel``: CGS-SG, the sparse PFA and its graph G (Alg. 2, Eq. 18);
- ``cgs_hmm`` + ``_cgs_hmm_kernel``: CGS-HMM and CGS-HMM(*) (Sect. 4.4, Eq. 20);
- ``ipfa`` + ``_ipfa_kernel``: the infinite PFA, an HDP prior on fully connected PFAs sampled by
  collapsed direct-assignment Gibbs (the paper's future work, Sect. 5); N is inferred.

Their checks and mutants: :mod:`bayesfa.validation.pfa`.
"""
