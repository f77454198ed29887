"""settings/checking.py: the live check's options, off unless a network is named."""

from __future__ import annotations

import pytest

from crawldash.settings.checking import EVERY_NETWORK, LiveCheckSettings
from crawldash.settings.options import options_of


def test_the_live_check_is_off_by_default_with_bounded_defaults():
    settings = LiveCheckSettings()
    assert settings.live_check == ()
    assert (settings.live_check_per_client, settings.live_check_in_flight) == (10, 32)
    assert settings.live_check_max_bytes == 16 * 1024
    assert settings.tor_proxy is None


def test_live_check_alone_stands_for_every_network():
    option = dict(options_of(LiveCheckSettings))["live_check"]
    assert (option.kind, option.bare) == ("list", EVERY_NETWORK)


def test_each_option_parses_and_bounds_its_value():
    found = dict(options_of(LiveCheckSettings))
    assert found["live_check_timeout"].parse("2.5") == 2.5
    assert found["live_check_max_bytes"].parse("32K") == 32 * 1024
    assert found["tor_proxy"].parse("127.0.0.1:9050") == ("127.0.0.1", 9050)
    with pytest.raises(ValueError, match="0 is outside 1-100000"):
        found["live_check_per_client"].parse("0")
    with pytest.raises(ValueError, match=r"61\.0 is outside 0\.1-60 seconds"):
        found["live_check_connect_timeout"].parse("61")
