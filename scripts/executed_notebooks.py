"""Refresh the executed notebooks in `notebooks/executed/`: a `cpu-mini` run of the main job (or a finished
run folder), each notebook written as Markdown with its outputs, and its figures as PNG files beside it, so
that a reader on GitHub sees every number and picture without running anything. Notebooks themselves are
committed without outputs; these pages are the run's record.

    python scripts/executed_notebooks.py                  # runs `make run`'s pipeline into runs/executed
    python scripts/executed_notebooks.py --run runs/X     # converts a finished cpu-mini run instead
    python scripts/executed_notebooks.py --compact        # re-encodes the pages' figures (compact_png) only

`SOURCES.json` beside the pages holds a hash of each notebook's code cells as it ran;
`tests/test_executed_notebooks.py` fails when a notebook in `notebooks/` has changed since (a stale page), and
when a cell that draws a figure (`figure_cells`) shows none on its page. A notebook whose such cell has no
image output is refused here.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import re
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


#: `gui_r1_lite.viz`'s functions that draw a matplotlib figure (or, given `ax`, into one): a cell that calls one
#: shows a picture. `VIZ_OTHERS` are the rest (a PIL image, a widget, numbers); every name `viz` exports is in one.
VIZ_FIGURES = frozenset({"LiveCurves", "before_after", "episode_strip", "gallery", "grid", "miniature_bars",
                         "prediction_card", "reward_map", "stage_counts", "training_curves"})
VIZ_OTHERS = frozenset({"PredictionBrowser", "add_legend", "answer_repeats", "blind_score", "browse", "card_title",
                        "describe", "draw_step", "legend_handles", "live_keys", "numeric_keys", "prediction_image",
                        "read_log", "readable_points", "record_task", "run_method", "save_figure_atomic",
                        "series_keys", "shown_point", "step_records", "thinking_text"})
#: pyplot's calls that make or show a figure.
PYPLOT_FIGURES = frozenset({"figure", "subplots", "subplot_mosaic", "subplot", "show"})


def code_cells(nb: nbformat.NotebookNode) -> list[str]:
    """The code a notebook runs, without the cell papermill injects for the parameters."""
    return [c.source for c in nb.cells
            if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]


def code_hash(nb: nbformat.NotebookNode) -> str:
    return hashlib.sha256(json.dumps(code_cells(nb)).encode()).hexdigest()


def _is_parameters(cell) -> bool:
    return "injected-parameters" in cell.metadata.get("tags", [])


def _tree(source: str, where: str) -> ast.Module:
    """A cell's code, its IPython magics and shell lines left out."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        return ast.parse(code)
    except SyntaxError as exc:
        raise SystemExit(f"{where}: not Python ({exc.msg}, line {exc.lineno}); cannot tell whether it draws") from None


def figure_cells(nb: nbformat.NotebookNode, name: str = "notebook") -> list[int]:
    """The code cells (indices into `nb.cells`) that draw a figure: that call one of `VIZ_FIGURES`
    (`viz.gallery(...)`, or the function imported from `gui_r1_lite.viz`) or pyplot's `PYPLOT_FIGURES`
    (`plt.subplots(...)`), anywhere in the cell, a branch included, with the names the notebook has
    imported them under by then. The main job runs every such branch on `cpu-mini`."""
    viz, plt, functions = set(), set(), set()
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or _is_parameters(cell):
            continue
        nodes = list(ast.walk(_tree(cell.source, f"{name} cell {i}")))
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "matplotlib.pyplot" and a.asname:
                        plt.add(a.asname)
                    elif a.name == "gui_r1_lite.viz" and a.asname:
                        viz.add(a.asname)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if (node.module, a.name) in (("matplotlib", "pyplot"), ("gui_r1_lite", "viz")):
                        (plt if a.name == "pyplot" else viz).add(a.asname or a.name)
                    elif node.module.startswith("gui_r1_lite.viz") and a.name in VIZ_FIGURES:
                        functions.add(a.asname or a.name)

        def draws(call: ast.Call) -> bool:
            f = call.func
            if isinstance(f, ast.Name):
                return f.id in functions
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                return ((f.value.id in viz and f.attr in VIZ_FIGURES)
                        or (f.value.id in plt and f.attr in PYPLOT_FIGURES))
            return False

        if any(isinstance(node, ast.Call) and draws(node) for node in nodes):
            cells.append(i)
    return cells


def cell_name(nb: nbformat.NotebookNode, i: int) -> str:
    """`cell 12 (`fig = viz.grid(...)`)`: a cell's index in the notebook and its first line of code."""
    first = next((line for line in nb.cells[i].source.splitlines() if line.strip() and not line.startswith("#")), "")
    return f"cell {i} (`{first.strip()[:70]}`)"


def missing_figures(nb: nbformat.NotebookNode, name: str = "notebook") -> list[str]:
    """The cells of an executed notebook that draw a figure (`figure_cells`) but have no image among their
    outputs, each named (`cell_name`)."""
    return [cell_name(nb, i) for i in figure_cells(nb, name)
            if not any(k.startswith("image/") for o in nb.cells[i].get("outputs", []) for k in o.get("data", {}))]


def page_images(page: str, nb: nbformat.NotebookNode, stem: str) -> dict[int, list[str] | None]:
    """For each code cell of `nb` (a notebook in `notebooks/`, by its index in `nb.cells`), the figures its
    Markdown page shows under the cell's code: the `<stem>_files/...` images between that code and the next
    cell's; None for a cell whose code the page does not hold (a stale page)."""
    out: dict[int, list[str] | None] = {}
    pos = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or _is_parameters(cell):
            continue
        fence = f"```python\n{cell.source}\n```\n"
        at = page.find(fence, pos)
        if at < 0:
            out[i] = None
            continue
        start = at + len(fence)
        end = page.find("\n```python\n", start)
        shown = page[start:end if end >= 0 else None]  # the cell's outputs
        out[i] = re.findall(rf"!\[[^\]]*\]\(({re.escape(stem)}_files/[^)\s]+)\)", shown)
        pos = start
    return out


def compact_png(data: bytes) -> bytes:
    """`data` (a PNG) as a 256-colour palette PNG when that is smaller, else `data` unchanged. The pages' figures
    are flat-coloured charts and screenshots: a palette leaves them looking the same at a third of the bytes,
    which keeps the tracked tree small enough to travel with the GPU check's wheels
    (`scripts/fetch_gpu_wheels.sh`: 64 MiB in all)."""
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    if image.mode not in ("RGB", "RGBA"):
        return data
    if image.mode == "RGBA" and image.getchannel("A").getextrema() == (255, 255):
        image = image.convert("RGB")
    out = io.BytesIO()
    image.quantize(256, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
    return out.getvalue() if out.tell() < len(data) else data


def export(path: Path, run_dir: Path, dest: Path) -> Path:
    """`path` (an executed notebook) as `dest/<stem>.md` with its figures in `dest/<stem>_files/`;
    refuses a notebook with an unexecuted cell or an error output. The run folder's absolute path is
    written as `runs/<run>`."""
    from nbconvert import MarkdownExporter

    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        if cell.execution_count is None or any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            raise SystemExit(f"{path}: code cell {i} did not run cleanly; not a finished run")
    missing = missing_figures(nb, str(path))
    if missing:
        raise SystemExit(f"{path}: {', '.join(missing)} drew a figure but shows none; a page would lack it")
    body, resources = MarkdownExporter().from_notebook_node(nb, resources={"output_files_dir": f"{path.stem}_files"})
    body = body.replace(str(run_dir.resolve()), f"runs/{run_dir.name}").replace(str(REPO) + "/", "")
    shutil.rmtree(dest / f"{path.stem}_files", ignore_errors=True)
    for name, data in resources.get("outputs", {}).items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(compact_png(data) if name.endswith(".png") else data)
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
    ap.add_argument("--compact", action="store_true",
                    help="only re-encode the committed pages' figures as palette PNGs (compact_png), in place")
    args = ap.parse_args(argv)
    if args.run is not None and not (args.run / "summary.json").is_file():
        ap.error(f"--run {args.run}: {'no summary.json there' if args.run.is_dir() else 'no such folder'}; pass a "
                 "finished cpu-mini run folder (its summary.json and notebooks/)")
    if args.compact:
        for png in sorted(EXECUTED.glob("*_files/*.png")):
            png.write_bytes(compact_png(png.read_bytes()))
        return 0
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
