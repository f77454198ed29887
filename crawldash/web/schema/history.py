"""The OpenAPI operations of ``/api/history`` (every shape) and ``/api/unique``."""

from __future__ import annotations

from typing import Any

from ...crawl.breakdown import BY
from ...live.answers.trends import DEFAULT_TOP, MAX_TOP
from ..queries import DEFAULT_WINDOW, HISTORY_FORMATS, MAX_MATCH, MAX_WINDOW, MIN_WINDOW
from .nodes import Errors, Json, parameter

ERRORS_400 = "`invalid_limit`, `invalid_by`, `invalid_top`, `invalid_match` or `invalid_format`."


def history_operations(
    points: list[dict[str, Any]],
    unique: dict[str, Any],
    limit: dict[str, Any],
    json: Json,
    errors: Errors,
) -> dict[str, Any]:
    """``/api/history`` and ``/api/unique``.

    Args:
        points: the schemas of a history point: plain, by network, with counts by value,
            with a matched count.
        unique: the schema of ``/api/unique``'s answer.
        limit: the ``limit`` parameter, shared with ``/api/presence``.
        json: ``json(schema, description)``, a 200 answer, as the document builds them.
        errors: ``errors(*statuses, e400=...)``, error answers.

    Returns:
        The two paths' operations.
    """
    by = parameter(
        "by",
        "network adds to each point a networks object (ipv4, ipv6, onion, i2p, cjdns; CJDNS "
        "is IPv6 in fc00::/8). Any other key of /api/breakdown adds a counts object: the "
        "newest crawl's top values (by nodes, then value), each crawl's nodes with each (0 "
        "where it had none), unknown for nodes without a value and other for the rest (not "
        "for services: a node counts once per bit it sets). Points counted before "
        "crawldash kept these stay {timestamp, reachable}. Any other value, or a repeated "
        "by, is 400 invalid_by.",
        {"type": "string", "enum": list(BY)},
    )
    top = parameter(
        "top",
        f"with a key of /api/breakdown: how many of the newest crawl's values are shown, "
        f"1 to {MAX_TOP}; else 400 invalid_top.",
        {"type": "integer", "minimum": 1, "maximum": MAX_TOP, "default": DEFAULT_TOP},
    )
    match = parameter(
        "match",
        "with by=user_agent: each point carries matched, its nodes whose user agent holds "
        f"this text, in any case (1 to {MAX_MATCH} characters), instead of counts. Empty, "
        "longer, repeated or with any other by: 400 invalid_match.",
        {"type": "string", "minLength": 1, "maxLength": MAX_MATCH},
    )
    form = parameter(
        "format",
        "json, or csv: one row per crawl (timestamp, reachable, then a column per network, "
        "value or matched; empty cells for a point without them), named "
        "crawldash-history-<by>.csv. Else 400 invalid_format.",
        {"type": "string", "enum": list(HISTORY_FORMATS), "default": "json"},
    )
    window = parameter(
        "window",
        f"seconds, {MIN_WINDOW} to {MAX_WINDOW} (default a day); else 400 invalid_window.",
        {
            "type": "integer",
            "minimum": MIN_WINDOW,
            "maximum": MAX_WINDOW,
            "default": DEFAULT_WINDOW,
        },
    )
    history = json(
        {"type": "array", "items": {"anyOf": points}}, "The most recent points, oldest first."
    )
    history["content"]["text/csv"] = {"schema": {"type": "string"}}
    return {
        "/api/history": {
            "get": {
                "summary": "One point per crawl, in ascending time order (br, gzip or "
                "identity), by network or by a key of the breakdowns, or as CSV.",
                "parameters": [limit, by, top, match, form],
                "responses": {"200": history, **errors(400, 406, e400=ERRORS_400)},
            }
        },
        "/api/unique": {
            "get": {
                "summary": "Distinct addresses in the crawls held in (to - window, to], to "
                "being the newest crawl; only crawls whose membership is known count.",
                "parameters": [window],
                "responses": {
                    "200": json(unique, "The window, its crawls and their distinct nodes."),
                    **errors(400, e400="`invalid_window`."),
                },
            }
        },
    }
