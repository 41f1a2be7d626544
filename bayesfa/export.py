"""Export the automaton a run learned: a PAutomaC model file or a Graphviz dot picture.

A method opts in by giving its registry object ``automaton(arrays, options)``, returning a
:class:`~bayesfa.automata.PDFA` (or a :class:`~bayesfa.automata.PFA`). The greedy learners
learn one automaton, which gives every string exactly the probability ``predict_log_prob``
gives it (smoothing included). The samplers and optimisers take ``automaton(arrays, options,
which, log_joint)`` (:class:`bayesfa.samplers.plugin.DrawAutomata`): ``which="map"`` the
plug-in automaton of the draw of highest log joint (the trace's ``log_joint``; an optimiser's
final iterate), ``which="mean"`` that of the posterior mean of the plug-in parameters where
one automaton exists for it. The n-gram models (hpyp, memoizer) have none, and
:func:`run_automaton` refuses them in one line.

The PAutomaC file of a PDFA is written from its sparse tables (``S: (q,a) pi/(1-stop)``,
``T: (q,a,delta) 1``), so machines with many states export without the dense
``[A, Q, Q]`` table; :func:`bayesfa.pautomac.read_model` (``bayesfa prob``) reads it back.
"""

from __future__ import annotations

import contextlib
import os
from typing import Callable, ContextManager, Sequence

import numpy as np

from bayesfa.automata import PDFA, PFA
from bayesfa.errors import InputError
from bayesfa.rundir import atomic_write, check_output, write_output, write_output_text

FORMATS = ("pautomac", "dot")
DEFAULT_MAX_EDGES = 200


def run_automaton(run, which: str = "map", log_joint=None) -> PDFA | PFA:
    """The automaton of a loaded run (:func:`bayesfa.rundir.load_run` or :class:`bayesfa.Run`):
    ``which`` ``"map"`` or ``"mean"`` (module docstring); ``log_joint``: a function returning
    the run's ``log_joint`` trace ``[chain, draw]`` (or None), called only if needed."""
    import inspect

    from bayesfa.methods import get_method, method_names
    from bayesfa.samplers.plugin import check_which

    check_which(which)
    if run.method not in method_names():
        raise InputError(f"unknown method {run.method!r} in the run's manifest", run.path)
    method = get_method(run.method)
    build = getattr(method, "automaton", None)
    if build is None:
        able = [n for n in method_names() if _has_automaton(n)]
        raise InputError(f"method {run.method} does not learn one automaton, so it has nothing to "
                         f"export (export works for: {', '.join(able)})", run.path)
    if "which" not in inspect.signature(build).parameters:  # one automaton: map and mean alike
        return build(run.arrays, run.options)
    grid = method.draw_grid(run.arrays) if hasattr(method, "draw_grid") else (1, 1)
    joint = log_joint() if log_joint is not None and grid[0] * grid[1] > 1 else None
    return build(run.arrays, run.options, which=which, log_joint=joint)


def _trace_log_joint(run):
    """The ``log_joint`` of a run folder's ``trace.nc`` (None without one)."""
    from bayesfa.rundir import TRACE, read_trace

    if run.trace_path is None:
        return None
    return read_trace(run.verify(TRACE)).get("log_joint")


def _has_automaton(name: str) -> bool:
    from bayesfa.methods import REGISTRY

    module, attr = REGISTRY[name].split(":")
    try:
        import importlib

        return hasattr(getattr(importlib.import_module(module), attr), "automaton")
    except Exception:  # a method whose module cannot be imported here cannot export either
        return False


def _edges(machine: PDFA | PFA):
    """``(q, a, r, p)`` arrays of every transition with positive probability."""
    if isinstance(machine, PDFA):
        q, a = np.nonzero((machine.delta >= 0) & (machine.pi > 0))
        return q, a, machine.delta[q, a], machine.pi[q, a]
    a, q, r = np.nonzero(machine.trans > 0)
    return q, a, r, machine.trans[a, q, r]


def write_pautomac(path: str | os.PathLike, machine: PDFA | PFA, guarded: bool = False) -> None:
    """Write ``machine`` as a PAutomaC model file (atomically; ``guarded``: through
    :func:`bayesfa.rundir.write_output`, ``-`` for standard output)."""
    if isinstance(machine, PFA):
        from bayesfa.pautomac import write_model

        if guarded:
            write_output(path, lambda tmp: write_model(tmp, machine), stream=True)
        else:
            atomic_write(path, lambda tmp: write_model(tmp, machine))
        return
    stop = machine.stop
    go = 1.0 - stop
    q, a, r, p = _edges(machine)
    lines = ["I: (state)", f"\t({machine.start}) 1.0", "F: (state)"]
    lines += [f"\t({s}) {float(f)!r}" for s, f in enumerate(stop) if f > 0]
    lines.append("S: (state,symbol)")
    lines += [f"\t({s},{b}) {float(x / go[s])!r}" for s, b, x in zip(q.tolist(), a.tolist(), p.tolist())]
    lines.append("T: (state,symbol,state)")
    lines += [f"\t({s},{b},{t}) 1.0" for s, b, t in zip(q.tolist(), a.tolist(), r.tolist())]
    _write_text(path, "\n".join(lines) + "\n", guarded)


def _write_text(path, text: str, guarded: bool) -> None:
    if guarded:
        write_output_text(path, text, stream=True)
        return

    def write(tmp):
        with open(tmp, "w") as f:
            f.write(text)

    atomic_write(path, write)


def dot_text(machine: PDFA | PFA, max_edges: int = DEFAULT_MAX_EDGES,
             symbols: Sequence[str] | None = None, name: str = "automaton") -> str:
    """Graphviz dot of ``machine``: states labelled with their number and stop probability,
    edges with ``symbol : probability``. Above ``max_edges`` transitions, only the
    ``max_edges`` most probable are drawn (ties by state, symbol), and the states no kept
    edge touches are left out; a note in the graph's label says how many were dropped."""
    if max_edges < 1:
        raise InputError(f"--max-edges must be positive, got {max_edges}")
    q, a, r, p = _edges(machine)
    n_edges = q.size
    keep = np.lexsort((a, q, -p))[:max_edges]
    keep.sort()
    q, a, r, p = q[keep], a[keep], r[keep], p[keep]
    if isinstance(machine, PDFA):
        starts = [machine.start]
    else:
        starts = np.flatnonzero(machine.init > 0).tolist()
    states = sorted(set(q.tolist()) | set(r.tolist()) | set(starts))
    label = (lambda b: str(symbols[b])) if symbols is not None else str
    out = [f"digraph {name} {{", "  rankdir=LR;", '  node [shape=circle, fontsize=10];',
           '  edge [fontsize=9];']
    if n_edges > q.size:
        out.append(f'  label="{q.size} of {n_edges} transitions drawn (the most probable)";')
    for s in states:
        shape = "doublecircle" if machine.stop[s] > 0.5 else "circle"
        out.append(f'  q{s} [label="{s}\\nstop {machine.stop[s]:.3g}", shape={shape}];')
    for s in starts:
        out.append(f'  start{s} [shape=point]; start{s} -> q{s};')
    for s, b, t, x in zip(q.tolist(), a.tolist(), r.tolist(), p.tolist()):
        text = label(b).replace('"', '\\"')
        out.append(f'  q{s} -> q{t} [label="{text} : {x:.3g}", penwidth={0.5 + 2.5 * x:.2f}];')
    out.append("}")
    return "\n".join(out) + "\n"


def write_dot(path: str | os.PathLike, machine: PDFA | PFA, max_edges: int = DEFAULT_MAX_EDGES,
              symbols: Sequence[str] | None = None, guarded: bool = False) -> None:
    """Write :func:`dot_text` of ``machine`` to ``path`` (atomically; ``guarded``: see
    :func:`write_pautomac`)."""
    _write_text(path, dot_text(machine, max_edges, symbols), guarded)


def export_run(run_dir: str | os.PathLike, fmt: str, out: str | os.PathLike,
               max_edges: int = DEFAULT_MAX_EDGES, which: str = "map",
               compiling: Callable[[str], ContextManager] | None = None) -> PDFA | PFA:
    """Load ``run_dir`` and write its automaton (``which``: ``map`` or ``mean``, see
    :func:`run_automaton`) to ``out`` in ``fmt`` (pautomac or dot), through the guarded writer
    (:func:`bayesfa.rundir.write_output`; ``-``: standard output). ``compiling(method)``: a
    context around the automaton's building, given the run's method (the command line's
    :func:`bayesfa.compiling.compile_notice`)."""
    from bayesfa.rundir import load_run
    from bayesfa.samplers.plugin import check_which

    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r} (choose {' or '.join(FORMATS)})")
    check_which(which)
    check_output(out, stream=True)  # before any work
    run = load_run(run_dir)
    try:
        with (compiling or (lambda method: contextlib.nullcontext()))(run.method), \
                np.errstate(invalid="ignore"):
            machine = run_automaton(run, which, lambda: _trace_log_joint(run))
    except InputError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise InputError(f"arrays.npz does not fit the manifest's {run.method} run "
                         f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})",
                         run.path) from None
    if fmt == "pautomac":
        write_pautomac(out, machine, guarded=True)
    else:
        symbols = run.manifest.get("train", {}).get("alphabet")
        write_dot(out, machine, max_edges, symbols, guarded=True)
    return machine
