"""The history by value at full size: 8,640 crawls of 15,000 nodes with the demo
generator's churn, counted by value as crawldash counts them (``crawl.breakdown.tally``,
packed by ``live.stores.tallies``), kept in a History and its index file as crawldash keeps
them. Prints its findings as ``measure | value`` rows, or with ``--json`` as the
bench.rows.Measure rows ``make bench`` reads.

Run alone with ``python -m bench.studies.trends [--json] [crawls] [nodes]``; ``make bench`` runs it
too. The memory is measured in a fresh process that loads the index file, as crawldash's
start does.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import msgspec

from bench.fresh_process import command_line, loaded_in_a_fresh_process, own_rss_mib
from bench.rows import Measure, Section, Shape, Unit
from crawldash.crawl.address import NETWORKS
from crawldash.crawl.breakdown import Value, tally
from crawldash.demo.fake_crawler import generate_crawls, tip_height
from crawldash.live.answers.trends import Trends
from crawldash.live.stores.history import History, HistoryEntry
from crawldash.live.stores.saved_history import decode_kept, encode_history
from crawldash.live.stores.tallies import KEYS, Values
from crawldash.models import ExportRow

END = 1_790_000_000
DISK_LIMIT = 50.0  # MB of index on disk
MEMORY_LIMIT = 60.0  # MiB that loading it adds


def build(crawls: int, nodes: int) -> History:
    """The history of ``crawls`` crawls, each counted by value: a crawl is the one before
    with the nodes that left taken out and those that joined put in (a node's values are
    fixed in the generator), which is what counting every node of it gives."""
    history, values = History(crawls), Values()
    totals: dict[str, Counter[Value]] = {key: Counter() for key in KEYS}
    of: dict[int, dict[str, Counter[Value]]] = {}
    online: set[int] = set()
    networks = [0] * len(NETWORKS)
    for crawl in generate_crawls(nodes=nodes, crawls=crawls, end=END):
        now = set(crawl.members)
        for member, sign in [*((m, -1) for m in online - now), *((m, 1) for m in now - online)]:
            counted = of.get(member)
            if counted is None:
                row = msgspec.json.decode(crawl.row_of(member), type=ExportRow)
                counted = of[member] = tally([row], tip_height(crawl.timestamp))
            for key, counts in counted.items():
                (totals[key].update if sign > 0 else totals[key].subtract)(counts)
            networks[crawl.network_of(member)] += sign
        online = now
        packed = values.pack({key: (+counts).items() for key, counts in totals.items()})
        height = tip_height(crawl.timestamp)
        history.record(
            HistoryEntry(crawl.timestamp, crawl.reachable, 0, 0, tuple(networks), height, packed)
        )
    history.values = values
    return history


def load(path: str) -> None:
    """In a fresh process: the memory and time that loading the index takes, and the CPU
    of the first answers over the whole history."""
    before = own_rss_mib()
    started = time.perf_counter()
    history = History(10**6)
    history.restore(decode_kept(Path(path).read_bytes())[1])
    seconds = time.perf_counter() - started
    added = own_rss_mib() - before
    trends = Trends(history)
    started = time.process_time()
    trends.counts("country", 10, len(history))
    by_country = time.process_time() - started
    started = time.process_time()
    trends.matched("Knots", len(history))
    matched = time.process_time() - started
    print(f"{seconds:.3f} {added:.1f} {len(history)} {by_country:.4f} {matched:.4f}")


def main(crawls: int = 8640, nodes: int = 15_000) -> list[Measure]:
    history = build(crawls, nodes)
    data = encode_history(history.kept(), None)
    counts = sum(len(e.counts or b"") for e in history.entries())
    out = loaded_in_a_fresh_process("bench.studies.trends", data, ".json")
    seconds, added, held = float(out[0]), float(out[1]), int(out[2])
    by_country, matched = float(out[3]), float(out[4])
    label = f"history by value, {held:,} crawls of {nodes:,} nodes"
    return [
        row(
            f"{label}: history index on disk (reachable, networks, height and counts)",
            (len(data) / 1e6,),
            Unit.MB,
            2,
            (DISK_LIMIT,),
        ),
        row(
            f"{label}: memory that loading the index adds (RSS)",
            (added,),
            Unit.MIB,
            1,
            (MEMORY_LIMIT,),
            f"the counts alone are {counts / 1e6:.2f} MB of bytes",
        ),
        row(f"{label}: load at start-up", (seconds,), Unit.S, 3),
        row(
            f"{label}: CPU of the first by=country and match=Knots answers over all crawls",
            (by_country * 1e3, matched * 1e3),
            Unit.MS,
            0,
        ),
    ]


def row(
    name: str,
    values: tuple[float, ...],
    unit: Unit,
    digits: int,
    limits: tuple[float, ...] = (),
    details: str = "",
) -> Measure:
    shape = Shape.ONE if len(values) == 1 else Shape.SLASHED
    return Measure(Section.TARGETS, name, values, unit, digits, shape, limits, details)


if __name__ == "__main__":
    command_line(main, load)
