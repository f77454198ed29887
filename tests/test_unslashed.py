"""A route asked without its final slash (``/api/v1/snapshots``, as bitnodes.io clients
may) is answered as with it: GET and HEAD are sent to the slashed path (query and all), a
POST by a 308 that keeps it a POST, any other method gets the route's own answer."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from crawldash.settings.addresses import cidrs

from .bitcoin_peers import closed_port
from .conftest import Client, Serve, until_served
from .factories import export_body, rows, write_snapshot
from .test_error_contract import assert_error_shape

LIVE = {
    "live_check": ("main",),
    "live_check_magic": (("main", "f9beb4d9"),),
    "live_check_allow": cidrs("127.0.0.0/8"),
}
NODE = "198.0.0.1-8333"


@pytest.fixture
async def client(serve: Serve, data_dir: Path, now: int) -> Client:
    write_snapshot(data_dir, now - 600, export_body(rows(3)))
    write_snapshot(data_dir, now - 60, export_body(rows(4)))
    served = await serve(**LIVE)
    await until_served(served, now - 60)
    return served


def unslashed(now: int) -> list[str]:
    """Each route of GET without its final slash, some with a query."""
    return [
        "/api/v1/snapshots",
        "/api/v1/snapshots?limit=1&page=2",
        f"/api/v1/snapshots/{now - 600}",
        "/api/v1/snapshots/latest?field=user_agents",
        "/api/v1/nodes",
        f"/api/v1/nodes/{NODE}",
        f"/api/v1/nodes/{NODE}/latency",
        "/api/v1/nodes/leaderboard",
        f"/api/v1/nodes/leaderboard/{NODE}",
        "/api/v1/inv",
        "/api/v1/addresses",
        f"/nodes/{NODE}",
        "/n/main/api/v1/snapshots",
    ]


def slashed(path: str) -> str:
    parts = urlsplit(path)
    return parts.path + "/" + (f"?{parts.query}" if parts.query else "")


async def test_get_and_head_are_sent_to_the_slashed_path(client: Client, now: int):
    for path in unslashed(now):
        for method in ("GET", "HEAD"):
            response = await client.request(method, path, allow_redirects=False)
            assert response.status == 308, (method, path)
            location = response.headers["Location"]
            assert location.startswith("./"), location  # relative: it holds behind a proxy
            assert urljoin(path, location) == slashed(path), (path, location)
        direct = await client.get(slashed(path))
        followed = await client.get(path)
        assert followed.status == direct.status, path
        body = await direct.read()
        assert await followed.read() == body, path
        assert b'"not_found"' not in body, path  # a route's answer (not_served at worst)
    # any other method gets the route's own answer; a path of no route is still a 404
    response = await client.post("/api/v1/snapshots", allow_redirects=False)
    assert response.status == 405
    assert_error_shape(await response.json(), 405, "method_not_allowed")
    missing = await client.get("/api/v1/snapshotz", allow_redirects=False)
    assert missing.status == 404  # only routes' own paths are sent on


async def test_a_post_to_the_live_check_without_its_slash_is_the_check(client: Client):
    form = {"address": "127.0.0.1", "port": str(closed_port())}
    response = await client.post("/api/v1/checknode", data=form, allow_redirects=False)
    assert response.status == 308
    assert response.headers["Location"] == "./checknode/"
    followed = await client.post("/api/v1/checknode", data=form)  # a 308 keeps the POST
    assert followed.status == 200
    assert (await followed.json())["reason"] == "refused"
    for method in ("GET", "PUT"):  # the route's own answer: it takes a POST, never read-only
        other = await client.request(method, "/api/v1/checknode", allow_redirects=False)
        body = await other.json()
        assert other.status == 405
        assert other.headers["Allow"] == "POST"
        assert "read-only" not in body["error"]["message"]


@pytest.mark.parametrize(
    "segment",
    ["%0d%0aSet-Cookie:%20x=1", "[2001:db8::1]-8333", "a%2Fb-1", "%C3%A9-8333", "x%00-1"],
    ids=["header-injection", "ipv6", "encoded-slash", "non-ascii", "nul"],
)
async def test_a_hostile_last_segment_stays_in_the_path(client: Client, segment: str):
    response = await client.get(f"/api/v1/nodes/{segment}", allow_redirects=False)
    assert response.status == 308
    location = response.headers["Location"]
    assert location.startswith("./")
    assert location.endswith("/")
    assert not {"\r", "\n", " "} & set(location)  # percent-encoded, as the request had it
    assert "Set-Cookie" not in response.headers
    assert urljoin("/api/v1/nodes/x", location).startswith("/api/v1/nodes/")
    followed = await client.get(f"/api/v1/nodes/{segment}")
    answer = await followed.json()  # the node route's own answer, or refusal in the one shape
    if followed.status != 200:
        assert_error_shape(answer, followed.status, answer["error"]["code"])
        assert answer["error"]["code"] != "not_found"
