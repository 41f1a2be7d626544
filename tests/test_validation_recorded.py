"""The ``recorded`` check of ``bayesfa validate``: every per-draw quantity of a trace
recomputed from the recorded state (issue 39, item 1). Exact checks: no false alarm."""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.validation.harness import compare, recorded_check
from bayesfa.validation.pfa import mutants, reference
from bayesfa.validation.recorded import Recomputed, recorded_check as build
from bayesfa.validation.toys import get_toy

SHORT = {"iterations": 2_200, "burn_in": 200}


@pytest.fixture(scope="module")
def cgs_fits():
    toy = get_toy("tiny")
    return toy, {name: compare(name, toy, seed=0, options=SHORT)
                 for name in ("cgs-pfa", mutants.PREFIX + "log-joint-end-prior")}


def test_cgs_pfa_recorded_quantities_recomputed(cgs_fits):
    toy, reports = cgs_fits
    check = recorded_check("cgs-pfa", reports["cgs-pfa"], toy)
    assert check.passed, check.to_table()
    assert {r["quantity"] for r in check.rows} >= {"log_joint", "n_states", "n_edges"}


def test_log_joint_mutant_samples_alike_and_is_caught(cgs_fits):
    """The audit's missed slip: a wrong prior term in the log joint written to the trace.
    Sampling is untouched (the same counts draw for draw), so only the recorded check sees
    it, and it sees it on every draw."""
    toy, reports = cgs_fits
    good, bad = reports["cgs-pfa"].fit, reports[mutants.PREFIX + "log-joint-end-prior"].fit
    np.testing.assert_array_equal(good.arrays["counts"], bad.arrays["counts"])
    assert reports[mutants.PREFIX + "log-joint-end-prior"].check("predictive").passed
    check = recorded_check(mutants.PREFIX + "log-joint-end-prior",
                           reports[mutants.PREFIX + "log-joint-end-prior"], toy)
    assert not check.passed
    assert check.summary["failed_quantities"] == ["log_joint"]
    row = next(r for r in check.rows if r["quantity"] == "log_joint")
    assert row["max_diff"] > 0.1 and check.summary["margin"] > 1e6


def test_quantity_not_recomputed_fails():
    trace = {"a": np.zeros((2, 3)), "b": np.ones((2, 3))}
    ok = build(trace, {"a": Recomputed(np.zeros((2, 3)), trace["a"], 0.0, "zero")})
    assert not ok.passed and ok.summary["failed_quantities"] == ["b"]
    both = {"a": Recomputed(np.zeros((2, 3)), trace["a"], 0.0, "zero"),
            "b": Recomputed(np.ones((2, 3)), trace["b"], 0.0, "one")}
    assert build(trace, both).passed
    nan = {**both, "b": Recomputed(np.ones((2, 3)), np.where([[1, 0, 0], [0, 0, 0]], np.nan, 1.0),
                                   1e-9, "one")}
    assert not build(trace, nan).passed


def test_counts_consistency_sees_a_corrupted_state():
    toy = get_toy("tiny")
    from bayesfa.exact import counts as path_counts, enumerate_paths

    z = next(iter(enumerate_paths(toy.train, toy.n_states)))
    c = path_counts(toy.train.tokens, np.asarray(z), toy.n_states, toy.train.alphabet_size + 1)
    assert reference.counts_consistency(c[None, None], toy.train.tokens)["pass"]
    moved = c.copy()
    i = np.argwhere(moved[:, 1:, 1:] > 0)[0]
    moved[i[0], i[1] + 1, i[2] + 1] -= 1
    moved[i[0], i[1] + 1, 2 if i[2] + 1 == 1 else 1] += 1  # one transition to another state
    assert not reference.counts_consistency(moved[None, None], toy.train.tokens)["pass"]


@pytest.mark.parametrize("name,options", [("cgs-hmm", SHORT), ("cgs-hmm-star", SHORT),
                                          ("cgs-sg", SHORT),
                                          ("pdia", {"iterations": 300, "burn_in": 100}),
                                          ("pdia-smoothed", {"iterations": 300, "burn_in": 100}),
                                          ("pdfa", {"iterations": 300, "burn_in": 100}),
                                          ("ipfa", SHORT),
                                          ("hpyp", {"iterations": 300, "burn_in": 100})])
def test_recorded_quantities_recomputed_and_a_slip_seen(name, options):
    """CGS-HMM(*), CGS-SG, the PDIA, the finite PDFA, the iPFA and the HPYP: every trace
    entry recomputed from the recorded state (counts, graph; the PDIA's and PDFA's
    transitions, seating, emission counts, mu and hyperparameters; the iPFA's counts, weights
    beta, table counts and hyperparameters; the HPYP's table sizes and d, theta); a trace
    entry changed on one draw, by a slip of the recording, fails the check."""
    toy = get_toy("tiny")
    report = compare(name, toy, seed=0, options=options)
    check = recorded_check(name, report, toy)
    assert check.passed, check.to_table()
    assert {r["quantity"] for r in check.rows} >= set(report.fit.trace)
    fit = report.fit
    for key in fit.trace:
        trace = dict(fit.trace)
        trace[key] = np.array(trace[key], dtype=np.float64)
        trace[key][1, 7] += 1.0
        report.fit = fit._replace(trace=trace)
        bad = recorded_check(name, report, toy)
        assert not bad.passed and bad.summary["failed_quantities"] == [key], key


@pytest.mark.parametrize("name,options", [
    ("pdfa", {"iterations": 300, "burn_in": 100}), ("ipfa", SHORT),
    ("hpyp", {"iterations": 300, "burn_in": 100})])
def test_recording_mutants_sample_alike_and_are_caught(name, options):
    """``pdfa:mutant-log-joint-mu-prior`` (log Dir(mu) with gamma for gamma / |Q| in the
    recorded log joint), ``ipfa:mutant-log-joint-end-prior`` (alpha for alpha / A on the
    end marker) and ``hpyp:mutant-log-joint-root-base`` (log G0 once, not once per root
    table): the same draws as the method's, so only the recorded check sees them; it sees
    the log joint and nothing else, on every draw."""
    toy = get_toy("tiny")
    mutant = {"pdfa": "pdfa:mutant-log-joint-mu-prior",
              "ipfa": "ipfa:mutant-log-joint-end-prior",
              "hpyp": "hpyp:mutant-log-joint-root-base"}[name]
    good, bad = (compare(n, toy, seed=0, options=options) for n in (name, mutant))
    for key in good.fit.arrays:
        if key != "log_joint":
            np.testing.assert_array_equal(good.fit.arrays[key], bad.fit.arrays[key], key)
    assert bad.check("predictive").rows == good.check("predictive").rows
    check = recorded_check(mutant, bad, toy)
    assert not check.passed and check.summary["failed_quantities"] == ["log_joint"]
    row = next(r for r in check.rows if r["quantity"] == "log_joint")
    assert "draws differ" in row["how"] and check.summary["margin"] > 1e6
    assert row["how"].split("; ")[-1] == f"{row['draws']} draws differ"


def test_hpyp_recorded_with_d_and_theta_sampled():
    """In production d and theta are sampled per depth: the recorded log joint must use the
    values of the same draw (a stale per-node copy would differ); recomputed from the
    recorded seating with the recorded d, theta."""
    from bayesfa.methods import get_method
    from bayesfa.validation.harness import budget_options
    from bayesfa.validation.ngram.hpyp import recompute_trace

    toy = get_toy("tiny")
    opts = budget_options("hpyp", toy, overrides={"iterations": 300, "burn_in": 100,
                                                 "discount": None, "concentration": None})
    assert opts["record_seating"]
    fit = get_method("hpyp").fit(toy.train, opts, 3, False)
    assert np.ptp(fit.trace["d_1"]) > 0 and np.ptp(fit.trace["theta_0"]) > 0
    recomputed, extra = recompute_trace(fit.arrays, fit.trace, opts, toy.train)
    check = build(fit.trace, recomputed, extra)
    assert check.passed, check.to_table()


def test_hpyp_record_seating_changes_no_draw():
    """A validation fit (one draw per kernel call, the sizes copied) draws what a production
    fit draws, bit for bit; and it keeps no checkpoints (one-line refusal)."""
    from bayesfa.errors import InputError
    from bayesfa.samplers.ngram.hpyp import sample_hpyp

    train = get_toy("tiny").train
    kw = dict(iterations=120, burn_in=20, chains=2, seed=5)
    plain = sample_hpyp(train, 2, **kw)
    rec = sample_hpyp(train, 2, record_seating=True, **kw)
    for key in plain.arrays:
        np.testing.assert_array_equal(plain.arrays[key], rec.arrays[key], key)
    for key in plain.trace:
        np.testing.assert_array_equal(plain.trace[key], rec.trace[key], key)
    assert rec.arrays["seating"].shape[:2] == (2, 100) and "seating" not in plain.arrays
    with pytest.raises(InputError, match="record_seating"):
        sample_hpyp(train, 2, record_seating=True, checkpoint_dir="unused", **kw)


def test_hpyp_seating_log_joint_by_hand():
    """The HPYP's recomputation on a seating written out by hand: a root with tables of 2
    and 1 customers (dishes a, b) and one child restaurant with one table of 2 (dish a),
    d = (0.3, 0.2), theta = (0.8, 1.5), 3 symbols: EPPF(root) = (theta0 + d0) / ((theta0 + 1)
    (theta0 + 2)) (1 - d0), EPPF(child) = (1 - d1) / (theta1 + 1), times G0^2 = 1/9."""
    import math

    from bayesfa.validation.ngram.hpyp import seating_log_joint

    d0, d1, t0, t1 = 0.3, 0.2, 0.8, 1.5
    want = (math.log(t0 + d0) - math.log((t0 + 1) * (t0 + 2)) + math.log(1 - d0)
            + math.log(1 - d1) - math.log(t1 + 1) + 2 * math.log(1 / 3))
    # slots: (root, a) room 3, (root, b) room 1, (child, a) room 2; sizes after slot_off
    seating = np.array([[2, 9, 9, 1, 2, 9, 0]])
    got = seating_log_joint(seating, np.array([[1, 1, 1]]), np.array([0, 3, 4]),
                            np.array([0, 0, 1]), np.array([0, 1]), np.array([[d0, d1]]),
                            np.array([[t0, t1]]), 3)
    assert got[0] == pytest.approx(want, rel=1e-12)
    # stale entries past a slot's tables are not read; a second table is
    seating2 = seating.copy()
    seating2[0, 1] = 1
    got2 = seating_log_joint(seating2, np.array([[2, 1, 1]]), np.array([0, 3, 4]),
                             np.array([0, 0, 1]), np.array([0, 1]), np.array([[d0, d1]]),
                             np.array([[t0, t1]]), 3)
    want2 = (math.log((t0 + d0) * (t0 + 2 * d0)) - math.log((t0 + 1) * (t0 + 2) * (t0 + 3))
             + math.log(1 - d0) + math.log(1 - d1) - math.log(t1 + 1) + 3 * math.log(1 / 3))
    assert got2[0] == pytest.approx(want2, rel=1e-12)


def test_pdfa_walk_sees_a_corrupted_state():
    """The PDFA/PDIA state rows: counts moved from one state to another, or an entry
    instantiated that the data do not visit, fail; the true walk passes."""
    from bayesfa.validation.pdia.pdfa import walk_data, walk_rows

    toy = get_toy("tiny")
    s = toy.train.alphabet_size + 1
    delta = np.full((4, s), -1, dtype=np.int32)  # row 3: a state the data never reach
    delta[0, 1:] = 1
    delta[1, 1:] = 2
    delta[2, 1:] = 1
    counts, visited = walk_data(delta, toy.train)
    delta[~visited] = -1
    arrays = {"delta": delta[None, None], "counts": counts[None, None]}
    assert all(r["pass"] for r in walk_rows(arrays, {}, toy.train))
    moved = counts.copy()
    q = int(np.argmax(moved[:, 1] > 0))
    moved[q, 1] -= 1
    moved[(q + 1) % 3, 1] += 1
    rows = walk_rows({**arrays, "counts": moved[None, None]}, {}, toy.train)
    assert [r["pass"] for r in rows] == [False, True]
    assert (delta[3] < 0).all() and counts[3].sum() == 0
    extra = delta.copy()
    extra[3, 1] = 0  # instantiated, never visited
    rows = walk_rows({**arrays, "delta": extra[None, None]}, {}, toy.train)
    assert not rows[1]["pass"]


@pytest.mark.slow
@pytest.mark.parametrize("name,check", [
    ("cgs-pfa:mutant-log-joint-end-prior", "recorded"),
    ("hpyp:mutant-hyper-skip-two-customers", "hyper-conditional"),
    ("pdia:mutant-top-seating-d-for-d0", "move-table"),
])
def test_validate_catches_the_audits_slips(name, check):
    """The three slips of issue 39's audit, now named mutants, fail ``bayesfa validate`` by
    the check meant for them with a margin (statistic over threshold) of at least 1.5."""
    from bayesfa.validation.checks import margin
    from bayesfa.validation.harness import validate

    report = validate(name, "tiny", 0)
    assert not report.passed
    failed = report.check(check)
    assert not failed.passed and margin(failed) >= 1.5, failed.to_table()


def test_sampler_statistics_are_range_checked_not_recomputed():
    """``moved`` and the acceptance rates (sample_stats, issue 36) describe moves the recorded
    state does not keep: a fraction in [0, 1] a draw passes (NaN too for a rate: no move
    tried), a value outside or an array of another shape than the log joint's fails; a
    quantity of another name still must be recomputed."""
    lj = Recomputed(np.zeros(3), np.zeros(3), 0.0, "by hand")
    ok = build({"log_joint": np.zeros(3), "moved": np.array([0.0, 0.5, 1.0]),
                "accept_mh": np.array([np.nan, 0.25, 1.0])}, {"log_joint": lj})
    assert ok.passed
    for trace in ({"moved": np.array([0.0, 1.5, 0.5])}, {"moved": np.array([0.1, np.nan, 0.5])},
                  {"accept_swap": np.array([-0.1, 0.2, 0.3])}, {"mystery": np.zeros(3)},
                  # one value a draw, the log joint's shape: not another array's per-draw
                  # cells (cgs-sg's moved once read the counts' slot of the chains' output)
                  {"moved": np.full((3, 2, 2), 0.1)}, {"accept_mh": np.full(2, 0.5)}):
        bad = build({"log_joint": np.zeros(3), **trace}, {"log_joint": lj})
        assert not bad.passed and bad.summary["failed_quantities"] == list(trace)
    # without a log joint, two axes [chain, draw]
    assert build({"moved": np.full((2, 3), 0.5)}, {}).passed
    assert not build({"moved": np.full((2, 3, 4), 0.5)}, {}).passed


def test_hpyp_heldout_log_pred_is_range_checked_and_says_why():
    """A fit with a holdout records ``heldout_log_pred``, a one-sample estimate (the held-out
    customers seated at random as they are scored) that the recorded seating does not
    determine: the check says so and passes it on its shape and range; a positive, NaN or
    misshapen record fails it (and the row still says why)."""
    from bayesfa.methods import get_method
    from bayesfa.validation.harness import budget_options
    from bayesfa.validation.ngram.hpyp import recompute_trace

    toy = get_toy("tiny")
    opts = budget_options("hpyp", toy, overrides={"iterations": 130, "burn_in": 100,
                                                 "chains": 2, "holdout": 0.3})
    fit = get_method("hpyp").fit(toy.train, opts, 3, False)
    held = fit.trace["heldout_log_pred"]
    assert held.shape == (2, 30) and fit.info["holdout_strings"] > 0
    recomputed, extra = recompute_trace(fit.arrays, fit.trace, opts, toy.train)
    check = build(fit.trace, recomputed, extra)
    assert check.passed, check.to_table()
    row = next(r for r in check.rows if r["quantity"] == "heldout_log_pred")
    assert row["how"].startswith("not recomputable from the recorded state: each draw's value "
                                 "is a one-sample estimate")
    assert row["how"].endswith("checked: shape (2, 30), finite and at most 0 in every draw")
    for bad, why in ((held + np.where(np.arange(30) == 4, 1e3, 0.0), "; 2 draws outside"),
                     (np.where(np.arange(30) == 7, np.nan, held), "; 2 draws outside"),
                     (held[:, :-1], "; shape (2, 29) recorded")):
        trace = {**fit.trace, "heldout_log_pred": bad}
        recomputed, extra = recompute_trace(fit.arrays, trace, opts, toy.train)
        check = build(trace, recomputed, extra)
        assert check.summary["failed_quantities"] == ["heldout_log_pred"]
        row = next(r for r in check.rows if r["quantity"] == "heldout_log_pred")
        assert row["how"].startswith("not recomputable") and row["how"].endswith(why)
