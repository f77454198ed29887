"""crawldash behind the real nginx at a sub-path, with examples/nginx/crawldash-subpath.conf
in front of a real ``crawldash serve --public-url`` of two networks: every link the API
gives leads back through the proxy, and the page, loaded through it in Debian's Chromium,
finds everything (its files, its data, the event stream) and switches network."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.propagation import (
    Block,
    BlocksFile,
    LatencyFile,
    pack,
    write_blocks,
    write_latency,
)

from .factories import export_body, rows, write_snapshot
from .process import free_port, nginx_config, serving, wait_until

CONF = Path(__file__).parent.parent / "examples" / "nginx" / "crawldash-subpath.conf"
CHROMIUM = "/usr/bin/chromium"
NETWORKS = ("main", "testnet4")
CHECKED = "198.0.0.1:8333"  # a node of main's crawls, with a latency kept
PACE = 0.06  # seconds before each request the test makes itself
# The shipped limit lets a client burst 40 API requests, refilled at 20 a second: the
# page's first load asks for about 20 at once, so each load starts with a full bucket.
REFILL = 2.5
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx (Debian nginx) missing"),
]
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
)


@dataclass(frozen=True)
class Proxied:
    front: str  # the public URL: nginx's, at /crawldash
    newest: dict[str, int]  # each network's newest crawl


def write_network(folder: Path, kept: Path, timestamps: list[int], first_octet: int) -> None:
    for timestamp in timestamps:
        write_snapshot(folder, timestamp, export_body(rows(5, first_octet=first_octet)))
    now = int(time.time())
    head = [(f"{first_octet}.0.0.{i}:8333", now * 1000 + i) for i in range(3)]
    blocks = [Block(f"{n:064x}", now * 1000, 3, 2.0, 1.0, 0.8, 1.0, 1.8, head) for n in (3, 2, 1)]
    write_blocks(kept, BlocksFile(now, blocks))
    bucket = now // 600
    latency = {f"{first_octet}.0.0.1:8333": pack({bucket: (1, 42)})}
    write_latency(kept, LatencyFile(bucket, latency, {}))


def nginx_conf(folder: Path, port: int, upstream: str) -> Path:
    return nginx_config(folder, CONF, port, upstream)


def fetch(url: str) -> tuple[int, str, bytes]:
    """Status, final URL (after redirects) and body. Paced under the example's limit of
    20 API requests a second, which the test keeps as shipped, so that a page load in the
    browser meets it as a visitor's would."""
    time.sleep(PACE)
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.url, response.read()


def get(url: str) -> Any:
    status, _, body = fetch(url)
    assert status == 200, url
    return json.loads(body)


def served(front: str) -> dict[str, int | None]:
    """Each network's newest crawl served, once its history is counted (None before)."""
    found: dict[str, int | None] = {}
    for row in get(front + "/api/networks")["networks"]:
        status = get(f"{front}/{row['path']}api/status")
        found[row["name"]] = status["snapshot_timestamp"] if status["history_complete"] else None
    return found


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    folder = tmp_path_factory.mktemp("subpath")
    now = int(time.time()) // 600 * 600
    newest, options = {}, []
    for index, name in enumerate(NETWORKS):
        timestamps = [now - 600 * k for k in range(4 - index, -1, -1)]
        write_network(folder / name, folder / f"{name}-kept", timestamps, 198 + index)
        newest[name] = timestamps[-1]
        options += ["--network", f"{name}={folder / name}"]
        options += ["--network-propagation-dir", f"{name}={folder / f'{name}-kept'}"]
    port = free_port()
    front = f"http://127.0.0.1:{port}/crawldash"
    with serving(
        None, folder / "state", *options, "--public-url", front, "--log-level", "warning"
    ) as base:
        conf = nginx_conf(folder, port, base.removeprefix("http://"))
        nginx = subprocess.Popen(["nginx", "-p", str(folder), "-c", str(conf)])
        try:
            wait_until(lambda: served(front) == newest)
            yield Proxied(front, newest)
        finally:
            nginx.terminate()
            nginx.wait(10)


def test_the_subpath_example_is_valid(tmp_path: Path):
    conf = nginx_conf(tmp_path, 8080, "127.0.0.1:8081")
    checked = subprocess.run(
        ["nginx", "-t", "-p", str(tmp_path), "-c", str(conf)], capture_output=True, text=True
    )
    assert "test is successful" in checked.stderr, checked.stderr


@pytest.mark.parametrize("prefix", ["", "/n/main", "/n/testnet4"])
def test_every_link_the_api_gives_resolves_through_the_proxy(proxied: Proxied, prefix: str):
    at = proxied.front + prefix
    name = prefix.rpartition("/")[2] or "main"
    snapshots = get(f"{at}/api/v1/snapshots/?limit=1")
    second = get(snapshots["next"])
    links = {
        "snapshots next": snapshots["next"],
        "snapshots previous": second["previous"],
        "snapshot url": snapshots["results"][0]["url"],
        "v1 nodes next": get(f"{at}/api/v1/nodes/?limit=1")["next"],
        "nodes next": get(f"{at}/api/nodes?limit=1")["next"],
        "inv next": get(f"{at}/api/v1/inv/?limit=1")["next"],
        "openapi server": get(f"{at}/api/openapi.json")["servers"][0]["url"] + "/api/status",
    }
    assert {k: v for k, v in links.items() if not v.startswith(at + "/")} == {}
    for link in links.values():
        assert fetch(link)[0] == 200, link
    assert get(links["snapshot url"])["timestamp"] == proxied.newest[name]  # this network's
    assert get(links["openapi server"])["snapshot_timestamp"] == proxied.newest[name]
    inv = get(f"{at}/api/v1/inv/?limit=1")["results"][0]["inv_hash"]
    assert get(f"{at}/api/v1/inv/{inv}/")["inv_hash"] == inv
    first_octet = 198 + NETWORKS.index(name)
    latency = get(f"{at}/api/v1/nodes/{first_octet}.0.0.1-8333/latency/")
    assert latency["daily_latency"][-1]["v"] == 42


def test_pages_without_their_slash_are_sent_to_it(proxied: Proxied):
    for page in ("", "/n/testnet4"):
        status, url, body = fetch(proxied.front + page)
        assert (status, url) == (200, proxied.front + page + "/")
        assert b'src="static/app.js"' in body


class Seen:
    """What a page asked for and how it went, and what it logged as errors."""

    def __init__(self, page: Any) -> None:
        self.answers: list[tuple[str, int]] = []
        self.failed: list[tuple[str, str]] = []
        self.errors: list[str] = []
        page.on("response", lambda r: self.answers.append((r.url, r.status)))
        page.on("requestfailed", lambda r: self.failed.append((r.url, r.failure or "")))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def check(self, front: str, at: str, left: str = "") -> None:
        """Everything went through the proxy at ``front`` and was answered, the page's
        files and event stream included; ``at`` is the page's folder. Only requests of a
        page ``left`` may have been cut short, by leaving it."""

        def left_behind(url: str, failure: str) -> bool:
            aborted = failure == "net::ERR_ABORTED"
            return aborted and bool(left) and url.startswith(left) and not url.startswith(at)

        cut = [(url, failure) for url, failure in self.failed if not left_behind(url, failure)]
        assert (cut, self.errors) == ([], [])
        assert [u for u, _ in self.answers if not u.startswith(front + "/")] == []
        assert [(u, s) for u, s in self.answers if s >= 400] == []
        wanted = ["static/app.js", "static/style.css", "static/vendor/uPlot.iife.min.js"]
        wanted += ["static/vendor/uPlot.min.css", "api/events", "api/status"]
        answered = {url for url, _ in self.answers}
        assert [w for w in wanted if at + w not in answered] == []
        self.answers, self.failed = [], []


@needs_chromium
def test_the_page_works_through_the_proxy_and_switches_network(proxied: Proxied):
    from playwright.sync_api import expect, sync_playwright

    from .chromium import FLAGS, contrast

    front, newest = proxied.front, proxied.newest
    time.sleep(REFILL)  # after the tests before, which made requests of their own
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        seen = Seen(page)
        page.goto(front + "/")
        body, nav = page.locator("body"), page.locator("#networks")
        expect(page.locator("#live")).to_have_text("live")  # the event stream is open
        expect(body).to_have_attribute("data-status", str(newest["main"]))
        expect(body).to_have_attribute("data-points", "5")
        expect(body).to_have_attribute("data-blocks", "3")
        expect(page.locator("#unique-month")).to_have_attribute("data-unique", "5")
        page.fill("#address", CHECKED)
        page.keyboard.press("Enter")
        expect(page.locator("#check-latency")).to_contain_text("42 ms")
        page.locator("#blocks button").first.click()
        expect(page.locator("#block-head-list li")).to_have_count(3)
        expect(nav).to_be_visible()
        expect(nav.locator("a")).to_have_count(2)
        for name in NETWORKS:
            link = nav.locator(f'a[data-network="{name}"]')
            expect(link).to_have_attribute("href", f"/crawldash/n/{name}/")
        expect(nav.locator('a[aria-current="page"]')).to_have_attribute("data-network", "main")
        expect(body).to_have_attribute("data-networks", "2")
        seen.check(front, front + "/")
        time.sleep(REFILL)

        page.focus('#networks a[data-network="main"]')  # from the keyboard
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.network") == "testnet4"
        page.keyboard.press("Enter")
        page.wait_for_url(front + "/n/testnet4/")
        expect(page.locator("#live")).to_have_text("live")
        expect(body).to_have_attribute("data-status", str(newest["testnet4"]))
        expect(body).to_have_attribute("data-points", "4")
        expect(body).to_have_attribute("data-network", "testnet4")
        expect(nav.locator('a[aria-current="page"]')).to_have_attribute("data-network", "testnet4")
        expect(page.locator("#unique-month")).to_have_attribute("data-unique", "5")
        seen.check(front, front + "/n/testnet4/", left=front + "/")
        for scheme in ("light", "dark"):  # the current network and the other, readable
            page.emulate_media(color_scheme=scheme)
            for selector in ("#networks a[aria-current]", "#networks a:not([aria-current])"):
                assert contrast(page, selector) >= 4.5, (scheme, selector)
                assert contrast(page, selector + " small") >= 4.5, (scheme, selector)

        one = browser.new_page()  # a service of one network shows no switcher
        listing = get(front + "/api/networks")
        listing["networks"] = listing["networks"][:1]
        one.route("**/api/networks", lambda route: route.fulfill(json=listing))
        one.goto(front + "/")
        expect(one.locator("body")).to_have_attribute("data-networks", "1")
        expect(one.locator("#networks")).to_be_hidden()
        browser.close()
