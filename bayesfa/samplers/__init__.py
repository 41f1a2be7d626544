"""The MCMC samplers, one folder per family: ``pfa/``, ``pdia/``, ``ngram/``.

``chains`` is what every front shares around its chains (argument checks, free positions, the
process pool, mid-chain checkpoints). A kernel takes arrays, a ``np.random.Generator`` and
scalars; its front checks the arguments, spawns one generator per chain from
``SeedSequence(seed)``, runs the chain loop and records the trace. Nothing here imports
NumPyro or JAX.
"""
