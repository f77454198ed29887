"""Breakdowns of the latest crawl, prepared in the loader process: each row's JSON once,
the default answer in every coding, other lengths joined from the rows on request."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from operator import attrgetter

import msgspec

from ...crawl.breakdown import Row, breakdowns
from ...models import BreakdownRow, NodeRow
from ..bodies import Codings, Representation, represent

DEFAULT_ROWS = 20
MAX_ROWS = 1000
_MAX_CACHED = 64  # uncompressed answers of other lengths kept, per crawl
_encoder = msgspec.json.Encoder()
_asn_and_org = attrgetter("asn", "org")


@dataclass(frozen=True)
class PreparedBreakdown:
    """One breakdown: ``{"timestamp", "total_nodes", "by", "rows": [...]}``."""

    head: bytes  # the object up to the rows' opening bracket
    counted: list[Row]  # (value, nodes), most nodes first
    rows: list[bytes]  # each row's JSON, in the same order
    rest: list[int]  # rest[k]: nodes counted in rows[k:], for the "other" row
    total: int
    modified: float
    default: Codings  # DEFAULT_ROWS rows, by coding (compressed ones may follow)
    _bodies: dict[int, Representation] = field(default_factory=dict, compare=False, repr=False)

    def body(self, limit: int, coding: str) -> Representation:
        """The first ``limit`` rows and an ``other`` row for the rest; compressed for the
        default length only (other lengths go uncompressed: no request compresses)."""
        if limit == DEFAULT_ROWS:
            return self.default[coding]
        body = self._bodies.get(limit)
        if body is None:
            if len(self._bodies) >= _MAX_CACHED:
                self._bodies.clear()
            body = self._bodies[limit] = represent(self._join(limit), self.modified)
        return body

    def _join(self, limit: int) -> bytes:
        shown = self.rows[:limit]
        if limit < len(self.rows):
            other = self.rest[limit]
            shown = [
                *shown,
                _encoder.encode(BreakdownRow("other", other, _share(other, self.total))),
            ]
        return self.head + b",".join(shown) + b"]}"


def prepare_breakdowns(
    timestamp: int,
    nodes: dict[str, NodeRow],
    consensus: int,
    networks: dict[str, str],
    modified: float,
) -> dict[str, PreparedBreakdown]:
    """Every breakdown of a crawl, each default answer in identity (its codings are made
    after: ``bodies.every_coding``); slow for a large one: the loader process runs it."""
    total, orgs = len(nodes), _organisations(nodes.values())
    prepared = {}
    for by, rows in breakdowns(nodes, consensus, networks).items():
        encoded = [_encoder.encode(_row(by, row, total, orgs)) for row in rows]
        head = _encoder.encode({"timestamp": timestamp, "total_nodes": total, "by": by})
        head = head[:-1] + b',"rows":['
        rest = [*list(accumulate(count for _, count in reversed(rows)))[::-1], 0]
        draft = PreparedBreakdown(head, rows, encoded, rest, total, modified, Codings())
        default = Codings(identity=represent(draft._join(DEFAULT_ROWS), modified))
        prepared[by] = PreparedBreakdown(head, rows, encoded, rest, total, modified, default)
    return prepared


def _organisations(nodes: Iterable[NodeRow]) -> dict[str, str]:
    """Each ASN's organisation name, as the crawl gives it: the most common spelling, the
    first met on a tie (``crawl.breakdown.organisations``'s rule), counted in C."""
    best: dict[str, tuple[str, int]] = {}
    for (asn, org), count in Counter(map(_asn_and_org, nodes)).items():
        if asn is not None and org is not None:
            held = best.get(asn)
            if held is None or count > held[1]:
                best[asn] = (org, count)
    return {asn: org for asn, (org, _) in best.items()}


def _row(by: str, row: Row, total: int, orgs: dict[str, str]) -> BreakdownRow:
    value, count = row
    org = orgs.get(value) if by == "asn" and isinstance(value, str) else None
    return BreakdownRow(value, count, _share(count, total), org)


def _share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0
