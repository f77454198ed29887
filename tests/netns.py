"""Scenarios run in a network namespace of their own (``unshare -n``), with addresses of
the public internet put on its loopback device: a live check of ``8.8.8.8`` then reaches
a peer of the test's, and nothing leaves the machine, whatever the code under test does
(a target wrongly allowed finds no route out).

``in_own_network("tests.test_x", "scenario", addresses)`` runs
``python -m tests.netns tests.test_x scenario ADDRESS...`` under ``unshare -n``: that
brings ``lo`` up, puts each address on it, and runs the coroutine ``scenario(folder)``
with a fresh temporary folder; what it returns (JSON) comes back to the test, which makes
its assertions there. Without the privilege to make a namespace, the test is skipped,
with that reason.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_TIMEOUT = 600  # seconds: a bound on a scenario that hangs, never reached by one that works


def in_own_network(module: str, scenario: str, addresses: Sequence[str]) -> Any:
    """What ``module.scenario`` returned, run in a network namespace of its own with
    ``addresses`` on its loopback device."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing: a network namespace of the test's own needs it")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(
            "no network namespace of the test's own (unshare -n needs root or user "
            f"namespaces): {probe.stderr.strip()}"
        )
    command = ["unshare", "-n", sys.executable, "-m", "tests.netns", module, scenario, *addresses]
    ran = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT
    )
    if ran.returncode != 0:
        pytest.fail(f"the scenario {module}.{scenario} failed:\n{ran.stderr[-5000:]}")
    return json.loads(ran.stdout.splitlines()[-1])


def _own_loopback(addresses: Sequence[str]) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for address in addresses:
        if ":" in address:  # no duplicate address detection: usable at once
            subprocess.run(
                ["ip", "-6", "addr", "add", f"{address}/128", "dev", "lo", "nodad"], check=True
            )
        else:
            subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=True)


def main(arguments: Sequence[str]) -> None:
    module, name, *addresses = arguments
    _own_loopback(addresses)
    scenario = getattr(importlib.import_module(module), name)
    with tempfile.TemporaryDirectory() as folder:
        result = asyncio.run(scenario(Path(folder)))
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
