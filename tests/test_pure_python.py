"""Every numba kernel run as plain Python: reads and writes stay inside their arrays.

The kernels are compiled without bounds checks (numba's default, and ``boundscheck=False``
where written): an index one past an array's end reads whatever lies there, or writes over
it, and a test passes or fails by chance. With ``NUMBA_DISABLE_JIT=1`` the same functions run
as Python, where numpy's indexing raises ``IndexError``. So each configuration below fits a
toy in a subprocess with the JIT off, and must run and predict what the compiled fit
predicts (they agreed exactly when measured; ``fastmath`` allows a last-bit difference).
Issue 39: CVB2's sweep re-adding adjacent pairs up to ``big_t - 1`` read one token past the
end, and cvgram's folds ``t >> K`` wrote outside the per-fold table, and every test passed with
the JIT on.

The toy's last string is not empty, so its last letter's position is free (the sweeps' edge).
The PDFA and PDIA kernels (:data:`NUMBA_ONLY`) call functions that exist only as numba
overloads; they run compiled with numba's bounds checks on instead, slow-marked
(:func:`test_the_pdia_kernels_index_inside_their_arrays_with_bounds_checks`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bayesfa

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["ab", "abab", "b", "ab", "aab", "b", "abb", "ab"] * 3
NEW = ["ab", "ba", "", "bbbb"]
CHAIN = {"iterations": 40, "burn_in": 10, "chains": 2}

#: toy -> (training strings, test strings); a configuration's toy is ``ab`` unless
#: :data:`TOY_OF` names another
TOYS = {
    "ab": (WORDS, NEW),
    # more letters than states plus one: the slice FFBS's order table is (states, symbols, .)
    # (issue 39: sized by states, it was too small only here)
    "letters": (["abcdef", "fedcba", "ace", "", "bdf", "ab", "cd", "ef", "fa"] * 2,
                ["abc", "f", "", "fa"]),
    # CVB's edges: 15, 10 and 8 tokens (letters and ends); ``big_t ^ 2`` for ``big_t - 2``
    # differs only at 8, and CVB2's sweep re-adding adjacent pairs up to ``big_t - 1`` read one
    # token past the end (issue 39)
    "cvb15": (["aaba", "bbb", "", "aa", "b"], NEW),
    "cvb10": (["abbb", "abbb"], NEW),
    "cvb8": (["abbb", "bb"], NEW),
}
CVB_TOYS = ("cvb15", "cvb10", "cvb8")

#: configuration -> (method, options)
CONFIGS = {
    "cgs-pfa": ("cgs-pfa", {"states": 3, **CHAIN}),
    "cgs-pfa-alias": ("cgs-pfa", {"states": 3, "kernel": "alias-mh", **CHAIN}),
    "cgs-pfa-bucket": ("cgs-pfa", {"states": 3, "kernel": "bucket-mh", **CHAIN}),
    "cgs-pfa-interleave": ("cgs-pfa", {"states": 3, "interleave": 2, **CHAIN}),
    "cgs-pfa-replicas-blocked": ("cgs-pfa", {"states": 3, "replicas": 2, "blocked_every": 3,
                                             **CHAIN}),
    "cgs-pfa-split-merge": ("cgs-pfa", {"states": 3, "split_merge": 0.5, **CHAIN}),
    "ipfa": ("ipfa", {"states": 3, **CHAIN}),
    "ipfa-direct": ("ipfa", {"states": 3, "sampler": "direct", **CHAIN}),
    "cgs-sg": ("cgs-sg", {"states": 3, "graph_interval": 5, **CHAIN}),
    "cgs-hmm": ("cgs-hmm", {"states": 3, **CHAIN}),
    "cgs-hmm-star": ("cgs-hmm-star", {"states": 3, **CHAIN}),
    "cvb0": ("cvb0", {"states": 3}),
    "gcvb0": ("gcvb0", {"states": 3}),
    "cvb2": ("cvb2", {"states": 3}),
    "estatemerge": ("estatemerge", {}),
    "alergia": ("alergia", {}),
    "evgram": ("evgram", {}),
    "cvgram": ("cvgram", {}),
    "hpyp": ("hpyp", {"iterations": 30, "burn_in": 10}),
    "memoizer": ("memoizer", {}),
    "ipfa-letters": ("ipfa", {"states": 2, "truncate": 2, **CHAIN}),
    # a direct chain started on 64 states, of which the toy's 52 letters use more than 31,
    # the smallest capacity (issue 39: the start's capacity from ``2 >> used`` for ``2 *
    # used`` wrote past its arrays); a few sweeps (plain Python is slow at 64 states)
    "ipfa-direct-wide": ("ipfa", {"states": 64, "sampler": "direct", "iterations": 6,
                                  "burn_in": 2, "period": 2, "chains": 1}),
    **{f"{m}-{toy}": (m, {"states": 3, "beta": 0.5, "iterations": 4, "tol": 1e-12})
       for m in ("cvb0", "gcvb0", "cvb2") for toy in CVB_TOYS},
}

#: configuration -> its toy (:data:`TOYS`), where not ``ab``
TOY_OF = {"ipfa-letters": "letters", "ipfa-direct-wide": "letters",
          **{name: name.rsplit("-", 1)[1] for name in CONFIGS
             if name.rsplit("-", 1)[-1] in CVB_TOYS}}


def _with_toys(configs: dict) -> dict:
    """``configs`` with each one's training and test strings: what the children read."""
    return {name: [method, options, *TOYS[TOY_OF.get(name, "ab")]]
            for name, (method, options) in configs.items()}


#: each module with numba functions -> the configurations that must run its code
KERNELS = {
    "bayesfa.samplers.pfa._cgs_pfa_kernel": ("cgs-pfa",),
    "bayesfa.samplers.pfa._cgs_pfa_alias_kernel": ("cgs-pfa-alias",),
    "bayesfa.samplers.pfa._cgs_pfa_bucket_kernel": ("cgs-pfa-bucket",),
    "bayesfa.samplers.pfa._cgs_pfa_multichain_kernel": ("cgs-pfa-interleave",),
    "bayesfa.samplers.pfa._replica_kernel": ("cgs-pfa-replicas-blocked",),
    "bayesfa.samplers.pfa._ffbs_kernel": ("cgs-pfa-replicas-blocked", "ipfa", "ipfa-letters"),
    "bayesfa.samplers.pfa._split_merge_kernel": ("cgs-pfa-split-merge",),
    "bayesfa.samplers.pfa._ipfa_kernel": ("ipfa-direct", "ipfa-direct-wide"),
    "bayesfa.samplers.pfa._ipfa_blocked_kernel": ("ipfa",),
    "bayesfa.samplers.pfa._ipfa_split_kernel": ("ipfa",),
    "bayesfa.samplers.pfa._cgs_sg_kernel": ("cgs-sg",),
    "bayesfa.samplers.pfa._cgs_hmm_kernel": ("cgs-hmm", "cgs-hmm-star"),
    "bayesfa.learners._cvb_kernel": ("cvb0", "gcvb0", "cvb2", "cvb0-cvb8", "cvb2-cvb8"),
    "bayesfa.learners.greedy._prefix_tree": ("estatemerge", "alergia"),
    "bayesfa.learners.greedy.alergia": ("alergia",),
    "bayesfa.learners.greedy.estatemerge": ("estatemerge",),
    "bayesfa.learners.greedy._vgram": ("evgram", "cvgram"),
    "bayesfa.samplers.ngram._hpyp_kernel": ("hpyp", "memoizer"),
    "bayesfa.samplers.pdia._crf_kernel": ("hpyp",),
}

#: kernels that call numba-only overloads (``raise NotImplementedError`` in Python)
NUMBA_ONLY = {
    "bayesfa.samplers.pdia._pdfa_kernel": ("pdfa", "pdia"),
    "bayesfa.samplers.pdia._smoothed_emission_kernel": ("pdia-smoothed",),
}

#: configurations whose float32 arithmetic numba and NumPy type differently: the alias
#: tables sum float32 weights into a float that numba makes float64 and NumPy 2 keeps float32
#: (NEP 50), so the chains part after a rounding; they must run, not agree
RUN_ONLY = {"cgs-pfa-alias": "float32 sums typed float64 by numba, float32 by NumPy 2"}

_CHILD = """
import json, sys, threading
import bayesfa
out = {}
for name, (method, options, words, new) in json.loads(sys.argv[1]).items():
    seen = set()
    def hook(frame, event, arg):
        if event == "call" and "/bayesfa/" in frame.f_code.co_filename:
            seen.add(frame.f_code.co_filename.replace("\\\\", "/").split("/bayesfa/")[-1])
    sys.setprofile(hook)
    threading.setprofile(hook)
    run = bayesfa.fit(words, method=method, seed=1, **options)
    logp = run.predict(new)
    sys.setprofile(None)
    threading.setprofile(None)
    out[name] = {"logp": logp.tolist(), "files": sorted(seen)}
print(json.dumps(out))
"""


def _file(module: str) -> str:
    return module.removeprefix("bayesfa.").replace(".", "/") + ".py"


@pytest.fixture(scope="module")
def pure():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    run = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(_with_toys(CONFIGS))],
                         env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_every_module_with_numba_code_is_run_here():
    """Each file under ``bayesfa/samplers`` and ``bayesfa/learners`` that imports numba is in
    :data:`KERNELS` or :data:`NUMBA_ONLY`."""
    found = set()
    for folder in ("samplers", "learners"):
        for p in (ROOT / "bayesfa" / folder).rglob("*.py"):
            if re.search(r"^(from numba\b|import numba\b)", p.read_text(encoding="utf-8"), re.M):
                found.add(".".join(p.relative_to(ROOT).with_suffix("").parts))
    assert found == set(KERNELS) | set(NUMBA_ONLY)


@pytest.mark.parametrize("module", sorted(KERNELS))
def test_each_kernel_runs_in_its_configurations(pure, module):
    for name in KERNELS[module]:
        assert _file(module) in pure[name]["files"], (module, name)


# ipfa-letters's truncation is its states on purpose (the order table's shape)
@pytest.mark.filterwarnings("ignore:ipfa --sampler blocked.*the truncation may bind")
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pure_python_fit_predicts_as_the_compiled_one(pure, name):
    assert np.isfinite(pure[name]["logp"]).all()
    if name in RUN_ONLY:
        return
    method, options, words, new = _with_toys(CONFIGS)[name]
    compiled = bayesfa.fit(words, method=method, seed=1, **options).predict(new)
    np.testing.assert_allclose(pure[name]["logp"], compiled, rtol=1e-9, atol=1e-12)


_CHILD_PDIA = """
import json, sys
import bayesfa
print(json.dumps({name: bayesfa.fit(words, method=method, seed=1, **options).predict(new).tolist()
                  for name, (method, options, words, new) in json.loads(sys.argv[1]).items()}))
"""

#: the PDFA and PDIA configurations, run compiled with bounds checks
PDIA_CONFIGS = {
    "pdfa": ("pdfa", {"states": 3, **CHAIN}),
    "pdia": ("pdia", CHAIN),
    "pdia-smoothed": ("pdia-smoothed", CHAIN),
}


@pytest.mark.slow
def test_the_pdia_kernels_index_inside_their_arrays_with_bounds_checks(tmp_path):
    """:data:`NUMBA_ONLY`'s kernels compiled with numba's bounds checks on
    (``NUMBA_BOUNDSCHECK=1``, into an empty cache: an ``IndexError`` where an index leaves its
    array) run the PDFA and PDIA fits and predict what the unchecked kernels predict.
    Minutes of compiling: slow."""
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", _CHILD_PDIA,
                          json.dumps(_with_toys(PDIA_CONFIGS))],
                         env=env, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    checked = json.loads(run.stdout.splitlines()[-1])
    assert {m for m, _ in PDIA_CONFIGS.values()} == set().union(*NUMBA_ONLY.values())
    for name, (method, options, words, new) in _with_toys(PDIA_CONFIGS).items():
        unchecked = bayesfa.fit(words, method=method, seed=1, **options).predict(new)
        np.testing.assert_allclose(checked[name], unchecked, rtol=1e-9, atol=1e-12,
                                   err_msg=name)


_CHILD_UNDO = """
import json
import numpy as np
from bayesfa.samplers.ngram._hpyp_kernel import score_tokens
parent = np.array([-1, 0, 1], dtype=np.int64)  # root <- 1 <- 2: the deepest path, 3 nodes
c, t = np.zeros((3, 2), dtype=np.int32), np.zeros((3, 2), dtype=np.int32)
cs, ts = np.zeros(3, dtype=np.int32), np.zeros(3, dtype=np.int32)
out = np.zeros(1)
score_tokens(np.random.default_rng(0), np.array([2], dtype=np.int64),
             np.array([1], dtype=np.int64), 0, np.array([0, 1], dtype=np.int64), True, parent,
             np.array([0.5, 0.6, 0.7]), np.zeros(3), c, t, cs, ts, 0.5, 3, out)
print(json.dumps({"out": out.tolist(), "left": int(c.sum() + t.sum() + cs.sum() + ts.sum())}))
"""


def test_the_undo_log_holds_a_token_that_opens_a_table_at_every_node():
    """``score_tokens`` with ``reset`` logs each node whose count grew, so that it can undo the
    string: at most ``path_len`` entries a token. A token at the deepest node of empty
    restaurants opens a table at each of its 3 nodes (``p`` is the base ``1/2``), the log's
    bound is met exactly, and every count is undone after it. In plain Python an entry past
    the log's end raises (issue 39: the log sized ``path_len * longest ^ 1``, one short when
    the product is odd, lived with the JIT on)."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    run = subprocess.run([sys.executable, "-c", _CHILD_UNDO], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.splitlines()[-1])
    assert got["out"] == [np.log(0.5)] and got["left"] == 0
