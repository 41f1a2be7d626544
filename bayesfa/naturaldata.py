"""The natural data of Pfau, Bartlett & Wood (2010), Sect. 4 (Table 1), prepared as the paper did.

*Alice in Wonderland* (AIW): letters and spaces only, lower case, split at sentence ends, a
27-symbol alphabet (``a``-``z`` are letters 0-25, space is 26); the paper trains on 100 random
sentences (9,986 characters) and tests on 50 (3,891). :func:`alice_paper_split` reads the
authors' own split (``aiw.train`` / ``aiw.test`` from GitHub ``dpfau/pdia``, bundled in
``bayesfa/data/text/``); :func:`alice_resplit` draws a fresh 100 / 50 split from the whole
book (Project Gutenberg eBook #11, bundled) to measure the spread across splits. The model
restarts at ``q0`` at the start of every sentence.

*DNA*: one unbroken sequence, the first 150,000 bases for training and the rest for testing
(4 symbols, ``A C G T`` = 0-3). The paper's own 194,173 bp fragment of mouse chromosome 2 is
not available; :func:`dna_split` reads a 178,393 bp mouse region (mm10 chr17, bundled in
``bayesfa/data/dna/mm10.fa``), so the test part is 28,393 bases, not the paper's 44,173.
The test continues the training sequence from the state reached at its end.

Provenance and terms of the bundled files: ``bayesfa/data/text/README.md`` and
``bayesfa/data/dna/README.md``. ``bayesfa data alice|dna --out DIR`` writes the splits in the
PAutomaC sample layout (:func:`bayesfa.pautomac.write_sample`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.textdata import (LOWERCASE_AND_SPACE, load_fasta, load_lines, split_corpus,
                              split_sentences)

DATA = Path(__file__).resolve().parent / "data"
ALICE_TRAIN = DATA / "text" / "aiw.train"
ALICE_TEST = DATA / "text" / "aiw.test"
ALICE_BOOK = DATA / "text" / "11-0.txt"
DNA_FASTA = DATA / "dna" / "mm10.fa"
#: The paper's DNA split point: "the first 150,000 base pairs for training and the rest for testing".
DNA_TRAIN_BASES = 150_000
#: The paper's AIW split sizes (sentences).
ALICE_TRAIN_SENTENCES, ALICE_TEST_SENTENCES = 100, 50

_KEEP = frozenset(LOWERCASE_AND_SPACE)
# Gutenberg markup, not Carroll's text
_ILLUSTRATION = re.compile(r"\[Illustration[^\]]*\]")


def alice_paper_split() -> tuple[Corpus, Corpus]:
    """The paper's own AIW split, ``(train, test)``: 100 sentences (9,986 letters) and 50
    (3,891 letters) over the 27-letter alphabet :data:`~bayesfa.textdata.LOWERCASE_AND_SPACE`."""
    train, _ = load_lines(ALICE_TRAIN, alphabet=LOWERCASE_AND_SPACE)
    test, _ = load_lines(ALICE_TEST, alphabet=LOWERCASE_AND_SPACE)
    return train, test


def alice_book_sentences(path: str | os.PathLike = ALICE_BOOK) -> list[str]:
    """Every sentence of the book, preprocessed as the paper says: the text from its first
    chapter on (the title page and table of contents dropped, ``[Illustration]`` markers too),
    split at sentence ends (:func:`~bayesfa.textdata.split_sentences`), lower-cased, every
    character but ``a``-``z`` made a space, spaces collapsed; empty sentences dropped.

    On the bundled book this gives 1,682 sentences; 88 of the paper's 100 training and 48 of
    its 50 test sentences are among them verbatim (the authors' text edition and sentence
    rule differed slightly, e.g. in how a ``!'`` inside a quotation ends a sentence).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", path) from None
    start = text.find("CHAPTER I.\n")          # the first chapter, after the contents list
    text = _ILLUSTRATION.sub(" ", text[max(start, 0):])
    out = []
    for sentence in split_sentences(text):
        s = " ".join("".join(c if c in _KEEP else " " for c in sentence.lower()).split())
        if s:
            out.append(s)
    if not out:
        raise InputError("no sentences", path)
    return out


def _encode(sentences: list[str]) -> Corpus:
    letters = {c: i for i, c in enumerate(LOWERCASE_AND_SPACE)}
    return Corpus.from_strings([[letters[c] for c in s] for s in sentences], len(LOWERCASE_AND_SPACE))


def alice_resplit(seed: int, n_train: int = ALICE_TRAIN_SENTENCES,
                  n_test: int = ALICE_TEST_SENTENCES,
                  path: str | os.PathLike = ALICE_BOOK) -> tuple[Corpus, Corpus]:
    """A fresh random split of the whole book, ``(train, test)``: ``n_train + n_test``
    distinct sentences of :func:`alice_book_sentences` drawn without replacement by
    ``np.random.default_rng(seed)`` (the first ``n_train`` drawn train, the next ``n_test``
    test, in the order drawn). Same seed, same split."""
    sentences = alice_book_sentences(path)
    if n_train < 1 or n_test < 1 or n_train + n_test > len(sentences):
        raise InputError(f"cannot draw {n_train} + {n_test} sentences from {len(sentences)}", path)
    order = np.random.default_rng(seed).permutation(len(sentences))
    train = [sentences[i] for i in order[:n_train]]
    test = [sentences[i] for i in order[n_train:n_train + n_test]]
    return _encode(train), _encode(test)


def dna_split(fasta: str | os.PathLike | None = None,
              n_train: int = DNA_TRAIN_BASES) -> tuple[Corpus, Corpus]:
    """``(train, test)``: the FASTA's bases (upper-cased, one record expected) as one
    sequence over ``ACGT``, the first ``n_train`` for training and the rest for testing, each
    one string. ``fasta`` defaults to the bundled mouse region (178,393 bases)."""
    path = Path(DNA_FASTA if fasta is None else fasta)
    if not path.is_file():
        raise InputError("no such FASTA file (give one with --fasta PATH)", path)
    corpus, _ = load_fasta(path, alphabet="ACGT")
    if corpus.n_strings != 1:
        raise InputError(f"{corpus.n_strings} FASTA records; expected one unbroken sequence", path)
    if not 0 < n_train < corpus.n_letters:
        raise InputError(f"only {corpus.n_letters} bases: cannot keep {n_train} for training "
                         "and test on the rest", path)
    return split_corpus(corpus, n_train)


def write_split(out: str | os.PathLike, name: str, train: Corpus, test: Corpus) -> dict:
    """Write ``OUT/NAME.train`` and ``OUT/NAME.test`` (PAutomaC sample layout) through the
    guarded writer (:func:`bayesfa.rundir.write_output`: a file of the same name that bayesfa
    did not write is refused, in one line, before either is written); returns a summary
    (paths, strings and letters of each part)."""
    from bayesfa.pautomac import write_sample
    from bayesfa.rundir import check_output, check_output_dir, write_output

    out = check_output_dir(out)
    for part in ("train", "test"):
        check_output(out / f"{name}.{part}", make_folder=True)
    summary = {}
    for part, corpus in (("train", train), ("test", test)):
        path = out / f"{name}.{part}"
        write_output(path, lambda tmp, corpus=corpus: write_sample(tmp, corpus), make_folder=True)
        summary[part] = {"path": str(path), "strings": corpus.n_strings,
                         "letters": corpus.n_letters, "alphabet_size": corpus.alphabet_size}
    return summary
