"""A node's page (``/nodes/<address>-<port>/``) in Debian's Chromium, driven by Playwright
as in test_browser.py: served under ``/n/main/``, from real crawl files, with a change of
user agent between two crawls, a node absent from the newest and one with a latency kept."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.propagation import LatencyFile, pack, write_latency
from crawldash.web.dashboard import CSP

from .chromium import CHROMIUM, FLAGS, contrast
from .factories import export_body, row, write_snapshot
from .helpers import error_of, get
from .process import served_whole, serving, wait_until, watching

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium",
    ),
]
UPGRADED = "203.0.113.1:8333"  # /Satoshi:27.0.0/, then /Satoshi:28.0.0/; latency kept
GONE = "203.0.113.2:8333"  # in the first crawl, not in the newest
IPV6 = "[2001:db8::1]:8333"


class Seen:
    """Every request a page made and how it went, and the errors it logged."""

    def __init__(self, page: Any) -> None:
        self.requested: list[str] = []
        self.answers: list[tuple[str, int]] = []
        self.failed: list[tuple[str, str]] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requested.append(r.url))
        page.on("response", lambda r: self.answers.append((r.url, r.status)))
        page.on("requestfailed", lambda r: self.failed.append((r.url, r.failure or "")))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def check(self, base: str) -> None:
        """Nothing failed or was logged as an error, nothing outside crawldash was asked
        for, and nothing was answered with an error. Leaving a page cuts its event stream,
        and on a busy machine requests it still waited for: the browser aborts those
        (``net::ERR_ABORTED``), which is no failure of the server's; a refused, reset or
        empty answer is."""
        cut = [(url, failure) for url, failure in self.failed if failure != "net::ERR_ABORTED"]
        assert (cut, self.errors, [a for a in self.answers if a[1] >= 400]) == ([], [], [])
        assert [u for u in self.requested if not u.startswith((base + "/", "data:"))] == []


def served(base: str, timestamp: int) -> bool:
    return served_whole(base + "/n/main", timestamp)


def compared(base: str, address: str) -> bool:
    """True once the profile of ``address`` has its change: the newest crawl's comparison
    with the one before is taken in after its history point (``served_whole``)."""
    return bool(get(f"{base}/n/main/api/profile?address={address}")["changes"])


def day(timestamp: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


def test_the_node_page_in_chromium(tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    data, kept = tmp_path / "main", tmp_path / "kept"
    first = int(time.time()) // 600 * 600 - 600
    write_snapshot(
        data, first, export_body([row("203.0.113.1"), row("203.0.113.2"), row("2001:db8::1")])
    )
    bucket = first // 600 + 1
    write_latency(kept, LatencyFile(bucket, {UPGRADED: pack({bucket: (1, 42)})}, {}))
    options = ["--network", f"main={data}", "--network-propagation-dir", f"main={kept}"]
    with (
        serving(None, tmp_path / "state", *options, "--log-level", "warning") as base,
        sync_playwright() as playwright,
    ):
        wait_until(lambda: served(base, first) and watching(base))
        newest = first + 600  # compared with the first as it is served: the profile's change
        write_snapshot(
            data,
            newest,
            export_body([row("203.0.113.1", agent="/Satoshi:28.0.0/"), row("2001:db8::1")]),
        )
        wait_until(lambda: served(base, newest) and compared(base, UPGRADED))
        for malformed, code in (
            ("bad", "invalid_address"),
            ("example.com-8333", "invalid_address"),
        ):
            error = error_of(f"{base}/n/main/nodes/{malformed}/")
            assert (error["status"], error["code"]) == (400, code)

        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        seen = Seen(page)
        page.goto(f"{base}/n/main/nodes/203.0.113.1-8333/")
        check = get(f"{base}/n/main/api/check?address={UPGRADED}")
        body = page.locator("body")
        expect(body).to_have_attribute("data-shown", str(newest))
        expect(page.locator("#node-title")).to_have_text(UPGRADED)
        expect(page.locator("#node-state")).to_have_text("UP")
        expect(page.locator("#reason-code")).to_have_attribute("data-code", check["reason"]["code"])
        expect(page.locator("#reason-detail")).to_have_text(check["reason"]["detail"])
        expect(page.locator("#value-user_agent")).to_have_text("/Satoshi:28.0.0/")
        expect(page.locator("#value-provider")).to_have_text("AS12389 Rostelecom")
        expect(page.locator("#presence-count")).to_contain_text("Up in 2 of 2 crawls held")
        expect(page.locator("#runs-bar")).to_have_attribute("data-runs", "1")
        expect(page.locator("#changes li[data-field=user_agent]")).to_have_text(
            f"Upgraded from /Satoshi:27.0.0/ to /Satoshi:28.0.0/ on {day(newest)}."
        )
        expect(page.locator("#latency-chart")).to_be_visible()  # kept for this node
        expect(page.locator("#latency-note")).to_contain_text("42 ms on average")
        expect(page.locator("#live")).to_have_text("live")

        page.goto(f"{base}/n/main/nodes/203.0.113.2-8333/")
        check = get(f"{base}/n/main/api/check?address={GONE}")
        expect(body).to_have_attribute("data-shown", str(newest))
        expect(page.locator("#node-state")).to_have_text("DOWN")
        expect(page.locator("#reason-code")).to_have_attribute("data-code", check["reason"]["code"])
        expect(page.locator("#reason-code")).not_to_be_empty()
        expect(page.locator("#reason-detail")).to_have_text(check["reason"]["detail"])
        expect(page.locator("#presence-count")).to_contain_text("Up in 1 of 2 crawls held")
        runs = page.locator("#runs li")  # newest first
        expect(runs).to_have_count(2)
        expect(runs.nth(0)).to_have_text(re.compile(r"^Down in 1 crawl, "))
        expect(runs.nth(1)).to_have_text(re.compile(r"^Up in 1 crawl, "))
        expect(page.locator("#runs-bar span.absent")).to_have_count(1)
        expect(page.locator("#latency-chart")).to_be_hidden()
        expect(page.locator("#latency-note")).to_contain_text("No latency of this node is kept")
        expect(page.locator("#node-absent")).to_be_visible()
        assert [u for u in seen.requested if "/latency/" in u and "203.0.113.2" in u] == []

        page.goto(f"{base}/n/main/")  # the dashboard links to the pages, from the keyboard
        page.fill("#search", "2001:db8")
        page.keyboard.press("Enter")
        link = page.locator("#search-results a")
        expect(link).to_have_attribute("href", "nodes/2001:db8::1-8333/")
        link.focus()
        page.keyboard.press("Enter")
        expect(page).to_have_url(f"{base}/n/main/nodes/2001:db8::1-8333/")
        expect(page.locator("#node-title")).to_have_text(IPV6)
        expect(page.locator("#node-state")).to_have_text("UP")
        # Its presence and changes drawn, before the page is left (else their requests are
        # cut short, which the page would see as failures).
        expect(page.locator("#runs-bar")).to_have_attribute("data-runs", re.compile(r"^\d+$"))
        expect(page.locator("#changes-note")).not_to_be_empty()
        page.goto(f"{base}/n/main/")
        page.fill("#address", UPGRADED)  # kept: the dashboard asks for its latency (a 404 else)
        page.keyboard.press("Enter")
        expect(page.locator("#check-page a")).to_have_attribute("href", "nodes/203.0.113.1-8333/")
        expect(page.locator("#check-latency")).to_be_visible()
        seen.check(base)

        phone = browser.new_page(viewport={"width": 375, "height": 812}, color_scheme="dark")
        on_phone = Seen(phone)
        phone.goto(f"{base}/n/main/nodes/203.0.113.1-8333/")
        expect(phone.locator("body")).to_have_attribute("data-shown", str(newest))
        expect(phone.locator("#latency-chart")).to_be_visible()
        assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        expect(phone.locator("body")).to_have_css("background-color", "rgb(13, 17, 23)")
        for selector in ("#node-state", "#reason-detail", "#changes li", ".tiles dt", ".back a"):
            assert contrast(phone, selector) >= 4.5, selector
        on_phone.check(base)
        browser.close()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_a_malformed_node_is_refused_as_the_v1_route_refuses_it(tmp_path: Path):
    data = tmp_path / "main"
    write_snapshot(data, 1_700_000_000, export_body([row("203.0.113.1")]))
    with serving(data, tmp_path / "state", "--log-level", "warning") as base:
        for node in ("bad", "203.0.113.1-99999", "2001:db8::zz-8333"):
            page = error_of(f"{base}/nodes/{node}/")
            v1 = error_of(f"{base}/api/v1/nodes/{node}/")
            assert page == v1, node
        with urllib.request.urlopen(f"{base}/nodes/203.0.113.1-8333/", timeout=5) as answer:
            assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
            assert answer.headers["Content-Security-Policy"] == CSP["Content-Security-Policy"]
            assert b'src="../../static/node.js"' in answer.read()
        unslashed = urllib.request.Request(f"{base}/nodes/203.0.113.1-8333")
        with pytest.raises(urllib.error.HTTPError) as moved:  # without its slash: sent on
            urllib.request.build_opener(NoRedirect).open(unslashed, timeout=5)
        moved.value.close()  # its connection closed now, not by the collector
        assert moved.value.code == 308
        assert moved.value.headers["Location"] == "./203.0.113.1-8333/"
