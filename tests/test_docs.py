"""The documentation site covers what a user can reach: every public name has an API entry and
every registered method a page. (The site itself is built with warnings as errors by .ci/run.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bayesfa
from bayesfa.methods import method_names

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_public_name_has_an_api_entry():
    api = (DOCS / "api.md").read_text()
    documented = set(re.findall(r"\.\. auto(?:function|class):: bayesfa\.(\w+)", api))
    public = {n for n in bayesfa.__all__ if n != "__version__"}
    assert public <= documented, sorted(public - documented)


@pytest.mark.parametrize("method", method_names())
def test_every_method_has_a_page(method):
    pages = {p: p.read_text() for p in (DOCS / "methods").glob("*.md") if p.name != "index.md"}
    assert any(f"`{method}`" in text for text in pages.values()), f"no page names `{method}`"


def test_the_site_lists_its_pages():
    index = (DOCS / "index.md").read_text()
    for page in ("getting-started", "methods/index", "validation", "production", "cli", "api",
                 "notebooks", "results"):
        assert page in index and (DOCS / f"{page}.md").is_file()


def test_the_readme_python_example_runs_and_uses_the_api(capsys):
    readme = (DOCS.parent / "README.md").read_text()
    block = readme.split("## Python in ten lines", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert "bayesfa.fit(" in block and len(block.strip().splitlines()) <= 12
    exec(compile(block, "README.md", "exec"), {})
    ratio = float(capsys.readouterr().out.split("ratio=")[1].rstrip(")\n"))
    assert 1.0 <= ratio < 1.01


# -- the API page: Run's public surface, each entry with a docstring that renders -------------

def _run_members() -> list[str]:
    api = (DOCS / "api.md").read_text()
    block = api.split(".. autoclass:: bayesfa.Run", 1)[1].split("```", 1)[0]
    return [m.strip() for m in re.search(r":members:(.*)", block).group(1).split(",")]


def _public_run_names() -> set[str]:
    import dataclasses

    fields = {f.name for f in dataclasses.fields(bayesfa.Run)}
    return {n for n in set(vars(bayesfa.Run)) | fields if not n.startswith("_")}


def test_the_api_page_lists_runs_public_attributes_and_methods_only():
    members = _run_members()
    assert set(members) == _public_run_names(), (sorted(set(members) - _public_run_names()),
                                                 sorted(_public_run_names() - set(members)))


def test_every_public_member_of_run_has_a_docstring_that_napoleon_leaves_whole():
    """Napoleon reads a property's or attribute's first line ``X: Y`` as ``type: text``
    (Run.alphabet once rendered "TYPE: The symbols of letters 0, 1, ... (None"): no member's
    docstring may start that way, and each has one."""
    pytest.importorskip("sphinx")  # the docs extra
    import inspect

    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import GoogleDocstring, NumpyDocstring
    from sphinx.pycode import ModuleAnalyzer

    fields = {name: "\n".join(lines) for (cls, name), lines in
              ModuleAnalyzer.for_module("bayesfa.api").find_attr_docs().items() if cls == "Run"}
    for name in _run_members():
        value = vars(bayesfa.Run).get(name)
        if value is None:  # a dataclass field: its ``#:`` comment
            doc, what = fields.get(name, ""), "attribute"
        else:
            doc, what = inspect.getdoc(value) or "", ("property" if isinstance(value, property)
                                                      else "method")
        assert doc.strip(), f"Run.{name} has no docstring"
        for style in (GoogleDocstring, NumpyDocstring):
            rendered = str(style(doc, Config(), what=what, name=f"bayesfa.Run.{name}"))
            assert ":type:" not in rendered, (name, rendered)


def test_the_readme_helpers_have_api_entries_and_docstrings():
    import importlib

    readme = (DOCS.parent / "README.md").read_text()
    block = readme.split("## Python in ten lines", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    helpers = re.findall(r"from (bayesfa\.\w+) import (\w+)", block)
    assert helpers  # pautomac_path, read_solution, score_all
    api = (DOCS / "api.md").read_text()
    for module, name in helpers:
        assert re.search(rf"\.\. auto(?:function|class):: {re.escape(module)}\.{name}\b", api), name
        assert (getattr(importlib.import_module(module), name).__doc__ or "").strip(), name


# -- equations without the network ------------------------------------------------------------

def _conf_value(name: str):
    import ast

    tree = ast.parse((DOCS / "conf.py").read_text())
    values = [ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    return values[-1] if values else None


def _script_sources(html_dir: Path) -> set[str]:
    return {src for page in html_dir.rglob("*.html")
            for src in re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", page.read_text())}


def test_equations_load_mathjax_from_the_site_not_the_network(tmp_path):
    """conf.py's extensions (read from it, not executed: executing it writes _generated/)
    render a page with an equation whose scripts are all files of the built site: MathJax
    comes from sphinx-mathjax-offline, not a CDN. A few seconds: one small page."""
    pytest.importorskip("sphinx")
    from sphinx.application import Sphinx

    extensions = _conf_value("extensions")
    assert "sphinx-mathjax-offline" in extensions and _conf_value("mathjax_path") is None
    pyproject = (DOCS.parent / "pyproject.toml").read_text()
    assert re.search(r'^docs = \[.*"sphinx-mathjax-offline', pyproject, re.M)
    src = tmp_path / "src"
    src.mkdir()
    myst = _conf_value("myst_enable_extensions")
    (src / "conf.py").write_text(f"extensions = {extensions!r}\nmyst_enable_extensions = {myst!r}\n")
    (src / "index.md").write_text("# Page\n\nInline $\\xi_{qa}$ and\n\n$$\\sum_x p(x) = 1$$\n")
    out = tmp_path / "html"
    Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None,
           warning=None, warningiserror=True).build()
    page = (out / "index.html").read_text()
    assert "math notranslate" in page  # the equations are there for MathJax to render
    sources = _script_sources(out)
    assert any("mathjax" in s.lower() for s in sources), sources
    for s in sources:
        assert not re.match(r"(https?:)?//", s), f"a script from the network: {s}"
        assert (out / s.split("?")[0]).is_file(), f"{s} is not in the built site"


@pytest.mark.slow
def test_the_built_site_loads_no_script_from_the_network(tmp_path):
    """The whole site, built as CI builds it: no page loads a script from the network, the
    MathJax it loads is in the site, and the API page shows no private field of Run."""
    import subprocess
    import sys

    pytest.importorskip("sphinx")
    out = tmp_path / "html"
    subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(DOCS),
                    str(out)], check=True)
    sources = _script_sources(out)
    assert any("mathjax" in s.lower() for s in sources)
    for page in out.rglob("*.html"):
        for s in re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", page.read_text()):
            assert not re.match(r"(https?:)?//", s), f"{page.name} loads {s} from the network"
            assert (page.parent / s.split("?")[0]).resolve().is_file(), (page.name, s)
    api = (out / "api.html").read_text()
    for private in ("_arrays", "_trace", "_loaded", "_prediction"):
        assert not re.search(rf"\b{private}\b", api), private  # (scalar_trace is public)


# -- hpyp and the memoizer: the result names its quantity ---------------------------------

@pytest.mark.parametrize("method, options", [("hpyp", {"order": 2, "iterations": 30,
                                                       "burn_in": 10, "chains": 2}),
                                             ("memoizer", {})])
def test_perplexity_names_its_quantity_and_which_to_compare(method, options, tmp_path, capsys):
    """On sentences, perplexity's log_prob (the test read as one growing sample) and the sum
    of predict (each string given the training data only) differ, and the result says which
    is which; on a sequence they are one quantity, and the result says so too."""
    import json

    from bayesfa.cli import main

    train = ["ab", "abab", "b", "ab", "aab", "ba"] * 3
    test = ["ab", "ab", "abab", "b", "ab", "aab"]
    run = bayesfa.fit(train, method=method, seed=2, **options)
    out = run.perplexity(test)
    summed = float(run.predict(test).sum())
    assert out["log_prob"] != pytest.approx(summed, abs=1e-6)  # two quantities here
    assert "integrated as they are read" in out["quantity"]
    assert "not the sum of `bayesfa predict`" in out["quantity"]
    assert "compare" in out["quantity"] and out["estimator"]
    per_symbol = run.perplexity(test, per_symbol=True)["quantity"]
    assert per_symbol.startswith("sum_t log mean_k" if method == "hpyp" else "log p(test | train)")
    seq = bayesfa.fit(train, method=method, seed=2, sequence=True, **options)
    out_seq = seq.perplexity(test)
    assert out_seq["log_prob"] == pytest.approx(float(seq.predict(test).sum()), abs=1e-9)
    assert "same quantity as the sum of `bayesfa predict`" in out_seq["quantity"]
    # the command line says it: in its help, and in what it prints (a run folder fitted
    # from a file: the same quantity)
    from bayesfa.cli import build_parser

    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices
               and "perplexity" in a.choices)
    help_text = " ".join(sub.choices["perplexity"].description.split())
    assert "same quantity for every method" in help_text
    files = {}
    for name, strings in (("train", train), ("test", test)):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(strings) + "\n")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    assert main(["fit", str(files["train"]), "--format", "lines", "--method", method, *flags,
                 "--seed", "2", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["perplexity", str(tmp_path / "run"), str(files["test"]), "--format",
                 "lines"]) == 0
    assert out["quantity"] in capsys.readouterr().out
    assert main(["perplexity", str(tmp_path / "run"), str(files["test"]), "--format", "lines",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["quantity"] == out["quantity"]


def test_the_guide_gives_the_checkpoint_interval_the_cli_uses(capsys):
    """docs/guide.md states ``--checkpoint-every``'s default in seconds: it is the default
    ``bayesfa fit --help`` gives (issue 39: a mutant of the constant behind it changed no
    killer test's result). Read through the command line, which the docs describe, so that
    this file names no sampler module and stays out of the mutation runner's killers (its
    work copy holds no ``docs/``)."""
    from bayesfa.cli import main

    with pytest.raises(SystemExit):
        main(["fit", "--method", "cgs-pfa", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    given = re.findall(r"--checkpoint-every SECONDS save each running chain's state [^;]*; "
                       r"default (\d+(?:\.\d+)?)", help_text)
    guide = (DOCS / "guide.md").read_text(encoding="utf-8")
    stated = re.findall(r"--checkpoint-every SECONDS` \(default (\d+(?:\.\d+)?)", guide)
    assert given and stated and {float(x) for x in stated} == {float(given[0])}, (given, stated)
