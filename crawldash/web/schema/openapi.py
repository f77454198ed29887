"""The OpenAPI 3.1 document, generated from the msgspec types that encode the responses."""

from __future__ import annotations

from typing import Any

import msgspec

from ... import __version__
from ...crawl.address import MAX_ADDRESS_LENGTH
from ...live.answers.propagation import InvBody, InvList, LatencyBody
from ...models import (
    ApiSnapshot,
    BreakdownBody,
    ChangesBody,
    CheckBody,
    CountsPoint,
    ErrorBody,
    HistoryPoint,
    MatchPoint,
    NetworkPoint,
    NetworksBody,
    Node,
    PresenceRun,
    ProfileBody,
    StatusBody,
    UniqueBody,
    V1NodeList,
    V1NodeStatus,
    V1SnapshotList,
)
from ...models.api import LeaderboardList, LeaderboardRow
from .checknode import checknode_operations
from .events import events_response
from .history import history_operations
from .map import map_operations
from .nodes import network_operations
from .presence import presence_operations
from .v1 import leaderboard_operations, propagation_operations, v1_operations

REF = "#/components/schemas/{name}"
ERRORS = {
    400: "A query parameter is malformed: `invalid_limit`, `invalid_by`, `missing_address` or "
    "`invalid_address`.",
    404: "`not_found`: no such path.",
    405: "`method_not_allowed`: only GET and HEAD are answered; see the Allow header.",
    406: "`not_acceptable`: Accept-Encoding refuses br, gzip and identity alike.",
    503: "`no_snapshot`: no crawl snapshot has been loaded yet.",
}
CACHE_HEADERS = {
    name: {"schema": {"type": "string"}, "description": text}
    for name, text in {
        "ETag": "Strong validator; send it back in If-None-Match to get 304.",
        "Last-Modified": "When the data last changed; If-Modified-Since is honoured.",
        "Cache-Control": "How long a cache may keep the answer.",
    }.items()
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": CACHE_HEADERS,
        "content": {"application/json": {"schema": schema}},
    }


def _errors(*statuses: int, **described: str) -> dict[str, Any]:
    """Error answers by status; ``described`` (as ``e503="..."``) replaces a description."""
    error = {"$ref": REF.format(name="ErrorBody")}
    return {
        str(status): {
            "description": described.get(f"e{status}") or ERRORS[status],
            "content": {"application/json": {"schema": error}},
        }
        for status in statuses
    }


def _operation(
    summary: str,
    ok: dict[str, Any],
    errors: tuple[int, ...],
    described: dict[str, str] | None = None,
    **extra: Any,
) -> Any:
    responses = {"200": ok, **_errors(*errors, **(described or {}))}
    return {"get": {"summary": summary, "responses": responses, **extra}}


def _text(description: str, *media_types: str) -> dict[str, Any]:
    text = {"schema": {"type": "string"}}
    return {"description": description, "content": dict.fromkeys(media_types, text)}


HEALTH = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok", "ready"]},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["status"],
}


def _health(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": HEALTH}}}


def operations_beside_the_api(networks: dict[str, Any]) -> dict[str, Any]:
    """The networks served, the event stream, the page, metrics, health and this document
    itself."""
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "description": "A file of the page: app.js, style.css, vendor/uPlot.iife.min.js, "
        "vendor/uPlot.min.css; any other is 404 not_found.",
        "schema": {"type": "string"},
    }
    node = {
        "name": "node",
        "in": "path",
        "required": True,
        "description": "ADDRESS-PORT, as bitnodes.io's node routes take it (IPv6 without "
        "brackets).",
        "schema": {"type": "string"},
    }
    return {
        "/api/networks": _operation(
            "The networks this crawldash serves, each under /n/NAME/ (the first also at /), "
            "with its newest crawl and its freshness.",
            _json(networks, "The networks, in the order they were named."),
            (),
        ),
        "/api/events": _operation(
            "Server-Sent Events: the current snapshot and status, then each change, and a "
            "heartbeat comment every 15 s. The stream does not end; HEAD gives its headers.",
            events_response(),
            (429, 503),
            {
                "e429": "`too_many_streams`: this client already has "
                "--max-subscribers-per-client streams open.",
                "e503": "`too_many_subscribers`: --max-subscribers are connected; retry later.",
            },
            operationId="streamEvents",
        ),
        "/api/openapi.json": _operation(
            "This document.", _json({"type": "object"}, "OpenAPI 3.1."), ()
        ),
        "/": _operation("The dashboard page.", _text("The page.", "text/html"), ()),
        "/nodes/{node}/": _operation(
            "A node's page: its state and why, its presence, latency and changes.",
            _text("The page.", "text/html"),
            (400,),
            {"e400": "`invalid_address`: the node is not ADDRESS-PORT."},
            parameters=[node],
        ),
        "/static/{name}": _operation(
            "A file the page loads.",
            _text("The file.", "text/javascript", "text/css"),
            (404,),
            {"e404": "`not_found`: no such file."},
            parameters=[name],
        ),
        "/metrics": _operation(
            "Prometheus metrics.", _text("The Prometheus text format 0.0.4.", "text/plain"), ()
        ),
        "/healthz": _operation(
            "Liveness: the process and its file watcher run.",
            _health("ok, with warnings that need an operator's eye, if any"),
            (503,),
            {"e503": "`watcher_down`: the file watcher is not running."},
        ),
        "/readyz": _operation(
            "Readiness: a fresh snapshot is served and the crawler is not stuck.",
            _health("ready"),
            (503,),
            {"e503": "`no_data_dir`, `no_snapshot`, `stale` or `crawler_stuck`, and why."},
        ),
    }


def build_openapi(server: str = "/") -> dict[str, Any]:
    """The document; ``server`` is where its paths are reached (``servers``): the public
    URL and network prefix, or the prefix alone, so that a client or a viewer given the
    document finds the service behind a proxy or under ``/n/NAME/``."""
    types = [
        ApiSnapshot,
        StatusBody,
        HistoryPoint,
        NetworkPoint,
        CheckBody,
        ErrorBody,
        BreakdownBody,
        Node,
        PresenceRun,
        ChangesBody,
        V1SnapshotList,
        V1NodeStatus,
        V1NodeList,
        InvList,
        InvBody,
        LatencyBody,
        CountsPoint,
        MatchPoint,
        UniqueBody,
        NetworksBody,
        ProfileBody,
        LeaderboardList,
        LeaderboardRow,
    ]
    schemas, components = msgspec.json.schema_components(types, ref_template=REF)
    snapshot, status, point, network_point, check, _, breakdown, node, run, changes = schemas[:10]
    v1_list, v1_status, v1_nodes, inv_list, inv, latency = schemas[10:16]
    counts_point, match_point, unique, networks, profile, board, ranking = schemas[16:]
    limit = {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": "The most recent N crawls, oldest first. A larger N than is held "
        "returns every point. Anything but a whole number of at least 1 (or a repeated "
        "limit) is 400 invalid_limit.",
        "schema": {"type": "integer", "minimum": 1, "default": 144},
    }
    address = {
        "name": "address",
        "in": "query",
        "required": True,
        "description": "host:port. Hosts: dotted IPv4, bracketed IPv6 in any spelling "
        "(compared canonically), Tor v3 .onion (any case), .b32.i2p; ports 1-65535. Missing "
        "or empty is 400 missing_address; DNS names, unbracketed IPv6, zone ids, values "
        f"over {MAX_ADDRESS_LENGTH} characters and a repeated address are 400 invalid_address.",
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ADDRESS_LENGTH,
            "pattern": r"^(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|"
            r"[A-Za-z2-7]{56}\.[Oo][Nn][Ii][Oo][Nn]|[A-Za-z2-7]{52}\.[Bb]32\.[Ii]2[Pp])"
            r":\d{1,5}$",
        },
    }
    map_paths, map_components = map_operations(_json, _errors, REF)
    check_paths, check_components = checknode_operations(REF)
    paths = {
        "/api/snapshot": _operation(
            "The latest crawl in the bitnodes API v1 shape (br, gzip or identity).",
            _json(snapshot, "The snapshot; keys are canonical addresses."),
            (406, 503),
        ),
        "/api/status": _operation(
            "The crawler's state and how fresh the data is.",
            _json(status, "The status; times in unix seconds, durations in seconds."),
            (),
        ),
        **history_operations(
            [point, network_point, counts_point, match_point], unique, limit, _json, _errors
        ),
        "/api/check": _operation(
            "Whether a peer is in the latest snapshot, and in how many of the crawls held.",
            _json(check, "The answer; node is null when the peer is absent."),
            (400, 503),
            parameters=[address],
        ),
        **network_operations(breakdown, node, _json, _errors),
        **map_paths,
        **presence_operations(run, changes, profile, address, limit, _json, _errors),
        **v1_operations(v1_list, snapshot, v1_status, v1_nodes, _json, _errors),
        **propagation_operations(inv_list, inv, latency, _json, _errors),
        **leaderboard_operations(board, ranking, _json, _errors),
        **check_paths,
        **operations_beside_the_api(networks),
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "crawldash",
            "version": __version__,
            "description": "Read-only JSON answers about a network crawler's output. "
            "Unknown query parameters are ignored. Every error crawldash answers has the "
            "ErrorBody shape; the HTTP layer answers a request it cannot parse (a request "
            "line or header over 8190 bytes, more than 64 headers, an unknown method) "
            "itself, with a plain-text 400.",
        },
        "servers": [{"url": server}],
        "paths": paths,
        "components": {"schemas": {**components, **map_components, **check_components}},
    }
