"""No tracked file refers to a place outside the repository: a clone has only what git holds, so a path to
the folder beside it, to one machine's working folder or to someone's home, or a relative link that climbs
above the repository's root, points at nothing for everyone else."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: What only exists outside a clone, each with what it is (the patterns are written so that they do not match
#: their own text).
OUTSIDE: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"(?<![\w.])\.\./+shared\b"), "the folder beside the repository"),
    (re.compile(r"(?<![\w.~-])/(?:work)/"), "a machine's working folder"),
    (re.compile(r"(?<![\w.~-])/(?:home|Users)/[\w.-]+/"), "someone's home folder"),
    (re.compile(r"(?<![\w.~-])/(?:root)/"), "root's home folder"),
    (re.compile(r"\b[A-Z]:\\\\?Users\\"), "someone's home folder (Windows)"),
)
#: Documents kept beside the repository, never in it: a mention by name sends the reader nowhere.
OUTSIDE_DOCUMENTS: tuple[str, ...] = ("DESIGN" ".md", "gui_r1_semantics" ".md")
#: A relative path: one or more `../` and what follows.
RELATIVE = re.compile(r"(?<![\w.~/-])((?:\.\./)+)([\w.-]+)?")


def tracked_text_files(repo: Path = REPO) -> list[Path]:
    """Every file git tracks that is text (no NUL byte in its first 8 KB)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout
    files = []
    for name in names.decode().split("\0"):
        path = repo / name
        if name and path.is_file() and b"\0" not in path.read_bytes()[:8192]:
            files.append(path)
    return files


def outside_references(path: Path, repo: Path = REPO, tracked_names: set[str] | None = None) -> list[str]:
    """`file:line: what` for each reference in `path` to a place outside `repo`."""
    tracked_names = tracked_names if tracked_names is not None else set()
    rel = path.relative_to(repo)
    depth = len(rel.parts) - 1  # how many `../` the file's own folder can climb and stay inside
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        where = f"{rel}:{number}"
        found += [f"{where}: {what}: {line.strip()[:100]}" for pattern, what in OUTSIDE if pattern.search(line)]
        found += [f"{where}: {name}, which lies outside the repository: {line.strip()[:100]}"
                  for name in OUTSIDE_DOCUMENTS if name in line and name not in tracked_names]
        for match in RELATIVE.finditer(line):
            if match.group(1).count("../") > depth:
                found.append(f"{where}: {match.group(0)} climbs above the repository's root: {line.strip()[:100]}")
    return found


def test_no_tracked_file_refers_outside_the_repository():
    files = tracked_text_files()
    assert len(files) > 100  # git answered: the check ran on the repository, not on nothing
    names = {p.name for p in files}
    found = [ref for path in files for ref in outside_references(path, tracked_names=names)]
    assert not found, "references to places outside the repository:\n" + "\n".join(found)


@pytest.mark.parametrize("text, outside", [
    ("see ../" + "shared/spec/x.md, section 2", True),
    ("the spec in /" + "work/shared/spec", True),
    ("cache in /" + "home/alice/.cache", True),
    ("written by /" + "root/build.sh", True),
    ("as DESIGN" + ".md says", True),
    ("[docs](../docs/pipeline.md) from a notebook", False),   # a link inside the repository
    ("output_dir = \"../runs/notebooks/artifacts/01_data_curation\"", False),
    ("python -m capture preview x.parquet --out /tmp/preview", False),  # a scratch folder, not a reference
    ("executable_path=\"/usr/bin/chromium\"", False),
])
def test_each_kind_of_outside_reference_is_caught(tmp_path: Path, text: str, outside: bool):
    page = tmp_path / "notebooks" / "page.md"
    page.parent.mkdir()
    page.write_text(f"first line\n{text}\n")
    found = outside_references(page, repo=tmp_path)
    assert bool(found) == outside, found
    if outside:
        assert found[0].startswith("notebooks/page.md:2: ")


def test_a_relative_path_is_judged_from_its_own_folder(tmp_path: Path):
    deep = tmp_path / "a" / "b" / "page.md"
    deep.parent.mkdir(parents=True)
    up = "../"
    deep.write_text(f"[up two]({up * 2}README.md) and [up three]({up * 3}elsewhere.md)\n")
    found = outside_references(deep, repo=tmp_path)
    assert len(found) == 1 and f"{up * 3}elsewhere.md climbs above" in found[0]
