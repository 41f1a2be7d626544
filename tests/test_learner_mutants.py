"""Each named mutant of evgram, cvgram and hmm-em fails ``bayesfa validate`` on a fixed seed,
through the check meant to catch it, and the correct methods pass (issue 21, item 2).

The checks are exact (tolerances cover rounding only), so these tests have no false-failure
rate; ``benchmarks/kill_matrix.py --methods evgram,cvgram,hmm-em --seeds 0-4`` runs the same on
five seeds.
"""

from __future__ import annotations

import pytest

from bayesfa.validation.harness import mutant_names_of, validate

#: the check that must fail for each mutant (others may fail too)
CATCHES = {
    "evgram:mutant-end-outside-alphabet": "criterion",
    "evgram:mutant-no-prior-factor": "criterion",
    "evgram:mutant-no-normaliser-prior": "criterion",
    "cvgram:mutant-end-outside-alphabet": "criterion",
    "cvgram:mutant-fold-not-held-out": "criterion",
    "cvgram:mutant-denominator-not-held-out": "criterion",
    "cvgram:mutant-folds-by-position": "criterion",
    "hmm-em:mutant-prior-without-one": "em-step",
    "hmm-em:mutant-emission-at-destination": "predictive",
    "hmm-em:mutant-carry-without-transition": "sequence-predictive",
    "hmm-em:mutant-likelihood-from-trace": "train-likelihood",
}
METHODS = ("evgram", "cvgram", "hmm-em")
SEED = 3


def test_every_mutant_has_a_catching_check():
    """The registry's mutants of these methods are exactly the ones tested here, >= 3 each."""
    names = [m for method in METHODS for m in mutant_names_of(method)]
    assert sorted(names) == sorted(CATCHES)
    for method in METHODS:
        assert len(mutant_names_of(method)) >= 3


@pytest.mark.parametrize("method", METHODS)
def test_correct_method_passes(method):
    report = validate(method, "tiny", SEED)
    assert report.passed, [c.name for c in report.checks if not c.passed]


@pytest.mark.parametrize("mutant", sorted(CATCHES))
def test_mutant_is_caught(mutant):
    report = validate(mutant, "tiny", SEED)
    failed = {c.name for c in report.checks if not c.passed}
    assert not report.passed
    assert CATCHES[mutant] in failed, failed
