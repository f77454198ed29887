"""The leaderboard (``/api/v1/nodes/leaderboard/``) against PIX worked out by hand.

A real server over real crawl files (three crawls, six nodes, one of them Tor) and a
bridge's latency file: each node's 14 indexes are computed here, index by index, from
bitnodes.io's published formula and the node's values, and compared with what crawldash
answers; then the order and ranks, the paging, ``q``, a node's ranking, what is not
ranked, and that the board is built once per crawl, not per request."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from crawldash.app import NETWORKS
from crawldash.crawl.propagation import LatencyFile, pack, write_latency

from .conftest import Client, Serve, eventually, json_of, until_complete, until_served
from .factories import ONION, export_body, row, write_snapshot

T0 = 1_700_000_000
NEWEST = T0 + 1200
H = 900_000
PATIENCE = 30.0


def node(address: str, port: int, version: int, services: int, height: int, asn: Any) -> list[Any]:
    made = row(address, port, height=height)
    made[2], made[5], made[13] = version, services, asn
    return made


A = node("203.0.113.1", 8333, 70016, 1033, H, "AS1")
B = node("203.0.113.2", 8333, 70016, 1037, H - 2, "AS1")
C = node("203.0.113.3", 18333, 70015, 1033, H, "AS2")
D = node("2001:db8::4", 8333, 70016, 1032, H, "AS3")  # 1032: no NODE_NETWORK
E = node("203.0.113.5", 8333, 70016, 1033, H, None)  # no ASN
F = row(ONION, tor=True)  # counted in the crawl's figures, never ranked
CRAWLS = {T0: [A, D, E, F], T0 + 600: [A, B, E, F], NEWEST: [A, B, C, D, E, F]}
NAMES = {"203.0.113.1:8333": A, "203.0.113.2:8333": B, "203.0.113.3:18333": C}
NAMES |= {"[2001:db8::4]:8333": D, "203.0.113.5:8333": E}
ORDER = ("vi", "si", "hi", "ai", "pi", "dli", "dui", "wli", "wui", "mli", "mui", "nsi", "ni", "bi")


def tier(mean: float | None) -> float:
    """bitnodes.io's latency index, its table written out."""
    if mean is None:
        return 0.0
    for bound, value in zip(
        range(300, 1300, 100), (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1), strict=True
    ):
        if mean <= bound:
            return value
    return 0.0


BUCKET = NEWEST // 600  # the bridge's newest ten minutes
LATENCY = {  # the bridge's kept cells: bucket -> (pings, their total ms)
    "203.0.113.1:8333": {BUCKET: (2, 400), BUCKET - 432: (1, 900)},  # 200 ms, 3 days ago 900
    "203.0.113.2:8333": {BUCKET: (1, 700)},  # 700 ms
}
# The spans of /latency/'s views, in ten-minute buckets: 144 of them; 168 hours; 120 times
# six hours, each ending with the period that holds the newest bucket.
SPANS = {"d": (1, 144), "w": (6, 168), "m": (36, 120)}


def mean_time(address: str, prefix: str) -> float | None:
    """The mean of every ping the bridge kept of the node over the span."""
    units, periods = SPANS[prefix]
    end = BUCKET - BUCKET % units + units
    start = end - periods * units
    cells = [cell for bucket, cell in LATENCY.get(address, {}).items() if start <= bucket < end]
    pings = sum(count for count, _ in cells)
    return sum(total for _, total in cells) / pings if pings else None


async def by_hand(client: Client) -> dict[str, dict[str, str]]:
    """Every ranked node's indexes and PIX, from the formula and the node's own values
    (its latency from /latency/, its uptime from /api/presence)."""
    newest = CRAWLS[NEWEST]
    total = len(newest)  # N: every reachable node, Tor too
    versions = {70016: 1, 70015: 2}  # 5 nodes and 1
    services = {1033: 1, 1037: 2, 1032: 2}  # 4, 1 and 1: the two of one node share a rank
    asns = {"AS1": 2, "AS2": 1, "AS3": 1, "TOR": 1}
    expected = {}
    for address, values in NAMES.items():
        port = int(address.rpartition(":")[2])
        indexes: dict[str, float] = {
            "vi": 1 / versions[values[2]],
            "si": 1 / services[values[5]] if values[5] & 1 else 0.0,
            "hi": values[6] / H,
            "ai": math.log(total / asns[values[13]]) / math.log(total) if values[13] else 0.0,
            "pi": 1.0 if port == 8333 else 0.0,
            "nsi": 0.0,
            "ni": 0.0,
            "bi": 0.0,
        }
        for prefix in SPANS:
            indexes[f"{prefix}li"] = tier(mean_time(address, prefix))
        for prefix, limit in (("d", 144), ("w", 1008), ("m", 4320)):
            runs = await json_of(client, f"/api/presence?address={address}&limit={limit}")
            up = sum(run["crawls"] for run in runs if run["present"])
            indexes[f"{prefix}ui"] = up / sum(run["crawls"] for run in runs)
        shown = {name: f"{indexes[name]:.4f}" for name in ORDER}
        pix = sum(float(text) for text in shown.values()) / 14 * 10
        expected[address] = {**shown, "peer_index": f"{pix:.4f}"}
    return expected


async def served_with_latency(serve: Serve, data_dir: Path, tmp_path: Path) -> Client:
    for timestamp, crawl in CRAWLS.items():
        write_snapshot(data_dir, timestamp, export_body(crawl))
    kept = tmp_path / "kept"
    latency = {address: pack(cells) for address, cells in LATENCY.items()}
    write_latency(kept, LatencyFile(BUCKET, latency, {}))
    client = await serve(propagation_dir=(("main", kept),))
    await until_served(client, NEWEST)
    await until_complete(client)

    async def kept_latency() -> bool:
        return (await client.get("/api/v1/nodes/203.0.113.2-8333/latency/")).status == 200

    await eventually(kept_latency, PATIENCE)
    return client


async def test_pix_by_hand_index_by_index(serve: Serve, data_dir: Path, tmp_path: Path):
    client = await served_with_latency(serve, data_dir, tmp_path)
    expected = await by_hand(client)
    board = await json_of(client, "/api/v1/nodes/leaderboard/?limit=100")
    assert board["timestamp"] == NEWEST
    assert board["count"] == 5  # the Tor node is not ranked
    assert board["not_measured"] == ["nsi", "ni", "bi"]
    got = {r["node"]: {k: r[k] for k in (*ORDER, "peer_index")} for r in board["results"]}
    for address, indexes in expected.items():
        assert got[address] == indexes, address
    # the inputs did reach the indexes: 200 ms twice and 900 ms once are 433 ms, 0.8
    assert expected["203.0.113.1:8333"]["dli"] == "1.0000"
    assert expected["203.0.113.1:8333"]["wli"] == expected["203.0.113.1:8333"]["mli"] == "0.8000"
    assert expected["203.0.113.2:8333"]["dli"] == "0.6000"
    assert expected["203.0.113.3:18333"]["dui"] == f"{1 / 3:.4f}"
    # highest PIX first, equal PIX equal rank (dense), then by address
    pixes = [float(r["peer_index"]) for r in board["results"]]
    assert pixes == sorted(pixes, reverse=True)
    ranks = [r["rank"] for r in board["results"]]
    assert ranks[0] == 1
    for (before, rank_before), (after, rank_after) in zip(
        zip(pixes, ranks, strict=True), list(zip(pixes, ranks, strict=True))[1:], strict=False
    ):
        assert rank_after == rank_before + (after != before)
    assert board["results"][0]["user_agent"] == "/Satoshi:27.0.0/"
    assert board["results"][0]["country"] == "RU"


async def test_paging_search_ranking_and_not_ranked(serve: Serve, data_dir: Path, tmp_path: Path):
    client = await served_with_latency(serve, data_dir, tmp_path)
    whole = (await json_of(client, "/api/v1/nodes/leaderboard/?limit=100"))["results"]
    first = await json_of(client, "/api/v1/nodes/leaderboard/?limit=2")
    assert (first["count"], first["previous"]) == (5, None)
    assert first["next"].endswith("/api/v1/nodes/leaderboard/?limit=2&page=2")
    last = await json_of(client, "/api/v1/nodes/leaderboard/?limit=2&page=3")
    assert last["next"] is None
    assert last["previous"].endswith("page=2")
    assert (
        first["results"]
        + (await json_of(client, first["next"][len(str(client.make_url(""))) :]))["results"]
        + last["results"]
        == whole
    )
    beyond = await json_of(client, "/api/v1/nodes/leaderboard/?limit=2&page=9")
    assert (beyond["results"], beyond["count"]) == ([], 5)
    found = await json_of(client, "/api/v1/nodes/leaderboard/?q=2001:DB8")  # any case
    assert [r["node"] for r in found["results"]] == ["[2001:db8::4]:8333"]
    assert (await json_of(client, "/api/v1/nodes/leaderboard/?q=satoshi:27"))["count"] == 5
    for row_ in whole:
        host, port = row_["node"].rpartition(":")[0].strip("[]"), row_["node"].rpartition(":")[2]
        assert await json_of(client, f"/api/v1/nodes/leaderboard/{host}-{port}/") == row_
    for absent in (f"{ONION}-8333", "203.0.113.99-8333"):
        response = await client.get(f"/api/v1/nodes/leaderboard/{absent}/")
        error = (await response.json())["error"]
        assert (response.status, error["code"]) == (404, "node_not_ranked")
    for malformed, code in (("?limit=0", "invalid_limit"), ("?q=" + "x" * 300, "invalid_q")):
        response = await client.get(f"/api/v1/nodes/leaderboard/{malformed}")
        assert (response.status, (await response.json())["error"]["code"]) == (400, code)


def boards_built(client: Client) -> int:
    """How many boards the first network's leaderboard has built."""
    for resource in client.app.router.resources():
        if resource.canonical == "/api/v1/nodes/leaderboard/":
            handler = next(iter(resource)).handler
            return int(handler.__self__.leaderboard.builds)  # type: ignore[attr-defined]
    raise AssertionError("no leaderboard route")


async def test_built_once_per_crawl_not_per_request(serve: Serve, data_dir: Path, tmp_path: Path):
    client = await served_with_latency(serve, data_dir, tmp_path)
    await json_of(client, "/api/v1/nodes/leaderboard/")
    built = boards_built(client)
    for query in ("", "?limit=3", "?q=203", "?page=2&limit=1"):
        await json_of(client, f"/api/v1/nodes/leaderboard/{query}")
    await json_of(client, "/api/v1/nodes/leaderboard/203.0.113.1-8333/")
    assert boards_built(client) == built
    newer = NEWEST + 600
    write_snapshot(data_dir, newer, export_body([A, C, F]))
    await client.app[NETWORKS][0].refresher.refresh()
    await until_served(client, newer)
    board = await json_of(client, "/api/v1/nodes/leaderboard/")
    assert (board["timestamp"], board["count"]) == (newer, 2)  # never the older crawl's
    assert boards_built(client) == built + 1
