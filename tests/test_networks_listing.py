"""``/api/networks`` is encoded at most once a second (it holds ages), yet names a new
crawl from its switch on, as every other endpoint does: within one second, a listing made
before the switch is not sent after it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from crawldash.web import networks

from .conftest import Serve, json_of, until_served
from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000


async def test_the_listing_names_a_new_crawl_within_the_same_second(
    serve: Serve, data_dir, monkeypatch: pytest.MonkeyPatch
):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    await until_served(client, TS)
    # The listing's clock stands still: every answer below is made in one second.
    monkeypatch.setattr(networks, "time", SimpleNamespace(time=lambda: TS + 900.5))
    listed = await json_of(client, "/api/networks")
    assert listed["networks"][0]["snapshot_timestamp"] == TS

    write_snapshot(data_dir, TS + 600, export_body(rows(6)))
    await until_served(client, TS + 600)
    listed = await json_of(client, "/api/networks")
    assert listed["networks"][0]["snapshot_timestamp"] == TS + 600
    assert listed["networks"][0]["nodes"] == 6
