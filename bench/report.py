"""The rows of a run as text: the console's report and BENCHMARKS.md, one and the same."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from collections.abc import Iterable
from pathlib import Path

import aiohttp

from bench import peer_report
from bench.config import Config
from bench.load import Sample
from bench.rows import (
    Measure,
    Note,
    Requests,
    Row,
    Section,
    Server,
    Shape,
    Unit,
    Versus,
    Workers,
)

STEAL_MARK = 0.05  # runs with more steal time than this are marked
CEILING = "aiohttp ceiling"
OTHERS = (Server.NAIVE, Server.NGINX, Server.NGINX_OFF)


def body(config: Config, rows: list[Row], took: float) -> list[str]:
    """Every table, in BENCHMARKS.md's order, then the run's total time."""
    requests = [row for row in rows if isinstance(row, Requests)]
    measures = [row for row in rows if isinstance(row, Measure)]
    out = [f"- {row.text}" for row in rows if isinstance(row, Note)]
    if requests:
        out += requests_table(config, requests) + ratios_table(requests)
    out += measure_table(Section.SWITCH, [m for m in measures if m.section is Section.SWITCH])
    for section in (Section.FRESHNESS, Section.PRESENCE):
        out += measure_table(section, [m for m in measures if m.section is section])
    out += workers_table(requests, [row for row in rows if isinstance(row, Workers)])
    out += measure_table(Section.TARGETS, [m for m in measures if m.section is Section.TARGETS])
    peer = [m for m in measures if m.section is Section.PEER]
    versus = [row for row in rows if isinstance(row, Versus)]
    out += peer_report.table(versus, [measure_line(m) for m in peer])
    while out and not out[0]:
        out.pop(0)
    return [*out, "", f"total time: {took:.0f} s"]


def label(row: Requests) -> str:
    return f"{row.endpoint}, access log on" if row.access_log else row.endpoint


def median(samples: Iterable[Sample], field: str) -> float:
    return float(statistics.median(getattr(sample, field) for sample in samples))


def crawldash_first(requests: list[Requests]) -> list[list[Requests]]:
    """The rows of each endpoint together, crawldash's first, in the order measured."""
    groups: dict[tuple[str, bool], list[Requests]] = {}
    for row in sorted(requests, key=lambda r: r.server is not Server.CRAWLDASH):
        groups.setdefault((row.endpoint, row.access_log), []).append(row)
    order = list(Server)
    return [sorted(group, key=lambda r: order.index(r.server)) for group in groups.values()]


def ceiling_runs(requests: list[Requests]) -> list[Sample]:
    """Every run of the ceiling's beside crawldash at its defaults (access log off)."""
    return [s for row in requests if not row.access_log for s in row.ceiling]


def requests_table(config: Config, requests: list[Requests]) -> list[str]:
    out = [
        "",
        f"## Requests ({config.runs} runs x {config.seconds} s each; a row beside aiohttp's "
        f"ceiling: {config.pairs} runs of 1 s, each followed by one of the ceiling's with the same "
        "request, in rounds over every such row; median [min-max]; server on core 1)",
        "",
        "| endpoint | server | req/s | p50 ms | p99 ms | server CPU us/req | note |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for group in crawldash_first(requests):
        for row in group:
            out.append(requests_line(label(row), row.server.value, row.samples))
            if row.ceiling:
                out.append(requests_line(label(row), f"{CEILING}, alternate runs", row.ceiling))
    everything = ceiling_runs(requests)
    if everything:
        out.append(requests_line("fixed small body (all runs)", CEILING, everything))
    return out


def requests_line(name: str, who: str, samples: Iterable[Sample]) -> str:
    runs = list(samples)
    rps = [s.rps for s in runs]
    steal = max(s.steal for s in runs)
    errors = sum(s.non2xx for s in runs)
    notes = [
        f"steal {steal:.0%}" if steal > STEAL_MARK else "",
        f"{errors} non-2xx/3xx" if errors else "",
        "a run with no request answered" if any(s.requests == 0 for s in runs) else "",
    ]
    return (
        f"| {name} | {who} | {statistics.median(rps):,.0f} [{min(rps):,.0f}-{max(rps):,.0f}] "
        f"| {median(runs, 'p50') * 1000:.2f} | {median(runs, 'p99') * 1000:.2f} "
        f"| {median(runs, 'cpu_per_request') * 1e6:,.0f} | {', '.join(filter(None, notes))} |"
    )


def ratios_table(requests: list[Requests]) -> list[str]:
    everything = ceiling_runs(requests)
    out = [
        "",
        "## Ratios (of median req/s; against the ceiling, the median of the ratios of runs "
        "made alternately with it; p99 ratio is crawldash p99 / other p99)",
        "",
        "| endpoint | crawldash/naive | crawldash/ceiling | p99 vs ceiling "
        "| crawldash/nginx (default access log) | crawldash/nginx (access_log off) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for group in crawldash_first(requests):
        ours = group[0]
        if ours.server is not Server.CRAWLDASH:
            continue
        rps = median(ours.samples, "rps")
        others = {row.server: median(row.samples, "rps") for row in group[1:]}
        if ours.ceiling:
            pairs = list(zip(ours.samples, ours.ceiling, strict=True))
            to_ceiling = ratio_text(ours.to_ceiling()) + floor_text(ours)
            p99 = ratio_text(statistics.median(divided(a.p99, b.p99) for a, b in pairs))
        elif everything:
            to_ceiling = ratio_text(divided(rps, median(everything, "rps")))
            p99 = ratio_text(divided(median(ours.samples, "p99"), median(everything, "p99")))
        else:
            to_ceiling = p99 = "n/a"
        cells = [label(ours), ratio_text(divided(rps, others.get(Server.NAIVE, 0.0)))]
        cells += [to_ceiling, p99]
        cells += [ratio_text(divided(rps, others.get(who, 0.0))) for who in OTHERS[1:]]
        out.append(f"| {' | '.join(cells)} |")
    return out


def floor_text(row: Requests) -> str:
    """`` (target >= 0.80: yes)`` after a ratio that has a target; nothing otherwise."""
    if row.floor is None:
        return ""
    return f" (target >= {row.floor:.2f}: {met_text(row)})"


def divided(ours: float, other: float) -> float:
    """NaN where there is nothing to divide by."""
    return ours / other if other else float("nan")


def ratio_text(value: float) -> str:
    return "n/a" if value != value else f"{value:.2f}"


def value_text(measure: Measure) -> str:
    """Its values as read: ``7.30 s``, ``448 ms / 560 ms``, ``0.51 s [0.50-0.56]``."""
    values = [number(value, measure.unit, measure.digits) for value in measure.values]
    if measure.shape is Shape.SPREAD:
        low, high = (f"{v:.{measure.digits}f}" for v in measure.values[1:3])
        return f"{values[0]} [{low}-{high}]"
    text = " / ".join(values)
    if measure.shape is Shape.VERSUS:
        before, after = measure.values[:2]
        extra = "; ".join(filter(None, [f"x{ratio_text(divided(after, before))}", measure.details]))
        return f"{text} ({extra})"
    return text


def number(value: float, unit: Unit, digits: int) -> str:
    shown = f"{value:,.{digits}f}" if abs(value) >= 10_000 else f"{value:.{digits}f}"
    return shown if unit is Unit.RATIO else f"{shown} {unit.value}"


def target_text(measure: Measure) -> str:
    limits = [
        "-" if limit is None else "<= " + number(limit, measure.unit, measure.digits)
        for limit in measure.limits
    ]
    return " / ".join(limits) or "-"


def met_text(row: Measure | Requests | Versus) -> str:
    return {None: "-", True: "yes", False: "**no**"}[row.met]


def measure_line(measure: Measure) -> str:
    """A row of a two-column table: details, if any, in brackets after the value."""
    value = value_text(measure)
    if measure.details and measure.shape is not Shape.VERSUS:
        value += f" ({measure.details})"
    return f"| {measure.name} | {value} |"


def measure_table(section: Section, measures: list[Measure]) -> list[str]:
    if not measures:
        return []
    out = ["", f"## {section.value}", ""]
    if section not in (Section.TARGETS, Section.SWITCH):
        return [*out, "| measure | value |", "| --- | --- |", *map(measure_line, measures)]
    out += ["| measure | value | target | met | details |", "| --- | --- | --- | --- | --- |"]
    for m in measures:
        cells = [m.name, value_text(m), target_text(m), met_text(m), m.details]
        out.append(f"| {' | '.join(cells)} |")
    return out


def workers_table(requests: list[Requests], workers: list[Workers]) -> list[str]:
    if not workers:
        return []
    out = [
        "",
        "## --workers (status endpoint; wrk on core 0 in both cases)",
        "",
        "| workers | server cores | req/s | p99 ms |",
        "| --- | --- | --- | --- |",
    ]
    one = [r.samples for r in requests if r.server is Server.CRAWLDASH and label(r) == "status"]
    lines = [(1, "1", samples) for samples in one[:1]]
    lines += [(row.workers, row.cores, row.samples) for row in workers]
    for count, cores, samples in lines:
        p99 = median(samples, "p99") * 1000
        out.append(f"| {count} | {cores} | {median(samples, 'rps'):,.0f} | {p99:.2f} |")
    return out


def targets_summary(rows: list[Row]) -> list[str]:
    """For the console: the targets met and missed."""
    measures = [row for row in rows if isinstance(row, Measure) and row.met is not None]
    ratios = [row for row in rows if isinstance(row, Requests) and row.met is not None]
    versus = [row for row in rows if isinstance(row, Versus)]
    aimed = len(measures) + len(ratios) + len(versus)
    if not aimed:
        return ["targets: none measured"]
    missed = [
        f"  missed: {m.name}: {value_text(m)} (target {target_text(m)})"
        for m in measures
        if not m.met
    ]
    missed += [
        f"  missed: {label(r)} / {CEILING}: {ratio_text(r.to_ceiling())} (target >= {r.floor:.2f})"
        for r in ratios
        if not r.met
    ]
    missed += [
        f"  missed: {v.what}: crawldash/alt-bitnodes {ratio_text(v.ratio())} (target > 1)"
        for v in versus
        if not v.met
    ]
    return [f"targets: {aimed - len(missed)} of {aimed} met", *missed]


REPOSITORY = Path(__file__).resolve().parents[1]  # the checkout bench/ is in


def write_markdown(path: Path, config: Config, lines: list[str]) -> None:
    path.write_text("\n".join(header(config) + lines) + "\n")


def measured_code(root: Path = REPOSITORY) -> str:
    """The commit measured, and whether the tree had changes beside it: a figure is of
    that code, not of whatever the file is read beside."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=root,
                capture_output=True,
                text=True,
                check=False,
            )
        except OSError:  # no git here
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "not a git checkout"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", "crawldash", "bench")
    return f"commit {commit}" + (", with uncommitted changes" if changed else "")


def header(config: Config) -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    older = config.history_files - config.distinct
    command = "make bench-quick" if config.quick else "make bench"
    return [
        "# crawldash benchmarks",
        "",
        f"Written by `{command}` (`python -m bench.run{' --quick' if config.quick else ''}`); "
        "every number below comes from that one run. Rerun it to replace this file."
        + (" Quick numbers are noise: a check that no scenario is broken." if config.quick else ""),
        "",
        f"- machine: {os.cpu_count()} cores, {cpu}, Linux {platform.release()}",
        f"- Python {platform.python_version()}, aiohttp {aiohttp.__version__}",
        f"- code: {measured_code()}",
        f"- command: `{command}` (BENCH_RUNS={config.runs}, BENCH_SECONDS={config.seconds})",
        f"- data: {config.history_files:,} crawl files in a real bitnodes export's shape and "
        "size (15,000 nodes, ~2.7 MB; `bench/export_shape.py`: each crawl's rows in a fresh "
        "order, half of them onion at 0.0, 0.0, a real export's spread of user agents, ASNs and "
        f"hosts); the newest {config.distinct} are consecutive crawls with the demo generator's "
        f"churn between them, the {older:,} older ones hardlinks of those, in turn, under other "
        "timestamps' names (8,640 distinct ones would be ~23 GB): hardlinks share their pages "
        "in the page cache, so every older file is read from memory where a real history's "
        f"might come from disk; a separate folder holds one {config.big_nodes:,}-node crawl",
        "- crawldash is started exactly as the README's serve command starts it, with its "
        "defaults (access log off); the rows marked `access log on` add `--access-log`, its "
        "lines going to stderr as under systemd to the journal",
        "- nginx serves the snapshot file with its default access log (combined format, to a "
        "file) in the column compared with crawldash's default, and with `access_log off` "
        "beside it",
        "- load: `wrk -t1 -c32 --latency` pinned to core 0 (the naive server: 2 connections, "
        "at least 15 s and 4 of its request times, as it takes a tenth of a second or more per "
        "request); servers pinned to core 1; server CPU from /proc/<pid>/stat (the server and "
        "its child processes); runs with over 5% steal time are marked",
        "- crawldash's loader process (it decodes new snapshots) runs beside the server on core "
        "1, except where the table says it may use either core: there the server process is "
        "pinned to core 1 after start-up and its loader is left to the scheduler",
        "",
    ]
