"""``bayesfa validate``: every method against an exact reference on toys.

The harness (``harness``), the check record (``checks``), the toys (``toys``) and the
convergence diagnostics (``diagnostics``) sit here; each family's references, kernel checks
and mutants sit in the folder named as the samplers' family: ``pfa/``, ``pdia/``, ``ngram/``.
A reference never calls the code it checks.
"""
