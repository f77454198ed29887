"""The answer of ``POST /api/v1/checknode/``, as bitnodes.io gave it (``success``,
``address``, ``port`` and, on success, ``user_agent``, ``version``, ``height``), with the
reason of a failure and what it can mean, and whether the answer is a repeat of a check
made within the minute."""

from __future__ import annotations

from typing import Literal

import msgspec

from .bounds import Checked
from .targets import Target

Reason = Literal[
    "refused", "timeout", "closed", "not_bitcoin", "wrong_network", "unreachable", "not_checkable"
]

# What each reason can mean, for a person: true to what real nodes do. A node of another
# network reads a version in a magic not its own as garbage and closes without a word
# (Bitcoin Core and its forks do; Bitcoin SV's node also bans the sender's address for
# 24 h, so that its later checks, in the right magic too, are closed as well).
DETAILS: dict[str, str] = {
    "refused": "nothing listens on this port (the connection was refused)",
    "timeout": "the node did not connect or complete the handshake in time: a firewall "
    "that drops packets, a node too busy to answer, or no node at this address",
    "closed": "the node accepted the connection and closed it without completing the "
    "handshake. It can mean that the node is of another network (a node closes without a "
    "word on a message in another network's magic), that it has no free inbound "
    "connection slot (a full node), or that it has banned this server's address (some "
    "nodes ban a peer that sent another network's magic, for 24 h)",
    "not_bitcoin": "something answered, but not a Bitcoin handshake (an HTTP server, say, "
    "or more bytes than a handshake needs)",
    "wrong_network": "the node answered in another network's magic: it is a node of "
    "another network than the one this server crawls",
    "unreachable": "there is no route to the address from this server",
    "not_checkable": "this server cannot reach the address's network (an onion without "
    "the operator's Tor proxy, i2p, cjdns)",
}


class CheckNodeBody(msgspec.Struct, omit_defaults=True):
    """A live check's answer: on success the node's version message's fields and the
    handshake's time; on failure (still a 200) exactly one reason. ``cached`` says the
    answer is that of a check of the same address and port made within the last minute,
    at ``checked_at`` (unix seconds). ``detail`` says, for a person, what the reason can
    mean."""

    success: bool
    address: str
    port: int
    cached: bool
    checked_at: int
    reason: Reason | None = None
    detail: str | None = None
    user_agent: str | None = None
    version: int | None = None
    services: int | None = None
    height: int | None = None
    handshake_ms: float | None = None


def answer_of(target: Target, checked: Checked, cached: bool) -> CheckNodeBody:
    """The answer for ``target`` from its check."""
    outcome, theirs = checked.outcome, checked.outcome.version
    common = {
        "address": target.host,
        "port": target.port,
        "cached": cached,
        "checked_at": int(checked.checked_at),
    }
    if theirs is None:
        reason = outcome.reason
        detail = DETAILS.get(reason or "")
        return CheckNodeBody(success=False, reason=reason, detail=detail, **common)  # type: ignore[arg-type]
    return CheckNodeBody(
        success=True,
        user_agent=theirs.user_agent,
        version=theirs.version,
        services=theirs.services,
        height=theirs.height,
        handshake_ms=outcome.handshake_ms,
        **common,  # type: ignore[arg-type]
    )


def not_checkable(address: str, port: int, now: float) -> CheckNodeBody:
    """The answer for an address of a network no check can reach from here."""
    return CheckNodeBody(
        success=False,
        address=address.strip().lower(),
        port=port,
        cached=False,
        checked_at=int(now),
        reason="not_checkable",
        detail=DETAILS["not_checkable"],
    )
