"""The dashboard in a real browser: Debian's Chromium driven by Playwright."""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from crawldash import cli

from .factories import export_body, rows, write_snapshot
from .process import serving

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def test_dashboard_in_chromium(tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    cli.main(
        [
            "demo",
            "--dir",
            str(tmp_path),
            "--nodes",
            "400",
            "--days",
            "2",
            "--keep-files",
            "3",
            "--no-serve",
            "--log-level",
            "warning",
        ]
    )
    data_dir = tmp_path / "data"
    with (
        serving(data_dir, tmp_path / "state", "--log-level", "warning") as base,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        console_errors: list[str] = []
        script_errors: list[str] = []
        page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: script_errors.append(str(error)))
        page.goto(base + "/")

        status = get(base + "/api/status")
        expect(page.locator("#tile-state")).to_have_text(status["state"])
        expect(page.locator("#tile-queue")).to_have_text(f"{status['queue_size']:,}")
        expect(page.locator("#tile-height")).to_have_text(f"{status['height']:,}")
        expect(page.locator("body")).to_have_attribute("data-points", "144")  # a day
        held = len(get(base + "/api/history?limit=1000000"))
        page.select_option("#range", label="All held")
        expect(page.locator("body")).to_have_attribute("data-points", str(held))
        page.check("#split")
        expect(page.locator(".u-legend")).to_contain_text("onion")
        assert console_errors == []  # loaded cleanly (the check form's 400 below is logged)
        changes = get(base + "/api/changes")
        expect(page.locator("body")).to_have_attribute("data-joined", str(changes["joined_count"]))
        expect(page.locator("body")).to_have_attribute("data-left", str(changes["left_count"]))
        expect(page.locator("#tile-churn")).to_have_text(
            f"+{changes['joined_count']:,} joined, \u2212{changes['left_count']:,} left"
        )

        snapshot = get(base + "/api/snapshot")
        expect(page.locator("#tile-reachable")).to_have_text(f"{snapshot['total_nodes']:,}")
        networks = get(base + "/api/breakdown?by=network&limit=8")
        first_row = networks["rows"][0]
        expect(page.locator("#by-network tbody tr").first).to_contain_text(
            f"{first_row['value']}{first_row['nodes']:,}"
        )
        expect(page.locator("#by-asn tbody")).to_contain_text("AS")  # providers, with names

        known = next(a for a in snapshot["nodes"] if not a.startswith("["))
        page.fill("#search", known)
        page.keyboard.press("Enter")
        expect(page.locator("#search-results")).to_contain_text(known)
        page.fill("#search", "Hetzner")
        page.click("#search-form button")
        hetzner = get(base + "/api/nodes?q=hetzner")["count"]
        expect(page.locator("body")).to_have_attribute("data-searched", str(hetzner))
        with page.expect_download() as download_info:
            page.click("#csv-link")
        downloaded = Path(download_info.value.path()).read_text().splitlines()
        assert len(downloaded) - 1 == hetzner  # the header, then a row per node

        snapshot_tile = page.locator("#tile-snapshot").inner_text()
        found = next(iter(get(base + "/api/snapshot")["nodes"]))
        flaky = next(  # a node of the latest crawl with gaps in the chart's range
            a
            for a in get(base + "/api/snapshot")["nodes"]
            if len(get(base + f"/api/presence?address={a}&limit=1000000000")) > 1
        )
        page.fill("#address", flaky)
        page.keyboard.press("Enter")
        presence = get(base + f"/api/check?address={flaky}")["presence"]
        runs = get(base + f"/api/presence?address={flaky}&limit=1000000000")  # "All held"
        seen = f"{presence['seen']}/{presence['crawls']}"
        expect(page.locator("body")).to_have_attribute("data-seen", seen)
        expect(page.locator("#check-presence")).to_contain_text(
            f"Seen in {presence['seen']:,} of {presence['crawls']:,} crawls held"
        )
        strip = page.locator("#presence-strip")
        expect(strip).to_have_attribute("data-runs", str(len(runs)))
        present = sum(run["crawls"] for run in runs if run["present"])
        expect(strip).to_have_attribute("data-present", str(present))
        expect(strip.locator("span.absent")).to_have_count(sum(not r["present"] for r in runs))
        for address, css, text in [
            (found, "found", "is reachable"),
            ("203.0.113.77:8333", "missing", "is not in the latest crawl"),
            ("example.com:8333", "error", "DNS names are not accepted"),
        ]:
            page.fill("#address", address)
            page.keyboard.press("Enter")  # the form works from the keyboard
            expect(page.locator("#check-result")).to_contain_text(text)
            expect(page.locator("#check-result")).to_have_class(css)

        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)  # the artefact
        if os.environ.get("CRAWLDASH_SCREENSHOT"):  # how docs/dashboard.png is made
            shutil.copy(tmp_path / "dashboard.png", os.environ["CRAWLDASH_SCREENSHOT"])

        newest = status["snapshot_timestamp"] + 600
        write_snapshot(data_dir, newest, export_body(rows(321)))
        expect(page.locator("body")).to_have_attribute("data-status", str(newest), timeout=10_000)
        expect(page.locator("body")).to_have_attribute("data-points", str(held + 1))
        expect(page.locator("#tile-snapshot")).not_to_have_text(snapshot_tile)
        expect(page.locator("#tile-reachable")).to_have_text("321")  # no reload
        expect(page.locator("#by-network tbody tr").first).to_contain_text("ipv4321")
        changes = get(base + "/api/changes")
        assert changes["joined_count"] == 321  # none of the new crawl's nodes was there before
        expect(page.locator("body")).to_have_attribute("data-joined", "321")
        expect(page.locator("body")).to_have_attribute("data-left", str(changes["left_count"]))
        unlabelled = page.evaluate(
            "[...document.querySelectorAll('input, select')]"
            ".filter(e => e.labels.length === 0).map(e => e.id)"
        )
        assert unlabelled == []
        light = page.evaluate("getComputedStyle(document.body).backgroundColor")

        phone = browser.new_page(viewport={"width": 390, "height": 844}, color_scheme="dark")
        phone.goto(base + "/")
        expect(phone.locator("body")).to_have_attribute("data-points", "144")
        assert phone.evaluate("getComputedStyle(document.body).backgroundColor") != light
        assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        browser.close()
    assert script_errors == []
