"""CSV formula injection (issue 40, case 5): a crawl's text that a spreadsheet would run as
a formula reaches the CSV downloads with a leading ``'``, as OWASP recommends, in cells
(``/api/nodes?format=csv``) and in headers (``/api/history?by=user_agent&format=csv``);
the JSON answers carry it unchanged."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from crawldash.live.snapshot.csv_records import _cells, csv_safe

from .conftest import Client, Serve, until_served
from .factories import export_body, row, write_snapshot

TS = 1_700_000_000
HOSTILE = (
    '=HYPERLINK("http://evil","x")',
    "+cmd|/C calc!A0",
    "@SUM(1)",
    "-2+3",
    "\t=1+1",
    "\r=1+1",
)
SAFE = "/Satoshi:27.0.0/"
PER_AGENT = 3  # nodes with each hostile agent: more than the safe one's, so all are top


def hostile_rows() -> list[list[Any]]:
    """Nodes with each hostile user agent, one with a hostile hostname, and a safe one
    whose latitude is negative (a number, left as it is)."""
    rows = [
        row(f"198.51.100.{i * PER_AGENT + n}", agent=agent)
        for i, agent in enumerate(HOSTILE)
        for n in range(PER_AGENT)
    ]
    safe = row("203.0.113.1", agent=SAFE)
    safe[7], safe[10] = "=cmd|' /C notepad'!A1", -33.8688
    return [*rows, safe]


async def text(client: Client, path: str) -> str:
    response = await client.get(path)
    assert response.status == 200, await response.text()
    return await response.text()


async def test_hostile_text_is_neutralised_in_both_csvs_and_unchanged_in_json(
    serve: Serve, data_dir: Path
):
    write_snapshot(data_dir, TS, export_body(hostile_rows()))
    client = await serve()
    await until_served(client, TS)
    table = list(csv.reader(io.StringIO(await text(client, "/api/nodes?format=csv"), newline="")))
    header, cells = table[0], {r[0]: dict(zip(table[0], r, strict=True)) for r in table[1:]}
    for i, agent in enumerate(HOSTILE):
        assert cells[f"198.51.100.{i * PER_AGENT}:8333"]["user_agent"] == "'" + agent
    safe = cells["203.0.113.1:8333"]
    assert safe["user_agent"] == SAFE
    assert safe["hostname"] == "'=cmd|' /C notepad'!A1"
    assert safe["latitude"] == "-33.8688"  # a number stays a number
    assert header[0] == "address"

    history = await text(client, "/api/history?by=user_agent&top=50&format=csv")
    columns = next(csv.reader(io.StringIO(history, newline="")))
    assert set(columns[2:]) == {"'" + agent for agent in HOSTILE} | {SAFE, "unknown", "other"}

    listed = (await (await client.get("/api/nodes?limit=1000")).json())["results"]
    agents = {node["user_agent"] for node in listed}
    assert agents == {*HOSTILE, SAFE}
    assert {node["hostname"] for node in listed} >= {"=cmd|' /C notepad'!A1"}
    points = await (await client.get("/api/history?by=user_agent&top=50")).json()
    assert set(points[-1]["counts"]) == {*HOSTILE, SAFE, "unknown", "other"}


def written(value: object) -> str:
    """A cell as the csv module writes it in a record, text made safe first (a record of
    one empty field is written ``""``: this one has another field after it)."""
    out = io.StringIO()
    cell = csv_safe(value) if isinstance(value, str) else value
    csv.writer(out).writerow(["" if cell is None else cell, "end"])
    return out.getvalue().removesuffix(",end\r\n")


@pytest.mark.parametrize(
    "column",
    [
        ["a", "b", "a"],  # plain text: each is its own cell
        ["a", None, "b"],  # with None
        ["a", "=1+1", "b"],  # one formula: the column is written a value at a time
        ["x\0=1", "y"],  # a NUL before a formula's start, inside one text
        ["a,b", 'say "hi"', "line\nbreak", "cr\rx"],
        ["-1", "+1", "@x", "\tx"],
        [1, None, 2**64 - 1],
        [-0.0, 0.0, 1.5, None],
        [0.0, -0.0],  # equal, each spelled as it is
        [None, None],
        [7, "7", None],  # mixed kinds
    ],
)
def test_each_column_is_written_as_the_csv_module_writes_it(column: list[object]):
    assert _cells(column) == [written(value) for value in column]
