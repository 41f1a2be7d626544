"""``bayesfa data alice|dna`` (the PDIA paper's natural data) and ``bayesfa perplexity``'s
conventions (Pfau, Bartlett & Wood 2010, Sect. 4): sentence resets, continuation, the test
data folded into the model as read, and what ``n_symbols`` counts."""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
import pytest

from bayesfa import naturaldata
from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.forward import log_mean_exp
from bayesfa.methods import get_method
from bayesfa.pautomac import read_sample, write_sample
from bayesfa.rundir import save_run
from bayesfa.textdata import LOWERCASE_AND_SPACE


def _decode(corpus: Corpus, s: int) -> str:
    return "".join(LOWERCASE_AND_SPACE[i] for i in corpus.string(s))


# -- bayesfa data ------------------------------------------------------------------------------

def test_data_alice_is_the_papers_split(tmp_path, capsys):
    """100 sentences / 9,986 characters and 50 / 3,891, 27 symbols (a-z = 0-25, space = 26),
    one sentence a line, in the order of the authors' files."""
    assert main(["data", "alice", "--out", str(tmp_path)]) == 0
    train, test = read_sample(tmp_path / "alice.train"), read_sample(tmp_path / "alice.test")
    assert (train.n_strings, train.n_letters, train.alphabet_size) == (100, 9986, 27)
    assert (test.n_strings, test.n_letters, test.alphabet_size) == (50, 3891, 27)
    lines = naturaldata.ALICE_TRAIN.read_text().split("\n")
    assert [_decode(train, s) for s in (0, 99)] == [lines[0], lines[99]]
    assert train.string(1)[:2].tolist() == [8, 26]  # "i wish ...": i = 8, space = 26
    assert "9986 letters" in capsys.readouterr().out


def test_data_alice_resplit(tmp_path):
    """A fresh 100/50 split of the book's sentences: same seed same files, another seed
    another split, train and test disjoint draws of preprocessed sentences."""
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert main(["data", "alice", "--resplit", "--seed", seed, "--out", str(tmp_path / name)]) == 0
    a, b, c = ((tmp_path / n / "alice.train").read_bytes() for n in "abc")
    assert a == b and a != c
    train, test = (read_sample(tmp_path / "a" / f"alice.{p}") for p in ("train", "test"))
    assert (train.n_strings, test.n_strings) == (100, 50)
    book = naturaldata.alice_book_sentences()
    drawn = [_decode(train, s) for s in range(100)] + [_decode(test, s) for s in range(50)]
    assert all(s in book for s in drawn)
    order = np.random.default_rng(3).permutation(len(book))
    assert drawn == [book[i] for i in order[:150]]
    # the paper's preprocessing: lower case letters and single spaces only
    assert all(set(s) <= set(LOWERCASE_AND_SPACE) and "  " not in s and s == s.strip()
               for s in book)


def test_data_dna(tmp_path):
    """One sequence each: the first 150,000 bases of the bundled mouse region and the
    remaining 28,393, over A C G T = 0-3."""
    assert main(["data", "dna", "--out", str(tmp_path)]) == 0
    train, test = read_sample(tmp_path / "dna.train"), read_sample(tmp_path / "dna.test")
    assert (train.n_strings, train.n_letters, test.n_strings, test.n_letters) == (1, 150_000, 1, 28_393)
    assert train.alphabet_size == 4
    fasta = "".join(line.strip().upper() for line in naturaldata.DNA_FASTA.read_text().splitlines()
                    if not line.startswith(">"))
    assert "".join("ACGT"[i] for i in test.string(0)[-60:]) == fasta[-60:]


def test_data_errors_are_one_line(tmp_path, capsys):
    assert main(["data", "dna", "--fasta", str(tmp_path / "none.fa"), "--out", str(tmp_path)]) == 2
    assert main(["data", "alice", "--seed", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "none.fa" in err[0] and "--resplit" in err[1]


@pytest.mark.shared_data
def test_bundled_files_are_the_shared_ones(shared_data):
    for bundled, shared in ((naturaldata.ALICE_TRAIN, "text/aiw.train"),
                            (naturaldata.ALICE_TEST, "text/aiw.test"),
                            (naturaldata.ALICE_BOOK, "text/11-0.txt"),
                            (naturaldata.DNA_FASTA, "dna/mm10.fa")):
        assert bundled.read_bytes() == (shared_data / shared).read_bytes(), shared


# -- perplexity conventions on a hand-computable HMM --------------------------------------------

# Two states, letters a b. Sentences: symbol 0 is the end, emitted like a letter.
PI = np.array([0.7, 0.3])
T = np.array([[0.9, 0.1], [0.2, 0.8]])
B_SENT = np.array([[0.2, 0.7, 0.1], [0.3, 0.1, 0.6]])   # [state, (end, a, b)]
B_SEQ = np.array([[0.8, 0.2], [0.25, 0.75]])             # [state, (a, b)]


def _brute(init, emit, x):
    """Pr(x_1..x_n) summing over every state path (emit[q, x_t] then T)."""
    total = 0.0
    for path in itertools.product(range(2), repeat=len(x)):
        p = init[path[0]] * emit[path[0], x[0]]
        for t in range(1, len(x)):
            p *= T[path[t - 1], path[t]] * emit[path[t], x[t]]
        total += p
    return total


def _hmm_run(tmp_path, name, sequence, arrays, alphabet):
    run = tmp_path / name
    train = {"format": "pautomac", "alphabet_size": alphabet,
             "data_shape": "sequence" if sequence else "sentences"}
    save_run(run, method="hmm-em", options={"states": 2, "sequence": sequence}, seed=0,
             arrays=arrays, train=train)
    return run


def _perplexity(run, test_path, capsys, *extra):
    capsys.readouterr()
    assert main(["perplexity", str(run), str(test_path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_perplexity_sentences_reset_and_count_ends(tmp_path, capsys):
    """Sentence data: each string from pi, its end a predicted symbol; n_symbols = letters +
    ends, and the value is exp(-sum log Pr(x, end) / n_symbols) by brute force."""
    run = _hmm_run(tmp_path, "sent", False, {"startprob": PI, "transmat": T, "emissionprob": B_SENT}, 2)
    strings = [[0, 1], [1], [0, 0, 1]]
    test = tmp_path / "t"
    write_sample(test, Corpus.from_strings(strings, 2))
    out = _perplexity(run, test, capsys)
    logp = sum(np.log(_brute(PI, B_SENT, [a + 1 for a in x] + [0])) for x in strings)
    assert out["n_symbols"] == 6 + 3 and out["n_letters"] == 6 and out["data_shape"] == "sentences"
    assert out["log_prob"] == pytest.approx(logp, rel=1e-12)
    assert out["perplexity"] == pytest.approx(np.exp(-logp / 9), rel=1e-12)
    # --letters-only: each string's prefix probability, its end's prediction left out
    letters = _perplexity(run, test, capsys, "--letters-only")
    prefix = sum(np.log(_brute(PI, B_SENT, [a + 1 for a in x])) for x in strings)
    assert letters["n_symbols"] == 6 and letters["log_prob"] == pytest.approx(prefix, rel=1e-12)
    assert prefix > logp + 0.1
    # nor draw sets (it draws nothing)
    assert main(["perplexity", str(run), str(test), "--draw-sets", "5"]) != 0
    assert "does not support --draw-sets" in capsys.readouterr().err


def test_perplexity_sequence_continues_from_the_end_of_training(tmp_path, capsys):
    """Sequence data: the test letters continue from the state distribution left by training
    (``next_state``), not from pi; no end symbol; n_symbols = letters. Two test strings continue
    one another: the total is the brute-force probability of their concatenation."""
    next_state = np.array([0.05, 0.95])
    arrays = {"startprob": PI, "transmat": T, "emissionprob": B_SEQ, "next_state": next_state}
    run = _hmm_run(tmp_path, "seq", True, arrays, 2)
    test = tmp_path / "t"
    write_sample(test, Corpus.from_strings([[1, 1, 0], [1, 0]], 2))
    out = _perplexity(run, test, capsys)
    x = [1, 1, 0, 1, 0]
    cont, reset = np.log(_brute(next_state, B_SEQ, x)), np.log(_brute(PI, B_SEQ, x))
    assert out["n_symbols"] == 5 and out["data_shape"] == "sequence"
    assert out["log_prob"] == pytest.approx(cont, rel=1e-12)
    # training ended in the "b" state and the test starts b b: continuing is more probable
    assert cont > reset + 0.5


# -- the PDFA / PDIA hook: the test data folded into each sample as read -------------------------

def _walk(delta, cnt, beta, tokens, q0, sentences):
    """Per-symbol log predictive of ``tokens`` under one sample, folding each emission into the
    counts (Dirichlet-multinomial, Dir(beta / S)); sentences: symbol 0 returns to q0."""
    cnt = cnt.astype(float).copy()
    s_count = cnt.shape[1]
    q, out = q0, []
    for s in tokens:
        out.append(np.log((cnt[q, s] + beta / s_count) / (cnt[q].sum() + beta)))
        cnt[q, s] += 1
        if sentences and s == 0:
            q = 0
        else:
            assert delta[q, s] >= 0, "the test needs an unvisited transition"
            q = delta[q, s]
    return np.array(out)


@pytest.mark.parametrize("sequence", [False, True])
def test_pdfa_perplexity_hook_by_hand(sequence):
    """The finite PDFA's hook against a hand walk of every stored sample: sentences restart at
    q0 and every symbol (ends included) is folded into the counts before the next, across
    strings; a sequence continues from the sample's end state. The Bayesian mixture is the
    log-mean-exp of per-sample totals, the authors' one the sum of per-symbol log-means; the
    non-incremental predictive (each string given the training data only) differs."""
    method = get_method("pdfa")
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    opts = vars(parser.parse_args(["--states", "1", "--iterations", "30", "--burn-in", "10",
                                   "--period", "5", "--chains", "2", "--beta", "1.0",
                                   "--alpha", "1.0", "--gamma", "1.0"]
                                  + (["--sequence"] if sequence else [])))
    rng = np.random.default_rng(0)
    train = Corpus.from_strings([rng.integers(0, 2, rng.integers(2, 6)) for _ in range(30)], 2)
    test = Corpus.from_strings([[0, 1, 1], [1, 0], [0, 0, 0, 1]], 2)
    fit = method.fit(train, opts, 3, False)
    a = fit.arrays
    tokens = test.tokens[test.tokens != 0] - 1 if sequence else test.tokens
    per = np.array([_walk(a["delta"][c, d], a["counts"][c, d], 1.0, tokens,
                          int(a["end_state"][c, d]), not sequence)
                    for c in range(2) for d in range(4)])
    joint = method.perplexity_log_prob(a, opts, test, continuation=sequence)
    authors = method.perplexity_log_prob(a, opts, test, continuation=sequence, per_symbol=True)
    assert joint == pytest.approx(float(log_mean_exp(per.sum(axis=1))), rel=1e-10)
    assert authors == pytest.approx(float(log_mean_exp(per, axis=0).sum()), rel=1e-10)
    # --letters-only: the same pass, the end predictions left out of the total (sentences)
    letters = tokens != 0 if not sequence else np.ones(tokens.size, dtype=bool)
    if not sequence:
        assert (~letters).sum() == test.n_strings
    for per_symbol, expect in ((False, log_mean_exp(per[:, letters].sum(axis=1))),
                               (True, log_mean_exp(per[:, letters], axis=0).sum())):
        got = method.perplexity_log_prob(a, opts, test, continuation=sequence,
                                         per_symbol=per_symbol, letters_only=True)
        assert got == pytest.approx(float(expect), rel=1e-10)
    if not sequence:
        independent = method.predict_log_prob(a, opts, test).sum()
        assert abs(independent - joint) > 1e-6
    with pytest.raises(Exception, match="sentences|sequence"):
        method.perplexity_log_prob(a, opts, test, continuation=not sequence)
