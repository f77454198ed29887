"""settings/addresses.py: the options that name addresses, ranges, a proxy and magics.
(Named for an aspect: ``test_addresses`` would be a plural apart from crawl's
``test_address``, which tests/test_names.py refuses.)"""

from __future__ import annotations

import ipaddress

import pytest

from crawldash.settings.addresses import cidrs, is_ipv6, magics, proxy_address, public_url


def test_cidrs_allow_host_bits_and_bare_addresses():
    assert cidrs("10.1.2.3/8, 2001:db8::1,") == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("2001:db8::1/128"),
    )
    with pytest.raises(ValueError, match="'ten' is not an address range"):
        cidrs("10.0.0.0/8,ten")


def test_proxy_addresses():
    assert proxy_address("127.0.0.1:9050") == ("127.0.0.1", 9050)
    assert proxy_address("[::1]:9050") == ("::1", 9050)
    with pytest.raises(ValueError, match="is not IP:port, such as"):
        proxy_address("localhost:9050")
    with pytest.raises(ValueError, match="port from 1 to 65535"):
        proxy_address("127.0.0.1:70000")


def test_magics_are_eight_hex_digits_in_lower_case():
    assert magics("main=F9BEB4D9, test=0b110907") == (("main", "f9beb4d9"), ("test", "0b110907"))
    with pytest.raises(ValueError, match="main=f9be: a magic is 8 hexadecimal digits"):
        magics("main=f9be")


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("https://example.org/crawldash/", "https://example.org/crawldash"),
        ("http://[2001:db8::1]:8080", "http://[2001:db8::1]:8080"),
        ("https://example.org/a%20b", "https://example.org/a%20b"),
    ],
)
def test_public_urls_lose_a_trailing_slash(text: str, url: str):
    assert public_url(text) == url


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ftp://example.org", "not an http:// or https:// URL"),
        ("https://user:pw@example.org", "user or password"),
        ("https://example.org/?q=1", "query or fragment"),
        ("https://example.org/a b", "holds a space"),
        ("https://exämple.org", "non-ASCII"),
        ("https://example.org:0", "port 0"),
        ("https://example.org/<x>", "characters a URL path cannot hold"),
        ("https://exa!mple.org", "not a host name"),
    ],
)
def test_bad_public_urls_say_why(text: str, reason: str):
    with pytest.raises(ValueError, match=reason):
        public_url(text)


def test_is_ipv6():
    assert is_ipv6("::1")
    assert not is_ipv6("127.0.0.1")
    assert not is_ipv6("[::1]")
