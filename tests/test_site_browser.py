"""The site as a new user meets it, in Debian's Chromium at 1,280 px and 375 px, light and
dark: ``crawldash demo`` (its map, charts, tables, check form, propagation, networks, node
pages, leaderboard and "Check now" with its own peer), and a folder whose every file is
rejected. Each test names the defect of issue 54 it covers; every page keeps the harness's
rules: no failed request, no console error, WCAG AA contrast, no sideways scroll."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.propagation import read_latency

from .chromium import CHROMIUM, FLAGS
from .factories import write_snapshot
from .helpers import get
from .process import PATIENCE, free_port, serving, wait_until
from .test_map_browser import unreadable
from .test_node_page import Seen

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium",
    ),
]
VIEWS = [(1280, "light"), (1280, "dark"), (375, "light"), (375, "dark")]
IDS = [f"{width}-{scheme}" for width, scheme in VIEWS]
UTC_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


class Demo:
    def __init__(self, base: str, folder: Path) -> None:
        self.base, self.folder = base, folder


def upgraded(folder: Path) -> str | None:
    """A node whose user agent changed from the demo's second newest crawl to its newest."""
    data = folder / "data"
    older, newest = sorted(p for p in data.glob("1*.json"))[-2:]

    def agents(path: Path) -> dict[str, str]:
        rows = json.loads(path.read_bytes())
        return {f"[{r[0]}]:{r[1]}" if ":" in r[0] else f"{r[0]}:{r[1]}": r[3] for r in rows}

    before, after = agents(older), agents(newest)
    return next((a for a in sorted(after) if a in before and before[a] != after[a]), None)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    folder = tmp_path_factory.mktemp("site")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "crawldash", "demo", "--dir", str(folder), "--port"]
    options = ["--nodes", "3000", "--days", "2", "--keep-files", "3", "--log-level", "warning"]
    process = subprocess.Popen([*command, str(port), *options], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: get(base + "/api/map"), within=90)
        # The newest crawl is written once the one before is served: its upgrades are
        # the changes the node pages show.
        wait_until(lambda: len(list((folder / "data").glob("1*.json"))) == 3, within=90)
        changed = upgraded(folder)
        if changed is not None:  # else the node page's test fails on it
            wait_until(lambda: get(f"{base}/api/profile?address={changed}")["changes"], within=90)
        yield Demo(base, folder)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


def opened(browser: Any, url: str, width: int, scheme: str) -> tuple[Any, Seen]:
    page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
    seen = Seen(page)
    page.goto(url)
    return page, seen


def keeps_the_rules(page: Any, seen: Seen, base: str) -> None:
    page.wait_for_load_state("networkidle")
    seen.check(base)
    width = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right"
        " > innerWidth + 1).map(e => e.id || e.className || e.tagName + ': '"
        " + e.textContent.slice(0, 60)).slice(0, 5)"
    )
    assert width[0] <= width[1], (width, wide)
    assert unreadable(page) == []
    page.close()


def loaded(page: Any) -> None:
    from playwright.sync_api import expect

    # A busy machine draws the page slowly: expect's default of 5 s is not a bound here.
    for chart, drawn in (
        ("#map", "groups"),
        ("#trend-chart", "points"),
        ("#times-chart", "blocks"),
    ):
        expect(page.locator(chart)).to_have_attribute(
            f"data-{drawn}", re.compile(r"^\d+$"), timeout=PATIENCE * 1000
        )


@pytest.mark.parametrize(("width", "scheme"), VIEWS, ids=IDS)
def test_map_tables_and_tiles(demo: Demo, browser: Any, width: int, scheme: str):
    """1 (the biggest group's hover), 2 (legends' names), 3 (the Knots overlay and map
    legend), 10 ("network"), 12 (the tile grid)."""
    from playwright.sync_api import expect

    page, seen = opened(browser, demo.base + "/", width, scheme)
    loaded(page)
    # 1. A hover and a tap at a city's biggest group name it with its whole count.
    groups = get(demo.base + "/api/map")["groups"]
    for place in ("Ashburn", "Falkenstein"):
        group = max((g for g in groups if g["place"] == place), key=lambda g: g["nodes"])
        words = f"{place}, {group['country']}: {group['nodes']:,} nodes"
        dot = page.locator(f'#map circle[data-tip^="{words}"]')
        dot.scroll_into_view_if_needed()
        box = dot.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        expect(page.locator("#map-tip")).to_contain_text(words)
        page.mouse.move(0, 0)
        page.mouse.click(x, y)
        expect(page.locator("#map-tip")).to_contain_text(words)
    # 2. Legends name what the tables name: no API keys, providers and countries named.
    chart = page.locator("#trend-chart")
    page.select_option("#trend-by", "height")
    expect(chart).to_have_attribute("data-labels", re.compile("consensus height"))
    legend = chart.locator(".u-legend")
    for key in ("behind_1_6", "behind_more"):
        expect(legend).not_to_contain_text(key)
    assert "consensus" not in chart.get_attribute("data-labels").split("|")
    page.select_option("#trend-by", "asn")
    expect(chart).to_have_attribute("data-labels", re.compile(r"AS\d+ \w"))
    labels = chart.get_attribute("data-labels").split("|")
    assert all(re.fullmatch(r"AS\d+", label) is None for label in labels), labels
    page.select_option("#trend-by", "country")
    expect(chart).to_have_attribute("data-labels", re.compile("Germany"))
    assert all(
        re.fullmatch(r"[A-Z]{2}", label) is None
        for label in chart.get_attribute("data-labels").split("|")
    )
    expect(page.locator("#by-country tbody")).to_contain_text("Germany (DE)")
    # 3. "User agents holding" belongs to the user agents' chart alone.
    page.select_option("#trend-by", "user_agent")
    page.fill("#trend-match", "Knots")
    page.locator("#trend-match").press("Enter")
    expect(chart).to_have_attribute("data-matched", re.compile(r"^\d+$"))
    expect(legend).to_contain_text("holding “Knots”")
    page.select_option("#trend-by", "country")
    expect(chart).to_have_attribute("data-labels", re.compile("Germany"))
    expect(legend).not_to_contain_text("holding")
    expect(page.locator("#trend-match")).to_be_hidden()
    page.select_option("#map-colour", "client")
    page.fill("#map-match", "Knots")
    page.locator("#map-match").press("Enter")
    expect(page.locator("#map")).to_have_attribute("data-colour", "client")
    whole = get(demo.base + "/api/history?by=user_agent&match=Knots&limit=1")[-1]["matched"]
    mapped = get(demo.base + "/api/map?match=Knots")["matched"]
    expect(page.locator("#map-legend")).to_contain_text(
        f"{mapped:,} nodes of the crawl's {whole:,}; {whole - mapped:,} have no place"
    )
    # 10. "Network" is the chain served; the kinds of address are address types.
    expect(page.locator("#networks-label")).to_have_text("Network (chain) served:")
    expect(page.locator("#chart-controls")).to_contain_text("Split by address type")
    expect(page.locator("main")).not_to_contain_text("Split by network")
    expect(page.locator("#by-network caption")).to_have_text("Address types")
    # 12. The status tiles make whole rows: as many on each.
    tops = page.evaluate(
        "[...document.querySelectorAll('#status-tiles > div')].map(t => t.offsetTop)"
    )
    rows = [tops.count(top) for top in sorted(set(tops))]
    assert len(set(rows)) == 1, rows
    assert rows[0] == (4 if width >= 1280 else 2)
    keeps_the_rules(page, seen, demo.base)


@pytest.mark.parametrize(("width", "scheme"), VIEWS, ids=IDS)
def test_times_checks_blocks_and_windows(demo: Demo, browser: Any, width: int, scheme: str):
    """4 (one form of time, UTC), 5 (the check's reason; never seen), 6 (latency asked for
    only where kept), 7 (blocks named by time, a row chooses one), 8 (30 days of 2 held),
    and "Check now" with the demo's own peer."""
    from playwright.sync_api import expect

    page, seen = opened(browser, demo.base + "/", width, scheme)
    loaded(page)
    # 4. Every time in one form, in UTC; the charts' axes too.
    expect(page.locator("#tile-snapshot")).to_have_text(UTC_TIME)
    expect(page.locator("#chart")).to_have_attribute("aria-label", re.compile("in UTC"))
    expect(page.locator("#chart .u-legend")).to_contain_text("time (UTC)")
    assert not re.search(r"\d+/\d+/\d+", page.locator("main").inner_text())
    # 7. Blocks by when first announced; a row chooses its block.
    rows = page.locator("#blocks tbody tr")
    expect(rows.first.locator("small.when")).to_have_text(UTC_TIME)
    third = rows.nth(2)
    chosen = third.get_attribute("data-hash")
    third.locator("td").nth(1).click()  # the nodes' count, not the hash's button
    expect(page.locator("#ecdf-chart")).to_have_attribute("data-block", chosen)
    expect(third).to_have_class(re.compile("chosen"))
    # 8. A window longer than the crawls held says so.
    expect(page.locator("#unique-month")).to_contain_text("only 2.0 days held")
    expect(page.locator("#unique-day")).not_to_contain_text("held")
    # 5. A node not in the crawl: the reason, as /api/check gives it.
    gone = get(demo.base + "/api/changes")["left"][0]
    page.fill("#address", gone)
    page.click("#check-form button[type=submit]")
    reason = get(f"{demo.base}/api/check?address={gone}")["reason"]
    assert reason["code"] != "up"
    expect(page.locator("#check-result")).to_have_attribute("data-reason", reason["code"])
    expect(page.locator("#check-result")).to_contain_text(reason["detail"][-60:])
    expect(page.locator("#check-presence")).to_contain_text(UTC_TIME)
    page.fill("#address", "203.0.113.77:8333")  # never seen
    page.click("#check-form button[type=submit]")
    expect(page.locator("#check-result")).to_have_attribute("data-reason", re.compile(r"\w"))
    expect(page.locator("#presence-summary")).to_contain_text("In none of the last")
    expect(page.locator("#presence-summary")).not_to_contain_text("gap")
    # 6. The latency is asked for where the bridge keeps one, and only there.
    latency = read_latency(demo.folder / "bridge")
    assert latency is not None
    kept = next(iter(latency.nodes))
    page.fill("#address", kept)
    page.click("#check-form button[type=submit]")
    expect(page.locator("#check-latency")).to_contain_text("ms on average")
    asked = [url for url in seen.requested if "/latency/" in url]
    assert len(asked) == 1, asked
    # "Check now": the demo offers its own peer, and the check reaches it.
    hint = page.locator("#check-now-hint")
    expect(hint).to_contain_text("its own peer")
    peer = hint.get_attribute("data-peer")
    hint.locator("button").click()
    expect(page.locator("#address")).to_have_value(peer)
    page.click("#check-now")
    expect(page.locator("#check-now-result")).to_contain_text(
        "Up: /crawldash-demo-peer:1.0/", timeout=20_000
    )
    expect(page.locator("#check-now-result")).to_contain_text("the demo's own peer")
    keeps_the_rules(page, seen, demo.base)


@pytest.mark.parametrize(("width", "scheme"), VIEWS, ids=IDS)
def test_the_demos_networks_look_like_networks(demo: Demo, browser: Any, width: int, scheme: str):
    """11: testnet4 has its own height and port; address types and client shares move."""
    from playwright.sync_api import expect

    main = get(demo.base + "/api/status")["height"]
    test = get(demo.base + "/n/testnet4/api/status")["height"]
    assert abs(main - test) > 100_000
    page, seen = opened(browser, demo.base + "/n/testnet4/", width, scheme)
    expect(page.locator("#tile-height")).to_have_text(f"{test:,}")
    page.fill("#search", "")
    page.click("#search-form button")
    expect(page.locator("#search-results li").first).to_contain_text(":48333")
    keeps_the_rules(page, seen, demo.base)
    points = get(demo.base + "/api/history?by=network&limit=288")
    for name in ("ipv4", "ipv6"):
        counts = [p["networks"][name] for p in points]
        assert max(counts) - min(counts) > 0.01 * max(counts), name
    agents = get(demo.base + "/api/history?by=user_agent&top=8&limit=288")
    newest = [p for p in agents if p.get("counts")]

    def share(point: dict[str, Any]) -> float:
        return float(point["counts"].get("/Satoshi:29.0.0/", 0) / point["reachable"])

    assert share(newest[-1]) > share(newest[0]) + 0.02


@pytest.mark.parametrize(("width", "scheme"), VIEWS, ids=IDS)
def test_a_node_page_says_everything_once(demo: Demo, browser: Any, width: int, scheme: str):
    """The node page: no repetition, hostname, time zone, connected since as uptime, uptime
    over 24 h, 7 and 30 days, service names, latency by day, week and month, what changed,
    its PIX and rank; and the leaderboard page, searched, its rows to node pages."""
    from playwright.sync_api import expect

    changed = upgraded(demo.folder)
    latency = read_latency(demo.folder / "bridge")
    assert latency is not None
    ranked = get(demo.base + "/api/v1/nodes/leaderboard/?limit=100")["results"]
    node = next(r["node"] for r in ranked if r["node"] in latency.nodes and r["dli"] != "0.0000")
    host, port = node.rpartition(":")[0].strip("[]"), node.rpartition(":")[2]
    page, seen = opened(browser, f"{demo.base}/nodes/{host}-{port}/", width, scheme)
    check = get(f"{demo.base}/api/check?address={node}")
    expect(page.locator("body")).to_have_attribute("data-shown", str(check["snapshot_timestamp"]))
    state = page.locator("section[aria-labelledby=state-heading]")
    expect(state).to_contain_text(check["reason"]["detail"])
    assert state.inner_text().count("newest export") == 1
    values = check["node"]
    expect(page.locator("#value-hostname")).to_have_text(values["hostname"] or "—")
    expect(page.locator("#value-timezone")).to_have_text(values["timezone"] or "—")
    # The demo's node may have been up for days or for hours: node.js's fmtSpan's forms.
    uptime = re.compile(r"UTC: up (\d+ d \d+ h|\d+ h \d+ min|\d+ min)$")
    expect(page.locator("#value-connected_since")).to_have_text(uptime)
    expect(page.locator("#value-services")).to_contain_text("NODE_NETWORK")
    for tile in ("uptime-day", "uptime-week", "uptime-month"):
        expect(page.locator(f"#{tile}")).to_contain_text(re.compile(r"\d+\.\d%"))
    row = get(f"{demo.base}/api/v1/nodes/leaderboard/{host}-{port}/")
    expect(page.locator("#rank-note")).to_contain_text(
        f"PIX {row['peer_index']}, rank {row['rank']:,}"
    )
    expect(page.locator("#rank-indexes tr[data-index=dli] td")).to_have_text(row["dli"])
    chart = page.locator("#latency-chart")
    expect(chart).to_have_attribute("data-view", "daily")
    for view, words in (("weekly", "last week"), ("monthly", "last 30 days")):
        page.select_option("#latency-range", view)
        expect(chart).to_have_attribute("data-view", view)
        expect(page.locator("#latency-note")).to_contain_text(words)
    keeps_the_rules(page, seen, demo.base)

    assert changed is not None, "the demo's last crawl upgrades no node"
    host, port = changed.rpartition(":")[0].strip("[]"), changed.rpartition(":")[2]
    page, seen = opened(browser, f"{demo.base}/nodes/{host}-{port}/", width, scheme)
    expect(page.locator("#changes li[data-field=user_agent]")).to_contain_text(
        "to /Satoshi:29.0.0/"
    )
    keeps_the_rules(page, seen, demo.base)

    page, seen = opened(browser, f"{demo.base}/nodes/leaderboard/", width, scheme)
    expect(page.locator("#board tbody tr")).to_have_count(50)
    page.fill("#board-q", "satoshi:29")
    page.click("#board-form button")
    count = get(demo.base + "/api/v1/nodes/leaderboard/?q=satoshi:29")["count"]
    expect(page.locator("#board-count")).to_contain_text(f"{count:,} nodes hold")
    first = page.locator("#board tbody tr").first
    expect(first).to_contain_text("/Satoshi:29.0.0/")
    address = first.get_attribute("data-node")
    first.locator("a").click()
    expect(page.locator("#node-title")).to_have_text(address)
    keeps_the_rules(page, seen, demo.base)


def rejected(base: str) -> int:
    """Crawl files rejected, by /metrics."""
    with urllib.request.urlopen(base + "/metrics", timeout=5) as response:
        text = response.read().decode()
    found = re.findall(r"^crawldash_files_rejected_total\{[^}]*\} ([\d.]+)$", text, re.M)
    return int(sum(float(count) for count in found))


@pytest.mark.parametrize(("width", "scheme"), VIEWS, ids=IDS)
def test_a_folder_of_rejected_files_says_so(tmp_path: Path, browser: Any, width: int, scheme: str):
    """9: every file rejected: how many and why, and nothing left waiting."""
    from playwright.sync_api import expect

    data = tmp_path / "data"
    write_snapshot(data, 1_790_000_000, b"{not json")
    write_snapshot(data, 1_790_000_600, b"")
    with serving(data, tmp_path / "state", "--log-level", "error") as base:
        wait_until(lambda: rejected(base) == 2)
        page, seen = opened(browser, base + "/", width, scheme)
        alarm = page.locator("#alarm")
        expect(alarm).to_contain_text("No crawl could be loaded: 2 crawl files were rejected")
        expect(alarm).to_contain_text("1 empty")
        expect(alarm).to_contain_text("1 not a crawl")  # a JSON decode error
        expect(page.locator("#map")).to_contain_text("No crawl loaded")
        for tile in ("tile-reachable", "unique-month"):
            expect(page.locator(f"#{tile}")).not_to_have_text("…")
        keeps_the_rules(page, seen, base)
