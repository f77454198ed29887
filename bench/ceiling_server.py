"""The framework's ceiling: a minimal aiohttp handler returning a fixed small body."""

from __future__ import annotations

import sys

from aiohttp import web

BODY = b'{"ok":true}'


async def hello(request: web.Request) -> web.Response:
    return web.Response(body=BODY, content_type="application/json")


app = web.Application()
app.router.add_get("/{tail:.*}", hello)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
