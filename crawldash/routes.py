"""Every route of the application, and the answers for paths and methods it does not have.

Each network's routes are served under ``/n/NAME``; the first network's also without it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aiohttp import web

from .live.answers.leaderboard import Leaderboard
from .ops.health import Health
from .web.cors import Cors
from .web.dashboard import NodePage
from .web.errors import not_allowed, not_found, to_slashed
from .web.events import Broadcaster
from .web.history import HistoryRoutes
from .web.latest import Latest
from .web.map import MapRoutes
from .web.nodes import NodeRoutes
from .web.presence import Presences
from .web.v1.checknode import CheckNode
from .web.v1.leaderboard import V1Leaderboard
from .web.v1.listings import V1
from .web.v1.propagation import NOT_SERVED, V1Propagation, not_served

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Post:
    """A route answered by POST alone; ``other`` answers any other method."""

    handler: Handler
    other: Handler


Table = dict[str, Handler | Post]  # path -> its handler of GET and HEAD, or a Post
PARAMETER = re.compile(r"\{(\w+)\}")  # a path parameter without its own expression


def route_table(
    latest: Latest,
    history: HistoryRoutes,
    nodes: NodeRoutes,
    presences: Presences,
    v1: V1,
    propagation: V1Propagation,
    events: Broadcaster,
    health: Health,
    places: MapRoutes,
    checknode: CheckNode,
) -> Table:
    """A network's own routes (those of the whole service are added by ``service_routes``)."""
    # The leaderboard is built once per crawl of the network's state, with its latency.
    ranks = V1Leaderboard(Leaderboard(v1.state, propagation.propagation), links=v1.links)
    return {
        "/api/snapshot": latest.snapshot,
        "/api/status": latest.status,
        "/api/history": history.history,
        "/api/unique": history.unique,
        "/api/check": presences.check,
        "/api/breakdown": nodes.breakdown,
        "/api/nodes": nodes.nodes,
        "/api/map": places.map,
        "/api/presence": presences.presence,
        "/api/changes": presences.changes,
        "/api/profile": presences.profile,
        "/api/v1/snapshots/": v1.snapshots,
        "/api/v1/snapshots/{timestamp}/": v1.snapshot,
        "/api/v1/nodes/": v1.nodes,
        **{path: not_served(route) for path, route in NOT_SERVED.items()},
        "/api/v1/nodes/leaderboard/": ranks.leaderboard_list,
        "/api/v1/nodes/leaderboard/{node}/": ranks.ranking,
        "/api/v1/nodes/{node}/": v1.node,
        "/api/v1/nodes/{node}/latency/": propagation.latency,
        "/api/v1/inv/": propagation.inv_list,
        "/api/v1/inv/{inv_hash}/": propagation.inv,
        "/api/v1/checknode/": Post(checknode.check, checknode.other_method),
        "/api/openapi.json": latest.openapi,
        "/nodes/{node}/": NodePage(propagation.propagation).node,  # and /nodes/leaderboard/
        "/api/events": events.stream,
        "/healthz": health.healthz,
        "/readyz": health.readyz,
    }


def service_routes(index: Handler, static: Handler, networks: Handler, metrics: Handler) -> Table:
    """The routes every network has the same way but for its metrics: the page, its files
    and the list of networks."""
    return {
        "/": index,
        "/static/{name:.+}": static,
        "/api/networks": networks,
        "/metrics": metrics,
    }


def add_routes(
    app: web.Application,
    tables: Sequence[tuple[str, Table]],
    unknown_network: Handler,
    cors: Cors | None,
) -> list[str]:
    """Every route of every (prefix, table), each path that ends in a slash also without
    it, then the catch-alls: ``/n/NAME`` of a path no route has, other methods, other
    paths. Returns the routes as declared (each resource's canonical path:
    ``/static/{name}``), the catch-alls left out."""
    paths = []
    for prefix, table in tables:
        # aiohttp tries the routes under one prefix (/api/v1/inv/ and /api/v1/inv/{inv_hash}/)
        # in the order added: those with a parameter, the ones asked for most, go first.
        for path, handler in sorted(table.items(), key=lambda item: "{" not in item[0]):
            paths.append(_add(app, prefix + path, handler, cors))
            if path != "/" and path.endswith("/") and path[:-1] not in table:
                paths.append(_add_unslashed(app, prefix + path[:-1], handler, cors))
    app.router.add_route("*", r"/n/{network:[^/]*}{tail:(/[\s\S]*)?}", unknown_network)
    # Any other path, newlines and all. (aiohttp answers a request whose target is not a
    # path, CONNECT's host:port or *, and unknown methods itself, in plain text.)
    app.router.add_route("*", r"/{tail:[\s\S]*}", not_found)
    return paths


def _add(app: web.Application, path: str, handler: Handler | Post, cors: Cors | None) -> str:
    # A parameter is one path segment, braces and all (aiohttp's own default also refuses
    # braces): its handler refuses a malformed value with the reason, and a regular
    # expression that excludes one character runs faster than one that excludes a set.
    resource = app.router.add_resource(PARAMETER.sub(r"{\1:[^/]+}", path))
    if isinstance(handler, Post):
        resource.add_route("POST", handler.handler)
    else:
        resource.add_route("GET", handler)
        resource.add_route("HEAD", handler)  # aiohttp sends the headers and no body
    if cors is not None:
        resource.add_route("OPTIONS", cors.preflight)
    resource.add_route("*", handler.other if isinstance(handler, Post) else not_allowed)
    return resource.canonical


def _add_unslashed(
    app: web.Application, path: str, handler: Handler | Post, cors: Cors | None
) -> str:
    """A route's path without its final slash, as clients of bitnodes.io's API ask it
    (``/api/v1/snapshots``): the methods the route answers are sent to it by a redirect,
    any other method gets the route's own answer (405 for a POST to a route of GET: never
    a 404, and never "read-only" for a route that takes a POST)."""
    resource = app.router.add_resource(PARAMETER.sub(r"{\1:[^/]+}", path))
    for method in ("POST",) if isinstance(handler, Post) else ("GET", "HEAD"):
        resource.add_route(method, to_slashed)
    if cors is not None:
        resource.add_route("OPTIONS", cors.preflight)
    resource.add_route("*", handler.other if isinstance(handler, Post) else not_allowed)
    return resource.canonical
