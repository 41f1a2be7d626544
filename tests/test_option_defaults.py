"""Every option's help states the default the parser applies (issue 39: a mutant of
``pdia --period``'s ``default=10``, whose help says "default 10", passed every test; a user
reads the help, the run uses the parser's value).

Each front is got by name below (``get_method("NAME")``), one call a method, so that the
mutation runner (``benchmarks/mutation/run.py``) counts this file among each front's killers.
"""

from __future__ import annotations

import argparse
import re

import pytest

from bayesfa.methods import REGISTRY, get_method


def _fronts() -> dict:
    return {"alergia": get_method("alergia"), "cgs-hmm": get_method("cgs-hmm"),
            "cgs-hmm-star": get_method("cgs-hmm-star"), "cgs-pfa": get_method("cgs-pfa"),
            "cgs-sg": get_method("cgs-sg"), "cvb0": get_method("cvb0"),
            "cvb2": get_method("cvb2"), "cvgram": get_method("cvgram"),
            "estatemerge": get_method("estatemerge"), "evgram": get_method("evgram"),
            "gcvb0": get_method("gcvb0"), "hmm-em": get_method("hmm-em"),
            "hpyp": get_method("hpyp"), "ipfa": get_method("ipfa"),
            "memoizer": get_method("memoizer"), "oracle-hmm": get_method("oracle-hmm"),
            "oracle-pdfa": get_method("oracle-pdfa"), "oracle-pfa": get_method("oracle-pfa"),
            "pdfa": get_method("pdfa"), "pdia": get_method("pdia"),
            "pdia-smoothed": get_method("pdia-smoothed")}


#: options whose help gives the default in words (computed later, or hidden from the help):
#: (method, option) -> why the parser's value is not the stated one
IN_WORDS = {
    ("cgs-pfa", "--interleave"): "None: the kernel's one chain at a time, the help's 1",
    ("cgs-pfa", "--final-blocked-every"): "hidden unless --auto (SUPPRESS): --auto's own default",
    ("cgs-pfa", "--search-blocked-every"): "hidden unless --auto (SUPPRESS): --auto's own default",
    ("cgs-pfa", "--shards"): "hidden unless given (SUPPRESS): no sharding",
    ("cgs-pfa", "--workers"): "hidden unless given (SUPPRESS): min(K, 2), from --shards",
    ("estatemerge", "--first-fit"): "a flag: the help names the other rule",
    ("hpyp", "--discount"): "None: sampled per depth",
    ("hpyp", "--concentration"): "None: sampled per depth",
    ("ipfa", "--split-merge-scans"): "None: the kernel's SCANS",
    ("ipfa", "--anneal"): "None: 300 or the whole burn-in, from --burn-in",
    ("ipfa", "--budget"): "None: no budget",
    ("ipfa", "--paths"): "None: slice with the blocked sampler, none with the direct one",
}


def _stated(help_text: str) -> str | None:
    """The last "default X" of a help text (X up to a space, ';' or ')'), else the first "X
    (default)" (a choice named first among others: ``--paths``' "slice (default): ..."), or
    None."""
    text = " ".join(help_text.split())
    found = re.findall(r"\bdefault:? ([^;)\s]+)", text)
    if found:
        return found[-1].rstrip(".,:")
    named = re.search(r"([^\s(:;,]+) \(default\)", text)
    return named.group(1) if named else None


def _same(stated: str, value) -> bool:
    """The stated default is the parser's: an integer exactly, a float to the help's
    significant digits (gcvb0's ``--tol`` is printed to three), anything else as text. (A
    relative tolerance let ``pdia --burn-in``'s 500 -> 499 pass under "default 500".)"""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value) == stated
    try:
        number = float(stated)
    except ValueError:
        return False
    if isinstance(value, int):
        return number == value
    mantissa = stated.lower().split("e")[0]
    digits = max(1, len(re.sub(r"\D", "", mantissa).lstrip("0")))
    return f"{value:.{digits - 1}e}" == f"{number:.{digits - 1}e}"


def test_every_method_is_named_here():
    assert sorted(_fronts()) == sorted(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_option_help_states_the_default_the_parser_applies(name):
    parser = argparse.ArgumentParser()
    _fronts()[name].add_arguments(parser)
    checked, wrong = 0, []
    for action in parser._actions:
        stated = _stated(action.help or "")
        if stated is None or argparse.SUPPRESS in (action.help, action.default):
            continue  # hidden, or absent from the options unless given
        key = (name, max(action.option_strings, key=len))
        if key in IN_WORDS:
            assert not _same(stated, action.default), f"{key} now states its default: drop it from IN_WORDS"
            continue
        checked += 1
        if not _same(stated, action.default):
            wrong.append((key, stated, action.default))
    assert not wrong, wrong
    assert checked > 0  # the regex still reads this front's help texts


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_option_with_a_value_for_default_states_it(name):
    """A default the help does not state is one a changed constant changes unseen (issue 39: the
    PDIA's ignored ``--jobs`` default 1 -> 2 passed every test). Unstated are only flags (off
    unless given), defaults of None (the help says in words what happens), hidden options and
    options absent unless given (default ``SUPPRESS``)."""
    parser = argparse.ArgumentParser()
    _fronts()[name].add_arguments(parser)
    unstated = [max(action.option_strings, key=len) for action in parser._actions
                if argparse.SUPPRESS not in (action.help, action.default) and action.dest != "help"
                and action.default is not None and action.default is not False
                and _stated(action.help or "") is None]
    assert not unstated, unstated


def test_a_default_changed_under_its_help_is_caught():
    """The check itself: ``--period 11`` under a help that says "default 10" is a mismatch."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--period", type=int, default=11,
                        help="keep one sample every PERIOD sweeps after burn-in; default 10")
    (action,) = [a for a in parser._actions if a.dest == "period"]
    assert _stated(action.help) == "10" and not _same("10", action.default)
    assert _same("2.22e-09", 2.220446049250313e-09) and _same("1,0.1", "1,0.1")
    assert not _same("500", 499) and not _same("2.22e-09", 2.23e-09) and _same("0.5", 0.5)
    assert _stated("how paths are drawn. dense (default): FFBS; slice: beam") == "dense"
    assert _stated("0 (default) the HDP; L > 0 ... default 7") == "7"


@pytest.mark.parametrize("kind,inside,outside", [
    ("fraction", ["0", "0.5", "0.999"], ["1", "-0.1", "nan"]),
    ("inverse_temperature", ["1", "0.5", "1e-9"], ["0", "1.5", "nan"]),
    ("open_fraction", ["0.5", "1e-9"], ["0", "1", "nan"]),
])
def test_fraction_types_take_their_interval_and_name_it(kind, inside, outside):
    """The unit-interval option types of :mod:`bayesfa.methods` (one each for ``[0, 1)``,
    ``(0, 1]`` and ``(0, 1)``), shared by the PDIA, the n-gram fronts, CVB and CGS-PFA."""
    from bayesfa.methods import fraction, inverse_temperature, open_fraction

    check = {"fraction": fraction, "inverse_temperature": inverse_temperature,
             "open_fraction": open_fraction}[kind]
    for text in inside:
        assert check(text) == float(text)
    shown = {"fraction": "[0, 1)", "inverse_temperature": "(0, 1]", "open_fraction": "(0, 1)"}
    for text in outside:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(shown[kind])):
            check(text)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_default_is_a_value_its_option_accepts(name):
    """A default the option's own type would refuse (``pdia --jobs`` default 0 under
    ``positive_int``) is a value no user could give, recorded in every run folder."""
    parser = argparse.ArgumentParser()
    _fronts()[name].add_arguments(parser)
    checked = 0
    for action in parser._actions:
        if action.type is None or action.default in (None, argparse.SUPPRESS):
            continue
        if isinstance(action.default, str):
            continue  # parsed from this very text
        assert action.type(str(action.default)) == action.default, action.option_strings
        checked += 1
    assert checked > 0
