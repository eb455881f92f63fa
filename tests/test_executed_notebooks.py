"""The executed pages in `notebooks/executed/` (`scripts/executed_notebooks.py`) are those of the notebooks in
`notebooks/` as they are: each page exists, its figures exist, and the code each notebook ran is today's."""

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
EXECUTED = REPO / "notebooks" / "executed"
SOURCES = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
_spec = importlib.util.spec_from_file_location("executed_notebooks", REPO / "scripts" / "executed_notebooks.py")
pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pages)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_executed_page_is_current(source):
    page = EXECUTED / f"{source.stem}.md"
    assert page.exists(), f"{page} missing: run python scripts/executed_notebooks.py"
    ran = json.loads((EXECUTED / pages.HASHES).read_text())
    assert ran.get(source.name) == pages.code_hash(nbformat.read(source, as_version=4)), (
        f"{page.name} is stale: notebooks/{source.name}'s code changed since it ran; "
        "run python scripts/executed_notebooks.py")
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page.read_text(encoding="utf-8")):
        assert (EXECUTED / image).is_file(), f"{page.name} shows {image}, which is missing"


def test_staleness_is_caught():
    """The comparison above can fail: one changed character in a code cell gives another hash."""
    nb = nbformat.read(SOURCES[1], as_version=4)
    before = pages.code_hash(nb)
    next(c for c in nb.cells if c.cell_type == "code").source += " "
    assert pages.code_hash(nb) != before


def test_the_pages_say_which_run_they_show():
    """RUN.json: a cpu-mini run, its versions and seconds, and how its miniature's figures compared with the
    reference of the processor it ran on (`harness.miniature.reference.verdict`)."""
    run = json.loads((EXECUTED / pages.RUN).read_text())
    assert run["profile"] == "cpu-mini" and run["versions"]["transformers"] and set(run["seconds"]) == {
        s.stem for s in SOURCES}
    assert re.fullmatch(r"matches make_run_reference(\.[a-z0-9-]+)?\.json to the digit \(\d+ per-seed figures\)",
                        run["reference_check"]), run["reference_check"]
