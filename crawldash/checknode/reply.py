"""The answer of ``POST /api/v1/checknode/``, as bitnodes.io gave it (``success``,
``address``, ``port`` and, on success, ``user_agent``, ``version``, ``height``), with the
reason of a failure and whether the answer is a repeat of a check made within the minute."""

from __future__ import annotations

from typing import Literal

import msgspec

from .bounds import Checked
from .targets import Target

Reason = Literal[
    "refused", "timeout", "closed", "not_bitcoin", "wrong_network", "unreachable", "not_checkable"
]


class CheckNodeBody(msgspec.Struct, omit_defaults=True):
    """A live check's answer: on success the node's version message's fields and the
    handshake's time; on failure (still a 200) exactly one reason. ``cached`` says the
    answer is that of a check of the same address and port made within the last minute,
    at ``checked_at`` (unix seconds)."""

    success: bool
    address: str
    port: int
    cached: bool
    checked_at: int
    reason: Reason | None = None
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
        return CheckNodeBody(success=False, reason=outcome.reason, **common)  # type: ignore[arg-type]
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
    )
