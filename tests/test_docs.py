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
