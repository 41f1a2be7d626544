"""bayesfa.samplers.chains: the argument checks and the chain pool the sampler fronts share."""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.samplers import chains

TRAIN = Corpus.from_strings([[0, 1], [], [1, 1, 0]], 2)
GOOD = dict(n_states=2, beta=0.5, iterations=10, burn_in=4, period=3, chains=2, jobs=1)


def test_check_chain_arguments_returns_the_draws_per_chain():
    assert chains.check_chain_arguments(TRAIN, **GOOD) == 2  # (10 - 4) // 3
    assert chains.check_chain_arguments(TRAIN, **{**GOOD, "burn_in": 0}, alpha=np.float32(0.1)) == 3


@pytest.mark.parametrize("key,bad,message", [
    ("n_states", 0, "n_states must be an integer >= 1, got 0"),
    ("n_states", True, "n_states must be an integer >= 1, got True"),
    ("n_states", 2.0, "n_states must be an integer >= 1, got 2.0"),
    ("iterations", 0, "iterations must be an integer >= 1, got 0"),
    ("burn_in", -1, "burn_in must be an integer >= 0, got -1"),
    ("period", 0, "period must be an integer >= 1, got 0"),
    ("chains", 0, "chains must be an integer >= 1, got 0"),
    ("jobs", 0, "jobs must be an integer >= 1, got 0"),
    ("beta", 0.0, "beta must be a positive number, got 0.0"),
    ("beta", float("inf"), "beta must be a positive number, got inf"),
    ("beta", "1", "beta must be a positive number, got '1'"),
    ("alpha", float("nan"), "alpha must be a positive number, got nan"),
    ("burn_in", 10, "--iterations 10 with --burn-in 10 and --period 3 keeps no sample"),
])
def test_check_chain_arguments_names_the_bad_argument(key, bad, message):
    with pytest.raises(InputError) as exc:
        chains.check_chain_arguments(TRAIN, **{**GOOD, key: bad})
    assert str(exc.value) == message


def test_checks_come_in_order_and_the_token_limit_is_the_callers():
    with pytest.raises(TypeError, match="bayesfa.Corpus"):
        chains.check_chain_arguments(TRAIN.tokens, **{**GOOD, "n_states": 0})
    with pytest.raises(InputError, match="n_states"):  # integers before numbers
        chains.check_chain_arguments(TRAIN, **{**GOOD, "n_states": 0, "beta": 0.0})
    with pytest.raises(InputError, match="^the training corpus has no string$"):
        chains.check_chain_arguments(Corpus.from_strings([], 2), **GOOD)
    limit = TRAIN.n_tokens
    with pytest.raises(InputError) as exc:
        chains.check_chain_arguments(TRAIN, **GOOD, max_tokens=limit)
    assert str(exc.value) == f"the training corpus has {limit} tokens, too many"
    with pytest.raises(InputError) as exc:
        chains.check_chain_arguments(TRAIN, **GOOD, max_tokens=limit, too_many="; float32")
    assert str(exc.value) == f"the training corpus has {limit} tokens; float32"
    assert chains.check_chain_arguments(TRAIN, **GOOD, max_tokens=limit + 1) == 2


def test_check_numbers_of_the_variational_fits():
    chains.check_numbers(TRAIN, (("n_states", 1, 1),), {"tol": 1e-9})
    with pytest.raises(InputError, match="^tol must be a positive number, got -1$"):
        chains.check_numbers(TRAIN, (("n_states", 1, 1),), {"tol": -1})


def test_free_positions():
    # tokens 1 2 0 | 0 | 2 2 1 0: z[t] is free unless t = 0 or token t-1 ends a string
    tokens = Corpus.from_strings([[0, 1], [], [1, 1, 0]], 2).tokens
    np.testing.assert_array_equal(chains.free_positions(tokens), [1, 2, 5, 6, 7])
    assert chains.free_positions(tokens).dtype == np.int64
    np.testing.assert_array_equal(chains.free_positions(list(tokens)), [1, 2, 5, 6, 7])


def test_map_chains_in_processes_keeps_the_order():
    args = [(b, 3, 1000) for b in range(7)]
    serial = chains.map_chains(pow, args, 1)
    assert serial == [pow(*a) for a in args]
    assert chains.map_chains(pow, args, 2) == serial
    assert chains.mp_context().get_start_method() in ("fork", "forkserver", "spawn")


def test_checkpoint_every_takes_finite_seconds_from_zero():
    """``--checkpoint-every``'s type: 0 (a save after every block) and any finite number of
    seconds above it; a negative, infinite or unparsable number is a one-line usage error."""
    import argparse

    for text, value in [("0", 0.0), ("0.0", 0.0), ("-0", 0.0), ("0.25", 0.25), ("600", 600.0),
                        ("1e-9", 1e-9)]:
        assert chains.nonnegative_seconds(text) == value
    for text in ["-1e-9", "-0.5", "-1", "-2", "inf", "-inf", "nan"]:
        with pytest.raises(argparse.ArgumentTypeError,
                           match=f"must be a number of seconds >= 0, got {text}$"):
            chains.nonnegative_seconds(text)
    with pytest.raises(ValueError):
        chains.nonnegative_seconds("soon")
    parser = argparse.ArgumentParser()
    chains.add_checkpoint_argument(parser)
    assert parser.parse_args(["--checkpoint-every", "0"]).checkpoint_every == 0.0
    assert parser.parse_args([]).checkpoint_every == chains.CHECKPOINT_EVERY


def test_read_checkpoint_refuses_a_damaged_file_in_one_line_naming_it(tmp_path):
    """A checkpoint saved by :func:`chains.save_checkpoint` reads back under its fingerprint,
    and None under another; a truncated copy, bytes that are no zip at all, a file without a
    fingerprint and one without a field asked for are each an :class:`InputError` of one
    line naming the file (the zipfile, OS and format errors of a damaged file included, not
    only the checks of the file's contents)."""
    path = tmp_path / "chain-0000.npz"
    chains.save_checkpoint(path, "fp", {"z": np.arange(500, dtype=np.int32), "sweeps_done": 3})
    got = chains.read_checkpoint(path, "fp", ["z", "sweeps_done"])
    assert np.array_equal(got["z"], np.arange(500)) and int(got["sweeps_done"]) == 3
    assert chains.read_checkpoint(path, "other", ["z"]) is None
    whole = path.read_bytes()
    damaged = {"truncated": whole[: len(whole) // 2], "not a zip": b"not an npz file at all"}
    for label, data in damaged.items():
        bad = tmp_path / f"{label.replace(' ', '-')}.npz"
        bad.write_bytes(data)
        with pytest.raises(InputError) as err:
            chains.read_checkpoint(bad, "fp", ["z"])
        message = str(err.value)
        assert str(bad) in message and "corrupt checkpoint" in message and "\n" not in message, label
    bare = tmp_path / "bare.npz"
    np.savez(bare, z=np.zeros(3))
    with pytest.raises(InputError, match="no fingerprint"):
        chains.read_checkpoint(bare, "fp", ["z"])
    with pytest.raises(InputError, match="missing rng_state"):
        chains.read_checkpoint(path, "fp", ["z", "rng_state"])
