"""The bitnodes bridge's record of each crawl's attempts: which addresses bitnodes' crawler
tried (its ``node:*`` keys) and reached (its ``up`` set), and the rules in force, kept per
crawl in ``attempts.msgpack`` (``crawl/attempts.py``) for ``crawldash serve`` to say why a
node is not in an export.

bitnodes deletes the ``node:*`` keys and ``up`` as the next crawl starts, right after it
pushes the finished crawl's ``elapsed`` entry. Once ``pending`` is empty no new key is set,
so a scan made then sees every attempt of the crawl: a crawl is kept as ``complete`` only
when the bridge saw it start (the ``elapsed`` entry of the crawl before) and made such a
final scan before the keys went. Scans in between, every ``SCAN_EVERY`` seconds, keep what
a late final scan would miss; a crawl without a final scan is kept, but not as complete.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import redis
from pyroaring import BitMap

from ..crawl.address import AddressError
from ..crawl.attempts import (
    FORMAT,
    KEYFRAME_EVERY,
    FullCrawl,
    KeptAttempts,
    KeptCrawl,
    Rules,
    asn_rule,
    decode_crawls,
    encode_crawls,
    ipv4_rule,
    ipv6_rule,
    next_crawl,
    pack_addresses,
    read_kept,
    unpack_addresses,
    write_attempts,
)
from ..crawl.propagation import bitnodes_member
from .redis_values import decoded, elapsed_entry

log = logging.getLogger(__name__)
SCAN_EVERY = 60.0  # seconds between two scans of a running crawl's keys
SCAN_COUNT = 1000
MAX_KEYS = 1_000_000  # node:* keys read in one scan; past it the crawl is not complete
DAY = 86_400
MAX_RULE_BYTES = 16 * 1024 * 1024  # bitnodes' rules are lists of thousands at most
_NODES = msgspec.json.Decoder(list[str])
_NETWORKS = msgspec.json.Decoder(list[tuple[int, int]])
_ASNS = msgspec.json.Decoder(list[int])
RULE_KEYS = ("exclude-nodes", "exclude-ipv4-networks", "exclude-ipv6-networks", "include-asns")
# Each rule's entries as kept (None: skipped): a range must be one, and fit the file.
_ENTRIES: tuple[Callable[[Any], Any], ...] = (
    lambda host: host,
    lambda pair: ipv4_rule(*pair),
    lambda pair: ipv6_rule(*pair),
    asn_rule,
)


class Gathering:
    """What is known so far of the crawl under way."""

    def __init__(self, watched_start: bool) -> None:
        self.watched_start = watched_start
        self.tried: set[str] = set()
        self.reached: set[str] = set()
        self.rules = Rules()
        self.final = False  # a whole scan made once pending was empty
        self.scanned_at = float("-inf")


class AttemptsCollector:
    """Follows bitnodes' crawls through Redis; keeps each finished one in ``folder``."""

    def __init__(self, client: redis.Redis, folder: Path, max_age_days: int) -> None:
        self.client, self.folder, self.max_age = client, folder, max_age_days * DAY
        self._last_end: int | None = None  # the newest elapsed entry's time, when last seen
        self._gathering: Gathering | None = None
        self._kept: KeptAttempts | None = None
        self._addresses: list[str] = []  # every address kept, by position
        self._positions: dict[str, int] = {}
        self._last: FullCrawl | None = None  # the newest crawl kept, its bitmaps whole
        self._said: set[str] = set()

    def collect(self, now: float) -> None:
        """One look: a crawl that ended is kept; the one under way scanned when due.
        RedisError and OSError go to the caller, which retries."""
        end = self._newest_end()
        if end != self._last_end:
            if self._gathering is not None and self._last_end is not None and end is not None:
                self._keep(end, self._gathering)
            # this crawl is watched from its start if the bridge saw the one before end, or
            # if it has not started yet (bitnodes waits between crawls, "starting")
            watched = self._last_end is not None or not self._running()
            self._gathering = Gathering(watched_start=watched)
            self._last_end = end
            log.info(
                "following the crawl after %s: %s",
                end if end is not None else "none (no elapsed entry)",
                "from its start" if watched else "joined under way, to be kept as incomplete",
            )
            return
        gathering = self._gathering
        if gathering is None or gathering.final or not self._running():
            return  # between crawls the keys are the last crawl's, or none
        emptied = self.client.scard("pending") == 0
        if emptied or now - gathering.scanned_at >= SCAN_EVERY:
            self._scan(gathering, emptied)
            gathering.scanned_at = now
            if emptied and self._newest_end() == self._last_end:
                gathering.final = True  # the keys were all there through the scan
                log.info(
                    "crawl under way: every attempt seen (pending empty) tried=%d reached=%d",
                    len(gathering.tried),
                    len(gathering.reached),
                )

    def flush(self) -> None:
        """Nothing waits to be written: each crawl is written as it ends."""

    def _running(self) -> bool:
        return self.client.get("crawl:master:state") == b"running"

    def _newest_end(self) -> int | None:
        newest = self.client.lindex("elapsed", 0)
        if newest is None:
            return None
        ended, _ = elapsed_entry(newest)  # type: ignore[arg-type]
        if ended is None:
            self._once("elapsed", "elapsed entry %r unreadable: crawls not told apart", newest)
        return ended

    def _scan(self, gathering: Gathering, with_reached: bool) -> None:
        for seen, key in enumerate(self.client.scan_iter(match="node:*", count=SCAN_COUNT)):
            if seen >= MAX_KEYS:
                self._once("many", "more than %d node:* keys; the crawl is kept incomplete", seen)
                gathering.watched_start = False
                break
            address = self._address(key)
            if address is not None:
                gathering.tried.add(address)
        if with_reached:
            gathering.reached.update(
                a for a in map(self._address, self.client.smembers("up")) if a is not None
            )
        gathering.rules = self._rules()

    def _address(self, key: bytes | str) -> str | None:
        """The canonical address of ``node:<address>-<port>-<services>``."""
        try:
            text = key.decode() if isinstance(key, bytes) else key
            member = text[5:].rpartition("-")[0]
            return bitnodes_member(member)
        except (UnicodeDecodeError, AddressError):
            self._once("key", "skipped node key %r: not node:ADDRESS-PORT-SERVICES", key[:80])
            return None

    def _rules(self) -> Rules:
        """The rules in force, each of bitnodes' shape or taken as empty, and each entry
        that is not a range or an AS number skipped (each said once)."""
        values = self.client.mget(RULE_KEYS)
        shapes: tuple[msgspec.json.Decoder[Any], ...] = (_NODES, _NETWORKS, _NETWORKS, _ASNS)
        parsed: list[list[Any]] = []
        for key, value, shape, entry in zip(RULE_KEYS, values, shapes, _ENTRIES, strict=True):
            raw = value.encode() if isinstance(value, str) else value
            rule: list[Any] | None = [] if raw is None else decoded(raw, shape, MAX_RULE_BYTES)
            if rule is None:
                self._once(key, "rule %s unreadable, taken as empty: %r", key, str(value)[:80])
            entries = [entry(item) for item in rule or []]
            kept = [item for item in entries if item is not None]
            if len(kept) < len(entries):
                self._once(
                    f"{key} entries",
                    "rule %s: %d entries skipped, not of bitnodes' shape",
                    key,
                    len(entries) - len(kept),
                )
            parsed.append(kept)
        return Rules(*parsed)

    def _keep(self, timestamp: int, gathering: Gathering) -> None:
        kept = self._load()
        if any(crawl.timestamp == timestamp for crawl in kept.crawls):
            return  # kept already (a bridge restarted within the same crawl's end)
        # reached first: the nodes reached crawl after crawl then sit side by side, and
        # each crawl's bitmaps are a few runs
        for address in [*sorted(gathering.reached), *sorted(gathering.tried)]:
            if address not in self._positions:
                self._positions[address] = len(self._addresses)
                self._addresses.append(address)
        rules = list(kept.rules)
        if gathering.rules not in rules:
            rules.append(gathering.rules)
        full = FullCrawl(
            timestamp,
            gathering.watched_start and gathering.final,
            BitMap(self._positions[a] for a in gathering.tried),
            BitMap(self._positions[a] for a in gathering.reached),
            rules.index(gathering.rules),
        )
        crawls = _pruned(kept.crawls, timestamp - self.max_age)
        since_whole = next((n for n, c in enumerate(reversed(crawls)) if c.whole), len(crawls))
        whole = not crawls or since_whole + 1 >= KEYFRAME_EVERY
        crawls.append(next_crawl(full, self._last, whole))
        self._last = full
        packed = pack_addresses(self._addresses)
        self._kept = KeptAttempts(FORMAT, packed, crawls, rules)
        if whole:
            self._compact()
        write_attempts(self.folder, self._kept)
        log.info(
            "crawl %d attempts kept: tried=%d reached=%d complete=%s",
            timestamp,
            len(gathering.tried),
            len(gathering.reached),
            full.complete,
        )

    def _load(self) -> KeptAttempts:
        """What was kept, read once per run; a broken file is logged and started afresh."""
        if self._kept is None:
            try:
                self._kept = read_kept(self.folder)
                if self._kept is not None:
                    self._addresses = unpack_addresses(self._kept.addresses)
                    *_, self._last = [None, *decode_crawls(self._kept.crawls)]
            except ValueError as exc:
                log.warning("kept attempts unreadable, starting afresh: %s", exc)
                self._kept = None
            if self._kept is None:
                self._kept, self._addresses, self._last = (
                    KeptAttempts(FORMAT, b"", [], []),
                    [],
                    None,
                )
            self._positions = {address: i for i, address in enumerate(self._addresses)}
        return self._kept

    def _compact(self) -> None:
        """Drop the addresses and rules no crawl kept refers to any more, once they are half
        of what is held: positions are renumbered and every crawl encoded anew."""
        assert self._kept is not None
        full = list(decode_crawls(self._kept.crawls))
        used = BitMap()
        for crawl in full:
            used |= crawl.tried | crawl.reached
        if len(used) * 2 > len(self._addresses):
            return
        renumbered = {old: new for new, old in enumerate(used)}
        rules = sorted({crawl.rules for crawl in full})

        def moved(bitmap: BitMap) -> BitMap:
            return BitMap(renumbered[p] for p in bitmap)

        full = [
            FullCrawl(
                c.timestamp, c.complete, moved(c.tried), moved(c.reached), rules.index(c.rules)
            )
            for c in full
        ]
        self._addresses = [self._addresses[p] for p in used]
        self._positions = {address: i for i, address in enumerate(self._addresses)}
        self._last = full[-1]
        self._kept = KeptAttempts(
            FORMAT,
            pack_addresses(self._addresses),
            list(encode_crawls(full)),
            [self._kept.rules[i] for i in rules],
        )

    def _once(self, what: str, message: str, *args: object) -> None:
        if what not in self._said:
            self._said.add(what)
            log.warning(message, *args)


def _pruned(crawls: list[KeptCrawl], oldest: int) -> list[KeptCrawl]:
    """The crawls kept from ``oldest`` on; the first of them made whole if it was not."""
    cut = next((i for i, c in enumerate(crawls) if c.timestamp >= oldest), len(crawls))
    if cut == 0 or cut == len(crawls):
        return list(crawls[cut:])
    if crawls[cut].whole:
        return list(crawls[cut:])
    start = max((i for i in range(cut) if crawls[i].whole), default=0)
    *_, head = decode_crawls(crawls[start : cut + 1])
    return [next_crawl(head, None, whole=True), *crawls[cut + 1 :]]
