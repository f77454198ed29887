"""The presence store at full size: 8,640 crawls of 15,000 nodes with the demo generator's
churn, kept the way crawldash keeps it (one bitmap per address), against one bitmap per
crawl over the same data. Prints its findings as ``measure | value`` rows, or with
``--json`` as the bench.rows.Measure rows ``make bench`` reads.

Run alone with ``python -m bench.studies.presence [--json] [crawls] [nodes]``; ``make bench`` runs
it too.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pyroaring import FrozenBitMap

from bench.fresh_process import command_line, loaded_in_a_fresh_process, own_rss_mib
from bench.rows import Measure, Section, Shape, Unit
from crawldash.demo.fake_crawler import generate_crawls
from crawldash.live.stores.index_codec import (
    decode_presence,
    encode_presence,
    encode_presence_in_slices,
)
from crawldash.live.stores.presence import SLICE, Presence

END = 1_790_000_000


SAVE_EVERY = 6  # crawls between index saves: once a minute at one crawl per 10 s


async def build(crawls: int, nodes: int) -> tuple[Presence, list[float], list[float], int]:
    """The presence of every crawl, updated as the server updates it (in slices on the
    event loop); the longest the loop was held in each crawl's update, and in each
    save's encoding (in slices too); and the per-crawl bitmaps' serialized size (ids
    given to addresses in order of first appearance)."""
    presence, ids, per_crawl = Presence(), dict[str, int](), 0
    updates: list[float] = []
    saves: list[float] = []
    for index, crawl in enumerate(generate_crawls(nodes=nodes, crawls=crawls, end=END)):
        addresses = crawl.addresses()
        held = [0.0]
        probe = asyncio.create_task(_loop_holds(held))
        await asyncio.sleep(0)
        await presence.update(crawl.timestamp, addresses, lambda _: True)
        probe.cancel()
        updates.append(held[0])
        if index % SAVE_EVERY == 0:
            held = [0.0]
            probe = asyncio.create_task(_loop_holds(held))
            await asyncio.sleep(0)
            await encode_presence_in_slices(presence)
            probe.cancel()
            saves.append(held[0])
        members = FrozenBitMap(ids.setdefault(a, len(ids)) for a in addresses)
        members.run_optimize()
        per_crawl += len(members.serialize())
    return presence, updates, saves, per_crawl


async def _loop_holds(longest: list[float]) -> None:
    """Record in ``longest`` the longest time between two turns of this task: how long
    something else held the event loop."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(0)
        longest[0] = max(longest[0], time.perf_counter() - started)


def load(path: str) -> None:
    """In a fresh process: the memory and time that loading the index takes."""
    before = own_rss_mib()
    started = time.perf_counter()
    presence = decode_presence(Path(path).read_bytes())
    seconds = time.perf_counter() - started
    print(f"{seconds:.3f} {own_rss_mib() - before:.1f} {len(presence)}")


def main(crawls: int = 8640, nodes: int = 15_000) -> list[Measure]:
    presence, updates, saves, per_crawl = asyncio.run(build(crawls, nodes))
    data = encode_presence(presence)
    out = loaded_in_a_fresh_process("bench.studies.presence", data, ".msgpack")
    seconds, added, held = float(out[0]), float(out[1]), int(out[2])
    updates.sort()
    saves.sort()
    label = f"{held:,} crawls of {nodes:,} nodes"
    return [
        row(f"presence, {label}: index on disk", (len(data) / 1e6,), Unit.MB, 2),
        row(f"presence, {label}: one bitmap per crawl instead", (per_crawl / 1e6,), Unit.MB, 2),
        row(f"presence, {label}: load at start-up", (seconds,), Unit.S, 3),
        row(f"presence, {label}: memory it adds (RSS)", (added,), Unit.MIB, 1),
        row(
            "presence: the longest the event loop is held by a crawl's update (it yields "
            f"every {SLICE:,} nodes), median / p99 / worst",
            tuple(
                value * 1e3
                for value in (
                    updates[len(updates) // 2],
                    updates[int(len(updates) * 0.99)],
                    updates[-1],
                )
            ),
            Unit.MS,
            1,
        ),
        row(
            "presence: the longest the event loop is held by the encoding of the index to "
            f"save it (it yields every {SLICE:,} addresses), median / worst",
            (saves[len(saves) // 2] * 1e3, saves[-1] * 1e3),
            Unit.MS,
            1,
        ),
    ]


def row(name: str, values: tuple[float, ...], unit: Unit, digits: int) -> Measure:
    shape = Shape.ONE if len(values) == 1 else Shape.SLASHED
    return Measure(Section.PRESENCE, name, values, unit, digits, shape)


if __name__ == "__main__":
    command_line(main, load)
