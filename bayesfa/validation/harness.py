"""The validation harness: run a method on a toy and compare it with the exact answer.

:func:`compare` fits a method (through :func:`bayesfa.methods.get_method`, or a mutant of
:mod:`bayesfa.validation.pfa.mutants`) on a toy of :mod:`bayesfa.validation.toys` with a small
budget and compares its posterior predictive ``Pr(b | alpha)`` of every test string (all
strings up to length 3) with the exact reference for what that method estimates:

``cgs-pfa`` (and its mutants)
    the plug-in limit ``sum_z Pr(z | alpha) Pr(b | xi~(z))`` (Sect. 2.3, footnote 2), which
    is what Eq. 6 with ``xi~ = E[xi | alpha, z]`` converges to. The exact posterior
    predictive ``Pr(b | alpha)`` is reported next to it; the difference is the plug-in bias
    (Jensen: the plug-in misses the Polya-urn self-reinforcement inside ``b``), which is
    *not* a sampler error.
``oracle-pfa``
    the exact posterior predictive ``Pr(b | alpha)`` of Eq. 5 (NUTS draws ``xi`` itself).
``oracle-hmm``, ``oracle-pdfa``
    the exact posterior predictive of their own model by the enumeration of the model's module
    (``bayesfa.models.hmm.exact_predictive``, ``bayesfa.models.pdfa.exact_predictive``, with
    the hyperparameters of the fit's options); without one the check reports ``unavailable``
    and fails (nothing was compared). ``oracle-pdfa`` is run with ``--pdfa-inference mcmc``
    (:data:`BUDGETS`): its default on toys is the enumeration itself, which would compare
    the enumeration with itself (that case is still handled: no Monte Carlo error, so the
    predictive must match to 1e-9).

Methods that join later plug in through a *validation spec*, so that this module has no branch
per method. A registry object names its spec by import path, ``validation =
"bayesfa.validation.MODULE:OBJECT"`` (samplers never import validation or NumPyro code), and
the spec has any of these optional attributes (a mutant, the object ``mutant(variant)``
returns, may carry them itself). ``validate METHOD`` sees the method as a user gets it (issue
39: a class default of a mutant's code passed while specs reset ``variant`` to 0): a
registered instance that carries a named mutant's variant attributes is validated as that
mutant (:func:`registered_as`), and a spec that runs the method's code itself uses the
registered instance (:func:`bayesfa.methods.get_method`) with its own ``variant``
(``tests/test_learner_mutants.py``: ``test_wrong_class_default_variant_fails_validate``,
``test_registered_as_names_each_mutant_a_registered_instance_can_be``):

``validation_budget`` : dict
    small-budget option overrides on toys (like :data:`BUDGETS`, which keeps the entries of
    the methods that predate the hooks);
``validation_options`` : dict
    options the method's ``fit`` reads for validation fits only (not among its CLI options,
    so not dropped like unknown budget keys): e.g. HPYP's ``record_seating``, which keeps the
    state its ``recorded`` check recomputes from;
``exact_reference(toy, test, options) -> {"reference", "exact", "kind"}``
    the exact value (log probabilities ``[n_strings]``) that the method's predictive
    estimates on ``toy`` (see :func:`exact_reference`);
``per_sample_log_prob(arrays, options, test) -> [chain, draw, n_strings]``
    per-draw log predictive values whose mean (in probability) is the method's estimate;
    used for the Monte Carlo error before the generic layouts of :func:`per_sample_probs`;
``kernel_checks(toy, *, seed, alpha) -> list[Check]``
    further checks of the kernel (Geweke, path GOF, ...) that :func:`validate` runs;
``mutant_names() -> list[str]`` and ``mutant(variant) -> method``
    deliberately wrong kernels, validated as ``NAME:mutant-VARIANT``;
``deterministic_checks(toy, *, seed, alpha) -> list[Check]``
    for methods that do not sample (CVB, greedy learners, EM): exact checks that replace the
    predictive-vs-Monte-Carlo comparison (:func:`compare` is not run). Each check is exact
    (a tolerance on rounding, no false alarm) unless its description says otherwise;
``check_names() -> list[str]``
    the names of the checks ``validate`` runs for the method (the predictive comparison's
    ``predictive`` included when it is run), for ``bayesfa validate --list`` without running
    anything (``recorded`` added when the spec has ``recompute_trace``). ``cgs-pfa``, which
    has no spec, is listed from :func:`~bayesfa.validation.pfa.kernel_tests.cgs_pfa_check_names`.
    A spec without it is listed with the names known without running (``predictive``) and a
    note that its ``kernel_checks`` add checks named when run;
``recompute_trace(arrays, trace, options, train) -> (recomputed, extra_rows)``
    every per-draw quantity of the fit's trace recomputed from its recorded state by code
    written apart from the sampler (:mod:`bayesfa.validation.recorded`): the ``recorded``
    check, which fails on any trace entry it does not recompute;
``predictive`` : bool
    False: the spec has no exact reference for this fit (the iPFA's blocked mutants: the
    weak limit's exact checks are their kernel checks), so the fit feeds the ``recorded``
    check only and no ``predictive`` check is reported (an unavailable reference otherwise
    fails it, which would count a mutant as caught by nothing it got wrong);
``not_applicable`` : str
    the reason why the method has no exact reference: ``validate`` then reports "not
    applicable" with the reason and succeeds (exit 0), never FAILED.

Tolerance. For each string the per-sample values ``p_s = Pr(b | xi_s)`` form a
``(chain, draw)`` series; the estimate is their mean and its Monte Carlo standard error is
``sd / sqrt(ESS)`` (ArviZ's ESS for the mean, which accounts for autocorrelation and
between-chain differences). ``z = (estimate - reference) / MCSE`` and a string passes when
``|z| <= z*`` with ``z* = Phi^{-1}(1 - alpha / (2 m))`` over the ``m`` strings (Bonferroni):
the probability that a correct sampler fails is at most ``alpha`` (default 1e-3) up to the
normal approximation of the mean and the error of the estimated ESS. Strings whose
``p_s`` is the same for every sample (e.g. the empty string under CGS-PFA, whose plug-in
probability depends only on the data) must match to 1e-9 relative.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from bayesfa.corpus import Corpus
from bayesfa.rundir import jsonable as _jsonable  # strict JSON: non-finite -> null + note
from bayesfa.validation.checks import Check, _fmt  # noqa: F401 (Check: re-exported)
from bayesfa.validation.toys import Toy, format_string, get_toy, all_strings

ALPHA = 1e-3

#: Small per-method budgets (overrides of the method's own defaults) for toy sizes. The
#: toy sets ``states`` for every method and ``beta`` for the PFA models (Eq. 2); the HMM and
#: PDFA oracles keep their own hyperparameters (different meanings), set here.
BUDGETS: dict[str, dict[str, Any]] = {
    "cgs-pfa": {"iterations": 40_200, "burn_in": 200, "period": 2, "chains": 4, "jobs": 1},
    "oracle-pfa": {"iterations": 1_500, "burn_in": 500, "period": 1, "chains": 4},
    # alpha != beta (issue 39: a slip that puts one where the other belongs is invisible
    # where they are equal)
    "oracle-hmm": {"iterations": 1_500, "burn_in": 500, "period": 1, "chains": 4,
                   "alpha": 0.4, "beta": 0.7},
    # MCMC (DiscreteHMCGibbs), not the enumeration the method does by default on toys, so
    # that the comparison with the exact enumeration tests something; alpha, beta, gamma
    # distinct and none 1 (issue 39), as pdfa's
    "oracle-pdfa": {"iterations": 1_500, "burn_in": 500, "period": 1, "chains": 4,
                    "pdfa_inference": "mcmc", "alpha": 1.3, "beta": 0.7, "gamma": 1.6},
}
_TOY_BETA = ("cgs-pfa", "oracle-pfa")


# -- report ---------------------------------------------------------------------------------

@dataclass
class Report:
    """The checks of one method on one toy; ``passed`` when every gating check passed.
    ``not_applicable``: the reason the method has no reference (no checks; :attr:`ok`)."""

    method: str
    toy: str
    checks: list[Check]
    info: dict[str, Any] = field(default_factory=dict)
    not_applicable: str | None = None
    #: the fit the checks ran on (:func:`compare`'s), for the ``recorded`` check; not reported
    fit: Any = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def status(self) -> str:
        """``"passed"``, ``"failed"`` or ``"not applicable"``."""
        if self.not_applicable is not None:
            return "not applicable"
        return "passed" if self.passed else "failed"

    @property
    def ok(self) -> bool:
        """What ``bayesfa validate`` exits 0 on: passed, or not applicable."""
        return self.passed or self.not_applicable is not None

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Rows of the predictive comparison (string, estimate, reference, mcse, z, pass)."""
        for c in self.checks:
            if c.name == "predictive":
                return c.rows
        return []

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        out = {"method": self.method, "toy": self.toy, "passed": self.passed,
               "status": self.status, "checks": [c.to_dict() for c in self.checks],
               "info": self.info}
        if self.not_applicable is not None:
            out["not_applicable"] = self.not_applicable
        return _jsonable(out)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def to_table(self) -> str:
        if self.not_applicable is not None:
            return (f"validate {self.method}: NOT APPLICABLE (no exact reference can exist: "
                    f"{self.not_applicable})")
        verdict = "PASSED" if self.passed else "FAILED"
        parts = [f"validate {self.method} on toy {self.toy!r}: {verdict}"]
        if self.info.get("exact"):
            parts[0] += ("\n(exact checks of a deterministic method: tolerances cover rounding "
                         "only, a correct method never fails them)")
        elif "deterministic_false_alarm_rate" in self.info:
            parts[0] += (f"\n(checks with alpha 0 are exact; the statistical ones together fail "
                         f"a correct method with probability <= "
                         f"{self.info['deterministic_false_alarm_rate']:g})")
        elif "overall_false_alarm_rate" in self.info:
            parts[0] += (f"\n(each check fails a correct sampler with probability <= "
                         f"{self.checks[0].alpha:g}; all {len(self.checks)} together <= "
                         f"{self.info['overall_false_alarm_rate']:g})")
        parts += [c.to_table() for c in self.checks]
        for w in self.info.get("warnings", []):
            parts.append(f"warning: {w}")
        return "\n\n".join(parts)


# -- methods ------------------------------------------------------------------------------

MUTANT_INFIX = ":mutant-"


def resolve_method(name: str):
    """A registered method, or a mutant ``METHOD:mutant-<variant>`` (for ``cgs-pfa`` from
    :mod:`bayesfa.validation.pfa.mutants`, for any other method from its ``mutant(variant)``)."""
    from bayesfa.methods import get_method
    from bayesfa.validation.pfa import mutants

    if name.startswith(mutants.PREFIX):
        return mutants.get_mutant(name)
    if MUTANT_INFIX in name:
        base, _, variant = name.partition(MUTANT_INFIX)
        method = get_method(base)
        if variant not in _method_mutants(method):
            raise ValueError(f"unknown mutant {name!r}")
        return hooks(method).mutant(variant)
    return get_method(name)


def hooks(method):
    """The validation spec of ``method``: the object its ``validation`` import path names, or
    the method itself (mutants and the methods that predate specs carry their hooks)."""
    path = getattr(method, "validation", None)
    if isinstance(path, str):
        import importlib

        module, _, attr = path.partition(":")
        return getattr(importlib.import_module(module), attr)
    return method


#: The hooks a validation spec may define, which a mutant method carries itself.
SPEC_HOOKS = ("validation_budget", "validation_options", "exact_reference", "per_sample_log_prob",
              "kernel_checks", "deterministic_checks", "check_names", "not_applicable",
              "recompute_trace", "predictive")


def carry_spec(method, spec, name: str):
    """``method`` named ``name``, carrying ``spec``'s hooks (those it defines) itself, so that
    :func:`hooks` returns the method: how a spec's ``mutant(variant)`` hands a mutant over."""
    method.name = name
    method.validation = None
    for attr in SPEC_HOOKS:
        if hasattr(spec, attr):
            setattr(method, attr, getattr(spec, attr))
    return method


def variant_method(name: str, production, variant):
    """The method a spec's checks fit: for the method itself (``variant`` 0) the registered
    instance ``name`` as a user gets it (:func:`bayesfa.methods.get_method`), its class's own
    ``variant`` included, so that a wrong default is validated, not reset (issue 39: with
    ``variant`` set by the spec, a class default of a mutant's code passed); for a mutant, a
    copy of ``production`` (the module's method object) with the mutant's ``variant``."""
    if not variant:
        from bayesfa.methods import get_method

        return get_method(name)
    import copy

    method = copy.copy(production)
    method.variant = variant
    return method


def _method_mutants(method) -> list[str]:
    names = getattr(hooks(method), "mutant_names", None)
    return list(names()) if callable(names) else []


#: The attributes in which a registered method's instance and its named mutants differ (each
#: mutant object sets one or two of them; the method itself has those it has at their
#: production values).
VARIANT_ATTRIBUTES = ("variant", "emission_variant", "plugin", "star", "mutation")


def registered_as(name: str) -> str:
    """What a user gets as ``name``: ``name``, or the named mutant whose every
    :data:`VARIANT_ATTRIBUTES` the registered instance carries (a wrong class or constructor
    default, e.g. ``variant = 1`` in the class: issue 39, where ``validate`` then passed because
    specs ran their checks with the production code). :func:`validate` validates that
    mutant instead, so that every check, the kernel checks that take a spec's variant
    included, runs the code a user would run. A mutant's name is returned unchanged."""
    from bayesfa.methods import get_method
    from bayesfa.validation.pfa import mutants

    if MUTANT_INFIX in name or name.startswith(mutants.PREFIX):
        return name
    method = get_method(name)
    own = [a for a in VARIANT_ATTRIBUTES if hasattr(method, a)]  # none: cgs-pfa's kernels
    for mutant in mutant_names_of(name) if own else ():
        other = resolve_method(mutant)
        if all(getattr(other, a, None) == getattr(method, a) for a in own):
            return mutant
    return name


def mutant_names_of(name: str) -> list[str]:
    """``NAME:mutant-VARIANT`` of every mutant of the registered method ``name``."""
    from bayesfa.methods import get_method
    from bayesfa.validation.pfa import mutants

    if name == "cgs-pfa":
        return mutants.all_mutant_names()
    return [f"{name}{MUTANT_INFIX}{v}" for v in _method_mutants(get_method(name))]


def method_family(name: str) -> str:
    if name.startswith("cgs-pfa"):
        return "cgs-pfa"
    if name.startswith("oracle"):
        return "oracle"
    return name.partition(MUTANT_INFIX)[0]


def budget_options(name: str, toy: Toy, method=None, overrides: dict | None = None) -> dict[str, Any]:
    """The method's own defaults (from its ``add_arguments``), with the toy's ``states`` (and
    ``beta`` for the PFA models) and the small budget of :data:`BUDGETS`, then the spec's
    ``validation_options``, then ``overrides``; budget keys the method does not know are
    dropped."""
    method = method or resolve_method(name)
    parser = argparse.ArgumentParser(add_help=False)
    method.add_arguments(parser)
    options = vars(parser.parse_args([]))
    family = method_family(name)
    wanted: dict[str, Any] = {"states": toy.n_states}
    if family in _TOY_BETA or name in _TOY_BETA:
        wanted["beta"] = toy.beta
    wanted.update(BUDGETS.get(name, BUDGETS.get(family, {})))
    wanted.update(getattr(hooks(method), "validation_budget", None) or {})
    for key, value in wanted.items():
        if key in options:
            options[key] = value
    options.update(getattr(hooks(method), "validation_options", None) or {})
    options.update(overrides or {})
    return options


def per_sample_probs(arrays: dict[str, np.ndarray], options: dict[str, Any],
                     test: Corpus) -> np.ndarray | None:
    """``Pr(b | xi_s)`` ``[chain, draw, n_strings]`` from a run's arrays when their layout is
    known: ``counts`` ``[chain, draw, N+1, A, N+1]`` (CGS-PFA: plug-in ``xi~``) or ``xi``
    ``[chain, draw, Q, A, Q]`` or chain-major ``[S, Q, A, Q]`` (the oracles' draws, PFA form).
    ``None`` otherwise."""
    from bayesfa.forward import forward_log_prob, xi_to_pfa

    if "counts" in arrays and np.ndim(arrays["counts"]) == 5:
        from bayesfa.samplers.pfa.cgs_pfa import plugin_log_prob

        c = np.asarray(arrays["counts"])
        flat = c.reshape((-1,) + c.shape[2:])
        return np.exp(plugin_log_prob(flat, options["beta"], test)).reshape(c.shape[:2] + (-1,))
    if "xi" in arrays and np.ndim(arrays["xi"]) in (4, 5):
        xi = np.asarray(arrays["xi"], dtype=np.float64)
        if xi.ndim == 4:  # [S, ...] chain-major (the oracles): split by options["chains"]
            chains = int(options.get("chains", 1))
            if xi.shape[0] % chains:
                return None
            xi = xi.reshape((chains, -1) + xi.shape[1:])
        flat = xi.reshape((-1,) + xi.shape[2:])
        t = test.with_alphabet(xi.shape[-2] - 1)
        return np.exp(forward_log_prob(*xi_to_pfa(flat), t)).reshape(xi.shape[:2] + (-1,))
    return None


def _batch_probs(method, arrays, options, test, trace, n_batches: int = 5) -> np.ndarray | None:
    """Fallback for unknown array layouts with a leading ``(chain, draw)`` (that of the
    trace): batch means of ``predict_log_prob`` over ``n_batches`` consecutive blocks of each
    chain, ``[chain, n_batches, n_strings]``."""
    shapes = {np.shape(v)[:2] for v in (trace or {}).values() if np.ndim(v) >= 2}
    leading = {np.shape(v)[:2] for v in arrays.values() if np.ndim(v) >= 2}
    if len(shapes) != 1 or leading != shapes:
        return None
    chains, draws = next(iter(leading))
    if draws < n_batches:
        return None
    edges = np.linspace(0, draws, n_batches + 1).astype(int)
    out = np.empty((chains, n_batches, test.n_strings))
    for c in range(chains):
        for b in range(n_batches):
            part = {k: (v[c:c + 1, edges[b]:edges[b + 1]] if np.ndim(v) >= 2 else v)
                    for k, v in arrays.items()}
            out[c, b] = np.exp(method.predict_log_prob(part, options, test))
    return out


def exact_reference(name: str, toy: Toy, test: Corpus,
                    options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"reference": log probs or None, "kind": str, "exact": log Pr(b | alpha) or None}``
    for method ``name`` fitted with ``options`` (module docstring)."""
    from bayesfa.validation.pfa.reference import path_posterior

    options = options or {}
    family = method_family(name)
    if family not in ("cgs-pfa", "oracle"):
        method = resolve_method(name)
        hook = getattr(hooks(method), "exact_reference", None)
        if hook is not None:
            return hook(toy, test, options)
        return {"reference": None, "exact": None, "kind": "unavailable (no exact_reference)"}
    if family == "cgs-pfa" or name == "oracle-pfa":
        beta = options.get("beta", toy.beta)
        n_states = options.get("states", toy.n_states)
        pp = path_posterior(toy.train, n_states, beta)
        exact = pp.exact_predictive(test)
        if family == "cgs-pfa":
            return {"reference": pp.plugin_predictive(test), "exact": exact,
                    "kind": "exact plug-in limit sum_z Pr(z|alpha) Pr(b|xi~(z))"}
        return {"reference": exact, "exact": exact, "kind": "exact posterior predictive Pr(b|alpha)"}
    # oracle-hmm / oracle-pdfa: the enumeration of the model's own module, if it has one;
    # its hyperparameters (after train, test, n_states) are read from the fit's options.
    import importlib
    import inspect

    module = {"oracle-hmm": "bayesfa.models.hmm",  # a mutant's reference: its method's
              "oracle-pdfa": "bayesfa.models.pdfa"}.get(name.partition(MUTANT_INFIX)[0])
    fn = None
    if module is not None:
        try:
            fn = getattr(importlib.import_module(module), "exact_predictive", None)
        except ImportError:
            fn = None
    if fn is not None:
        params = list(inspect.signature(fn).parameters)[3:]
        missing = [p for p in params if p not in options]
        if not missing:
            kwargs = {p: options[p] for p in params}
            ref = np.asarray(fn(toy.train, test, options.get("states", toy.n_states), **kwargs),
                             dtype=np.float64)
            what = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            return {"reference": ref, "exact": ref,
                    "kind": f"exact posterior predictive of the {name} model ({what}), "
                            f"{module}.exact_predictive"}
        return {"reference": None, "exact": None,
                "kind": f"unavailable ({module}.exact_predictive needs {missing}, not in the options)"}
    return {"reference": None, "exact": None, "kind": "unavailable"}


# -- the predictive comparison --------------------------------------------------------------

def compare(method_name: str, toy: str | Toy = "tiny", seed: int = 0, *, alpha: float = ALPHA,
            options: dict[str, Any] | None = None, test: Corpus | None = None,
            out=None) -> Report:
    """Fit ``method_name`` on ``toy`` and compare its posterior predictive with the exact
    reference (module docstring). Returns a :class:`Report` with one check, ``predictive``.

    ``options`` override the budget of :func:`budget_options`; ``out``, a directory to save
    the fit in as a run directory (:mod:`bayesfa.rundir`, for ``bayesfa diagnose``)."""
    toy = get_toy(toy) if isinstance(toy, str) else toy
    test = all_strings() if test is None else test
    method = resolve_method(method_name)
    opts = budget_options(method_name, toy, method, options)
    t0 = time.perf_counter()
    fit = method.fit(toy.train, opts, seed, False)
    fit_seconds = time.perf_counter() - t0
    if out is not None:
        from bayesfa.rundir import save_run

        save_run(out, method=method_name, options=opts, seed=seed, arrays=fit.arrays,
                 trace=fit.trace, info=_jsonable(fit.info),
                 train={"toy": toy.name, "n_strings": toy.train.n_strings,
                        "n_letters": toy.train.n_letters,
                        "alphabet_size": toy.train.alphabet_size})
    ref = exact_reference(method_name, toy, test, opts)

    logp_method = np.asarray(method.predict_log_prob(fit.arrays, opts, test), dtype=np.float64)
    hook = getattr(hooks(method), "per_sample_log_prob", None)
    if hook is not None:
        probs = np.exp(np.asarray(hook(fit.arrays, opts, test), dtype=np.float64))
    else:
        probs = per_sample_probs(fit.arrays, opts, test)
    se_kind = "ArviZ ESS (mean) of the per-sample Pr(b | xi_s)"
    batch = False
    enumerated = probs is None and fit.info.get("inference") == "enumerate"
    if enumerated:
        se_kind = "none: the method enumerates, its predictive must match to 1e-9"
    elif probs is None:
        probs = _batch_probs(method, fit.arrays, opts, test, fit.trace)
        batch = probs is not None
        se_kind = "batch means of predict_log_prob (5 blocks per chain), Student t"
    notes = []
    rows: list[dict[str, Any]] = []
    m = test.n_strings
    crit = float(sps.norm.isf(alpha / (2 * m)))
    if batch:
        crit = float(sps.t.isf(alpha / (2 * m), df=probs.shape[0] * probs.shape[1] - 1))
    consistency = None
    if probs is not None:
        est = probs.mean(axis=(0, 1))
        consistency = float(np.max(np.abs(np.log(est) - logp_method)))
        if consistency > 1e-6:
            notes.append(f"predict_log_prob differs from the mean of the per-sample values by "
                         f"{consistency:.2e} in log: the comparison uses the per-sample values")
    else:
        est = np.exp(logp_method)
    from bayesfa.validation.diagnostics import ess_mean

    all_pass = ref["reference"] is not None
    for s in range(m):
        row: dict[str, Any] = {"string": format_string(test.string(s)), "estimate": float(est[s])}
        refp = None if ref["reference"] is None else float(np.exp(ref["reference"][s]))
        row["reference"] = refp
        if probs is not None:
            x = probs[:, :, s]
            sd = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
            if sd <= 1e-12 * max(abs(float(x.mean())), 1e-300):
                se = 0.0
            elif batch:
                se = sd / math.sqrt(x.size)
            else:
                ess = ess_mean(x)
                se = sd / math.sqrt(ess) if ess > 0 else math.nan
        else:
            se = 0.0 if enumerated else math.nan
        row["mcse"] = se
        if refp is None:
            row["z"], row["pass"] = None, None
        elif se == 0.0:
            ok = abs(est[s] - refp) <= 1e-9 * max(refp, 1e-300)
            row["z"], row["pass"] = (0.0 if ok else math.inf), bool(ok)
        elif not math.isfinite(se):
            row["z"], row["pass"] = None, False
        else:
            row["z"] = (est[s] - refp) / se
            row["pass"] = bool(abs(row["z"]) <= crit)
        if ref["exact"] is not None and method_family(method_name) == "cgs-pfa":
            exact = float(np.exp(ref["exact"][s]))
            row["exact"] = exact
            row["plugin_bias"] = (refp - exact) if refp is not None else None
        all_pass = all_pass and bool(row["pass"])
        rows.append(row)
    columns = ["string", "estimate", "reference", "mcse", "z", "pass"]
    if method_family(method_name) == "cgs-pfa":
        columns += ["exact", "plugin_bias"]
        biased = [r for r in rows if r["mcse"] and abs(r["plugin_bias"]) > crit * r["mcse"]]
        notes.append(f"'exact' is the true posterior predictive Pr(b | alpha); the plug-in estimator "
                     f"of Eq. 6 converges to 'reference' instead. The plug-in bias exceeds "
                     f"{crit:.2f} MC standard errors for {len(biased)} of {m} strings here.")
    if ref["reference"] is None:
        notes.append("no exact reference for this model: nothing to compare with (not a pass)")
    notes.append(f"false-alarm rate {alpha:g}: two-sided z-test per string at |z| <= {crit:.2f} "
                 f"(Bonferroni over {m} strings); MC standard error from {se_kind}")

    from bayesfa.validation.diagnostics import diagnose_trace, warnings

    diag = diagnose_trace(fit.trace) if fit.trace else {}
    check = Check(
        name="predictive", passed=bool(all_pass),
        description=f"posterior predictive of {m} test strings vs {ref['kind']}",
        alpha=alpha, columns=columns, rows=rows,
        summary={"critical_z": crit, "max_abs_z": max((abs(r["z"]) for r in rows
                                                       if r["z"] is not None), default=None),
                 "fit_seconds": fit_seconds, "predict_consistency": consistency},
        notes=notes)
    info = {"options": opts, "seed": seed, "toy": toy.description, "diagnostics": diag,
            "warnings": warnings(diag) if diag else [], "fit_info": fit.info}
    return Report(method_name, toy.name, [check], info, fit=fit)


def recorded_check(method_name: str, report: Report, toy: Toy) -> Check | None:
    """The ``recorded`` check (:mod:`bayesfa.validation.recorded`) of the fit behind
    ``report`` (:func:`compare`'s): the spec's ``recompute_trace`` (CGS-PFA and its mutants:
    :func:`bayesfa.validation.pfa.reference.recompute_trace`). None when the method has no
    ``recompute_trace`` (not yet every method's: see docs/validation.md)."""
    from bayesfa.validation.recorded import recorded_check as build

    fit = report.fit
    hook = getattr(hooks(resolve_method(method_name)), "recompute_trace", None)
    if hook is None and method_family(method_name) == "cgs-pfa":
        from bayesfa.validation.pfa.reference import recompute_trace as hook
    if hook is None:
        return None
    recomputed, extra = hook(fit.arrays, fit.trace, report.info["options"], toy.train)
    return build(fit.trace, recomputed, extra)


# -- everything -----------------------------------------------------------------------------

def validate(method_name: str, toy: str | Toy = "tiny", seed: int = 0, *, alpha: float = ALPHA,
             kernel_checks: bool = True, kernel: str | None = None) -> Report:
    """A method whose spec says ``not_applicable``: a report with that reason and no check
    (``ok``). A method whose spec has ``deterministic_checks``: those checks only (exact
    checks of methods that do not sample; no :func:`compare`). Otherwise:
    :func:`compare`, plus for ``cgs-pfa`` and its mutants the kernel checks of
    :mod:`bayesfa.validation.pfa.kernel_tests` (:func:`~bayesfa.validation.pfa.kernel_tests.cgs_pfa_checks`:
    path-GOF on the toy from posterior and from uniform starts, Geweke, SBC) in their CI settings. Each check has false-alarm rate ``alpha``; the report's, at most
    ``alpha x number of checks`` (union bound).

    ``kernel`` (``cgs-pfa`` only): the sweep kernel, ``gibbs``, ``alias-mh`` or ``bucket-mh``
    (``bayesfa validate cgs-pfa --kernel alias-mh``); the fit and every kernel check use it.
    After the predictive comparison, the ``recorded`` check (:func:`recorded_check`) of the
    same fit: every quantity of its trace recomputed from its recorded state (exact).
    None: the method's default for the toy (the alias-MH and bucket-MH mutants imply their kernel).
    A registered method whose instance is one of its named mutants (:func:`registered_as`) is
    validated as that mutant, its report named ``method_name`` with
    ``info["registered_instance_is"]``."""
    toy = get_toy(toy) if isinstance(toy, str) else toy
    if kernel is not None and method_name != "cgs-pfa":
        raise ValueError(f"a kernel can be chosen for cgs-pfa only, not for {method_name!r}")
    user_gets = registered_as(method_name)
    if user_gets != method_name:  # the registered instance is a named mutant: validate that
        report = validate(user_gets, toy, seed, alpha=alpha, kernel_checks=kernel_checks)
        report.method = method_name
        report.info["registered_instance_is"] = user_gets
        return report
    spec = hooks(resolve_method(method_name))
    reason = getattr(spec, "not_applicable", None)
    if reason:
        return Report(method_name, toy.name, [], {"seed": seed}, not_applicable=str(reason))
    deterministic = getattr(spec, "deterministic_checks", None)
    if deterministic is not None:
        t0 = time.perf_counter()
        checks = list(deterministic(toy, seed=seed, alpha=alpha))
        exact = all(c.alpha == 0 for c in checks)
        info = {"seed": seed, "toy": toy.description, "exact": exact,
                "seconds": time.perf_counter() - t0}
        if not exact:
            info["deterministic_false_alarm_rate"] = sum(c.alpha for c in checks)
        return Report(method_name, toy.name, checks, info)
    options = None if kernel is None else {"kernel": kernel}
    report = compare(method_name, toy, seed, alpha=alpha, options=options)
    if getattr(spec, "predictive", True) is False:  # a fit for the recorded check only
        report.checks = [c for c in report.checks if c.name != "predictive"]
    recorded = recorded_check(method_name, report, toy)
    if recorded is not None:
        report.checks.append(recorded)
    if kernel is not None:
        report.method = f"{method_name} --kernel {kernel}"
    hook = getattr(hooks(resolve_method(method_name)), "kernel_checks", None)
    if kernel_checks and hook is not None:
        report.checks.extend(hook(toy, seed=seed, alpha=alpha))
    elif kernel_checks and method_family(method_name) == "cgs-pfa":
        from bayesfa.validation.pfa import kernel_tests
        from bayesfa.validation.pfa.mutants import PREFIX

        variant = method_name[len(PREFIX):] if method_name.startswith(PREFIX) else None
        report.checks.extend(kernel_tests.cgs_pfa_checks(toy, variant, seed=seed, alpha=alpha,
                                                         kernel=kernel or "gibbs"))
    report.info["overall_false_alarm_rate"] = alpha * len(report.checks)
    return report


# -- what there is to validate --------------------------------------------------------------

def method_listing(name: str) -> dict[str, Any]:
    """``{"method", "kind", "checks", "mutants", "notes"}`` of the registered method ``name``,
    read from its validation spec's hooks without running anything (module docstring)."""
    from bayesfa.methods import get_method

    spec = hooks(get_method(name))
    entry: dict[str, Any] = {"method": name, "kind": "", "checks": [], "mutants": [],
                             "notes": []}
    reason = getattr(spec, "not_applicable", None)
    names = getattr(spec, "check_names", None)
    if reason:
        entry["kind"] = "not applicable"
        entry["notes"].append(str(reason))
    elif getattr(spec, "deterministic_checks", None) is not None:
        entry["kind"] = "own checks (deterministic_checks; no MCMC comparison)"
    else:
        entry["kind"] = "predictive vs exact reference" + (
            " + kernel checks" if (getattr(spec, "kernel_checks", None) is not None
                                   or method_family(name) == "cgs-pfa") else "")
    if not callable(names) and not reason and method_family(name) == "cgs-pfa":
        from bayesfa.validation.pfa.kernel_tests import cgs_pfa_check_names

        entry["checks"] = ["predictive", "recorded", *cgs_pfa_check_names()]
    elif callable(names):
        entry["checks"] = list(names())
        if getattr(spec, "recompute_trace", None) is not None and "recorded" not in entry["checks"]:
            entry["checks"].insert(1, "recorded")
    elif not reason:
        if getattr(spec, "deterministic_checks", None) is None:
            entry["checks"] = ["predictive"]
        if getattr(spec, "kernel_checks", None) is not None:
            entry["notes"].append("more checks (kernel_checks) are named when run: the spec "
                                  "declares no check_names()")
    entry["mutants"] = mutant_names_of(name)
    return entry


def list_main(as_json: bool = False) -> str:
    """For ``bayesfa validate --list [--json]``: every registered method with its checks and
    mutants (:func:`method_listing`). JSON: a list of those dicts."""
    from bayesfa.methods import method_names

    entries = [method_listing(n) for n in method_names()]
    if as_json:
        return json.dumps(entries, indent=None)
    lines = []
    for e in entries:
        lines.append(f"{e['method']}: {e['kind']}")
        lines.append(f"  checks: {', '.join(e['checks']) if e['checks'] else '-'}")
        lines.append(f"  mutants: {', '.join(e['mutants']) if e['mutants'] else '-'}")
        for note in e["notes"]:
            lines.append(f"  note: {note}")
    return "\n".join(lines)


def validate_main(method: str, toy: str | None = "tiny", as_json: bool = False, *,
                  seed: int = 0, kernel: str | None = None) -> tuple[str, bool]:
    """For ``bayesfa validate METHOD [--toy NAME] [--json] [--kernel K]``: ``(text, ok)``,
    ``ok`` when every check passed or the method is "not applicable" (exit 0).

    JSON: ``{"method", "toy", "passed", "checks": [{"name", "passed", "description",
    "alpha", "columns", "rows": [...], "summary", "notes"}], "info"}``.
    """
    from bayesfa.errors import InputError
    from bayesfa.methods import method_names
    from bayesfa.validation.pfa import mutants

    toy = toy or "tiny"
    base = method.partition(MUTANT_INFIX)[0]
    if base not in method_names():
        raise InputError(f"unknown method {method!r}; choose from {', '.join(method_names())} "
                         f"(or NAME{MUTANT_INFIX}VARIANT, e.g. {mutants.mutant_names()[0]})")
    if method != base and method not in mutant_names_of(base):
        known = mutant_names_of(base)
        raise InputError(f"unknown mutant {method!r}; {base} has "
                         f"{', '.join(known) if known else 'no mutants'}")
    try:
        get_toy(toy)
    except ValueError as err:
        raise InputError(str(err)) from None
    if kernel is not None and method != "cgs-pfa":
        raise InputError(f"--kernel applies to cgs-pfa only (its mutants name their kernel), "
                         f"not to {method!r}")
    report = validate(method, toy, seed, kernel=kernel)
    return (report.to_json(indent=None) if as_json else report.to_table()), report.ok
