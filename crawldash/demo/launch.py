"""``crawldash demo`` from start to serving: its own peer started on loopback (so that
"Check now" has a node to check), the folders written, the live check turned on for that
peer alone, and the newest crawl written once the one before it is served, so that the
page's "What changed" has the last crawl's upgrades to show (changes are seen between
crawls served one after the other)."""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace

from ..settings.demo import DemoSettings
from ..settings.serve import Settings
from .fake_crawler import Crawl, tip_height
from .peer import HOST, DemoPeer
from .showcase import INTERVAL, NETWORK, Demo, served, write_crawl, write_showcase

log = logging.getLogger(__name__)
MAINNET_MAGIC = "f9beb4d9"
WAIT_FOR_SERVER = 300.0  # seconds the newest crawl waits for the one before to be served
POLL = 0.25


def run(demo: DemoSettings, settings: Settings, serve: Callable[[Settings], None]) -> int:
    """Write the demo's folders and, unless ``--no-serve``, serve them with its peer."""
    crawls = demo.days * 144
    if demo.no_serve:
        write_showcase(
            demo.dir, nodes=demo.nodes, crawls=crawls, keep_files=demo.keep_files, seed=demo.seed
        )
        return 0
    peer = DemoPeer(bytes.fromhex(MAINNET_MAGIC), tip_height(int(time.time())))
    address = (HOST, peer.start())
    written = write_showcase(
        demo.dir,
        nodes=demo.nodes,
        crawls=crawls,
        keep_files=demo.keep_files,
        seed=demo.seed,
        peer=address,
    )
    settings = with_live_check(served(written, settings))
    log.info(
        "demo peer: %s:%d answers the live check (Check now) as the demo's own node",
        *address,
    )
    if written.held is not None:
        threading.Thread(
            target=write_when_served, args=(written, settings), daemon=True, name="demo-newest"
        ).start()
    serve(settings)
    return 0


def with_live_check(settings: Settings) -> Settings:
    """``settings`` with the first network's live check on for the demo's peer (127.0.0.1)
    alone: the demo's other nodes are made up, and their addresses may be real machines'
    that "Check now" must never connect to."""
    peer = ipaddress.ip_network(f"{HOST}/32")
    return replace(
        settings,
        live_check=(NETWORK,),
        live_check_magic=((NETWORK, MAINNET_MAGIC),),
        live_check_allow=(peer,),
        live_check_only=(peer,),
    )


def write_when_served(demo: Demo, settings: Settings) -> None:
    """Write the newest crawl of the first network once the one before it is served."""
    assert demo.held is not None
    newest: Crawl = demo.held
    host = settings.host if settings.host not in ("", "0.0.0.0", "::") else HOST
    host = f"[{host}]" if ":" in host else host
    url = f"http://{host}:{settings.port}/api/status"
    deadline = time.monotonic() + WAIT_FOR_SERVER
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                served_at = json.load(answer).get("snapshot_timestamp")
        except (OSError, ValueError):
            served_at = None
        if served_at is not None and served_at >= newest.timestamp - INTERVAL:
            break
        time.sleep(POLL)
    write_crawl(demo.networks[0][1], newest, demo.peer_row)
    log.info("demo: the newest crawl written, %d", newest.timestamp)
