"""The OpenAPI operations of ``/api/presence``, ``/api/changes`` and ``/api/profile``."""

from __future__ import annotations

from typing import Any

from .nodes import Errors, Json


def presence_operations(
    run: dict[str, Any],
    changes: dict[str, Any],
    profile: dict[str, Any],
    address: dict[str, Any],
    limit: dict[str, Any],
    json: Json,
    errors: Errors,
) -> dict[str, Any]:
    """``address`` and ``limit``: the parameters as ``/api/check`` and ``/api/history``
    take them."""
    since = {
        "name": "since",
        "in": "query",
        "required": False,
        "description": "Compare the latest crawl with the crawl held at or just before this "
        "unix time, instead of the crawl before the latest. 400 invalid_since if it is not "
        "a whole number of seconds or no crawl at or before it is held.",
        "schema": {"type": "integer", "minimum": 0},
    }
    runs = {"type": "array", "items": run}
    return {
        "/api/presence": {
            "get": {
                "summary": "An address's presence in the crawls held: runs of consecutive "
                "crawls with it (present true) and without it (present false), oldest "
                "first. Only crawls whose membership is known count (points restored from "
                "an index written before crawldash kept membership have counts only).",
                "parameters": [address, {**limit, "description": "The last N crawls held."}],
                "responses": {
                    "200": json(
                        runs,
                        "The runs, oldest first; an address never seen is one run with "
                        "present false; no crawl held gives [].",
                    ),
                    **errors(400, e400="`missing_address`, `invalid_address` or `invalid_limit`."),
                },
            }
        },
        "/api/profile": {
            "get": {
                "summary": "What the crawls said about a node, and when that changed: each "
                "difference in user agent, protocol version, services, country or provider "
                "between two crawls served one after the other, newest first (since: the "
                "first crawl compared, null before a second is served).",
                "parameters": [address],
                "responses": {
                    "200": json(profile, "The changes; an address never seen has none."),
                    **errors(400, e400="`missing_address` or `invalid_address`."),
                },
            }
        },
        "/api/changes": {
            "get": {
                "summary": "Which addresses joined and left between an earlier crawl and "
                "the latest. from is null (and the lists empty) when no earlier crawl's "
                "membership is known.",
                "parameters": [since],
                "responses": {
                    "200": json(changes, "Addresses sorted; counts by network."),
                    **errors(400, 503, e400="`invalid_since`."),
                },
            }
        },
    }
