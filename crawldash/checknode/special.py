"""Which addresses are not public, as IANA's special-purpose address registries list them
(https://www.iana.org/assignments/iana-ipv4-special-registry and
iana-ipv6-special-registry), with the multicast ranges and, for IPv6, everything outside
the global unicast space 2000::/3, all written out here as a table: what Python's
``ipaddress`` flags say changes between its versions and lags the registries.

A block the registry marks "Globally Reachable: False" is refused. So is one marked
"N/A" (Teredo, 6to4): such an address names a tunnel, not a node, and 6to4 gives one IPv4
host 2^80 spellings. Inside 2001::/23 the sub-blocks marked globally reachable are
allowed back (``GLOBAL_IN_IETF``). ``64:ff9b::/96`` (NAT64) is public when the IPv4
address it carries is; an IPv4-mapped address is judged as the IPv4 address it is.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix: globally reachable
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


@dataclass(frozen=True)
class Block:
    """A range that is not public: ``cause`` is its label in /metrics, ``name`` the
    registry's (or the address plan's) name for it."""

    network: IPNetwork
    cause: str
    name: str


def _blocks(*rows: tuple[str, str, str]) -> tuple[Block, ...]:
    return tuple(Block(ipaddress.ip_network(text), cause, name) for text, cause, name in rows)


# The more specific blocks first: the first that holds an address names why.
NOT_PUBLIC = _blocks(
    # IPv4 special-purpose registry
    ("0.0.0.0/32", "unspecified", "this host on this network"),
    ("0.0.0.0/8", "reserved", "this network"),
    ("10.0.0.0/8", "private", "private-use"),
    ("100.64.0.0/10", "shared", "shared address space"),
    ("127.0.0.0/8", "loopback", "loopback"),
    ("169.254.0.0/16", "link_local", "link-local"),
    ("172.16.0.0/12", "private", "private-use"),
    ("192.0.0.0/24", "special_purpose", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation", "documentation (TEST-NET-1)"),
    ("192.88.99.0/24", "special_purpose", "deprecated 6to4 relay anycast"),
    ("192.168.0.0/16", "private", "private-use"),
    ("198.18.0.0/15", "benchmarking", "benchmarking"),
    ("198.51.100.0/24", "documentation", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast", "multicast"),
    ("255.255.255.255/32", "reserved", "limited broadcast"),
    ("240.0.0.0/4", "reserved", "reserved"),
    # IPv6 special-purpose registry
    ("::/128", "unspecified", "unspecified address"),
    ("::1/128", "loopback", "loopback address"),
    ("64:ff9b:1::/48", "special_purpose", "local-use IPv4/IPv6 translation"),
    ("100::/64", "special_purpose", "discard-only address block"),
    ("100:0:0:1::/64", "special_purpose", "dummy IPv6 prefix"),
    ("2001::/32", "special_purpose", "Teredo"),
    ("2001:2::/48", "benchmarking", "benchmarking"),
    ("2001:10::/28", "special_purpose", "deprecated ORCHID"),
    ("2001::/23", "special_purpose", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation", "documentation"),
    ("2002::/16", "special_purpose", "6to4"),
    ("3fff::/20", "documentation", "documentation"),
    ("5f00::/16", "special_purpose", "segment routing (SRv6) SIDs"),
    ("fc00::/7", "private", "unique-local"),
    ("fe80::/10", "link_local", "link-local unicast"),
    ("fec0::/10", "site_local", "deprecated site-local"),
    ("ff00::/8", "multicast", "multicast"),
)
# The registry's globally reachable sub-blocks of 2001::/23.
GLOBAL_IN_IETF = tuple(
    ipaddress.IPv6Network(text)
    for text in (
        "2001:1::1/128",  # Port Control Protocol anycast
        "2001:1::2/128",  # TURN anycast
        "2001:1::3/128",  # DNS-SD service registration protocol anycast
        "2001:3::/32",  # AMT
        "2001:4:112::/48",  # AS112-v6
        "2001:20::/28",  # ORCHIDv2
        "2001:30::/28",  # drone remote ID protocol entity tags
    )
)
_IPV4 = tuple(block for block in NOT_PUBLIC if block.network.version == 4)
_IPV6 = tuple(block for block in NOT_PUBLIC if block.network.version == 6)
OUTSIDE_UNICAST = Block(GLOBAL_UNICAST, "reserved", "outside global unicast 2000::/3")


def not_public(ip: IPAddress) -> Block | None:
    """The block that makes ``ip`` not public, or None if it is public.

    Args:
        ip: an address without a zone; an IPv4-mapped one is judged as its IPv4 address,
            a NAT64 one (``64:ff9b::/96``) by the IPv4 address it carries.

    Returns:
        The first block of the table that holds it (or the one it carries), else None.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return not_public(ip.ipv4_mapped)
        if ip in NAT64:
            return not_public(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if any(ip in allowed for allowed in GLOBAL_IN_IETF):
            return None
        found = next((block for block in _IPV6 if ip in block.network), None)
        if found is None and ip not in GLOBAL_UNICAST:
            return OUTSIDE_UNICAST
        return found
    return next((block for block in _IPV4 if ip in block.network), None)
