"""Answers about one address (``/api/check``, its presence object, ``/api/presence``'s
runs), encoded once per address until the snapshot or the presence changes: monitors ask
about the same peers again and again."""

from __future__ import annotations

from typing import Any

import msgspec

from ...models import Base, Node, NodeRow, PresenceBody, Reason
from ..snapshot.prepared import PreparedSnapshot
from ..stores.presence import Presence
from .reasons import Evidence, reason_for

MAX_BODIES = 4096  # answers kept; past that the cache starts again
_encoder = msgspec.json.Encoder()
_node_decoder = msgspec.json.Decoder(Node)


class _CheckAnswer(Base, frozen=True):
    """Encodes ``models.CheckBody`` (the published shape) with the node already encoded."""

    address: str
    reachable: bool
    snapshot_timestamp: int
    node: msgspec.Raw | None
    presence: PresenceBody
    reason: Reason
    last_up: int | None


class _V1Status(Base, frozen=True):
    """Encodes ``models.V1NodeStatus`` with the row already encoded."""

    address: str
    port: int
    status: str
    data: msgspec.Raw | None
    presence: PresenceBody


def node_row(named: bytes) -> bytes:
    """A node's JSON object as ``/api/check`` shows it, as the 13-field row of API v1."""
    return _encoder.encode(NodeRow(*msgspec.structs.astuple(_node_decoder.decode(named))))


class CheckAnswers:
    """The check answer and the presence object of each address asked about."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self.evidence = Evidence()  # of the crawl paired with the served export
        self._checks: dict[str, bytes] = {}
        self._presences: dict[str, bytes] = {}
        self._runs: dict[tuple[str, int], bytes] = {}
        self._v1: dict[str, bytes] = {}
        self._made_for: tuple[str, int] | None = None  # snapshot ETag, presence version

    def check(self, served: PreparedSnapshot, address: str) -> bytes:
        """The ``/api/check`` answer for a canonical address."""
        self._still_for(served.representations["identity"].etag)
        body = self._checks.get(address)
        if body is None:
            node = served.nodes.get(address)
            raw = None if node is None else msgspec.Raw(node)
            presence = self.presence_of(address)
            answer = _CheckAnswer(
                address,
                node is not None,
                served.timestamp,
                raw,
                presence,
                self.reason(served, address),
                presence.last_seen,
            )
            body = self._checks[address] = _encoder.encode(answer)
        return body

    def reason(self, served: PreparedSnapshot | None, address: str) -> Reason:
        """Why a canonical address is or is not in the served export."""
        exported = served.timestamp if served is not None and address in served.nodes else None
        return reason_for(address, exported, self.evidence)

    def set_evidence(self, evidence: Evidence) -> None:
        """What is known of the crawl paired with the served export, now."""
        if evidence != self.evidence:
            self.evidence = evidence
            self._checks.clear()  # every check answer made before may give another reason

    def v1_status(self, served: PreparedSnapshot, address: str) -> bytes:
        """The API v1 node status of a canonical address, with its presence."""
        self._still_for(served.representations["identity"].etag)
        body = self._v1.get(address)
        if body is None:
            node = served.nodes.get(address)
            host, _, port = address.rpartition(":")
            answer = _V1Status(
                host.strip("[]"),
                int(port),
                "DOWN" if node is None else "UP",
                None if node is None else msgspec.Raw(node_row(node)),
                self.presence_of(address),
            )
            body = self._v1[address] = _encoder.encode(answer)
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
        answers: tuple[dict[Any, bytes], ...] = (
            self._checks,
            self._presences,
            self._runs,
            self._v1,
        )
        full = sum(map(len, answers)) >= MAX_BODIES
        if key != self._made_for or full:
            for kept in answers:
                kept.clear()
            self._made_for = key
