"""Every labelled counter is at 0 from the start, for every value its label can take: a
counter that first appears at 1 reads to Prometheus as no increase, so the first rejected
file (or refused check) of a kind would raise no alert. Shown with a real Prometheus
scraping a real crawldash: ``CrawlFilesRejected`` is active after the first bad file."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from crawldash.checknode.checker import OUTCOMES, REFUSAL_CAUSES
from crawldash.ops.watching import REJECTION_KINDS
from crawldash.settings.addresses import cidrs

from .conftest import Serve
from .factories import export_body, rows, write_snapshot
from .test_operations import key, scrape
from .test_prometheus_networks import alerts, crawldash, prometheus, query, until

PACKAGE = Path(__file__).resolve().parent.parent / "crawldash"
LIVE = {
    "live_check": ("main",),
    "live_check_magic": (("main", "f9beb4d9"),),
    "live_check_allow": cidrs("127.0.0.0/8"),
}


def raised(pattern: str) -> set[str]:
    """Every first capture of ``pattern`` in the package's code."""
    return {
        found
        for path in PACKAGE.rglob("*.py")
        for found in re.findall(pattern, path.read_text(), flags=re.DOTALL)
    }


def test_the_kinds_are_every_kind_the_code_rejects_a_file_as():
    kinds = raised(r'LoadError\(\s*"(\w+)"')
    assert {"not_json", "future"} <= kinds  # the pattern finds both spellings
    assert kinds == set(REJECTION_KINDS)


def test_the_causes_are_every_cause_the_code_refuses_a_check_for():
    causes = raised(r'TooMany\(\s*"(\w+)"') | raised(r'Refusal\(\s*"\w+",\s*"(\w+)"')
    table = (PACKAGE / "checknode" / "special.py").read_text()  # the blocks not public
    causes |= set(re.findall(r'\("[0-9a-f:./]+", "(\w+)", "', table))
    causes |= {"client_busy", "host_busy"}  # raised under the name InFlight gives them
    assert {"rate_limited", "host_name", "invalid", "loopback", "site_local"} <= causes
    assert causes == set(REFUSAL_CAUSES)


async def test_every_labelled_counter_starts_at_0(serve: Serve, data_dir: Path, now: int):
    write_snapshot(data_dir, now - 60, export_body(rows(3)))
    client = await serve(**LIVE)
    await client.get("/api/status")
    found = await scrape(client)
    for kind in REJECTION_KINDS:
        assert found[key("crawldash_files_rejected_total", kind=kind)] == 0, kind
    for outcome in OUTCOMES:
        assert found[key("crawldash_live_checks_total", outcome=outcome, cached="false")] == 0
    assert found[key("crawldash_live_checks_total", outcome="closed", cached="true")] == 0
    for cause in REFUSAL_CAUSES:
        assert found[key("crawldash_live_check_refusals_total", cause=cause)] == 0, cause
    # a refused check is counted in the series that was there already
    for address in ("::1", "localhost"):
        response = await client.post("/api/v1/checknode/", data={"address": address, "port": 1})
        assert response.status == 400
    after = await scrape(client)
    for cause in ("loopback", "host_name"):
        assert after[key("crawldash_live_check_refusals_total", cause=cause)] == 1


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("prometheus") is None, reason="prometheus (Debian prometheus) missing"
)
def test_the_first_rejected_file_raises_the_alert(tmp_path: Path):
    """crawldash starts with a good crawl; Prometheus scrapes it (every kind at 0); the
    first empty crawl file is rejected, and CrawlFilesRejected is active at once."""
    data = tmp_path / "data"
    now = int(time.time())
    write_snapshot(data, now - 120, export_body(rows(4)))
    empty = 'crawldash_files_rejected_total{kind="empty"}'
    with (
        crawldash({"main": data}, tmp_path / "state") as (base, _),
        prometheus(tmp_path, base.removeprefix("http://")) as prom,
    ):
        # Prometheus holds the kind at 0 before any file of it: the next one is an increase
        until(lambda: query(prom, empty), {"main": "0"})
        assert alerts(prom, "CrawlFilesRejected") == {}
        write_snapshot(data, now - 60, b"")  # the first bad file since the start
        until(lambda: query(prom, empty), {"main": "1"})
        increase = f"increase({empty}[1h]) > 0"
        until(lambda: set(query(prom, increase)), {"main"})
        # no `for:` in the rule: active means firing at the first evaluation that sees it
        until(lambda: alerts(prom, "CrawlFilesRejected"), {"main": "firing"})
