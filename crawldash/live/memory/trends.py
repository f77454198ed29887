"""The history by a key of the breakdowns: each crawl's nodes with each of the values most
common in the newest crawl asked for, or whose user agent holds a text; and the history
in every shape as CSV, one row per crawl.

Each answer is built on its first request after the history changes and kept until the
next change (a bounded number of them): a chart polled by many is one lookup a request.
Points counted before crawldash kept counts by value carry none: nothing is invented.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Hashable, Sequence

import msgspec

from ...crawl.address import NETWORKS
from ...models import CountsPoint, HistoryPoint, MatchPoint
from ..bodies import Representation, encoded, represent
from .history import COMPRESSED_COUNTS, History, HistoryEntry
from .tallies import KEYS, UNKNOWN, WHOLE, Values, counts_of

DEFAULT_TOP = 10
MAX_TOP = 50
NO_OTHER = "services"  # a node counts once per bit it sets: the rest is no number of nodes
RESERVED = ("unknown", "other")  # the names of the columns after the values shown
_MAX_ANSWERS = 64  # answers kept per change of the history
_encoder = msgspec.json.Encoder()
Row = list[int] | None  # a crawl's numbers, or None where it has no counts by value


class Trends:
    """The history's answers by value, kept until the history changes."""

    def __init__(self, history: History) -> None:
        self.history = history
        self._answers: dict[Hashable, Representation] = {}
        self._made_at = -1  # the history's change count the answers were made at

    def counts(self, key: str, top: int, limit: int, coding: str = "identity") -> Representation:
        """The most recent ``limit`` points with their ``counts`` by ``key`` (oldest first).

        Args:
            key: one of tallies.KEYS.
            top: how many of the newest counted crawl's values are shown (1 to MAX_TOP).
            limit: how many of the most recent crawls.
            coding: identity, gzip or br: the default ``top`` of the lengths of
                COMPRESSED_COUNTS (and all that is held) is compressed, once per change;
                other answers go uncompressed, so that no query compresses per request.

        Returns:
            The JSON array of points.
        """
        count = min(limit, len(self.history))
        if top != DEFAULT_TOP or (count not in COMPRESSED_COUNTS and count != len(self.history)):
            coding = "identity"
        if coding != "identity":
            identity = self.counts(key, top, limit)
            return self._kept(
                ("counts", key, top, count, coding), lambda: encoded(identity, coding)
            )
        return self._kept(("counts", key, top, count), lambda: self._json_counts(key, top, count))

    def matched(self, text: str, limit: int) -> Representation:
        """The most recent ``limit`` points with the number of nodes ``matched``: whose
        user agent holds ``text``, in any case (oldest first)."""
        count = min(limit, len(self.history))
        return self._kept(("matched", text.lower(), count), lambda: self._json_matched(text, count))

    def csv(self, by: str | None, top: int, match: str | None, limit: int) -> Representation:
        """The history as CSV: one row per crawl, ``timestamp``, ``reachable``, then one
        column per network (``by=network``), per value (another ``by``) or ``matched``;
        empty cells where a crawl was counted before crawldash kept those."""
        count = min(limit, len(self.history))
        ask = ("csv", by, top, match and match.lower(), count)
        return self._kept(ask, lambda: self._csv(by, top, match, count))

    def _kept(self, ask: Hashable, make: Callable[[], Representation]) -> Representation:
        if self._made_at != self.history.changes or len(self._answers) >= _MAX_ANSWERS:
            self._answers.clear()
            self._made_at = self.history.changes
        answer = self._answers.get(ask)
        if answer is None:
            answer = self._answers[ask] = make()
        return answer

    def _json_counts(self, key: str, top: int, count: int) -> Representation:
        recent = self.history.recent(count)
        names, rows = columns(self.history.values, key, top, recent)
        points = [
            HistoryPoint(e.timestamp, e.reachable)
            if row is None
            else CountsPoint(e.timestamp, e.reachable, dict(zip(names, row, strict=True)))
            for e, row in zip(recent, rows, strict=True)
        ]
        return represent(_encoder.encode(points), self.history.changed_at)

    def _json_matched(self, text: str, count: int) -> Representation:
        recent = self.history.recent(count)
        numbers = matched(self.history.values, text, recent)
        points = [
            HistoryPoint(e.timestamp, e.reachable)
            if n is None
            else MatchPoint(e.timestamp, e.reachable, n)
            for e, n in zip(recent, numbers, strict=True)
        ]
        return represent(_encoder.encode(points), self.history.changed_at)

    def _csv(self, by: str | None, top: int, match: str | None, count: int) -> Representation:
        recent = self.history.recent(count)
        names: Sequence[str] = ()
        rows: list[Row] = [None] * len(recent)
        if match is not None:
            names = ["matched"]
            rows = [None if n is None else [n] for n in matched(self.history.values, match, recent)]
        elif by == "network":
            names = NETWORKS
            rows = [None if e.networks is None else list(e.networks) for e in recent]
        elif by is not None:
            names, rows = columns(self.history.values, by, top, recent)
        text = io.StringIO()
        out = csv.writer(text, lineterminator="\n")
        out.writerow(["timestamp", "reachable", *names])
        empty = [""] * len(names)
        for entry, row in zip(recent, rows, strict=True):
            out.writerow([entry.timestamp, entry.reachable, *(empty if row is None else row)])
        return represent(text.getvalue().encode(), self.history.changed_at)


def columns(
    values: Values, key: str, top: int, recent: list[HistoryEntry]
) -> tuple[list[str], list[Row]]:
    """The columns of the history by ``key`` and each crawl's numbers in them.

    Args:
        values: the table the crawls' counts name.
        key: one of KEYS.
        top: how many values to show.
        recent: the crawls, oldest first.

    Returns:
        The names: the ``top`` values with most nodes in the newest crawl that has counts
        (ties by value; a value spelled like a column after them counts as other), then
        ``unknown`` and, but for services, ``other``; and each crawl's numbers in that
        order (other: its nodes less those shown), None for a crawl without counts.
    """
    index = KEYS.index(key)
    newest = next((e.counts for e in reversed(recent) if e.counts is not None), None)
    if newest is None:
        return [], [None] * len(recent)
    latest = counts_of(newest, index)
    ranked = [
        (-nodes, values.name(index, code), code)
        for code, nodes in latest.items()
        if code != UNKNOWN and values.name(index, code) not in RESERVED
    ]
    shown = sorted(ranked)[:top]
    codes = [code for _, _, code in shown]
    names = [name for _, name, _ in shown] + ["unknown"] + ([] if key == NO_OTHER else ["other"])
    rows: list[Row] = []
    for entry in recent:
        if entry.counts is None:
            rows.append(None)
            continue
        counted = counts_of(entry.counts, index)
        row = [counted.get(code, 0) for code in codes]
        unknown = counted.get(UNKNOWN, 0)
        other = [] if key == NO_OTHER else [entry.reachable - sum(row) - unknown]
        rows.append([*row, unknown, *other])
    return names, rows


def matched(values: Values, text: str, recent: list[HistoryEntry]) -> list[int | None]:
    """Each crawl's nodes whose user agent holds ``text`` in any case (None without counts)."""
    codes = values.matching(text)
    index = KEYS.index(WHOLE)
    numbers: list[int | None] = []
    for entry in recent:
        if entry.counts is None:
            numbers.append(None)
        else:
            counted = counts_of(entry.counts, index)
            numbers.append(sum(nodes for code, nodes in counted.items() if code in codes))
    return numbers
