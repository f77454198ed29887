"""The one settings table: every option of every command is declared here once, with its
type, default, environment variable and help text (the live check's in
``settings/checking.py``, which ``Settings`` is built from). The command line (``cli.py``),
the defaults of the settings objects and the option tables in docs/operating.md are all
made from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .addresses import IPNetwork, cidrs, public_url
from .checking import LiveCheckSettings
from .networks import NetworkFolder, network_folders
from .options import (
    PerNetwork,
    byte_size,
    log_level,
    named_paths,
    on_off,
    option,
    origins,
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
class Settings(LiveCheckSettings):
    """What a running crawldash is built from: ``serve``'s options (``demo`` takes them
    all but the folders served), the live check's, and a few knobs for tests that have no
    option."""

    data_dir: Path = option(
        Path("data"),
        "the crawler's output folder: one network, named `main` (or give --network); a "
        "folder that does not exist (yet) is not an error: it is waited for, with one "
        "warning, and served once it appears",
        Path,
        shown="./data",
    )
    networks: tuple[tuple[str, Path], ...] = option(
        (),
        "a network and its crawler's output folder, as NAME=DIR; repeatable or "
        "comma-separated; each is served under `/n/NAME/`, the first also at `/`; each "
        "folder is waited for as `--data-dir`'s is",
        named_paths,
        shown="none: `--data-dir` as `main`",
        kind="list",
        flag="--network",
    )
    status_file: PerNetwork[Path] = option(
        (),
        "the crawler's live status (JSON); put it where no crawler tool globs `*.json`, "
        "as the bitnodes bridge's units do",
        Path,
        shown="`status.json` in the data folder",
        per_network="FILE",
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
        "bytes of `/api/history` answers kept until the next crawl, for repeated queries, "
        "the queries they are kept by counted too (bytes, or with K, M, G); the least "
        "recently asked for are given up first",
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
    propagation_dir: PerNetwork[Path] = option(
        (),
        "the folder the bitnodes bridge keeps block propagation and node latency in; "
        "without it `/api/v1/inv/` is empty and latency is 404",
        Path,
        per_network="DIR",
    )
    crawl_dir: PerNetwork[Path] = option(
        (),
        "bitnodes' crawl folder (`data/crawl/<magic>`), whose files say which nodes "
        "completed a handshake: `/api/check` then tells a node reached but not held",
        Path,
        shown="`data/crawl/<magic>` beside a `data/export/<magic>` folder, if it exists",
        per_network="DIR",
    )
    watches: PerNetwork[str] = option(
        (),
        "a node (host:port) whose state `/metrics` gives as `crawldash_node_up`, with why it "
        "is DOWN; repeatable or comma-separated",
        str,
        env="CRAWLDASH_WATCH",
        kind="list",
        flag="--watch",
        per_network="host:port",
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
