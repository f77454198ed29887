"""``/api/profile``: what the crawls said about a node, and when that changed, compared as
each crawl is served. Real files, a real server."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from crawldash.live.answers.profiles import Profiles

from .conftest import Serve, eventually, until_served, watching
from .factories import export_body, row, write_snapshot

TS = 1_700_000_000


async def test_a_change_of_user_agent_and_version_is_kept_with_its_crawl(
    serve: Serve, data_dir: Path
):
    write_snapshot(
        data_dir, TS, export_body([row("203.0.113.1"), row("203.0.113.2", agent="/Knots:1/")])
    )
    client = await serve()
    await until_served(client, TS)
    await watching(client)
    upgraded = row("203.0.113.1", agent="/Satoshi:28.0.0/")
    upgraded[2] = 70017  # protocol version
    write_snapshot(
        data_dir, TS + 600, export_body([upgraded, row("203.0.113.2", agent="/Knots:1/")])
    )
    await until_served(client, TS + 600)
    answer = await (await client.get("/api/profile", params={"address": "203.0.113.1:8333"})).json()
    assert answer["address"] == "203.0.113.1:8333"
    assert answer["since"] == TS
    changes = {change["field"]: change for change in answer["changes"]}
    assert changes.keys() == {"user_agent", "protocol_version"}
    assert changes["user_agent"] == {
        "crawl": TS + 600,
        "field": "user_agent",
        "from": "/Satoshi:27.0.0/",
        "to": "/Satoshi:28.0.0/",
    }
    assert (changes["protocol_version"]["from"], changes["protocol_version"]["to"]) == (
        row("203.0.113.1")[2],
        70017,
    )
    same = await (await client.get("/api/profile", params={"address": "203.0.113.2:8333"})).json()
    assert same == {"address": "203.0.113.2:8333", "since": TS, "changes": []}
    bad = await client.get("/api/profile", params={"address": "node.example.org:8333"})
    assert bad.status == 400
    assert (await bad.json())["error"]["code"] == "invalid_address"


async def test_before_a_second_crawl_is_served_nothing_is_compared(serve: Serve, data_dir: Path):
    write_snapshot(data_dir, TS, export_body([row("203.0.113.1")]))
    client = await serve()
    await until_served(client, TS)
    answer = await (await client.get("/api/profile", params={"address": "203.0.113.1:8333"})).json()
    assert answer == {"address": "203.0.113.1:8333", "since": None, "changes": []}


async def test_each_crawl_after_adds_its_changes_and_letter_case_alone_is_none(
    serve: Serve, data_dir: Path
):
    # Each crawl is compared with the one served before it; a user agent that changes only
    # its letter case is no change (the catalog's columns compare them lowercased).
    first, second = row("203.0.113.1"), row("203.0.113.2")
    write_snapshot(data_dir, TS, export_body([first, second]))
    client = await serve()
    await until_served(client, TS)
    await watching(client)
    for step, (country, agent) in enumerate([("DE", "/Knots:1/"), ("FR", "/KNOTS:1/")], 1):
        first[9], second[3] = country, agent
        write_snapshot(data_dir, TS + 600 * step, export_body([first, second]))
        await until_served(client, TS + 600 * step)
    one = await (await client.get("/api/profile", params={"address": "203.0.113.1:8333"})).json()
    assert [(c["crawl"], c["field"], c["from"], c["to"]) for c in one["changes"]] == [
        (TS + 1200, "country", "DE", "FR"),
        (TS + 600, "country", "RU", "DE"),
    ]
    two = await (await client.get("/api/profile", params={"address": "203.0.113.2:8333"})).json()
    assert [(c["crawl"], c["to"]) for c in two["changes"]] == [(TS + 600, "/Knots:1/")]


async def test_a_crawl_is_served_before_its_changes_are_found_and_a_profile_waits_for_them(
    serve: Serve, data_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    # The comparison is held until the test lets it go: the crawl must be served all the
    # same, and a profile asked for meanwhile must wait for its changes, not answer
    # without them.
    write_snapshot(data_dir, TS, export_body([row("203.0.113.1")]))
    client = await serve()
    await until_served(client, TS)
    await watching(client)
    gate, compare = threading.Event(), Profiles.compare

    def held(self: Profiles, *crawls: object) -> object:
        gate.wait(60)
        return compare(self, *crawls)  # type: ignore[arg-type]

    monkeypatch.setattr(Profiles, "compare", held)
    write_snapshot(data_dir, TS + 600, export_body([row("203.0.113.1", agent="/Knots:1/")]))

    async def switched() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["snapshot_timestamp"] == TS + 600)

    try:
        await eventually(switched)
        asked = asyncio.ensure_future(client.get("/api/profile?address=203.0.113.1:8333"))
        done, _ = await asyncio.wait([asked], timeout=1)
        assert not done, "a profile answered before the crawl's changes were in"
    finally:
        gate.set()
    answer = await (await asked).json()
    assert [(c["crawl"], c["to"]) for c in answer["changes"]] == [(TS + 600, "/Knots:1/")]
