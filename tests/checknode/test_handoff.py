"""checknode/handoff.py: successful checks left as small files for the bridge."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from crawldash.checknode.handoff import FILE_MODE, HandedCheck, Handoff

CHECK = HandedCheck("198.51.100.1", 8333, 1033, 1_700_000_000)


def test_a_check_is_left_whole_under_its_time(tmp_path: Path):
    assert Handoff(tmp_path).leave(CHECK)
    (name,) = os.listdir(tmp_path)
    assert name.startswith("1700000000-")
    assert name.endswith(".json")
    path = tmp_path / name
    assert msgspec.json.decode(path.read_bytes(), type=HandedCheck) == CHECK
    assert path.stat().st_mode & 0o777 == FILE_MODE


def test_a_full_folder_takes_no_more(tmp_path: Path):
    handoff = Handoff(tmp_path, max_files=2)
    assert handoff.leave(CHECK)
    assert handoff.leave(CHECK)
    assert not handoff.leave(CHECK)
    assert len(os.listdir(tmp_path)) == 2


def test_a_missing_folder_is_no_error(tmp_path: Path):
    assert not Handoff(tmp_path / "missing").leave(CHECK)


@pytest.mark.parametrize(
    "data",
    [
        b'{"address": "", "port": 1, "services": 0, "checked_at": 0}',
        b'{"address": "a", "port": 0, "services": 0, "checked_at": 0}',
        b'{"address": "a", "port": 1, "services": -1, "checked_at": 0}',
        b'{"address": "a", "port": 1, "services": 0, "checked_at": 0, "more": 1}',
    ],
    ids=["no-address", "port-0", "negative-services", "unknown-field"],
)
def test_a_file_that_is_not_a_check_does_not_decode(data: bytes):
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(data, type=HandedCheck)
