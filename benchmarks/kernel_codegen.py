"""Machine code of the production CGS-PFA sweep against an older kernel file, and of mutants.

Compiles ``sweep_positions`` of ``OLD_KERNEL`` (a copy of an earlier
``bayesfa/samplers/pfa/_cgs_pfa_kernel.py``, e.g. ``git show REV:bayesfa/samplers/pfa/_cgs_pfa_kernel.py
> runs/old/cgs_kernel_before.py``, after ``mkdir -p runs/old``; before ``cc3927b`` the file was
``bayesfa/samplers/_cgs_pfa_kernel.py``) and of the current module, and counts the instructions of
numba's ``inspect_asm``: a load-independent check that the mutation switches of
``build_sweep`` are compiled out of the production sweep. Run with an empty
``NUMBA_CACHE_DIR`` (numba does not disassemble cached code):

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/kernel_codegen.py runs/old/cgs_kernel_before.py
"""

from __future__ import annotations

import collections
import importlib.util
import sys

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.samplers.pfa import _cgs_pfa_kernel as new
from bayesfa.samplers.pfa.cgs_pfa import new_counts


def opcodes(f) -> collections.Counter:
    out = collections.Counter()
    for line in f.inspect_asm(f.signatures[0]).splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith(".") and not line.endswith(":"):
            out[line.split()[0]] += 1
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    spec = importlib.util.spec_from_file_location("cgs_kernel_before", argv[0])
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    funcs = {"before": old.sweep_positions, "after": new.sweep_positions,
             "after, mutant no-correction": new.build_sweep("no-correction"),
             "after, mutant frozen": new.build_sweep("frozen")}
    tokens = Corpus.from_strings([[0, 1, 0], [1, 1]], 2).tokens
    positions = (np.flatnonzero(tokens[:-1] != 0) + 1).astype(np.int64)
    for f in funcs.values():  # compile with the production signature
        z = np.zeros(tokens.size + 1, np.int32)
        z[positions] = 1
        c, ct, ci, recip = new_counts(2, 3)
        new.fill_counts(tokens, z, c, ct, ci, recip, 0.1)
        g = np.zeros(c.shape[2], np.float32)
        f(positions, np.full(positions.size, 0.5), tokens, z, c, ct, ci, recip, g, 0.1)
    base = opcodes(funcs["before"])
    print(f"{'sweep':32s} {'instructions':>12s} {'packed float ops':>16s}")
    for name, f in funcs.items():
        c = opcodes(f)
        packed = sum(v for k, v in c.items() if k.endswith("ps") and k[:4] in ("vmul", "vadd", "vfma"))
        print(f"{name:32s} {sum(c.values()):12d} {packed:16d}")
        if name == "after":
            diff = {k: (base.get(k, 0), c.get(k, 0)) for k in set(base) | set(c)
                    if base.get(k, 0) != c.get(k, 0)}
            print("  opcodes that differ (before, after):", diff)


if __name__ == "__main__":
    main()
