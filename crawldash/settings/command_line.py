"""A settings table as a command's flags, and settings from the command line, else the
environment, else the declared default: how ``cli.py`` reads what it is told. A bad value
from either is one line that names the flag or the variable (``UsageError``, exit status 2).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar

from .options import Option, help_of, options_of

S = TypeVar("S")
_ABSENT = object()  # a form neither flag nor variable gives


class UsageError(Exception):
    """A bad command line or environment value: one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Bad arguments: one line that says why, and exit status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def add_options(
    parser: argparse.ArgumentParser, settings_type: type[Any], skip: Sequence[str] = ()
) -> None:
    """A command's flags, from its settings table; unset flags stay out of the namespace."""
    for name, described in options_of(settings_type):
        if name in skip:
            continue
        for dest, form in _forms(name, described):
            common: dict[str, Any] = {"dest": dest, "default": argparse.SUPPRESS}
            hint = f" [{form.env or 'no variable'}; {form.shown.replace('`', '')}]"
            meaning = help_of(described) if dest == name else form.help
            common["help"] = (meaning + hint).replace("%", "%%")
            if described.per_network:  # FILE, or NAME=FILE
                what = described.per_network
                common["metavar"] = what if dest == name else f"NAME={what}"
            if form.kind == "toggle":
                parser.add_argument(form.flag, action=argparse.BooleanOptionalAction, **common)
            elif form.kind == "switch":
                parser.add_argument(form.flag, action="store_true", **common)
            elif form.kind == "list":
                if form.bare is not None:  # --live-check alone: every network
                    common.update(nargs="?", const=form.bare)
                parser.add_argument(form.flag, action="append", **common)
            else:
                parser.add_argument(form.flag, type=_argument_type(form.parse), **common)


def settings_from(settings_type: type[S], given: argparse.Namespace, skip: Sequence[str] = ()) -> S:
    """Settings from the command line, else the environment, else the declared default. Each
    form of a per-network option is taken so, and the networks' values joined."""
    values: dict[str, Any] = {}
    for name, described in options_of(settings_type):
        if name in skip:
            continue
        found = [_value(form, dest, given) for dest, form in _forms(name, described)]
        found = [value for value in found if value is not _ABSENT]
        if described.per_network and found:
            values[name] = tuple(pair for value in found for pair in value)
        elif found:
            values[name] = found[0]
        elif described.required:
            raise UsageError(f"{described.flag} is required (or set {described.env})")
    return settings_type(**values)


def _forms(name: str, described: Option) -> Iterator[tuple[str, Option]]:
    """Each form of an option with the name it is kept under in the parsed arguments."""
    for index, form in enumerate(described.forms()):
        yield (name if index == 0 else form.flag), form


def _value(form: Option, dest: str, given: argparse.Namespace) -> Any:
    if dest in given:
        value = vars(given)[dest]
        return _joined(form, value) if form.kind == "list" else value
    if form.env and form.env in os.environ:
        return _from_environment(form.env, form.parse)
    return _ABSENT


def _argument_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def _joined(described: Option, given: list[str]) -> Any:
    """A repeatable option's values, parsed as one comma-separated list."""
    try:
        return described.parse(",".join(given))
    except ValueError as exc:
        raise UsageError(f"{described.flag}: {exc}") from None


def _from_environment(variable: str, parse: Callable[[str], Any]) -> Any:
    text = os.environ[variable]
    try:
        return parse(text)
    except ValueError as exc:
        raise UsageError(f"{variable}={text!r}: {exc}") from None
