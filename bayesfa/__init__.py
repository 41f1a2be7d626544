"""bayesfa: Bayesian learning of probabilistic finite automata.

The public names, all a user imports:

- fitting and runs: :func:`fit`, :func:`load`, :class:`Run`;
- what is registered: :func:`methods`, :func:`options`, :func:`validate`;
- data and automata: :class:`Corpus`, :class:`PFA`, :class:`PDFA`, :class:`HMM`;
- errors: :class:`InputError` (bad input: one line naming the file, line and problem).

``import bayesfa`` imports neither numba nor JAX; a method's modules load when it is used.
"""

from bayesfa.api import Run, fit, load, methods, options, validate
from bayesfa.automata import HMM, PDFA, PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

__version__ = "0.1.0"

__all__ = ["fit", "load", "Run", "methods", "options", "validate",
           "Corpus", "PFA", "PDFA", "HMM", "InputError", "__version__"]
