"""Why a node is or is not in the newest export: one code and a sentence an operator can
act on, from what the crawler left behind (docs/api.md, "Why a node is DOWN").

The evidence, strongest first: the newest export itself; the crawl file paired with it
(the newest not named after it), which says who completed a handshake; and the bridge's
kept attempts of that crawl, which say who was tried and which rules were in force. Where
a piece is missing the answer is ``unknown``, never a guess."""

from __future__ import annotations

from dataclasses import dataclass

from ...crawl.attempts import CrawlAttempts
from ...crawl.reached import Reached
from ...models import Reason

CODES = ("up", "reached_not_held", "failed", "excluded", "not_tried", "unknown")


@dataclass(frozen=True)
class Evidence:
    """What is known of the crawl paired with the newest export."""

    reached: Reached | None = None  # the paired crawl file's addresses
    attempts: CrawlAttempts | None = None  # the bridge's record of the same crawl

    @property
    def crawl(self) -> int | None:
        """The paired crawl's timestamp, when a crawl file or the bridge names it."""
        if self.reached is not None:
            return self.reached.timestamp
        return self.attempts.timestamp if self.attempts is not None else None

    def attempts_of_the_crawl(self) -> CrawlAttempts | None:
        """The bridge's record, if it is of the paired crawl."""
        attempts, crawl = self.attempts, self.crawl
        return attempts if attempts is not None and attempts.timestamp == crawl else None


def reason_for(address: str, exported: int | None, evidence: Evidence) -> Reason:
    """Why a canonical ``address`` is or is not in the newest export.

    Args:
        address: the node, canonical ``host:port``.
        exported: the newest export's timestamp if the address is in it, else None.
        evidence: what is known of the crawl paired with that export.

    Returns:
        The reason, with the crawl it comes from.
    """
    if exported is not None:
        return Reason(
            "up",
            "In the crawler's newest export: it accepted the crawler's "
            "connection, and the crawler holds one to it.",
            exported,
        )
    crawl, attempts = evidence.crawl, evidence.attempts_of_the_crawl()
    reached = evidence.reached.addresses if evidence.reached is not None else None
    if reached is None and attempts is not None:
        reached = attempts.reached
    port = address.rpartition(":")[2]
    if reached is not None and address in reached:
        return Reason("reached_not_held", _REACHED_NOT_HELD, crawl)
    if attempts is None:
        return Reason("unknown", _UNKNOWN, crawl)
    rule = attempts.excluded_by(address)
    if rule is not None:
        return Reason("excluded", _EXCLUDED.format(rule=rule), crawl)
    if address in attempts.tried:
        return Reason("failed", _FAILED.format(port=port), crawl)
    if attempts.complete and not attempts.rules.include_asns:
        return Reason("not_tried", _NOT_TRIED, crawl)
    return Reason("unknown", _UNKNOWN, crawl)


_REACHED_NOT_HELD = (
    "The crawler completed a handshake with it in this crawl, but could not keep a "
    "connection to it for the export: its connection slots are probably full (raise "
    "maxconnections), or its address has no known ASN."
)
_FAILED = (
    "The crawler tried to connect in this crawl and got no handshake: check that port {port} "
    "is open and forwarded to the node, that no firewall drops it, and that the node listens "
    "(listen=1, and bind to a reachable address)."
)
_EXCLUDED = (
    "The crawler's rules exclude this address ({rule}), so it is never tried; only the "
    "crawler's operator can change that."
)
_NOT_TRIED = (
    "The crawler made no attempt to connect during the crawl: usually no peer advertised "
    "this address (a new or changed address is found once peers relay it; make sure the node "
    "announces it: discover=1, or externalip=), or the crawler skips its kind (IPv6 or onion "
    "turned off, or an IPv6 prefix already at its nodes_per_ipv6_prefix)."
)
_UNKNOWN = (
    "Not in the newest export, and crawldash lacks the crawl's data to say why: no crawl "
    "folder beside the export, or no record from the bitnodes bridge for that crawl."
)
