"""``bayesfa export``: PAutomaC model files that ``bayesfa prob`` reads back to the run's own
probabilities, Graphviz dot, and the one-line refusal for methods without one automaton."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bayesfa.automata import PDFA
from bayesfa.cli import main
from bayesfa.datasets import pautomac_path
from bayesfa.export import dot_text
from bayesfa.pautomac import read_model, read_sample, read_solution, write_sample
from bayesfa.rundir import save_run

GREEDY = ["estatemerge", "evgram", "cvgram", "alergia"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    train = read_sample(pautomac_path(24, "train")).subset(np.arange(1000))
    write_sample(folder / "train", train)
    return folder / "train", pautomac_path(24, "test")


@pytest.mark.parametrize("method", GREEDY)
def test_fit_predict_export_round_trip(method, data, tmp_path, capsys):
    train, test = data
    run = tmp_path / "run"
    extra = ["--alpha", "0.1"] if method == "alergia" else []
    assert main(["fit", str(train), "--method", method, "--beta", "0.3", *extra, "--out", str(run),
                 "--quiet"]) == 0
    pred = tmp_path / "pred"
    assert main(["predict", str(run), str(test), "--out", str(pred)]) == 0
    p = read_solution(pred)
    assert p.size == 1000 and np.all(p > 0)
    assert main(["perplexity", str(run), str(test), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert np.isfinite(out["perplexity"]) and out["perplexity"] > 1
    # PAutomaC model file, read back by `bayesfa prob`: the same probabilities to 1e-10
    model = tmp_path / "model.txt"
    assert main(["export", str(run), "--format", "pautomac", "--out", str(model)]) == 0
    back = tmp_path / "back"
    assert main(["prob", str(model), str(test), "--out", str(back)]) == 0
    np.testing.assert_allclose(read_solution(back), p, rtol=1e-10, atol=0)
    assert read_model(model, kind="pdfa").delta.shape[1] == 5  # deterministic, 5 letters
    # dot: every drawn edge carries a symbol and a probability; no more than --max-edges
    dot = tmp_path / "m.dot"
    assert main(["export", str(run), "--format", "dot", "--out", str(dot), "--max-edges", "12"]) == 0
    text = dot.read_text()
    assert text.startswith("digraph")
    edges = re.findall(r'q\d+ -> q\d+ \[label="(\d) : ([0-9.e-]+)"', text)
    assert 1 <= len(edges) <= 12
    assert all(0 < float(prob) <= 1 for _, prob in edges)


def test_export_refuses_a_sampler_run_in_one_line(tmp_path, capsys):
    run = save_run(tmp_path / "run", method="cgs-pfa", options={"beta": 0.1}, seed=0,
                   arrays={"counts": np.zeros((1, 2, 3, 3))})
    rc = main(["export", str(run), "--format", "pautomac", "--out", str(tmp_path / "m.txt")])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "does not learn one automaton" in err
    assert "estatemerge" in err  # names the methods that can
    assert not (tmp_path / "m.txt").exists()


def test_dot_keeps_the_heaviest_edges():
    # state 0 -> 1 on letter 0 with 0.7, on letter 1 to 0 with 0.2; state 1 stops surely
    pdfa = PDFA(delta=np.array([[1, 0], [-1, -1]]), pi=np.array([[0.7, 0.2], [0.0, 0.0]]),
                stop=np.array([0.1, 1.0]))
    full = dot_text(pdfa, max_edges=10, symbols=["a", "b"])
    assert 'q0 -> q1 [label="a : 0.7"' in full and 'q0 -> q0 [label="b : 0.2"' in full
    assert "transitions drawn" not in full
    one = dot_text(pdfa, max_edges=1)
    assert 'q0 -> q1 [label="0 : 0.7"' in one and "q0 -> q0" not in one
    assert "1 of 2 transitions drawn" in one
    assert "start0 -> q0" in one and "stop 1" in one
