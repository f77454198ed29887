"""The network over time as the history index keeps it: an index of the version before
(no counts by value) upgraded without a count invented or a membership set again, counts
that do not fit their values refused whole, and which values each crawl keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crawldash.app import NETWORKS
from crawldash.live.stores.history import HistoryEntry, Kept
from crawldash.live.stores.index_files import HistoryStore
from crawldash.live.stores.saved_history import (
    HISTORY_FORMAT,
    Unusable,
    decode_kept,
    encode_history,
)
from crawldash.live.stores.tallies import KEPT, KEYS, Values, counts_of

from .conftest import Serve, json_of, until_complete, until_served
from .helpers import write_crawls
from .test_trends import CRAWLS, TS, answers, crawl, expected_counts


def write_format_2_index(data_dir: Path, state_dir: Path) -> HistoryStore:
    """The index of the version before: two crawls whose files are gone, and the crawls
    present, without counts by value."""
    pruned = [[TS - 1200, 50, 0, 0, [50, 0, 0, 0, 0], 899_999], [TS - 600, 51]]
    present = []
    for index in range(CRAWLS):
        info = (data_dir / f"{TS + 600 * index}.json").stat()
        present.append([TS + 600 * index, len(crawl(index)), info.st_size, info.st_mtime_ns])
    store = HistoryStore.for_data_dir(state_dir, data_dir)
    store.path.parent.mkdir(parents=True)
    folder = {"path": str(data_dir.resolve()), "device": None, "inode": None}
    store.path.write_text(json.dumps({"format": 2, "folder": folder, "entries": pruned + present}))
    return store


async def test_points_of_an_older_index_keep_their_counts_and_get_none_invented(
    serve: Serve, data_dir: Path, settings: Any
):
    """An index written before counts by value were kept: the points whose files are gone
    keep their reachable counts and carry no counts; the crawls still present are counted
    again for them; the index is written again in this version's format."""
    write_crawls(data_dir, crawl, CRAWLS, TS)
    store = write_format_2_index(data_dir, settings.resolved_state_dir)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    points = await json_of(client, "/api/history?by=country&top=2&limit=100")
    assert points[:2] == [
        {"timestamp": TS - 1200, "reachable": 50},
        {"timestamp": TS - 600, "reachable": 51},
    ]
    assert [p["counts"] for p in points[2:]] == expected_counts("country", 2)
    matched = await json_of(client, "/api/history?by=user_agent&match=knots&limit=100")
    assert "matched" not in matched[0]
    assert "matched" in matched[2]
    await client.app[NETWORKS][0].refresher.saver.flush()
    saved = json.loads(store.path.read_bytes())
    assert saved["format"] == HISTORY_FORMAT
    assert len(saved["entries"]) == CRAWLS + 2


def test_counts_that_do_not_fit_their_values_make_the_index_unusable():
    """An index whose counts name values it does not hold (damaged, or of another shape)
    is refused whole, to be set aside and rebuilt, never misread."""
    values = Values()
    counts = values.pack({"country": [("US", 3), (None, 1)], "version": [(70016, 4)]})
    entry = HistoryEntry(TS, 4, 0, 0, None, None, counts)
    _, kept = decode_kept(encode_history(Kept([entry], values.copy()), None))
    assert kept.entries == [entry]
    assert kept.values[KEYS.index("country")] == ["US"]
    assert counts_of(counts, KEYS.index("country")) == {1: 4 - 1, 0: 1}
    for damaged in (
        Kept([entry], Values().copy()),  # the values are missing
        Kept([HistoryEntry(TS, 4, counts=b"Q" + counts[1:])], values.copy()),  # unknown width
        Kept([HistoryEntry(TS, 4, counts=counts[:-1])], values.copy()),  # cut short
        Kept([HistoryEntry(TS, 4, counts=counts + b"\x01\x00")], values.copy()),  # too long
        Kept([entry], [["US", "US"], [], [], [], [], []]),  # a value twice
        Kept([entry], [["US"]]),  # the values of one key
    ):
        with pytest.raises(Unusable):
            decode_kept(encode_history(damaged, None))


def test_each_crawl_keeps_every_user_agent_and_the_most_common_other_values():
    values = Values()
    agents = [(f"/agent:{i}/", 1) for i in range(KEPT + 44)]
    asns = [(f"AS{i}", 1 + i % 7) for i in range(KEPT + 44)]
    counts = values.pack({"user_agent": agents, "asn": asns})
    assert len(counts_of(counts, KEYS.index("user_agent"))) == KEPT + 44
    kept = counts_of(counts, KEYS.index("asn"))
    assert len(kept) == KEPT
    names = {values.name(KEYS.index("asn"), code) for code in kept}
    dropped = [n for asn, n in asns if asn not in names]
    assert min(kept.values()) >= max(dropped)  # the most nodes first


async def test_crawls_counted_again_for_their_counts_keep_their_membership(
    serve: Serve, data_dir: Path, settings: Any
):
    """Upgrading from an index without counts by value counts the crawls present again,
    but the membership the presence index holds for them is kept as it is: setting it
    again would be a pass over every address for each crawl."""
    write_crawls(data_dir, crawl, CRAWLS, TS)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    first = await answers(client)
    await client.close()
    store = HistoryStore.for_data_dir(settings.resolved_state_dir, data_dir)
    downgrade(store)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    assert await answers(client) == first
    presence = client.app[NETWORKS][0].state.presence
    assert presence.timestamps() == [TS + 600 * i for i in range(CRAWLS)]
    assert presence.rewritten == 0  # no crawl's membership was set again


def downgrade(store: HistoryStore) -> None:
    """The index as the version before wrote it: format 2, no counts by value."""
    saved = json.loads(store.path.read_bytes())
    assert saved["format"] == HISTORY_FORMAT
    entries = [entry[:6] for entry in saved["entries"]]
    store.path.write_text(json.dumps({"format": 2, "folder": saved["folder"], "entries": entries}))
