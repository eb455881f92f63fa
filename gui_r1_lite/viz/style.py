"""What every picture shares: the colour-blind-safe palette and markers, text sized for the width a
notebook shows a figure at, caption wrapping, and points written in a caption."""

from __future__ import annotations

import contextlib
import math
import textwrap

import matplotlib.pyplot as plt

from ..geometry import as_float

# Okabe & Ito's palette (blue, bluish green, vermillion, orange) stays distinct under the common
# colour-vision deficiencies; hit and miss also differ in shape, so neither depends on colour alone.
GT_COLOR = (0, 114, 178)
HIT_COLOR = (0, 158, 115)
MISS_COLOR = (213, 94, 0)
UNKNOWN_COLOR = (230, 159, 0)
HIT_MARKER, MISS_MARKER = "o", "X"
#: A notebook column shows a figure at most this many pixels wide (wider ones are shrunk to fit).
NOTEBOOK_WIDTH_PX = 900
SCREEN_DPI = 100
#: The smallest text height (pixels) any figure here shows in a notebook.
MIN_TEXT_PX = 12
#: A caption line wraps onto at most this many lines; only beyond that (an answer thousands of
#: characters long) is it cut, with "…", so that one card cannot push the others off the page.
CAPTION_LINE_MAX = 12


def readable_points(fig_width_in: float) -> float:
    """The font size (points) that is `MIN_TEXT_PX` tall when a figure `fig_width_in` inches wide is
    shown in a notebook: at `SCREEN_DPI`, shrunk to `NOTEBOOK_WIDTH_PX` when wider than that."""
    shrink = min(1.0, NOTEBOOK_WIDTH_PX / (fig_width_in * SCREEN_DPI))
    return MIN_TEXT_PX * 72 / (SCREEN_DPI * shrink)


#: The rc settings `readable` sets: every default text size.
TEXT_SIZE_KEYS = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
                  "legend.fontsize", "legend.title_fontsize", "figure.titlesize")


@contextlib.contextmanager
def readable(width_in: float):
    """While it lasts, every default text of a figure `width_in` inches wide is readable.

    Only the text sizes are set and put back, not every rc setting as `plt.rc_context` would: the
    notebook's inline backend turns interactive mode on when a kernel's first figure loads it, and
    putting that back off would leave every later figure of the notebook undrawn."""
    saved = {k: plt.rcParams[k] for k in TEXT_SIZE_KEYS}
    plt.rcParams.update(dict.fromkeys(TEXT_SIZE_KEYS, readable_points(width_in)))
    try:
        yield
    finally:
        plt.rcParams.update(saved)


def rgb(color: tuple[int, int, int]) -> tuple[float, float, float]:
    return tuple(c / 255 for c in color)


def wrap_lines(text: str, width: int, max_lines: int) -> list[str]:
    """`text` wrapped at `width` characters (its own line breaks kept), at most `max_lines` lines."""
    lines = [w for part in text.split("\n") for w in (textwrap.wrap(part, width) or [""])]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(1, width - 1)] + "…"
    return lines


def wrap_caption(lines: list[str], width: int) -> list[str]:
    """Each caption line wrapped onto as many lines as it needs (up to `CAPTION_LINE_MAX`)."""
    return [x for line in lines for x in wrap_lines(line, width, CAPTION_LINE_MAX)]


def chars_per_line(panel_width_in: float, font_pt: float) -> int:
    """About how many characters of a `font_pt` font fit across a panel (DejaVu Sans: ~0.55 em each)."""
    return max(12, int(panel_width_in * 72 * 0.92 / (0.55 * font_pt)))


def fmt_coord(v: float) -> str:
    """Whole pixels, or 3 significant digits where that would run to dozens of digits (a policy can
    answer 1e308)."""
    v = as_float(v)
    return f"{v:.0f}" if math.isfinite(v) and abs(v) < 1e7 else f"{v:.3g}"


def fmt_point(p) -> str:
    return "-" if p is None else f"({fmt_coord(p[0])}, {fmt_coord(p[1])})"
