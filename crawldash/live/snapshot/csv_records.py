"""Every node's CSV record (``/api/nodes?format=csv``), as the csv module writes it, made
by column; and the columns of a crawl's rows, which the catalog is built from too. A new
crawl's records are made after it is served (``making.py``): they follow it."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, TypeVar, cast

import msgspec

from ...models import NodeRow

FIELDS = (
    "protocol_version",
    "user_agent",
    "connected_since",
    "services",
    "height",
    "hostname",
    "city",
    "country",
    "latitude",
    "longitude",
    "timezone",
    "asn",
    "org",
)
CSV_HEADER = ",".join(("address", *FIELDS)).encode() + b"\r\n"
_QUOTED = (",", '"', "\r", "\n")  # what the csv module quotes a field for (QUOTE_MINIMAL)
# What makes a spreadsheet read a cell as a formula (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NONE = type(None)
_NUMBERS = {int, float, _NONE}
_TEXT = {str, _NONE}
T = TypeVar("T")
V = TypeVar("V")
astuple = msgspec.structs.astuple


@dataclass
class CsvRecords:
    """Every node's CSV record, in address order; a new crawl's are made after the rest of
    it is served (``made``: they are in)."""

    blob: bytes = b""
    starts: array[int] = field(default_factory=lambda: array("I", [0]))
    made: bool = False

    @classmethod
    def of(cls, nodes: dict[str, NodeRow]) -> CsvRecords:
        addresses = sorted(nodes)
        lines = _csv_lines(addresses, columns_of(list(map(nodes.__getitem__, addresses))))
        text = "".join(lines)
        blob = text.encode()
        if len(blob) == len(text):  # ASCII alone, as most crawls: a byte per character
            return cls(blob, offsets(map(len, lines)), True)
        encoded = list(map(str.encode, lines))
        return cls(b"".join(encoded), offsets(map(len, encoded)), True)

    def take(self, made: CsvRecords) -> None:
        """The records made after the crawl was served."""
        self.blob, self.starts, self.made = made.blob, made.starts, True


def offsets(lengths: Iterable[int]) -> array[int]:
    """Offsets where each item starts, and the end, from their lengths."""
    return array("I", accumulate(lengths, initial=0))


def columns_of(rows: list[NodeRow]) -> dict[str, Sequence[Any]]:
    """The rows as columns, by field name."""
    if not rows:
        return {name: () for name in FIELDS}
    return dict(zip(FIELDS, zip(*map(astuple, rows), strict=True), strict=True))


def each_once(column: Sequence[T], change: Callable[[T], V]) -> list[V]:
    """``change`` of each value of a column, worked out once per distinct value."""
    changed = {value: change(value) for value in dict.fromkeys(column)}
    return list(map(changed.__getitem__, column))


def _csv_lines(addresses: list[str], fields: dict[str, Sequence[Any]]) -> list[str]:
    """Each node's CSV record, ended by CRLF, as the csv module writes it (RFC 4180: a
    field quoted where it holds a comma, a quote or a line break, a quote doubled; numbers
    by ``str``; None empty), text made ``csv_safe``. Written by column (``_cells``), then
    joined by row in C: the module takes a Python step per cell."""
    cells = [_cells(addresses), *(_cells(fields[name]) for name in FIELDS)]
    return list(map("{}\r\n".format, map(",".join, zip(*cells, strict=True))))


def _cells(column: Sequence[object]) -> list[str]:
    """A column's values as CSV cells: numbers as they are (a negative latitude is a
    number, not a formula), text made ``csv_safe``, then quoted where it must be. In
    passes in C where the column allows: text that needs neither (``_plain``) is its own
    cell, as a number is its ``str``; only text that does, or a column of mixed kinds, is
    written a value at a time (each distinct value once)."""
    kinds = set(map(type, column))
    if kinds == {_NONE}:  # a crawl-only row's fields but services and height
        return [""] * len(column)
    if kinds <= _NUMBERS:
        # Each number spelled, floats included: ``-0.0 == 0.0``, so no value stands for
        # another; None, where a column has it, is an empty cell.
        if _NONE in kinds:
            return [_cell(value) for value in column]
        return list(map(str, column))
    if kinds <= _TEXT:
        distinct = dict.fromkeys(column)
        distinct.pop(None, None)
        texts = cast("list[str]", list(distinct))  # the column's kinds are str and None
        if _plain("\0".join(texts)):
            if _NONE not in kinds:
                return cast("list[str]", list(column))
            cells: dict[object, str] = dict(zip(texts, texts, strict=True))
            cells[None] = ""
            return list(map(cells.__getitem__, column))
    return each_once(column, _cell)


def _plain(joined: str) -> bool:
    """Whether no text of ``joined`` (texts joined by NUL) needs quoting or a formula's
    guard. A text holding a NUL may be taken to need them: it is then written alone."""
    if any(special in joined for special in _QUOTED):
        return False
    return not joined.startswith(FORMULA_STARTS) and not any(
        "\0" + start in joined for start in FORMULA_STARTS
    )


def _cell(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        return str(value)
    text = csv_safe(value)
    if any(special in text for special in _QUOTED):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_safe(text: str) -> str:
    """``text`` as a CSV cell that no spreadsheet runs as a formula.

    Args:
        text: a value from a crawl (a user agent, a hostname) or a column's name.

    Returns:
        The text with a ``'`` before it where it starts with one of FORMULA_STARTS, as
        OWASP recommends; otherwise the text itself.
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text
