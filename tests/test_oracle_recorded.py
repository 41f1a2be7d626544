"""The NumPyro oracles' ``recorded`` check (issue 39, item 1; :mod:`bayesfa.validation.oracles`):
the potential energy each draw's trace records, recomputed by numpy/scipy from the draw.

The fast tests hold the reference's closed forms against numpyro's own transform and potential
on hand-made draws (numpyro is called here, in the test, never by the reference), and show
that the check fails when one draw's record is off; the slow ones run real fits."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import bayesfa.models.pfa  # noqa: F401  (JAX in float64, as the oracles run it)
from bayesfa.validation import oracles
from bayesfa.validation.pdia import oracle as pdfa_oracle
from bayesfa.validation.recorded import recorded_check as build
from bayesfa.validation.toys import get_toy

TOY = get_toy("tiny")


def _unconstrained(y):
    import jax.numpy as jnp
    from numpyro.distributions.transforms import StickBreakingTransform

    return StickBreakingTransform().inv(jnp.asarray(y))


def test_stick_breaking_log_det_is_the_sum_of_every_log_component():
    """The closed form of the module docstring against numpyro's log_abs_det_jacobian."""
    import jax.numpy as jnp
    from numpyro.distributions.transforms import StickBreakingTransform

    t = StickBreakingTransform()
    x = jnp.asarray(np.random.default_rng(0).normal(scale=3.0, size=(50, 6)))
    y = t(x)
    np.testing.assert_allclose(oracles.stick_breaking_log_det(np.asarray(y)),
                               np.asarray(t.log_abs_det_jacobian(x, y)), rtol=1e-12, atol=1e-12)


def test_forward_log_lik_by_enumerating_paths():
    """The numpy forward against the sum over every path of the tiny toy (bayesfa.exact)."""
    from bayesfa.exact import enumerate_paths

    rng = np.random.default_rng(1)
    n, a = TOY.n_states, TOY.train.alphabet_size + 1
    w = rng.dirichlet(np.ones(1 + (a - 1) * n), size=(3, n + 1))
    xi = np.zeros((3, n + 1, a, n + 1))
    xi[:, :, 0, 0] = w[..., 0]
    xi[:, :, 1:, 1:] = w[..., 1:].reshape(3, n + 1, a - 1, n)
    tokens = TOY.train.tokens
    want = np.zeros(3)
    for s in range(3):
        paths = np.array(list(enumerate_paths(TOY.train, n)))       # [P, T+1]
        p = np.prod(xi[s][paths[:, :-1], tokens[None, :], paths[:, 1:]], axis=1)
        want[s] = np.log(p.sum())
    np.testing.assert_allclose(oracles.forward_log_lik(xi, TOY.train), want, rtol=1e-12)


def _nuts_trace(xi, pe, shape=(2, 3)):
    s = shape[0] * shape[1]
    return {"potential_energy": np.asarray(pe).reshape(shape),
            "accept_prob": np.full(shape, 0.9), "diverging": np.zeros(shape, dtype=bool),
            "num_steps": np.full(shape, 7)}, {"xi": xi[:s]}


@functools.lru_cache(maxsize=2)
def _hand_made(model: str):
    """Six draws (2 chains x 3) of ``model`` and numpyro's potential energy of each (one
    jitted, vmapped call: one compilation)."""
    import jax
    from numpyro.infer.util import potential_energy

    from bayesfa.models import hmm, pfa

    rng = np.random.default_rng(2)
    n, letters = TOY.n_states, TOY.train.alphabet_size
    data = dict(zip(("letters", "lengths", "weights"), pfa.unique_padded(TOY.train)))
    if model == "pfa":
        beta = 0.5
        w = rng.dirichlet(np.full(1 + letters * n, 0.7), size=(6, n + 1))
        w[0, 1] = np.array([1 - 5e-14, 1e-14, 1e-14, 1e-14, 2e-14])   # an ill-conditioned stick
        w[0, 1] /= w[0, 1].sum()
        kw = dict(n_states=n, n_letters=letters, beta=beta, weights=data["weights"])
        pe = np.asarray(jax.jit(jax.vmap(lambda p: potential_energy(
            pfa.pfa_model, (data["letters"], data["lengths"]), kw, p)))(
            {"w": _unconstrained(w)}))
        xi = pfa.xi_from_sample(w, n, letters)
        return xi, pe, {"beta": beta}
    alpha, beta = 0.4, 0.7
    eta = rng.dirichlet(np.full(letters + 1, 0.8), size=(6, n + 1))
    theta = rng.dirichlet(np.full(n, 0.8), size=(6, n + 1))
    kw = dict(n_states=n, n_letters=letters, alpha=alpha, beta=beta, weights=data["weights"])
    pe = np.asarray(jax.jit(jax.vmap(lambda p: potential_energy(
        hmm.hmm_model, (data["letters"], data["lengths"]), kw, p)))(
        {"eta": _unconstrained(eta), "theta": _unconstrained(theta)}))
    return hmm.xi_from_hmm(eta, theta), pe, {"alpha": alpha, "beta": beta}


@pytest.fixture(scope="module", params=["pfa", "hmm"])
def hand_made(request):
    return request.param, _hand_made(request.param)


def test_nuts_potential_energy_recomputed_and_a_wrong_record_caught(hand_made):
    """numpyro's potential energy of hand-made draws (in the unconstrained space) is what the
    reference recomputes from xi; one draw's record off by 1e-6 (relative 3e-8) fails, and
    only that quantity; a NUTS statistic out of its range fails too."""
    model, (xi, pe, options) = hand_made
    trace, arrays = _nuts_trace(xi, pe)
    rec, extra = oracles.recompute_nuts(model, arrays, trace, options, TOY.train)
    check = build(trace, rec, extra)
    assert check.passed, check.to_table()
    assert check.summary["margin"] < 1.0
    row = next(r for r in check.rows if r["quantity"] == "potential_energy")
    assert row["max_diff"] < 1e-9 * np.abs(pe).max() + oracles.rounding_allowance(model, xi).max()

    for s in (1, 4):                                   # a well-conditioned draw in each chain
        wrong = dict(trace, potential_energy=trace["potential_energy"].copy())
        wrong["potential_energy"].flat[s] += 1e-6
        rec, extra = oracles.recompute_nuts(model, arrays, wrong, options, TOY.train)
        bad = build(wrong, rec, extra)
        assert not bad.passed and bad.summary["failed_quantities"] == ["potential_energy"]
        assert bad.summary["margin"] > 10

    for name, value in (("num_steps", 0), ("num_steps", 1024), ("accept_prob", 1.5),
                        ("diverging", 2)):
        wrong = dict(trace, **{name: trace[name].astype(np.float64).copy()})
        wrong[name][1, 2] = value
        rec, extra = oracles.recompute_nuts(model, arrays, wrong, options, TOY.train)
        assert build(wrong, rec, extra).summary["failed_quantities"] == [name]


def test_ill_conditioned_stick_needs_its_allowance():
    """The PFA's hand-made draw 0 has a component taking nearly all of the stick left: its
    numpyro energy differs from the closed form on the kept w by more than 1e-9 relative (the
    kept last component's rounding, module docstring) and lies within the allowance."""
    xi, pe, options = _hand_made("pfa")
    got = oracles.pfa_potential_energy(xi, TOY.train, options["beta"])
    allowance = oracles.rounding_allowance("pfa", xi)
    diff = np.abs(got - pe)
    assert diff[0] > 1e-9 * abs(pe[0]) and diff[0] <= allowance[0]
    assert (diff[1:] < 1e-12 * np.abs(pe[1:]).max()).all() and (allowance[1:] < 1e-13).all()


def _pdfa_hand_made(hyper: bool):
    """Four draws of (delta, mu[, alpha, beta, gamma]) and the discrete block's potential
    energy: minus numpyro's log density of the model with every site conditioned (one
    jitted, vmapped call)."""
    import jax
    from numpyro.handlers import condition
    from numpyro.infer.util import log_density

    from bayesfa.models import pdfa, pfa

    rng = np.random.default_rng(3)
    n_q, letters = TOY.n_states + 1, TOY.train.alphabet_size
    data = dict(zip(("letters", "lengths", "weights"), pfa.unique_padded(TOY.train)))
    fixed = {"alpha": 1.3, "beta": 0.7, "gamma": 1.6}
    delta = rng.integers(0, n_q, size=(4, n_q, letters))
    mu = rng.dirichlet(np.ones(n_q), size=4)
    hyp = {k: rng.gamma(2.0, 0.5, size=4) for k in fixed} if hyper else None
    sites = {"delta": delta, "mu": mu, **(hyp or {})}
    kw = dict(n_states=n_q - 1, n_letters=letters, weights=data["weights"], hyperpriors=hyper,
              **fixed)

    def energy(site):
        model = condition(pdfa.pdfa_model, data=site)
        return -log_density(model, (data["letters"], data["lengths"]), kw, {})[0]

    pe = np.asarray(jax.jit(jax.vmap(energy))(sites))
    shape = (2, 2)
    trace = {"potential_energy": np.array(pe).reshape(shape),
             "diverging": np.zeros(shape, dtype=bool), "accept_prob": np.full(shape, 0.8)}
    if hyper:
        trace.update({k: v.reshape(shape) for k, v in hyp.items()})
    options = {**fixed, "hyperpriors": hyper}
    return {"delta": delta, "mu": mu, "xi": np.zeros(1)}, trace, options


@pytest.mark.parametrize("hyper", [False, True])
def test_pdfa_potential_energy_recomputed_and_a_wrong_record_caught(hyper):
    arrays, trace, options = _pdfa_hand_made(hyper)
    rec, extra = pdfa_oracle.recompute_pdfa(arrays, trace, options, TOY.train)
    check = build(trace, rec, extra)
    assert check.passed, check.to_table()
    row = next(r for r in check.rows if r["quantity"] == "potential_energy")
    assert row["max_diff"] < 1e-12 * np.abs(trace["potential_energy"]).max()
    wrong = dict(trace, potential_energy=trace["potential_energy"].copy())
    wrong["potential_energy"][1, 0] += 1e-6
    rec, extra = pdfa_oracle.recompute_pdfa(arrays, wrong, options, TOY.train)
    assert build(wrong, rec, extra).summary["failed_quantities"] == ["potential_energy"]
    # a slip between two hyperparameters (alpha for gamma) changes the recomputation
    swapped = dict(options, alpha=options["gamma"], gamma=options["alpha"])
    if not hyper:
        rec, extra = pdfa_oracle.recompute_pdfa(arrays, trace, swapped, TOY.train)
        assert not build(trace, rec, extra).passed


def test_pdfa_without_mu_fails_and_says_why():
    arrays, trace, options = _pdfa_hand_made(False)
    del arrays["mu"]
    rec, extra = pdfa_oracle.recompute_pdfa(arrays, trace, options, TOY.train)
    check = build(trace, rec, extra)
    assert not check.passed
    assert "mu" in next(r for r in check.rows if r["quantity"] == "potential_energy")["how"]


def test_the_oracles_have_the_recorded_check():
    from bayesfa.validation.harness import hooks, method_listing, resolve_method

    for name in ("oracle-pfa", "oracle-hmm", "oracle-pdfa", "oracle-pdfa:mutant-no-mu"):
        assert callable(getattr(hooks(resolve_method(name)), "recompute_trace", None)), name
    for name in ("oracle-pfa", "oracle-hmm", "oracle-pdfa"):
        assert "recorded" in method_listing(name)["checks"]


# -- real fits (NUTS / DiscreteHMCGibbs compile: 20-45 s each) --------------------------------

SHORT = {"iterations": 300, "burn_in": 100, "chains": 2}


@pytest.mark.slow
@pytest.mark.parametrize("name,options", [("oracle-pfa", SHORT), ("oracle-hmm", SHORT),
                                          ("oracle-pdfa", SHORT),
                                          ("oracle-pdfa", {**SHORT, "hyperpriors": True})])
def test_real_fit_recorded_and_a_wrong_record_caught(name, options):
    from bayesfa.validation.harness import compare, recorded_check

    report = compare(name, TOY, seed=0, options=options)
    check = recorded_check(name, report, TOY)
    assert check.passed, check.to_table()
    fit = report.fit
    pe = np.asarray(fit.trace["potential_energy"], dtype=np.float64).copy()
    s = int(np.argmin(oracles.rounding_allowance("pfa" if name == "oracle-pfa" else "hmm",
                                                 fit.arrays["xi"]))) if "pdfa" not in name else 5
    pe.flat[s] += 1e-6
    fit.trace["potential_energy"] = pe
    bad = recorded_check(name, report, TOY)
    assert not bad.passed and bad.summary["failed_quantities"] == ["potential_energy"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["no-mu", "end-mass"])
def test_pdfa_model_mutants_fail_the_recorded_check(variant):
    """A mutant of the model's potential records its own (wrong) energy: the recomputation
    from the model's definition sees it on every draw."""
    from bayesfa.validation.harness import compare, recorded_check

    name = f"oracle-pdfa:mutant-{variant}"
    report = compare(name, TOY, seed=0, options=SHORT)
    check = recorded_check(name, report, TOY)
    assert not check.passed and check.summary["failed_quantities"] == ["potential_energy"]


def test_oracle_pdfa_validates_with_distinct_hyperparameters():
    """issue 39 item 2: the harness's oracle-pdfa fit (and its mutants') has alpha, beta,
    gamma distinct and none 1, so a slip that swaps two of them changes the answer."""
    from bayesfa.validation.harness import budget_options, resolve_method

    for name in ("oracle-pdfa", "oracle-pdfa:mutant-no-mu", "oracle-pdfa:mutant-end-mass"):
        opts = budget_options(name, TOY, resolve_method(name))
        h = (opts["alpha"], opts["beta"], opts["gamma"])
        assert h == (1.3, 0.7, 1.6) and opts["pdfa_inference"] == "mcmc", name
