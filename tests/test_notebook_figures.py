"""Every figure a notebook cell draws is shown, in a real kernel under papermill (the inline backend,
as in JupyterLab and Colab): `viz.readable` once put back every rc setting when it ended, interactive
mode included, which the inline backend turns on when a kernel's first figure loads it; a first figure
drawn inside it left every later figure of the notebook undrawn."""

from __future__ import annotations

import json

import matplotlib
import matplotlib.pyplot as plt
import nbformat

from gui_r1_lite import viz
from gui_r1_lite.viz.style import TEXT_SIZE_KEYS, readable
from harness import pipeline

LOG = [{"step": s, "reward": 0.1 * s, "reward_std": 0.2, "frac_reward_zero_std": 0.5,
        "completions/mean_length": 20.0 + s} for s in range(1, 5)]
LIVE = """\
from pathlib import Path

live = viz.LiveCurves()
for name, key in (("sft_grpo_train", "reward"), ("sft_train", "loss")):
    Path(name).mkdir(exist_ok=True)
    for s in range(1, 4):
        with open(Path(name) / "metrics.jsonl", "a") as f:
            f.write(json.dumps({"step": s, key: 1.0 / s}) + "\\n")
        live.draw(Path(name) / "metrics.jsonl")"""
# (cell source, images it must show)
CELLS = [
    ("import json\nimport matplotlib.pyplot as plt\nfrom PIL import Image\nfrom gui_r1_lite import viz", 0),
    # the kernel's first figure, drawn inside `readable`
    (f"fig = viz.training_curves({LOG!r})", 1),
    ("fig, ax = plt.subplots(figsize=(3, 2))\nax.plot([0, 1], [1, 0])", 1),
    ("fig = viz.grid([Image.new('RGB', (64, 40), 'white')] * 2, ['a', 'b'], cols=2)", 1),
    # two stages' live charts: one figure each, redrawn in place, none shown again when the cell ends
    (LIVE, 2),
    ("fig = plt.figure(figsize=(3, 2))\nplt.plot([0, 1], [0, 1])", 1),
]


def test_every_cell_that_draws_a_figure_shows_it_in_a_real_kernel(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src, _ in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "figures.ipynb")
    pipeline.run_notebook(tmp_path / "figures.ipynb", tmp_path / "ran.ipynb", {})
    ran = json.loads((tmp_path / "ran.ipynb").read_text())["cells"]
    shown = [sum("image/png" in o.get("data", {}) for o in cell["outputs"]) for cell in ran]
    assert shown == [n for _, n in CELLS], "\n".join(
        f"cell {i}: {got} image(s), expected {want}: {src.splitlines()[0]!r}"
        for i, ((src, want), got) in enumerate(zip(CELLS, shown, strict=True)) if got != want)


def test_readable_sets_the_text_sizes_and_puts_back_only_those():
    before = {k: plt.rcParams[k] for k in TEXT_SIZE_KEYS}
    was = matplotlib.is_interactive()
    try:
        with readable(12.0):
            assert {plt.rcParams[k] for k in TEXT_SIZE_KEYS} == {viz.readable_points(12.0)}
            fig, ax = plt.subplots(figsize=(12, 3))
            title = ax.set_title("t")
            matplotlib.interactive(not was)  # what the inline backend does when a figure first loads it
        assert title.get_fontsize() == viz.readable_points(12.0)  # the look stays the style's
        assert {k: plt.rcParams[k] for k in TEXT_SIZE_KEYS} == before
        assert matplotlib.is_interactive() is (not was)  # kept, not put back
    finally:
        matplotlib.interactive(was)
        plt.close("all")
