"""A crawl's rows decoded so that one bad row costs only itself, never the crawl.

Every row of a crawl comes from a node on the public network, and bitnodes writes what the
node sent (``models/crawler.py`` says which ranges that allows). A whole crawl is first
decoded in one call, as one type: that is the common case and the fast one. Only where
that fails is it decoded again row by row, and each row that is of neither form, or holds
a value out of its range, is skipped and counted: the crawl keeps its other rows. The same
holds for a node of the API form, and for a file that spells a number ``NaN`` or
``Infinity`` (Python's ``json`` writes them; JSON has no such token) or one beyond a float
(``1e400``): it is read by the standard library instead, such numbers become null, and a
row that may not hold a null there is skipped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

import msgspec

from ..models import Base, ExportRow, NodeRow
from ..models.crawler import Int32, Port, Services

UINT64_MAX = 2**64 - 1  # services' bound, which msgspec's constraints cannot state
_NON_FINITE = (b"NaN", b"Infinity", b"-Infinity")
_OUT_OF_RANGE = "Number out of range"
_AT_BYTE = re.compile(r"\(byte (\d+)\)$")  # where msgspec's DecodeError found the fault
R = TypeVar("R")


class CrawlRow(Base, frozen=True, array_like=True):
    """One row of bitnodes' crawl-only output (``crawl.py``'s ``dump``): address, port,
    services and height, the height 0 when the crawler had none."""

    address: str
    port: Port
    services: Services
    height: Int32

    def node(self) -> NodeRow:
        """The node, its 11 fields the crawler does not write null."""
        return NodeRow(
            protocol_version=None,
            user_agent=None,
            connected_since=None,
            services=self.services,
            height=self.height,
            hostname=None,
            city=None,
            country=None,
            latitude=None,
            longitude=None,
            timezone=None,
            asn=None,
            org=None,
        )


class Rows(NamedTuple):
    """A crawl's rows, all of one form, and how many rows were skipped as unusable."""

    rows: list[Any]  # each has ``address``, ``port``, ``services``, ``height`` and ``node()``
    bad: int


class Keyed(NamedTuple):
    """An API-form crawl's nodes by key, and how many were skipped as unusable."""

    nodes: dict[str, NodeRow]
    bad: int


class _LooseApi(Base, frozen=True):
    nodes: dict[str, msgspec.Raw]


_services = attrgetter("services")
_raw_rows = msgspec.json.Decoder(list[msgspec.Raw])
_crawl_rows = msgspec.json.Decoder(list[CrawlRow])
_loose_api = msgspec.json.Decoder(_LooseApi)


class RowsDecoder:
    """Either array form's rows: export rows (as ``export_type``), else crawl-only rows."""

    def __init__(self, export_type: type[ExportRow] = ExportRow) -> None:
        self._export_rows = msgspec.json.Decoder(list[export_type])  # type: ignore[valid-type]
        self._one_export = _One(export_type)

    def decode(self, data: bytes) -> Rows:
        """Decode the rows of a crawl in the array form.

        Args:
            data: the file's bytes, a JSON array of rows.

        Returns:
            The rows of the form most rows have, and how many rows were skipped: of the
            other form or of neither, or with a value out of its range.

        Raises:
            msgspec.DecodeError: not JSON, or no row of either form (the message gives
                both forms' reasons).
        """
        # Export rows are tried first and alone: they are the common form, and a large
        # crawl's decode is the hot path. Crawl-only rows fail it at the first row.
        rows, as_export = _whole(self._export_rows, data)
        if rows is None:
            rows, as_crawl = _whole(_crawl_rows, data)
            reasons = f"as export rows: {as_export}; as crawl-only rows: {as_crawl}"
        else:
            reasons = as_export
        if rows is None or overflows(rows):
            return self._row_by_row(_row_items(data), reasons)
        return Rows(rows, 0)

    def _row_by_row(self, items: Sequence[Any], reasons: str) -> Rows:
        exports = _usable(map(self._one_export, items))
        crawl_only = _usable(map(_one_crawl, items))
        rows = exports if len(exports) >= len(crawl_only) else crawl_only
        if not rows and items:
            raise msgspec.ValidationError(reasons)
        return Rows(rows, len(items) - len(rows))


class _One:
    """One row or node of a type, from its raw JSON or from what the standard library
    read; None where it is unusable."""

    def __init__(self, kind: type[Any]) -> None:
        self.kind = kind
        self.decoder = msgspec.json.Decoder(kind)

    def __call__(self, item: Any) -> Any:
        try:
            if isinstance(item, msgspec.Raw):
                row = self._decoded(item)
            else:
                row = msgspec.convert(item, self.kind)
        except msgspec.ValidationError:
            return None
        return None if row is None or _services(row) > UINT64_MAX else row

    def _decoded(self, raw: msgspec.Raw) -> Any:
        try:
            return self.decoder.decode(raw)
        except msgspec.DecodeError as exc:  # ValidationError too: a number no float holds
            loose = _standard(bytes(raw), exc)
            return None if loose is None else msgspec.convert(loose, self.kind)


_one_crawl = _One(CrawlRow)
_one_node = _One(NodeRow)


def decode_keyed(data: bytes, strict: Callable[[bytes], dict[str, NodeRow]]) -> Keyed:
    """An API-form crawl's nodes, each node that does not decode skipped.

    Args:
        data: the file's bytes, a JSON object with ``nodes``.
        strict: the whole object's decode, tried first.

    Raises:
        msgspec.DecodeError: not JSON, or not an object with ``nodes``.
    """
    try:
        nodes = strict(data)
    except msgspec.ValidationError:
        keyed = _api_items(data)
    except msgspec.DecodeError as exc:
        if not _at_non_finite(data, exc):
            raise
        keyed = _api_items(data)
    else:
        if not overflows(nodes.values()):
            return Keyed(nodes, 0)
        keyed = _api_items(data)
    nodes = dict(zip(keyed, map(_one_node, keyed.values()), strict=True))
    good = {key: node for key, node in nodes.items() if node is not None}
    return Keyed(good, len(keyed) - len(good))


def overflows(rows: Iterable[Any]) -> bool:
    """Whether some row's services is beyond a uint64: a pass in C over rows decoded whole."""
    return max(map(_services, rows), default=0) > UINT64_MAX


def _usable(rows: Iterable[R | None]) -> list[R]:
    return [row for row in rows if row is not None]


def _whole(decoder: msgspec.json.Decoder[list[Any]], data: bytes) -> tuple[list[Any] | None, str]:
    """Every row decoded in one call; None (and why) where a row is not of the type, or
    a number is spelled ``NaN`` or ``Infinity``. Raises what else does not decode."""
    try:
        return decoder.decode(data), "services beyond 2^64-1"
    except msgspec.ValidationError as exc:
        return None, str(exc)
    except msgspec.DecodeError as exc:
        if not _at_non_finite(data, exc):
            raise
        return None, str(exc)


def _row_items(data: bytes) -> list[Any]:
    """The rows undecoded (``msgspec.Raw``), or as the standard library reads them where
    msgspec cannot (``NaN``, ``Infinity``)."""
    try:
        return _raw_rows.decode(data)
    except msgspec.DecodeError as exc:
        loose = _standard(data, exc)
        if not isinstance(loose, list):
            raise
        return loose


def _api_items(data: bytes) -> dict[str, Any]:
    """An API-form crawl's nodes undecoded, as ``_row_items`` has rows."""
    try:
        return _loose_api.decode(data).nodes
    except msgspec.DecodeError as exc:
        loose = _standard(data, exc)
        nodes = loose.get("nodes") if isinstance(loose, dict) else None
        if not isinstance(nodes, dict):
            raise
        return nodes


def _at_non_finite(data: bytes, error: msgspec.DecodeError) -> bool:
    """Whether msgspec stopped at a ``NaN``, an ``Infinity`` or a number beyond a float
    (``1e400``), not at the end of a file still being written, the usual fault."""
    message = str(error)
    if message.startswith(_OUT_OF_RANGE):
        return True
    found = _AT_BYTE.search(message)
    return found is not None and data.startswith(_NON_FINITE, int(found.group(1)))


def _finite(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None


def _standard(data: bytes, error: msgspec.DecodeError) -> object:
    """The file as the standard library reads it (``NaN``, ``Infinity`` and numbers beyond
    a float as null) where msgspec stopped at such a number; None where it stopped at
    anything else, or the standard library cannot read it either."""
    if not _at_non_finite(data, error):
        return None
    try:
        return json.loads(data, parse_constant=lambda _: None, parse_float=_finite)
    except (ValueError, RecursionError):
        return None
