"""Sphinx configuration of the bayesfa documentation site.

Build (warnings are errors, as in CI):   sphinx-build -W -b html docs docs/_build/html
Serve locally:                           python -m http.server -d docs/_build/html 8000

The built site needs no network: the equations' MathJax comes with it (sphinx-mathjax-offline).

Before the build, :func:`_generate` writes ``_generated/``: the command-line reference from
the CLI's own parsers (every command, and every method's options from its one declaration),
and copies of the executed notebooks (rendered with their stored outputs, never re-executed).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from docutils import nodes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

project = "bayesfa"
author = "the bayesfa developers"
copyright = "2026, the bayesfa developers"

# equations are rendered by the MathJax that sphinx-mathjax-offline ships (3.2.2, copied into
# _static/mathjax/ of the built site): the pages load nothing from the network, so they read
# offline. It sets ``mathjax_path`` to that copy; do not set it here to a URL.
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax",
              "sphinx-mathjax-offline"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are rendered with the outputs they were saved with
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
html_theme = "furo"
html_title = "bayesfa"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
# RESULTS.md and the notebooks are engineering records, written as markdown for GitHub: their
# heading levels and in-page links are not Sphinx's
suppress_warnings = ["myst.header", "myst.xref_missing", "mystnb.unknown_mime_type"]


#: classes a user receives and never constructs: documented without the constructor's
#: signature and parameters (``Run``'s are its private state; :func:`bayesfa.fit` and
#: :func:`bayesfa.load` make runs)
NO_CONSTRUCTOR = {"bayesfa.Run"}


def _hide_constructor(app, what, name, obj, options, signature, return_annotation):
    if what == "class" and name in NO_CONSTRUCTOR:
        return "", None
    return None


def _drop_constructor_parameters(app, domain, objtype, contentnode):
    """The constructor's parameters that ``autodoc_typehints = "description"`` added."""
    signature = contentnode.parent[0]
    name = f"{signature.get('module')}.{signature.get('fullname')}"
    if domain != "py" or objtype != "class" or name not in NO_CONSTRUCTOR:
        return
    for fields in [n for n in contentnode.children if isinstance(n, nodes.field_list)]:
        for field in list(fields.children):
            if field[0].astext().split()[0] in ("param", "type"):
                fields.remove(field)
        if not fields.children:
            contentnode.remove(fields)


def setup(app):
    app.connect("autodoc-process-signature", _hide_constructor)
    # after autodoc's own handler (priority 500), which adds the parameters
    app.connect("object-description-transform", _drop_constructor_parameters, priority=900)


def _help(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=96)
    return parser.format_help()


def _cli_reference() -> str:
    from bayesfa import method_options as options
    from bayesfa.cli import build_parser
    from bayesfa.methods import get_method, method_names

    parser = build_parser()
    out = ["# Command-line reference", "",
           "Generated from the command line's own parsers when the site is built.", "",
           "```text", _help(parser).rstrip(), "```", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        out += [f"## `bayesfa {name}`", "", "```text", _help(p).rstrip(), "```", ""]
    out += ["## Options of each method", "",
            "`bayesfa fit --method NAME` (and `bayesfa.fit(data, method=NAME, ...)`, with `_` "
            "for `-`) takes these options besides the common ones; the table is read from each "
            "method's one declaration (`bayesfa.options(NAME)`).", ""]
    for m in method_names():
        out += [f"### `{m}`", "", get_method(m).summary, "", "| option | default | help |",
                "|---|---|---|"]
        for o in options.declared(m):
            default = "switch" if o.switch else ("—" if o.optional else f"`{o.default!r}`")
            text = o.help.replace("|", "\\|").replace("\n", " ")
            out.append(f"| `{o.flag}` | {default} | {text} |")
        out.append("")
    return "\n".join(out)


def _generate() -> None:
    gen = HERE / "_generated"
    shutil.rmtree(gen, ignore_errors=True)
    (gen / "notebooks").mkdir(parents=True)
    (gen / "cli.md").write_text(_cli_reference())
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy2(nb, gen / "notebooks" / nb.name)


_generate()
