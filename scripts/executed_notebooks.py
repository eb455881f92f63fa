"""Refresh the executed notebooks committed in `notebooks/executed/`: a `cpu-mini` run of the main job
(or a finished run folder), each notebook copied with its outputs and figures, so that a reader on
GitHub sees every number and picture without running anything.

    python scripts/executed_notebooks.py                  # runs `make run`'s pipeline into runs/executed
    python scripts/executed_notebooks.py --run runs/X     # copies from a finished cpu-mini run instead

What is dropped on the way, so that a copy is small and its diff shows only what changed: widget state
(the prediction browser needs a live kernel anyway; its static text stays), papermill's timings, and the
run folder's absolute path (written as `runs/<run>`). `tests/test_executed_notebooks.py` fails when a
copy's code differs from its notebook in `notebooks/` (a stale copy): run this again after editing one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "notebooks"
EXECUTED = SOURCES / "executed"
#: Output kinds a static page cannot show (live widgets); their text/plain stand-in is kept.
_LIVE = ("application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json")


def clean(nb: nbformat.NotebookNode, run_dir: Path) -> nbformat.NotebookNode:
    """`nb` without widget state, timings and the run folder's absolute path."""
    nb.metadata.pop("widgets", None)
    nb.metadata.get("papermill", {}).pop("start_time", None)
    nb.metadata.get("papermill", {}).pop("end_time", None)
    nb.metadata.get("papermill", {}).pop("duration", None)
    nb.metadata.get("papermill", {}).pop("input_path", None)
    nb.metadata.get("papermill", {}).pop("output_path", None)
    here, repo = str(run_dir.resolve()), str(REPO)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for key in ("start_time", "end_time", "duration", "exception", "status"):
            cell.metadata.get("papermill", {}).pop(key, None)
        if cell.cell_type == "code" and "injected-parameters" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace(here, f"runs/{run_dir.name}").replace(repo + "/", "")
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            for kind in _LIVE:
                data.pop(kind, None)
            if "text" in out:
                out["text"] = out["text"].replace(here, f"runs/{run_dir.name}").replace(repo + "/", "")
            if isinstance(data.get("text/plain"), str):
                data["text/plain"] = data["text/plain"].replace(here, f"runs/{run_dir.name}").replace(repo + "/", "")
    return nb


def copy_run(run_dir: Path, dest: Path = EXECUTED) -> list[Path]:
    """Copy every executed notebook of `run_dir/notebooks` into `dest` (cleaned); returns the copies."""
    executed = sorted((run_dir / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    sources = sorted(SOURCES.glob("[0-9][0-9]_*.ipynb"))
    missing = sorted({p.name for p in sources} - {p.name for p in executed})
    if missing:
        raise SystemExit(f"{run_dir}/notebooks lacks {missing}: not a finished run of every notebook")
    dest.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in executed:
        nb = clean(nbformat.read(path, as_version=4), run_dir)
        nbformat.write(nb, dest / path.name)
        copies.append(dest / path.name)
    return copies


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, help="a finished cpu-mini run folder (default: run the pipeline now)")
    args = ap.parse_args(argv)
    run_dir = args.run
    if run_dir is None:
        from gui_r1_lite.pipeline import run_pipeline

        run_dir = REPO / "runs" / "executed"
        run_pipeline("cpu-mini", out=run_dir)
    for copy in copy_run(run_dir):
        print(f"{copy.relative_to(REPO)}  {copy.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
