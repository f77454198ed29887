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
