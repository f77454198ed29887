"""The OpenAPI 3.1 document, generated from the msgspec types that encode the responses."""

from __future__ import annotations

from typing import Any

import msgspec

from .. import __version__
from ..crawl.address import MAX_ADDRESS_LENGTH
from ..models import ApiSnapshot, CheckBody, ErrorBody, HistoryPoint, NetworkPoint, StatusBody

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


def _errors(*statuses: int) -> dict[str, Any]:
    error = {"$ref": REF.format(name="ErrorBody")}
    return {
        str(status): {
            "description": ERRORS[status],
            "content": {"application/json": {"schema": error}},
        }
        for status in statuses
    }


def _operation(summary: str, ok: dict[str, Any], errors: tuple[int, ...], **extra: Any) -> Any:
    return {"get": {"summary": summary, "responses": {"200": ok, **_errors(*errors)}, **extra}}


def build_openapi() -> dict[str, Any]:
    types = [ApiSnapshot, StatusBody, HistoryPoint, NetworkPoint, CheckBody, ErrorBody]
    (snapshot, status, point, network_point, check, _), components = msgspec.json.schema_components(
        types, ref_template=REF
    )
    history = {"type": "array", "items": {"anyOf": [point, network_point]}}
    limit = {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": "The most recent N crawls, oldest first. A larger N than is held "
        "returns every point. Anything but a whole number of at least 1 (or a repeated "
        "limit) is 400 invalid_limit.",
        "schema": {"type": "integer", "minimum": 1, "default": 144},
    }
    by = {
        "name": "by",
        "in": "query",
        "required": False,
        "description": "by=network adds to each point a networks object (ipv4, ipv6, onion, "
        "i2p, cjdns; CJDNS is IPv6 in fc00::/8). Points counted before this existed stay "
        "{timestamp, reachable}. Any other value, or a repeated by, is 400 invalid_by.",
        "schema": {"type": "string", "enum": ["network"]},
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
        "/api/history": _operation(
            "One point per crawl, in ascending time order (br, gzip or identity).",
            _json(history, "The most recent points, oldest first."),
            (400, 406),
            parameters=[limit, by],
        ),
        "/api/check": _operation(
            "Whether a peer is in the latest snapshot.",
            _json(check, "The answer; node is null when the peer is absent."),
            (400, 503),
            parameters=[address],
        ),
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "crawldash",
            "version": __version__,
            "description": "Read-only JSON answers about a network crawler's output. "
            "Unknown query parameters are ignored. Every error has the ErrorBody shape.",
        },
        "paths": paths,
        "components": {"schemas": components},
    }
