"""bayesfa: Bayesian learning of probabilistic finite automata."""

from bayesfa.automata import HMM, PDFA, PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

__version__ = "0.1.0"

__all__ = ["Corpus", "PFA", "PDFA", "HMM", "InputError", "__version__"]
