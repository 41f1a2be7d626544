"""The plug-in automaton of a fit: what ``bayesfa export``, ``Run.sample`` and ``Run.decode``
read from a sampler's (or an optimiser's) stored draws.

Every PFA-family front predicts by Eq. 6 of Shibata & Yoshinaka (2013): the mean over the
stored draws of ``Pr(b | xi~(s))``, ``xi~(s)`` the posterior mean of the parameters given draw
``s``'s counts (Sect. 2.3, Algorithm 1 line 9). Each draw's plug-in is one PFA. A front opts in
by mixing in :class:`DrawAutomata` and defining

- ``draw_grid(arrays) -> (chains, kept)``: the stored draws;
- ``draw_pfa(arrays, options, chain, k) -> PFA``: the plug-in of stored draw ``(chain, k)``,
  built by the SAME code as the front's per-draw predictive (its ``plugin_xi``), so the
  automaton gives every string exactly the plug-in probability the front predicts.

:meth:`DrawAutomata.automaton` gives, for ``which``:

- ``"map"``: the plug-in of the draw of highest recorded log joint (the trace's ``log_joint``
  ``[chain, draw]``; with ``--max-draws`` only the kept draws are candidates); an optimiser's
  single stored result (cvb0, gcvb0, cvb2: the final iterate; hmm-em: the best restart);
- ``"mean"``: the PFA whose parameters are the mean of the draws' plug-in parameters (a convex
  combination of PFAs on the same states is a PFA), where the states are the same from draw to
  draw (a fixed number ``N``); fronts whose states come and go (``mean_plugin = False``: the
  iPFA, the PDIA) refuse it in one line.

Plain numpy: importing this compiles nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bayesfa.automata import PFA
from bayesfa.errors import InputError

WHICH = ("map", "mean")


def check_which(which: str) -> str:
    if which not in WHICH:
        raise InputError(f"--which must be map or mean, got {which!r}")
    return which


def map_index(log_joint, grid: tuple[int, int], kept=None) -> tuple[int, int]:
    """``(chain, k)`` of the stored draw of highest log joint. ``log_joint`` ``[chain, draw]``
    covers every draw; the ``grid`` ``(chains, kept)`` stored draws are every draw or, given
    ``kept`` (the indices of the stored draws among a chain's draws, ``--max-draws``), those.
    Ties go to the first (chain-major, as ``np.argmax``)."""
    chains, n_kept = int(grid[0]), int(grid[1])
    if chains * n_kept == 1:
        return 0, 0
    if log_joint is None:
        raise InputError("the run has no log_joint trace to find its maximum-a-posteriori draw")
    lj = np.asarray(log_joint, dtype=np.float64)
    if kept is not None and lj.ndim == 2 and lj.shape[0] == chains:
        kept = np.asarray(kept)
        if kept.size == n_kept and (kept.size == 0 or kept.max() < lj.shape[1]):
            lj = lj[:, kept]
    if lj.shape != (chains, n_kept):
        raise InputError(f"the run's log_joint trace {lj.shape} does not match its "
                         f"{chains} x {n_kept} stored draws")
    if np.isnan(lj).all():
        raise InputError("the run's log_joint trace is all NaN: no maximum-a-posteriori draw")
    c, k = np.unravel_index(int(np.nanargmax(lj)), lj.shape)
    return int(c), int(k)


def mean_pfa(pfas) -> PFA:
    """The PFA of the mean ``init``, ``trans``, ``stop`` of PFAs on the same states."""
    init = trans = stop = None
    n = 0
    for p in pfas:
        if init is None:
            init, trans, stop = p.init.copy(), p.trans.copy(), p.stop.copy()
        else:
            init += p.init
            trans += p.trans
            stop += p.stop
        n += 1
    return PFA(init / n, trans / n, stop / n)


def reachable(pfa: PFA) -> PFA:
    """``pfa`` without the states no string reaches (numbered in their order): the same
    probability for every string."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    n = pfa.n_states
    edges = np.zeros((n + 1, n + 1), dtype=np.int8)  # node n: before the first letter
    edges[:n, :n] = pfa.trans.sum(axis=0) > 0
    edges[n, :n] = pfa.init > 0
    keep = np.sort(breadth_first_order(csr_matrix(edges), n, directed=True,
                                       return_predecessors=False))
    keep = keep[keep < n]
    if keep.size == n:
        return pfa
    return PFA(pfa.init[keep], pfa.trans[:, keep][:, :, keep], pfa.stop[keep])


class DrawAutomata:
    """The export hook of a front whose stored draws each have a plug-in PFA (module
    docstring). ``mean_plugin``: whether the posterior mean of the plug-in parameters is one
    automaton (the states are the same in every draw); ``trim``: drop unreachable states
    (fronts whose state labels are sparse)."""

    mean_plugin = True
    trim = False
    #: why ``which="mean"`` is refused (``mean_plugin = False``)
    no_mean_reason = "its states are not the same from draw to draw"

    def draw_grid(self, arrays: dict[str, np.ndarray]) -> tuple[int, int]:
        raise NotImplementedError

    def draw_pfa(self, arrays: dict[str, np.ndarray], options: dict[str, Any], chain: int,
                 k: int) -> PFA:
        raise NotImplementedError

    def kept_draws(self, options: dict[str, Any], n_draws: int):
        """Indices of the stored draws among a chain's ``n_draws`` (None: every draw)."""
        return None

    def draw_automata(self, arrays: dict[str, np.ndarray], options: dict[str, Any]) -> list[PFA]:
        """Every stored draw's plug-in, chain-major (the components of Eq. 6's mixture)."""
        chains, kept = self.draw_grid(arrays)
        return [self.draw_pfa(arrays, options, c, k) for c in range(chains) for k in range(kept)]

    def automaton(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                  which: str = "map", log_joint=None) -> PFA:
        """The plug-in automaton of the MAP draw (``which="map"``) or of the posterior mean of
        the plug-in parameters (``"mean"``); ``log_joint``: the run's trace ``[chain, draw]``."""
        grid = self.draw_grid(arrays)
        if check_which(which) == "mean":
            if not self.mean_plugin:
                raise InputError(f"--which mean: method {self.name} has no posterior-mean "
                                 f"automaton ({self.no_mean_reason}); use --which map")
            out = mean_pfa(self.draw_pfa(arrays, options, c, k)
                           for c in range(grid[0]) for k in range(grid[1]))
        else:
            kept = None if log_joint is None else self.kept_draws(options, np.shape(log_joint)[-1])
            out = self.draw_pfa(arrays, options, *map_index(log_joint, grid, kept))
        return reachable(out) if self.trim else out
