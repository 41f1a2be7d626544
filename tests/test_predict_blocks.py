"""Eq. 6 over blocks of strings (issue 41 item 1): ``predict_log_prob`` of CGS-PFA, the iPFA and
CGS-HMM, run with the forward budget lowered so that both the ``[draws, strings]`` table
(``bayesfa.forward.log_mean_exp_by_strings``) and the forward messages
(``bayesfa.forward.forward_chunks``) are cut into blocks, gives the bits of one block when the
messages' product is one whose rows do not depend on each other, and agrees to rounding with
BLAS's (whose rows can differ in the last bits with the rows it is handed)."""

from __future__ import annotations

import numpy as np
import pytest

import bayesfa
from bayesfa import forward
from bayesfa.datasets import pautomac_path
from bayesfa.pautomac import read_sample
from test_forward import _rowwise_product

#: Two chains of two draws each; every automaton has at least 5 states (Q) here.
FITS = {"cgs-pfa": dict(states=6, iterations=6, burn_in=4, period=1, chains=2),
        "ipfa": dict(states=4, iterations=6, burn_in=4, period=1, chains=2),
        "cgs-hmm": dict(states=5, alpha=0.2, iterations=6, burn_in=4, period=1, chains=2)}


@pytest.mark.parametrize("method", list(FITS))
def test_eq6_in_blocks_of_strings_gives_one_blocks_bits(monkeypatch, method):
    corpus = read_sample(pautomac_path(24, "train")).subset(range(60))
    test = read_sample(pautomac_path(24, "test")).subset(range(300))
    run = bayesfa.fit(corpus, method=method, seed=2, **FITS[method])
    draws = 2 * 2
    monkeypatch.setattr(forward, "_product", _rowwise_product)
    whole = run.log_prob(test)
    budget = 37 * draws * forward.MEAN_BYTES  # 37 strings a block of the table
    monkeypatch.setattr(forward, "_CHUNK_BYTES", budget)
    assert forward.mean_block(draws, test.n_strings) == 37
    assert forward.forward_chunks(1, 37, 5)[1] < 37  # and the forward pass cuts them again
    blocks = []
    cut = forward.string_block

    def spy(corpus, lo, hi):
        blocks.append(hi - lo)
        return cut(corpus, lo, hi)

    monkeypatch.setattr(forward, "string_block", spy)
    np.testing.assert_array_equal(run.log_prob(test), whole)
    assert 37 in blocks  # the table's blocks (37 strings, the last 300 % 37), then the forward
    assert set(blocks) - {37, 300 % 37}  # pass's, cut again inside them
    monkeypatch.setattr(forward, "_product", np.matmul)
    blocks = run.log_prob(test)
    monkeypatch.setattr(forward, "_CHUNK_BYTES", 1 << 28)
    blas_whole = run.log_prob(test)
    np.testing.assert_allclose(blocks, blas_whole, rtol=1e-12, atol=0)
    assert np.all(np.isfinite(blocks))
