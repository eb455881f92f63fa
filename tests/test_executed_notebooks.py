"""The executed pages in `notebooks/executed/` (`scripts/executed_notebooks.py`) are those of the notebooks in
`notebooks/` as they are: each page exists, its figures exist, and the code each notebook ran is today's."""

import importlib.util
import io
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


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_cell_that_draws_a_figure_shows_it_on_its_page(source):
    """Each code cell of the notebook that draws a figure (`figure_cells`: a `viz` drawing function, or
    pyplot's `subplots`/`figure`/`show`) has an image under its code on the executed page."""
    nb = nbformat.read(source, as_version=4)
    page = EXECUTED / f"{source.stem}.md"
    shown = pages.page_images(page.read_text(encoding="utf-8"), nb, source.stem)
    cells = pages.figure_cells(nb, source.name)
    absent = [pages.cell_name(nb, i) for i in cells if shown[i] is None]
    blank = [pages.cell_name(nb, i) for i in cells if shown[i] == []]
    assert not absent and not blank, "; ".join(
        ([f"{page.name} shows no figure under notebooks/{source.name} {', '.join(blank)}"] if blank else [])
        + ([f"{page.name} lacks the code of {', '.join(absent)} (stale)"] if absent else [])
        + [f"{len(cells) - len(blank) - len(absent)} of {len(cells)} figures shown; "
           "run python scripts/executed_notebooks.py"])


def test_every_viz_function_is_known_to_draw_a_figure_or_not():
    """A drawing function added to `gui_r1_lite.viz` must be placed, so the rule above sees its cells."""
    from gui_r1_lite import viz

    public = {n for n in viz.__all__ if not n.isupper()}
    assert public == pages.VIZ_FIGURES | pages.VIZ_OTHERS and not pages.VIZ_FIGURES & pages.VIZ_OTHERS, (
        sorted(public ^ (pages.VIZ_FIGURES | pages.VIZ_OTHERS)))


def _notebook(*sources: str, parameters: bool = False) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# a lesson\n![a picture](picture.png)")]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    if parameters:
        p = nbformat.v4.new_code_cell('profile = "cpu-mini"')
        p.metadata["tags"] = ["injected-parameters"]
        nb.cells.insert(2, p)
    return nb


def test_the_figure_rule_finds_each_way_a_cell_draws():
    nb = _notebook(
        "from gui_r1_lite import viz\nimport matplotlib.pyplot as plt",    # 1: imports only
        "fig = viz.gallery(records, samples)",                             # 2
        "if study:\n    fig, ax = plt.subplots()",                         # 3: in a branch
        "from gui_r1_lite.viz import grid as g, draw_step\nim = draw_step(x)",  # 4: a PIL image, no figure
        "fig = g([im])",                                                   # 5: imported under another name
        "%matplotlib inline\nviz.browse(records, samples)",                # 6: a widget
        "from matplotlib import pyplot\npyplot.show()",                    # 7
        "live = viz.LiveCurves()\ntrain(callbacks=[live.callback()])",     # 8
        "print(viz.numeric_keys(log))",                                    # 9
    )
    assert pages.figure_cells(nb) == [2, 3, 5, 7, 8]


def test_a_page_s_images_are_told_apart_by_cell():
    first = "from gui_r1_lite import viz\nfig = viz.gallery(a, b)"
    nb = _notebook(first, "x = 1", "fig = viz.gallery(c, d)", "x = 1", parameters=True)
    page = (f"# a lesson\n![a picture](picture.png)\n\n```python\n{first}\n```\n\n"
            "```python\n# Parameters\nprofile = \"cpu-mini\"\n```\n\n"
            "```python\nx = 1\n```\n\n    \n![png](n_files/output_3_0.png)\n    \n\n"
            "```python\nfig = viz.gallery(c, d)\n```\n\n```python\nx = 1\n```\n")
    shown = pages.page_images(page, nb, "n")
    # the figure under the second cell is that cell's, not the gallery's above it; the markdown's picture is no output
    assert shown == {1: [], 3: ["n_files/output_3_0.png"], 4: [], 5: []}
    assert pages.page_images(page.replace("gallery(c, d)", "gallery(e)"), nb, "n")[4] is None  # not on the page
    assert [pages.cell_name(nb, i) for i in pages.figure_cells(nb)] == ["cell 1 (`from gui_r1_lite import viz`)",
                                                                         "cell 4 (`fig = viz.gallery(c, d)`)"]


def test_a_notebook_whose_figure_cell_shows_nothing_is_refused(tmp_path):
    nb = _notebook("from gui_r1_lite import viz", "fig = viz.stage_counts(stages)")
    for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = n + 1
    nbformat.write(nb, tmp_path / "01_x.ipynb")
    with pytest.raises(SystemExit, match=r"cell 2 \(`fig = viz.stage_counts\(stages\)`\) drew a figure but shows none"):
        pages.export(tmp_path / "01_x.ipynb", tmp_path, tmp_path)
    nb.cells[2].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=",
                                                                         "text/plain": "<Figure>"})]
    assert pages.missing_figures(nb) == []


def test_pages_figures_are_palette_pngs_that_look_the_same():
    from PIL import Image, ImageChops, ImageDraw

    image = Image.new("RGB", (300, 200), "white")
    draw = ImageDraw.Draw(image)
    for i in range(40):  # a chart-like picture: lines, boxes, text in a few colours
        draw.line([(0, i * 5), (300, 200 - i * 5)], fill=(i * 6, 120, 255 - i * 6), width=2)
    draw.rectangle([40, 40, 120, 90], outline=(0, 114, 178), width=3)
    draw.text((150, 20), "click (30, 66)", fill="black")
    raw = io.BytesIO()
    image.convert("RGBA").save(raw, "PNG")
    small = pages.compact_png(raw.getvalue())
    assert len(small) < 0.7 * len(raw.getvalue())
    shown = Image.open(io.BytesIO(small))
    assert shown.mode == "P" and shown.size == image.size
    diff = ImageChops.difference(shown.convert("RGB"), image)
    assert max(hi for _, hi in diff.getextrema()) <= 48  # no colour moves far
    # a picture a palette would not make smaller (already one) is kept as it was
    assert pages.compact_png(small) == small


def test_committed_page_figures_are_compacted():
    pngs = sorted(EXECUTED.glob("*_files/*.png"))
    assert pngs
    loose = [p.name for p in pngs if pages.compact_png(p.read_bytes()) != p.read_bytes()]
    assert not loose, f"{loose}: not compacted; run python scripts/executed_notebooks.py --compact"
