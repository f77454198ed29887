"""How an option is declared, parsed from text and documented: the machinery behind the
settings table in ``settings/serve.py``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

N = TypeVar("N", int, float)
V = TypeVar("V")
LOG_LEVELS = ("debug", "info", "warning", "error")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
Kind = Literal["value", "toggle", "switch", "list"]
# A per-network option's values: (a network's name, or None for the first network's, value).
PerNetwork: TypeAlias = tuple[tuple[str | None, V], ...]


@dataclass(frozen=True)
class Option:
    """How one setting is given: ``--flag`` and environment variable, parsed from text."""

    help: str
    parse: Callable[[str], Any]
    shown: str  # the default as the docs show it
    env: str | None  # the environment variable, or None for none
    kind: Kind = "value"
    flag: str = ""  # set from the field's name when the table is read
    required: bool = False
    per_network: str = ""  # what a network's value is (FILE, DIR) if each network has its own
    bare: str | None = None  # what the flag given alone stands for, if it may be
    name: str = ""  # the field's, set when the table is read

    def forms(self) -> tuple[Option, ...]:
        """The ways it is given. A per-network option has two, each parsed to ``PerNetwork``
        pairs: ``--X VALUE``, the first network's, and ``--network-X NAME=VALUE``, any
        network's (``CRAWLDASH_X`` and ``CRAWLDASH_NETWORK_XS``)."""
        if not self.per_network:
            return (self,)
        what, own = self.per_network, self.parse
        many = self.kind == "list"
        plural = self.name if self.name.endswith("s") else self.name + "s"
        named_flag = "--network-" + self.flag.removeprefix("--")
        first = replace(self, per_network="", parse=_unnamed(own, many))
        named = replace(
            self,
            per_network="",
            parse=named_pairs(own, what, repeats=many),
            shown="none",
            env=f"CRAWLDASH_NETWORK_{plural.upper()}" if self.env else None,
            kind="list",
            flag=named_flag,
            help=f"{self.flag} of any network, as NAME={what}; repeatable or comma-separated",
        )
        return first, named


def option(
    default: Any,
    help: str,
    parse: Callable[[str], Any] = str,
    *,
    shown: str | None = None,
    env: str | None = "",
    kind: Kind = "value",
    flag: str = "",
    required: bool = False,
    per_network: str = "",
    bare: str | None = None,
) -> Any:
    """A settings field with its option: ``env=""`` derives ``CRAWLDASH_<NAME>``. With
    ``per_network`` (what a value is: ``FILE``), each network has its own (``PerNetwork``,
    default none) and ``parse`` reads one value; with ``bare``, the flag alone stands for it."""
    if per_network:
        default, shown = (), shown or "none"
    shown = shown if shown is not None else ("none" if default is None else f"`{default}`")
    described = Option(help, parse, shown, env, kind, flag, required, per_network, bare)
    return field(default=default, metadata={"option": described})


def options_of(settings_type: type[Any]) -> Iterator[tuple[str, Option]]:
    """Each field of a settings class that is an option, with its flag and variable filled in:
    the class's own first, then those of the tables it is built from (its bases)."""
    declared: tuple[Field[Any], ...] = fields(settings_type)
    tables = [vars(table).get("__annotations__", {}) for table in settings_type.__mro__]
    for each in sorted(declared, key=lambda f: [f.name in own for own in tables].index(True)):
        described = each.metadata.get("option")
        if described is None:
            continue
        flag = described.flag or "--" + each.name.replace("_", "-")
        env = f"CRAWLDASH_{each.name.upper()}" if described.env == "" else described.env
        yield each.name, replace(described, flag=flag, env=env, name=each.name)


def _unnamed(parse: Callable[[str], V], many: bool) -> Callable[[str], PerNetwork[V]]:
    """A parser of the first network's value (or comma-separated values, if ``many``)."""

    def first(text: str) -> PerNetwork[V]:
        given = [part.strip() for part in text.split(",")] if many else [text]
        return tuple((None, parse(value)) for value in given if value)

    first.__name__ = getattr(parse, "__name__", "value")
    return first


def whole_number(low: int, high: int) -> Callable[[str], int]:
    return _bounded(int, low, high, "a whole number")


def seconds(low: float, high: float) -> Callable[[str], float]:
    return _bounded(float, low, high, "a number of seconds", " seconds")


def _bounded(
    kind: Callable[[str], N], low: N, high: N, what: str, unit: str = ""
) -> Callable[[str], N]:
    """A parser of ``kind`` numbers from ``low`` to ``high``."""

    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"{text!r} is not {what}") from None
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low}-{high}{unit}")
        return value

    return parse


def byte_size(text: str) -> int:
    """Bytes, with an optional K, M or G suffix (powers of 1024)."""
    number, unit = text.strip().lower().rstrip("b"), ""
    if number[-1:] in _SIZE_UNITS:
        number, unit = number[:-1], number[-1]
    try:
        value = int(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a size such as 268435456 or 256M") from None
    if value < 1:
        raise ValueError("the size must be at least 1 byte")
    return value


def log_level(text: str) -> str:
    if text.lower() not in LOG_LEVELS:
        raise ValueError(f"invalid choice: {text!r} (choose from {', '.join(LOG_LEVELS)})")
    return text.lower()


def on_off(text: str) -> bool:
    if text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    raise ValueError(f"{text!r} is not on or off (1/0, true/false, yes/no)")


def file_in_a_folder(text: str) -> Path:
    """A file to write, in a folder that exists (a mistyped folder is not made)."""
    path = Path(text)
    if not path.parent.is_dir():
        raise ValueError(f"{path.parent} is not an existing folder")
    if path.is_dir():
        raise ValueError(f"{path} is a folder; name the file to write in it")
    return path


NETWORK_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def named_pairs(
    parse: Callable[[str], V], what: str = "VALUE", *, repeats: bool = False
) -> Callable[[str], tuple[tuple[str, V], ...]]:
    """A parser of comma-separated ``NAME=VALUE`` pairs: a network's name (lower-case
    letters, digits, ``-`` and ``_``, at most 32) and a value ``parse`` reads; a name may
    come again only if ``repeats`` (``a=x,a=y``)."""

    def pairs(text: str) -> tuple[tuple[str, V], ...]:
        found = []
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            name, equals, value = (part.strip() for part in item.partition("="))
            if not equals or not value:
                raise ValueError(f"{item!r} is not NAME={what}")
            if not NETWORK_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not a network name (a-z, 0-9, - and _, at most 32, "
                    "starting with a letter or digit)"
                )
            found.append((name, parse(value)))
        names = [name for name, _ in found]
        twice = [name for name in names if names.count(name) > 1]
        if twice and not repeats:
            raise ValueError(f"the network {twice[0]!r} is named twice")
        return tuple(found)

    pairs.__name__ = f"NAME={what}"
    return pairs


named_paths = named_pairs(Path, "PATH")  # --network's: each network once
named_values = named_pairs(str, repeats=True)


def origins(text: str) -> tuple[str, ...]:
    """Comma-separated origins; ``*`` for any."""
    return tuple(origin.strip() for origin in text.split(",") if origin.strip())


def markdown_table(settings_type: type[Any], skip: tuple[str, ...] = ()) -> str:
    """The Markdown table of a command's options (as docs/operating.md shows it), made from
    the declarations above: one row an option, a per-network one's two forms in it."""
    lines = ["| option | environment | default | meaning |", "| --- | --- | --- | --- |"]
    for name, described in options_of(settings_type):
        if name in skip:
            continue
        forms = described.forms()
        flags = ", ".join(_flags(form) for form in forms)
        env = ", ".join(f"`{form.env}`" for form in forms if form.env) or "none"
        lines.append(f"| {flags} | {env} | {described.shown} | {help_of(described)} |")
    return "\n".join(lines) + "\n"


def help_of(described: Option) -> str:
    """An option's help; a per-network one's says how each network is given its own."""
    if not described.per_network:
        return described.help
    named = described.forms()[1].flag
    return (
        f"{described.help}; `{described.flag}` is the first network's, `{named} "
        f"NAME={described.per_network}` any network's (repeatable or comma-separated)"
    )


def _flags(described: Option) -> str:
    if described.kind == "toggle":
        return f"`{described.flag}` / `--no-{described.flag[2:]}`"
    return f"`{described.flag}`"
