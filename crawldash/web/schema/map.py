"""The OpenAPI operation of ``/api/map``, and the schemas of its answer."""

from __future__ import annotations

from typing import Any

import msgspec

from ...live.snapshot.map import DECIMALS, MapBody
from ..queries import MAX_MATCH
from .nodes import Errors, Json, parameter


def map_operations(json: Json, errors: Errors, ref: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``/api/map``'s operation and the component schemas it refers to.

    Args:
        json: ``json(schema, description)``, a 200 answer as the document builds them.
        errors: ``errors(*statuses, e400=...)``, its error answers.
        ref: the template of a reference to a component schema, ``{name}`` in it.

    Returns:
        The paths, and the components to add to the document's.
    """
    (body,), components = msgspec.json.schema_components([MapBody], ref_template=ref)
    match = parameter(
        "match",
        "count, in each group, the nodes whose user agent holds this text, in any case "
        f"(1 to {MAX_MATCH} characters): each group gets `matched`, and the answer `match` "
        "and `matched`",
        {"type": "string", "minLength": 1, "maxLength": MAX_MATCH},
    )
    operation = {
        "summary": "The latest crawl's nodes on a map: grouped by their coordinates rounded "
        f"to {DECIMALS} decimal place, most nodes first, with each group's count by network "
        "and its most common country and city. Nodes with no place (onion, i2p and cjdns; "
        "rows without usable coordinates; rows at 0.0, 0.0 with no country) are counted in "
        "not_mapped, by reason. countries counts every node with a country. Built once "
        "per crawl (br, gzip or identity).",
        "parameters": [match],
        "responses": {
            "200": json(body, "The groups, and the nodes not mapped."),
            **errors(400, 406, 503, e400="`invalid_match`."),
        },
    }
    return {"/api/map": {"get": operation}}, components
