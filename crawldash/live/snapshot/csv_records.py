"""Every node's CSV record (``/api/nodes?format=csv``), as the csv module writes it, made
by column; and the columns of a crawl's rows, which the catalog is built from too. A new
crawl's records are made after it is served (``making.py``): they follow it."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, TypeVar

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
        return cls(b"".join(lines), offsets(map(len, lines)), True)

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


def _csv_lines(addresses: list[str], fields: dict[str, Sequence[Any]]) -> list[bytes]:
    """Each node's CSV record, ended by CRLF, as the csv module writes it (RFC 4180: a
    field quoted where it holds a comma, a quote or a line break, a quote doubled; numbers
    by ``str``; None empty), text made ``csv_safe``. Written by column, each distinct
    value once, then joined by row in C: the module takes a Python step per cell."""
    cells = [_cells(addresses), *(_cells(fields[name]) for name in FIELDS)]
    return list(map(str.encode, map("{}\r\n".format, map(",".join, zip(*cells, strict=True)))))


def _cells(column: Sequence[object]) -> list[str]:
    """A column's values as CSV cells: numbers as they are (a negative latitude is a
    number, not a formula), text made ``csv_safe``, then quoted where it must be. Each
    distinct value is written once, but in a column of floats, where ``-0.0 == 0.0``."""
    if any(type(value) is float for value in column):
        return [_cell(value) for value in column]
    return each_once(column, _cell)


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
