"""``make bench``: crawldash against a naive server, aiohttp's ceiling and nginx, in one run.

Servers are pinned to core 1 and wrk to core 0. Each cell is the median of BENCH_RUNS runs
of BENCH_SECONDS seconds (3 x 5 by default; BENCH_QUICK=1 for 1 x 2); a cell compared with
aiohttp's ceiling is as many one-second runs (15 by default), each followed by one of the
ceiling's. The whole output, and BENCHMARKS.md, come from this one command.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp

from bench import data
from bench.load import Sample, children, free_port, pss_mib, rss_mib, wait_ready, wrk
from crawldash.tools.demo_data import generate_crawls

QUICK = os.environ.get("BENCH_QUICK") == "1"
RUNS = 1 if QUICK else int(os.environ.get("BENCH_RUNS", "3"))
SECONDS = 2 if QUICK else int(os.environ.get("BENCH_SECONDS", "5"))
STARTS = 1 if QUICK else 5  # start-ups timed for each start-up row: one varies by a third
ROOT = Path(os.environ.get("BENCH_DIR", Path(tempfile.gettempdir()) / "crawldash-bench"))
HERE = Path(__file__).parent
PY = sys.executable
STEAL_MARK = 0.05
lines: list[str] = []


def say(text: str = "") -> None:
    print(text, flush=True)
    lines.append(text)


@contextmanager
def server(command: list[str], ready: str, cores: str = "1") -> Iterator[int]:
    log = open(ROOT / "server.log", "a")  # noqa: SIM115
    process = subprocess.Popen(["taskset", "-c", cores, *command], stdout=log, stderr=log)
    try:
        wait_ready(ready)
        yield process.pid
    finally:
        process.terminate()
        process.wait(20)
        log.close()


def crawldash(data_dir: Path, port: int, state: Path, *extra: str) -> list[str]:
    return [
        PY,
        "-m",
        "crawldash",
        "serve",
        "--data-dir",
        str(data_dir),
        "--state-dir",
        str(state),
        "--port",
        str(port),
        *extra,
    ]


def get(url: str, headers: dict[str, str] | None = None) -> tuple[dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(response.headers), response.read()


def measure(url: str, pid: int, headers: dict[str, str], slow: bool = False) -> list[Sample]:
    """``slow``: a server that takes seconds per request gets fewer connections, more time."""
    if not slow:
        return [wrk(url, pid, SECONDS, headers) for _ in range(RUNS)]
    samples = []
    for _ in range(RUNS):
        get(url, headers)  # wait out requests left running by the previous run's closed sockets
        samples.append(wrk(url, pid, max(SECONDS, 15), headers, connections=2))
    return samples


def paired(
    url: str, pid: int, headers: dict[str, str], ceiling: str, ceiling_pid: int
) -> tuple[list[Sample], list[Sample]]:
    """Runs of one second, each followed by one of the ceiling's, RUNS x SECONDS of each:
    a shared machine's speed drifts within seconds, so each ratio compares runs made a
    second apart rather than runs of several seconds each."""
    ours, theirs = [], []
    for _ in range(RUNS * SECONDS):
        ours.append(wrk(url, pid, 1, headers))
        theirs.append(wrk(ceiling, ceiling_pid, 1, {}))
    return ours, theirs


def median(samples: list[Sample], field: str) -> float:
    return statistics.median(getattr(s, field) for s in samples)


def wait_history(base: str) -> float:
    started = time.monotonic()
    while not json.loads(get(base + "/api/status")[1])["history_complete"]:
        time.sleep(0.02)
    return time.monotonic() - started


def endpoints(hit: str, etag: str) -> list[tuple[str, str, dict[str, str]]]:
    host, _, port = hit.rpartition(":")
    node = f"{host.strip('[]')}-{port}"
    return [
        ("snapshot (identity)", "/api/snapshot", {"Accept-Encoding": "identity"}),
        ("snapshot (gzip)", "/api/snapshot", {"Accept-Encoding": "gzip"}),
        ("status", "/api/status", {}),
        ("history?limit=144", "/api/history?limit=144", {}),
        ("history?limit=144 (gzip)", "/api/history?limit=144", {"Accept-Encoding": "gzip"}),
        ("check hit", f"/api/check?address={hit}", {}),
        ("check miss", "/api/check?address=203.0.113.254:8333", {}),
        ("304 revalidation", "/api/snapshot", {"If-None-Match": etag}),
        ("breakdown?by=country", "/api/breakdown?by=country", {}),
        ("nodes?country=DE&services=P2P_V2", "/api/nodes?country=DE&services=P2P_V2", {}),
        ("presence?limit=144", f"/api/presence?address={hit}", {}),
        ("changes", "/api/changes", {}),
        ("v1 node status", f"/api/v1/nodes/{node}/", {}),
        (
            "v1 snapshots/latest/ (304 revalidation)",
            "/api/v1/snapshots/latest/",
            {"If-None-Match": etag},
        ),
    ]


ONLY_CRAWLDASH = (
    "304 revalidation",
    "history?limit=144 (gzip)",
    "breakdown?by=country",
    "presence?limit=144",
    "changes",
    "v1 node status",
    "v1 snapshots/latest/ (304 revalidation)",
)
ACCESS_LOGGED = ("status", "history?limit=144 (gzip)", "check hit", "check miss")


def main() -> None:
    for tool in ("wrk", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"make bench needs {tool}: apt-get install wrk util-linux")
    ROOT.mkdir(parents=True, exist_ok=True)
    os.sched_setaffinity(0, {0})  # this driver stays off the servers' core
    started = time.monotonic()
    paths = data.make(ROOT)
    results: dict[str, dict[str, list[Sample]]] = {}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    state = ROOT / "state"
    shutil.rmtree(state, ignore_errors=True)
    extras: dict[str, str] = {}
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}/"
    with (
        server(crawldash(paths["data15k"], port, state), base + "/api/status") as pid,
        server([PY, str(HERE / "ceiling_server.py"), str(ceiling_port)], ceiling) as ceiling_pid,
    ):
        extras["history complete after start (cold)"] = f"{wait_history(base):.2f} s"
        extras["RSS (server + its child processes), 15,000 nodes + 8,640 history points"] = (
            f"{rss_mib(pid):.1f} MiB"
        )
        extras["PSS (the same, shared pages counted once)"] = f"{pss_mib(pid):.1f} MiB"
        headers, body = get(base + "/api/snapshot", {"Accept-Encoding": "identity"})
        data.static_snapshot(paths["static"], body)
        hit = next(iter(json.loads(body)["nodes"]))
        cells = endpoints(hit, headers["ETag"])
        results["crawldash"], results["ceiling"] = {}, {}
        for name, path, h in cells:
            if name.startswith("snapshot"):
                results["crawldash"][name] = measure(base + path, pid, h)
                continue
            # Paired with the ceiling, run for run: a shared machine's speed drifts by more
            # than the differences measured here.
            results["crawldash"][name], results["ceiling"][name] = paired(
                base + path, pid, h, ceiling, ceiling_pid
            )
        extras["RSS, the same, after the request runs above (32 clients of the snapshot)"] = (
            f"{rss_mib(pid):.1f} MiB"
        )
        older_snapshot(base, extras)
        access_logged(paths, cells, ceiling, ceiling_pid, results)
        results["ceiling"]["hello"] = [
            s for name, each in results["ceiling"].items() if "access log" not in name for s in each
        ]
    cells = endpoints(hit, '"none"')
    naive_port = free_port()
    naive = f"http://127.0.0.1:{naive_port}"
    with server(
        [PY, str(HERE / "naive_server.py"), str(paths["data15k"]), str(naive_port)],
        naive + "/api/status",
    ) as pid:
        results["naive"] = {
            name: measure(naive + path, pid, h, slow=True)
            for name, path, h in cells
            if name not in ONLY_CRAWLDASH and not name.startswith("nodes")
        }
    results["nginx"] = nginx(paths["static"], access_log=True)
    results["nginx, access_log off"] = nginx(paths["static"], access_log=False)
    report(results)
    more(paths, extras)
    presence_at_full_size()
    workers(paths, results)
    say()
    say(f"total time: {time.monotonic() - started:.0f} s")
    write_markdown()


def older_snapshot(base: str, extras: dict[str, str]) -> None:
    """The crawl before the newest (15,000 nodes), through the v1 route: its first request
    decodes it in the loader process; later ones are answered from the archive."""
    listed = json.loads(get(base + "/api/v1/snapshots/?limit=2")[1])["results"]
    url = listed[1]["url"]
    gzip_ = {"Accept-Encoding": "gzip"}
    started = time.monotonic()
    get(url, gzip_)
    first = time.monotonic() - started
    cached = []
    for _ in range(20):
        started = time.monotonic()
        get(url, gzip_)
        cached.append(time.monotonic() - started)
    extras[
        "older 15,000-node snapshot via /api/v1/snapshots/<timestamp>/ (gzip): first request"
    ] = f"{first * 1000:.0f} ms"
    extras["the same, cached: median of 20 requests (one client)"] = (
        f"{statistics.median(cached) * 1000:.2f} ms"
    )


def access_logged(
    paths: dict[str, Path],
    cells: list[tuple[str, str, dict[str, str]]],
    ceiling: str,
    ceiling_pid: int,
    results: dict[str, dict[str, list[Sample]]],
) -> None:
    """crawldash with ``--access-log`` (its lines go to stderr, as under systemd to the
    journal), paired run for run with the ceiling as the default rows are."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    state = ROOT / "state-access-log"
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(ROOT / "state", state)
    with server(
        crawldash(paths["data15k"], port, state, "--access-log"), base + "/api/status"
    ) as pid:
        wait_history(base)
        for name, path, h in cells:
            if name not in ACCESS_LOGGED:
                continue
            label = f"{name}, access log on"
            results["crawldash"][label], results["ceiling"][label] = paired(
                base + path, pid, h, ceiling, ceiling_pid
            )


def presence_at_full_size() -> None:
    """``python -m bench.presence``: the presence store with 8,640 crawls of 15,000 nodes."""
    size = ["864"] if QUICK else []  # a tenth of the crawls for a quick run
    out = subprocess.run(
        [PY, "-m", "bench.presence", *size],
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    ).stdout
    say()
    say("## Presence at full size (`python -m bench.presence`, in its own process)")
    say()
    say("| measure | value |")
    say("| --- | --- |")
    for line in out.splitlines():
        if line.startswith("| "):
            say(line)


def nginx(static: Path, access_log: bool) -> dict[str, list[Sample]]:
    """nginx serving the snapshot file; ``access_log``: its default access log (combined
    format, to a file), as installed; else ``access_log off``."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        say("nginx not installed: its column is n/a")
        return {}
    port = free_port()
    conf = ROOT / "nginx.conf"
    log = f"access_log {ROOT}/nginx-access.log" if access_log else "access_log off"
    conf.write_text(
        f"worker_processes 1; daemon off; pid {ROOT}/nginx.pid; error_log {ROOT}/nginx.err;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ {log}; default_type application/json; server {{ "
        f"listen 127.0.0.1:{port}; root {static}; location / {{ gzip_static on; }} }} }}\n"
    )
    url = f"http://127.0.0.1:{port}/snapshot.json"
    with server([binary, "-p", str(ROOT), "-c", str(conf)], url) as pid:
        return {
            "snapshot (identity)": measure(url, pid, {"Accept-Encoding": "identity"}),
            "snapshot (gzip)": measure(url, pid, {"Accept-Encoding": "gzip"}),
        }


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def report(results: dict[str, dict[str, list[Sample]]]) -> None:
    ceiling = results["ceiling"]["hello"]
    say(
        f"## Requests ({RUNS} runs x {SECONDS} s each; a row beside aiohttp's ceiling: "
        f"{RUNS * SECONDS} runs of 1 s, each followed by one of the ceiling's; "
        "median [min-max]; server on core 1)"
    )
    say()
    say("| endpoint | server | req/s | p50 ms | p99 ms | server CPU us/req | note |")
    say("| --- | --- | --- | --- | --- | --- | --- |")
    for name in results["crawldash"]:
        for who in ("crawldash", "ceiling", "naive", "nginx", "nginx, access_log off"):
            samples = results[who].get(name)
            if samples:
                label = {
                    "ceiling": "aiohttp ceiling, alternate runs",
                    "nginx": "nginx, default access log",
                }
                row(name, label.get(who, who), samples)
    row("fixed small body (all runs)", "aiohttp ceiling", ceiling)
    say()
    say(
        "## Ratios (of median req/s; against the ceiling, the median of the ratios of runs "
        "made alternately with it; p99 ratio is crawldash p99 / other p99)"
    )
    say()
    say(
        "| endpoint | crawldash/naive | crawldash/ceiling | p99 vs ceiling "
        "| crawldash/nginx (default access log) | crawldash/nginx (access_log off) |"
    )
    say("| --- | --- | --- | --- | --- | --- |")
    ours = results["crawldash"]
    for name, samples in ours.items():
        rps = median(samples, "rps")
        naive = results["naive"].get(name)
        nginx = results["nginx"].get(name)
        nginx_off = results["nginx, access_log off"].get(name)
        paired = results["ceiling"].get(name)
        if paired:
            to_ceiling = statistics.median(
                a.rps / b.rps for a, b in zip(samples, paired, strict=True)
            )
            p99_to_ceiling = statistics.median(
                a.p99 / b.p99 for a, b in zip(samples, paired, strict=True)
            )
        else:
            to_ceiling = rps / median(ceiling, "rps")
            p99_to_ceiling = median(samples, "p99") / median(ceiling, "p99")
        say(
            f"| {name} | {ratio(rps, naive and median(naive, 'rps'))} "
            f"| {to_ceiling:.2f} | {p99_to_ceiling:.2f} "
            f"| {ratio(rps, nginx and median(nginx, 'rps'))} "
            f"| {ratio(rps, nginx_off and median(nginx_off, 'rps'))} |"
        )


def ratio(ours: float, other: float | None) -> str:
    return "n/a" if not other else f"{ours / other:.2f}"


def row(name: str, who: str, samples: list[Sample]) -> None:
    rps = [s.rps for s in samples]
    steal = max(s.steal for s in samples)
    errors = sum(s.non2xx for s in samples)
    note = ", ".join(
        filter(
            None,
            [
                f"steal {steal:.0%}" if steal > STEAL_MARK else "",
                f"{errors} non-2xx/3xx" if errors else "",
            ],
        )
    )
    say(
        f"| {name} | {who} | {statistics.median(rps):,.0f} [{min(rps):,.0f}-{max(rps):,.0f}] "
        f"| {fmt_ms(median(samples, 'p50'))} | {fmt_ms(median(samples, 'p99'))} "
        f"| {median(samples, 'cpu_per_request') * 1e6:,.0f} | {note} |"
    )


def more(paths: dict[str, Path], extras: dict[str, str]) -> None:
    data_dir, state = paths["data15k"], ROOT / "state"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    newest = max(int(p.stem) for p in data_dir.glob("*.json") if p.stem.isdigit())
    crawls = [  # rendered now, so that writing them costs the run nothing but the write
        (crawl.timestamp, crawl.body())
        for crawl in generate_crawls(
            nodes=15_000, crawls=data.WRITTEN_LATER, end=newest + data.WRITTEN_LATER * 600, seed=9
        )
    ]
    extras[f"first answer after start (state index present), median of {STARTS} starts"] = (
        first_answers(lambda: crawldash(data_dir, port, state), base + "/api/status")
    )
    # Started on both cores so that its loader process may use either (as on a machine where
    # nothing is pinned); once it runs, the server process itself is pinned to core 1.
    with server(crawldash(data_dir, port, state), base + "/api/status", cores="0,1") as pid:
        extras["history complete after start (state index present)"] = f"{wait_history(base):.2f} s"
        time.sleep(2)  # the loader process has started by now
        subprocess.run(
            ["taskset", "-a", "-p", "-c", "1", str(pid)], check=True, capture_output=True
        )
        delays = [write_and_wait(data_dir, crawl, base) for crawl in crawls[:20]]
        extras["new 15,000-node snapshot written -> served, median / worst of 20"] = (
            f"{statistics.median(delays) * 1000:.0f} ms / {max(delays) * 1000:.0f} ms"
        )
        hit = next(iter(json.loads(get(base + "/api/snapshot")[1])["nodes"]))
        url = f"{base}/api/check?address={hit}"
        loading = crawls[20 : 20 + RUNS * SECONDS]
        extras["check p99 idle / while snapshots load (one per second), loader on either core"] = (
            p99_while_loading(url, pid, data_dir, loading)
        )
        for kid in children(pid)[1:]:  # now the loader process shares the server's core too
            subprocess.run(["taskset", "-p", "-c", "1", str(kid)], check=True, capture_output=True)
        loading = crawls[20 + RUNS * SECONDS : 20 + 2 * RUNS * SECONDS]
        extras["check p99 idle / while snapshots load, loader on the server's core"] = (
            p99_while_loading(url, pid, data_dir, loading)
        )
    extras[f"first answer after start (cold, no state index), median of {STARTS} starts"] = (
        first_answers(lambda: crawldash(data_dir, port, cold(ROOT / "cold")), base + "/api/status")
    )
    with server(crawldash(data_dir, port, cold(ROOT / "cold")), base + "/api/status"):
        extras["history complete after start (cold, no state index)"] = (
            f"{wait_history(base):.2f} s"
        )
    with server(crawldash(paths["data100k"], port, ROOT / "s100k"), base + "/api/status") as pid:
        wait_history(base)
        extras["RSS (server + its child processes), 100,000-node snapshot"] = (
            f"{rss_mib(pid):.1f} MiB"
        )
        extras["PSS, 100,000-node snapshot (shared pages counted once)"] = f"{pss_mib(pid):.1f} MiB"
    say()
    say("## Freshness, start-up and memory")
    say()
    say("| measure | value |")
    say("| --- | --- |")
    for name, value in extras.items():
        say(f"| {name} | {value} |")


def first_answers(command: Callable[[], list[str]], ready: str) -> str:
    """The median and range of STARTS start-ups' times to a first answer, on both cores."""
    times = []
    for _ in range(STARTS):
        started = time.monotonic()
        with server(command(), ready, cores="0,1"):
            times.append(time.monotonic() - started)
    return f"{statistics.median(times):.2f} s [{min(times):.2f}-{max(times):.2f}]"


def cold(state: Path) -> Path:
    """``state`` emptied: a start with no state index."""
    shutil.rmtree(state, ignore_errors=True)
    return state


def p99_while_loading(url: str, pid: int, data_dir: Path, crawls: list[tuple[int, bytes]]) -> str:
    """check's p99 idle and while a crawl is written every second, in RUNS pairs of runs
    (idle, then loading): a shared machine's speed drifts between runs further apart. Also
    how many crawls were taken over meanwhile (a load that starts once another ends serves
    the newest written)."""
    base = url.split("/api/")[0]
    first = json.loads(get(base + "/api/status")[1])["snapshot_timestamp"]
    served: set[int] = set()
    idle, loading = [], []
    for round_ in range(RUNS):
        idle.append(wrk(url, pid, SECONDS, {}).p99)
        stop = threading.Event()
        these = crawls[round_ * SECONDS : (round_ + 1) * SECONDS]
        threads = [
            threading.Thread(target=keep_writing, args=(data_dir, these, stop)),
            threading.Thread(target=keep_looking, args=(base, served, stop)),
        ]
        for thread in threads:
            thread.start()
        loading.append(wrk(url, pid, SECONDS, {}).p99)
        stop.set()
        for thread in threads:
            thread.join()
        time.sleep(1)  # the last crawl's load ends before the next idle run
    still, busy = statistics.median(idle), statistics.median(loading)
    return (
        f"{still * 1000:.2f} ms / {busy * 1000:.2f} ms (x{busy / still:.2f}; "
        f"{len(served - {first})} crawls taken over meanwhile)"
    )


def keep_looking(base: str, served: set[int], stop: threading.Event) -> None:
    """The snapshot timestamps /api/status names, every 0.1 s."""
    while not stop.wait(0.1):
        served.add(json.loads(get(base + "/api/status")[1])["snapshot_timestamp"])


def write_and_wait(data_dir: Path, crawl: tuple[int, bytes], base: str) -> float:
    timestamp, body = crawl
    temp = data_dir / f".{timestamp}.tmp"
    temp.write_bytes(body)
    os.replace(temp, data_dir / f"{timestamp}.json")
    written = time.monotonic()
    while json.loads(get(base + "/api/status")[1])["snapshot_timestamp"] != timestamp:
        time.sleep(0.002)
    served = time.monotonic() - written
    time.sleep(0.3)
    return served


def keep_writing(data_dir: Path, crawls: list[tuple[int, bytes]], stop: threading.Event) -> None:
    for timestamp, body in crawls:
        if stop.wait(1.0):
            return
        temp = data_dir / ".load.tmp"
        temp.write_bytes(body)
        os.replace(temp, data_dir / f"{timestamp}.json")


def workers(paths: dict[str, Path], results: dict[str, dict[str, list[Sample]]]) -> None:
    """Scaling: --workers 2 across both cores against --workers 1 on one core."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    say()
    say("## --workers (status endpoint; wrk on core 0 in both cases)")
    say()
    say("| workers | server cores | req/s | p99 ms |")
    say("| --- | --- | --- | --- |")
    one = results["crawldash"]["status"]
    say(f"| 1 | 1 | {median(one, 'rps'):,.0f} | {fmt_ms(median(one, 'p99'))} |")
    command = crawldash(paths["data15k"], port, ROOT / "state", "--workers", "2")
    with server(command, base + "/api/status", cores="0,1") as pid:
        time.sleep(2)
        two = measure(base + "/api/status", pid, {})
    say(f"| 2 | 0,1 (shared with wrk) | {median(two, 'rps'):,.0f} | {fmt_ms(median(two, 'p99'))} |")


def write_markdown() -> None:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    header = [
        "# crawldash benchmarks",
        "",
        "Written by `make bench` (`python -m bench.run`); every number below comes from that "
        "one run. Rerun it to replace this file.",
        "",
        f"- machine: {os.cpu_count()} cores, {cpu}, Linux {platform.release()}",
        f"- Python {platform.python_version()}, aiohttp {aiohttp.__version__}",
        f"- command: `make bench` (BENCH_RUNS={RUNS}, BENCH_SECONDS={SECONDS})",
        "- data: the newest two crawls have 15,000 nodes each, with the demo generator's churn "
        "between them (`crawldash.tools.demo_data`); the 8,638 older history files are "
        f"{data.SMALL_NODES}-node crawls (8,640 full crawls would be ~22 GB); a separate folder "
        "holds one 100,000-node crawl",
        "- crawldash is started exactly as the README's serve command starts it, with its "
        "defaults (access log off); the rows marked `access log on` add `--access-log`, its "
        "lines going to stderr as under systemd to the journal",
        "- nginx serves the snapshot file with its default access log (combined format, to a "
        "file) in the column compared with crawldash's default, and with `access_log off` "
        "beside it",
        "- load: `wrk -t1 -c32 --latency` pinned to core 0 (the naive server: 2 connections, "
        "at least 15 s, as it takes a tenth of a second or more per request); servers pinned "
        "to core 1; server CPU from /proc/<pid>/stat (the server and its child processes); "
        "runs with over 5% steal time are marked",
        "- crawldash's loader process (it decodes new snapshots) runs beside the server on core "
        "1, except where the table says it may use either core: there the server process is "
        "pinned to core 1 after start-up and its loader is left to the scheduler",
        "",
    ]
    (HERE.parent / "BENCHMARKS.md").write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
