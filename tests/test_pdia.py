"""The PDIA sampler (``--method pdia``) and its exact reference."""

from __future__ import annotations

import argparse
import copy

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.validation.pdia.pdfa import pdia_exact_predictive
from bayesfa.validation.toys import all_strings, get_toy

HYP = {"alpha": 1.0, "beta": 1.0, "alpha0": 1.0, "d": 0.3, "d0": 0.3}


def options(**kw):
    parser = argparse.ArgumentParser()
    get_method("pdia").add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(kw)
    return opts


def test_exact_reference_by_hand():
    """train "a": Z = 1/3 * 1/3. Pr(eps) = (1/3)/2; Pr(a) = (4/3)/2 * (4/3)/2;
    Pr(b) = (1/3)/2 * [(1 - d0)/(alpha0 + 1) * (4/3)/2 + (alpha0 + d0)/(alpha0 + 1) * 1/3]."""
    train = Corpus.from_strings([[0]], 2)
    test = Corpus.from_strings([[], [0], [1]], 2)
    logp, info = pdia_exact_predictive(train, test, HYP)
    b_new = (1 - 0.3) / 2 * (2 / 3) + (1 + 0.3) / 2 * (1 / 3)
    assert np.exp(logp) == pytest.approx([1 / 6, 4 / 9, 1 / 6 * b_new], rel=1e-12)
    assert info["relative_interval"] < 1e-4


def test_discount_options_take_the_unit_interval_and_max_states_bounds_the_capacity():
    """``--d`` / ``--d0`` take values in [0, 1) and refuse 1; the sampler's state capacity
    is ``min(2 T + 2, --max-states + 1)`` (``state_capacity``'s docstring), in both regimes."""
    from bayesfa.samplers.pdia.pdia import state_capacity

    parser = argparse.ArgumentParser()
    get_method("pdia").add_arguments(parser)
    got = vars(parser.parse_args(["--d", "0", "--d0", "0.5"]))
    assert (got["d"], got["d0"]) == (0.0, 0.5)
    for bad in ("1", "-0.1"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--d", bad])
    corpus = Corpus.from_strings([[0, 1, 0], [1]], 2)  # T = 6 tokens (ends included)
    assert state_capacity(corpus, {"max_states": 3}) == 4
    assert state_capacity(corpus, {"max_states": 100}) == 2 * corpus.n_tokens + 2
    odd = Corpus.from_strings([[0, 1], [1]], 2)  # T = 5: 2 T has bit 1 set (2 T | 2 == 2 T)
    assert state_capacity(odd, {"max_states": 100}) == 12


def test_pdia_fit_predict_seed_and_posterior_of_a_trivial_corpus():
    """With one training string "a" the posterior has one configuration: the sampler's
    predictive is the exact one up to the Monte Carlo draws of unvisited transitions."""
    method = get_method("pdia")
    train = Corpus.from_strings([[0]], 2)
    opts = options(iterations=40, burn_in=10, period=2, chains=2, predict_draws=400, **HYP)
    fit = method.fit(train, opts, 5, False)
    again = method.fit(train, opts, 5, False)
    for key in fit.arrays:
        assert np.array_equal(fit.arrays[key], again.arrays[key]), key
    test = Corpus.from_strings([[], [0], [1]], 2)
    exact, _ = pdia_exact_predictive(train, test, HYP)
    logp = method.predict_log_prob(fit.arrays, opts, test)
    assert logp[:2] == pytest.approx(exact[:2], abs=1e-12)  # no unvisited transition needed
    # "b" needs one draw per sample: 400 x 30 draws of a two-valued quantity, sd < 0.002
    assert np.exp(logp[2]) == pytest.approx(np.exp(exact[2]), abs=0.01)
    assert set(fit.trace) >= {"log_joint", "n_states", "alpha", "beta", "alpha0", "d", "d0"}


def test_pdia_sampled_hyperparameters_map_and_sequence():
    method = get_method("pdia")
    toy = get_toy("tiny")
    opts = options(iterations=60, burn_in=20, period=4, chains=2)
    fit = method.fit(toy.train, opts, 1, False)
    assert set(fit.info["sampled_hyperparameters"]) == {"alpha", "beta", "alpha0", "d", "d0"}
    assert 0 < fit.trace["d"].min() and fit.trace["d"].max() < 1
    assert set(fit.info["acceptance"]) >= {"entry", "table", "alpha", "d", "d0"}
    test = all_strings()
    got = {}
    for kw in ({}, {"map": True}, {"map": False}):
        logp = got[str(kw)] = method.predict_log_prob(fit.arrays, opts, test, **kw)
        assert np.all(np.isfinite(logp)) and np.all(logp < 0)
    # the default is the posterior mixture, not the MAP draw
    assert np.array_equal(got["{}"], got["{'map': False}"])
    assert not np.allclose(got["{}"], got["{'map': True}"])
    # its states come and go: no posterior-mean automaton, a one-line refusal saying why
    with pytest.raises(InputError, match="no posterior-mean automaton"):
        method.automaton(fit.arrays, opts, which="mean")
    assert method.automaton(fit.arrays, opts, which="map").n_states >= 1
    seq = options(iterations=30, burn_in=10, period=4, chains=1, sequence=True, **HYP)
    fit = method.fit(Corpus.from_strings([[0, 1, 1, 0, 1, 0]], 2), seq, 0, False)
    one = [Corpus.from_strings([[a]], 2) for a in (0, 1)]
    total = sum(np.exp(method.predict_log_prob(fit.arrays, seq, c))[0] for c in one)
    assert total == pytest.approx(1.0, abs=1e-9)


def test_perplexity_options_are_keyword_only():
    """``perplexity_log_prob(arrays, options, corpus, *, continuation, ...)``: every option
    after the corpus must be named (a positional ``True`` would silently be ``continuation``)."""
    import inspect

    for name in ("pdia", "pdfa", "pdia-smoothed"):
        params = list(inspect.signature(get_method(name).perplexity_log_prob).parameters.values())
        assert [p.name for p in params[:3]] == ["arrays", "options", "corpus"], name
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[3:]), name
        assert params[3].name == "continuation", name


def test_an_unknown_kernel_variant_is_refused_not_run_as_the_sampler():
    """A front's ``variant`` selects the kernel's code (0 the sampler, 1-15 validation
    mutants); any other value once ran as the sampler, so a front set to -1 passed."""
    from bayesfa.samplers.pdia.pdfa import VARIANT_CODES, check_variant
    from bayesfa.validation.pdia.pdfa import MUTANTS
    from bayesfa.validation.pdia.smoothed import KERNEL_MUTANTS

    codes = {c for family in MUTANTS.values() for c in family.values()}
    assert codes | set(KERNEL_MUTANTS.values()) <= set(VARIANT_CODES) - {0}
    assert get_method("pdia").variant == 0 and get_method("pdfa").variant == 0
    for bad in (-1, 16, 1.0, True, None):
        with pytest.raises(ValueError, match="unknown kernel variant"):
            check_variant(bad)
    assert check_variant(np.int64(3)) == 3
    method = copy.copy(get_method("pdia"))
    method.variant = -1
    with pytest.raises(ValueError, match="unknown kernel variant"):
        method.fit(Corpus.from_strings([[0]], 2),
                   options(iterations=4, burn_in=2, period=1, chains=1), 0, False)


@pytest.mark.parametrize("model,sequence", [(1, False), (1, True), (0, False), (0, True)])
def test_path_index_matches_a_full_walk_after_every_sweep(model, sequence):
    """The sweep re-walks only what a proposal changes (``_pdfa_kernel.walk_changes``) and
    keeps a path index across its moves. After every sweep the counts, the state of every
    position, each entry's number of uses and list of positions must equal those of one full
    walk of the current ``delta``, every entry used by the path must be instantiated and no
    other (the zero-count deletion), and ``cnt2 == cnt``. PDIA (model 1) and finite PDFA
    (model 0), sentences and one long sequence, hyperparameters sampled."""
    from bayesfa.samplers.pdia import _pdfa_kernel as K
    from bayesfa.samplers.pdia import pdfa as P

    rng = np.random.default_rng(3)
    strings = [list(rng.integers(0, 3, size=rng.integers(0, 9))) for _ in range(12)]
    data = P.as_symbols(Corpus.from_strings(strings, 3), sequence)
    st = P.ChainState(model, data, 2 * data.sym.size + 2 if model == 1 else 5)
    hyp, fixed = P.hyper_values(model, {})
    P._init_chain(st, hyp, rng, 0)
    stats = np.zeros(K.N_STATS)
    for sweep in range(25):
        P._sweeps(st, hyp, fixed, 1, rng, stats, {}, 0, (-1, -1))
        ws = st.workspace()
        seen = {k: v.copy() for k, v in zip(("wt", "we"), ws[:2])}
        fresh = K.new_workspace(data.sym.size, st.n_cap, data.n_symbols)
        cnt, ctot = np.zeros_like(st.cnt), np.zeros_like(st.ctot)
        hi = int(st.meta[6])
        K.build_index(data.sym, data.nf, st.delta, hi, cnt, ctot, cnt.copy(), ctot.copy(), st.lg,
                      fresh)
        _, _, _, ok = K.eval_path(model, 0, data.sym, data.nf, st.delta.copy(), st.seat.copy(),
                                  cnt, ctot, st.vis.copy(), st.newq.copy(), st.news.copy(),
                                  *[a.copy() for a in st.seating()], hyp, rng)
        assert ok
        assert np.array_equal(cnt, st.cnt) and np.array_equal(ctot, st.ctot), sweep
        assert np.array_equal(st.cnt2, st.cnt) and np.array_equal(st.ctot2, st.ctot), sweep
        assert np.array_equal(seen["wt"][K.W_QPATH], fresh[0][K.W_QPATH]), sweep
        assert np.array_equal(seen["we"][K.E_NVIS], fresh[1][K.E_NVIS]), sweep
        used = seen["we"][K.E_NVIS][:hi, data.nf:] > 0
        assert np.array_equal(used, st.delta[:hi, data.nf:] >= 0), sweep
        for q, s in zip(*np.nonzero(used)):  # each entry's list: the positions that use it
            pos, t = [], seen["we"][K.E_HEAD, q, s + data.nf]
            while t >= 0:
                pos.append(t)
                t = seen["wt"][K.W_NXT, t]
            expect = np.nonzero((fresh[0][K.W_QPATH] == q) & (data.sym == s + data.nf))[0]
            assert sorted(pos) == list(expect), (sweep, q, s)
    assert stats[K.ST_ENTRY] > 0 and stats[K.ST_WALKED] > 0


@pytest.mark.slow
def test_validate_passes_and_mutants_fail():
    from bayesfa.validation.harness import validate

    from bayesfa.validation.pdia.pdfa import MUTANTS

    assert validate("pdia", "tiny").passed
    for name in MUTANTS["pdia"]:  # the historical no-ambiguity-rule among them
        assert not validate(f"pdia:mutant-{name}", "tiny").passed, name


# -- detailed balance of the transition move, by brute force --------------------------------

TEST_FAILURE_RATE = 1e-3


def _canonical(get, tokens):
    """A configuration up to the labels of states and tables
    (:func:`bayesfa.validation.pdia.moves.canonical`)."""
    from bayesfa.validation.pdia.moves import canonical

    return canonical(get, tokens)


def _exact_configurations(tokens, hyp, n_sym):
    """Posterior probability of each canonical configuration (CRF seatings x emissions), by
    the enumeration of :func:`bayesfa.validation.pdia.moves.pdia_configurations` (plain
    Python, not the kernel)."""
    from bayesfa.validation.pdia.moves import pdia_configurations

    return {key: p for key, p, _ in pdia_configurations(tokens, hyp, n_sym)}


@pytest.mark.parametrize("table_moves", [False, True])
def test_moves_satisfy_detailed_balance_on_a_tiny_corpus(table_moves):
    """Train "aa", "a" (one letter, fixed hyperparameters): three configurations up to
    labels. One chain of single moves (entry moves, or table moves alone); the transitions
    out of a configuration are i.i.d. draws of the kernel, so ``pi(x) T(x, y)`` and
    ``pi(y) T(y, x)`` (exact ``pi`` by enumeration) are compared by a z-test per pair
    (binomial standard errors; Bonferroni over the pairs; false alarm ``TEST_FAILURE_RATE``).
    Before the ambiguity rule of ``_pdfa_kernel._ambiguous`` the entry move failed this at
    |z| = 6-12 (flow "new state" -> "same state, second table" too large)."""
    from scipy import stats

    from bayesfa.samplers.pdia import pdfa as P
    from bayesfa.samplers.pdia._pdfa_kernel import N_STATS

    hyp = {"alpha": 1.0, "beta": 1.0, "alpha0": 1.0, "d": 0.3, "d0": 0.0}
    train = Corpus.from_strings([[0, 0], [0]], 1)
    tokens = [int(t) for t in train.tokens]
    pi = _exact_configurations(tokens, hyp, 2)
    assert len(pi) == 3
    data = P.as_symbols(train, False)
    h, fixed = P.hyper_values(P.CRF, hyp)
    st = P.ChainState(P.CRF, data, 2 * len(tokens) + 4)
    rng = np.random.default_rng(11)
    P._init_chain(st, h, rng, 0)
    stats_ = np.zeros(N_STATS)
    opts = {"table_moves": table_moves}
    moves = (0, 1) if table_moves else (1, 0)

    def key():
        return _canonical(lambda a, b: (int(st.delta[a, b]), int(st.seat[a, b])), tokens)

    prev, trans = key(), {}
    for _ in range(60_000):
        P._sweeps(st, h, fixed, 1, rng, stats_, opts, 0, moves)
        cur = key()
        trans[(prev, cur)] = trans.get((prev, cur), 0) + 1
        prev = cur
    visits = {}
    for (a, _), c in trans.items():
        visits[a] = visits.get(a, 0) + c
    assert set(visits) == set(pi)
    names = sorted(pi)
    pairs = [(a, b) for n, a in enumerate(names) for b in names[n + 1:]]
    crit = stats.norm.isf(TEST_FAILURE_RATE / (2 * len(pairs)))
    moved = 0
    for a, b in pairs:
        tab, tba = trans.get((a, b), 0) / visits[a], trans.get((b, a), 0) / visits[b]
        moved += trans.get((a, b), 0)
        se = np.sqrt(pi[a] ** 2 * tab * (1 - tab) / visits[a]
                     + pi[b] ** 2 * tba * (1 - tba) / visits[b])
        if se > 0:
            assert abs(pi[a] * tab - pi[b] * tba) / se < crit, (a, b, tab, tba)
    assert moved > 1000  # the moves do move between configurations


def _ambiguity_state(new_table_dish, k_old_elsewhere=False):
    """A fixed proposal state of the PDIA's table move, as :func:`_pdfa_kernel.move_table`
    hands it to ``_ambiguous`` (dishes already the proposal's). Letters 1, 2 (0 ends a
    string), states 0-3 (4 with ``k_old_elsewhere``), tables 0-3:

    - table ``t0 = 0`` (letter 1), customers ``(0, 1)`` and ``(3, 1)``, moved from dish
      ``k_old = 1`` to dish 2; both its customers are common (``c = 2``), none in ``O``;
    - table 1 (letter 2), opened by the proposal's walk: its one customer ``(2, 2)`` is new
      (just in time), dish ``new_table_dish``;
    - table 2 (letter 2), dish 3, customers ``(0, 2)`` (common) and ``(1, 2)``, which the
      proposed path no longer visits (the one ``O`` entry);
    - table 3 (letter 1), dish 1, customer ``(4, 1)``, untouched: only with
      ``k_old_elsewhere``."""
    from bayesfa.samplers.pdia import _crf_kernel as C
    from bayesfa.samplers.pdia import _pdfa_kernel as K

    n_cap, n_sym = 5, 3
    seat = np.full((n_cap, n_sym), -1, dtype=np.int32)
    tabs = np.zeros((7, n_cap * n_sym), dtype=np.int32)
    sts = np.zeros((4, n_cap), dtype=np.int32)
    tables = [(0, 1, 2, [(0, 1), (3, 1)]), (1, 2, new_table_dish, [(2, 2)]),
              (2, 2, 3, [(0, 2), (1, 2)])]
    if k_old_elsewhere:
        tables.append((3, 1, 1, [(4, 1)]))
    for t, col, dish, customers in tables:
        tabs[C.T_N, t], tabs[C.T_DISH, t], tabs[C.T_COL, t] = len(customers), dish, col
        sts[C.S_M, dish] += 1
        for q, s in customers:
            seat[q, s] = t
    newq, news = np.array([2], dtype=np.int32), np.array([2], dtype=np.int32)
    oseat = np.array([2], dtype=np.int32)
    ws = K.new_workspace(8, n_cap, n_sym)
    ws[6][K.C_STAMP] = 1  # a proposal's stamp (the workspace's marks start at 0)
    return K._ambiguous(-1, -1, 0, 1, seat, 1, newq, news, 1, oseat, tabs, sts, ws)


def test_ambiguity_rule_on_fixed_table_move_states():
    """The rule of ``_pdfa_kernel._ambiguous`` on fixed states (``_ambiguity_state``): a table
    move takes table ``t0`` from state 1 to state 2 while its walk opens a new table whose
    dish is state 1. After the move state 1 exists, served only by the new table, which did
    not serve it before with an old customer: the same result is reached by other events
    (state 1 as a new dish of ``t0``'s proposal, ...) whose reverse is this one, so the
    proposal must be rejected. It is state 1's *former* server ``t0`` that keeps common
    customers (``c > 0``) without losing any to ``O``: the rule must count ``c`` there (the
    surviving cosmic-ray mutant ``c > 0`` -> ``c < 0`` in the X flag, issue 39, returned
    False). Not ambiguous when the new table serves another state (state 1 is then gone
    after the move), or when an untouched table also serves state 1 (state 1 persists)."""
    assert _ambiguity_state(new_table_dish=1)
    assert not _ambiguity_state(new_table_dish=3)
    assert not _ambiguity_state(new_table_dish=1, k_old_elsewhere=True)


# -- the hyperparameter moves: exact reference by quadrature, mutants -------------------------

def test_hyper_reference_matches_adaptive_quadrature_of_scalar_enumerations():
    """``pdia_exact_hyper`` (Gauss rule, the enumeration run at every node at once) against
    scipy's adaptive ``quad_vec`` over one hyperparameter of the scalar enumeration (one
    ``pdia_log_marginals`` call per point), on a small corpus; orders 48 and 64 agree."""
    from scipy import integrate

    from bayesfa.validation.pdia.pdfa import pdia_exact_hyper, pdia_log_marginals

    train = Corpus.from_strings([[0, 0], [0, 1], []], 2)
    test = Corpus.from_strings([[], [0], [1], [1, 0]], 2)
    for which in ("alpha", "d0", "beta"):
        unit = which == "d0"

        def integrand(h):
            z, zb, dx, db = pdia_log_marginals(train, test, {**HYP, which: h}, 8)
            assert dx == 0 and not db.any()
            dens = 1.0 if unit else np.exp(-h)
            return dens * np.concatenate([[z, h * z], zb])

        vals, _ = integrate.quad_vec(integrand, 0, 1 if unit else np.inf, epsrel=1e-11, epsabs=0)
        got, means = pdia_exact_hyper(train, test, HYP, which)
        assert got == pytest.approx(np.log(vals[2:] / vals[0]), abs=1e-8), which
        assert means[f"E[{which}]"] == pytest.approx(vals[1] / vals[0], rel=1e-8), which
        high, means_high = pdia_exact_hyper(train, test, HYP, which, order=64)
        assert np.max(np.abs(high - got)) < 1e-8
        assert max(abs(means_high[k] - means[k]) for k in means) < 1e-8


def test_hyper_moves_match_exact_conditionals_and_their_mutants_fail():
    """``hyper_conditional`` (each hyperparameter move alone on a fixed configuration vs its
    exact conditional by quadrature; false alarm 1e-3): the kernel passes; the mutant without
    alpha's Gamma(1, 1) prior term fails on alpha's moments only, the one without the logit
    walk's Jacobian on d's only. The cheapest check that catches each hyperparameter mutant
    (``bayesfa validate pdia:mutant-...`` runs it with the rest)."""
    from bayesfa.validation.pdia.pdfa import MUTANTS, PDIA_HYPER, hyper_conditional

    assert hyper_conditional(0).passed
    for name, which in (("no-alpha-prior", "alpha"), ("d-no-jacobian", "d")):
        check = hyper_conditional(MUTANTS["pdia"][name])
        # two moments per hyperparameter, in the order of PDIA_HYPER
        failed = {PDIA_HYPER[n // 2] for n, row in enumerate(check.rows) if not row["pass"]}
        assert failed == {which}, (name, failed)


# -- perplexity --draw-sets: the unvisited transitions of a lone sample integrated out ----------

def _lone_sample():
    """A PDIA fit of the one-configuration posterior of training string "a" (hyperparameters
    fixed): every sample is the same, so ``map`` scores it against the exact predictive."""
    method = get_method("pdia")
    train = Corpus.from_strings([[0]], 2)
    opts = options(iterations=12, burn_in=10, period=2, chains=1, **HYP)
    return method, train, opts, dict(method.fit(train, opts, 5, False).arrays)


def test_draw_sets_one_is_the_single_reading_bit_for_bit():
    method, _, opts, arrays = _lone_sample()
    test = Corpus.from_strings([[1, 0, 1, 1, 1], [1, 1]], 2)
    from bayesfa.samplers.pdia import pdfa

    # one sample, one reading (draw set 0): the earlier default, now --draw-sets 1; the
    # default of the joint mixture is the adaptive filter (tests/test_perplexity_default.py)
    once = float(pdfa.per_sample_log_prob(pdfa.CRF, arrays, opts, test, per_symbol=True).sum())
    for kw in ({"proposal": "prior"}, {"per_symbol": True}, {"map": True, "proposal": "prior"},
               {"map": True, "per_symbol": True}):
        got = method.perplexity_log_prob(arrays, opts, test, continuation=False, draw_sets=1, **kw)
        assert got == pytest.approx(once, abs=1e-12)
        if kw.get("per_symbol"):  # --per-symbol alone still reads once per sample
            assert method.perplexity_log_prob(arrays, opts, test, continuation=False, **kw) == got
    again = method.perplexity_log_prob(arrays, opts, test, continuation=False, map=True,
                                       draw_sets=50)
    assert again == method.perplexity_log_prob(arrays, opts, test, continuation=False,
                                                map=True, draw_sets=50)
    with pytest.raises(Exception, match="at least 1"):
        method.perplexity_log_prob(arrays, opts, test, continuation=False, draw_sets=0)
    for kw in ({"draw_sets": 5, "per_symbol": True}, {}):  # --proposal: --draw-sets' filters
        with pytest.raises(InputError, match="--proposal applies to --draw-sets"):
            method.perplexity_log_prob(arrays, opts, test, continuation=False,
                                       proposal="prior", **kw)
    with pytest.raises(InputError, match="--proposal must be one of"):
        method.perplexity_log_prob(arrays, opts, test, continuation=False, draw_sets=5,
                                   proposal="blind")


@pytest.mark.parametrize("proposal", ["prior", "adapted"])
def test_draw_sets_particle_filter_reaches_the_exact_predictive(monkeypatch, proposal):
    """Test string "b a b b" needs several unvisited transitions, drawn one after another. One
    reading's log is biased low; the particle filter's estimate of ``p(test | sample)`` is
    unbiased, with either proposal: the mean of its ratio to the exact predictive
    (``pdia_exact_predictive``, one string, so the incremental reading is the string's
    predictive) over 10 generators of 1,000 particles each has sd 0.010 with the blind draws
    (measured over 20 generators: 0.031 per estimate) and 0.004 with the adapted
    proposal (0.012 per estimate), so 0.045 is at least 4.5 sd (failure rate 7e-6 under a
    normal approximation; fixed generators). Resampling after every symbol exercises it. The
    authors' equal-weight per-symbol average over draw sets targets another quantity
    (``sum_t log E_D p(x_t | x_<t, D)``): 0.11 above the exact log predictive here."""
    from bayesfa.samplers.pdia import pdfa

    monkeypatch.setattr(pdfa, "RESAMPLE_EVERY", 1)
    method, train, opts, arrays = _lone_sample()
    test = Corpus.from_strings([[1, 0, 1, 1, 1]], 2)
    exact = float(pdia_exact_predictive(train, test, HYP)[0][0])
    ratios = []
    for e in range(10):
        arrays["predict_entropy"] = np.array([7, e])
        kw = {"continuation": False, "map": True, "draw_sets": 1000}
        ratios.append(np.exp(method.perplexity_log_prob(arrays, opts, test, proposal=proposal,
                                                        **kw) - exact))
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.045)
    if proposal == "adapted":
        return
    per_symbol = [method.perplexity_log_prob(dict(arrays, predict_entropy=np.array([7, e])),
                                             opts, test, per_symbol=True, **kw)
                  for e in range(10)]
    assert np.mean(per_symbol) - exact > 0.06
    one = [method.perplexity_log_prob(dict(arrays, predict_entropy=np.array([7, e])), opts,
                                      test, continuation=False, map=True, draw_sets=1,
                                      proposal="prior")
           for e in range(10)]
    assert np.mean(one) < exact - 0.1  # the single reading: Jensen's bias (measured 0.27)


@pytest.mark.parametrize("proposal", ["prior", "adapted"])
def test_particle_filter_retries_with_the_whole_capacity(monkeypatch, proposal):
    """The particle filter starts with room for few new states and, when a particle runs
    out, starts again with room for the whole test: the same value bit for bit."""
    from bayesfa.samplers.pdia import pdfa

    method, _, opts, arrays = _lone_sample()
    test = Corpus.from_strings([[1] * 12, [1, 1, 0, 1] * 3], 2)  # needs many new states
    kw = {"continuation": False, "map": True, "draw_sets": 20, "proposal": proposal}
    roomy = method.perplexity_log_prob(arrays, opts, test, **kw)
    caps, real, rows = [], pdfa._sample_state, arrays["delta"].shape[2]

    def no_room_at_first(model, nf, arrays_, c, d, cap, grow=None):
        if grow is None:  # the single reading (not a filter's particle)
            return real(model, nf, arrays_, c, d, cap)
        caps.append(cap)  # the first capacity tried holds the sample's states only
        return real(model, nf, arrays_, c, d, rows if len(caps) == 1 else cap, grow)

    monkeypatch.setattr(pdfa, "PARTICLE_NEW_STATES", 0)
    monkeypatch.setattr(pdfa, "_sample_state", no_room_at_first)
    assert method.perplexity_log_prob(arrays, opts, test, **kw) == roomy
    assert len(caps) == 2 and caps[0] < caps[1]  # ran out, then the whole test's room


@pytest.mark.parametrize("name", ["pdfa", "pdia"])
def test_memory_estimate_is_the_arrays_of_a_chain_and_its_stored_draws(name):
    """``estimate_memory`` is the bytes of one chain's arrays (:class:`pdfa.ChainState`, its
    workspace, the tokens: summed here, every ndarray attribute) plus, per stored draw of every
    chain, the arrays :func:`pdfa._stack` keeps at their largest (every state a row, for the
    PDIA every entry a table). Strings of length 0, 1 and several. Issue 39: the estimate was
    short of the per-state arrays and, for the finite PDFA, of the CRF's ``tabs``."""
    from bayesfa.samplers.pdia import pdfa
    from bayesfa.samplers.pdia.pdia import state_capacity

    corpus = Corpus.from_strings([[], [0], [1, 2, 0], [], [2, 2, 2, 1]], 3)
    opts = {"states": 4, "chains": 2, "iterations": 12, "burn_in": 4, "period": 2}
    model, n_cap = ((pdfa.FINITE, opts["states"] + 1) if name == "pdfa"
                    else (pdfa.CRF, state_capacity(corpus, opts)))
    data = pdfa.as_symbols(corpus, False)
    st = pdfa.ChainState(model, data, n_cap)
    held = sum(v.nbytes for v in vars(st).values() if isinstance(v, np.ndarray))
    held += sum(x.nbytes for x in st.workspace()) + data.sym.nbytes
    assert data.sym.size == corpus.n_tokens and data.n_symbols == corpus.alphabet_size + 1
    s = data.n_symbols
    draw = {"delta": np.zeros((n_cap, s), np.int32), "seat": np.zeros((n_cap, s), np.int32),
            "cnt": np.zeros((n_cap, s), np.int32), "mu": st.mu.copy(), "hyp": np.zeros(5),
            "tdish": np.zeros(n_cap * s if model == pdfa.CRF else 0, np.int32), "end": 0,
            "log_joint": 0.0}
    stacked = pdfa._stack([{"draws": [draw]}], model, s)
    per_draw = sum(v.nbytes for v in stacked.values())
    n_draws = (opts["iterations"] - opts["burn_in"]) // opts["period"]
    assert get_method(name).estimate_memory(corpus, opts) == (
        held + opts["chains"] * n_draws * per_draw)


def test_two_particles_never_resample_and_average_their_two_readings():
    """The particle filter resamples when the particles' effective number falls below half
    of them; two particles' effective number is at least 1, so they never do, and the filter's
    estimate of ``p(test | sample)`` is exactly the mean of its two readings' (draw sets 0 and
    1), on a test of 30 symbols (letters and ends: checks after 10 and 20). Issue 39: a
    threshold of ``n_particles ** 2`` (resampling always) lived."""
    from bayesfa.samplers.pdia import pdfa

    _, _, opts, arrays = _lone_sample()
    test = Corpus.from_strings([[1, 0, 1, 1, 1], [1, 1], [0, 1, 0, 0, 1, 1, 0], [1, 0, 0, 1],
                                [0, 0, 1, 1, 1, 0, 1]], 2)
    two = pdfa.per_sample_log_prob(pdfa.CRF, arrays, opts, test, per_symbol=True, particles=2)
    readings = [pdfa.per_sample_log_prob(pdfa.CRF, arrays, opts, test, per_symbol=True,
                                         draw_set=k).sum() for k in (0, 1)]
    assert readings[0] != readings[1]  # the readings drew differently
    assert two.sum() == pytest.approx(np.logaddexp(*readings) - np.log(2), abs=1e-12)


@pytest.mark.parametrize("name, kinds", [("pdfa", {"entry", "mu", "alpha", "beta", "gamma"}),
                                         ("pdia", {"entry", "table", "alpha", "beta", "alpha0",
                                                   "d", "d0"})])
def test_acceptance_rates_only_of_moves_proposed(name, kinds):
    """``info["acceptance"]`` holds a rate (accepted / proposed, in [0, 1]) for each move the
    method proposed, and none for a move it never proposes: the PDFA's ``table`` (its rows have
    no restaurants of tables), the PDIA's ``mu`` (issue 39: the guard read at ``off & 1`` gave
    those a 0 / 0 rate)."""
    o = options(iterations=30, burn_in=10, period=2, chains=1)
    if name == "pdfa":
        o["states"] = 3
    acc = get_method(name).fit(get_toy("tiny").train, o, 1, False).info["acceptance"]
    assert set(acc) == kinds
    assert all(0.0 <= r <= 1.0 for r in acc.values()), acc


@pytest.mark.parametrize("name", ["pdfa", "pdia"])
def test_a_fit_emits_no_floating_point_warning(name):
    """A fit on the toy computes no log of zero nor other invalid value (numpy would warn):
    issue 39's survivor took ``log mu`` of the PDIA's empty base (``model >= FINITE`` for
    ``==``), ``-inf`` that the CRF never read, seen only as a warning."""
    import warnings

    o = options(iterations=30, burn_in=10, period=2, chains=1)
    if name == "pdfa":
        o["states"] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        get_method(name).fit(get_toy("tiny").train, o, 1, False)


def test_the_crf_arrays_rows_are_distinct_and_their_stacks_hold_every_id():
    """The seating arrays' layout (``_crf_kernel``): the rows of ``tabs`` and of ``sts`` and
    the slots of ``meta`` are distinct indices inside their arrays, and a fresh seating's free
    stacks hold every table and every state but q0 once, popped in increasing order. Issue 39:
    ``T_FREE = 5``, the free stack of tables sharing a row with the pending stack, passed
    every test (the pool of tables is rarely drained far enough to reach the entries a move's
    pending tables overwrite)."""
    from bayesfa.samplers.pdia import _crf_kernel as K

    tab_rows = (K.T_N, K.T_DISH, K.T_COL, K.T_POS, K.T_FREE, K.T_PEND, K.T_FLAG)
    st_rows = (K.S_M, K.S_FREE, K.S_PEND, K.S_FLAG)
    slots = (K.M_FREE_TAB, K.M_FREE_ST, K.M_TABLES, K.M_DISHES, K.M_PEND_TAB, K.M_PEND_ST,
             K.M_HI, K.M_STAMP)
    nj, v, mu, tabs, col_tabs, col_t, sts, meta = K.new_crf(5, 3)
    for rows, n in ((tab_rows, tabs.shape[0]), (st_rows, sts.shape[0]), (slots, meta.size)):
        assert sorted(rows) == list(range(n))
    free = tabs[K.T_FREE, :meta[K.M_FREE_TAB]]
    assert list(free[::-1]) == list(range(15))  # the top of the stack is table 0
    assert sorted(sts[K.S_FREE, :meta[K.M_FREE_ST]]) == [1, 2, 3, 4]
