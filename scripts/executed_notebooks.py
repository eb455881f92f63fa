"""Refresh the executed notebooks in `notebooks/executed/`: a `cpu-mini` run of the main job (or a finished
run folder), each notebook written as Markdown with its outputs, and its figures as PNG files beside it, so
that a reader on GitHub sees every number and picture without running anything. Notebooks themselves are
committed without outputs; these pages are the run's record.

    python scripts/executed_notebooks.py                  # runs `make run`'s pipeline into runs/executed
    python scripts/executed_notebooks.py --run runs/X     # converts a finished cpu-mini run instead

`SOURCES.json` beside the pages holds a hash of each notebook's code cells as it ran;
`tests/test_executed_notebooks.py` fails when a notebook in `notebooks/` has changed since (a stale page).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "notebooks"
EXECUTED = SOURCES / "executed"
HASHES = "SOURCES.json"
#: Which run the pages show: its versions, seconds per notebook, the check of its miniature's figures against
#: the reference of its processor, and the processor when this script ran the pipeline itself.
RUN = "RUN.json"


def code_cells(nb: nbformat.NotebookNode) -> list[str]:
    """The code a notebook runs, without the cell papermill injects for the parameters."""
    return [c.source for c in nb.cells
            if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]


def code_hash(nb: nbformat.NotebookNode) -> str:
    return hashlib.sha256(json.dumps(code_cells(nb)).encode()).hexdigest()


def export(path: Path, run_dir: Path, dest: Path) -> Path:
    """`path` (an executed notebook) as `dest/<stem>.md` with its figures in `dest/<stem>_files/`;
    refuses a notebook with an unexecuted cell or an error output. The run folder's absolute path is
    written as `runs/<run>`."""
    from nbconvert import MarkdownExporter

    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        if cell.execution_count is None or any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            raise SystemExit(f"{path}: code cell {i} did not run cleanly; not a finished run")
    body, resources = MarkdownExporter().from_notebook_node(nb, resources={"output_files_dir": f"{path.stem}_files"})
    body = body.replace(str(run_dir.resolve()), f"runs/{run_dir.name}").replace(str(REPO) + "/", "")
    shutil.rmtree(dest / f"{path.stem}_files", ignore_errors=True)
    for name, data in resources.get("outputs", {}).items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    page = dest / f"{path.stem}.md"
    page.write_text(body, encoding="utf-8")
    return page


def write_run(run_dir: Path, dest: Path = EXECUTED, processor: str | None = None) -> list[Path]:
    """Every executed notebook of `run_dir/notebooks` as a page in `dest`, `dest/SOURCES.json`, and
    `dest/RUN.json` from the run's `summary.json` (`processor`, when given, added)."""
    executed = sorted((run_dir / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    missing = sorted({p.name for p in SOURCES.glob("[0-9][0-9]_*.ipynb")} - {p.name for p in executed})
    if missing:
        raise SystemExit(f"{run_dir}/notebooks lacks {missing}: not a finished run of every notebook")
    dest.mkdir(parents=True, exist_ok=True)
    pages = [export(path, run_dir, dest) for path in executed]
    hashes = {p.name: code_hash(nbformat.read(p, as_version=4)) for p in executed}
    (dest / HASHES).write_text(json.dumps(hashes, indent=1) + "\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    profile = summary.get("profile")
    run = {"profile": profile.get("name") if isinstance(profile, dict) else profile, "processor": processor,
           **{k: summary.get(k) for k in ("reference_check", "versions", "seconds", "total_seconds")}}
    (dest / RUN).write_text(json.dumps(run, indent=1) + "\n")
    return pages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, help="a finished cpu-mini run folder (default: run the pipeline now)")
    args = ap.parse_args(argv)
    run_dir, processor = args.run, None
    if run_dir is None:
        from harness.miniature.reference import machine
        from harness.pipeline import run_pipeline

        run_dir = REPO / "runs" / "executed"
        run_pipeline("cpu-mini", out=run_dir)
        processor = machine()["cpu"]
    for page in write_run(run_dir, processor=processor):
        print(page.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
