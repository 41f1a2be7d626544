"""The import structure of ARCHITECTURE.md, checked on the source (every ``import`` statement,
module level and inside functions alike):

- no import runs up the floors: ground -> methods by family (models, samplers, learners) ->
  validation -> application (CLI, production, the public API);
- the NumPyro oracles stay apart from the numba methods: models never import samplers or
  learners, and samplers and learners never import models, NumPyro, JAX or funsor;
- there is no import cycle between modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bayesfa"

#: floor of each top-level name below ``bayesfa`` (anything not listed is ground, floor 0)
FLOORS = {"models": 1, "samplers": 1, "learners": 1, "validation": 2,
          "export": 3, "selection": 3, "production": 3, "cli": 3, "api": 3,
          "": 3}  # "" is the package's own __init__ (the public names)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of bayesfa (or external top-level package) that ``path`` imports."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in modules else node.module)
    return out


def _floor(module: str) -> int:
    parts = module.split(".")
    return FLOORS.get(parts[1] if len(parts) > 1 else "", 0)


def _family(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


GRAPH = {m: _imports(p, _modules()) for m, p in _modules().items()}


def test_the_graph_is_read():
    assert "bayesfa.samplers.pfa.cgs_pfa" in GRAPH
    assert "bayesfa.samplers.chains" in GRAPH["bayesfa.samplers.pfa.cgs_pfa"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_import_runs_up_the_floors(module):
    up = sorted(t for t in GRAPH[module]
                if t.startswith("bayesfa.") and t in GRAPH and _floor(t) > _floor(module))
    assert not up, f"{module} (floor {_floor(module)}) imports {up}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_models_samplers_and_learners_keep_apart(module):
    family = _family(module)
    targets = {t for t in GRAPH[module]}
    if family == "models":
        bad = {t for t in targets if _family(t) in ("samplers", "learners") and t.startswith("bayesfa.")}
    elif family in ("samplers", "learners"):
        bad = {t for t in targets if t.startswith("bayesfa.models")
               or t.split(".")[0] in ("jax", "numpyro", "funsor")}
    else:
        bad = set()
    assert not bad, f"{module} imports {sorted(bad)}"


def test_no_import_cycle():
    internal = {m: {t for t in ts if t in GRAPH and t != m} for m, ts in GRAPH.items()}
    # a module imports its package's __init__ implicitly; only explicit edges count here
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(internal[m]):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(internal):
        if m not in state:
            visit(m)


# -- what imports the package from outside: notebooks and benchmarks --------------------------

ROOT = PACKAGE.parent


def _outside_imports() -> list[tuple[str, str, str]]:
    """``(where, module, name)`` of every ``from bayesfa... import name`` in the notebooks'
    code cells and the benchmark scripts (``name`` empty for ``import bayesfa...``)."""
    import json

    sources = [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("benchmarks/**/*.py"))]
    for nb in sorted(ROOT.glob("notebooks/*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
        sources.append((str(nb.relative_to(ROOT)), code))
    out = []
    for where, text in sources:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bayesfa"):
                out += [(where, node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                out += [(where, a.name, "") for a in node.names if a.name.startswith("bayesfa")]
    return out


def test_notebooks_and_benchmarks_import_what_exists():
    import importlib

    imports = _outside_imports()
    assert len(imports) > 20
    missing = []
    for where, module, name in imports:
        try:
            mod = importlib.import_module(module)
        except ImportError as err:
            missing.append(f"{where}: {module} ({err})")
            continue
        if name and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{where}: {module}.{name}")
    assert not missing, missing
