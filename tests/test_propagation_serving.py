"""What crawldash serves from the bridge's kept files: the latency buckets' rules, the
list's pages, a broken or missing file, and the routes it does not serve."""

from __future__ import annotations

from array import array
from pathlib import Path

import msgspec
import pytest

from crawldash.crawl.propagation import (
    BLOCKS_FILE,
    LATENCY_FILE,
    Block,
    BlocksFile,
    LatencyFile,
    compacted,
    latency_series,
    pack,
    write_blocks,
    write_latency,
)

from .conftest import Serve, eventually

NOW_BUCKET = 283_333 * 6 + 5  # the last 10 minutes of an hour


def block(number: int, nodes: int = 3) -> Block:
    head = [
        (f"203.0.113.{i + 1}:8333", 1_700_000_000_000 + number * 600_000 + i) for i in range(nodes)
    ]
    return Block(f"{number:064x}", head[0][1], nodes, 2.0, 1.0, 0.816, 1.0, 1.8, head)


def test_latency_buckets_mean_minus_one_and_zero():
    """bitnodes.io's rules: the mean; -1 unreachable (looked at, neither held nor
    answering); 0 reachable without a round-trip time, or nobody looking."""
    now = NOW_BUCKET
    packed = pack({now: (2, 101), now - 1: (0, 0), now - 7: (3, 30)})
    looked = array("i", [now - 40, now - 7, now - 3, now - 1, now]).tobytes()
    views = latency_series(packed, now, looked)
    daily = dict(views["daily"])
    assert len(views["daily"]) == 144
    assert daily[now * 600] == 50  # 101 / 2, to the nearest ms (halves to even)
    assert daily[(now - 1) * 600] == 0  # held (reachable), no round-trip time
    assert daily[(now - 2) * 600] == 0  # nobody looked: no data
    assert daily[(now - 3) * 600] == -1  # looked at, not held: unreachable
    assert daily[(now - 7) * 600] == 10
    hourly = dict(views["weekly"])
    assert hourly[(now - 5) * 600] == 50  # the held bucket adds no round-trip time
    assert hourly[(now - 11) * 600] == 10
    assert hourly[(now - 41) * 600] == -1  # the hour holding now - 40: looked, unreachable
    assert hourly[(now - 17) * 600] == 0  # an hour nobody looked in
    assert views["weekly"][-1][0] == (now - 5) * 600
    assert len(views["weekly"]) == 168
    assert len(views["monthly"]) == 120


def test_compaction_keeps_the_weekly_and_monthly_means_exact():
    now = NOW_BUCKET
    cells = {now - 200 - i: (1, 10 * i) for i in range(12)}  # over a day old: into hours
    cells |= {now - 2000 - i: (2, 7 * i) for i in range(40)}  # over a week old: six hours
    cells[now - 5000] = (1, 5)  # over 30 days old: dropped
    before = latency_series(pack(cells), now)
    merged = compacted(pack(cells), now)
    after = latency_series(pack(merged), now)
    assert after["weekly"] == before["weekly"]
    assert after["monthly"] == before["monthly"]
    assert len(merged) < len(cells) - 30
    assert all(bucket > now - 4320 for bucket in merged)


async def test_inv_pages_bodies_and_what_is_not_served(serve: Serve, tmp_path: Path):
    kept = tmp_path / "kept"
    write_blocks(kept, BlocksFile(0, [block(n) for n in (5, 4, 3)]))
    client = await serve(propagation_dir=(("main", kept),))
    page = await (await client.get("/api/v1/inv/?limit=2")).json()
    assert page["count"] == 3
    assert page["previous"] is None
    assert [row["inv_hash"] for row in page["results"]] == [f"{5:064x}", f"{4:064x}"]
    assert page["results"][0]["50%"] == 1.0
    assert page["results"][0]["nodes"] == 3
    assert page["next"].endswith("/api/v1/inv/?limit=2&page=2")
    second = await (await client.get("/api/v1/inv/?limit=2&page=2")).json()
    assert second["next"] is None
    assert second["previous"].endswith("page=1")
    body = await (await client.get(f"/api/v1/inv/{3:064X}/")).json()
    assert body["inv_hash"] == f"{3:064x}"
    assert body["stats"]["head"][0] == ["203.0.113.1:8333", 1_700_001_800_000]
    assert (body["stats"]["min"], body["stats"]["max"], body["stats"]["90%"]) == (0, 2, 1.8)
    response = await client.get("/api/v1/addresses/")
    error = (await response.json())["error"]
    assert (response.status, error["code"]) == (404, "not_served")
    assert "addresses" in error["message"]

    write_blocks(kept, BlocksFile(1, [block(6)]))  # the bridge writes anew: seen

    async def six() -> bool:
        page: dict[str, int] = await (await client.get("/api/v1/inv/")).json()
        return page["count"] == 1

    await eventually(six)


async def test_a_block_kept_before_its_curve_is_served_without_one(serve: Serve, tmp_path: Path):
    """A blocks file from a bridge that kept no curve (nine fields a block) still loads; its
    blocks answer without ``ecdf``, and a block with a curve answers it as [ms, percent]."""
    kept = tmp_path / "kept"
    curve = list(range(0, 2100, 100))  # the delay at each 5%: 0 ms to 2,000 ms
    write_blocks(kept, BlocksFile(0, [msgspec.structs.replace(block(8), curve=curve), block(7)]))
    older = msgspec.msgpack.decode((kept / BLOCKS_FILE).read_bytes())
    older["blocks"][1] = older["blocks"][1][:9]  # as an older bridge wrote it
    (kept / BLOCKS_FILE).write_bytes(msgspec.msgpack.encode(older))
    client = await serve(propagation_dir=(("main", kept),))
    with_curve = await (await client.get(f"/api/v1/inv/{8:064x}/")).json()
    assert with_curve["stats"]["ecdf"][:2] == [[0, 0], [100, 5]]
    assert with_curve["stats"]["ecdf"][-1] == [2000, 100]
    assert len(with_curve["stats"]["ecdf"]) == 21
    without = await (await client.get(f"/api/v1/inv/{7:064x}/")).json()
    assert without["stats"]["head"][0] == ["203.0.113.1:8333", 1_700_004_200_000]
    assert "ecdf" not in without["stats"]


async def test_a_broken_file_keeps_the_last_good_data(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    kept = tmp_path / "kept"
    write_latency(
        kept, LatencyFile(NOW_BUCKET, {"203.0.113.5:8333": pack({NOW_BUCKET: (1, 42)})}, {})
    )
    client = await serve(propagation_dir=(("main", kept),))
    body = await (await client.get("/api/v1/nodes/203.0.113.5-8333/latency/")).json()
    assert body["daily_latency"][-1] == {"t": NOW_BUCKET * 600, "v": 42}
    (kept / LATENCY_FILE).write_bytes(b"\xc1 not msgpack")

    async def refused() -> bool:
        return f"kept {LATENCY_FILE} not read" in caplog.text  # looked at, and refused

    await eventually(refused)
    again = await client.get("/api/v1/nodes/203.0.113.5-8333/latency/")
    assert again.status == 200
    assert (await again.json()) == body


async def test_without_a_folder_the_routes_answer_empty(serve: Serve):
    client = await serve()
    page = await (await client.get("/api/v1/inv/")).json()
    assert page == {"count": 0, "next": None, "previous": None, "results": []}
    response = await client.get("/api/v1/nodes/203.0.113.5-8333/latency/")
    assert response.status == 404


def test_cells_are_three_32_bit_integers():
    assert array("i", pack({7: (1, 2)})).tolist() == [7, 1, 2]
