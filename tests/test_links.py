"""The absolute links the API gives (v1 ``url``, ``next`` and ``previous``, ``/api/nodes``'
``next``, the inv list's ``next``, the OpenAPI ``servers``): from ``--public-url`` when it
is given, else from the request's own scheme and host; under the network the request was
made to; and each one leads to an answer."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from crawldash.crawl.propagation import Block, BlocksFile, write_blocks
from crawldash.web.links import Links, network_prefix

from .conftest import Client, Serve, eventually, json_of
from .factories import export_body, rows, write_snapshot

T = 1_700_000_000
PUBLIC = "https://example.org/crawldash"
CRAWLS = {"main": (T, T + 600, T + 1200), "testnet4": (T + 300, T + 900)}


def block(number: int) -> Block:
    head = [(f"203.0.113.{number}:8333", 1_700_000_000_000 + number)]
    return Block(f"{number:064x}", head[0][1], 1, 0.0, 0.0, 0.0, 0.0, 0.0, head)


def two_networks(tmp_path: Path) -> dict[str, Any]:
    """``serve()`` options for two networks, each with a few crawls and kept blocks."""
    networks, kept = [], []
    for index, (name, timestamps) in enumerate(CRAWLS.items()):
        folder = tmp_path / name
        for timestamp in timestamps:
            write_snapshot(folder, timestamp, export_body(rows(3, first_octet=198 + index)))
        write_blocks(tmp_path / f"{name}-kept", BlocksFile(0, [block(n) for n in (3, 2, 1)]))
        networks.append((name, folder))
        kept.append((name, tmp_path / f"{name}-kept"))
    return {"networks": tuple(networks), "propagation_dir": tuple(kept)}


async def counted(client: Client, prefix: str) -> None:
    async def complete() -> bool:
        status = await json_of(client, f"{prefix}/api/status")
        return bool(status["history_complete"])

    await eventually(complete)


async def links_of(client: Client, prefix: str, **headers: str) -> dict[str, str]:
    """Every link the lists under ``prefix`` give, by name."""
    snapshots = await json_of(client, f"{prefix}/api/v1/snapshots/?limit=1", **headers)
    second = await json_of(client, f"{prefix}/api/v1/snapshots/?limit=1&page=2", **headers)
    v1_nodes = await json_of(client, f"{prefix}/api/v1/nodes/?limit=1", **headers)
    nodes = await json_of(client, f"{prefix}/api/nodes?limit=1", **headers)
    inv = await json_of(client, f"{prefix}/api/v1/inv/?limit=1", **headers)
    return {
        "snapshots next": snapshots["next"],
        "snapshot url": snapshots["results"][0]["url"],
        "snapshots previous": second["previous"],
        "v1 nodes next": v1_nodes["next"],
        "nodes next": nodes["next"],
        "inv next": inv["next"],
    }


def expected_links(root: str, prefix: str, newest: int) -> dict[str, str]:
    at = root + prefix
    return {
        "snapshots next": f"{at}/api/v1/snapshots/?limit=1&page=2",
        "snapshot url": f"{at}/api/v1/snapshots/{newest}/",
        "snapshots previous": f"{at}/api/v1/snapshots/?limit=1&page=1",
        "v1 nodes next": f"{at}/api/v1/nodes/?limit=1&page=2",
        "nodes next": f"{at}/api/nodes?limit=1&page=2",
        "inv next": f"{at}/api/v1/inv/?limit=1&page=2",
    }


@pytest.mark.parametrize("public_url", [None, PUBLIC])
async def test_links_start_at_the_public_url_and_keep_the_network(
    serve: Serve, tmp_path: Path, public_url: str | None
):
    client = await serve(public_url=public_url, **two_networks(tmp_path))
    root = public_url or str(client.make_url("")).rstrip("/")
    # The first network at / and at /n/main/ (the same handlers: a page kept for one must
    # not answer the other), then the second.
    for prefix, name in (("", "main"), ("/n/main", "main"), ("/n/testnet4", "testnet4")):
        await counted(client, prefix)
        newest = CRAWLS[name][-1]
        links = await links_of(client, prefix)
        assert links == expected_links(root, prefix, newest), prefix
        for link in links.values():  # each leads to an answer, of the same network
            assert link.startswith(root)
            await json_of(client, link.removeprefix(root))
        snapshot = await json_of(client, links["snapshot url"].removeprefix(root))
        assert snapshot["timestamp"] == newest

        document = await json_of(client, f"{prefix}/api/openapi.json")
        server = document["servers"][0]["url"]
        assert server == ((public_url or "") + prefix or "/")  # where its paths are reached
        at = urllib.parse.urljoin(str(client.make_url(f"{prefix}/api/openapi.json")), server)
        status = await json_of(client, at.rstrip("/").removeprefix(root) + "/api/status")
        assert status["snapshot_timestamp"] == newest


async def test_without_a_public_url_each_host_gets_its_own_links(serve: Serve, tmp_path: Path):
    """Pages are kept between requests: one asked for by one name of the host must not
    answer for another."""
    client = await serve(**two_networks(tmp_path))
    await counted(client, "")
    for host in ("crawldash.example:8080", "[2001:db8::1]:8080", "crawldash.example:8080"):
        links = await links_of(client, "/n/testnet4", Host=host)
        assert links == expected_links(f"http://{host}", "/n/testnet4", CRAWLS["testnet4"][-1])


async def test_a_kept_page_gives_no_client_its_unknown_parameters(serve: Serve, tmp_path: Path):
    """List pages are kept by their parsed query: the links in them carry only the
    parameters the route knows, whoever asked first."""
    client = await serve(**two_networks(tmp_path))
    await counted(client, "/n/testnet4")
    at = str(client.make_url("")).rstrip("/") + "/n/testnet4"
    lists = {
        "/api/v1/snapshots/?limit=1": f"{at}/api/v1/snapshots/?limit=1&page=2",
        "/api/v1/inv/?limit=1": f"{at}/api/v1/inv/?limit=1&page=2",
        "/api/v1/nodes/?limit=1&q=199": f"{at}/api/v1/nodes/?limit=1&q=199&page=2",
    }
    for path, wanted in lists.items():
        first = await json_of(client, f"/n/testnet4{path}&token=secret")
        again = await json_of(client, f"/n/testnet4{path}")
        assert first["next"] == again["next"] == wanted, path


def test_the_links_of_a_request():
    proxied = Links(PUBLIC)
    direct = Links(None)
    request = make_mocked_request(
        "GET", "/n/testnet4/api/nodes?q=a%20b&page=1", headers={"Host": "10.0.0.1:8080"}
    )
    assert proxied.base(request) == f"{PUBLIC}/n/testnet4"
    assert proxied.this(request, page="2") == f"{PUBLIC}/n/testnet4/api/nodes?q=a+b&page=2"
    assert direct.base(request) == "http://10.0.0.1:8080/n/testnet4"
    assert (
        direct.this(request, page="2") == "http://10.0.0.1:8080/n/testnet4/api/nodes?q=a+b&page=2"
    )
    at_root = make_mocked_request("GET", "/api/v1/inv/", headers={"Host": "h"})
    assert (proxied.base(at_root), direct.base(at_root)) == (PUBLIC, "http://h")


@pytest.mark.parametrize(
    ("path", "prefix"),
    [
        ("/n/testnet4/api/status", "/n/testnet4"),
        ("/n/testnet4/", "/n/testnet4"),
        ("/n/testnet4", ""),  # not under it: redirected to it
        ("/n//api/status", ""),
        ("/n/", ""),
        ("/nodes/", ""),
        ("/api/v1/nodes/", ""),
        ("/", ""),
    ],
)
def test_network_prefix(path: str, prefix: str):
    assert network_prefix(path) == prefix
