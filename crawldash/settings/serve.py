"""The one settings table: every option of every command is declared here once, with its
type, default, environment variable and help text. The command line (``cli.py``), the
defaults of the settings objects and the option tables in docs/operating.md are all made
from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .addresses import IPNetwork, cidrs, magics, proxy_address
from .networks import NetworkFolder, network_folders
from .options import (
    byte_size,
    log_level,
    named_paths,
    named_values,
    on_off,
    option,
    origins,
    public_url,
    seconds,
    whole_number,
)


class StartupError(Exception):
    """Why crawldash cannot start with these settings, as one line for the operator."""


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/crawldash``, or ``~/.local/state/crawldash``."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "crawldash"


@dataclass(frozen=True)
class Settings:
    """What a running crawldash is built from: ``serve``'s options (``demo`` takes them
    all but the two folders) and a few knobs for tests that have no option."""

    data_dir: Path = option(
        Path("data"),
        "the crawler's output folder: one network, named `main` (or give --network)",
        Path,
        shown="./data",
    )
    networks: tuple[tuple[str, Path], ...] = option(
        (),
        "a network and its crawler's output folder, as NAME=DIR; repeatable or "
        "comma-separated; each is served under `/n/NAME/`, the first also at `/`",
        named_paths,
        shown="none: `--data-dir` as `main`",
        kind="list",
        flag="--network",
    )
    network_status_files: tuple[tuple[str, Path], ...] = option(
        (),
        "a network's live status file, as NAME=FILE; repeatable or comma-separated "
        "(`--status-file` is the first network's)",
        named_paths,
        shown="none",
        kind="list",
        flag="--network-status-file",
    )
    status_file: Path | None = option(
        None,
        "the crawler's live status (JSON); put it where no crawler tool globs `*.json`, "
        "as the bitnodes bridge's units do",
        Path,
        shown="`status.json` in the data folder",
    )
    state_dir: Path | None = option(
        None,
        "where the history index lives",
        Path,
        shown="`$XDG_STATE_HOME/crawldash` (else `~/.local/state/crawldash`)",
    )
    archive_dir: Path | None = option(
        None,
        "keep every crawl for good in a Parquet archive here (`network=NAME/date=DAY/`, "
        "docs/archive.md), and serve crawls pruned from the data folder from it; needs "
        "`crawldash[archive]`",
        Path,
        shown="none: no archive",
    )
    host: str = option(
        "127.0.0.1",
        "address to bind; crawldash has no authentication, so a non-loopback one logs a warning",
    )
    port: int = option(8080, "port to listen on", whole_number(1, 65535))
    history_size: int = option(8640, "crawls kept in the history", whole_number(1, 10_000_000))
    history_answers: int = option(
        64 * 1024**2,
        "bytes of `/api/history` answers kept until the next crawl, for repeated queries "
        "(bytes, or with K, M, G); the least recently asked for are given up first",
        byte_size,
        shown="`64M`",
    )
    stale_after: int | None = option(
        None,
        "seconds after which the snapshot is stale",
        whole_number(1, 10**9),
        shown="three times the median crawl interval, at least 1800",
    )
    stuck_after: int = option(
        3600,
        "seconds of one non-running state, or of no status update, after which the crawler "
        "is stuck",
        whole_number(1, 10**9),
    )
    max_file_size: int = option(
        256 * 1024**2,
        "larger crawler files are rejected (bytes, or with K, M, G)",
        byte_size,
        shown="`256M`",
    )
    max_clock_skew: int = option(
        3600,
        "seconds a crawl may be named ahead of this machine's clock; later ones are rejected "
        "as `future`",
        whole_number(0, 10**9),
    )
    load_timeout: float = option(
        120.0,
        "seconds a crawl's load may take before the loader process is killed (it is then "
        "started again and the load retried later); well above a 100,000-node crawl's load",
        seconds(5, 86400),
        shown="`120`",
    )
    allow_empty_crawls: bool = option(
        False,
        "serve crawls that list no nodes (a crawler that can legitimately find nothing); "
        "otherwise they are rejected as `empty`",
        on_off,
        shown="off",
        kind="toggle",
    )
    cache_max_age: int | None = option(
        None,
        "`max-age` of snapshot and history",
        whole_number(0, 10**9),
        shown="until the next crawl",
    )
    cors_origins: tuple[str, ...] = option(
        (),
        "origins allowed to read from a browser; repeatable or comma-separated; `*` for any",
        origins,
        shown="none",
        env="CRAWLDASH_CORS_ORIGIN",
        kind="list",
        flag="--cors-origin",
    )
    keepalive_timeout: int = option(
        15, "seconds a connection may idle or take to send its request", whole_number(1, 86400)
    )
    log_level: str = option("info", "`debug`, `info`, `warning` or `error`", log_level)
    access_log: bool = option(
        False,
        "one line per request to standard error, written in batches twice a second "
        "(requests are counted in /metrics either way)",
        on_off,
        shown="off",
        kind="toggle",
    )
    metrics_breakdowns: bool = option(
        False,
        "add the latest crawl's nodes by country and by user agent to /metrics (labels of "
        "many values: the operator's choice)",
        on_off,
        shown="off",
        kind="toggle",
    )
    max_connections: int | None = option(
        None,
        "open connections; more are answered 503 and closed at once",
        whole_number(1, 1_000_000),
        shown="half the open-file limit, at most 10000",
    )
    max_subscribers: int = option(100, "concurrent `/api/events` clients", whole_number(1, 100_000))
    max_subscribers_per_client: int = option(
        8,
        "concurrent `/api/events` streams of one client address (429 past it; behind a "
        "proxy the client is as `--trusted-proxy` says)",
        whole_number(1, 100_000),
    )
    event_drain_timeout: float = option(
        5.0,
        "seconds an `/api/events` reader may leave an event unread once the kernel's buffers "
        "are full; then its stream is closed",
        seconds(0.1, 3600),
        shown="`5`",
    )
    workers: int = option(
        1, "server processes sharing the port (see docs/operating.md)", whole_number(1, 64)
    )
    public_url: str | None = option(
        None,
        "the URL clients reach crawldash at, behind a proxy and at any path (for example "
        "`https://example.org/crawldash`); every absolute link the API gives starts with it",
        public_url,
        shown="the request's own scheme and host",
    )
    propagation_dir: Path | None = option(
        None,
        "the folder the bitnodes bridge keeps block propagation and node latency in; "
        "without it `/api/v1/inv/` is empty and latency is 404",
        Path,
    )
    network_propagation_dirs: tuple[tuple[str, Path], ...] = option(
        (),
        "a network's propagation folder, as NAME=DIR; repeatable or comma-separated "
        "(`--propagation-dir` is the first network's)",
        named_paths,
        shown="none",
        kind="list",
        flag="--network-propagation-dir",
    )
    crawl_dir: Path | None = option(
        None,
        "bitnodes' crawl folder (`data/crawl/<magic>`), whose files say which nodes "
        "completed a handshake: `/api/check` then tells a node reached but not held",
        Path,
        shown="`data/crawl/<magic>` beside a `data/export/<magic>` folder, if it exists",
    )
    network_crawl_dirs: tuple[tuple[str, Path], ...] = option(
        (),
        "a network's crawl folder, as NAME=DIR; repeatable or comma-separated "
        "(`--crawl-dir` is the first network's)",
        named_paths,
        shown="none",
        kind="list",
        flag="--network-crawl-dir",
    )
    watches: tuple[str, ...] = option(
        (),
        "a node (host:port) whose state `/metrics` gives as `crawldash_node_up`, with why it "
        "is DOWN; repeatable or comma-separated",
        origins,
        shown="none",
        env="CRAWLDASH_WATCH",
        kind="list",
        flag="--watch",
    )
    network_watches: tuple[tuple[str, str], ...] = option(
        (),
        "a node of a network to watch, as NAME=host:port; repeatable or comma-separated "
        "(`--watch` is the first network's)",
        named_values,
        shown="none",
        kind="list",
        flag="--network-watch",
    )
    live_check: tuple[str, ...] = option(
        (),
        "a network whose `POST /api/v1/checknode/` makes live handshakes with the nodes "
        "people name (a connection to any public address: see docs/operating.md); "
        "repeatable or comma-separated",
        origins,
        shown="none: 404 `not_served`",
        kind="list",
    )
    live_check_magic: tuple[tuple[str, str], ...] = option(
        (),
        "a live-checked network's message start, as NAME=f9beb4d9, when its data folder "
        "is not named after a known one (f9beb4d9, 0b110907, 1c163f28, 0a03cf40, fabfb5da)",
        magics,
        shown="from the data folder's name",
        kind="list",
    )
    live_check_allow: tuple[IPNetwork, ...] = option(
        (),
        "an address range the live check may connect to although it is not public "
        "(loopback, private, ...), as CIDR; repeatable or comma-separated",
        cidrs,
        shown="none",
        kind="list",
    )
    tor_proxy: tuple[str, int] | None = option(
        None,
        "a SOCKS5 proxy (IP:port, as Tor's 127.0.0.1:9050) through which the live check "
        "reaches .onion nodes; without it they are `not_checkable`",
        proxy_address,
        shown="none",
    )
    live_check_per_client: int = option(
        10, "live checks a client may ask for a minute (429 past it)", whole_number(1, 100_000)
    )
    live_check_in_flight: int = option(
        32, "live checks under way at once (503 past it)", whole_number(1, 10_000)
    )
    live_check_client_in_flight: int = option(
        2,
        "live checks one client (an IPv6 one by `--client-ipv6-prefix`) may have under way "
        "at once (429 past it)",
        whole_number(1, 10_000),
    )
    live_check_host_in_flight: int = option(
        1,
        "live checks of one host (an IPv4 address, an IPv6 /64) under way at once, whatever "
        "the port (503 past it)",
        whole_number(1, 10_000),
    )
    live_check_per_host: int = option(
        10,
        "new live-check connections to one host (an IPv4 address, an IPv6 /64) a minute, "
        "whatever the port (503 past it)",
        whole_number(1, 100_000),
    )
    live_check_connect_timeout: float = option(
        5.0, "seconds a live check's connection may take", seconds(0.1, 60), shown="`5`"
    )
    live_check_timeout: float = option(
        10.0,
        "seconds a live check's handshake may take once connected",
        seconds(0.1, 120),
        shown="`10`",
    )
    live_check_max_bytes: int = option(
        16 * 1024,
        "bytes a live check reads from the node at most",
        byte_size,
        shown="`16K`",
    )
    trusted_proxies: tuple[IPNetwork, ...] = option(
        (),
        "a reverse proxy (address or CIDR) whose X-Forwarded-For names the client, for "
        "the per-client bounds of the live check and the event stream; repeatable or "
        "comma-separated",
        cidrs,
        shown="none: the connection's peer is the client",
        kind="list",
        flag="--trusted-proxy",
    )
    client_ipv6_prefix: int = option(
        64,
        "the prefix length an IPv6 client is counted by, for the per-client bounds of the "
        "live check and the event stream: every address of one /64 is one client",
        whole_number(16, 128),
    )
    check_handoff_dir: Path | None = option(
        None,
        "the folder where each successful live check is left for the bitnodes bridge "
        "(`--check-handoff-dir`), which adds it to bitnodes' `check` set",
        Path,
        shown="none: not handed over",
    )
    network_check_handoff_dirs: tuple[tuple[str, Path], ...] = option(
        (),
        "a network's check hand-off folder, as NAME=DIR; repeatable or comma-separated "
        "(`--check-handoff-dir` is the first network's)",
        named_paths,
        shown="none",
        kind="list",
        flag="--network-check-handoff-dir",
    )
    heartbeat: float = 15.0  # seconds between event-stream heartbeats
    debounce_ms: int = 300  # the watcher's batching of changes
    force_polling: bool = False

    @property
    def resolved_state_dir(self) -> Path:
        return self.state_dir if self.state_dir is not None else default_state_dir()

    @property
    def folders(self) -> tuple[NetworkFolder, ...]:
        """The networks served, each with its folders and watches (``settings/networks.py``);
        ValueError for an option naming a network not served."""
        return network_folders(self)
