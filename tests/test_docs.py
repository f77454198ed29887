"""The README and docs/ keep up with the code: the option tables as the declarations print
them, every module named in architecture.md with its job, the import contracts described,
and every relative link leading to a file (and heading) that exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from crawldash import cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "crawldash"
DOCS = ROOT / "docs"
README = ROOT / "README.md"
ARCHITECTURE = DOCS / "architecture.md"
OPERATING = DOCS / "operating.md"

OPTIONS_BLOCK = re.compile(r"<!-- options (\S+) -->\n(.*?)<!-- /options -->", re.DOTALL)
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def modules() -> set[str]:
    """Every module of the package by its path inside it, ``__init__.py`` aside."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section of a Markdown text, up to the next ``## ``."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert found is not None, f"no '## {title}' section"
    return found.group(1)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file (code blocks aside)."""
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def relative_links(path: Path) -> list[str]:
    """The targets of a Markdown file's links and images that are not URLs or mail."""
    text = CODE_SPAN.sub("", FENCE.sub("", path.read_text()))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_option_tables_match_the_declarations(command: str, capsys):
    """docs/operating.md shows each command's table as `crawldash options COMMAND` prints it."""
    assert cli.main(["options", command]) == 0
    printed = capsys.readouterr().out
    tables = dict(OPTIONS_BLOCK.findall(OPERATING.read_text()))
    assert command in tables, f"docs/operating.md has no options table for {command}"
    assert tables[command] == printed, f"regenerate it: crawldash options {command}"


def test_option_tables_live_only_in_operating_md():
    """A copy elsewhere would not be checked, and would drift."""
    for path in markdown_files():
        if path != OPERATING:
            assert not OPTIONS_BLOCK.search(path.read_text()), path.relative_to(ROOT)


def test_architecture_names_every_module_with_its_job():
    listed = re.findall(
        r"^- `([^`]+\.py)`: \S", section(ARCHITECTURE.read_text(), "Modules"), re.MULTILINE
    )
    assert len(listed) == len(set(listed)), "a module is listed twice"
    missing = modules() - set(listed)
    gone = set(listed) - modules()
    assert not missing, f"docs/architecture.md does not list {sorted(missing)}"
    assert not gone, f"docs/architecture.md lists modules that do not exist: {sorted(gone)}"


def test_architecture_names_no_module_path_that_does_not_exist():
    named = set(re.findall(r"`([\w./]+\.py)`", ARCHITECTURE.read_text()))
    gone = {p for p in named if not (PACKAGE / p).is_file() and not (ROOT / p).is_file()}
    assert not gone, f"docs/architecture.md names files that do not exist: {sorted(gone)}"


def test_architecture_describes_every_import_contract():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    text = " ".join(ARCHITECTURE.read_text().split())
    for contract in contracts:
        assert " ".join(contract["name"].split()) in text, contract["name"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_lead_to_files_that_exist(path: Path):
    """A link to a heading of a Markdown file must find that heading too."""

    def leads_somewhere(target: str) -> bool:
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            return False
        return not anchor or resolved.suffix != ".md" or anchor in anchors(resolved)

    broken = [target for target in relative_links(path) if not leads_somewhere(target)]
    assert not broken, f"{path.relative_to(ROOT)}: broken links {broken}"


def test_the_readme_is_the_short_layer():
    text = README.read_text()
    assert len(text.splitlines()) <= 250, "the reference belongs in docs/"
    for command in ("make test", "make test-quick", "make lint"):
        assert f"`{command}`" in text or f"\n{command} " in text, command


# A measured figure, as a run prints it: a number with decimals and a unit of time, size or
# share, or a ratio (x8.75, 1.45x). Settings, bounds and defaults are whole numbers.
FIGURE = re.compile(
    r"(?<![\w.])(\d+\.\d+ ?(?:ms|µs|s|MB|KB|GB|MiB|KiB|GiB|%|req/s)(?![\w/])"
    r"|x\d+\.\d+\b|\b\d+\.\d+x\b)"
)
# Numbers with decimals that are definitions, not measurements: each where it stands.
NOT_MEASURED = {
    ("archive.md", "2.8 MB"),  # the size of a bitnodes export: the input, as bitnodes writes it
    ("api.md", "0.001 ms"),  # the precision bitnodes.io rounds propagation statistics to
    ("architecture.md", "0.1 ms"),  # the shortest scheduler slice Linux grants
    ("operating.md", "1.25 GB"),  # the most the bridge's block file can hold, by its bounds
    # the benchmark's seeded input against bitnodes' own test export: shapes of fixed data
    *(("benchmarks.md", share) for share in ("51.5%", "49.6%", "52.1%", "32.6%", "89.7%")),
    ("benchmarks.md", "90.8%"),
    ("benchmarks.md", "2.7 MB"),  # the size of the benchmark's crawls, as bitnodes' are
    ("benchmarks.md", "2.7 GB"),  # the size of the benchmark's history of distinct crawls
    ("benchmarks.md", "10.8 KB"),  # the body of the benchmark's seeded latency answer
}


def quoted_figures(path: Path) -> list[str]:
    """The measured figures a Markdown file quotes, outside its code blocks."""
    prose = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return [f for f in FIGURE.findall(prose) if (path.name, f) not in NOT_MEASURED]


@pytest.mark.parametrize("path", [ROOT / "README.md", *sorted(DOCS.glob("*.md"))], ids=str)
def test_the_readme_and_the_docs_quote_no_measured_figure(path: Path):
    """Figures measured by a run live in BENCHMARKS.md, which ``make bench`` rewrites, and
    in commit bodies: a figure quoted elsewhere goes stale at the next run."""
    assert quoted_figures(path) == []


def test_the_check_finds_a_quoted_figure(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "served 0.32 s after (x8.75; 1.45x), 16.80 ms, 2.27% of it; 30 s by default\n"
        "```\nx1.50 in a block\n```\n"
    )
    assert quoted_figures(page) == ["0.32 s", "x8.75", "1.45x", "16.80 ms", "2.27%"]
