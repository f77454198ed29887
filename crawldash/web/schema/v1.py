"""The OpenAPI operations of the bitnodes.io API v1 routes."""

from __future__ import annotations

from typing import Any

from ...live.snapshot.past_crawls import FIELDS
from ..v1.propagation import NOT_SERVED
from ..v1.queries import MAX_PAGE, V1_DEFAULT_LIMIT, V1_MAX_LIMIT
from .nodes import Errors, Json, parameter

PAGE = parameter(
    "page",
    "The page, from 1. Anything else is 400 invalid_page.",
    {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
)
LIMIT = parameter(
    "limit",
    f"Rows per page, 1 to {V1_MAX_LIMIT}. Anything else is 400 invalid_limit.",
    {"type": "integer", "minimum": 1, "maximum": V1_MAX_LIMIT, "default": V1_DEFAULT_LIMIT},
)
FIELD = parameter(
    "field",
    "coordinates: the crawl's unique [latitude, longitude] pairs; user_agents: its unique "
    "user agents; both sorted, after timestamp, total_nodes and latest_height. Anything "
    "else is 400 invalid_field.",
    {"type": "string", "enum": list(FIELDS)},
)


def v1_operations(
    list_of: dict[str, Any],
    snapshot: dict[str, Any],
    status: dict[str, Any],
    node_list: dict[str, Any],
    json: Json,
    errors: Errors,
) -> dict[str, Any]:
    """The four routes, from the schemas of their bodies."""
    timestamp = parameter(
        "timestamp",
        "A crawl's unix time, as listed by /api/v1/snapshots/, or latest.",
        {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "enum": ["latest"]}]},
        "path",
    )
    node = parameter(
        "node",
        "ADDRESS-PORT, bitnodes.io's form: the port after the last -, IPv6 without brackets "
        "(or with), e.g. 203.0.113.5-8333 or 2001:db8::1-8333. Else 400 invalid_address.",
        {"type": "string", "minLength": 3},
        "path",
    )
    summary = {"type": "object", "required": ["timestamp", "total_nodes", "latest_height"]}
    not_found = "`snapshot_not_found`: no usable crawl file of that time is in the data folder."
    return {
        "/api/v1/snapshots/": {
            "get": {
                "summary": "bitnodes API v1: the crawls whose files are in the data folder "
                "and that have been counted, newest first; next and previous are absolute URLs.",
                "parameters": [PAGE, LIMIT],
                "responses": {
                    "200": json(list_of, "One page of the list."),
                    **errors(400, e400="`invalid_page` or `invalid_limit`."),
                },
            }
        },
        "/api/v1/snapshots/{timestamp}/": {
            "get": {
                "summary": "bitnodes API v1: one crawl. latest is the same bytes as "
                "/api/snapshot; an older crawl is sent with Cache-Control immutable.",
                "parameters": [timestamp, FIELD],
                "responses": {
                    "200": json({"anyOf": [snapshot, summary]}, "The crawl, or its summary."),
                    **errors(400, 404, 406, 503, e400="`invalid_field`.", e404=not_found),
                },
            }
        },
        "/api/v1/nodes/": {
            "get": {
                "summary": "bitnodes API v1: the reachable nodes of the latest crawl, by "
                "address; country filters by code, q by a substring of address, user agent, "
                "hostname or organisation (any case).",
                "parameters": [
                    PAGE,
                    LIMIT,
                    parameter(
                        "country",
                        "A two-letter country code.",
                        {"type": "string", "pattern": "^[A-Za-z]{2}$"},
                    ),
                    parameter(
                        "q",
                        "Text to look for, up to 200 characters.",
                        {"type": "string", "maxLength": 200},
                    ),
                ],
                "responses": {
                    "200": json(node_list, "One page of the nodes."),
                    **errors(
                        400,
                        503,
                        e400="`invalid_page`, `invalid_limit`, `invalid_country` or `invalid_q`.",
                    ),
                },
            }
        },
        "/api/v1/nodes/{node}/": {
            "get": {
                "summary": "bitnodes API v1 node status: UP with the 13 fields when the node "
                "is in the latest crawl, else DOWN with data null; and its presence.",
                "parameters": [node],
                "responses": {
                    "200": json(status, "The node's status."),
                    **errors(400, 503, e400="`invalid_address`."),
                },
            }
        },
    }


def propagation_operations(
    inv_list: dict[str, Any],
    inv: dict[str, Any],
    latency: dict[str, Any],
    json: Json,
    errors: Errors,
) -> dict[str, Any]:
    """``/api/v1/inv/``, ``/api/v1/inv/{inv_hash}/``, ``/latency/``, and the bitnodes.io
    routes not served."""
    node = parameter(
        "node",
        "ADDRESS-PORT, as for node status. Else 400 invalid_address.",
        {"type": "string", "minLength": 3},
        "path",
    )
    block = parameter(
        "inv_hash",
        "A block hash, 64 hexadecimal digits. Else 400 invalid_hash.",
        {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"},
        "path",
    )
    operations = {
        "/api/v1/inv/": {
            "get": {
                "summary": "bitnodes API v1: the blocks whose propagation the bitnodes bridge "
                "keeps, newest first, with crawldash's additions first_seen (ms), nodes, 50% "
                "and 90% (ms); empty without --propagation-dir.",
                "parameters": [PAGE, LIMIT],
                "responses": {
                    "200": json(inv_list, "One page of the list."),
                    **errors(400, e400="`invalid_page` or `invalid_limit`."),
                },
            }
        },
        "/api/v1/inv/{inv_hash}/": {
            "get": {
                "summary": "bitnodes API v1: how fast a block reached the network: its first "
                "10 announcements and the delays after the earliest, in ms.",
                "parameters": [block],
                "responses": {
                    "200": json(inv, "The block's propagation."),
                    **errors(
                        400,
                        404,
                        e400="`invalid_hash`.",
                        e404="`inv_not_found`: no propagation of that block is kept.",
                    ),
                },
            }
        },
        "/api/v1/nodes/{node}/latency/": {
            "get": {
                "summary": "bitnodes API v1 node latency: mean round-trip time (ms) per 10 "
                "minutes over a day, per hour over a week, per 6 hours over 30 days; -1 "
                "where the node was unreachable, 0 where it was reachable but gave no "
                "round-trip time or where the bridge was not looking.",
                "parameters": [node],
                "responses": {
                    "200": json(latency, "The node's latency."),
                    **errors(
                        400,
                        404,
                        e400="`invalid_address`.",
                        e404="`node_not_found`: no latency of that node is kept.",
                    ),
                },
            }
        },
    }
    for path, route in NOT_SERVED.items():
        parameters = [node] if "{node}" in path else []
        operations[path] = {
            "get": {
                "summary": f"bitnodes.io's {route}: not served by crawldash.",
                "parameters": parameters,
                "responses": errors(404, e404="`not_served`: crawldash does not serve it."),
            }
        }
    return operations


def leaderboard_operations(
    board: dict[str, Any], ranking: dict[str, Any], json: Json, errors: Errors
) -> dict[str, Any]:
    """``/api/v1/nodes/leaderboard/`` and a node's ranking."""
    node = parameter(
        "node",
        "ADDRESS-PORT, as for node status. Else 400 invalid_address.",
        {"type": "string", "minLength": 3},
        "path",
    )
    return {
        "/api/v1/nodes/leaderboard/": {
            "get": {
                "summary": "bitnodes API v1 leaderboard: the reachable IPv4/IPv6 nodes of the "
                "newest crawl by Peer Index, highest first (equal PIX, equal rank); q filters "
                "by a part of the address or user agent (any case). Built once per crawl; the "
                "indexes in not_measured are 0. docs/api.md says what feeds each index.",
                "parameters": [
                    PAGE,
                    LIMIT,
                    parameter(
                        "q",
                        "Text to look for, up to 200 characters.",
                        {"type": "string", "maxLength": 200},
                    ),
                ],
                "responses": {
                    "200": json(board, "One page of the leaderboard."),
                    **errors(400, 503, e400="`invalid_page`, `invalid_limit` or `invalid_q`."),
                },
            }
        },
        "/api/v1/nodes/leaderboard/{node}/": {
            "get": {
                "summary": "bitnodes API v1 node ranking: the node's row of the leaderboard.",
                "parameters": [node],
                "responses": {
                    "200": json(ranking, "The node's indexes, PIX and rank."),
                    **errors(
                        400,
                        404,
                        503,
                        e400="`invalid_address`.",
                        e404="`node_not_ranked`: the leaderboard does not rank the node.",
                    ),
                },
            }
        },
    }
