"""A network's live check as a whole: the target refused or allowed, the bounds applied,
the handshake made (once per address and port a minute), the success handed to the
bridge, and every outcome and refusal counted for /metrics."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..settings.addresses import IPNetwork
from ..settings.networks import NetworkFolder
from ..settings.serve import Settings
from .bounds import ClientLimit, InFlight, Repeats
from .handoff import HandedCheck, Handoff
from .handshake import Limits, Outcome, handshake
from .reply import CheckNodeBody, answer_of, not_checkable
from .targets import NotCheckable, Refusal, Target, target_of

BUSY_RETRY_AFTER = 5  # seconds a client is told to wait while every slot is taken


class TooMany(Exception):
    """A check not made now: ``cause`` (rate_limited, busy) and when to try again."""

    def __init__(self, cause: str, retry_after: int) -> None:
        super().__init__(cause)
        self.cause, self.retry_after = cause, retry_after


@dataclass(frozen=True)
class CheckOptions:
    """How a network's checks are made and bounded (from serve's ``--live-check-*``)."""

    magic: bytes
    limits: Limits = field(default_factory=Limits)
    allowed: Sequence[IPNetwork] = ()
    proxy: tuple[str, int] | None = None
    per_client: int = 10
    in_flight: int = 32
    handoff_dir: Path | None = None


class LiveCheck:
    """One network's checks, and their counts by outcome and refusals by cause."""

    def __init__(self, options: CheckOptions) -> None:
        self.options = options
        self.repeats = Repeats()
        self.clients = ClientLimit(options.per_client)
        self.in_flight = InFlight(options.in_flight)
        self.handoff = Handoff(options.handoff_dir) if options.handoff_dir else None
        self.outcomes: Counter[tuple[str, bool]] = Counter()  # (outcome, cached) -> answers
        self.refusals: Counter[str] = Counter()  # cause -> requests refused

    async def check(self, address: str, port: int, client: str) -> CheckNodeBody:
        """Check the node at ``address``:``port`` for ``client``.

        Args:
            address: the host as the client gave it.
            port: the port as a whole number.
            client: the client's address, for its limit.

        Returns:
            The answer. Raises TooMany past a bound, Refusal for a target never checked.
        """
        retry_after = self.clients.admit(client)
        if retry_after is not None:
            self.refusals["rate_limited"] += 1
            raise TooMany("rate_limited", retry_after)
        try:
            target = target_of(address, port, self.options.allowed, self.options.proxy is not None)
        except Refusal as refusal:
            self.refusals[refusal.cause] += 1
            raise
        except NotCheckable:
            self.outcomes["not_checkable", False] += 1
            return not_checkable(address, port, time.time())
        key = (target.host, target.port)
        if self.in_flight.full and not self.repeats.kept(key):  # refused before any task
            self.refusals["busy"] += 1
            raise TooMany("busy", BUSY_RETRY_AFTER)
        try:
            checked, cached = await self.repeats.check(key, lambda: self._run(target))
        except TooMany as busy:
            self.refusals[busy.cause] += 1
            raise
        self.outcomes[checked.outcome.reason or "success", cached] += 1
        return answer_of(target, checked, cached)

    async def _run(self, target: Target) -> Outcome:
        if not self.in_flight.take():
            raise TooMany("busy", BUSY_RETRY_AFTER)
        try:
            options = self.options
            outcome = await handshake(target, options.magic, options.limits, options.proxy)
        finally:
            self.in_flight.give_back()
        if outcome.version is not None and self.handoff is not None:
            handed = HandedCheck(
                target.host, target.port, outcome.version.services, int(time.time())
            )
            await asyncio.to_thread(self.handoff.leave, handed)
        return outcome


def live_check_for(settings: Settings, folder: NetworkFolder) -> LiveCheck | None:
    """``folder``'s network's live check, as serve's options make it; None while off.

    Args:
        settings: serve's settings (the ``--live-check-*`` bounds, ``--tor-proxy``).
        folder: the network, with its magic and hand-off folder.

    Returns:
        The live check, or None if ``--live-check`` does not name the network.
    """
    if not folder.live_check or folder.magic is None:
        return None
    limits = Limits(
        settings.live_check_connect_timeout,
        settings.live_check_timeout,
        settings.live_check_max_bytes,
    )
    options = CheckOptions(
        folder.magic,
        limits,
        settings.live_check_allow,
        settings.tor_proxy,
        settings.live_check_per_client,
        settings.live_check_in_flight,
        folder.handoff_dir,
    )
    return LiveCheck(options)
