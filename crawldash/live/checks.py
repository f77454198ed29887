"""Answers about one address (``/api/check``, its presence object, ``/api/presence``'s
runs), encoded once per address until the snapshot or the presence changes: monitors ask
about the same peers again and again."""

from __future__ import annotations

import msgspec

from ..models import Base, PresenceBody
from .prepared import PreparedSnapshot
from .presence import Presence

MAX_BODIES = 4096  # answers kept; past that the cache starts again
_encoder = msgspec.json.Encoder()


class _CheckAnswer(Base, frozen=True):
    """Encodes ``models.CheckBody`` (the published shape) with the node already encoded."""

    address: str
    reachable: bool
    snapshot_timestamp: int
    node: msgspec.Raw | None
    presence: PresenceBody


class CheckAnswers:
    """The check answer and the presence object of each address asked about."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self._checks: dict[str, bytes] = {}
        self._presences: dict[str, bytes] = {}
        self._runs: dict[tuple[str, int], bytes] = {}
        self._made_for: tuple[str, int] | None = None  # snapshot ETag, presence version

    def check(self, served: PreparedSnapshot, address: str) -> bytes:
        """The ``/api/check`` answer for a canonical address."""
        self._still_for(served.representations["identity"].etag)
        body = self._checks.get(address)
        if body is None:
            node = served.nodes.get(address)
            raw = None if node is None else msgspec.Raw(node)
            answer = _CheckAnswer(
                address, node is not None, served.timestamp, raw, self.presence_of(address)
            )
            body = self._checks[address] = _encoder.encode(answer)
        return body

    def presence_body(self, address: str) -> bytes:
        """The presence object of a canonical address, as JSON."""
        self._still_for(self._made_for[0] if self._made_for else "")
        body = self._presences.get(address)
        if body is None:
            body = self._presences[address] = _encoder.encode(self.presence_of(address))
        return body

    def runs(self, address: str, limit: int) -> bytes:
        """The runs of presence of a canonical address over the last ``limit`` crawls."""
        self._still_for(self._made_for[0] if self._made_for else "")
        body = self._runs.get((address, limit))
        if body is None:
            runs = self.presence.runs(address, limit)
            body = self._runs[address, limit] = _encoder.encode(runs)
        return body

    def presence_of(self, address: str) -> PresenceBody:
        summary = self.presence.summary(address)
        return PresenceBody(summary.crawls, summary.seen, summary.first_seen, summary.last_seen)

    def _still_for(self, etag: str) -> None:
        """Forget every answer when the snapshot or the presence changed, or too many."""
        key = (etag, self.presence.version)
        full = len(self._checks) + len(self._presences) + len(self._runs) >= MAX_BODIES
        if key != self._made_for or full:
            self._checks.clear()
            self._presences.clear()
            self._runs.clear()
            self._made_for = key
