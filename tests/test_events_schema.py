"""The OpenAPI document describes each event ``/api/events`` sends: every event read from
a real stream over a real socket matches the schema of its kind, data included."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema_rs

from crawldash.app import NETWORKS
from crawldash.web.events import QUEUE_SIZE
from crawldash.web.schema.events import EVENT_KINDS

from .conftest import Serve, until_served, watching
from .factories import export_body, rows, write_snapshot, write_status
from .process import PATIENCE
from .test_events import dechunk, subscribe

TS = 1_700_000_000


async def read_fields(stream: asyncio.StreamReader) -> dict[str, str]:
    """The next event's fields as an EventSource reads them: blocks with no data (the
    retry line) and comments (the heartbeat) are not events."""
    fields: dict[str, str] = {}
    while True:
        line = (await stream.readline()).decode().rstrip("\n")
        if line == "":
            if "data" in fields:
                return fields
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


async def test_every_event_sent_is_one_the_document_describes(serve: Serve, data_dir: Path):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_status(data_dir, state="running", queue_size=3)
    client = await serve()
    await until_served(client, TS)
    await watching(client)
    document = await (await client.get("/api/openapi.json")).json()
    answer = document["paths"]["/api/events"]["get"]["responses"]["200"]
    schema = answer["content"]["text/event-stream"]["schema"]
    kinds: dict[str, Any] = {s["properties"]["event"]["const"]: s for s in schema["oneOf"]}
    assert set(kinds) == set(EVENT_KINDS) == {"snapshot", "status"}
    event_validator = jsonschema_rs.validator_for(schema)
    data_validators = {
        kind: jsonschema_rs.validator_for(described["properties"]["data"]["contentSchema"])
        for kind, described in kinds.items()
    }

    reader, writer = await subscribe(client)
    stream = await dechunk(reader)
    events = [await read_fields(stream) for _ in range(2)]  # the current snapshot and status
    write_snapshot(data_dir, TS + 600, export_body(rows(5)))
    events.append(await asyncio.wait_for(read_fields(stream), PATIENCE))  # the new snapshot's
    events.append(await asyncio.wait_for(read_fields(stream), PATIENCE))  # and the status after it
    writer.close()

    assert [event["event"] for event in events] == ["snapshot", "status", "snapshot", "status"]
    for event in events:
        event_validator.validate(event)
        data = json.loads(event["data"])
        data_validators[event["event"]].validate(data)
        other = "status" if event["event"] == "snapshot" else "snapshot"
        assert not data_validators[other].is_valid(data)  # each kind is told apart
    assert json.loads(events[2]["data"])["timestamp"] == TS + 600
    numbers = [int(event["id"]) for event in events]
    assert numbers == sorted(numbers)
    assert not event_validator.is_valid({"id": "9", "event": "snapshot"})  # data is required
    assert not event_validator.is_valid({"id": "9", "event": "other", "data": "{}"})


async def test_a_kind_the_document_does_not_describe_is_not_sent(serve: Serve, data_dir: Path):
    write_snapshot(data_dir, TS, export_body(rows(2)))
    client = await serve()
    await until_served(client, TS)
    broadcaster = client.app[NETWORKS][0].events
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_SIZE)
    broadcaster.subscribers.add(queue)  # a subscriber, as the handler adds one
    broadcaster.publish("other")
    assert queue.empty()
    broadcaster.publish("status")
    frame = queue.get_nowait()
    assert frame is not None
    assert b"\nevent: status\ndata: {" in frame
