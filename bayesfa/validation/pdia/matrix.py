"""The kill matrix of the PDFA / PDIA move checks (:mod:`bayesfa.validation.pdia.moves`): the
correct kernels and every named mutant over several seeds.

    python -m bayesfa.validation.pdia.matrix [pdfa] [pdia] [pdia-smoothed]
"""

from __future__ import annotations

import math

from bayesfa.validation.pdia.moves import ALPHA, pdfa_move_checks, pdia_move_checks


# -- the kill matrix of the move checks ---------------------------------------------------------

def family_move_checks(family: str, mutant: str | None, *, seed: int, alpha: float = ALPHA):
    """The move checks of ``family`` (``pdfa``, ``pdia``, ``pdia-smoothed``) for the correct
    kernel (``mutant=None``) or a named mutant, as ``validate`` runs them."""
    from bayesfa.validation.pdia.pdfa import MUTANTS

    label = family if mutant is None else f"{family}:mutant-{mutant}"
    if family == "pdfa":
        code = 0 if mutant is None else MUTANTS["pdfa"][mutant]
        return pdfa_move_checks(code, seed=seed, alpha=alpha, label=label)
    if family == "pdia":
        code = 0 if mutant is None else MUTANTS["pdia"][mutant]
        return pdia_move_checks(code, seed=seed, alpha=alpha, label=label)
    from bayesfa.validation.pdia.smoothed import KERNEL_MUTANTS

    code = 0 if mutant is None else KERNEL_MUTANTS[mutant]
    return pdia_move_checks(code, seed=seed, alpha=alpha, label=label, smoothed=True)


#: the mutants each family's move checks must catch (the others act on moves these checks do
#: not run: hyperparameter moves, caught by ``hyper-conditional``)
MATRIX = {"pdfa": ("no-proposal-ratio", "no-unseat-term", "seat-proposal-uniform-mu",
                   "mu-customers-not-tables", "mu-prior-gamma"),
          "pdia": ("no-proposal-ratio", "no-discount", "no-ambiguity-rule", "no-size-ratio",
                   "seat-proposal-no-discount", "dish-proposal-no-discount", "no-unseat-term",
                   "top-seating-d-for-d0"),
          "pdia-smoothed": ("no-ambiguity-rule", "no-size-ratio", "seat-proposal-no-discount",
                            "dish-proposal-no-discount", "no-unseat-term")}


def kill_matrix(families=("pdfa", "pdia", "pdia-smoothed"), seeds=range(5), out=print):
    """``[{family, mutant, seed, check, z, logp, passed}]`` for the correct kernel and every
    mutant of :data:`MATRIX` over ``seeds``; ``out`` gets a Markdown row per (family, mutant,
    check) with, per seed, ``z/L``: the largest detailed-balance ``z`` and ``L = -log10`` of
    the smallest chi-squared p-value (``move-mu``: ``L`` of the smallest KS p-value only), a
    ``*`` when the check failed."""
    rows = []
    for family in families:
        for mutant in (None,) + tuple(MATRIX[family]):
            per = {}
            for seed in seeds:
                for c in family_move_checks(family, mutant, seed=seed):
                    p = c.summary["min_p"] if c.name == "move-mu" else c.summary["min_chi2_p"]
                    logp = -math.log10(max(p, 1e-300))
                    z = None if c.name == "move-mu" else c.summary["max_db_z"]
                    rows.append({"family": family, "mutant": mutant or "(correct)", "seed": seed,
                                 "check": c.name, "z": z, "logp": logp, "passed": c.passed})
                    cell = (f"{logp:.1f}" if z is None else
                            f"{min(z, 99):.1f}/{min(logp, 300):.0f}" if logp >= 10 else
                            f"{min(z, 99):.1f}/{logp:.1f}")
                    per.setdefault(c.name, []).append((cell, c.passed))
            for name, vals in per.items():
                cells = " ".join(f"{s}{'' if ok else '*'}" for s, ok in vals)
                out(f"| {family} | {mutant or '(correct)'} | {name} | {cells} | "
                    f"{sum(not ok for _, ok in vals)}/{len(vals)} |")
    return rows


if __name__ == "__main__":  # python -m bayesfa.validation.pdia.matrix [family ...]
    import sys

    print("| method | mutant | check | per seed 0-4: max DB z / -log10 chi2 p (move-mu: "
          "-log10 KS p); * failed | failed |")
    print("|---|---|---|---|---|")
    kill_matrix(tuple(sys.argv[1:]) or ("pdfa", "pdia", "pdia-smoothed"))
