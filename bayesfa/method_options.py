"""Each method's options, declared once and read everywhere.

A method declares its options in one place: its ``add_arguments(parser)``, one
``parser.add_argument("--name", type=CHECK, default=..., help=...)`` per option, the ``type``
being the option's parse-and-check function (``positive_int``, ``positive_float``, ... of
:mod:`bayesfa.methods`). Everything else reads that declaration through this module:

- the command line (``bayesfa fit --method M``) adds it to its parser;
- the Python API (:func:`bayesfa.fit`) checks keyword options with :func:`resolve`: the CLI's
  names with ``_`` for ``-`` (``--burn-in`` is ``burn_in=``), its defaults, and the same check
  functions, so a bad value raises :class:`~bayesfa.errors.InputError` with the CLI's message;
- the manifest of a run records the resolved options (every option, defaults filled in);
- the memory estimate (``estimate_memory(corpus, options)``) reads the same resolved dict.

:func:`declared` turns the declaration into :class:`Option` records (name, flag, default,
help, choices, whether it is a switch), which the API's ``bayesfa.options(method)`` and the
documentation list. Importing this module imports neither numba nor JAX.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from bayesfa.errors import InputError
from bayesfa.methods import get_method, method_names


@dataclass(frozen=True)
class Option:
    """One option of a method, as its ``add_arguments`` declares it.

    ``name`` is the Python keyword (``burn_in``), ``flag`` the command-line spelling
    (``--burn-in``); ``check`` parses and checks a value given as text (the declaration's
    ``type``; None for switches and free text); ``switch``: a flag without a value;
    ``optional``: absent from the resolved options unless given (declared with
    ``default=argparse.SUPPRESS``; ``default`` is then None).
    """

    name: str
    flag: str
    default: Any
    help: str
    check: Callable[[str], Any] | None
    choices: tuple | None
    switch: bool
    optional: bool = False


def _parser(method: str) -> argparse.ArgumentParser:
    try:
        entry = get_method(method)
    except ValueError as err:
        raise InputError(str(err)) from None
    parser = argparse.ArgumentParser(prog=f"bayesfa fit --method {method}", add_help=False)
    entry.add_arguments(parser)
    return parser


def declared(method: str) -> list[Option]:
    """The options of ``method`` in declaration order."""
    parser = _parser(method)
    parsed = vars(parser.parse_args([]))  # defaults as argparse gives them (text run through type)
    out = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        switch = action.nargs == 0
        optional = action.default is argparse.SUPPRESS
        default = None if optional else parsed[action.dest]
        help_text = (action.help or "") % {"default": default} if action.help else ""
        out.append(Option(name=action.dest, flag=action.option_strings[-1],
                          default=default, help=help_text,
                          check=None if switch else action.type,
                          choices=tuple(action.choices) if action.choices else None,
                          switch=switch, optional=optional))
    return out


def defaults(method: str) -> dict[str, Any]:
    """``{name: default}`` of every option of ``method`` (the optional ones left out)."""
    return {o.name: o.default for o in declared(method) if not o.optional}


def _check_value(method: str, option: Option, value: Any) -> Any:
    """``value`` checked by the option's own check function, as the CLI would check its text."""
    where = f"{option.name}= ({option.flag} of {method})"
    if option.switch:
        if not isinstance(value, bool):
            raise InputError(f"{where}: expected True or False, got {value!r}")
        return value
    if value is None:
        if option.default is None:
            return None
        raise InputError(f"{where}: a value is required (default {option.default!r})")
    if option.check is not None:
        text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        if isinstance(value, float) and value.is_integer():  # states=3.0 reads as 3
            text = str(int(value))
        try:
            parsed = option.check(text)
        except argparse.ArgumentTypeError as err:  # the check's own one-line message
            raise InputError(f"{where}: {err}") from None
        except (ValueError, TypeError):  # int("2.5"), float("x"): say what was expected
            raise InputError(f"{where}: must be {_expected(option)}, got {value!r}") from None
        if isinstance(value, bool) or (isinstance(parsed, int) and isinstance(value, float)
                                        and not float(value).is_integer()):
            raise InputError(f"{where}: expected {type(option.default).__name__ if option.default is not None else 'a number'}, got {value!r}")
        value = parsed
    if option.choices is not None and value not in option.choices:
        raise InputError(f"{where}: choose from {', '.join(map(str, option.choices))}, got {value!r}")
    return value


def _expected(option: Option) -> str:
    """What ``option``'s check reads, in words: ``"a whole number"`` when it turns ``"1"``
    into an int, ``"a number"`` when into a float, else ``"a valid value"``."""
    try:
        probe = option.check("1")
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return "a valid value"
    if isinstance(probe, int) and not isinstance(probe, bool):
        return "a whole number"
    return "a number" if isinstance(probe, float) else "a valid value"


def resolve(method: str, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every option of ``method``: the defaults, overridden by ``given`` (Python names), each
    given value checked as the CLI checks it. Unknown names are an :class:`InputError` that
    lists the method's options.

    >>> opts = resolve("cvb0", {"states": 4})
    >>> opts["states"], opts["beta"], opts["iterations"], opts["tol"]
    (4, 0.1, 200, 1e-06)
    >>> sorted(opts)
    ['beta', 'checkpoint_every', 'holdout', 'iterations', 'states', 'tol']
    >>> resolve("cvb0", {"states": 0})
    Traceback (most recent call last):
    ...
    bayesfa.errors.InputError: states= (--states of cvb0): must be a positive integer, got 0
    """
    if method not in method_names():
        raise InputError(f"unknown method {method!r}; choose from {', '.join(method_names())}")
    options = {o.name: o for o in declared(method)}
    given = dict(given or {})
    unknown = sorted(set(given) - set(options))
    if unknown:
        raise InputError(f"method {method} has no option {', '.join(unknown)}; its options: "
                         f"{', '.join(options)}")
    resolved = {name: o.default for name, o in options.items() if not o.optional}
    for name, value in given.items():
        resolved[name] = _check_value(method, options[name], value)
    return resolved


def describe(method: str) -> str:
    """A table of ``method``'s options (name, default, help), one line each."""
    rows = [(o.name, "switch" if o.switch else repr(o.default), o.help) for o in declared(method)]
    width = max((len(r[0]) for r in rows), default=0)
    dwidth = max((len(r[1]) for r in rows), default=0)
    return "\n".join(f"{n:<{width}}  {d:<{dwidth}}  {h}" for n, d, h in rows)
