"""PAutomaC file formats: samples, solutions and model files (reading and writing).

- Sample (``*.pautomac.train``, ``*.pautomac.test``): first line ``<count> <alphabet size>``,
  then one string a line, ``<length> s1 ... s_length``; the empty string is the line ``0``.
- Solution (``*.pautomac_solution.txt``): first line ``<count>``, then one probability a line.
- Model (``*.pautomac_model.txt``): sections ``I: (state)``, ``F: (state)``,
  ``S: (state,symbol)`` and ``T: (state,symbol,state)``, one ``(…) p`` entry a line. In state
  q the machine stops with probability F(q); otherwise it emits a with probability S(q,a) and
  moves to r with probability T(q,a,r): ``trans[a, q, r] = (1 - F(q)) S(q,a) T(q,a,r)``.

Files may have CRLF line endings. Every malformed input raises :class:`InputError` naming
the file, the line and the problem.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np

from bayesfa.automata import HMM, PDFA, PFA, classify
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

_TOL = 1e-6


def _read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes; a missing or unreadable file is an :class:`InputError`."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None


def _read_lines(path: str | os.PathLike, raw: bytes | None = None) -> list[str]:
    """The file's lines without line endings; trailing blank lines dropped."""
    if raw is None:
        raw = _read_bytes(path)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise InputError("not a text file (non-ASCII byte)", path, line) from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise InputError("file is empty", path, 1)
    return lines


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _int(token: str, path, line: int, what: str) -> int:
    # Not int() alone: it also reads "1_0" as 10.
    if not _INTEGER.fullmatch(token):
        raise InputError(f"non-numeric {what} {token!r}", path, line)
    return int(token)


def _probability(token: str, path, line: int) -> float:
    try:
        if "_" in token:  # float() reads "0.1_5" as 0.15
            raise ValueError(token)
        value = float(token)
    except ValueError:
        raise InputError(f"non-numeric probability {token!r}", path, line) from None
    if math.isnan(value):
        raise InputError("probability is NaN", path, line)
    if math.isinf(value):
        raise InputError("probability is infinite", path, line)
    if value < 0:
        raise InputError(f"negative probability {token}", path, line)
    if value > 1 + _TOL:
        raise InputError(f"probability {token} is greater than 1", path, line)
    return value


_LOG10 = math.log(10.0)


def _log_probability(token: str, path, line: int) -> float:
    """Natural log of a probability written in ``token`` (checked by :func:`_probability`),
    without underflow: ``1.5e-400`` gives ``log(1.5) - 400 log(10)``, not ``log(0)``."""
    value = _probability(token, path, line)
    if value > 0 and value >= 1e-300:
        return math.log(value)
    mantissa, sep, exponent = token.lower().partition("e")
    try:
        m = float(mantissa)
        e = int(exponent) if sep else 0
    except ValueError:
        return math.log(value) if value > 0 else -math.inf
    return math.log(m) + e * _LOG10 if m > 0 else -math.inf


def format_log_prob(log_prob: float) -> str:
    """A probability given by its natural log, written in decimal without underflow (17
    significant digits, like ``repr`` of a float64 where that is representable)."""
    if log_prob == -math.inf:
        return "0.0"
    if log_prob > -700.0:
        return repr(math.exp(log_prob))
    log10 = log_prob / _LOG10
    exponent = math.floor(log10)
    mantissa = 10.0 ** (log10 - exponent)
    if mantissa >= 10.0:  # rounding at the edge
        mantissa, exponent = mantissa / 10.0, exponent + 1
    return f"{mantissa:.16f}e{exponent}"


def _counted_body(lines: list[str], count: int, path, what: str, blank: str) -> list[str]:
    """The lines after the header: no blank one, and as many as the header's ``count``."""
    body = lines[1:]
    _check_no_blank_line(body, path, blank)
    if len(body) != count:
        raise InputError(f"header says {count} {what} but the file has {len(body)}", path, 1)
    return body


def _check_no_blank_line(body: list[str], path, problem: str) -> None:
    """A blank line inside the body is reported at its line (before any count mismatch)."""
    for lineno, text in enumerate(body, start=2):
        if not text.strip():
            raise InputError(problem, path, lineno)


# -- samples ----------------------------------------------------------------------------------
#: bytes of the file's body parsed at once by :func:`_parse_body` (bounds its scratch memory)
_CHUNK_BYTES = 1 << 22


def _parse_body(body, alphabet: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The lines ``body`` (bytes, each line ending in ``\\n``) in :class:`Corpus` layout,
    vectorised: ``(tokens, letters per line)``; None when a line is not ``<length> s1 ...
    s_length`` with digits, spaces and tabs only, its length field right and its symbols below
    ``alphabet`` (the line-by-line reader then names the line and the problem)."""
    a = np.frombuffer(body, dtype=np.uint8)
    digit = (a - np.uint8(48)) < 10  # uint8 wraps below '0'
    newline = a == 10
    if not (digit | newline | (a == 32) | (a == 9)).all():
        return None
    begins = np.flatnonzero(digit[1:] & ~digit[:-1]) + 1
    if digit[0]:
        begins = np.concatenate(([0], begins))
    ends = np.flatnonzero(digit[:-1] & ~digit[1:]) + 1  # body ends in \\n: every run ends
    widths = ends - begins
    if widths.size == 0 or widths.max() > 9:  # values below 10**9 (int64 arithmetic)
        return None
    values = (a[begins] - 48).astype(np.int64)
    for k in range(1, int(widths.max())):
        more = np.flatnonzero(widths > k)
        values[more] = values[more] * 10 + (a[begins[more] + k] - 48)
    per_line = np.diff(np.searchsorted(begins, np.flatnonzero(newline)), prepend=0)
    if (per_line == 0).any():  # a blank line
        return None
    first = np.zeros(per_line.size, dtype=np.int64)
    np.cumsum(per_line[:-1], out=first[1:])
    if (values[first] != per_line - 1).any():
        return None
    values[first] = -1  # the length fields
    if values.max(initial=-1) >= alphabet:
        return None
    # line "n s1 .. sn" -> tokens "s1+1 .. sn+1 0": each value moves one place left
    tokens = np.empty(values.size, dtype=np.int32)
    tokens[:-1] = values[1:] + 1
    tokens[first[1:] - 1] = 0
    tokens[-1] = 0
    return tokens, per_line - 1


def _read_sample_fast(raw: bytes) -> Corpus | None:
    """A well-formed sample file, parsed in vectorised chunks of whole lines (over 10 M tokens
    a CPU second; scratch memory bounded by :data:`_CHUNK_BYTES`); None when anything in it is
    unusual, for the line-by-line reader to report."""
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    nl = raw.find(b"\n")
    header = raw[:nl if nl >= 0 else len(raw)].split()
    if len(header) != 2 or not (header[0].isdigit() and header[1].isdigit()):
        return None
    count, alphabet = int(header[0]), int(header[1])
    start, end = (nl + 1, len(raw)) if nl >= 0 else (len(raw), len(raw))
    while end > start and raw[end - 1] in b" \t\n":  # trailing blank lines, as _read_lines
        end -= 1
    if alphabet < 1 or (raw.count(b"\n", start, end) + 1 if end > start else 0) != count:
        return None
    tokens, lengths, view = [], [], memoryview(raw)
    while start < end:
        stop = raw.rfind(b"\n", start, min(start + _CHUNK_BYTES, end)) + 1
        if stop <= start:  # the last line, or one line longer than a chunk
            stop = raw.find(b"\n", start, end) + 1 or end
        chunk = view[start:stop] if raw[stop - 1] == 10 else bytes(view[start:stop]) + b"\n"
        parsed = _parse_body(chunk, alphabet)
        if parsed is None:
            return None
        tokens.append(parsed[0])
        lengths.append(parsed[1])
        start = stop
    if not tokens:
        return Corpus(np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64), alphabet)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths) + 1, out=offsets[1:])
    return Corpus(np.concatenate(tokens), offsets, alphabet)


def read_sample(path: str | os.PathLike) -> Corpus:
    """Read a PAutomaC train or test file into a :class:`Corpus`.

    A well-formed file is parsed vectorised (:func:`_read_sample_fast`); any other goes
    through the line-by-line reader below, which names the file, the line and the problem."""
    raw = _read_bytes(path)
    fast = _read_sample_fast(raw)
    if fast is not None:
        return fast
    lines = _read_lines(path, raw)
    header = lines[0].split()
    if len(header) != 2:
        raise InputError(f"header must be '<count> <alphabet size>', got {lines[0].strip()!r}", path, 1)
    count = _int(header[0], path, 1, "string count")
    alphabet = _int(header[1], path, 1, "alphabet size")
    if count < 0:
        raise InputError(f"negative string count {count}", path, 1)
    if alphabet < 1:
        raise InputError(f"alphabet size must be at least 1, got {alphabet}", path, 1)
    body = _counted_body(lines, count, path, "strings", "blank line (the empty string is written '0')")
    strings = []
    for lineno, text in enumerate(body, start=2):
        parts = text.split()
        bad = next((p for p in parts if not _INTEGER.fullmatch(p)), None)
        if bad is not None:  # not int(), which also reads "1_0" as 10
            raise InputError(f"non-numeric token {bad!r}", path, lineno)
        values = list(map(int, parts))
        length = values[0]
        if length < 0:
            raise InputError(f"negative length {length}", path, lineno)
        if length != len(values) - 1:
            raise InputError(f"length field says {length} symbols but the line has {len(values) - 1}",
                             path, lineno)
        letters = values[1:]
        if letters and (min(letters) < 0 or max(letters) >= alphabet):
            bad = next(v for v in letters if v < 0 or v >= alphabet)
            raise InputError(f"symbol {bad} outside the alphabet 0..{alphabet - 1}", path, lineno)
        strings.append(letters)
    return Corpus.from_strings(strings, alphabet)


def write_sample(path: str | os.PathLike, corpus: Corpus) -> None:
    """Write ``corpus`` in the PAutomaC sample layout (LF line endings)."""
    lines = [f"{corpus.n_strings} {corpus.alphabet_size}"]
    for s in corpus.strings():
        lines.append(" ".join([str(s.size)] + [str(int(v)) for v in s]))
    Path(path).write_text("\n".join(lines) + "\n")


# -- solutions --------------------------------------------------------------------------------
def read_solution(path: str | os.PathLike, *, log: bool = False) -> np.ndarray:
    """The probabilities of a PAutomaC solution (or prediction) file, one per test string in
    the file's order, shape ``[n_strings]``.

    The file's first line is the count, then one probability a line (the layout ``bayesfa
    predict --out`` writes). ``log=True``: their natural logs, read without underflow (a
    written ``1e-400`` is ``-921.03``, not ``-inf``). A malformed file is an
    :class:`~bayesfa.errors.InputError` naming the file, the line and the problem."""
    lines = _read_lines(path)
    header = lines[0].split()
    if len(header) != 1:
        raise InputError(f"header must be the number of probabilities, got {lines[0].strip()!r}", path, 1)
    count = _int(header[0], path, 1, "count")
    if count < 0:
        raise InputError(f"negative count {count}", path, 1)
    body = _counted_body(lines, count, path, "probabilities", "blank line")
    out = np.empty(count)
    for i, text in enumerate(body):
        parts = text.split()
        if len(parts) != 1:
            raise InputError("expected one probability on the line" if parts else "blank line",
                             path, i + 2)
        out[i] = (_log_probability if log else _probability)(parts[0], path, i + 2)
    return out


def write_solution(path: str | os.PathLike, probs: np.ndarray | None = None, *,
                   log_probs: np.ndarray | None = None) -> None:
    """Write probabilities in the solution layout (``repr`` precision, LF line endings).

    Give either ``probs`` or their natural logs ``log_probs``; from logs, probabilities below
    float64's range (``log p < -745``) are still written as the positive numbers they are
    (:func:`format_log_prob`), not rounded to 0."""
    if (probs is None) == (log_probs is None):
        raise ValueError("give exactly one of probs and log_probs")
    if probs is not None:
        probs = np.asarray(probs, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(probs)) or np.any(probs < 0):
            raise ValueError("probabilities must be finite and non-negative")
        body = "\n".join(repr(float(p)) for p in probs)
    else:
        probs = np.asarray(log_probs, dtype=np.float64).reshape(-1)
        if np.any(np.isnan(probs)) or np.any(probs == np.inf):
            raise ValueError("log probabilities must not be NaN or +inf")
        body = "\n".join(format_log_prob(float(lp)) for lp in probs)
    Path(path).write_text(f"{probs.size}\n{body}\n" if probs.size else "0\n")


# -- models -----------------------------------------------------------------------------------
_SECTIONS = {"I": 1, "F": 1, "S": 2, "T": 3}
_ENTRY = re.compile(r"^\(([^()]*)\)\s+(\S+)$")


MODEL_KINDS = ("pfa", "pdfa", "hmm", "auto")


def read_model(path: str | os.PathLike, kind: str = "pfa") -> PFA | PDFA | HMM:
    """Read a PAutomaC model file (see the module docstring).

    ``kind``: ``"pfa"`` (always possible), ``"pdfa"`` or ``"hmm"`` (an :class:`InputError`
    when the machine does not have that form), or ``"auto"``: the narrowest of the three
    (:func:`bayesfa.automata.classify`).
    """
    if kind not in MODEL_KINDS:
        raise ValueError(f"kind must be one of {', '.join(MODEL_KINDS)}")
    pfa = _read_pfa(path)
    if kind == "auto":
        kind = classify(pfa)
    try:
        return {"pfa": lambda m: m, "pdfa": PDFA.from_pfa, "hmm": HMM.from_pfa}[kind](pfa)
    except ValueError as err:
        raise InputError(str(err), path) from None


def _read_pfa(path: str | os.PathLike) -> PFA:
    lines = _read_lines(path)
    entries: dict[str, dict[tuple[int, ...], tuple[float, int]]] = {k: {} for k in _SECTIONS}
    section = None
    for lineno, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        head = re.match(r"^([A-Za-z]+)\s*:", text)
        if head:
            section = head.group(1)
            if section not in _SECTIONS:
                raise InputError(f"unknown section {section!r} (expected I, F, S or T)", path, lineno)
            continue
        if section is None:
            raise InputError("entry before any section header", path, lineno)
        m = _ENTRY.match(text)
        if not m:
            raise InputError(f"malformed entry {text!r} in section {section}", path, lineno)
        fields = [f.strip() for f in m.group(1).split(",")]
        if len(fields) != _SECTIONS[section]:
            raise InputError(f"section {section} entries have {_SECTIONS[section]} indices, got {len(fields)}",
                             path, lineno)
        key = tuple(_int(f, path, lineno, "index") for f in fields)
        if min(key) < 0:
            raise InputError(f"negative index in {text!r}", path, lineno)
        if key in entries[section]:
            raise InputError(f"duplicate entry {text!r}", path, lineno)
        entries[section][key] = (_probability(m.group(2), path, lineno), lineno)
    for name in ("I", "S", "T"):
        if not entries[name]:
            raise InputError(f"section {name} is missing or empty", path)
    return _assemble(entries, path)


def _assemble(entries, path) -> PFA:
    known = {k[0] for k in entries["S"]} | {k[0] for k in entries["F"]}
    n_states = 1 + max(known | {k[0] for k in entries["I"]} | {k[0] for k in entries["T"]}
                       | {k[2] for k in entries["T"]})
    n_letters = 1 + max(k[1] for k in entries["S"])
    for name, keys in (("I", [(k[0], k) for k in entries["I"]]), ("T", [(k[0], k) for k in entries["T"]]),
                       ("T", [(k[2], k) for k in entries["T"]])):
        for q, key in keys:
            if q not in known:
                raise InputError(f"unknown state {q}: it has no S or F entries", path, entries[name][key][1])
    _check_dense_size(entries, n_states, n_letters, path)
    init = np.zeros(n_states)
    stop = np.zeros(n_states)
    stop[[q for q in range(n_states) if q not in known]] = 1.0  # unnamed, unreachable numbers
    emit = np.zeros((n_states, n_letters))
    move = np.zeros((n_states, n_letters, n_states))
    for (q,), (p, _) in entries["I"].items():
        init[q] = p
    for (q,), (p, _) in entries["F"].items():
        stop[q] = p
    for (q, a), (p, _) in entries["S"].items():
        emit[q, a] = p
    for (q, a, r), (p, lineno) in entries["T"].items():
        if (q, a) in entries["S"]:  # HMM files also list T for symbols q never emits
            move[q, a, r] = p
    _check_sum(init.sum(), "initial probabilities (I) sum", path, min(v[1] for v in entries["I"].values()))
    for q in sorted(known):
        if stop[q] < 1 - _TOL:
            lineno = min((ln for (s, _), (_, ln) in entries["S"].items() if s == q),
                         default=entries["F"].get((q,), (None, None))[1])  # no S: its F line
            _check_sum(emit[q].sum(), f"symbol probabilities (S) of state {q} sum", path, lineno)
    for (q, a), (p, lineno) in entries["S"].items():
        if p > 0:
            lineno = min((ln for (s, b, _), (_, ln) in entries["T"].items() if (s, b) == (q, a)),
                         default=lineno)  # the first T line of (q,a), else its S line
            _check_sum(move[q, a].sum(), f"transition probabilities (T) of ({q},{a}) sum", path, lineno)
    trans = (1.0 - stop)[None, :, None] * emit.T[:, :, None] * move.transpose(1, 0, 2)
    # Renormalise away the files' 12-digit rounding so that the PFA is exactly stochastic.
    outgoing = stop + trans.sum(axis=(0, 2))
    return PFA(init / init.sum(), trans / outgoing[None, :, None], stop / outgoing)


def _check_dense_size(entries, n_states: int, n_letters: int, path) -> None:
    """An InputError, before anything is allocated, when the state and symbol numbers make
    the dense ``[A, Q, Q]`` model (a few float64 copies of it) larger than the available
    memory: e.g. one entry naming state 99999999."""
    from bayesfa.memory import available_memory, format_bytes

    need = 4 * 8 * n_states * n_letters * n_states
    if need <= available_memory():
        return
    top = {n_states - 1, n_letters - 1}
    lineno = min((ln for sec in entries.values() for key, (_, ln) in sec.items() if top & set(key)),
                 default=None)
    raise InputError(f"state numbers up to {n_states - 1} and symbols up to {n_letters - 1} make "
                     f"a dense model of {format_bytes(need)}, more than the available memory",
                     path, lineno)


def _check_sum(total: float, what: str, path, lineno) -> None:
    if abs(total - 1.0) > _TOL:
        raise InputError(f"{what} to {total:.9g}, not 1", path, lineno)


def write_model(path: str | os.PathLike, pfa: PFA) -> None:
    """Write ``pfa`` as a PAutomaC model file (the inverse of :func:`read_model`)."""
    out = ["I: (state)"]
    out += [f"\t({q}) {float(p)!r}" for q, p in enumerate(pfa.init) if p > 0]
    out.append("F: (state)")
    out += [f"\t({q}) {float(p)!r}" for q, p in enumerate(pfa.stop) if p > 0]
    out.append("S: (state,symbol)")
    emit = pfa.trans.sum(axis=2).T  # [Q, A] = (1 - F) S
    go = 1.0 - pfa.stop
    for q in range(pfa.n_states):
        for a in range(pfa.alphabet_size):
            if emit[q, a] > 0:
                out.append(f"\t({q},{a}) {float(emit[q, a] / go[q])!r}")
    out.append("T: (state,symbol,state)")
    for q in range(pfa.n_states):
        for a in range(pfa.alphabet_size):
            if emit[q, a] > 0:
                for r in range(pfa.n_states):
                    if pfa.trans[a, q, r] > 0:
                        out.append(f"\t({q},{a},{r}) {float(pfa.trans[a, q, r] / emit[q, a])!r}")
    Path(path).write_text("\n".join(out) + "\n")
