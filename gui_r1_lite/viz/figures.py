"""Screenshots as matplotlib figures: a prediction card (the screenshot, its target box and the
predicted click, with a caption), galleries of them, two prediction files side by side, an online
episode as a strip, image grids and reward maps. A click off the screenshot is drawn at the nearest
edge with an arrow pointing where it lies, so the screenshot keeps its size."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from PIL import Image

from ..geometry import as_float, has_target
from .draw import answer_text, card_title, image_for, off_image, outcome, record_task, shown_point
from .style import (
    GT_COLOR,
    HIT_COLOR,
    HIT_MARKER,
    MISS_COLOR,
    MISS_MARKER,
    UNKNOWN_COLOR,
    chars_per_line,
    readable,
    readable_points,
    rgb,
    wrap_caption,
    wrap_lines,
)


def grid(images: Sequence[Image.Image], titles: Sequence[str] | None = None, cols: int = 4,
         width: float = 4.0) -> plt.Figure:
    """Images in a grid, each under its title (wrapped, at most four lines)."""
    n = max(1, len(images))
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    size = readable_points(width * cols)
    chars = chars_per_line(width, size)
    wrapped = [wrap_lines(t, chars, 4) for t in titles] if titles else []
    title_in = max((len(w) for w in wrapped), default=0) * size * 1.3 / 72
    aspect = max((im.height / im.width for im in images), default=1.0)
    cell_in = width * min(aspect, 2.2) + title_in + 0.2
    with readable(width * cols):
        fig, axes = plt.subplots(rows, cols, figsize=(width * cols, cell_in * rows), squeeze=False,
                                 layout="constrained")
        for ax in axes.flat:
            ax.axis("off")
        for i, im in enumerate(images):
            axes.flat[i].imshow(im)
            if wrapped:
                axes.flat[i].set_title("\n".join(wrapped[i]), fontsize=size)
    return fig


def reward_map(score: Callable[[float, float], float | None], size: tuple[int, int], step: int = 4,
               gt_bbox: Sequence[float] | None = None, ax=None, title: str = "", frame: str = "model-frame"):
    """Heat map of `score(x, y)` at the centre of each `step`-pixel cell of an image of `size` (pixels
    of `frame`, the image the model sees, as rewards are computed), the box on top."""
    import numpy as np

    w, h = size
    xs, ys = np.arange(step / 2, w, step), np.arange(step / 2, h, step)
    z = np.array([[score(float(x), float(y)) or 0.0 for x in xs] for y in ys])
    if ax is None:
        with readable(5.5):
            _, ax = plt.subplots(figsize=(5.5, 4.5 * h / w + 0.8), layout="constrained")
    size_pt = readable_points(ax.figure.get_figwidth())
    im = ax.imshow(z, extent=(0, len(xs) * step, len(ys) * step, 0), vmin=0, vmax=1, cmap="viridis")
    if gt_bbox is not None and len(gt_bbox) == 4:
        x1, y1, x2, y2 = gt_bbox
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, ec="white", lw=1.5, ls="--"))
    chars = chars_per_line(ax.figure.get_figwidth() * ax.get_position().width, size_pt)
    ax.set_title("\n".join(wrap_lines(title, chars, 3)), fontsize=size_pt)
    ax.set_xlabel(f"x ({frame} px)", fontsize=size_pt)
    ax.set_ylabel(f"y ({frame} px)", fontsize=size_pt)
    ax.tick_params(labelsize=size_pt)
    bar = plt.colorbar(im, ax=ax, fraction=0.046)
    bar.set_label("reward (box: target)", fontsize=size_pt)
    bar.ax.tick_params(labelsize=size_pt)
    return ax


def point_style(hit: bool | None, size: float) -> dict:
    """A predicted click's white-rimmed marker for `size`-point text: a filled circle (hit), X (miss) or
    plus (None: no scripted step to check it against)."""
    marker, color = {True: (HIT_MARKER, HIT_COLOR), False: (MISS_MARKER, MISS_COLOR), None: ("P", UNKNOWN_COLOR)}[hit]
    return {"marker": marker, "ms": 1.3 * size, "mfc": rgb(color), "mec": "white", "mew": size / 8, "ls": "none"}


def _image_size(ax) -> tuple[int, int]:
    h, w = ax.images[0].get_size()
    return w, h


def _click(ax, point, style: dict, size: float) -> None:
    """The click's marker where it is; one off the screenshot at the nearest edge, with an arrow
    from it to the edge in the click's direction (its coordinates are in the caption). NaN: none."""
    x, y = as_float(point[0]), as_float(point[1])
    if math.isnan(x) or math.isnan(y):
        return
    w, h = _image_size(ax)
    if not off_image((x, y), (w, h)):
        ax.plot(x, y, **style)
        return
    inset = 0.12 * min(w, h)
    head = (min(max(x, 0.0), w - 1.0), min(max(y, 0.0), h - 1.0))
    tail = (min(max(x, inset), w - 1.0 - inset), min(max(y, inset), h - 1.0 - inset))
    ax.annotate("", xy=head, xytext=tail, zorder=4,
                arrowprops={"arrowstyle": "-|>", "color": style["mfc"], "lw": size / 5, "mutation_scale": 1.4 * size,
                            "shrinkA": 0.6 * size, "shrinkB": 0})
    ax.plot(*tail, **style)


def _keep_frame(ax) -> None:
    """Whatever was plotted, the axes show exactly the screenshot's pixels."""
    w, h = _image_size(ax)
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)


def _mark(ax, record: dict) -> None:
    """The box (or ring) and the predicted click, sized like the text whatever the screenshot's size."""
    size = readable_points(ax.figure.get_figwidth())
    box = record.get("gt_bbox")
    if box is not None and len(box) == 4:
        x1, y1, x2, y2 = map(float, box)
        # above the click's marker, so a hit does not hide the box it hit
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, ec=rgb(GT_COLOR), lw=size / 5, zorder=3))
    elif box is not None and len(box) == 2 and has_target(box):
        ax.plot(*map(float, box), marker="o", ms=2 * size, mfc="none", mec=rgb(GT_COLOR), mew=size / 5)
    point = shown_point(record)
    if point is not None:
        _click(ax, point, point_style(bool(outcome(record)["hit"]), size), size)
    _keep_frame(ax)


def legend_handles(size: float = 10.0) -> list:
    """Legend entries for the marks of `prediction_card` / `draw_step` (markers for `size`-point text)."""
    return [Patch(fill=False, ec=rgb(GT_COLOR), lw=size / 5, label="target box (ground truth)"),
            Line2D([], [], **point_style(True, size), label="predicted click: hit"),
            Line2D([], [], **point_style(False, size), label="predicted click: miss")]


def add_legend(fig: plt.Figure) -> None:
    """One legend above the panels: what the box and the markers mean, and in which frame."""
    size = readable_points(fig.get_figwidth())
    handles = legend_handles(size)
    one_row = sum(len(h.get_label()) for h in handles) * 0.6 * size / 72 + 0.6 * len(handles) < fig.get_figwidth()
    with readable(fig.get_figwidth()):
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles) if one_row else 1, frameon=False,
                   title="positions in original screenshot pixels", columnspacing=1.2, handletextpad=0.4)


def prediction_card(record: dict, image: Image.Image, ax=None, wrap: int | None = None, prefix: str = ""):
    """One prediction: the screenshot with its marks and a caption (`card_title` after `prefix`)
    wrapped at `wrap` characters (None: what fits). Alone (no `ax`), it has a legend. Returns the figure."""
    alone = ax is None
    if alone:
        w, h = image.size
        wrap = wrap or chars_per_line(4.5, readable_points(4.5))
        extra = len(_caption(record, prefix, wrap, image.size)) * readable_points(4.5) * 1.25 / 72
        with readable(4.5):
            fig, ax = plt.subplots(figsize=(4.5, min(9.0, 4.5 * h / w) + extra + 1.0), layout="constrained")
    size = readable_points(ax.figure.get_figwidth())
    ax.imshow(image)
    ax.axis("off")
    ax.set_anchor("N")  # spare height of a grid cell goes below the picture, never between it and its caption
    _mark(ax, record)
    wrap = wrap or chars_per_line(ax.figure.get_figwidth() * ax.get_position().width, size)
    ax.set_title("\n".join(_caption(record, prefix, wrap, image.size)), fontsize=size, loc="left")
    if alone:
        add_legend(ax.figure)
    return ax.figure


def _caption(record: dict, prefix: str, wrap: int, image_size=None) -> list[str]:
    return wrap_caption(card_title(record, prefix, image_size), wrap)


def gallery(records: Sequence[dict], images, cols: int = 4, limit: int = 16, width: float = 3.6):
    """The first `limit` records' prediction cards in a grid, under one legend."""
    records = list(records)[:limit]
    cards = [(r, image_for(images, r), "") for r in records]
    return _card_grid(cards, min(cols, max(1, len(records))), width)


def _card_grid(cards: Sequence[tuple[dict, Image.Image, str]], cols: int, width: float):
    """Cards (record, screenshot, caption prefix) row by row, `width` inches each, under one legend."""
    rows = max(1, (len(cards) + cols - 1) // cols)
    fig_w = width * cols
    wrap = chars_per_line(width, readable_points(fig_w))
    lines = max((len(_caption(r, prefix, wrap, im.size)) for r, im, prefix in cards), default=0)
    pictures = [im for _, im, _ in cards]
    with readable(fig_w):
        fig, axes = plt.subplots(rows, cols, figsize=(fig_w, cell_height(pictures, width, fig_w, lines) * rows
                                                      + legend_height(fig_w)), squeeze=False, layout="constrained")
    for ax in axes.flat:
        ax.axis("off")
    for ax, (rec, im, prefix) in zip(axes.flat, cards, strict=False):
        prediction_card(rec, im, ax=ax, prefix=prefix, wrap=wrap)
    if cards:
        add_legend(fig)
    return fig


def cell_height(pictures: Sequence[Image.Image], width: float, fig_width: float, lines: int) -> float:
    """Figure inches per card: the tallest picture at `width` inches wide, plus `lines` of caption."""
    aspect = max((im.height / im.width for im in pictures), default=1.0)
    return width * min(aspect, 2.2) + lines * readable_points(fig_width) * 1.25 / 72 + 0.15


def legend_height(fig_width: float) -> float:
    """Figure inches a legend of three entries and a title takes."""
    return 3.2 * readable_points(fig_width) * 1.3 / 72


def answer_repeats(records: Sequence[dict]) -> dict[str, tuple[int, int]]:
    """For each record with a predicted point: (rows of its task answered with that same point, rows of
    its task with a point). A point given on every page of a task, whatever the target, is an answer
    the policy writes without looking: it hits only where the layout happens to put the target."""
    by_task: dict = {}
    for r in records:
        point = shown_point(r)
        if point is not None:
            key = tuple(round(as_float(v)) if math.isfinite(as_float(v)) else str(v) for v in point)
            by_task.setdefault(record_task(r), []).append((r["id"], key))
    out = {}
    for rows in by_task.values():
        counts = Counter(key for _, key in rows)
        out.update({rid: (counts[key], len(rows)) for rid, key in rows})
    return out


def _repeat_note(record: dict, repeats: Mapping[str, tuple[int, int]]) -> str:
    k, n = repeats.get(record["id"], (0, 0))
    return f"same point on {k} of {n} {record_task(record) or ''} pages · " if n > 1 and k > 1 else ""


def before_after(before: Sequence[dict], after: Sequence[dict], images, labels: tuple[str, str] = ("before", "after"),
                 limit: int = 6, width: float = 3.6):
    """Two prediction files side by side, a row per step: steps whose outcome changed first (fixed, then
    broken), one per task until every task is shown, so the rows are different pages. A caption says
    when its point is one the policy gave on several pages of that task (`answer_repeats`)."""
    b = {r["id"]: r for r in before}
    pairs = [(b[r["id"]], r) for r in after if r["id"] in b]
    repeats = (answer_repeats(before), answer_repeats(after))

    def order(pair):
        hb, ha = bool(outcome(pair[0])["hit"]), bool(outcome(pair[1])["hit"])
        return 0 if (not hb and ha) else 1 if (hb and not ha) else 2

    ranked, seen = [], Counter()
    for pair in sorted(pairs, key=order):  # the k-th step of each task after every task's (k-1)-th
        seen[record_task(pair[1])] += 1
        ranked.append((seen[record_task(pair[1])], order(pair), pair))
    pairs = [pair for *_, pair in sorted(ranked, key=lambda t: t[:2])][:limit]
    cards = []
    for pair in pairs:
        image = image_for(images, pair[1])
        cards += [(r, image, f"[{label}] {_repeat_note(r, rep)}")
                  for r, label, rep in zip(pair, labels, repeats, strict=True)]
    return _card_grid(cards, 2, width)


def episode_strip(records: Sequence[dict], images, cols: int = 5, width: float = 2.6, title: str | None = None):
    """One online episode's screenshots in step order, with the scripted target box, the predicted click
    and a caption of the answer and what the page did. `images` may also be the run folder (records name
    their `screenshot` in it). Titled by task, seed, instruction and outcome unless `title`."""
    records = sorted(records, key=lambda r: r.get("step", 0))
    if not records:
        raise ValueError("no step records: pass the records of one episode (an online run's steps.jsonl)")
    folder = Path(images) if isinstance(images, (str, Path)) else None
    pictures = [Image.open(folder / r["screenshot"]).convert("RGB") if folder else image_for(images, r)
                for r in records]
    n = len(records)
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    fig_w = max(width * cols, 6.5)  # room for the title and legend even under one screenshot
    size = readable_points(fig_w)
    wrap = chars_per_line(fig_w / cols, size)
    captions = [wrap_caption(_strip_caption(r, im.size), wrap) for r, im in zip(records, pictures, strict=True)]
    lines = max(map(len, captions))
    head = wrap_lines(title if title is not None else _strip_title(records), chars_per_line(fig_w, size), 3)
    with readable(fig_w):
        fig, axes = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                                 figsize=(fig_w, cell_height(pictures, min(width, fig_w / cols), fig_w, lines) * rows
                                          + legend_height(fig_w) + len(head) * size * 1.4 / 72))
        for ax in axes.flat:
            ax.axis("off")
        for ax, rec, im, caption in zip(axes.flat, records, pictures, captions, strict=False):
            _strip_panel(ax, rec, im, size)
            ax.set_title("\n".join(caption), fontsize=size, loc="left")
        fig.suptitle("\n".join(head), fontsize=size)
        unknown = Line2D([], [], **point_style(None, size), label="click, no scripted step to check")
        fig.legend(handles=[*legend_handles(size), unknown], loc="outside lower center", ncols=2, frameon=False,
                   title="positions in screenshot pixels", columnspacing=1.2, handletextpad=0.4)
    return fig


def _strip_panel(ax, record: dict, image: Image.Image, size: float) -> None:
    """Framed in grey: the page is mostly white."""
    ax.axis("on")
    ax.imshow(image)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_edgecolor("0.6")
    ax.set_anchor("N")
    if record.get("gt_action") is not None:
        _mark(ax, record)
    elif shown_point(record) is not None:
        _click(ax, shown_point(record), point_style(None, size), size)
        _keep_frame(ax)


def _strip_caption(record: dict, image_size=None) -> list[str]:
    if record.get("gt_action") is None:
        verdict = "? no scripted step"
    else:
        verdict = "✓ hit" if outcome(record)["hit"] else "✗ miss"
    answer = f"unparsable: {record['failed']}" if record.get("failed") else answer_text(record, image_size, at=" ")
    lines = [f"step {record.get('step', 0) + 1} · {verdict}", answer]
    if record.get("done"):
        lines.append(f"page: done, reward {float(record.get('raw_reward', 0)):g}")
    return lines


def _strip_title(records: Sequence[dict]) -> str:
    last = records[-1]
    solved = bool(last.get("done")) and float(last.get("raw_reward", 0)) >= 1.0
    result = (f"solved in {len(records)} step{'s' if len(records) > 1 else ''}" if solved
              else f"not solved (page reward {float(last.get('raw_reward', 0)):g}"
                   f"{'' if last.get('done') else ', not done'})")
    return f"{last.get('task', '')} · seed {last.get('seed', '')} · {result}\n{last.get('instruction', '')}"
