"""The executed notebooks in `notebooks/executed/` (`scripts/executed_notebooks.py`) are those of
`notebooks/`, run: the same code cells in the same order, every one executed, none with an error."""

from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]

SOURCES = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _code(nb) -> list[str]:
    return [c.source for c in nb.cells
            if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_executed_copy_is_current(source):
    copy = REPO / "notebooks" / "executed" / source.name
    assert copy.exists(), f"{copy} missing: run python scripts/executed_notebooks.py"
    executed, current = nbformat.read(copy, as_version=4), nbformat.read(source, as_version=4)
    assert _code(executed) == _code(current), (
        f"{copy.name} is stale: its code differs from notebooks/{source.name}; "
        "run python scripts/executed_notebooks.py")
    for i, cell in enumerate(c for c in executed.cells if c.cell_type == "code"):
        assert cell.execution_count is not None, f"{copy.name}: code cell {i} was not executed"
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{copy.name}: code cell {i} ended in {errors[0].get('ename')}"


def test_staleness_is_caught(tmp_path):
    """The comparison above can fail: one changed character in a code cell makes the copy stale."""
    nb = nbformat.read(SOURCES[1], as_version=4)
    before = _code(nb)
    next(c for c in nb.cells if c.cell_type == "code").source += " "
    assert _code(nb) != before
