"""PAutomaC files: round trips, every kind of malformed input, and the real problems."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from bayesfa.datasets import pautomac_path
from bayesfa.errors import InputError
from bayesfa.forward import forward_log_prob
from bayesfa.pautomac import read_model, read_sample, read_solution, write_model, write_sample, write_solution
from conftest import TEST_DATA, shared_data_path
from test_corpus import corpora
from test_forward import all_strings, random_pfa


# -- helpers -----------------------------------------------------------------------------------
def write_bytes(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("ascii"))
    return path


def assert_input_error_at(exc_info, path: Path, line: int | None) -> None:
    """``str(err)`` is ``"<path>:<line>: <problem>"``, on one line."""
    message = str(exc_info.value)
    assert "\n" not in message
    if line is None:
        assert message.startswith(f"{path}: "), message
    else:
        assert message.startswith(f"{path}:{line}: "), message
        assert exc_info.value.line == line
    assert exc_info.value.path == str(path)


def exact_probabilities(pfa: PFA, corpus: Corpus) -> np.ndarray:
    """Probabilities of ``corpus`` under ``pfa``, letters the model lacks having probability 0.

    (A model file's alphabet is read off its S entries, so it may be smaller than the test
    file's: e.g. problem 39 has 12 letters in its model and 14 in its test set.)
    """
    size = max(corpus.alphabet_size, pfa.alphabet_size)
    trans = np.zeros((size, pfa.n_states, pfa.n_states))
    trans[:pfa.alphabet_size] = pfa.trans
    return np.exp(forward_log_prob(pfa.init, trans, pfa.stop, corpus.with_alphabet(size)))


# -- malformed inputs: (id, file content, line the error must name) ---------------------------
SAMPLE_CASES = [
    ("empty-file", "", 1),
    ("only-blank-lines", "\n  \n\n", 1),
    ("header-count-above-lines", "3 2\n1 0\n1 1\n", 1),
    ("header-count-below-lines", "1 2\n1 0\n1 1\n", 1),
    ("header-one-field", "2\n1 0\n1 1\n", 1),
    ("header-three-fields", "2 2 2\n1 0\n1 1\n", 1),
    ("header-count-non-numeric", "two 2\n1 0\n1 1\n", 1),
    ("header-alphabet-non-numeric", "2 x\n1 0\n1 1\n", 1),
    ("header-alphabet-float", "2 2.0\n1 0\n1 1\n", 1),
    ("header-negative-count", "-1 2\n", 1),
    ("header-alphabet-zero", "0 0\n", 1),
    ("alphabet-too-small-for-symbol", "2 2\n1 0\n2 1 2\n", 3),
    ("length-field-above-tokens", "2 3\n1 0\n3 1 2\n", 3),
    ("length-field-below-tokens", "2 3\n1 0\n1 1 2\n", 3),
    ("length-field-on-line-without-symbols", "2 3\n1\n0\n", 2),
    ("negative-length", "2 3\n1 0\n-1\n", 3),
    ("symbol-outside-alphabet", "3 3\n0\n2 0 7\n1 1\n", 3),
    ("negative-symbol", "2 3\n1 0\n2 1 -1\n", 3),
    ("non-numeric-symbol", "2 3\n1 0\n2 1 a\n", 3),
    ("non-numeric-length", "2 3\nx 0\n1 1\n", 2),
    ("float-symbol", "2 3\n1 0\n1 1.0\n", 3),
    ("underscore-in-symbol", "2 3\n1 0\n1 0_1\n", 3),  # Python's int() would read 1
    ("blank-line-in-middle", "2 3\n1 0\n\n1 1\n", 3),
    ("blank-line-in-middle-crlf", "2 3\r\n1 0\r\n\r\n1 1\r\n", 3),
    ("non-ascii-byte", b"2 3\n1 0\n1 \xe9\n", 3),
]

SOLUTION_CASES = [
    ("empty-file", "", 1),
    ("count-above-lines", "3\n0.5\n0.5\n", 1),
    ("count-below-lines", "1\n0.5\n0.5\n", 1),
    ("header-non-numeric", "n\n0.5\n", 1),
    ("header-two-fields", "1 2\n0.5\n", 1),
    ("negative-count", "-1\n", 1),
    ("negative", "2\n0.5\n-0.1\n", 3),
    ("nan", "2\n0.5\nnan\n", 3),
    ("inf", "2\ninf\n0.5\n", 2),
    ("minus-inf", "2\n0.5\n-inf\n", 3),
    ("greater-than-1", "2\n0.5\n1.5\n", 3),
    ("non-numeric", "2\n0.5\nabc\n", 3),
    ("underscore", "2\n0.5\n0.1_5\n", 3),  # Python's float() would read 0.15
    ("two-values-on-a-line", "2\n0.5 0.5\n0.5\n", 2),
    ("blank-line-in-middle", "2\n0.5\n\n0.5\n", 3),
]

VALID_MODEL = """\
I: (state)
\t(0) 1.0
F: (state)
\t(1) 0.5
S: (state,symbol)
\t(0,0) 0.5
\t(0,1) 0.5
\t(1,0) 1.0
T: (state,symbol,state)
\t(0,0,0) 0.25
\t(0,0,1) 0.75
\t(0,1,1) 1.0
\t(1,0,0) 1.0
"""


def _model(replace: dict[int, str] | None = None, insert: dict[int, str] | None = None,
           delete: tuple[int, ...] = ()) -> str:
    """VALID_MODEL with 1-based lines replaced, deleted, or new lines inserted before them."""
    lines = VALID_MODEL.splitlines()
    out = []
    for number, text in enumerate(lines + [None], start=1):
        if insert and number in insert:
            out.append(insert[number])
        if text is None or number in delete:
            continue
        out.append((replace or {}).get(number, text))
    return "\n".join(out) + "\n"


MODEL_CASES = [
    ("empty-file", "", 1),
    ("I-does-not-sum-to-1", _model({2: "\t(0) 0.9"}), 2),
    ("S-does-not-sum-to-1", _model({7: "\t(0,1) 0.4"}), 6),
    ("T-does-not-sum-to-1", _model({11: "\t(0,0,1) 0.5"}), 10),
    ("T-missing-for-an-emitted-symbol", _model(delete=(12,)), 7),
    ("state-neither-stops-nor-emits", _model(delete=(8, 13)), 4),
    ("unknown-state-as-T-target", _model({13: "\t(1,0,2) 1.0"}), 13),
    ("unknown-state-as-T-source", _model(insert={14: "\t(4,0,0) 1.0"}), 14),
    ("unknown-state-in-I", _model({2: "\t(3) 1.0"}), 2),
    ("negative-probability", _model({4: "\t(1) -0.5"}), 4),
    ("nan-probability", _model({10: "\t(0,0,0) nan"}), 10),
    ("inf-probability", _model({6: "\t(0,0) inf"}), 6),
    ("probability-above-1", _model({4: "\t(1) 1.5"}), 4),
    ("non-numeric-probability", _model({10: "\t(0,0,0) abc"}), 10),
    ("entry-before-section", _model(insert={1: "\t(0) 1.0"}), 1),
    ("unknown-section", _model({3: "X: (state)"}), 3),
    ("duplicate-entry", _model(insert={8: "\t(0,1) 0.5"}), 8),
    ("malformed-entry-parenthesis", _model({6: "\t(0,0 0.5"}), 6),
    ("malformed-entry-extra-field", _model({6: "\t(0,0) 0.5 0.1"}), 6),
    ("malformed-entry-no-probability", _model({6: "\t(0,0)"}), 6),
    ("malformed-entry-wrong-index-count", _model({6: "\t(0) 0.5"}), 6),
    ("malformed-entry-non-numeric-index", _model({6: "\t(0,a) 0.5"}), 6),
    ("malformed-entry-negative-index", _model({6: "\t(0,-1) 0.5"}), 6),
    ("section-header-without-colon", _model({9: "T (state,symbol,state)"}), 9),
]


def _params(cases):
    return [pytest.param(content, line, id=name) for name, content, line in cases]


# -- samples -----------------------------------------------------------------------------------
@pytest.mark.parametrize("content, line", _params(SAMPLE_CASES))
def test_malformed_sample(tmp_path, content, line):
    path = write_bytes(tmp_path, "bad.pautomac.test", content)
    with pytest.raises(InputError) as exc_info:
        read_sample(path)
    assert_input_error_at(exc_info, path, line)


def test_missing_sample_file(tmp_path):
    path = tmp_path / "nope.pautomac.test"
    with pytest.raises(InputError, match="no such file") as exc_info:
        read_sample(path)
    assert_input_error_at(exc_info, path, None)
    with pytest.raises(InputError, match="directory"):
        read_sample(tmp_path)


@settings(max_examples=100, deadline=None)
@given(corpora(max_strings=10, max_length=6), st.booleans(), st.integers(0, 2))
def test_sample_round_trip(data, crlf, trailing_blank_lines):
    strings, alphabet_size = data
    corpus = Corpus.from_strings(strings, alphabet_size)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.pautomac.train"
        write_sample(path, corpus)
        text = path.read_text() + "\n" * trailing_blank_lines
        if crlf:
            text = text.replace("\n", "\r\n")
        path.write_bytes(text.encode("ascii"))
        assert read_sample(path) == corpus


def test_sample_layout(tmp_path):
    path = tmp_path / "x.pautomac.test"
    write_sample(path, Corpus.from_strings([[0, 2], [], [1]], 4))
    assert path.read_text() == "3 4\n2 0 2\n0\n1 1\n"


_NON_INTEGER = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                       max_size=6).filter(lambda s: not re.fullmatch(r"[+-]?[0-9]+", s))
_FLOAT_LITERAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FLOAT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                     max_size=6).filter(lambda s: not _FLOAT_LITERAL.fullmatch(s))


@settings(max_examples=100, deadline=None)
@given(corpora(max_strings=8, max_length=5).filter(lambda d: d[0]), _NON_INTEGER, st.data())
def test_any_non_numeric_token_in_a_sample_is_rejected_at_its_line(data, junk, draw):
    strings, alphabet_size = data
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.pautomac.test"
        write_sample(path, Corpus.from_strings(strings, alphabet_size))
        lines = path.read_text().splitlines()
        row = draw.draw(st.integers(0, len(lines) - 1))
        tokens = lines[row].split()
        tokens[draw.draw(st.integers(0, len(tokens) - 1))] = junk
        lines[row] = " ".join(tokens)
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(InputError) as exc_info:
            read_sample(path)
        assert_input_error_at(exc_info, path, row + 1)


# -- solutions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("content, line", _params(SOLUTION_CASES))
def test_malformed_solution(tmp_path, content, line):
    path = write_bytes(tmp_path, "bad.pautomac_solution.txt", content)
    with pytest.raises(InputError) as exc_info:
        read_solution(path)
    assert_input_error_at(exc_info, path, line)


_PROBABILITY = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(_PROBABILITY, max_size=30), st.booleans())
def test_solution_round_trip(probs, crlf):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.pautomac_solution.txt"
        write_solution(path, np.array(probs))
        if crlf:
            path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        got = read_solution(path)
    assert got.tolist() == probs  # repr precision: exact


@settings(max_examples=100, deadline=None)
@given(st.lists(_PROBABILITY, min_size=1, max_size=10), _NON_FLOAT, st.data())
def test_any_non_numeric_value_in_a_solution_is_rejected_at_its_line(probs, junk, draw):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.pautomac_solution.txt"
        write_solution(path, np.array(probs))
        lines = path.read_text().splitlines()
        row = draw.draw(st.integers(0, len(lines) - 1))
        lines[row] = junk
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(InputError) as exc_info:
            read_solution(path)
        assert_input_error_at(exc_info, path, row + 1)


def test_write_solution_rejects_invalid_values(tmp_path):
    for bad in ([0.5, -0.1], [np.nan], [np.inf]):
        with pytest.raises(ValueError):
            write_solution(tmp_path / "x", np.array(bad))


# -- models ------------------------------------------------------------------------------------
def test_valid_model_reads_as_documented(tmp_path):
    pfa = read_model(write_bytes(tmp_path, "m.txt", VALID_MODEL))
    assert (pfa.n_states, pfa.alphabet_size) == (2, 2)
    # trans[a, q, r] = (1 - F(q)) S(q, a) T(q, a, r)
    want = np.zeros((2, 2, 2))
    want[0, 0] = [0.5 * 0.25, 0.5 * 0.75]
    want[1, 0, 1] = 0.5
    want[0, 1, 0] = 0.5 * 1.0
    np.testing.assert_allclose(pfa.trans, want, rtol=1e-15)
    np.testing.assert_allclose(pfa.stop, [0.0, 0.5])
    np.testing.assert_allclose(pfa.init, [1.0, 0.0])
    # CRLF and trailing blank lines change nothing
    crlf = read_model(write_bytes(tmp_path, "m2.txt", VALID_MODEL.replace("\n", "\r\n") + "\r\n\r\n"))
    np.testing.assert_array_equal(crlf.trans, pfa.trans)


@pytest.mark.parametrize("content, line", _params(MODEL_CASES))
def test_malformed_model(tmp_path, content, line):
    path = write_bytes(tmp_path, "bad.pautomac_model.txt", content)
    with pytest.raises(InputError) as exc_info:
        read_model(path)
    assert_input_error_at(exc_info, path, line)


def test_model_without_T_section(tmp_path):
    path = write_bytes(tmp_path, "m.txt", VALID_MODEL.split("T:")[0])
    with pytest.raises(InputError, match="section T") as exc_info:
        read_model(path)
    assert str(path) in str(exc_info.value)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 4), n_letters=st.integers(1, 3),
       sparsity=st.sampled_from([0.0, 0.6]))
def test_model_round_trip(seed, n_states, n_letters, sparsity):
    pfa = PFA(*random_pfa(np.random.default_rng(seed), n_states, n_letters, sparsity=sparsity))
    # A machine that only ever stops has empty S and T sections, which read_model rejects.
    assume(pfa.trans.any())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.pautomac_model.txt"
        write_model(path, pfa)
        back = read_model(path)
    assert back.n_states == pfa.n_states
    assert back.alphabet_size <= pfa.alphabet_size  # letters nobody emits are not written
    corpus = Corpus.from_strings(list(all_strings(n_letters, 3)), n_letters)
    np.testing.assert_allclose(exact_probabilities(back, corpus), pfa.prob(corpus), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(back.init, pfa.init, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(back.stop, pfa.stop, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(back.trans, pfa.trans[:back.alphabet_size], rtol=1e-12, atol=1e-15)


def _problem_12(kind: str) -> Path:
    suffix = {"test": "pautomac.test", "solution": "pautomac_solution.txt",
              "model": "pautomac_model.txt"}[kind]
    return TEST_DATA / "pautomac" / f"12.{suffix}"


@pytest.mark.parametrize("paths", [
    pytest.param(lambda kind: pautomac_path(24, kind), id="bundled-24"),
    pytest.param(_problem_12, id="tests-data-12"),
])
def test_write_model_of_a_real_model_reproduces_its_probabilities(tmp_path, paths):
    pfa = read_model(paths("model"))
    test = read_sample(paths("test"))
    write_model(tmp_path / "m.txt", pfa)
    again = read_model(tmp_path / "m.txt")
    np.testing.assert_allclose(exact_probabilities(again, test), exact_probabilities(pfa, test), rtol=1e-12)


# -- the real problems -------------------------------------------------------------------------
def check_problem(model: Path, test: Path, solution: Path) -> tuple[Corpus, np.ndarray, np.ndarray]:
    """Exact probabilities normalised over the test set equal the solution (rel. error < 1e-6)."""
    corpus, sol = read_sample(test), read_solution(solution)
    assert corpus.n_strings == sol.size == 1000
    assert sol.sum() == pytest.approx(1.0, abs=1e-9)
    exact = exact_probabilities(read_model(model), corpus)
    normalised = exact / exact.sum()
    np.testing.assert_allclose(normalised, sol, rtol=1e-6, atol=0)
    return corpus, normalised, sol


def test_bundled_problem_24():
    corpus, _, _ = check_problem(pautomac_path(24, "model"), pautomac_path(24, "test"),
                                 pautomac_path(24, "solution"))
    assert corpus.alphabet_size == 5
    train = read_sample(pautomac_path(24, "train"))
    assert (train.n_strings, train.alphabet_size) == (20_000, 5)


def test_problem_12_and_its_empty_string():
    corpus, normalised, sol = check_problem(_problem_12("model"), _problem_12("test"),
                                            _problem_12("solution"))
    empty = np.flatnonzero(corpus.lengths == 0)
    assert empty.size == 1  # test strings are distinct
    share = sol[empty[0]]
    assert 0.34 < share < 0.36  # ~35 % of the test mass is on the empty string
    assert normalised[empty[0]] == pytest.approx(share, rel=1e-6)


_PAUTOMAC = shared_data_path() / "pautomac"
PROBLEMS = sorted(int(p.name.split(".")[0]) for p in _PAUTOMAC.glob("*.pautomac_model.txt")) \
    if _PAUTOMAC.is_dir() else []


@pytest.mark.shared_data
@pytest.mark.parametrize("problem", PROBLEMS or [
    pytest.param(None, marks=pytest.mark.skip(reason=f"{_PAUTOMAC} not found (set BAYESFA_SHARED_DATA)"))])
def test_every_pautomac_problem(shared_data, problem):
    folder = shared_data / "pautomac"
    check_problem(pautomac_path(problem, "model", folder), pautomac_path(problem, "test", folder),
                  pautomac_path(problem, "solution", folder))


@pytest.mark.shared_data
def test_shared_folder_has_all_48_problems(shared_data):
    found = {int(p.name.split(".")[0]) for p in (shared_data / "pautomac").glob("*.pautomac_model.txt")}
    assert found == set(range(1, 49))


def test_pautomac_path_errors(tmp_path):
    with pytest.raises(InputError, match="not bundled"):
        pautomac_path(12, "test")
    with pytest.raises(ValueError, match="kind"):
        pautomac_path(24, "weights")
    with pytest.raises(InputError, match="no such file") as exc_info:
        pautomac_path(24, "test", tmp_path)
    assert str(tmp_path / "24.pautomac.test") in str(exc_info.value)



# -- the vectorised sample reader (issue 41 item 2) -------------------------------------------
def _line_by_line(text: str, alphabet: int) -> Corpus:
    """The reference: the file's lines split in Python (written apart from the parser)."""
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return Corpus.from_strings([[int(v) for v in ln.split()[1:]] for ln in lines[1:]], alphabet)


@settings(max_examples=150, deadline=None)
@given(strings=st.lists(st.lists(st.integers(0, 1234), max_size=12), max_size=30),
       crlf=st.booleans(), pad=st.sampled_from(["", " ", "\t", "  \t"]),
       tail=st.sampled_from(["", "\n", "\n\n", "\n \n"]), chunk=st.sampled_from([1, 7, 64, 1 << 22]))
def test_the_vectorised_reader_is_the_line_reader(strings, crlf, pad, tail, chunk):
    import bayesfa.pautomac as pa

    alphabet = 1235
    lines = [f"{len(strings)} {alphabet}"] + [pad + " ".join(map(str, [len(s), *s])) + pad for s in strings]
    text = ("\r\n" if crlf else "\n").join(lines) + tail
    old = pa._CHUNK_BYTES
    pa._CHUNK_BYTES = chunk  # chunks of whole lines, whatever their size
    try:
        fast = pa._read_sample_fast(text.encode())
    finally:
        pa._CHUNK_BYTES = old
    assert fast is not None
    assert fast == _line_by_line(text, alphabet)
    assert fast.n_strings == len(strings)  # every string, the empty ones included


@pytest.mark.parametrize("body", [
    "2 3\n1 0\n\n0\n",          # a blank line inside
    "2 3\n1 0\n2 0\n",          # a length field that disagrees
    "2 3\n1 0\n1 3\n",          # a symbol outside the alphabet
    "2 3\n1 0\n1 -1\n",         # a sign
    "2 3\n1 0\n1 x\n",          # not a number
    "3 3\n1 0\n0\n",            # fewer lines than the header says
    "2 3\n1 0\n1 1234567890\n",  # a value of ten digits
])
def test_anything_unusual_goes_to_the_line_reader(tmp_path, body):
    import bayesfa.pautomac as pa

    assert pa._read_sample_fast(body.encode()) is None
    path = tmp_path / "bad.pautomac.train"
    path.write_text(body)
    with pytest.raises(InputError, match=r"bad\.pautomac\.train(:[0-9]+)?: "):
        read_sample(path)
