"""Every route of the application."""

from aiohttp import web

from . import views
from .events import events
from .headers import preflight
from .health import healthz, readyz
from .metrics import metrics_view
from .page import index, static
from .typedefs import SETTINGS

API = {
    "/api/snapshot": views.snapshot,
    "/api/status": views.status,
    "/api/history": views.history,
    "/api/check": views.check,
    "/api/openapi.json": views.openapi,
    "/api/events": events,
    "/": index,
    "/static/{name:.+}": static,
    "/metrics": metrics_view,
    "/healthz": healthz,
    "/readyz": readyz,
}


def setup_routes(app: web.Application) -> None:
    for path, handler in API.items():
        resource = app.router.add_resource(path)
        resource.add_route("GET", handler)
        resource.add_route("HEAD", handler)  # aiohttp sends the headers and no body
        if app[SETTINGS].cors_origins:
            resource.add_route("OPTIONS", preflight)
        resource.add_route("*", views.not_allowed)
    app.router.add_route("*", "/{tail:.*}", views.not_found)
