"""Pictures: screenshots with the target box and the predicted click (`draw` with PIL, `figures` with
matplotlib: cards, galleries, before/after pairs, episode strips), training curves and the miniature's
bars (`charts`), a widget browser (`widgets`), and what they share (`style`: colour-blind-safe palette,
text readable at a notebook's width). Everything renders headless (Agg)."""

from __future__ import annotations

import matplotlib

# before any submodule imports pyplot: headless unless a notebook's inline backend is in use
if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "inline"):
    matplotlib.use("Agg")

from .charts import (  # noqa: E402
    LiveCurves,
    blind_score,
    live_keys,
    miniature_bars,
    numeric_keys,
    read_log,
    run_method,
    save_figure_atomic,
    series_keys,
    stage_counts,
    step_records,
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
    "blind_score", "browse", "card_title", "describe", "draw_step", "episode_strip", "gallery", "grid",
    "legend_handles", "live_keys", "miniature_bars", "numeric_keys", "prediction_card", "prediction_image",
    "read_log", "readable_points", "record_task", "reward_map", "run_method", "save_figure_atomic", "series_keys",
    "shown_point", "stage_counts", "step_records", "thinking_text", "training_curves",
]
