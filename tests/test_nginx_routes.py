"""The shipped nginx examples in front of a real ``crawldash serve`` of two networks (issue
51, cases 3 and 8): every route crawldash answers directly, as its router declares them,
answers the same through each example; the paths kept for the monitoring network stay
kept, however spelt; and crawldash sees the client's address in the X-Forwarded-For the
example sets, not one a client wrote.

Each request comes from a loopback address of its own, so that the example's rate limit
(per client address, kept as shipped) never answers for crawldash."""

from __future__ import annotations

import http.client
import itertools
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawldash.app import create_app
from crawldash.settings.serve import Settings

from .factories import export_body, rows, write_snapshot
from .process import free_port, nginx_config, served_whole, serving, wait_until

EXAMPLES = Path(__file__).parent.parent / "examples" / "nginx"
NETWORKS = ("main", "testnet4")
NODE = "198.0.0.1-8333"  # a node of every crawl written
MONITOR = "127.0.0.1"  # the one address the examples let read metrics and health
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx (Debian nginx) missing"),
]
_sources = (f"127.0.{2 + n // 250}.{1 + n % 250}" for n in itertools.count())


@dataclass(frozen=True)
class Upstream:
    host: str
    port: int
    folder: Path
    newest: int


@dataclass(frozen=True)
class Front:
    port: int
    prefix: str  # where the example serves crawldash: "" or "/crawldash"


@dataclass(frozen=True)
class Answer:
    status: int
    media_type: str
    code: str | None  # the error's code, for crawldash's JSON error shape


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    folder = tmp_path_factory.mktemp("nginx-routes")
    newest = int(time.time()) // 600 * 600
    options: list[str] = []
    for name in NETWORKS:
        for timestamp in (newest - 600, newest):
            write_snapshot(folder / name, timestamp, export_body(rows(3)))
        options += ["--network", f"{name}={folder / name}"]
    # The examples' proxy is this machine: its X-Forwarded-For names the client; one
    # stream per client makes the client crawldash sees show in its answers.
    options += ["--trusted-proxy", "127.0.0.1", "--max-subscribers-per-client", "1"]
    with serving(None, folder / "state", *options, "--log-level", "warning") as base:
        # Every answer stays the same from here on: each request asked directly and through
        # the proxy must meet the same state.
        wait_until(lambda: all(served_whole(f"{base}/n/{name}", newest) for name in NETWORKS))
        host, port = base.removeprefix("http://").split(":")
        yield Upstream(host, int(port), folder, newest)


@pytest.fixture(scope="module", params=["crawldash.conf", "crawldash-subpath.conf"])
def front(
    request: pytest.FixtureRequest, upstream: Upstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Front]:
    folder = tmp_path_factory.mktemp("nginx")
    port = free_port()
    conf = nginx_config(folder, EXAMPLES / request.param, port, f"{upstream.host}:{upstream.port}")
    nginx = subprocess.Popen(["nginx", "-p", str(folder), "-c", str(conf)])
    prefix = "/crawldash" if "subpath" in request.param else ""
    try:
        wait_until(lambda: ask(port, prefix + "/api/status", MONITOR).status == 200)
        yield Front(port, prefix)
    finally:
        nginx.terminate()
        nginx.wait(10)


def ask(
    port: int,
    path: str,
    source: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request from ``source``; a stream's body is not waited for."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=10, source_address=(source, 0)
    )
    try:
        body = b"" if method == "POST" else None
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        media_type = (response.getheader("Content-Type") or "").split(";")[0]
        code = None
        if media_type == "application/json" and response.status >= 400:
            code = json.loads(response.read())["error"]["code"]
        return Answer(response.status, media_type, code)
    finally:
        connection.close()


def sample(canonical: str, newest: int) -> str:
    """A path of the route declared as ``canonical``, each parameter given a value."""
    if canonical == "/{tail}":  # any path no route has
        return "/no-such-page"
    values = {
        "timestamp": str(newest),
        "node": NODE,
        "inv_hash": "0" * 64,
        "name": "app.js",
        "network": "nosuch",  # /n/NAME/ of a network not served
        "tail": "/api/status",
    }
    return re.sub(r"\{(\w+)\}", lambda found: values[found.group(1)], canonical)


def declared(newest: int) -> list[tuple[str, str]]:
    """(method, path) of every route crawldash's router declares, and of each with its final
    slash added or taken away."""
    settings = Settings(networks=tuple((name, Path(name)) for name in NETWORKS))
    found = []
    for resource in create_app(settings).router.resources():
        methods = {route.method for route in resource}
        method = "POST" if "POST" in methods else "GET"
        path = sample(resource.canonical, newest)
        found.append((method, path))
        if path != "/":
            found.append((method, path[:-1] if path.endswith("/") else path + "/"))
    return found


def test_every_route_answers_through_the_example_as_directly(upstream: Upstream, front: Front):
    paths = declared(upstream.newest)
    assert ("GET", f"/nodes/{NODE}/") in paths
    assert ("GET", f"/n/testnet4/nodes/{NODE}/") in paths
    assert ("GET", "/n/main/api/v1/snapshots/") in paths
    differ = {}
    for method, path in paths:
        kept = re.search(r"/(metrics|healthz|readyz)/?$", path) is not None
        source = MONITOR if kept else next(_sources)
        direct = ask(upstream.port, path, next(_sources), method)
        proxied = ask(front.port, front.prefix + path, source, method)
        if proxied != direct:
            differ[f"{method} {path}"] = (direct, proxied)
    assert differ == {}


KEPT = [
    "/metrics",
    "/healthz",
    "/readyz",
    "/n/main/metrics",
    "/n/testnet4/healthz",
    "/n/main/readyz",
    "/%6detrics",
    "//metrics",
    "/api/../metrics",
    "/n/main/../../metrics",
]


@pytest.mark.parametrize("path", KEPT)
def test_metrics_and_health_are_kept_for_the_monitoring_network(front: Front, path: str):
    assert ask(front.port, front.prefix + path, next(_sources)).status == 403
    assert ask(front.port, front.prefix + path, MONITOR).status in {200, 404}


def test_crawldash_sees_the_client_the_example_names(front: Front):
    """With one event stream per client: two clients behind the proxy each get theirs, and
    a client cannot pass for another by writing X-Forwarded-For itself. Before, the example
    set no header: every client was the proxy (or what it wrote)."""
    events = front.prefix + "/api/events"
    first, second = next(_sources), next(_sources)
    with open_stream(front.port, events, first) as held:
        assert held == 200
        forged = {"X-Forwarded-For": "198.51.100.7"}
        with open_stream(front.port, events, second, forged) as other:
            assert other == 200
            again = ask(front.port, events, second, headers={"X-Forwarded-For": "198.51.100.8"})
            assert (again.status, again.code) == (429, "too_many_streams")


class open_stream:
    """An event stream from ``source`` kept open while the block runs; its status."""

    def __init__(self, port: int, path: str, source: str, headers: dict[str, str] | None = None):
        self.connection = http.client.HTTPConnection(
            "127.0.0.1", port, timeout=10, source_address=(source, 0)
        )
        self.path, self.headers = path, headers or {}

    def __enter__(self) -> int:
        self.connection.request("GET", self.path, headers=self.headers)
        return self.connection.getresponse().status

    def __exit__(self, *_: object) -> None:
        self.connection.close()
