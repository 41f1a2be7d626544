"""Reading a PAutomaC sample file or a lines file: the vectorised reader against the
line-by-line reader, in the same process, on a generated corpus (issue 41 item 2).

    python benchmarks/read_speed.py --tokens 20000000 --out benchmarks/results/read_speed.json
    python benchmarks/read_speed.py --format lines --tokens 20000000 --out benchmarks/results/read_speed_lines.json

``--format lines`` writes the same strings one a line, letter ``i`` as the character
``chr(ord('a') + i)`` (``--letters`` up to 26; about one line in twenty empty), and reads it
with :func:`bayesfa.textdata.load_lines` against its line-by-line reader
(``_load_lines_by_line``, what ``load_lines`` was before it was vectorised); ``--separator
SEP`` writes and reads the letters as words joined by SEP.

Prints million tokens per CPU second for each reader, their ratio and the peak memory of the
vectorised read over the corpus's final arrays (measured in a fresh process, so that nothing
else counts)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guarded_out import check_out, write_out_json  # noqa: E402
from machine import cpu_name, git_commit  # noqa: E402

from bayesfa import pautomac  # noqa: E402
from bayesfa.corpus import Corpus  # noqa: E402
from bayesfa.provenance import portable_command  # noqa: E402

# VmHWM, the peak of this process's own memory (ru_maxrss would carry the parent's peak over
# fork and exec on Linux)
_HWM = "int(next(ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM'))) * 1024"
_PEAK = f"""
import sys
from bayesfa.pautomac import read_sample
c = read_sample(sys.argv[1])
print({_HWM}, c.tokens.nbytes + c.offsets.nbytes)
"""
_PEAK_LINES = f"""
import sys
from bayesfa.textdata import load_lines
c, _ = load_lines(sys.argv[1], separator=sys.argv[2] or None)
print({_HWM}, c.tokens.nbytes + c.offsets.nbytes)
"""
_BASELINE = f"import bayesfa.pautomac, bayesfa.textdata; print({_HWM})"


def generate(path: Path, tokens: int, letters: int, seed: int) -> Corpus:
    """Strings of geometric length (mean 19 letters) over ``letters`` letters, about ``tokens``
    tokens, about one in twenty empty."""
    rng = np.random.default_rng(seed)
    n = max(1, tokens // 20)
    lengths = rng.geometric(0.05, size=n) - 1
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=offsets[1:])
    toks = (rng.integers(1, letters + 1, size=int(offsets[-1]))).astype(np.int32)
    toks[offsets[1:] - 1] = 0
    corpus = Corpus(toks, offsets, letters)
    pautomac.write_sample(path, corpus)
    return corpus


def generate_lines(path: Path, tokens: int, letters: int, seed: int, separator: str | None) -> Corpus:
    """The strings of :func:`generate` as a lines file (letter ``i`` the character
    ``chr(ord('a') + i)``, or words joined by ``separator``); the corpus as ``load_lines``
    reads it back (its alphabet: the letters that occur, sorted)."""
    from bayesfa.textdata import format_lines

    if letters > 26:
        raise SystemExit("read_speed.py: --format lines writes letters a-z: --letters 26 at most")
    corpus = generate(path, tokens, letters, seed)
    symbols = [chr(ord("a") + i) for i in range(letters)]
    path.write_text(format_lines(([symbols[i] for i in s] for s in corpus.strings()), separator),
                    encoding="utf-8")
    return corpus


def lines_reader(path: Path, separator: str | None) -> Corpus:
    """The line-by-line lines reader (load_lines before it was vectorised)."""
    from bayesfa import textdata

    raw = textdata._read_raw(path)
    return textdata._load_lines_by_line(textdata._decode(raw, path), path, None, False, separator,
                                        "error")[0]


def line_reader(path: Path) -> Corpus:
    """The line-by-line reader (what read_sample falls back to for a malformed file)."""
    lines = pautomac._read_lines(path)
    alphabet = int(lines[0].split()[1])
    return Corpus.from_strings([[int(v) for v in ln.split()[1:]] for ln in lines[1:]], alphabet)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=20_000_000)
    ap.add_argument("--letters", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--format", choices=("pautomac", "lines"), default="pautomac")
    ap.add_argument("--separator", default=None, help="--format lines: words joined by this")
    ap.add_argument("--out", type=Path, default=None, help="JSON result (optional)")
    args = ap.parse_args(argv)
    if args.out:  # refused before any work when bayesfa did not write it
        check_out(args.out)
    commit = git_commit()  # the code that runs, read before the checkout can change
    lines = args.format == "lines"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("big.lines" if lines else "big.pautomac.train")
        if lines:
            from bayesfa.textdata import load_lines

            corpus = generate_lines(path, args.tokens, args.letters, args.seed, args.separator)
            t = time.process_time()
            fast, _ = load_lines(path, separator=args.separator)
            fast_s = time.process_time() - t
            t = time.process_time()
            slow = lines_reader(path, args.separator)
            slow_s = time.process_time() - t
            # the same strings; the alphabet read back is the letters that occur
            assert fast == slow and np.array_equal(fast.offsets, corpus.offsets)
            assert fast.alphabet_size == corpus.alphabet_size
            assert np.array_equal(fast.tokens, corpus.tokens)
            peak_cmd = [sys.executable, "-c", _PEAK_LINES, str(path), args.separator or ""]
        else:
            corpus = generate(path, args.tokens, args.letters, args.seed)
            t = time.process_time()
            fast = pautomac.read_sample(path)
            fast_s = time.process_time() - t
            t = time.process_time()
            slow = line_reader(path)
            slow_s = time.process_time() - t
            assert fast == corpus == slow
            peak_cmd = [sys.executable, "-c", _PEAK, str(path)]
        peak, final = map(int, subprocess.run(peak_cmd, check=True, capture_output=True,
                                              text=True).stdout.split())
        base = int(subprocess.run([sys.executable, "-c", _BASELINE], check=True,
                                  capture_output=True, text=True).stdout)
        size = path.stat().st_size
    result = {"commit": commit, "command": portable_command([sys.executable, *sys.argv]),
              "cpu": cpu_name(), "format": args.format, "separator": args.separator,
              "tokens": corpus.n_tokens, "file_bytes": size, "load_average": os.getloadavg(),
              "vectorised_mtokens_per_cpu_s": corpus.n_tokens / fast_s / 1e6,
              "line_reader_mtokens_per_cpu_s": corpus.n_tokens / slow_s / 1e6,
              "speedup": slow_s / fast_s, "final_arrays_bytes": final,
              "peak_rss_over_import_bytes": peak - base,
              "peak_over_final_arrays": (peak - base) / final}
    print(f"{args.format}: {corpus.n_tokens:,} tokens ({size / 2**20:.0f} MiB file): vectorised "
          f"{result['vectorised_mtokens_per_cpu_s']:.1f} M tokens/CPU s, line reader "
          f"{result['line_reader_mtokens_per_cpu_s']:.2f} (x{result['speedup']:.0f}); peak memory "
          f"{(peak - base) / 2**20:.0f} MiB over the import = {result['peak_over_final_arrays']:.1f} x "
          f"the final arrays ({final / 2**20:.0f} MiB), the file's bytes included")
    if args.out:
        write_out_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
