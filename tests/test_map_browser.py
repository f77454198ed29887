"""``crawldash demo`` in Debian's Chromium: the map, block propagation, the switcher, a
phone's width, contrast in both schemes and the keyboard. Its first screenshot (light, the
map included) is docs/dashboard.png: ``make screenshot``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.address import network_of
from crawldash.crawl.breakdown import host_of

from .chromium import CHROMIUM, FLAGS, luminance
from .helpers import get
from .process import free_port, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium",
    ),
]
# Every element that holds text of its own, visible: its colour, the background it is drawn
# on (its own and its ancestors' composited, down to the first opaque one), and whether it
# is large text (WCAG: 24 px, or 18.66 px bold), for which 3:1 is enough.
TEXTS_JS = r"""() => {
  const parse = (css) => (css.match(/[\d.]+/g) || []).map(Number);
  const out = [];
  for (const e of document.body.querySelectorAll("*")) {
    if (e.closest("svg, select, script, style, [hidden]")) continue;
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const box = e.getBoundingClientRect();
    const style = getComputedStyle(e);
    if (!own || box.width === 0 || box.height === 0 || style.visibility !== "visible") continue;
    let r, g, b;
    const layers = [];
    for (let at = e; at; at = at.parentElement) {
      const [lr, lg, lb, la = 1] = parse(getComputedStyle(at).backgroundColor);
      if (la > 0) layers.push([lr, lg, lb, la]);
      if (la === 1) break;
    }
    if (!layers.length || layers[layers.length - 1][3] < 1) layers.push([255, 255, 255, 1]);
    [r, g, b] = layers.pop();
    for (const [lr, lg, lb, la] of layers.reverse()) {
      [r, g, b] = [lr * la + r * (1 - la), lg * la + g * (1 - la), lb * la + b * (1 - la)];
    }
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const name = e.id ? `#${e.id}` : `${e.tagName.toLowerCase()}.${e.className}`;
    out.push([name, e.textContent.trim().slice(0, 40), style.color,
              `rgb(${r}, ${g}, ${b})`, large]);
  }
  return out;
}"""


def unreadable(page: Any) -> list[tuple[str, str, float]]:
    """Every text drawn below WCAG AA's contrast against its background."""
    low = []
    for name, text, colour, background, large in page.evaluate(TEXTS_JS):
        lighter, darker = sorted([luminance(colour), luminance(background)], reverse=True)
        ratio = (lighter + 0.05) / (darker + 0.05)
        if ratio < (3 if large else 4.5):
            low.append((name, text, round(ratio, 2)))
    return low


def not_mapped(snapshot: dict[str, Any]) -> int:
    """The snapshot's nodes without a place: an overlay network's, without coordinates, or
    at 0.0, 0.0 with no country."""
    count = 0
    for address, node in snapshot["nodes"].items():
        lat, lon, country = node[8], node[9], node[7]
        overlay = network_of(host_of(address)) in ("onion", "i2p", "cjdns")
        count += overlay or lat is None or lon is None or (lat == lon == 0 and not country)
    return count


NEWEST_WRITTEN = re.compile(r"demo: the newest crawl written, (\d+)")


def test_the_demo_shows_every_capability(tmp_path: Path):
    from playwright.sync_api import sync_playwright

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "demo.log"  # a file, not a pipe: read while the demo runs
    with log.open("w") as stderr:
        demo = subprocess.Popen(  # as `make demo` runs it, smaller
            [
                sys.executable,
                "-m",
                "crawldash",
                "demo",
                "--dir",
                str(tmp_path),
                "--port",
                str(port),
                "--nodes",
                "3000",
                "--days",
                "2",
                "--keep-files",
                "3",
                "--log-level",
                "info",
            ],
            stderr=stderr,
            text=True,
        )
    try:
        newest_served(base, log)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            check_in(browser, base, tmp_path)
            browser.close()
    finally:
        demo.send_signal(signal.SIGINT)
        demo.wait(timeout=15)
    said = log.read_text()
    assert demo.returncode == 0, said
    assert "Traceback" not in said, said


def newest_served(base: str, log: Path) -> None:
    """Wait until the demo's last crawl, written once the one before it is served, is served
    in turn: one arriving later would redraw the page under the checks (the map's countries
    drawn anew are elements the keyboard walk never marked)."""
    wait_until(lambda: NEWEST_WRITTEN.search(log.read_text()), within=120)
    newest = int(NEWEST_WRITTEN.findall(log.read_text())[0])
    wait_until(lambda: get(base + "/api/status")["snapshot_timestamp"] == newest, within=120)


def check_in(browser: Any, base: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1100, "height": 900}, color_scheme="light")
    requested: list[str] = []
    failed: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(base + "/")

    # The map: one mark per located group, "not mapped" as the snapshot says.
    answer = get(base + "/api/map")
    snapshot = get(base + "/api/snapshot")
    box = page.locator("#map")
    expect(box).to_have_attribute("data-groups", str(len(answer["groups"])))
    expect(box.locator("circle")).to_have_count(len(answer["groups"]))
    assert len(answer["groups"]) > 100
    expect(page.locator("#not-mapped")).to_have_attribute("data-count", str(not_mapped(snapshot)))
    assert answer["not_mapped"] == not_mapped(snapshot) > 0
    expect(page.locator("#not-mapped")).to_contain_text(f"Not mapped: {answer['not_mapped']:,}")
    shaded = box.locator("path.has-nodes")
    assert shaded.count() >= 15  # the demo's countries the 110m outlines have
    expect(box).to_have_attribute("aria-label", re.compile(r"^Map of [\d,]+ located nodes in "))

    # Block propagation: the series, the table, and the newest block's ECDF.
    blocks = get(base + "/api/v1/inv/?limit=100")
    newest, second = blocks["results"][0], blocks["results"][1]
    expect(page.locator("#propagation")).to_be_visible()
    expect(page.locator("#times-chart")).to_have_attribute("data-blocks", "100")
    ecdf = page.locator("#ecdf-chart")
    expect(ecdf).to_have_attribute("data-block", newest["inv_hash"])
    expect(ecdf.locator("canvas")).to_have_count(1)
    points = page.evaluate("ecdfChart.data")
    assert points[1][-1] == 100
    assert points[1] == sorted(points[1])
    assert len(points[0]) >= 13  # ten first announcements, 50%, 90% and the last
    # The networks: the switcher shows both.
    expect(page.locator("#networks")).to_be_visible()
    expect(page.locator("#network-list a")).to_have_count(2)

    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)  # the artefact
    if os.environ.get("CRAWLDASH_SCREENSHOT"):  # how docs/dashboard.png is made
        shutil.copy(tmp_path / "dashboard.png", os.environ["CRAWLDASH_SCREENSHOT"])

    page.locator(f'#blocks button[data-hash="{second["inv_hash"]}"]').click()
    expect(ecdf).to_have_attribute("data-block", second["inv_hash"])
    head = get(base + f"/api/v1/inv/{second['inv_hash']}/")["stats"]["head"]
    expect(page.locator("#block-head-list li")).to_have_count(len(head))
    expect(page.locator("#block-head-list li").first).to_contain_text(head[0][0])

    # A click on a country lists its nodes (a point of it no dot covers).
    australia = box.locator('path[data-country="AU"]')
    australia.scroll_into_view_if_needed()
    at = australia.bounding_box()
    x, y = at["x"] + at["width"] * 0.45, at["y"] + at["height"] * 0.4
    hit = page.evaluate(f"document.elementFromPoint({x}, {y}).dataset.country")
    assert hit == "AU"
    page.mouse.click(x, y)
    listed = get(base + "/api/nodes?country=AU&limit=20")
    assert listed["count"] == answer["countries"]["AU"]
    expect(page.locator("body")).to_have_attribute("data-listed", "AU")
    expect(page.locator("#search-count")).to_have_text(
        f"{listed['count']:,} nodes in Australia (AU); the first 20:"
    )
    expect(page.locator("#search-results li").first).to_contain_text(
        listed["results"][0]["address"]
    )
    expect(page.locator("#csv-link")).to_have_attribute("href", "api/nodes?country=AU&format=csv")

    # From the keyboard: the countries are one stop, the arrow keys move, Enter lists.
    order = sorted(answer["countries"].items(), key=lambda item: -item[1])
    drawn = set(
        page.evaluate(
            "[...document.querySelectorAll('#map path.has-nodes')].map(p => p.dataset.country)"
        )
    )
    order = [code for code, _ in order if code in drawn]
    page.focus("#map path[tabindex='0']")
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.dataset.country")
    assert focused in order[:3]
    expect(page.locator("#map-tip")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("body")).to_have_attribute("data-listed", focused)

    # Coloured by a client matched by name, as the trends chart matches.
    page.select_option("#map-colour", "client")
    page.fill("#map-match", "Knots")
    page.keyboard.press("Enter")
    matched = get(base + "/api/map?match=Knots")
    expect(box).to_have_attribute("data-colour", "client")
    expect(box).to_have_attribute("data-matched", str(matched["matched"]))
    assert 0 < matched["matched"] < matched["mapped"]
    expect(page.locator("#map-legend")).to_contain_text("holding \u201cKnots\u201d")

    every_control_by_keyboard(page)
    assert unreadable(page) == []  # light
    page.emulate_media(color_scheme="dark")
    expect(box).to_have_attribute("data-scheme", "dark")
    assert unreadable(page) == []

    for scheme in ("light", "dark"):  # a phone
        phone = browser.new_page(viewport={"width": 375, "height": 812}, color_scheme=scheme)
        phone.on("request", lambda request: requested.append(request.url))
        phone.on("requestfailed", lambda request: failed.append(request.url))
        phone.goto(base + "/")
        expect(phone.locator("#map circle")).to_have_count(len(answer["groups"]))
        expect(phone.locator("#ecdf-chart")).to_have_attribute("data-block", newest["inv_hash"])
        phone.wait_for_load_state("networkidle")
        width = phone.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        assert width[0] <= width[1] == 375, scheme
        assert unreadable(phone) == [], scheme
        phone.screenshot(path=str(tmp_path / f"phone-{scheme}.png"), full_page=True)
        phone.close()

    outside = [url for url in requested if not url.startswith((base + "/", "data:"))]
    assert outside == []
    assert [url for url in failed if "/api/events" not in url] == []
    assert errors == []
    page.close()


def every_control_by_keyboard(page: Any) -> None:
    """Tab from the top reaches every link, button, field and the map's countries."""
    controls = page.evaluate(
        """() => {
      const all = [...document.querySelectorAll(
        "a[href], button, input, select, [tabindex='0']")].filter((e) =>
        !e.disabled && !e.closest("[hidden]") && e.getClientRects().length > 0);
      all.forEach((e, i) => { e.dataset.control = String(i); });
      return all.length;
    }"""
    )
    reached: set[str] = set()
    page.evaluate("document.activeElement.blur()")
    page.evaluate("window.scrollTo(0, 0); document.body.focus()")
    for _ in range(controls * 2 + 10):
        page.keyboard.press("Tab")
        mark = page.evaluate("document.activeElement && document.activeElement.dataset.control")
        if mark is not None:
            reached.add(mark)
        if len(reached) == controls:
            break
    missed = page.evaluate(
        """(reached) => [...document.querySelectorAll("[data-control]")]
          .filter((e) => !reached.includes(e.dataset.control))
          .map((e) => e.outerHTML.slice(0, 120))""",
        sorted(reached),
    )
    assert len(reached) == controls, (controls, missed)
