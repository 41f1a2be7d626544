"""Property-based fuzzing of every file kind the CLI reads (issue 13, item 4).

Each test starts from a small well-formed file (a PAutomaC sample, a solution, a prediction, a
model file, and a run's ``manifest.json``, ``arrays.npz`` and ``trace.nc``), damages it
(random bytes, truncation, byte and character mutations, inserted or deleted bytes), runs the
command that reads it in-process (``bayesfa.cli.main``), and asserts one of two outcomes:

- exit 2 with exactly one line on stderr and no traceback, or
- exit 0 with the answer that is right for the damaged input, computed independently: a tiny
  reference parser written here (samples, solutions, model files: from the formats' definitions
  in :mod:`bayesfa.pautomac`'s docstring, with its own forward products and score), numpy and
  ``json`` for run files, ``h5py`` (not xarray) for the trace.

Never exit 0 with a wrong answer. When the reference parser accepts the file, the CLI must
accept it too (and get it right). Hypothesis runs derandomised with a bounded number of
examples per file kind (``MAX_EXAMPLES``), so CI sees the same inputs every time.
"""

from __future__ import annotations

import gc
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from bayesfa.cli import main
from bayesfa.pautomac import read_sample, write_sample

#: Examples per file kind in CI; ``BAYESFA_FUZZ_EXAMPLES=5000`` for a long hunt.
MAX_EXAMPLES = int(os.environ.get("BAYESFA_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
#: ``diagnose`` takes one to two seconds per readable trace (ArviZ): fewer examples there.
SLOW_FUZZ = settings(FUZZ, max_examples=max(1, MAX_EXAMPLES // 6))

# -- damage ---------------------------------------------------------------------------------
#: Characters that make text formats interesting: digits, signs, separators, line ends, the
#: model file's punctuation and section letters, float spellings.
INTERESTING = b"0123456789 \t\n\r-+.eE(),:IFSTinfa_x\x00\xff9"


def damaged(base: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, truncations and mutations of ``base``."""
    n = len(base)
    char = st.sampled_from(list(INTERESTING)) | st.integers(0, 255)

    def mutate(edits):
        out = bytearray(base)
        for kind, pos, byte in edits:
            pos = pos % (len(out) + 1)
            if kind == "set" and pos < len(out):
                out[pos] = byte
            elif kind == "insert":
                out[pos:pos] = bytes([byte])
            elif kind == "delete" and pos < len(out):
                del out[pos]
            elif kind == "repeat" and pos < len(out):
                out[pos:pos] = out[pos:pos + 8]
        return bytes(out)

    edits = st.lists(st.tuples(st.sampled_from(["set", "insert", "delete", "repeat"]),
                               st.integers(0, max(0, n)), char), min_size=1, max_size=6)
    return st.one_of(
        st.binary(max_size=64),
        st.integers(0, max(0, n - 1)).map(lambda k: base[:k]),
        edits.map(mutate),
        st.tuples(st.integers(0, max(0, n - 1)), edits).map(lambda a: mutate(a[1])[:a[0] + 1 + n // 2]),
    )


def run_cli(capsys, argv) -> tuple[int, str, str]:
    """``main(argv)`` in-process; also fails on an exception Python would print to stderr as
    "Exception ignored in ..." (a ``__del__`` failing once the command has returned)."""
    capsys.readouterr()
    ignored = []
    previous, sys.unraisablehook = sys.unraisablehook, ignored.append
    try:
        rc = main(argv)
        if rc and argv[0] == "diagnose":  # a half-open HDF5 file may wait in a cycle
            gc.collect()
    finally:
        sys.unraisablehook = previous
    assert not ignored, f"stderr would show 'Exception ignored': {ignored[0].exc_value!r}"
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    if rc != 0:
        assert rc == 2, (rc, err)
        assert err.startswith("bayesfa: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    return rc, out, err


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="bayesfa-fuzz-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# -- reference parsers (independent of bayesfa.pautomac) ------------------------------------------
INT = re.compile(r"[+-]?[0-9]+")
FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def ref_lines(data: bytes) -> list[str] | None:
    """ASCII text, CRLF/CR/LF line ends, trailing blank lines dropped; None if not text/empty."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines or None


def ref_sample(data: bytes):
    """``(alphabet_size, [strings])`` of a PAutomaC sample, or None if malformed."""
    lines = ref_lines(data)
    if lines is None:
        return None
    head = lines[0].split()
    if len(head) != 2 or not all(INT.fullmatch(t) for t in head):
        return None
    count, alphabet = int(head[0]), int(head[1])
    body = lines[1:]
    if count < 0 or alphabet < 1 or len(body) != count or any(not b.strip() for b in body):
        return None
    strings = []
    for line in body:
        tokens = line.split()
        if not all(INT.fullmatch(t) for t in tokens):
            return None
        values = [int(t) for t in tokens]
        if values[0] != len(values) - 1 or any(not 0 <= v < alphabet for v in values[1:]):
            return None
        strings.append(values[1:])
    return alphabet, strings


def ref_probability(token: str) -> float | None:
    if not FLOAT.fullmatch(token):
        return None
    value = float(token)
    return value if 0 <= value <= 1 + 1e-6 else None


def ref_solution(data: bytes) -> list[float] | None:
    lines = ref_lines(data)
    if lines is None:
        return None
    head = lines[0].split()
    if len(head) != 1 or not INT.fullmatch(head[0]) or int(head[0]) < 0:
        return None
    body = lines[1:]
    if len(body) != int(head[0]):
        return None
    out = []
    for line in body:
        tokens = line.split()
        if len(tokens) != 1 or ref_probability(tokens[0]) is None:
            return None
        out.append(ref_probability(tokens[0]))
    return out


SECTIONS = {"I": 1, "F": 1, "S": 2, "T": 3}
TOO_BIG = "too big"


def ref_model(data: bytes):
    """``(init [Q], trans [A][Q][Q], stop [Q])`` as nested lists from a PAutomaC model file
    (``trans[a][q][r] = (1 - F(q)) S(q, a) T(q, a, r)``, renormalised), or None."""
    lines = ref_lines(data)
    if lines is None:
        return None
    entries = {k: {} for k in SECTIONS}
    section = None
    for raw in lines:
        text = raw.strip()
        if not text:
            continue
        head = re.match(r"^([A-Za-z]+)\s*:", text)
        if head:
            section = head.group(1)
            if section not in SECTIONS:
                return None
            continue
        m = re.match(r"^\(([^()]*)\)\s+(\S+)$", text)
        if section is None or not m:
            return None
        fields = [f.strip() for f in m.group(1).split(",")]
        if len(fields) != SECTIONS[section] or not all(INT.fullmatch(f) for f in fields):
            return None
        key = tuple(int(f) for f in fields)
        p = ref_probability(m.group(2))
        if min(key) < 0 or key in entries[section] or p is None:
            return None
        entries[section][key] = p
    I, F, S, T = (entries[k] for k in "IFST")
    if not I or not S or not T:
        return None
    known = {k[0] for k in S} | {k[0] for k in F}
    if any(q not in known for q in [k[0] for k in I] + [k[0] for k in T] + [k[2] for k in T]):
        return None
    n = 1 + max(known | {k[0] for k in I})
    letters = 1 + max(k[1] for k in S)
    if n * letters * n > 10**6:
        return TOO_BIG  # state numbers spread out: too big a dense model to check here
    init = [I.get((q,), 0.0) for q in range(n)]
    stop = [F.get((q,), 0.0 if q in known else 1.0) for q in range(n)]
    if abs(sum(init) - 1) > 1e-6:
        return None
    for q in known:
        if stop[q] < 1 - 1e-6 and abs(sum(S.get((q, a), 0.0) for a in range(letters)) - 1) > 1e-6:
            return None
    for (q, a), p in S.items():
        if p > 0 and abs(sum(T.get((q, a, r), 0.0) for r in range(n)) - 1) > 1e-6:
            return None
    trans = [[[(1 - stop[q]) * S.get((q, a), 0.0) * (T.get((q, a, r), 0.0) if (q, a) in S else 0.0)
               for r in range(n)] for q in range(n)] for a in range(letters)]
    total_init = sum(init)
    init = [x / total_init for x in init]
    for q in range(n):
        out = stop[q] + sum(trans[a][q][r] for a in range(letters) for r in range(n))
        stop[q] /= out
        for a in range(letters):
            for r in range(n):
                trans[a][q][r] /= out
    return init, trans, stop


def ref_prob(model, string) -> float:
    """``init . trans[x1] ... trans[xn] . stop`` by plain products (0 for unknown letters)."""
    init, trans, stop = model
    vec = np.array(init)
    for a in string:
        if a >= len(trans):
            return 0.0
        vec = vec @ np.array(trans[a])
    return float(vec @ np.array(stop))


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300)


# -- the well-formed starting points ----------------------------------------------------------------
MODEL = b"""I: (state)
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
SAMPLE = b"5 2\n0\n1 0\n2 0 1\n3 1 0 0\n1 1\n"
SOLUTION = b"4\n0.25\n0.125\n0.5\n0.125\n"
PREDICTION = b"4\n0.2\n0.2\n0.4\n0.2\n"


# -- samples and model files: bayesfa prob ------------------------------------------------------------
def _check_prob(capsys, workdir, model_bytes: bytes, sample_bytes: bytes):
    model, test = workdir / "m.txt", workdir / "t.test"
    model.write_bytes(model_bytes)
    test.write_bytes(sample_bytes)
    out = workdir / "pred.txt"
    out.unlink(missing_ok=True)
    rc, _, err = run_cli(capsys, ["prob", str(model), str(test), "--out", str(out)])
    assert rc == 0 or str(model) in err or str(test) in err, err  # the line names the file
    ref_m, ref_s = ref_model(model_bytes), ref_sample(sample_bytes)
    if ref_m is TOO_BIG:
        return  # either outcome: bayesfa refuses it only when it exceeds the memory
    if ref_m is None or ref_s is None:
        assert rc == 2, "exit 0 on a file the reference parser refuses"
        return
    assert rc == 0, "refused a well-formed file"
    got = ref_solution(out.read_bytes())
    assert got is not None and len(got) == len(ref_s[1])
    for value, string in zip(got, ref_s[1]):
        assert close(value, ref_prob(ref_m, string)), (value, string)


@FUZZ
@given(data=damaged(SAMPLE))
@example(data=b"3 99999999999\n0\n1 1\n1 77777\n")  # was a MemoryError traceback (issue 13)
def test_fuzz_sample_file(capsys, workdir, data):
    _check_prob(capsys, workdir, MODEL, data)


@FUZZ
@given(data=damaged(MODEL))
@example(data=MODEL.replace(b"(1,0) 1.0", b"(1,0) 1.0\n(99999999,0) 1.0"))  # hung, then MemoryError
def test_fuzz_model_file(capsys, workdir, data):
    _check_prob(capsys, workdir, data, SAMPLE)


# -- solutions and predictions: bayesfa score --json ---------------------------------------------
def ref_score_exact(pred_bytes: bytes, sol_bytes: bytes):
    """``(score, min_score)`` of Eq. 19 in decimal arithmetic from the files' texts (a
    probability such as ``1e-400``, below float64's range, is the positive number it is), or
    None where the reference refuses the files."""
    import decimal

    p, s = ref_solution(pred_bytes), ref_solution(sol_bytes)
    if p is None or s is None or len(p) != len(s):
        return None
    ctx = decimal.Context(prec=40)

    def exact(data):
        return [ctx.create_decimal(line.split()[0]) for line in ref_lines(data)[1:]]

    p, s = exact(pred_bytes), exact(sol_bytes)
    if not sum(p) > 0 or not sum(s) > 0:
        return None

    def score(pred):
        zp, zs = sum(pred), sum(s)
        total = decimal.Decimal(0)
        for a, b in zip(pred, s):
            if b > 0:
                if a == 0:
                    return math.inf
                total += ctx.divide(b, zs) * ctx.ln(ctx.divide(a, zp))
        return math.exp(-float(total))  # 2 ** (-sum p log2 q) = e ** (-sum p ln q)

    return score(p), score(s)


def _check_score(capsys, workdir, pred_bytes: bytes, sol_bytes: bytes):
    pred, sol = workdir / "pred.txt", workdir / "sol.txt"
    pred.write_bytes(pred_bytes)
    sol.write_bytes(sol_bytes)
    rc, out, err = run_cli(capsys, ["score", "--json", str(pred), str(sol)])
    assert rc == 0 or str(pred) in err or str(sol) in err, err  # the line names the file
    ref = ref_score_exact(pred_bytes, sol_bytes)
    if ref is None:
        assert rc == 2, "exit 0 on input the reference refuses"
        return
    assert rc == 0, "refused well-formed input"
    result = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    expected, best = ref
    assert close(result["min_score"], best)
    if math.isinf(expected):
        assert result["score"] is None and result["score_note"].startswith("infinite")
    else:
        assert close(result["score"], expected) and close(result["ratio"], expected / best)


@FUZZ
@given(data=damaged(PREDICTION))
@example(data=b"4\n1e-400\n0\n0\n0\n")  # positive, below float64's range (was: all zero, named no file)
@example(data=b"4\n0\n0\n0\n0\n")  # all zero: one line naming the file
def test_fuzz_prediction_file(capsys, workdir, data):
    _check_score(capsys, workdir, data, SOLUTION)


@FUZZ
@given(data=damaged(SOLUTION))
def test_fuzz_solution_file(capsys, workdir, data):
    _check_score(capsys, workdir, PREDICTION, data)


# -- run files: bayesfa predict and diagnose --json -------------------------------------------------
@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    """A small cgs-pfa run, its files' bytes, and its prediction of SAMPLE."""
    from bayesfa.datasets import pautomac_path

    base = tmp_path_factory.mktemp("fuzzrun")
    train = base / "train"
    write_sample(train, read_sample(pautomac_path(24, "train")).subset(range(50)))
    test = base / "test"
    test.write_bytes(b"3 5\n0\n2 1 4\n1 3\n")
    run = base / "run"
    assert main(["fit", str(train), "--method", "cgs-pfa", "--states", "2", "--iterations", "8",
                 "--burn-in", "4", "--period", "2", "--chains", "2", "--seed", "1", "--out", str(run),
                 "--quiet"]) == 0
    assert main(["predict", str(run), str(test), "--out", str(base / "pred")]) == 0
    files = {name: (run / name).read_bytes() for name in ("manifest.json", "arrays.npz", "trace.nc")}
    return RunFiles((run, test, files, ref_solution((base / "pred").read_bytes())))


class RunFiles(tuple):
    """``(run, test, files, prediction)``, with a short repr for Hypothesis' reports."""

    def __repr__(self) -> str:
        return f"RunFiles({self[0]})"


def _fresh_run(workdir: Path, files: dict[str, bytes], name: str, data: bytes) -> Path:
    run = workdir / "run"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    for fname, content in files.items():
        (run / fname).write_bytes(data if fname == name else content)
    return run


def _strict(text: str):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def ref_fingerprint(manifest: dict) -> str:
    """The manifest's fingerprint from its definition (:mod:`bayesfa.rundir` docstring):
    SHA-256 of the compact, key-sorted, ASCII JSON of every key but ``fingerprint``."""
    import hashlib

    body = {k: v for k, v in manifest.items() if k != "fingerprint"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=True).encode()).hexdigest()


def _bound(manifest, name: str, data: bytes) -> bool:
    """Whether a run's manifest is intact (its fingerprint) and records ``data`` as ``name``."""
    import hashlib

    return (isinstance(manifest, dict) and manifest.get("fingerprint") == ref_fingerprint(manifest)
            and isinstance(manifest.get("files"), dict)
            and manifest["files"].get(name) == hashlib.sha256(data).hexdigest())


def _expected_prediction(files, manifest_bytes: bytes, arrays_bytes: bytes, test: Path, original):
    """The right output of ``predict`` for these (possibly damaged) run files, or None when
    they cannot give one (the CLI must then exit 2): the manifest must match its fingerprint
    and record these arrays' SHA-256 (issue 26: a damaged, edited or swapped file is refused)."""
    from bayesfa.methods import get_method, method_names

    try:
        manifest = json.loads(manifest_bytes.decode("utf-8"), parse_constant=lambda c: 1 / 0)
        with np.load(io.BytesIO(arrays_bytes), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception:  # noqa: BLE001 - the reference decides only "readable or not"
        return None
    if not _bound(manifest, "arrays.npz", arrays_bytes):
        return None
    same_arrays = arrays.keys() == {"counts"} and np.array_equal(
        arrays["counts"], np.load(io.BytesIO(files["arrays.npz"]))["counts"])
    base = json.loads(files["manifest.json"])
    keys = ("format", "method", "options")
    if same_arrays and isinstance(manifest, dict) and all(manifest.get(k) == base[k] for k in keys) \
            and manifest.get("train") == base["train"]:
        return original
    # an edited but readable run: what its method computes from its arrays, if anything sane
    if not isinstance(manifest, dict) or manifest.get("format") != base["format"] or \
            manifest.get("method") not in method_names() or not isinstance(manifest.get("options"), dict):
        return None
    train = manifest.get("train", base["train"])
    # the training facts that prediction reads (the path, the SHA-256 and the counts of the
    # training file only describe it): the reference keeps to runs where these are untouched
    used = ("format", "alphabet_size", "alphabet")
    if not isinstance(train, dict) or any(train.get(k) != base["train"].get(k) for k in used):
        return None
    train = base["train"]
    corpus = read_sample(test).with_alphabet(train["alphabet_size"])
    try:
        with np.errstate(all="ignore"):
            logp = get_method(manifest["method"]).predict_log_prob(arrays, manifest["options"], corpus)
    except Exception:  # noqa: BLE001
        return None
    logp = np.asarray(logp, dtype=float)
    if logp.shape != (corpus.n_strings,) or np.isnan(logp).any() or (logp > 1e-9).any():
        return None
    return list(np.exp(np.minimum(logp, 0.0)))


@FUZZ
@given(name=st.sampled_from(["manifest.json", "arrays.npz"]), data=st.data())
def test_fuzz_run_files_predict(capsys, workdir, run_files, name, data):
    _, test, files, original = run_files
    damaged_bytes = data.draw(damaged(files[name]))
    run = _fresh_run(workdir, files, name, damaged_bytes)
    out = workdir / "pred"
    out.unlink(missing_ok=True)
    rc, _, err = run_cli(capsys, ["predict", str(run), str(test), "--out", str(out)])
    manifest_bytes = damaged_bytes if name == "manifest.json" else files["manifest.json"]
    arrays_bytes = damaged_bytes if name == "arrays.npz" else files["arrays.npz"]
    expected = _expected_prediction(files, manifest_bytes, arrays_bytes, test, original)
    if rc == 2:
        assert expected is None, f"refused run files the reference reads: {err}"
        assert str(run) in err
        return
    assert expected is not None, "exit 0 on run files the reference cannot read"
    got = ref_solution(out.read_bytes())
    assert got is not None and all(close(a, b) for a, b in zip(got, expected)) and len(got) == len(expected)


def _variables(summary: dict) -> dict:
    """The per-variable rows of ``diagnose --json`` (under ``"variables"`` when the output
    also carries a verdict)."""
    return summary["variables"] if "variables" in summary else summary


def _h5_means(data: bytes) -> dict[str, float] | None:
    """Means of the ``(chain, draw)`` variables of a trace.nc read with h5py (not xarray)."""
    import h5py

    try:
        with h5py.File(io.BytesIO(data), "r") as f:
            group = f["posterior"]
            out = {}
            for name, ds in group.items():
                if name in ("chain", "draw"):
                    continue
                values = np.asarray(ds[()], dtype=np.float64)
                fill = ds.attrs.get("_FillValue")
                if fill is not None:
                    values = np.where(values == np.asarray(fill).reshape(-1)[0], np.nan, values)
                if values.ndim != 2 or 0 in values.shape:
                    return None
                out[name] = float(np.mean(values))
            return out or None
    except Exception:  # noqa: BLE001 - unreadable is the reference's answer
        return None


@SLOW_FUZZ
@given(data=st.data())
def test_fuzz_trace_file_diagnose(capsys, workdir, run_files, data):
    _, _, files, _ = run_files
    damaged_bytes = data.draw(damaged(files["trace.nc"]))
    run = _fresh_run(workdir, files, "trace.nc", damaged_bytes)
    (run / "arrays.npz").unlink()  # diagnose needs only manifest.json and trace.nc
    rc, out, err = run_cli(capsys, ["diagnose", "--json", str(run)])
    expected = _h5_means(damaged_bytes)
    intact = _bound(json.loads(files["manifest.json"]), "trace.nc", damaged_bytes)
    if rc == 2:
        assert str(run / "trace.nc") in err
        assert not intact, f"refused the trace its manifest records: {err}"
        return
    assert intact, "exit 0 on a trace that is not the one the manifest records"
    assert expected is not None, "exit 0 on a trace h5py cannot read"
    result = _variables(_strict(out))
    assert set(result) == set(expected)
    for name, mean in expected.items():
        if math.isfinite(mean):
            assert close(result[name]["mean"], mean)
        else:
            assert result[name]["mean"] is None and result[name]["mean_note"]


@SLOW_FUZZ
@given(data=st.data())
def test_fuzz_manifest_diagnose(capsys, workdir, run_files, data):
    _, _, files, _ = run_files
    damaged_bytes = data.draw(damaged(files["manifest.json"]))
    run = _fresh_run(workdir, files, "manifest.json", damaged_bytes)
    rc, out, err = run_cli(capsys, ["diagnose", "--json", str(run)])
    if rc == 2:
        assert str(run) in err
        return
    manifest = _strict(damaged_bytes.decode("utf-8"))  # exit 0: the manifest must be JSON
    assert manifest["format"] == "bayesfa-run/1" and isinstance(manifest["method"], str)
    assert _bound(manifest, "trace.nc", files["trace.nc"])  # and intact
    assert set(_variables(_strict(out))) == set(_h5_means(files["trace.nc"]))


def test_reference_parsers_accept_the_starting_points():
    """The fuzz tests mean something only if the well-formed files pass the references."""
    assert ref_sample(SAMPLE) == (2, [[], [0], [0, 1], [1, 0, 0], [1]])
    assert ref_solution(SOLUTION) == [0.25, 0.125, 0.5, 0.125]
    model = ref_model(MODEL)
    assert close(ref_prob(model, []), 0.0)  # state 0 never stops
    assert close(ref_prob(model, [0]), 0.5 * 0.75 * 0.5)
    assert ref_model(MODEL.replace(b"(1) 0.5", b"(1) 0.25")) is not None  # F changes nothing else
    assert ref_model(MODEL.replace(b"(0,1) 0.5", b"(0,1) 0.4")) is None  # S of 0 sums to 0.9


# -- every command and option: no user file changes (issue 26, item 7) -----------------------------
#: The user's own files in the workspace: no command may change, replace or remove one.
USER_FILES = ("train.txt", "test.txt", "model.txt", "sol.txt", "notes.txt", "mine/trace.png",
              "mine/rank.png", "mine/alice.train", "mine/selection.txt", "mine/pred.txt")
#: Examples of the command fuzz in CI (each runs a command: fits are tiny, a few are slower).
COMMAND_FUZZ = settings(FUZZ, max_examples=max(1, MAX_EXAMPLES * 3 // 4))
UMASK = 0o027  # not the usual 022, so that "follows the umask" is tested, not assumed


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A user's folder: data files, a folder of their own files, three bayesfa runs (a
    sampler, an optimiser, an automaton) and a prediction bayesfa wrote (``ours.txt``)."""
    from bayesfa.datasets import pautomac_path

    ws = tmp_path_factory.mktemp("workspace")
    write_sample(ws / "train.txt", read_sample(pautomac_path(24, "train")).subset(range(40)))
    write_sample(ws / "test.txt", read_sample(pautomac_path(24, "test")).subset(range(5)))
    (ws / "model.txt").write_bytes(MODEL)
    (ws / "sol.txt").write_bytes(b"5\n0.2\n0.2\n0.2\n0.2\n0.2\n")
    (ws / "notes.txt").write_text("my notes\n")
    (ws / "mine").mkdir()
    for name in USER_FILES:
        if name.startswith("mine/"):
            (ws / name).write_text(f"the user's own {name}\n")
    train = str(ws / "train.txt")
    for run, method in (("run", ["cgs-pfa", "--states", "2", "--iterations", "6", "--burn-in", "2",
                                 "--period", "1", "--chains", "2"]),
                        ("cvrun", ["cvb0", "--states", "2", "--iterations", "3"]),
                        ("emrun", ["estatemerge"])):
        assert main(["fit", train, "--method", *method, "--out", str(ws / run), "--quiet"]) == 0
    assert main(["predict", str(ws / "run"), str(ws / "test.txt"), "--out", str(ws / "ours.txt")]) == 0
    return ws


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """``relative path -> (sha256 or "dir", mode)`` of everything under ``root``."""
    import hashlib

    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        mode = p.lstat().st_mode & 0o777
        out[rel] = ("dir", mode) if p.is_dir() else (hashlib.sha256(p.read_bytes()).hexdigest(), mode)
    return out


INTS = ["-1", "0", "1", "2", "3", "x", "", "1.5", "+2"]
SEEDS = ["-1", "-9223372036854775809", "0", "7", "9223372036854775807", "9223372036854775808",
         "1e3", "x"]
#: Paths a user might give (relative to the workspace; "-", "" and "/" literal).
PATHS = ["train.txt", "test.txt", "model.txt", "sol.txt", "notes.txt", "mine", "mine/trace.png",
         "mine/pred.txt", "mine/alice.train", "ours.txt", "run", "cvrun", "emrun", "new.txt",
         "newdir", "newdir/x.txt", "missing/x.txt", "notes.txt/x", "-", "", "."]
RUNS = ["run", "cvrun", "emrun", "mine", "missing", "train.txt"]


@st.composite
def command_lines(draw, ws: Path):
    """A command line of any command (but ``validate`` and ``pautomac run``) with options
    drawn from values a user might type, good and bad."""
    def path(choices=PATHS, good=None):
        """Mostly ``good`` (so that most commands get as far as writing), else anything."""
        p = draw(st.sampled_from(good) if good and draw(st.integers(0, 3)) else st.sampled_from(choices))
        return p if p in ("-", "") else str(ws / p)

    sample, test = ["train.txt", "test.txt"], ["test.txt"]

    def opt(name, values):
        return [name, draw(st.sampled_from(values))] if draw(st.booleans()) else []

    def val(values, good):
        return draw(st.sampled_from(good) if draw(st.integers(0, 2)) else st.sampled_from(values))

    out_file, out_dir = ["new.txt", "ours.txt", "-"], ["newdir", "run", "."]

    command = draw(st.sampled_from(["prob", "score", "fit", "predict", "perplexity", "diagnose",
                                    "select", "export", "data", "sample", "decode"]))
    if command == "prob":
        return ["prob", path(good=["model.txt"]), path(good=test), "--out", path(good=out_file)]
    if command == "score":
        return (["score", path(good=["sol.txt", "ours.txt"]), path(good=["sol.txt"])]
                + (["--json"] if draw(st.booleans()) else []))
    if command in ("predict", "perplexity"):
        argv = [command, path(RUNS, RUNS[:3]), path(good=test)]
        if command == "predict":
            argv += ["--out", path(good=out_file)]
        return argv + (["--map"] if draw(st.booleans()) else []) + opt("--format", ["pautomac", "lines"])
    if command == "sample":
        return (["sample", path(RUNS, RUNS[:3]), val(INTS, ["3"]), "--out", path(good=out_file)]
                + opt("--seed", SEEDS))
    if command == "decode":
        return (["decode", path(RUNS, RUNS[:3]), path(good=test), "--out", path(good=out_file)]
                + opt("--format", ["pautomac", "lines"]))
    if command == "diagnose":
        return (["diagnose", path(RUNS, RUNS[:2])] + (["--json"] if draw(st.booleans()) else [])
                + (["--plot", path(good=["newdir", "mine", "."])] if draw(st.booleans()) else []))
    if command == "export":
        return ["export", path(RUNS, ["emrun"]), "--format", draw(st.sampled_from(["pautomac", "dot"])),
                "--out", path(good=out_file)] + opt("--max-edges", INTS)
    if command == "data":
        name = draw(st.sampled_from(["alice", "dna"]))
        resplit = name == "alice" and draw(st.booleans())
        return (["data", name, "--out", path(good=out_dir + ["mine"])] + (["--resplit"] if resplit else [])
                + (opt("--seed", SEEDS) if resplit or not draw(st.integers(0, 3)) else [])
                + (["--fasta", path()] if not draw(st.integers(0, 3)) else []))
    if command == "select":
        return (["select", path(good=sample), "--method", "cgs-pfa", "--quiet", "--chains", "1",
                 "--states", val(["2", "2,3", "0", "x"], ["2", "2,3"]), "--beta", "0.1",
                 "--folds", val(["2", "1", "-2"], ["2"]),
                 "--iterations", val(["3", "2", "0"], ["3"]), "--burn-in", "1",
                 "--period", "1", "--out", path(good=["newdir", "mine", "run"])] + opt("--seed", SEEDS))
    return draw(fit_lines(ws, draw(st.sampled_from(FIT_METHODS))))


#: What ``fit_lines`` draws for ``--method`` (``cgs-pfa --auto``: cgs-pfa with ``--auto --budget``).
FIT_METHODS = ("cgs-pfa", "cgs-pfa --auto", "cgs-sg", "cgs-hmm", "cvb0", "gcvb0", "cvb2", "hpyp",
               "ipfa", "estatemerge")
FRACTIONS = ["0", "0.1", "0.5", "1", "1.5", "-0.1", "nan", "x"]  # --holdout: [0, 1)
SECONDS = ["0", "0.01", "5", "-1", "inf", "nan", "x"]  # --checkpoint-every: finite, >= 0
REALS = ["0.5", "1", "2", "0", "-1", "inf", "x"]
PRIORS = ["1,1", "2,0.5", "fixed", "0,1", "1", "x"]  # ipfa's --alpha-prior / --gamma-prior


@st.composite
def fit_lines(draw, ws: Path, method: str):
    """A ``fit`` command line of ``method`` with its options and the execution options every
    fit shares (``--seed``, ``--force``, ``--predict``, ``--max-draws``, and ``--holdout`` /
    ``--checkpoint-every`` where the method has them, and where it has not: refused), drawn
    from values a user might type, good and bad. Sizes stay tiny (at most 6 sweeps, 2
    states, one chain, ``--auto --budget`` of at most 1 CPU second): every fit is quick.
    Half the lines are careful (every value a good one, so that the fit runs and writes);
    in the others each value is anything, a bad one a third of the time."""
    careful = draw(st.booleans())

    def good_one() -> bool:
        return careful or draw(st.integers(0, 2)) > 0

    def path(good):
        p = draw(st.sampled_from(good if good_one() else PATHS))
        return p if p in ("-", "") else str(ws / p)

    def val(values, good):
        return draw(st.sampled_from(good if good_one() else values))

    def opt(name, values, good=None, has=True):
        """``name`` and a value half the time; an option the method refuses (``has`` False)
        never in a careful line."""
        if (careful and not has) or not draw(st.booleans()):
            return []
        return [name, val(values, good or values)]

    def flag(name):
        return [name] if draw(st.booleans()) else []

    name = method.split()[0]
    out = path(["newdir", "run"])
    argv = (["fit", path(["train.txt"]), "--method", name, "--out", out, "--quiet"]
            + opt("--seed", SEEDS, ["0", "7"])
            + (["--force"] if careful and out.endswith("run") else flag("--force"))
            + (["--predict", path(["test.txt"])] if not draw(st.integers(0, 2)) else [])
            + opt("--max-draws", INTS, ["1", "2"], has=name in ("cgs-pfa", "ipfa"))
            + opt("--holdout", FRACTIONS, ["0", "0.1"], has=name not in ("ipfa", "estatemerge"))
            + opt("--checkpoint-every", SECONDS, ["0", "0.01"], has=name != "estatemerge"))
    sweeps = ["--iterations", val(INTS, ["3", "6"]), "--burn-in", val(INTS, ["2"]), "--period", "1"]
    if method == "cgs-pfa --auto":
        auto = ["--auto"] if careful or draw(st.integers(0, 3)) else ["--states", "2", *sweeps]
        budget = ["--budget", "1"] if careful else opt("--budget", ["0.2", "0", "-1", "inf", "x"], ["1"])
        argv += ["--chains", "1", *auto, *budget]  # at most 1 CPU second
    elif name in ("cgs-pfa", "cgs-sg", "cgs-hmm", "ipfa"):
        argv += ["--states", val(["0", "-1", "x"], ["2"]), "--chains", "1", *sweeps]
        if name == "cgs-sg":
            argv += opt("--graph-interval", INTS, ["1", "2"])
        elif name == "cgs-hmm":
            argv += opt("--alpha", REALS, ["0.5"])
        elif name == "ipfa":  # --truncate L > 0 wants --gamma-prior fixed
            argv += (opt("--alpha", REALS, ["0.5", "2"]) + opt("--gamma", REALS, ["0.5", "2"])
                     + opt("--alpha-prior", PRIORS, ["1,1", "fixed"])
                     + opt("--gamma-prior", PRIORS, ["1,1", "fixed"])
                     + opt("--truncate", ["0", "3", "-1", "x"], ["0"]))
    elif name in ("cvb0", "gcvb0", "cvb2"):
        argv += (["--states", val(["0", "x"], ["2"]), "--iterations", val(INTS, ["3"])]
                 + opt("--tol", ["1e-3", "0", "-1", "nan", "x"], ["1e-3"]) + opt("--beta", REALS, ["0.1"]))
    elif name == "hpyp":
        argv += (["--order", val(["0", "1", "-1", "9", "x"], ["2", "3"]), *sweeps]
                 + opt("--discount", ["0.5", "0", "1", "-0.1", "x"], ["0.5"])
                 + opt("--concentration", REALS, ["1"]) + opt("--chains", ["1", "2", "0"], ["1", "2"])
                 + flag("--sequence"))
    else:
        argv += opt("--states", INTS, has=False)  # estatemerge has no --states: refused, pointing to its help
    return argv


def _last(argv: list[str], option: str) -> str | None:
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == option]
    return values[-1] if values else None


def _fraction_ok(text: str) -> bool:
    try:
        return 0 <= float(text) < 1
    except ValueError:
        return False


def _seconds_ok(text: str) -> bool:
    try:
        return 0 <= float(text) < math.inf
    except ValueError:
        return False


def _check_command(capsys, workspace: Path, lines) -> None:
    """Run the command line ``lines(ws)`` draws in a copy ``ws`` of the workspace and check:
    exit 0, or one line and exit 2 (never a traceback); a negative or out-of-range --seed,
    a --holdout outside [0, 1) and a --checkpoint-every that is not a finite number of
    seconds always exit 2; the user's files never change; a file changes only where the
    command writes (its --out, --plot, and the ledger of the folder it writes into); every
    file or folder it creates follows the umask; a fit that exits 0 leaves a whole run
    (its manifest records every file, --predict's predictions too)."""
    ws = Path(tempfile.mkdtemp(prefix="bayesfa-ws-"))
    try:
        shutil.copytree(workspace, ws, dirs_exist_ok=True)
        argv = lines(ws)
        argv = [a.replace(str(workspace), str(ws)) for a in argv]
        before = _tree(ws)
        capsys.readouterr()
        old_umask, old_cwd = os.umask(UMASK), os.getcwd()
        os.chdir(ws)  # every path is absolute; if one were not, it would land in the copy
        try:
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse: a bad option
                rc = exc.code
        finally:
            os.umask(old_umask)
            os.chdir(old_cwd)
        out, err = capsys.readouterr()
        assert "Traceback" not in err + out
        assert rc in (0, 2), (rc, err)
        event(f"{argv[0]} {_last(argv, '--method') or ''} exit {rc}")
        if rc == 2:
            assert err.count("\n") == 1 and " error: " in err.splitlines()[0], err
        seed = _last(argv, "--seed")
        if seed is not None and not (seed.isdigit() and int(seed) < 2**63):
            assert rc == 2, err  # refused at parse time (this or another bad option)
        for option, ok in (("--holdout", _fraction_ok), ("--checkpoint-every", _seconds_ok)):
            value = _last(argv, option)
            if value is not None and not ok(value):
                assert rc == 2, f"{argv}: exit 0 with {option} {value}"
        after = _tree(ws)
        for name in USER_FILES:
            assert after.get(name) == before[name], f"{argv}: changed the user's {name}"
        targets = [Path(v) for v in (_last(argv, "--out"), _last(argv, "--plot")) if v not in (None, "", "-")]
        allowed = set()
        for t in targets:
            allowed |= {t, t.parent / ".bayesfa-written.json", t.parent / f".{t.name}.bayesfa-new"}
        for rel in set(before) | set(after):
            if before.get(rel) == after.get(rel):
                continue
            p = ws / rel
            new_parent = rel not in before and after[rel][0] == "dir" and any(p in t.parents for t in targets)
            assert new_parent or any(p == a or a in p.parents for a in allowed), f"{argv} changed {rel}"
            if rel not in before and rel in after:
                kind, mode = after[rel]
                expected = (0o777 if kind == "dir" else 0o666) & ~UMASK
                assert mode == expected, f"{argv}: {rel} created with mode {oct(mode)}, umask {oct(UMASK)}"
        if argv[0] == "fit" and rc == 0:
            manifest = json.loads((targets[0] / "manifest.json").read_text())
            assert _bound(manifest, "arrays.npz", (targets[0] / "arrays.npz").read_bytes())
            assert ("predictions.npz" in manifest["files"]) == ("--predict" in argv), argv
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@COMMAND_FUZZ
@given(data=st.data())
def test_fuzz_every_command_leaves_user_files_alone(capsys, workspace, data):
    """Any command line of any command (fit of any method): see :func:`_check_command`."""
    _check_command(capsys, workspace, lambda ws: data.draw(command_lines(ws)))


#: Examples per method of the fit fuzz in CI (a fit of each method, tiny: about 0.1 s each
#: once compiled).
FIT_FUZZ = settings(FUZZ, max_examples=max(1, MAX_EXAMPLES // 8))


@pytest.mark.parametrize("method", FIT_METHODS)
@FIT_FUZZ
@given(data=st.data())
def test_fuzz_fit_of_every_method_leaves_user_files_alone(capsys, workspace, method, data):
    """``fit --method METHOD`` with its options and the shared ones (``--holdout``,
    ``--checkpoint-every``, ``--max-draws``, ``--predict``, ``--auto --budget``): each method
    drawn as often, whatever the command fuzz happens to draw. See :func:`_check_command`."""
    _check_command(capsys, workspace, lambda ws: data.draw(fit_lines(ws, method)))
