"""The dashboard in a real browser: Debian's Chromium driven by Playwright."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from crawldash import cli

from .chromium import CHROMIUM, FLAGS, contrast
from .factories import export_body, rows, write_snapshot
from .helpers import error_of, get
from .process import serving

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium",
    ),
]


# Text the page shows in a check's aftermath, in either scheme: 4.5:1 or more (WCAG AA).
TEXT = [
    "#search-form button",
    "#check-form button",
    "#csv-link",
    ".tiles dt",
    ".headline small",
    "#by-network caption",
    "#by-network thead th",
    "#by-network tbody th",
    "#check-result",
    "#presence-legend",
    "#presence-summary",
    "#trend-controls label",
    "#unique-tiles dt",
    "#unique-tiles small",
    "footer",
]


def assert_readable(page: Any) -> None:
    ratios = {selector: round(contrast(page, selector), 2) for selector in TEXT}
    assert {s: r for s, r in ratios.items() if r < 4.5} == {}, ratios


def share(part: int, whole: int) -> str:
    """A share as the page writes it: JavaScript's ``toFixed(1)`` of the same double, which
    rounds an exact tie (10.25) up, where Python's format rounds it to even (10.2)."""
    exact = Decimal(100 * part / whole)
    return f"{exact.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}%"


def check_over_time(page: Any, base: str) -> None:
    """The "Over time" section against the API: the stacked shares of the day by user
    agent, then by country (chosen from the keyboard), the share of the user agents that
    hold a text typed in (a dashed line), and the distinct nodes of three windows."""
    from playwright.sync_api import expect

    chart = page.locator("#trend-chart")
    points = get(base + "/api/history?by=user_agent&top=8&limit=144")
    latest = points[-1]
    assert all("counts" in p for p in points)  # the demo's pruned crawls have them too
    layers = ", ".join(f"{n} {share(c, latest['reachable'])}" for n, c in latest["counts"].items())
    expect(chart).to_have_attribute("data-layers", "|".join(latest["counts"]))
    expect(chart).to_have_attribute(
        "aria-label",
        re.compile(
            f"^Chart of the nodes' shares by user agent, in UTC, over the last 144 crawls, .*; "
            f"latest: {re.escape(layers)}$"
        ),
    )
    tops = page.evaluate("trendChart.data.slice(1).map(layer => layer[layer.length - 1])")
    assert round(tops[-1], 6) == 100  # stacked: the top layer ends at every node
    page.fill("#trend-match", "Knots")
    page.keyboard.press("Enter")
    matched = get(base + "/api/history?by=user_agent&match=Knots&limit=144")
    last = matched[-1]
    assert 0 < last["matched"] < last["reachable"]
    expect(chart).to_have_attribute("data-matched", str(last["matched"]))
    expect(chart).to_have_attribute(
        "aria-label",
        re.compile(
            re.escape(
                f"; user agents holding \u201cKnots\u201d: latest "
                f"{share(last['matched'], last['reachable'])} "
                f"({last['matched']:,} of {last['reachable']:,} nodes)"
            )
            + "$"
        ),
    )
    line = page.evaluate(
        "({label: trendChart.series.at(-1).label, dash: trendChart.series.at(-1).dash,"
        " fill: trendChart.series.at(-1).fill ?? null, data: trendChart.data.at(-1)})"
    )
    assert line["label"] == "holding \u201cKnots\u201d"
    assert line["dash"]  # a dashed line over the layers, not another layer
    assert line["fill"] is None
    expected = [100 * p["matched"] / p["reachable"] for p in matched]
    assert [round(v, 9) for v in line["data"]] == [round(v, 9) for v in expected]
    page.focus("#trend-by")  # from the keyboard: the select, then its next option
    page.keyboard.press("ArrowDown")
    expect(page.locator("#trend-by")).to_have_value("country")
    countries = get(base + "/api/history?by=country&top=8&limit=144")[-1]["counts"]
    expect(chart).to_have_attribute("data-layers", "|".join(countries))
    expect(chart).to_have_attribute("data-matched", "")  # the line is the user agents' alone
    for window, tile in ((86_400, "day"), (604_800, "week"), (2_592_000, "month")):
        unique = get(base + f"/api/unique?window={window}")
        expect(page.locator(f"#unique-{tile}")).to_have_attribute(
            "data-unique", str(unique["unique"])
        )
        expect(page.locator(f"#unique-{tile}")).to_contain_text(f"{unique['unique']:,}")


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
        live = page.locator("#live")  # the live status line is announced as it changes
        expect(live).to_have_attribute("role", "status")
        expect(live).to_have_attribute("aria-live", "polite")
        expect(live).to_have_text("live")

        status = get(base + "/api/status")
        expect(page.locator("#tile-state")).to_have_text(status["state"])
        expect(page.locator("#tile-queue")).to_have_text(f"{status['queue_size']:,}")
        expect(page.locator("#tile-height")).to_have_text(f"{status['height']:,}")
        expect(page.locator("body")).to_have_attribute("data-points", "144")  # a day
        held = len(get(base + "/api/history?limit=1000000"))
        page.select_option("#range", label="All held")
        expect(page.locator("body")).to_have_attribute("data-points", str(held))
        page.check("#split")
        expect(page.locator("#chart .u-legend")).to_contain_text("onion")
        history = get(base + "/api/history?limit=1000000&by=network")
        reachable = [point["reachable"] for point in history]
        by_network = ", ".join(
            f"{name} {history[-1]['networks'].get(name, 0):,}"
            for name in ("ipv4", "ipv6", "onion", "i2p", "cjdns")
        )
        chart = page.locator("#chart")  # a text alternative that follows the data plotted
        expect(chart).to_have_attribute("role", "img")
        expect(chart).to_have_attribute(
            "aria-label",
            re.compile(
                f"^Chart of reachable nodes, in UTC, over the last {held:,} crawls, .*: "
                f"latest {reachable[-1]:,}, lowest {min(reachable):,}, "
                f"highest {max(reachable):,}; latest by address type: {by_network}$"
            ),
        )
        assert console_errors == []  # loaded cleanly (the check form's 400 below is logged)
        check_over_time(page, base)
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
        for table in page.locator(".breakdowns table").all():
            expect(table.locator("caption")).not_to_be_empty()
            expect(table.locator("thead th[scope=col]")).to_have_count(3)
            expect(table.locator("tbody tr").first.locator("th[scope=row]")).to_have_count(1)
        expect(page.locator("#by-network thead th").first).to_have_text("Address type")
        expect(page.locator("#by-network tbody th").first).to_have_text(first_row["value"])

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
        nodes_api = re.compile(r"/api/nodes\?")
        page.route(  # an error answer that is not JSON, as from a proxy in front
            nodes_api, lambda route: route.fulfill(status=503, content_type="text/plain", body="")
        )
        page.click("#search-form button")
        expect(page.locator("#search-count")).to_have_text(re.compile(r"^crawldash answered 503"))
        expect(page.locator("#search-count")).to_have_class("error")
        page.unroute(nodes_api)
        page.click("#search-form button")
        expect(page.locator("#search-count")).to_contain_text(f"{hetzner:,} nodes match")

        snapshot_tile = page.locator("#tile-snapshot").inner_text()
        newest_rows = rows(321)  # the next crawl, written below
        in_newest = {f"{r[0]}:{r[1]}" for r in newest_rows}
        found = next(a for a in get(base + "/api/snapshot")["nodes"] if a not in in_newest)
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
        gaps = sum(not r["present"] for r in runs)
        expect(strip.locator("span.absent")).to_have_count(gaps)
        # Present and absent differ in more than colour: solid and full height, or hatched
        # and lower; the legend shows the same; and a text summary says it in words.
        shape = "e => [getComputedStyle(e).backgroundImage, e.getBoundingClientRect().height]"
        absent_image, absent_height = strip.locator("span.absent").first.evaluate(shape)
        present_image, present_height = strip.locator("span.present").first.evaluate(shape)
        assert absent_image.startswith("repeating-linear-gradient(")
        assert present_image == "none"
        assert absent_height < present_height
        legend = page.locator("#presence-legend")
        assert legend.locator(".absent").evaluate(shape)[0] == absent_image
        assert legend.locator(".present").evaluate(shape)[0] == "none"
        expect(legend).to_contain_text("not in it (hatched)")
        total = sum(run["crawls"] for run in runs)
        missing = total - present
        assert gaps >= 1  # flaky: in the latest crawl, with a gap before it
        summary = f"; missing from {missing:,} crawl{'s' * (missing != 1)} in {gaps:,} gap"
        expect(page.locator("#presence-summary")).to_be_visible()
        expect(page.locator("#presence-summary")).to_contain_text(
            f"In {present:,} of the last {total:,} crawls ("
        )
        expect(page.locator("#presence-summary")).to_contain_text(summary)
        expect(strip).to_have_attribute(
            "aria-label", re.compile(f"^Presence of {re.escape(flaky)}: In {present:,} of ")
        )
        expect(strip).to_have_attribute("aria-label", re.compile(re.escape(summary)))
        result = page.locator("#check-result")
        dns = error_of(base + "/api/check?address=example.com:8333")
        assert dns["status"] == 400
        for address, css, text in [
            (found, "found", "is reachable"),
            ("203.0.113.77:8333", "missing", "is not in the latest crawl"),
            ("example.com:8333", "error", "DNS names are not accepted"),
        ]:
            page.fill("#address", address)
            page.keyboard.press("Enter")  # the form works from the keyboard
            expect(result).to_contain_text(text)
            expect(result).to_have_class(css)
        expect(result).to_have_text(dns["message"])  # the API's error message, as it is
        expect(strip).to_be_hidden()
        expect(page.locator("#presence-summary")).to_be_hidden()

        check_api = re.compile(r"/api/check\?")
        page.route(  # an error answer that is not JSON: its status is shown, not a parse error
            check_api,
            lambda route: route.fulfill(
                status=502, content_type="text/html", body="<html><h1>Bad Gateway</h1></html>"
            ),
        )
        page.fill("#address", found)
        page.keyboard.press("Enter")
        expect(result).to_have_text(re.compile(r"^crawldash answered 502"))
        expect(result).to_have_class("error")
        page.unroute(check_api)

        typed = "203.0.113.77:8333"
        page.fill("#address", found)
        page.keyboard.press("Enter")
        expect(result).to_have_text(re.compile(f"^{re.escape(found)} is reachable"))
        expect(page.locator("body")).to_have_attribute("data-checked", found)
        page.fill("#address", typed)  # typed, not checked: a new crawl re-checks `found`

        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)  # the artefact

        newest = status["snapshot_timestamp"] + 600
        write_snapshot(data_dir, newest, export_body(newest_rows))
        expect(page.locator("body")).to_have_attribute("data-status", str(newest), timeout=10_000)
        expect(page.locator("body")).to_have_attribute("data-points", str(held + 1))
        expect(page.locator("#tile-snapshot")).not_to_have_text(snapshot_tile)
        expect(page.locator("#tile-reachable")).to_have_text("321")  # no reload
        expect(page.locator("#by-network tbody tr").first).to_contain_text("ipv4321")
        changes = get(base + "/api/changes")
        assert changes["joined_count"] == 321  # none of the new crawl's nodes was there before
        expect(page.locator("body")).to_have_attribute("data-joined", "321")
        expect(page.locator("body")).to_have_attribute("data-left", str(changes["left_count"]))
        expect(live).to_contain_text("a new crawl, 321 nodes")  # announced
        expect(chart).to_have_attribute("aria-label", re.compile(r": latest 321, "))
        day = get(base + "/api/unique?window=86400")
        expect(page.locator("#unique-day")).to_have_attribute("data-unique", str(day["unique"]))
        countries = get(base + "/api/history?by=country&top=8&limit=144")[-1]["counts"]
        expect(page.locator("#trend-chart")).to_have_attribute(
            "data-layers", "|".join(countries)
        )  # redrawn for the new crawl, whose values lead now
        rechecked = get(base + f"/api/check?address={found}")
        assert not rechecked["reachable"]
        expect(page.locator("#check-presence")).to_contain_text(
            f"of {rechecked['presence']['crawls']:,} crawls held"
        )
        reason = rechecked["reason"]["detail"].replace("Not in the newest export, and c", "C")
        expect(result).to_have_text(f"{found} is not in the latest crawl. {reason}")
        expect(page.locator("#address")).to_have_value(typed)  # what was typed stays there
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

        assert_readable(page)  # light
        page.screenshot(path=str(tmp_path / "dashboard-light.png"), full_page=True)
        page.emulate_media(color_scheme="dark")
        expect(page.locator("body")).to_have_css("background-color", "rgb(13, 17, 23)")
        expect(chart).to_have_attribute("data-scheme", "dark")  # redrawn in the dark colours
        expect(page.locator("#trend-chart")).to_have_attribute("data-scheme", "dark")
        for button in ("#check-form button", "#search-form button"):
            assert contrast(page, button) >= 4.5, button
        assert_readable(page)
        page.screenshot(path=str(tmp_path / "dashboard-dark.png"), full_page=True)
        browser.close()
    assert script_errors == []
