"""``POST /api/v1/checknode/``: bitnodes.io's "Check node", a live handshake with the node
a client names (``address`` and ``port``, form-encoded as bitnodes.io's page and clients
sent them, or as JSON). Off unless the operator turns it on (``--live-check``): then 404
``not_served``. The check itself, and its bounds, are ``checknode/``'s."""

from __future__ import annotations

import urllib.parse
from typing import Any

import msgspec
from aiohttp import web

from ...checknode.bounds import client_address
from ...checknode.checker import LiveCheck, TooMany
from ...checknode.targets import Refusal
from ...crawl.address import MAX_ADDRESS_LENGTH
from ...settings.addresses import IPNetwork
from ..errors import ApiError
from ..responses import JSON, headers_for

MAX_BODY = 4096  # bytes of a request's body: two short fields
FORM = "application/x-www-form-urlencoded"
ALLOW = "POST"
_encoder = msgspec.json.Encoder()
_NO_STORE = {"Cache-Control": "no-store"}


class CheckNode:
    """The route, bound to its network's live check (None while it is off)."""

    def __init__(self, live: LiveCheck | None, trusted: tuple[IPNetwork, ...] = ()) -> None:
        self.live, self.trusted = live, trusted

    async def check(self, request: web.Request) -> web.Response:
        if self.live is None:
            raise ApiError(
                404,
                "not_served",
                "the live check (bitnodes.io's /api/v1/checknode/) is off for this network; "
                "the operator turns it on with --live-check NAME (see docs/operating.md)",
            )
        address, port = _fields(await _body(request), request.content_type)
        forwarded = request.headers.getall("X-Forwarded-For", ())  # every line, in order
        client = client_address(request.remote, forwarded, self.trusted)
        try:
            answer = await self.live.check(address, port, client)
        except Refusal as refusal:
            raise ApiError(400, refusal.code, refusal.message) from None
        except TooMany as too_many:
            retry = {"Retry-After": str(too_many.retry_after)}
            if too_many.clients_own:
                raise ApiError(429, "too_many_checks", too_many.message, retry) from None
            raise ApiError(503, "checks_busy", too_many.message, retry) from None
        return web.Response(body=_encoder.encode(answer), headers=headers_for(JSON, _NO_STORE))

    async def other_method(self, request: web.Request) -> web.Response:
        raise ApiError(
            405,
            "method_not_allowed",
            f"{request.method} is not allowed: /api/v1/checknode/ answers POST",
            headers={"Allow": ALLOW},
        )


async def _body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "payload_too_large", f"the body is over {MAX_BODY} bytes")
    body = b""
    while len(body) <= MAX_BODY:  # chunked, or sent in pieces: read until its end
        piece = await request.content.read(MAX_BODY + 1 - len(body))
        if not piece:
            return body
        body += piece
    raise ApiError(413, "payload_too_large", f"the body is over {MAX_BODY} bytes")


def _fields(body: bytes, content_type: str) -> tuple[str, int]:
    """(address, port) from a form-encoded or JSON body."""
    if content_type == JSON:
        try:
            given: Any = msgspec.json.decode(body)
        except msgspec.DecodeError:
            raise _invalid_body("the body is not JSON") from None
        if not isinstance(given, dict):
            raise _invalid_body("the JSON body is not an object")
        values = {name: [given[name]] for name in ("address", "port") if name in given}
    else:  # form-encoded, as bitnodes.io's clients send it (urllib's default type too)
        try:
            pairs = urllib.parse.parse_qsl(
                body.decode("utf-8"), keep_blank_values=True, max_num_fields=16
            )
        except (UnicodeDecodeError, ValueError):
            raise _invalid_body("the body is not a UTF-8 form of a few fields") from None
        values = {}
        for name, value in pairs:
            values.setdefault(name, []).append(value)
    return _address(values.get("address")), _port(values.get("port"))


def _address(given: list[Any] | None) -> str:
    if not given or given == [""]:
        raise ApiError(400, "missing_address", "give the node's address (a form field or JSON)")
    if len(given) > 1 or not isinstance(given[0], str) or len(given[0]) > MAX_ADDRESS_LENGTH:
        raise ApiError(
            400,
            "invalid_address",
            f"address is one IP address or .onion, at most {MAX_ADDRESS_LENGTH} characters",
        )
    return given[0]


def _port(given: list[Any] | None) -> int:
    if not given or given == [""]:
        raise ApiError(400, "missing_port", "give the node's port (a form field or JSON)")
    value = given[0]
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 5:
        value = int(value)
    if len(given) > 1 or type(value) is not int or not 1 <= value <= 65535:
        raise ApiError(400, "invalid_port", "port is one whole number from 1 to 65535")
    return value


def _invalid_body(why: str) -> ApiError:
    return ApiError(
        400, "invalid_body", f"{why}: send address and port form-encoded or as a JSON object"
    )
