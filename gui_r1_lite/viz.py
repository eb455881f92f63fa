"""Pictures: a screenshot with its ground-truth box and a predicted click (hit green, miss red),
grids of them, and reward maps. Everything renders headless (Agg) so papermill runs can save it.
"""

from __future__ import annotations

import textwrap
from typing import Callable, Sequence

import matplotlib

if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "inline"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from .actions import NO_POINT  # noqa: E402

GT_COLOR = (30, 110, 255)
HIT_COLOR = (20, 170, 60)
MISS_COLOR = (220, 30, 30)


def draw_step(image: Image.Image, gt_bbox: Sequence[float] | None = None, point: Sequence[float] | None = None,
              hit: bool | None = None, label: str | None = None) -> Image.Image:
    """A copy of `image` with the ground-truth box (blue; a 2-value target as a ring) and the
    predicted point (green when `hit`, red when not, yellow when unknown), all in `image`'s pixels."""
    out = image.convert("RGB").copy()
    d = ImageDraw.Draw(out)
    scale = max(1, round(max(out.size) / 400))
    if gt_bbox is not None and len(gt_bbox) == 4:
        d.rectangle([float(v) for v in gt_bbox], outline=GT_COLOR, width=2 * scale)
    elif gt_bbox is not None and len(gt_bbox) == 2 and tuple(gt_bbox) != NO_POINT:
        x, y = map(float, gt_bbox)
        r = 6 * scale
        d.ellipse([x - r, y - r, x + r, y + r], outline=GT_COLOR, width=2 * scale)
    if point is not None and tuple(point) != NO_POINT:
        color = (230, 200, 0) if hit is None else (HIT_COLOR if hit else MISS_COLOR)
        x, y = map(float, point)
        r = 5 * scale
        d.line([x - 2 * r, y, x + 2 * r, y], fill=color, width=2 * scale)
        d.line([x, y - 2 * r, x, y + 2 * r], fill=color, width=2 * scale)
        d.ellipse([x - r, y - r, x + r, y + r], outline=color, width=2 * scale)
    if label:
        d.rectangle([0, 0, out.width, 14 * scale], fill=(0, 0, 0))
        d.text((3, 1), label[: 8 * out.width // (6 * scale)], fill=(255, 255, 255))
    return out


def grid(images: Sequence[Image.Image], titles: Sequence[str] | None = None, cols: int = 4,
         width: float = 4.0) -> plt.Figure:
    """A matplotlib figure of images with wrapped titles."""
    n = max(1, len(images))
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, width * rows * 0.9), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for i, im in enumerate(images):
        ax = axes.flat[i]
        ax.imshow(im)
        if titles:
            ax.set_title("\n".join(textwrap.wrap(titles[i], 40)[:3]), fontsize=8)
    fig.tight_layout()
    return fig


def reward_map(score: Callable[[float, float], float | None], size: tuple[int, int], step: int = 4,
               gt_bbox: Sequence[float] | None = None, ax=None, title: str = ""):
    """Heat map of `score(x, y)` over an image of `size` (pixels), the box drawn on top."""
    import numpy as np

    w, h = size
    xs, ys = np.arange(0, w, step), np.arange(0, h, step)
    z = np.array([[score(float(x), float(y)) or 0.0 for x in xs] for y in ys])
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5 * h / w))
    im = ax.imshow(z, extent=(0, w, h, 0), vmin=0, vmax=1, cmap="viridis")
    if gt_bbox is not None and len(gt_bbox) == 4:
        x1, y1, x2, y2 = gt_bbox
        ax.add_patch(plt.Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, ec="white", lw=1.5))
    ax.set_title(title, fontsize=9)
    plt.colorbar(im, ax=ax, fraction=0.046)
    return ax
