"""Corpora of 2**24 tokens and more (issue 41 item 1): CGS-PFA keeps float64 counts, exact, in
the same sweep; shown here with the threshold lowered so that a small corpus takes that path."""

from __future__ import annotations

import numpy as np
import pytest

import bayesfa
from bayesfa.datasets import pautomac_path
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.pautomac import read_sample
from bayesfa.samplers.pfa import cgs_pfa

OPTIONS = dict(method="cgs-pfa", states=6, beta=0.05, iterations=40, burn_in=20, chains=2, seed=1)


@pytest.fixture
def lowered(monkeypatch):
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 10)


def test_count_type_follows_the_corpus_size():
    assert cgs_pfa.count_dtype(cgs_pfa.FLOAT32_EXACT_TOKENS - 1) is np.float32
    assert cgs_pfa.count_dtype(cgs_pfa.FLOAT32_EXACT_TOKENS) is np.float64


def test_float64_counts_give_the_float32_chain(lowered, monkeypatch):
    """Both count types hold every count exactly, so the sweep samples the same conditionals:
    on this corpus the same seed gives the same chain and draws (the weights' float32
    rounding, ~1e-7 relative, moves no inversion here)."""
    corpus = read_sample(pautomac_path(24, "train"))
    wide = bayesfa.fit(corpus, **OPTIONS)
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", 1 << 24)
    narrow = bayesfa.fit(corpus, **OPTIONS)
    assert (wide.info["count_dtype"], narrow.info["count_dtype"]) == ("float64", "float32")
    for name, values in narrow._trace_arrays().items():
        np.testing.assert_allclose(wide._trace_arrays()[name], values, rtol=1e-12, err_msg=name)
    assert np.array_equal(wide.arrays["counts"], narrow.arrays["counts"])


@pytest.mark.parametrize("extra, named", [({"kernel": "alias-mh"}, "--kernel alias-mh"),
                                          ({"interleave": 2}, "--interleave"),
                                          ({"anneal": 5}, "--anneal")])
def test_options_that_need_float32_counts_are_one_line_errors(lowered, extra, named):
    corpus = read_sample(pautomac_path(24, "train"))
    with pytest.raises(InputError, match=f"float64, which only the plain gibbs sweep runs .*{named}"):
        bayesfa.fit(corpus, **{**OPTIONS, **extra})

