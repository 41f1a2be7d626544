"""Reading a PAutomaC sample file: the vectorised reader against the line-by-line reader, in
the same process, on a generated corpus (issue 41 item 2).

    python benchmarks/read_speed.py --tokens 20000000 --out benchmarks/results/read_speed.json

Prints million tokens per CPU second for each reader, their ratio and the peak memory of the
vectorised read over the corpus's final arrays (measured in a fresh process, so that nothing
else counts)."""

from __future__ import annotations

import argparse
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
_BASELINE = f"import bayesfa.pautomac; print({_HWM})"


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
    ap.add_argument("--out", type=Path, default=None, help="JSON result (optional)")
    args = ap.parse_args(argv)
    if args.out:  # refused before any work when bayesfa did not write it
        check_out(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.pautomac.train"
        corpus = generate(path, args.tokens, args.letters, args.seed)
        t = time.process_time()
        fast = pautomac.read_sample(path)
        fast_s = time.process_time() - t
        t = time.process_time()
        slow = line_reader(path)
        slow_s = time.process_time() - t
        assert fast == corpus == slow
        peak, final = map(int, subprocess.run([sys.executable, "-c", _PEAK, str(path)], check=True,
                                              capture_output=True, text=True).stdout.split())
        base = int(subprocess.run([sys.executable, "-c", _BASELINE], check=True,
                                  capture_output=True, text=True).stdout)
        size = path.stat().st_size
    result = {"commit": git_commit(), "command": portable_command([sys.executable, *sys.argv]),
              "cpu": cpu_name(), "tokens": corpus.n_tokens, "file_bytes": size,
              "vectorised_mtokens_per_cpu_s": corpus.n_tokens / fast_s / 1e6,
              "line_reader_mtokens_per_cpu_s": corpus.n_tokens / slow_s / 1e6,
              "speedup": slow_s / fast_s, "final_arrays_bytes": final,
              "peak_rss_over_import_bytes": peak - base,
              "peak_over_final_arrays": (peak - base) / final}
    print(f"{corpus.n_tokens:,} tokens ({size / 2**20:.0f} MiB file): vectorised "
          f"{result['vectorised_mtokens_per_cpu_s']:.1f} M tokens/CPU s, line reader "
          f"{result['line_reader_mtokens_per_cpu_s']:.2f} (x{result['speedup']:.0f}); peak memory "
          f"{(peak - base) / 2**20:.0f} MiB over the import = {result['peak_over_final_arrays']:.1f} x "
          f"the final arrays ({final / 2**20:.0f} MiB), the file's bytes included")
    if args.out:
        write_out_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
