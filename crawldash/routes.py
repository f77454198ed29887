"""Every route of the application, and the answers for paths and methods it does not have."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from .ops.health import Health
from .ops.metrics import Metrics
from .web.api import Api
from .web.cors import Cors
from .web.dashboard import Dashboard
from .web.errors import not_allowed, not_found
from .web.events import Broadcaster
from .web.network import Network
from .web.presence import Presences
from .web.v1 import V1
from .web.v1_propagation import NOT_SERVED, V1Propagation, not_served

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def route_table(
    api: Api,
    network: Network,
    presences: Presences,
    v1: V1,
    propagation: V1Propagation,
    events: Broadcaster,
    dashboard: Dashboard,
    health: Health,
    metrics: Metrics,
) -> dict[str, Handler]:
    """Path -> the bound handler that answers GET and HEAD there."""
    return {
        "/api/snapshot": api.snapshot,
        "/api/status": api.status,
        "/api/history": api.history,
        "/api/unique": api.unique,
        "/api/check": api.check,
        "/api/breakdown": network.breakdown,
        "/api/nodes": network.nodes,
        "/api/presence": presences.presence,
        "/api/changes": presences.changes,
        "/api/v1/snapshots/": v1.snapshots,
        "/api/v1/snapshots/{timestamp}/": v1.snapshot,
        "/api/v1/nodes/": v1.nodes,
        **{path: not_served(route) for path, route in NOT_SERVED.items()},
        "/api/v1/nodes/{node}/": v1.node,
        "/api/v1/nodes/{node}/latency/": propagation.latency,
        "/api/v1/inv/": propagation.inv_list,
        "/api/v1/inv/{inv_hash}/": propagation.inv,
        "/api/openapi.json": api.openapi,
        "/api/events": events.stream,
        "/": dashboard.index,
        "/static/{name:.+}": dashboard.static,
        "/metrics": metrics.handle,
        "/healthz": health.healthz,
        "/readyz": health.readyz,
    }


def add_routes(app: web.Application, table: dict[str, Handler], cors: Cors | None) -> list[str]:
    """Add every route, and the catch-alls for other methods and paths; returns the paths."""
    for path, handler in table.items():
        resource = app.router.add_resource(path)
        resource.add_route("GET", handler)
        resource.add_route("HEAD", handler)  # aiohttp sends the headers and no body
        if cors is not None:
            resource.add_route("OPTIONS", cors.preflight)
        resource.add_route("*", not_allowed)
    # Any other path, newlines and all. (aiohttp answers a request whose target is not a
    # path, CONNECT's host:port or *, and unknown methods itself, in plain text.)
    app.router.add_route("*", r"/{tail:[\s\S]*}", not_found)
    return list(table)
