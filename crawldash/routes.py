"""Every route of the application."""

from collections.abc import Awaitable, Callable

from aiohttp import web

from . import views
from .events import events
from .health import healthz, readyz
from .metrics import metrics_view
from .page import index, static
from .typedefs import OPENAPI, SETTINGS, STATE

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def route_table(app: web.Application) -> dict[str, Handler]:
    api = views.Api(app[STATE], app[OPENAPI], app[SETTINGS].cache_max_age)
    return {
        "/api/snapshot": api.snapshot,
        "/api/status": api.status,
        "/api/history": api.history,
        "/api/check": api.check,
        "/api/openapi.json": api.openapi,
        "/api/events": events,
        "/": index,
        "/static/{name:.+}": static,
        "/metrics": metrics_view,
        "/healthz": healthz,
        "/readyz": readyz,
    }


def setup_routes(app: web.Application) -> list[str]:
    """Add every route; returns their paths."""
    table = route_table(app)
    for path, handler in table.items():
        resource = app.router.add_resource(path)
        resource.add_route("GET", handler)
        resource.add_route("HEAD", handler)  # aiohttp sends the headers and no body
        if app[SETTINGS].cors_origins:
            resource.add_route("OPTIONS", views.preflight)
        resource.add_route("*", views.not_allowed)
    app.router.add_route("*", "/{tail:.*}", views.not_found)
    return list(table)
