"""The msgspec types that crawldash's answers encode from (and the OpenAPI document is
generated from)."""

from __future__ import annotations

from .crawler import Base, Node, NodeRow


class ApiSnapshot(Base, frozen=True):
    """The bitnodes API v1 snapshot, the form crawldash serves."""

    timestamp: int
    total_nodes: int
    latest_height: int
    nodes: dict[str, NodeRow]


class StatusBody(Base, frozen=True):
    state: str
    queue_size: int | None
    reached: int | None
    height: int | None
    last_elapsed: float | None
    last_crawl_at: int | None
    updated_at: int | None
    snapshot_timestamp: int | None
    snapshot_age: int | None
    stale: bool
    stuck: bool
    stuck_reason: str | None  # "no_update", "state" or null
    updated_at_ahead: bool  # status.json's updated_at is ahead of this machine's clock
    next_crawl_expected: int | None
    history_complete: bool
    degraded: str | None = None  # why loads fail for now (the loader hangs or dies), or null


class SnapshotEvent(Base, frozen=True):
    timestamp: int
    total_nodes: int
    latest_height: int


class HistoryPoint(Base, frozen=True):
    timestamp: int
    reachable: int


class NetworkCounts(Base, frozen=True):
    """Nodes of one crawl by network (CJDNS: IPv6 in fc00::/8, not counted as IPv6)."""

    ipv4: int
    ipv6: int
    onion: int
    i2p: int
    cjdns: int


class NetworkPoint(Base, frozen=True):
    timestamp: int
    reachable: int
    networks: NetworkCounts


class CountsPoint(Base, frozen=True):
    """A crawl's nodes by value of one key: the newest crawl's top values, then
    ``unknown`` (no value) and ``other`` (the rest; not for services)."""

    timestamp: int
    reachable: int
    counts: dict[str, int]


class MatchPoint(Base, frozen=True):
    """A crawl's nodes whose user agent holds a text, in any case."""

    timestamp: int
    reachable: int
    matched: int


class UniqueBody(Base, frozen=True, rename={"start": "from", "end": "to"}):
    """``/api/unique``: distinct addresses in the crawls of a window ending at the newest."""

    window: int  # seconds
    start: int | None  # the oldest crawl in the window; null when no crawl is known
    end: int | None  # the newest crawl whose membership is known
    crawls: int  # crawls in (to - window, to] whose membership is known
    unique: int  # distinct addresses in any of them


class PresenceBody(Base, frozen=True):
    """An address over the crawls whose membership is known (history points restored from
    an index written before crawldash kept membership have counts only)."""

    crawls: int  # crawls whose membership is known
    seen: int  # of them with the address
    first_seen: int | None  # timestamp of the first crawl with it; null if never seen
    last_seen: int | None  # timestamp of the last crawl with it; null if never seen


class Reason(Base, frozen=True):
    """Why a node is or is not in the newest export (docs/api.md lists the codes)."""

    code: str  # up, reached_not_held, failed, excluded, not_tried or unknown
    detail: str  # one sentence an operator can act on
    crawl: int | None  # the timestamp of the crawl the reason comes from


class CheckBody(Base, frozen=True):
    address: str
    reachable: bool
    snapshot_timestamp: int
    node: Node | None
    presence: PresenceBody
    reason: Reason
    last_up: int | None  # the last crawl held that had the node; null if none did


class Change(Base, frozen=True, rename={"before": "from", "after": "to"}):
    """One field of a node that differs from the crawl before."""

    crawl: int  # the timestamp of the crawl that said the new value
    field: str
    before: str | int | None
    after: str | int | None


class ProfileBody(Base, frozen=True):
    address: str
    since: int | None  # the first crawl compared; null before a second crawl is served
    changes: list[Change]  # newest first


class PresenceRun(Base, frozen=True, rename={"start": "from", "end": "to"}):
    """Consecutive crawls with the address (``present``) or without it."""

    start: int  # the first crawl's timestamp
    end: int  # the last crawl's timestamp
    present: bool
    crawls: int


class NetworkChanges(Base, frozen=True):
    joined: int
    left: int


class ChangesBody(Base, frozen=True, rename={"start": "from", "end": "to"}):
    """``/api/changes``: the latest crawl against an earlier one."""

    start: int | None  # the earlier crawl; null when no earlier crawl's membership is known
    end: int  # the latest crawl
    joined: list[str]
    left: list[str]
    joined_count: int
    left_count: int
    by_network: dict[str, NetworkChanges]


class ErrorDetail(Base, frozen=True):
    status: int
    code: str
    message: str


class ErrorBody(Base, frozen=True):
    error: ErrorDetail


class BreakdownRow(Base, frozen=True, omit_defaults=True):
    value: str | int | None
    nodes: int
    share: float  # of the crawl's nodes
    org: str | None = None  # by=asn: the organisation's name


class BreakdownBody(Base, frozen=True):
    """``/api/breakdown``; assembled from rows prepared once per crawl."""

    timestamp: int
    total_nodes: int
    by: str
    rows: list[BreakdownRow]


class V1SnapshotRef(Base, frozen=True):
    """bitnodes API v1: one crawl in the list of snapshots."""

    url: str
    timestamp: int
    total_nodes: int
    latest_height: int | None  # null for a point restored from an index without heights


class V1SnapshotList(Base, frozen=True):
    count: int
    next: str | None  # absolute URLs of the pages around this one
    previous: str | None
    results: list[V1SnapshotRef]


class V1NodeStatus(Base, frozen=True):
    """bitnodes API v1 node status, with crawldash's presence of the address."""

    address: str  # the host, IPv6 without brackets
    port: int
    status: str  # "UP" in the latest crawl, else "DOWN"
    data: NodeRow | None  # the 13 fields; null when DOWN
    presence: PresenceBody


class V1NodeItem(Base, frozen=True):
    address: str  # host:port, as the snapshot's keys
    data: NodeRow


class V1NodeList(Base, frozen=True):
    timestamp: int
    count: int
    next: str | None
    previous: str | None
    results: list[V1NodeItem]


class NetworkRow(Base, frozen=True):
    """A network served, as ``/api/networks`` lists it."""

    name: str
    path: str  # relative to the service's root, as the page links to it
    snapshot_timestamp: int | None
    snapshot_age: int | None
    nodes: int | None
    stale: bool
    stuck: bool
    live_check: bool = False  # POST /api/v1/checknode/ is on (--live-check)


class NetworksBody(Base, frozen=True):
    networks: list[NetworkRow]


class LeaderboardRow(Base, frozen=True):
    """A node of bitnodes.io's leaderboard: each index and its Peer Index as text with 4
    decimals, its rank (equal PIX, equal rank); crawldash adds the crawl's user agent and
    country. (Rows are encoded once per crawl from the indexes; this type describes them.)"""

    node: str  # address:port, IPv6 in brackets
    vi: str
    si: str
    hi: str
    ai: str
    pi: str
    dli: str
    dui: str
    wli: str
    wui: str
    mli: str
    mui: str
    nsi: str
    ni: str
    bi: str
    peer_index: str
    rank: int
    user_agent: str | None
    country: str | None


class LeaderboardList(Base, frozen=True):
    timestamp: int  # the crawl ranked
    count: int
    next: str | None  # absolute URLs of the pages around this one
    previous: str | None
    not_measured: list[str]  # the indexes no crawler file can feed: always 0
    results: list[LeaderboardRow]
