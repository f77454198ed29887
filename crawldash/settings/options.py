"""How an option is declared, parsed from text and documented: the machinery behind the
settings table in ``settings/serve.py``."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

N = TypeVar("N", int, float)
LOG_LEVELS = ("debug", "info", "warning", "error")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Option:
    """How one setting is given: ``--flag`` and environment variable, parsed from text."""

    help: str
    parse: Callable[[str], Any]
    shown: str  # the default as the docs show it
    env: str | None  # the environment variable, or None for none
    kind: Literal["value", "toggle", "switch", "list"] = "value"
    flag: str = ""  # set from the field's name when the table is read
    required: bool = False


def option(
    default: Any,
    help: str,
    parse: Callable[[str], Any] = str,
    *,
    shown: str | None = None,
    env: str | None = "",
    kind: Literal["value", "toggle", "switch", "list"] = "value",
    flag: str = "",
    required: bool = False,
) -> Any:
    """A settings field with its option: ``env=""`` derives ``CRAWLDASH_<NAME>``."""
    shown = shown if shown is not None else ("none" if default is None else f"`{default}`")
    described = Option(help, parse, shown, env, kind, flag, required)
    return field(default=default, metadata={"option": described})


def options_of(settings_type: type[Any]) -> Iterator[tuple[str, Option]]:
    """Each field of a settings class that is an option, with its flag and variable filled in."""
    declared: tuple[Field[Any], ...] = fields(settings_type)
    for each in declared:
        described = each.metadata.get("option")
        if described is None:
            continue
        flag = described.flag or "--" + each.name.replace("_", "-")
        env = f"CRAWLDASH_{each.name.upper()}" if described.env == "" else described.env
        yield each.name, Option(**{**vars(described), "flag": flag, "env": env})


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


def named_paths(text: str) -> tuple[tuple[str, Path], ...]:
    """Comma-separated ``NAME=PATH`` pairs: a network's name (lower-case letters, digits,
    ``-`` and ``_``, at most 32) and a path."""
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, equals, path = item.partition("=")
        name = name.strip()
        if not equals or not path.strip():
            raise ValueError(f"{item!r} is not NAME=PATH")
        if not NETWORK_NAME.fullmatch(name):
            raise ValueError(
                f"{name!r} is not a network name (a-z, 0-9, - and _, at most 32, "
                "starting with a letter or digit)"
            )
        pairs.append((name, Path(path.strip())))
    names = [name for name, _ in pairs]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"the network {name!r} is named twice")
    return tuple(pairs)


# What --public-url may hold: every link the API gives starts with it, as it is.
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")
_URL_PATH = re.compile(r"(?:[A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*")


def public_url(text: str) -> str:
    """An absolute http(s) URL of a host, an optional port and a path, with no user,
    password, query or fragment, written as a URL is sent (ASCII, percent-encoded).

    Args:
        text: the value given, as ``https://example.org/crawldash``.

    Returns:
        The URL, without a trailing slash.
    """
    text = text.strip()
    if not (text.isascii() and text.isprintable()) or " " in text:
        raise ValueError(
            f"{text!r} holds a space, a control or a non-ASCII character: percent-encode "
            "the path, and give a host in its xn-- form"
        )
    try:
        parsed = urllib.parse.urlsplit(text)
        port = parsed.port
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{text!r} is not an http:// or https:// URL")
    _check_public_url(text, parsed, port)
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path, "", "")).rstrip("/")


def _check_public_url(text: str, parsed: urllib.parse.SplitResult, port: int | None) -> None:
    """A ValueError naming what, in a URL already split, no link should carry."""
    if "@" in parsed.netloc:
        raise ValueError(f"{text!r} has a user or password; links must not carry them")
    if port == 0:
        raise ValueError(f"{text!r}: port 0 is outside 1-65535")
    host = parsed.hostname or ""
    if not (_HOST_NAME.fullmatch(host) or is_ipv6(host)):
        raise ValueError(f"{text!r}: {host!r} is not a host name or an IP address")
    if not _URL_PATH.fullmatch(parsed.path):
        raise ValueError(
            f'{text!r} has characters a URL path cannot hold (such as " < > {{ }} or a % '
            "not followed by two hexadecimal digits); percent-encode them"
        )
    if parsed.query or parsed.fragment:
        raise ValueError(f"{text!r} has a query or fragment; give the base URL only")


def is_ipv6(text: str) -> bool:
    """Whether ``text`` is an IPv6 address (unbracketed)."""
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def named_values(text: str) -> tuple[tuple[str, str], ...]:
    """Comma-separated ``NAME=VALUE`` pairs: a network's name, as ``named_paths`` takes it,
    and a value; a name may come again (``a=x,a=y``)."""
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, equals, value = (part.strip() for part in item.partition("="))
        if not equals or not value:
            raise ValueError(f"{item!r} is not NAME=VALUE")
        if not NETWORK_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a network name")
        pairs.append((name, value))
    return tuple(pairs)


def origins(text: str) -> tuple[str, ...]:
    """Comma-separated origins; ``*`` for any."""
    return tuple(origin.strip() for origin in text.split(",") if origin.strip())


def markdown_table(settings_type: type[Any], skip: tuple[str, ...] = ()) -> str:
    """The Markdown table of a command's options (as docs/operating.md shows it), made from
    the declarations above."""
    lines = ["| option | environment | default | meaning |", "| --- | --- | --- | --- |"]
    for name, described in options_of(settings_type):
        if name in skip:
            continue
        flag = f"`{described.flag}`"
        if described.kind == "toggle":
            flag += f" / `--no-{described.flag[2:]}`"
        env = f"`{described.env}`" if described.env else "none"
        lines.append(f"| {flag} | {env} | {described.shown} | {described.help} |")
    return "\n".join(lines) + "\n"
