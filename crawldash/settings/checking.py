"""The live check's part of ``serve``'s settings table: which networks answer
``POST /api/v1/checknode/`` with a live handshake, what it may connect to, its bounds and
where its successes are left for the bridge. ``Settings`` (``settings/serve.py``) is built
from it, and ``crawldash options serve`` shows these after serve's own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .addresses import IPNetwork, cidrs, magics, proxy_address
from .options import PerNetwork, byte_size, option, origins, seconds, whole_number

EVERY_NETWORK = "*"  # --live-check given alone: every network served


@dataclass(frozen=True)
class LiveCheckSettings:
    """The live check's options: off unless ``--live-check`` names a network (or is given
    alone, for every network)."""

    live_check: tuple[str, ...] = option(
        (),
        "a network whose `POST /api/v1/checknode/` makes live handshakes with the nodes "
        "people name (a connection to any public address: see docs/operating.md); "
        "repeatable or comma-separated; given alone (or as `*`), every network served",
        origins,
        shown="none: 404 `not_served`",
        kind="list",
        bare=EVERY_NETWORK,
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
    live_check_only: tuple[IPNetwork, ...] = option(
        (),
        "the only address ranges the live check may connect to (your own nodes', say), as "
        "CIDR; repeatable or comma-separated; every other address is refused, `.onion` too",
        cidrs,
        shown="none: every public address (and those of --live-check-allow)",
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
        5.0,
        "seconds a live check's connection may take (an onion's, through the Tor proxy, "
        "at least 20: Tor builds a circuit first)",
        seconds(0.1, 60),
        shown="`5`",
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
    check_handoff_dir: PerNetwork[Path] = option(
        (),
        "the folder where each successful live check is left for the bitnodes bridge "
        "(`--check-handoff-dir`), which adds it to bitnodes' `check` set",
        Path,
        shown="none: not handed over",
        per_network="DIR",
    )
