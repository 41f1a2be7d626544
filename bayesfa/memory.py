"""Refuse, before any work, a fit that cannot fit in memory.

Every method may define ``estimate_memory(corpus, options) -> int``: the peak number of
bytes its ``fit`` and a ``predict_log_prob`` on a corpus of the same size will need, stored
draws included (see :mod:`bayesfa.methods`). :func:`check_fits` compares that figure with the
memory this machine has available now (:func:`available_memory`) and raises a one-line
:class:`~bayesfa.errors.TooLargeError` naming the figure and what to change.

A method without ``estimate_memory`` (one being written) is let through unchecked: the
protocol grows one method at a time, and an unknown need is not a reason to refuse.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bayesfa.errors import TooLargeError

#: Which options to name in a refusal, in order, and how (only those the method has).
_HINTS = (("period", "a larger --period"), ("iterations", "fewer --iterations"),
          ("states", "fewer --states"), ("chains", "fewer --chains"),
          ("jobs", "fewer --jobs"), ("max_tables", "a smaller --max-tables"))


def _cgroup_limit() -> int | None:
    """Memory left under this process's cgroup limit (v2 or v1), if it has one."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or not limit.isdigit() or int(limit) >= 1 << 60:
            return None
        return max(0, int(limit) - usage)
    return None


def available_memory() -> int:
    """Bytes a new allocation can get now without swapping: ``psutil``'s ``available``
    (``MemAvailable`` of ``/proc/meminfo`` on Linux), capped by the cgroup limit if any.

    ``$BAYESFA_AVAILABLE_MEMORY`` (bytes) overrides it, for tests and for users who want to
    leave room for other jobs.
    """
    override = os.environ.get("BAYESFA_AVAILABLE_MEMORY")
    if override:
        return int(override)
    try:
        import psutil

        free = int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil is a dependency
        free = _meminfo_available()
    limit = _cgroup_limit()
    return free if limit is None else min(free, limit)


def _meminfo_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise OSError("MemAvailable not found in /proc/meminfo")


def format_bytes(n: float) -> str:
    """``1536 -> '1.5 KiB'``; binary units, three significant digits."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def estimate(method, corpus, options: dict[str, Any]) -> int | None:
    """``method.estimate_memory(corpus, options)``, or None when the method has none."""
    fn = getattr(method, "estimate_memory", None)
    return None if fn is None else int(fn(corpus, dict(options)))


def check_fits(method, corpus, options: dict[str, Any], *, copies: int = 1,
               what: str | None = None, available: int | None = None) -> int | None:
    """Raise :class:`TooLargeError` when ``copies`` concurrent fits of ``method`` on
    ``corpus`` with ``options`` need more than the available memory; return the estimate.

    ``what`` describes the work in the message (default: the method's name and options that
    set the size); ``copies`` is the number of fits running at once (``select --workers``).
    """
    need = estimate(method, corpus, options)
    if need is None:
        return None
    need *= copies
    available = available_memory() if available is None else available
    if need <= available:
        return need
    name = getattr(method, "name", "the method")
    if what is None:
        sizes = [f"--{k.replace('_', '-')} {options[k]}" for k in ("states", "chains", "iterations",
                                                                     "burn_in", "period")
                 if k in options]
        what = f"{name} with {' '.join(sizes)}" if sizes else name
    hints = [text for key, text in _HINTS
             if key in options and not (key in ("chains", "jobs") and options[key] == 1)]
    if copies > 1:
        hints.append("fewer --workers")
    change = ", ".join(hints[:-1]) + (" or " if len(hints) > 1 else "") + hints[-1] if hints else \
        "smaller settings"
    raise TooLargeError(f"{what} needs about {format_bytes(need)} of memory (stored draws included), "
                        f"but {format_bytes(available)} is available; use {change}")


# -- shared pieces of the estimates --------------------------------------------------------------

def padded_bytes(corpus) -> int:
    """``corpus.padded()`` and its temporaries: int32 letters, their mask, the flat letters."""
    width = int(corpus.lengths.max()) if corpus.n_strings else 0
    return corpus.n_strings * width * 5 + corpus.n_tokens * 9


def _block_padded_bytes(corpus, n_strings: int) -> int:
    """:func:`padded_bytes` of a block of ``n_strings`` consecutive strings of ``corpus``
    (:func:`bayesfa.forward.string_block`), each taken as long as the longest."""
    if n_strings >= corpus.n_strings:
        return padded_bytes(corpus)
    width = int(corpus.lengths.max()) if corpus.n_strings else 0
    return n_strings * (width * 5 + 8) + min(corpus.n_tokens, n_strings * (width + 1)) * 9


def forward_bytes(n_samples: int, n_states: int, corpus, n_strings: int | None = None) -> int:
    """Working memory of :func:`bayesfa.forward.forward_log_prob` for ``n_samples`` automata
    of ``n_states`` states on ``corpus`` (or on a block of its first ``n_strings`` strings,
    each taken as long as the longest): inputs excluded, output ``[S, n_strings]`` included;
    then, for one chunk of samples and strings (:func:`bayesfa.forward.forward_chunks`), the
    padded letters, the messages, their gathered copy and product, the log scales."""
    from bayesfa.forward import forward_chunks

    n = corpus.n_strings if n_strings is None else min(n_strings, corpus.n_strings)
    chunk, block = forward_chunks(n_samples, n, n_states)
    block = min(block, max(1, n))
    return (_block_padded_bytes(corpus, block) + n_samples * max(1, n) * 8
            + chunk * block * (3 * n_states * 8 + 4 * 8))


def eq6_bytes(n_samples: int, xi_samples: int, xi_bytes: int, n_states: int, corpus) -> int:
    """Peak of Eq. 6 over ``n_samples`` draws on ``corpus`` by
    :func:`bayesfa.forward.log_mean_exp_by_strings` (inputs excluded): the ``[n_strings]``
    result; for each block of strings (:func:`bayesfa.forward.mean_block`) the ``[S, block]``
    table and either the mean's two temporaries or a chunk of ``xi_samples`` plug-in automata
    (``xi_bytes`` each, three float64 copies) with its forward pass over the block."""
    from bayesfa.forward import mean_block

    n = max(1, corpus.n_strings)
    block = mean_block(n_samples, corpus.n_strings)
    table = n_samples * block * 8
    work = max(3 * xi_samples * xi_bytes + forward_bytes(xi_samples, n_states, corpus, block),
               2 * table)
    return n * 8 + table + work


def xi_predictive_bytes(n_samples: int, n_states: int, n_symbols: int, corpus) -> int:
    """Peak of :func:`bayesfa.models.pfa.predictive_log_prob` on float64 ``xi``
    ``[S, Q, A, Q]`` (``Q = n_states``, ``A = n_symbols``, the end marker included): the draws,
    the contiguous transition tensor made from them, the forward pass and the log-mean-exp."""
    xi = n_samples * n_states * n_symbols * n_states * 8
    return 2 * xi + forward_bytes(n_samples, n_states, corpus) + 2 * n_samples * corpus.n_strings * 8


def distinct_strings(corpus) -> int:
    """How many distinct strings ``corpus`` holds (the oracles fit on those, weighted)."""
    t, o = corpus.tokens, corpus.offsets
    return len({t[a:b].tobytes() for a, b in zip(o[:-1].tolist(), o[1:].tolist())})
