"""``crawldash demo``: write a realistic data folder, as a crawler and crawldash leave it."""

from __future__ import annotations

import logging
import os
import time
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec
from pyroaring import BitMap

from ..crawl.address import NETWORKS
from ..crawl.atomic import write_atomically
from ..crawl.breakdown import Value, tally
from ..crawl.files import STATUS_NAME, snapshot_timestamp
from ..live.stores.history import HistoryEntry, Kept
from ..live.stores.index_codec import encode_presence
from ..live.stores.index_files import HistoryStore, PresenceStore
from ..live.stores.presence import BASE_SLOT, Presence
from ..live.stores.tallies import KEYS, Values
from ..models import ExportRow
from ..settings.serve import Settings
from .fake_crawler import Crawl, generate_crawls, status_json, tip_height
from .sample_bridge import write_bridge
from .world import MAINNET, TESTNET4, Chain

log = logging.getLogger(__name__)
INTERVAL = 600
NETWORK, SECOND_NETWORK = "mainnet", "testnet4"  # the demo's networks, the first also at /
SECOND_SHARE = 30  # the second network has this many times fewer nodes
SECOND_CRAWLS, SECOND_FILES = 288, 6  # two days of it, its newest six crawls as files
PEER_AGENT = "/crawldash-demo-peer:1.0/"  # as demo/peer.py answers
PEER_HOSTNAME = "peer.demo.crawldash.invalid"  # .invalid: a name no one else can hold


@dataclass(frozen=True)
class Demo:
    """The folders a demo wrote: each network's crawls, the state folder they share,
    and the first network's bridge folder and bitnodes crawl folder."""

    networks: tuple[tuple[str, Path], ...]
    state_dir: Path
    bridge_dir: Path
    crawl_dir: Path
    held: Crawl | None = None  # the first network's newest crawl, when left to write later
    peer_row: bytes = b""  # the demo peer's row in the first network's crawl files


def write_showcase(
    directory: Path,
    *,
    nodes: int,
    crawls: int,
    keep_files: int,
    seed: int,
    peer: tuple[str, int] | None = None,
) -> Demo:
    """Everything ``crawldash demo`` shows: ``write_demo``'s folder, the bridge's kept
    propagation, latency and attempts with bitnodes' crawl files beside them
    (``sample_bridge.py``), and a second, smaller network, so that the page has a switcher.

    Args:
        directory: where to write (``data/``, ``state/``, ``bridge/``, ``crawl/`` and the
            second network's folder inside).
        nodes: in the first network's newest crawl.
        crawls: of the first network, one every INTERVAL, ending now.
        keep_files: its newest crawls left as files.
        seed: of the generator.
        peer: the demo peer's address, listed in the first network's crawl files; with it
            the newest of them is left for the caller to write (``Demo.held``).

    Returns:
        The folders, for ``served``.
    """
    state_dir, end = directory / "state", int(time.time()) // INTERVAL * INTERVAL
    row = peer_row(*peer, tip_height(end), end) if peer is not None else b""
    data = directory / "data"
    kept = write_crawls(
        data, state_dir, nodes, crawls, keep_files, seed, end, extra_row=row, hold=peer is not None
    )
    write_bridge(directory / "bridge", directory / "crawl", kept, seed)
    second = directory / SECOND_NETWORK
    second_crawls, second_files = min(crawls, SECOND_CRAWLS), min(keep_files, SECOND_FILES)
    small = max(10, nodes // SECOND_SHARE)
    write_crawls(second, state_dir, small, second_crawls, second_files, seed + 1, end, TESTNET4)
    networks = ((NETWORK, data), (SECOND_NETWORK, second))
    held = kept[-1] if peer is not None and len(kept) > 1 else None
    return Demo(networks, state_dir, directory / "bridge", directory / "crawl", held, row)


def peer_row(host: str, port: int, height: int, since: int) -> bytes:
    """The demo peer's row (export form): no place, no provider; its hostname and
    organisation say whose it is."""
    org = "crawldash demo: its own peer, on this machine"
    row = [host, port, 70016, PEER_AGENT, since, 1033, height, PEER_HOSTNAME, None, None, 0.0]
    return msgspec.json.encode([*row, 0.0, None, None, org])


def served(demo: Demo, settings: Settings) -> Settings:
    """``settings`` serving the demo's networks and folders."""
    first = demo.networks[0][0]
    return replace(
        settings,
        state_dir=demo.state_dir,
        networks=demo.networks,
        propagation_dir=((first, demo.bridge_dir),),
        crawl_dir=((first, demo.crawl_dir),),
    )


def write_demo(
    directory: Path,
    *,
    nodes: int,
    crawls: int,
    keep_files: int,
    seed: int,
    end: int | None = None,
) -> tuple[Path, Path]:
    """Write ``crawls`` crawls ending now; keep the newest ``keep_files`` as files.

    The older crawls go into the history and presence indexes in ``state/``, as if the
    crawler had pruned their files while crawldash was running. Returns the data and state
    folders.
    """
    data_dir, state_dir = directory / "data", directory / "state"
    write_crawls(data_dir, state_dir, nodes, crawls, keep_files, seed, end)
    return data_dir, state_dir


def write_crawls(
    data_dir: Path,
    state_dir: Path,
    nodes: int,
    crawls: int,
    keep_files: int,
    seed: int,
    end: int | None = None,
    chain: Chain = MAINNET,
    *,
    extra_row: bytes = b"",
    hold: bool = False,
) -> list[Crawl]:
    """``write_demo``'s work, into the folders given (several networks share a state
    folder), of ``chain``; ``extra_row`` added to each crawl file, the newest not written
    if ``hold``. Returns the crawls kept as files, oldest first."""
    data_dir.mkdir(parents=True, exist_ok=True)
    _remove_old_crawls(data_dir)
    end = end if end is not None else int(time.time()) // INTERVAL * INTERVAL
    started = time.monotonic()
    pruned = _PrunedCrawls()
    kept: list[Crawl] = []
    made = generate_crawls(
        nodes=nodes, crawls=crawls, interval=INTERVAL, end=end, seed=seed, chain=chain
    )
    for index, crawl in enumerate(made):
        if index < crawls - keep_files:
            pruned.add(crawl)
            continue
        if not (hold and index == crawls - 1 and kept):
            write_crawl(data_dir, crawl, extra_row)
        kept.append(crawl)
    HistoryStore.for_data_dir(state_dir, data_dir).save(pruned.kept())
    PresenceStore.for_data_dir(state_dir, data_dir).save(encode_presence(pruned.presence()))
    write_atomically(data_dir / STATUS_NAME, status_json(end=end, seed=seed, chain=chain))
    log.info(
        "demo written dir=%s crawls=%d files=%d nodes=%d seconds=%.1f",
        data_dir,
        crawls,
        min(crawls, keep_files),
        nodes,
        time.monotonic() - started,
    )
    return kept


def write_crawl(data_dir: Path, crawl: Crawl, extra_row: bytes = b"") -> None:
    """A crawl's file, dated as written by the crawler at its time, ``extra_row`` added."""
    body = crawl.body()
    if extra_row:
        body = body[:-1] + b"," + extra_row + b"]"
    path = data_dir / f"{crawl.timestamp}.json"
    write_atomically(path, body)
    os.utime(path, (crawl.timestamp, crawl.timestamp))


class _PrunedCrawls:
    """What the history and presence indexes keep of crawls whose files are gone.

    Consecutive crawls share most of their nodes, so each crawl is taken as the change
    from the one before: a node's run of crawls becomes one range in its bitmap, and the
    counts by network and by value move by the nodes that joined and left. Adding each
    crawl's every address to ``Presence`` one by one came to most of the demo's writing
    time.
    """

    def __init__(self) -> None:
        self.entries: list[HistoryEntry] = []
        self._bits: dict[str, BitMap] = {}
        self._online: set[int] = set()  # the latest crawl's members (indexes into its pool)
        self._since: dict[int, int] = {}  # member -> the slot its current run began
        self._counts = [0] * len(NETWORKS)
        self._values = Values()
        self._tallies: dict[str, Counter[Value]] = {key: Counter() for key in KEYS}
        # (member, upgraded) -> its values, counted
        self._of: dict[tuple[int, bool], list[tuple[Counter[Value], Value, int]]] = {}
        self._upgrades: list[tuple[int, int]] = []  # (when, member) of the pool's upgrades
        self._last: Crawl | None = None

    def add(self, crawl: Crawl) -> None:
        slot, now, last = BASE_SLOT + len(self.entries), set(crawl.members), self._last
        if last is None:
            pool = crawl.pool
            self._upgrades = sorted(
                (node.upgrade_at, i) for i, node in enumerate(pool) if node.upgraded
            )
        for member in self._online - now:
            assert last is not None  # members online were in the crawl before
            self._end_run(crawl, member, slot)
            self._counts[crawl.network_of(member)] -= 1
            self._count(last, member, -1)
        for member in now - self._online:
            self._since[member] = slot
            self._counts[crawl.network_of(member)] += 1
            self._count(crawl, member, 1)
        if last is not None:  # nodes that stayed and upgraded meanwhile
            upgrades = self._upgrades
            start = bisect_right(upgrades, (last.timestamp, len(crawl.pool)))
            end = bisect_right(upgrades, (crawl.timestamp, len(crawl.pool)))
            for _, member in upgrades[start:end]:
                if member in now and member in self._online:
                    self._count(last, member, -1)
                    self._count(crawl, member, 1)
        self._online, self._last = now, crawl
        height = crawl.tip()  # the generator's consensus height
        networks = tuple(self._counts)
        counts = self._values.pack({k: (+c).items() for k, c in self._tallies.items()})
        entry = HistoryEntry(crawl.timestamp, crawl.reachable, 0, 0, networks, height, counts)
        self.entries.append(entry)

    def _count(self, crawl: Crawl, member: int, sign: int) -> None:
        """Add (1) or take away (-1) a member's values as ``crawl`` lists them, by the
        breakdowns' rules (its lag behind the tip is fixed; its client, until it upgrades).
        Each member's values are kept as (counter, value, count): a step per value, where
        ``Counter.update`` checks its argument's type on every call."""
        key = (member, crawl.upgraded(member))
        counted = self._of.get(key)
        if counted is None:
            row = msgspec.json.decode(crawl.row_of(member), type=ExportRow)
            tallies = self._tallies
            counted = self._of[key] = [
                (tallies[name], value, count)
                for name, values in tally([row], crawl.tip()).items()
                for value, count in values.items()
            ]
        for counter, value, count in counted:
            counter[value] = counter.get(value, 0) + sign * count

    def kept(self) -> Kept:
        """The entries, and the values their counts name."""
        return Kept(self.entries, self._values.copy())

    def presence(self) -> Presence:
        end = BASE_SLOT + len(self.entries)
        if self._last is not None:
            for member in self._online:
                self._end_run(self._last, member, end)
        self._online = set()
        timestamps = [entry.timestamp for entry in self.entries]
        return Presence.restored(BASE_SLOT, timestamps, self._bits)

    def _end_run(self, crawl: Crawl, member: int, end: int) -> None:
        address = crawl.address_of(member)
        bitmap = self._bits.get(address)
        if bitmap is None:
            bitmap = self._bits[address] = BitMap()
        bitmap.add_range(self._since.pop(member), end)


def _remove_old_crawls(data_dir: Path) -> None:
    for path in data_dir.iterdir():
        if snapshot_timestamp(path.name) is not None:
            path.unlink()
