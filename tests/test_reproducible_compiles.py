"""Same seed, same result, whether numba compiles the kernels in this process or loads them from
its on-disk cache.

Found on PAutomaC 21 (23 letters): a CGS-PFA chain run in a process that compiled the sweep
differed from the same chain run in a later process that loaded it from numba's cache (59,660
of the 476,010 states after one sweep), because the disk-cached callers of the fastmath sweep
(``_cgs_pfa_kernel.sweeps``, ``sample_draws``, ...) did not run the same code as the sweep
compiled on its own: the first run of a fresh clone gave one answer and every later run another.
The callers are now compiled in each process (``cache=False``; the sweep itself stays cached),
and this test runs one fit twice in two processes sharing an empty cache folder: the first
compiles and writes the cache, the second loads it. Both must print the same log joints. The
corpus (20,000 random strings over 23 letters, 320,600 tokens, N = 76) is one on which the
cached callers diverged within three sweeps (checked before the fix).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from bayesfa.corpus import Corpus
    from bayesfa.samplers.pfa.cgs_pfa import sample_cgs_pfa

    r = np.random.default_rng(0)
    corpus = Corpus.from_strings([r.integers(0, 23, size=r.integers(1, 30)) for _ in range(20000)], 23)
    kw = {"split_merge": 0.5} if sys.argv[1] == "split-merge" else {}
    res = sample_cgs_pfa(corpus, 76, 0.005, 6, 3, 1, 1, 5, **kw)
    print(" ".join(repr(float(x)) for x in res.log_joint.ravel()))
""")


@pytest.mark.parametrize("variant", ["gibbs", "split-merge"])
def test_a_fit_is_the_same_compiled_here_or_loaded_from_the_cache(tmp_path, variant):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    runs = [subprocess.run([sys.executable, "-c", CHILD, variant], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert any((tmp_path / "numba-cache").rglob("*.nbi"))  # the second run had a cache to load
    first, second = (run.stdout.split() for run in runs)
    assert len(first) == 3 and first == second
