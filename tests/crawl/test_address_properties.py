"""Property tests: every spelling of a valid address parses to one canonical form."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from crawldash.crawl.address import AddressError, network_of, parse_address

BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
ports = st.integers(min_value=1, max_value=65535)


def spell_case(text: str, flips: list[bool]) -> str:
    return "".join(c.upper() if i < len(flips) and flips[i] else c for i, c in enumerate(text))


@st.composite
def ipv6_spellings(draw: st.DrawFn) -> tuple[str, str]:
    address = ipaddress.IPv6Address(draw(st.integers(min_value=0, max_value=2**128 - 1)))
    spelling = draw(st.sampled_from([address.exploded, address.compressed]))
    if draw(st.booleans()):  # drop leading zeros of each group in the exploded form
        spelling = ":".join(g.lstrip("0") or "0" for g in address.exploded.split(":"))
    flips = draw(st.lists(st.booleans(), max_size=39))
    return spell_case(spelling, flips), address.compressed


@given(st.integers(min_value=0, max_value=2**32 - 1), ports)
def test_ipv4_round_trips(number: int, port: int):
    host = str(ipaddress.IPv4Address(number))
    assert parse_address(f"{host}:{port}") == f"{host}:{port}"


@given(st.integers(min_value=0, max_value=2**128 - 1) | st.integers(0xFC << 120, 0xFD << 120))
def test_the_network_of_a_canonical_ipv6_host_is_cjdns_inside_fc00_8(number: int):
    address = ipaddress.IPv6Address(number)
    cjdns = address in ipaddress.IPv6Network("fc00::/8")
    assert network_of(address.compressed) == ("cjdns" if cjdns else "ipv6")


@given(ipv6_spellings(), ports)
def test_ipv6_any_spelling_is_one_canonical_form(spelling: tuple[str, str], port: int):
    spelled, canonical = spelling
    assert parse_address(f"[{spelled}]:{port}") == f"[{canonical}]:{port}"


@given(st.text(alphabet=BASE32, min_size=56, max_size=56), st.lists(st.booleans()), ports)
def test_onion_is_case_insensitive(label: str, flips: list[bool], port: int):
    spelled = spell_case(label + ".onion", flips)
    assert parse_address(f"{spelled}:{port}") == f"{label}.onion:{port}"


@given(st.text(alphabet=BASE32, min_size=52, max_size=52), st.lists(st.booleans()), ports)
def test_i2p_is_case_insensitive(label: str, flips: list[bool], port: int):
    spelled = spell_case(label + ".b32.i2p", flips)
    assert parse_address(f"{spelled}:{port}") == f"{label}.b32.i2p:{port}"


@given(st.text(max_size=120))
def test_anything_else_is_invalid_address_never_another_error(text: str):
    result = outcome(text)
    if isinstance(result, AddressError):
        assert str(result)
    else:
        assert parse_address(result) == result  # whatever parses is canonical


@given(st.from_regex(r"\A[0-9a-z.:\[\]%-]{1,60}:[0-9]{1,6}\Z"))
def test_address_like_noise_never_raises_anything_else(text: str):
    assert isinstance(outcome(text), str | AddressError)


def outcome(text: str) -> str | AddressError:
    """The canonical address, or the AddressError; any other exception fails the test."""
    try:
        return parse_address(text)
    except AddressError as error:
        return error
