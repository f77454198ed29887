"""``/api/check``'s reason: why a node is or is not in the newest export, from the crawl
file paired with it (bitnodes' ``data/crawl/<magic>/``) and the bridge's kept attempts of
that crawl. Real files on disk, a real server."""

from __future__ import annotations

import json
from pathlib import Path

from pyroaring import BitMap

from crawldash.crawl.attempts import (
    FullCrawl,
    KeptAttempts,
    Rules,
    encode_crawls,
    pack_addresses,
    write_attempts,
)

from .conftest import Serve, eventually
from .factories import export_body, row, write_snapshot

CRAWL = 1_700_000_000  # the crawl's end, its crawl file's name
EXPORT = CRAWL + 90  # the export, taken a little after
UP, HELD_NOT, FAILED, EXCLUDED, UNSEEN = (
    "203.0.113.1:8333",
    "203.0.113.2:8333",
    "203.0.113.3:8333",
    "10.1.2.3:8333",
    "203.0.113.9:8333",
)


def bitnodes_folders(root: Path) -> tuple[Path, Path]:
    """bitnodes' layout: data/export/<magic> (served) beside data/crawl/<magic>."""
    export_dir = root / "data" / "export" / "f9beb4d9"
    crawl_dir = root / "data" / "crawl" / "f9beb4d9"
    export_dir.mkdir(parents=True)
    crawl_dir.mkdir(parents=True)
    write_snapshot(export_dir, EXPORT, export_body([row("203.0.113.1")]))
    crawl_rows = [["203.0.113.1", 8333, 1033, 900_000], ["203.0.113.2", 8333, 1033, 900_000]]
    (crawl_dir / f"{CRAWL - 600}.json").write_text("[]")  # an older crawl: not paired
    (crawl_dir / f"{CRAWL}.json").write_text(json.dumps(crawl_rows))
    (crawl_dir / f"{EXPORT + 600}.json").write_text("[]")  # the next crawl: not paired
    return export_dir, crawl_dir


def keep_attempts(folder: Path, *, complete: bool) -> None:
    """The bridge's record of the crawl, as ``crawl/attempts.py`` writes it."""
    addresses = [UP, HELD_NOT, FAILED]
    ten = int("0a000000", 16), int("ff000000", 16)
    write_attempts(
        folder,
        KeptAttempts(
            1,
            pack_addresses(addresses),
            list(encode_crawls([FullCrawl(CRAWL, complete, BitMap([0, 1, 2]), BitMap([0, 1]), 0)])),
            [Rules(exclude_ipv4_networks=[ten])],
        ),
    )


async def reasons(client, *addresses: str) -> dict[str, tuple[str, int | None]]:
    found = {}
    for address in addresses:
        answer = await (await client.get("/api/check", params={"address": address})).json()
        found[address] = (answer["reason"]["code"], answer["reason"]["crawl"])
    return found


async def test_without_a_crawl_folder_or_the_bridge_a_node_is_up_or_unknown(
    serve: Serve, data_dir: Path
):
    write_snapshot(data_dir, EXPORT, export_body([row("203.0.113.1")]))
    client = await serve()
    assert await reasons(client, UP, HELD_NOT) == {
        UP: ("up", EXPORT),
        HELD_NOT: ("unknown", None),
    }


async def test_the_paired_crawl_file_tells_a_node_reached_but_not_held(
    serve: Serve, tmp_path: Path
):
    export_dir, _ = bitnodes_folders(tmp_path)
    client = await serve(data_dir=export_dir)

    async def paired() -> bool:
        return (await reasons(client, HELD_NOT))[HELD_NOT] == ("reached_not_held", CRAWL)

    await eventually(paired)
    assert await reasons(client, UP, FAILED) == {
        UP: ("up", EXPORT),
        FAILED: ("unknown", CRAWL),  # not reached, and nothing says whether it was tried
    }
    answer = await (await client.get("/api/check", params={"address": HELD_NOT})).json()
    assert "connection slots" in answer["reason"]["detail"]
    assert answer["reachable"] is False
    assert answer["last_up"] is None


async def test_the_bridge_tells_failed_excluded_and_not_tried(serve: Serve, tmp_path: Path):
    export_dir, _ = bitnodes_folders(tmp_path)
    kept = tmp_path / "bridge"
    kept.mkdir()
    keep_attempts(kept, complete=True)
    client = await serve(data_dir=export_dir, propagation_dir=(("main", kept),))

    async def paired() -> bool:
        return (await reasons(client, FAILED))[FAILED][0] == "failed"

    await eventually(paired)
    assert await reasons(client, UP, HELD_NOT, FAILED, EXCLUDED, UNSEEN) == {
        UP: ("up", EXPORT),
        HELD_NOT: ("reached_not_held", CRAWL),
        FAILED: ("failed", CRAWL),
        EXCLUDED: ("excluded", CRAWL),
        UNSEEN: ("not_tried", CRAWL),
    }
    excluded = await (await client.get("/api/check", params={"address": EXCLUDED})).json()
    assert "10.0.0.0/8" in excluded["reason"]["detail"]
    failed = await (await client.get("/api/check", params={"address": FAILED})).json()
    assert "port 8333" in failed["reason"]["detail"]


async def test_a_crawl_the_bridge_did_not_watch_whole_says_unknown_not_not_tried(
    serve: Serve, tmp_path: Path
):
    export_dir, _ = bitnodes_folders(tmp_path)
    kept = tmp_path / "bridge"
    kept.mkdir()
    keep_attempts(kept, complete=False)
    client = await serve(data_dir=export_dir, propagation_dir=(("main", kept),))

    async def paired() -> bool:
        return (await reasons(client, FAILED))[FAILED][0] == "failed"

    await eventually(paired)
    assert (await reasons(client, UNSEEN))[UNSEEN] == ("unknown", CRAWL)


async def test_a_node_that_was_up_before_says_when(serve: Serve, data_dir: Path):
    write_snapshot(data_dir, EXPORT - 600, export_body([row("203.0.113.1"), row("203.0.113.2")]))
    write_snapshot(data_dir, EXPORT, export_body([row("203.0.113.1")]))
    client = await serve()

    async def both_counted() -> bool:
        answer = await (await client.get("/api/check", params={"address": HELD_NOT})).json()
        return bool(answer["presence"]["crawls"] == 2)

    await eventually(both_counted)
    answer = await (await client.get("/api/check", params={"address": HELD_NOT})).json()
    assert answer["last_up"] == EXPORT - 600
    up = await (await client.get("/api/check", params={"address": UP})).json()
    assert up["last_up"] == EXPORT
