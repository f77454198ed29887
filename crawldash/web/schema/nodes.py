"""The OpenAPI operations of ``/api/breakdown`` and ``/api/nodes``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...crawl.address import NETWORKS
from ...crawl.breakdown import BY, SERVICE_NAMES
from ...live.snapshot.breakdown import DEFAULT_ROWS, MAX_ROWS
from ...live.snapshot.catalog import SORTS

Json = Callable[[dict[str, Any], str], dict[str, Any]]
Errors = Callable[..., dict[str, Any]]


def parameter(
    name: str, description: str, schema: dict[str, Any], where: str = "query"
) -> dict[str, Any]:
    """An operation's parameter: in the query (optional) or in the path (required)."""
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": schema,
    }


def network_operations(
    breakdown: dict[str, Any], node: dict[str, Any], json: Json, errors: Errors
) -> dict[str, Any]:
    """``json(schema, description)`` and ``errors(*statuses, e400=...)`` as the document
    builds its other operations."""
    listed = {"allOf": [{"type": "object", "properties": {"address": {"type": "string"}}}, node]}
    page = {
        "type": "object",
        "properties": {
            "timestamp": {"type": "integer"},
            "count": {"type": "integer"},
            "next": {"type": ["string", "null"]},
            "previous": {"type": ["string", "null"]},
            "results": {"type": "array", "items": listed},
        },
        "required": ["timestamp", "count", "next", "previous", "results"],
    }
    text = {"schema": {"type": "string"}}
    nodes_ok = json(page, "A page of the matching nodes, or every match as CSV or addresses.")
    nodes_ok["content"] |= {"text/csv": text, "text/plain": text}
    limit = "a whole number from 1 to {}"
    filters = [
        parameter(
            "network", "ipv4, ipv6, onion, i2p or cjdns", {"type": "string", "enum": list(NETWORKS)}
        ),
        parameter(
            "country",
            "a two-letter country code, any case",
            {"type": "string", "pattern": "^[A-Za-z]{2}$"},
        ),
        parameter(
            "asn",
            "AS and a number, e.g. AS3320",
            {"type": "string", "pattern": "^(?:[Aa][Ss])?[0-9]{1,10}$"},
        ),
        parameter(
            "user_agent", "a part of the user agent, any case", {"type": "string", "maxLength": 200}
        ),
        parameter("version", "a protocol version, e.g. 70016", {"type": "integer", "minimum": 1}),
        parameter(
            "services",
            "a service bit the node sets",
            {"type": "string", "enum": list(SERVICE_NAMES)},
        ),
        parameter(
            "q",
            "a part of the address, hostname, user agent or organisation",
            {"type": "string", "maxLength": 200},
        ),
        parameter(
            "sort",
            "the order; - before a key for descending",
            {"type": "string", "enum": [*SORTS, *(f"-{s}" for s in SORTS)], "default": "address"},
        ),
        parameter("page", "the page, from 1", {"type": "integer", "minimum": 1, "default": 1}),
        parameter(
            "limit",
            "nodes per page, " + limit.format(1000),
            {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
        ),
        parameter(
            "format",
            "json (paged), csv or addresses (one host:port a line; both every match)",
            {"type": "string", "enum": ["json", "csv", "addresses"], "default": "json"},
        ),
    ]
    return {
        "/api/breakdown": {
            "get": {
                "summary": "The latest crawl's nodes counted by one key, most first; an 'other' "
                "row for the rest; nodes without a value count under null.",
                "parameters": [
                    parameter("by", "what to count by", {"type": "string", "enum": list(BY)})
                    | {"required": True},
                    parameter(
                        "limit",
                        "rows before 'other', " + limit.format(MAX_ROWS),
                        {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_ROWS,
                            "default": DEFAULT_ROWS,
                        },
                    ),
                ],
                "responses": {
                    "200": json(breakdown, "The rows, sorted by nodes descending then value."),
                    **errors(400, 406, 503, e400="`invalid_by` or `invalid_limit`."),
                },
            }
        },
        "/api/nodes": {
            "get": {
                "summary": "The latest crawl's nodes that match every filter given.",
                "parameters": filters,
                "responses": {
                    "200": nodes_ok,
                    **errors(400, 503, e400="`invalid_<parameter>`, naming the parameter."),
                },
            }
        },
    }
