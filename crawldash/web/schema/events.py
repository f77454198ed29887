"""The OpenAPI description of ``/api/events``: each event the stream sends, by kind.

OpenAPI 3.1 has no word for the items of a stream (3.2 adds ``itemSchema``), so the
``schema`` of ``text/event-stream`` describes one event, as schemathesis and other tools
read it for 3.0 and 3.1: an object of the event's fields as an EventSource parses them,
``id``, ``event`` and ``data``, each a string. ``data`` is JSON, described with
``contentMediaType`` and ``contentSchema``, one kind of event at a time. Comments (the
heartbeat) and the ``retry`` line carry no data, so they are not events.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...models import Base, SnapshotEvent, StatusBody

# Every kind of event the stream sends, with the type its data is encoded from, in the
# order a new subscriber is sent the current one of each.
EVENT_KINDS: dict[str, type[Base]] = {"snapshot": SnapshotEvent, "status": StatusBody}
_WHEN = {
    "snapshot": "A new snapshot is served: its timestamp, node count and consensus height.",
    "status": "The status changed: the /api/status object.",
}
_REF = "#/components/schemas/{name}"


def event_schemas() -> list[dict[str, Any]]:
    """One schema per kind of event, as an EventSource parses it.

    Returns:
        For each kind in ``EVENT_KINDS``, an object schema of ``id`` (the event's number,
        rising by one per event the server publishes), ``event`` (the kind) and ``data``
        (a JSON string whose ``contentSchema`` is the kind's type, inlined).
    """
    types = list(EVENT_KINDS.values())
    _, components = msgspec.json.schema_components(types, ref_template=_REF)
    schemas = []
    for kind, body in EVENT_KINDS.items():
        data = dict(components[body.__name__])
        data.pop("title", None)  # the type's name is crawldash's, not the event's
        schemas.append(
            {
                "title": f"{kind} event",
                "description": _WHEN[kind],
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": "^[0-9]+$"},
                    "event": {"const": kind},
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": data,
                    },
                },
                "required": ["id", "event", "data"],
            }
        )
    return schemas


def events_response() -> dict[str, Any]:
    """The ``200`` answer of ``/api/events``: a stream whose each event is one of
    ``event_schemas()``.

    Returns:
        An OpenAPI Response Object with the ``text/event-stream`` media type.
    """
    every_kind = ", ".join(EVENT_KINDS)
    return {
        "description": f"Server-Sent Events, each one of: {every_kind}. Its `schema` "
        "describes one event (OpenAPI 3.1 has no `itemSchema`); a `: heartbeat` comment "
        "comes when nothing else has for a while.",
        "content": {"text/event-stream": {"schema": {"oneOf": event_schemas()}}},
    }
