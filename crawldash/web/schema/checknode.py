"""The OpenAPI operation of ``POST /api/v1/checknode/`` (the live check), and the schema
of its answer."""

from __future__ import annotations

from typing import Any

import msgspec

from ...checknode.reply import CheckNodeBody
from ...crawl.address import MAX_ADDRESS_LENGTH

FIELDS = {
    "type": "object",
    "required": ["address", "port"],
    "properties": {
        "address": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ADDRESS_LENGTH,
            "description": "The node's IPv4 or IPv6 address (brackets optional), or a .onion "
            "(checked through the operator's Tor proxy). Host names are refused "
            "(host_name_not_allowed), as are addresses that are not public unicast "
            "(address_not_public) unless the operator allows their range back.",
        },
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    },
}
ERRORS = {
    400: "The request is wrong: `missing_address`, `invalid_address`, `missing_port`, "
    "`invalid_port`, `invalid_body`, or a target never connected to: "
    "`host_name_not_allowed`, `address_not_public`.",
    404: "`not_served`: the live check is off for this network (`--live-check`).",
    405: "`method_not_allowed`: only POST is answered here; see the Allow header.",
    413: "`payload_too_large`: the body is over 4096 bytes.",
    429: "`too_many_checks`: this client's checks of the last minute, or its checks under "
    "way, reached the limit; Retry-After says when to try again.",
    503: "`checks_busy`: as many checks as allowed are under way, or the node's host has had "
    "its checks for now; Retry-After says when to try again.",
}
RETRY_AFTER = {"Retry-After": {"schema": {"type": "string"}, "description": "Seconds to wait."}}


def checknode_operations(ref: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``/api/v1/checknode/``'s operation and the component schemas it refers to.

    Args:
        ref: the template of a reference to a component schema, ``{name}`` in it.

    Returns:
        The paths, and the components to add to the document's.
    """
    (body,), components = msgspec.json.schema_components([CheckNodeBody], ref_template=ref)
    error = {"$ref": ref.format(name="ErrorBody")}
    responses: dict[str, Any] = {
        "200": {
            "description": "The check's answer: a node that did not complete the handshake "
            "is a 200 too, with success false and the reason.",
            "content": {"application/json": {"schema": body}},
        }
    }
    for status, description in ERRORS.items():
        responses[str(status)] = {
            "description": description,
            "content": {"application/json": {"schema": error}},
            **({"headers": RETRY_AFTER} if status in (429, 503) else {}),
        }
    operation = {
        "summary": "Check a node now (bitnodes.io's Check node): a live Bitcoin version/verack "
        "handshake with the node named, once per address and port a minute (a repeat is "
        "answered from that check, `cached` true). Off unless the operator turns it on.",
        "operationId": "checkNode",
        "requestBody": {
            "required": True,
            "content": {
                "application/x-www-form-urlencoded": {"schema": FIELDS},
                "application/json": {"schema": FIELDS},
            },
        },
        "responses": responses,
    }
    return {"/api/v1/checknode/": {"post": operation}}, components
