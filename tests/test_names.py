"""Names that stay honest: every repository path the code or the docs name exists, and no
two modules of the package have names a reader could take for one another."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "crawldash"
# A path as prose names it: folders and a file name with an extension of the repository's
# own kinds of file. Globs, placeholders (<timestamp>) and absolute paths are not paths of
# the repository, and are left out by the characters allowed and by the check below.
NAMED_PATH = re.compile(
    r"(?<![\w/.<>*{$~-])((?:\.\./)*(?:[\w.-]+/)*[\w-]+\.(?:py|md|toml|yml|service|conf|env|js|css|html))\b"
)
# Files of other projects that the docs and comments talk about: bitnodes' own programs.
ELSEWHERE = {
    "crawl.py",
    "ping.py",
    "export.py",
    "seeder.py",
    "resolve.py",
    "cache_inv.py",
    "protocol.py",
    "ping.conf",
    "cache_inv.conf",
    "crawl.conf",
}


def tracked() -> list[str]:
    """Every file git tracks, and the new ones it does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [name for name in listed if (ROOT / name).exists()]


def named_paths(text: str) -> set[str]:
    return set(NAMED_PATH.findall(text))


def resolves(named: str, files: list[str], folder: str = "") -> bool:
    """Whether a tracked file is ``named``, or ends with it after a folder (``live/state.py``
    names ``crawldash/live/state.py``); a name that starts with ``../`` is taken from
    ``folder``, the naming file's own."""
    if named.startswith("../"):
        named = Path(folder, named).resolve().relative_to(ROOT).as_posix()
        return named in files
    return any(name == named or name.endswith("/" + named) for name in files)


def python_prose(path: Path) -> str:
    """A Python file's docstrings and comments: where its prose names paths."""
    text = path.read_text()
    strings = re.findall(r'"""(.*?)"""', text, re.DOTALL)
    comments = re.findall(r"#[^\n]*", text)
    return "\n".join(strings + comments)


def stale_paths() -> dict[str, set[str]]:
    files = tracked()
    found: dict[str, set[str]] = {}
    for name in files:
        path = ROOT / name
        if name.endswith(".py"):
            prose = python_prose(path)
        elif name.endswith(".md") and "vendor" not in name:
            prose = path.read_text()
        else:
            continue
        stale = {
            named
            for named in named_paths(prose)
            if named not in ELSEWHERE and not resolves(named, files, str(path.parent))
        }
        if stale:
            found[name] = stale
    return found


def test_every_path_named_in_prose_exists():
    """A docstring, a comment or a doc that names a file that moved sends a reader to
    nothing, as the loader's head start's old path did in three docstrings."""
    assert stale_paths() == {}


def test_the_check_finds_a_path_that_does_not_exist():
    files = tracked()
    prose = "the head start (``live/head_start.py``), see docs/operating.md and README.md"
    assert named_paths(prose) == {"live/head_start.py", "docs/operating.md", "README.md"}
    assert not resolves("live/head_start.py", files)
    assert resolves("live/loader/head_start.py", files)
    assert resolves("docs/operating.md", files)
    assert (
        named_paths("data/export/<magic>/<ts>.json and /run/x/status.json and *.service") == set()
    )


def confusable(a: str, b: str) -> bool:
    """Two module names that differ only by a plural (``network``/``networks``) or by a
    suffix (``presence``/``presence_codec``)."""
    short, long = sorted((a, b), key=len)
    return short != long and (long == short + "s" or long.startswith(short + "_"))


def module_names() -> set[str]:
    return {
        (path.parent.name if path.name == "__init__.py" else path.stem)
        for path in PACKAGE.rglob("*.py")
        if path.parent != PACKAGE or path.name != "__init__.py"
    }


def test_no_two_modules_have_names_that_differ_only_by_a_plural_or_a_suffix():
    names = sorted(module_names())
    pairs = [(a, b) for a, b in itertools.combinations(names, 2) if confusable(a, b)]
    assert pairs == []


def test_no_two_test_modules_have_names_that_differ_only_by_a_plural():
    """Tests may be named for a module and an aspect of it (``test_address_properties``),
    but never a plural apart (``test_network``/``test_networks``)."""
    names = sorted(path.stem for path in (ROOT / "tests").rglob("*.py"))
    plurals = [(a, b) for a, b in itertools.combinations(names, 2) if a + "s" == b]
    assert plurals == []


def folders_by_name(package: Path) -> dict[str, set[str]]:
    """Each file name of the package used in more than one folder, and those folders."""
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        if path.name != "__init__.py":
            folder = path.parent.relative_to(package).as_posix()
            found.setdefault(path.name, set()).add(f"{folder}/" if folder != "." else "")
    return {name: folders for name, folders in found.items() if len(folders) > 1}


def declared_families(text: str) -> dict[str, set[str]]:
    """The table of families in docs/contributing.md: name -> its folders."""
    table = text.split("<!-- families -->", 1)[1].split("<!-- /families -->", 1)[0]
    families = {}
    for line in table.strip().splitlines()[2:]:
        name, folders = (cell.strip() for cell in line.strip("|").split("|")[:2])
        families[name.strip("`")] = {folder.strip().strip("`") for folder in folders.split(",")}
    return families


def test_a_file_name_in_two_folders_is_a_declared_family():
    declared = declared_families((ROOT / "docs" / "contributing.md").read_text())
    assert folders_by_name(PACKAGE) == declared


def test_the_check_finds_an_undeclared_family(tmp_path: Path):
    for folder in ("a", "b", "b/c"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "same.py").write_text("")
    (tmp_path / "a" / "alone.py").write_text("")
    assert folders_by_name(tmp_path) == {"same.py": {"a/", "b/", "b/c/"}}
    text = "<!-- families -->\n| name | folders |\n| --- | --- |\n| `same.py` | `a/`, `b/` |\n"
    assert declared_families(text + "<!-- /families -->") == {"same.py": {"a/", "b/"}}


def test_the_check_finds_confusable_names():
    assert confusable("network", "networks")
    assert confusable("presence_codec", "presence")
    assert confusable("demo", "demo_data")
    assert not confusable("presence", "presence")  # one name in two folders: a pair by design
    assert not confusable("index_files", "index_paths")
    assert not confusable("queries", "v1_queries")
