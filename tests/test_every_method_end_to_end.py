"""Every registered method once end to end through the command line: fit, predict, diagnose.

A toy PAutomaC sample (with empty strings) and small budgets; each method compiles its kernels
in the process that runs it, so the whole file costs minutes (CI runs it on Python 3.11, with
``-m slow``). The fast suite exercises every method through the API
(tests/test_api.py::test_every_method_fits_python_strings_and_predicts_new_ones).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.methods import method_names
from bayesfa.pautomac import read_solution

from test_api import SMALL

pytestmark = pytest.mark.slow

#: the oracles' NUTS budget (tests/test_api.py::test_the_oracles_fit_python_strings)
ORACLE = {"states": 2, "iterations": 40, "burn_in": 20}

#: methods that keep no trace (diagnose says so in one line): the greedy learners, the
#: memoizer and the PDFA oracle; the optimisers' trace is their iterations (an optimisation
#: history, hmm-em's the log likelihood of the restart it keeps)
NO_TRACE = {"estatemerge", "evgram", "cvgram", "alergia", "memoizer", "oracle-pdfa"}
OPTIMISERS = {"cvb0", "gcvb0", "cvb2", "hmm-em"}

TRAIN = "12 2\n2 0 1\n0\n1 1\n4 0 1 0 1\n3 0 0 1\n1 1\n2 0 1\n0\n3 0 1 1\n2 0 1\n1 0\n2 1 1\n"
TEST = "4 2\n2 0 1\n0\n1 0\n5 1 1 1 0 0\n"


def _cli_options(method: str) -> list[str]:
    small = ORACLE if method.startswith("oracle") else SMALL.get(method, {})
    return [a for k, v in small.items() for a in (f"--{k.replace('_', '-')}", str(v))]


@pytest.mark.parametrize("method", method_names())
def test_fit_predict_diagnose(tmp_path, capsys, method):
    train, test = tmp_path / "toy.train", tmp_path / "toy.test"
    train.write_text(TRAIN)
    test.write_text(TEST)
    run, pred = tmp_path / "run", tmp_path / "pred.txt"
    assert main(["fit", str(train), "--method", method, "--seed", "1", "--out", str(run),
                 "--quiet", *_cli_options(method)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["method"] == method and manifest["train"]["n_strings"] == 12
    assert not (run / "partial").exists()

    assert main(["predict", str(run), str(test), "--out", str(pred)]) == 0
    probs = read_solution(pred)
    assert probs.shape == (4,)  # one row per test string, the empty one included
    assert np.isfinite(probs).all() and (probs > 0).all() and (probs < 1).all()

    capsys.readouterr()
    rc = main(["diagnose", "--json", str(run)])
    out, err = capsys.readouterr()
    if method in NO_TRACE:
        assert rc == 2 and err == f"bayesfa: error: {run}: method {method} saved no trace to diagnose\n"
    else:
        assert rc == 0
        report = json.loads(out)
        assert report["kind"] == ("optimiser" if method in OPTIMISERS else "sampler")
