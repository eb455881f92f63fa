"""Pictures: a screenshot with its ground-truth box and a predicted click (hit: filled circle, miss:
a cross, in colours told apart by colour-blind readers too), galleries and before/after pairs of
them, online episodes as strips, training curves, the miniature's bars and a widget browser. Text is
sized for the width a notebook shows a figure at; everything renders headless (Agg).

One module a job: `draw` (PIL on a screenshot, and reading a prediction record), `figures`
(screenshots as matplotlib figures), `charts` (curves and bars), `widgets` (the ipywidgets
browser), `style` (palette, text sizes, wrapping). `from gui_r1_lite import viz; viz.gallery(...)`
reaches them all.
"""

from __future__ import annotations

import matplotlib

# before any submodule imports pyplot: headless unless a notebook's inline backend is in use
if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "inline"):
    matplotlib.use("Agg")

from .charts import (  # noqa: E402
    LiveCurves,
    blind_score,
    miniature_bars,
    numeric_keys,
    read_log,
    save_figure_atomic,
    stage_counts,
    training_curves,
)
from .draw import (  # noqa: E402
    card_title,
    describe,
    draw_step,
    prediction_image,
    record_task,
    shown_point,
    thinking_text,
)
from .figures import (  # noqa: E402
    add_legend,
    answer_repeats,
    before_after,
    episode_strip,
    gallery,
    grid,
    legend_handles,
    prediction_card,
    reward_map,
)
from .style import (  # noqa: E402
    GT_COLOR,
    HIT_COLOR,
    HIT_MARKER,
    MIN_TEXT_PX,
    MISS_COLOR,
    MISS_MARKER,
    NOTEBOOK_WIDTH_PX,
    SCREEN_DPI,
    UNKNOWN_COLOR,
    readable_points,
)
from .widgets import PredictionBrowser, browse  # noqa: E402

__all__ = [
    "GT_COLOR", "HIT_COLOR", "HIT_MARKER", "MIN_TEXT_PX", "MISS_COLOR", "MISS_MARKER", "NOTEBOOK_WIDTH_PX",
    "SCREEN_DPI", "UNKNOWN_COLOR", "LiveCurves", "PredictionBrowser", "add_legend", "answer_repeats", "before_after",
    "blind_score",
    "browse", "card_title", "describe", "draw_step", "episode_strip", "gallery", "grid", "legend_handles",
    "miniature_bars", "numeric_keys", "prediction_card", "prediction_image", "read_log", "readable_points",
    "record_task", "reward_map", "save_figure_atomic", "shown_point", "stage_counts", "thinking_text",
    "training_curves",
]
