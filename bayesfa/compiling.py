"""numba's compilation on first use, said on stderr and stoppable with Ctrl-C.

numba compiles a method's kernels the first time they run (tens of seconds; then they load
from numba's on-disk cache). :func:`compile_notice` wraps a method's work: the first time numba
really compiles a disk-cached kernel inside it (not loaded from the cache, not compiled in
this process before), ``say`` gets one line, ``compiling NAME kernels (first use only, about N
s)``. Kernels that are deliberately compiled in every process (``cache=False``: the callers
of CGS-PFA's and the iPFA's fastmath sweeps, a second or three) do not trigger it.

Ctrl-C while numba compiles: Python raises KeyboardInterrupt at the next bytecode, which is
often inside one of LLVM's ctypes callbacks, where ctypes prints "Exception ignored on calling
ctypes callback function" and drops it, and the fit then runs to its end. Within
:func:`compile_notice` a Ctrl-C during compilation is also recorded, and raised again from
numba's next compiler event (a compiler pass starting or ending: ordinary Python code, usually
within a fraction of a second), so the command stops at once; the dropped one is not printed.

Every entry point that runs kernels wraps its work: ``bayesfa fit`` and :func:`bayesfa.fit`
(``Run.fit``'s job in :mod:`bayesfa.api`), ``predict``, ``perplexity`` and ``Run.predict``,
``Run.log_prob``, ``Run.perplexity``, ``sample``, ``decode``, ``export`` and ``Run.sample``,
``Run.decode``, ``Run.export``, ``validate`` and :func:`bayesfa.validate`, ``select``
and ``pautomac run`` (in this process, and in each Dask worker around its fit:
:func:`bayesfa.selection.run_fold`'s task, :func:`bayesfa.production._final_unit`). A
:func:`compile_notice` inside another one in the same thread does nothing: the outer one
(the command line's, which says the notice) handles the block, so the API's methods can wrap
themselves quietly and the command line around them still speaks once.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Callable, Iterator

_ACTIVE = threading.local()  # .on: a compile_notice is under way in this thread


def stderr_say(message: str) -> None:
    """The command line's way of saying a note: ``bayesfa: MESSAGE`` on standard error."""
    print(f"bayesfa: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def compile_notice(name: str, say: Callable[[str], None] | None,
                   seconds: float | None = None) -> Iterator[None]:
    """Within the block, tell ``say`` once when numba compiles one of ``name``'s cached
    kernels (``seconds``: about how long the first use compiles, if known), and stop numba's
    compilation at once on Ctrl-C (KeyboardInterrupt, raised from numba's next compiler
    event). ``say`` None: no notice (``--quiet``), Ctrl-C handled alike. Inside another
    :func:`compile_notice` of the same thread: nothing (the outer one handles the block)."""
    if getattr(_ACTIVE, "on", False):
        yield
        return
    _ACTIVE.on = True
    try:
        with _notice(name, say, seconds):
            yield
    finally:
        _ACTIVE.on = False


@contextlib.contextmanager
def _notice(name: str, say: Callable[[str], None] | None, seconds: float | None) -> Iterator[None]:
    from numba.core import event
    from numba.core.caching import NullCache

    main_thread = threading.current_thread() is threading.main_thread()

    class Listener(event.Listener):
        depth = 0  # numba:compile events under way (a kernel compiles its callees inside)
        said = False
        interrupted = False  # Ctrl-C arrived while compiling and may have been swallowed

        def on_start(self, ev):
            if ev.kind == "numba:compile":
                self.depth += 1
                cached = not isinstance(getattr(ev.data["dispatcher"], "_cache", None), NullCache)
                if cached and not self.said and say is not None:
                    self.said = True
                    about = f", about {seconds:.0f} s" if seconds else ""
                    say(f"compiling {name} kernels (first use only{about})")
            self._stop_if_interrupted()

        def on_end(self, ev):
            if ev.kind == "numba:compile":
                self.depth -= 1
            self._stop_if_interrupted()

        def _stop_if_interrupted(self):
            if self.interrupted and threading.current_thread() is threading.main_thread():
                self.interrupted = False
                raise KeyboardInterrupt

    listener = Listener()
    previous = signal.getsignal(signal.SIGINT) if main_thread else None

    def on_sigint(signum, frame):
        if listener.depth > 0:
            listener.interrupted = True
        previous(signum, frame)  # raises KeyboardInterrupt (Python's own handler)

    unraisable = sys.unraisablehook

    def on_unraisable(report):  # the Ctrl-C a ctypes callback drops: raised again, not printed
        if not (listener.interrupted and isinstance(report.exc_value, KeyboardInterrupt)):
            unraisable(report)

    with contextlib.ExitStack() as stack:
        for kind in ("numba:compile", "numba:run_pass"):
            stack.enter_context(event.install_listener(kind, listener))
        if callable(previous):  # a handler of Python's (not SIG_IGN / SIG_DFL): wrap it
            signal.signal(signal.SIGINT, on_sigint)
            stack.callback(signal.signal, signal.SIGINT, previous)
            sys.unraisablehook = on_unraisable
            stack.callback(setattr, sys, "unraisablehook", unraisable)
        yield
