"""settings/options.py: how an option is declared and parsed from text, with a clear
error for a bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldash.settings.demo import DemoSettings
from crawldash.settings.options import (
    byte_size,
    file_in_a_folder,
    log_level,
    markdown_table,
    named_pairs,
    named_paths,
    named_values,
    on_off,
    options_of,
    origins,
    seconds,
    whole_number,
)
from crawldash.settings.serve import Settings


def test_whole_numbers_within_bounds():
    port = whole_number(1, 65535)
    assert port("8333") == 8333
    with pytest.raises(ValueError, match="'80x' is not a whole number"):
        port("80x")
    with pytest.raises(ValueError, match="65536 is outside 1-65535"):
        port("65536")


def test_seconds_take_fractions_and_name_their_unit():
    assert seconds(0.1, 60)("2.5") == 2.5
    with pytest.raises(ValueError, match=r"0\.05 is outside 0\.1-60 seconds"):
        seconds(0.1, 60)("0.05")
    with pytest.raises(ValueError, match="not a number of seconds"):
        seconds(0.1, 60)("soon")


@pytest.mark.parametrize(
    ("text", "size"),
    [("268435456", 268435456), ("256M", 256 * 1024**2), ("16k", 16384), ("1GB", 1024**3)],
)
def test_byte_sizes(text: str, size: int):
    assert byte_size(text) == size


@pytest.mark.parametrize(
    ("text", "reason"),
    [("lots", "not a size such as"), ("0", "at least 1 byte"), ("1.5M", "not a size")],
)
def test_bad_byte_sizes_say_why(text: str, reason: str):
    with pytest.raises(ValueError, match=reason):
        byte_size(text)


def test_on_off_and_log_levels():
    assert (on_off("YES"), on_off("off"), on_off("1")) == (True, False, True)
    with pytest.raises(ValueError, match="'maybe' is not on or off"):
        on_off("maybe")
    assert log_level("DEBUG") == "debug"
    with pytest.raises(ValueError, match="invalid choice: 'loud'"):
        log_level("loud")


def test_file_in_a_folder_needs_the_folder(tmp_path: Path):
    assert file_in_a_folder(str(tmp_path / "status.json")) == tmp_path / "status.json"
    with pytest.raises(ValueError, match="is not an existing folder"):
        file_in_a_folder(str(tmp_path / "missing" / "status.json"))
    with pytest.raises(ValueError, match="is a folder"):
        file_in_a_folder(str(tmp_path))


def test_named_pairs():
    assert named_paths("main=/d/a, test-4=/d/b") == (
        ("main", Path("/d/a")),
        ("test-4", Path("/d/b")),
    )
    assert named_values("a=x,a=y") == (("a", "x"), ("a", "y"))  # repeats allowed
    with pytest.raises(ValueError, match="the network 'a' is named twice"):
        named_paths("a=/x,a=/y")
    with pytest.raises(ValueError, match="'a' is not NAME=PATH"):
        named_paths("a")
    with pytest.raises(ValueError, match="'Main' is not a network name"):
        named_pairs(int)("Main=1")
    with pytest.raises(ValueError, match="invalid literal"):
        named_pairs(int)("main=x")


def test_origins_are_comma_separated():
    assert origins(" https://a.example , *,") == ("https://a.example", "*")


def test_options_of_fill_in_flags_and_variables():
    found = dict(options_of(Settings))
    assert found["max_file_size"].flag == "--max-file-size"
    assert found["max_file_size"].env == "CRAWLDASH_MAX_FILE_SIZE"
    assert found["cors_origins"].flag == "--cors-origin"  # declared flag wins
    assert found["cors_origins"].env == "CRAWLDASH_CORS_ORIGIN"
    assert dict(options_of(DemoSettings))["nodes"].env is None
    assert list(found).index("live_check") > list(found).index("data_dir")  # own ones first


def test_a_per_network_option_has_two_forms():
    status = dict(options_of(Settings))["status_file"]
    first, named = status.forms()
    assert (first.flag, named.flag) == ("--status-file", "--network-status-file")
    assert named.env == "CRAWLDASH_NETWORK_STATUS_FILES"
    assert first.parse("/s/a.json") == ((None, Path("/s/a.json")),)
    assert named.parse("b=/s/b.json") == (("b", Path("/s/b.json")),)


def test_the_markdown_table_has_a_row_per_option():
    table = markdown_table(DemoSettings)
    lines = table.splitlines()
    assert lines[0] == "| option | environment | default | meaning |"
    assert len(lines) == 2 + len(list(options_of(DemoSettings)))
    assert "| `--nodes` | none | `15000` | nodes in the newest crawl |" in lines
