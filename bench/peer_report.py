"""The peer's table of the report: crawldash and alt-bitnodes on what both answer."""

from __future__ import annotations

import statistics

from bench.rows import Section, Versus


def table(rows: list[Versus], measures: list[str]) -> list[str]:
    """crawldash and the peer on what both answer, then the peer's other measures (their
    lines of a two-column table)."""
    if not rows and not measures:
        return []
    out = ["", f"## {Section.PEER.value}", ""]
    if rows:
        out += [
            "| what | crawldash | req/s | p99 ms | alt-bitnodes | req/s | p99 ms "
            "| crawldash/alt-bitnodes | ahead |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    for row in rows:
        cells = [row.what]
        for path, samples in ((row.ours, row.crawldash), (row.theirs, row.peer)):
            rps = [s.rps for s in samples]
            p99 = statistics.median(s.p99 for s in samples) * 1000
            cells += [
                f"`{path}`",
                f"{statistics.median(rps):,.0f} [{min(rps):,.0f}-{max(rps):,.0f}]",
            ]
            cells.append(f"{p99:.2f}")
        cells += [_ratio(row.ratio()), "yes" if row.met else "**no**"]
        out.append(f"| {' | '.join(cells)} |")
    if measures:
        out += ["", "| measure | value |", "| --- | --- |", *measures]
    return out


def _ratio(value: float) -> str:
    return "n/a" if value != value else f"{value:.2f}"
