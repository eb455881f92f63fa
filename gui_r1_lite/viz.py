"""Pictures: a screenshot with its ground-truth box and a predicted click (hit: filled circle,
miss: a cross, in colours told apart by colour-blind readers too), grids of them, curves, reward
maps. Text is sized for the width a notebook shows a figure at; everything renders headless (Agg).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import matplotlib

if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "inline"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from .geometry import NO_POINT, has_target  # noqa: E402
from .runio import read_jsonl  # noqa: E402

# Okabe & Ito's palette (blue, bluish green, vermillion, orange) stays distinct under the common
# colour-vision deficiencies; hit and miss also differ in shape, so neither depends on colour alone.
GT_COLOR = (0, 114, 178)
HIT_COLOR = (0, 158, 115)
MISS_COLOR = (213, 94, 0)
UNKNOWN_COLOR = (230, 159, 0)
#: matplotlib marker of a predicted click that hit / missed (a filled circle, a filled X).
HIT_MARKER, MISS_MARKER = "o", "X"

#: A notebook column shows a figure at most this many pixels wide (wider ones are shrunk to fit).
NOTEBOOK_WIDTH_PX = 900
#: Inline figures render at this many dots per inch.
SCREEN_DPI = 100
#: The smallest text height (pixels, one em) any figure here shows in a notebook.
MIN_TEXT_PX = 12


def readable_points(fig_width_in: float) -> float:
    """The font size (points) that is `MIN_TEXT_PX` tall when a figure `fig_width_in` inches wide
    is shown in a notebook: at `SCREEN_DPI`, shrunk to `NOTEBOOK_WIDTH_PX` when wider than that."""
    shrink = min(1.0, NOTEBOOK_WIDTH_PX / (fig_width_in * SCREEN_DPI))
    return MIN_TEXT_PX * 72 / (SCREEN_DPI * shrink)


def _readable(width_in: float):
    """rc settings under which a figure `width_in` inches wide is made: every default text readable."""
    size = readable_points(width_in)
    return plt.rc_context({"font.size": size, "axes.titlesize": size, "axes.labelsize": size,
                           "xtick.labelsize": size, "ytick.labelsize": size, "legend.fontsize": size,
                           "legend.title_fontsize": size, "figure.titlesize": size})


def _rgb(color: tuple[int, int, int]) -> tuple[float, float, float]:
    return tuple(c / 255 for c in color)


def _wrap_lines(text: str, width: int, max_lines: int) -> list[str]:
    """`text` wrapped at `width` characters line by line (its own line breaks kept), at most `max_lines`."""
    lines = [w for part in text.split("\n") for w in (textwrap.wrap(part, width) or [""])]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(1, width - 1)] + "…"
    return lines


def _chars_per_line(panel_width_in: float, font_pt: float) -> int:
    """About how many characters of a `font_pt` font fit across a panel (DejaVu Sans: ~0.55 em each)."""
    return max(12, int(panel_width_in * 72 * 0.92 / (0.55 * font_pt)))


def draw_step(image: Image.Image, gt_bbox: Sequence[float] | None = None, point: Sequence[float] | None = None,
              hit: bool | None = None, label: str | None = None) -> Image.Image:
    """A copy of `image` with the ground-truth box (blue; a 2-value target as a ring) and the
    predicted point: a filled circle when `hit`, a cross when not, a crosshair when unknown; all in
    `image`'s pixels. For figures, `prediction_card` draws the same marks at a size fixed on screen."""
    out = image.convert("RGB").copy()
    d = ImageDraw.Draw(out)
    scale = max(1, round(max(out.size) / 300))
    if gt_bbox is not None and len(gt_bbox) == 4:
        d.rectangle([float(v) for v in gt_bbox], outline=GT_COLOR, width=2 * scale)
    elif gt_bbox is not None and len(gt_bbox) == 2 and has_target(gt_bbox):
        x, y = map(float, gt_bbox)
        r = 7 * scale
        d.ellipse([x - r, y - r, x + r, y + r], outline=GT_COLOR, width=2 * scale)
    if point is not None and tuple(point) != NO_POINT:
        _draw_point(d, tuple(map(float, point)), hit, scale)
    if label:
        d.rectangle([0, 0, out.width, 14 * scale], fill=(0, 0, 0))
        d.text((3, 1), label[: 8 * out.width // (6 * scale)], fill=(255, 255, 255))
    return out


def _draw_point(d: ImageDraw.ImageDraw, point: tuple[float, float], hit: bool | None, scale: int) -> None:
    x, y = point
    r = 6 * scale
    if hit:
        d.ellipse([x - r - scale, y - r - scale, x + r + scale, y + r + scale], fill=(255, 255, 255))
        d.ellipse([x - r, y - r, x + r, y + r], fill=HIT_COLOR)
    elif hit is False:
        for width, color in ((5 * scale, (255, 255, 255)), (3 * scale, MISS_COLOR)):  # a white rim, then the X
            d.line([x - r, y - r, x + r, y + r], fill=color, width=width)
            d.line([x - r, y + r, x + r, y - r], fill=color, width=width)
    else:
        d.line([x - 2 * r, y, x + 2 * r, y], fill=UNKNOWN_COLOR, width=2 * scale)
        d.line([x, y - 2 * r, x, y + 2 * r], fill=UNKNOWN_COLOR, width=2 * scale)


def grid(images: Sequence[Image.Image], titles: Sequence[str] | None = None, cols: int = 4,
         width: float = 4.0) -> plt.Figure:
    """A matplotlib figure of images, each under its title (line breaks kept, wrapped, at most four
    lines), the text readable at the width a notebook shows the figure."""
    n = max(1, len(images))
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    size = readable_points(width * cols)
    chars = _chars_per_line(width, size)
    wrapped = [_wrap_lines(t, chars, 4) for t in titles] if titles else []
    title_in = max((len(w) for w in wrapped), default=0) * size * 1.3 / 72
    aspect = max((im.height / im.width for im in images), default=1.0)
    cell_in = width * min(aspect, 2.2) + title_in + 0.2
    with _readable(width * cols):
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
    """Heat map of `score(x, y)` over an image of `size` (pixels of `frame`, the image the model
    sees, as rewards are computed), sampled at the centre of each `step`-pixel cell, the box on top."""
    import numpy as np

    w, h = size
    xs, ys = np.arange(step / 2, w, step), np.arange(step / 2, h, step)
    z = np.array([[score(float(x), float(y)) or 0.0 for x in xs] for y in ys])
    if ax is None:
        with _readable(5.5):
            _, ax = plt.subplots(figsize=(5.5, 4.5 * h / w + 0.8), layout="constrained")
    size_pt = readable_points(ax.figure.get_figwidth())
    im = ax.imshow(z, extent=(0, len(xs) * step, len(ys) * step, 0), vmin=0, vmax=1, cmap="viridis")
    if gt_bbox is not None and len(gt_bbox) == 4:
        x1, y1, x2, y2 = gt_bbox
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, ec="white", lw=1.5, ls="--"))
    chars = _chars_per_line(ax.figure.get_figwidth() * ax.get_position().width, size_pt)
    ax.set_title("\n".join(_wrap_lines(title, chars, 3)), fontsize=size_pt)
    ax.set_xlabel(f"x ({frame} px)", fontsize=size_pt)
    ax.set_ylabel(f"y ({frame} px)", fontsize=size_pt)
    ax.tick_params(labelsize=size_pt)
    bar = plt.colorbar(im, ax=ax, fraction=0.046)
    bar.set_label("reward (box: target)", fontsize=size_pt)
    bar.ax.tick_params(labelsize=size_pt)
    return ax


# Records are what `evaluate.predict` writes (one dict per step, points in stored-image pixels).
# `images` is anything that gives a record's screenshot: a callable `record -> PIL image`, or a
# mapping record id -> PIL image or `data.Sample` (e.g. `evaluate.samples_by_id(data)`).

def thinking_text(completion: str) -> str:
    """The text between the first `<think>` and the next `</think>` ('' without both)."""
    start = completion.find("<think>")
    end = completion.find("</think>", start + 7) if start >= 0 else -1
    return completion[start + 7:end].strip() if start >= 0 and end >= 0 else ""


def _image_for(images, record: dict) -> Image.Image:
    value = images(record) if callable(images) else images[record["id"]]
    if hasattr(value, "image") and callable(value.image):  # a data.Sample
        value = value.image()
    return value


def _outcome(record: dict) -> dict:
    from .metrics import record_outcome

    return record_outcome(record)


def _fmt_point(p) -> str:
    return "-" if p is None else f"({float(p[0]):.0f}, {float(p[1]):.0f})"


def describe(record: dict) -> list[str]:
    """Lines that say what a record is: instruction, ground truth, parsed answer, outcome."""
    o = _outcome(record)
    gt = f"gt: {record['gt_action']} {[round(float(v)) for v in record['gt_bbox']]}"
    if record.get("gt_input_text") not in (None, "no input text"):
        gt += f" {record['gt_input_text']!r}"
    if record.get("pred_action") is None:
        pred = "pred: (nothing read)"
    else:
        pred = f"pred: {record['pred_action']} {_fmt_point(record.get('pred_coord'))}"
        if record.get("pred_input_text") not in (None, "no input text"):
            pred += f" {record['pred_input_text']!r}"
    lines = [("HIT " if o["hit"] else "MISS ") + str(record.get("instruction", "")), gt, pred]
    if record.get("parse_error"):
        lines.append(f"format: {record['parse_error']}")
    return lines


def prediction_image(record: dict, image: Image.Image) -> Image.Image:
    """The screenshot with the ground-truth box and the predicted click (circle hit, cross miss)."""
    return draw_step(image, record.get("gt_bbox"), _shown_point(record), hit=bool(_outcome(record)["hit"]))


def _shown_point(record: dict):
    """The predicted point, where one counts: the original's reading gives (0, 0) to an answer
    without a point, which is no click anyone made."""
    from .actions import POINT_ACTIONS

    box = record.get("gt_bbox")
    counts = record.get("pred_action") in POINT_ACTIONS or (box is not None and has_target(box))
    point = record.get("pred_coord") if counts else None
    return None if point is None or tuple(point) == NO_POINT else point


def card_title(record: dict, prefix: str = "") -> list[str]:
    """A card's short caption: outcome and instruction, the wanted action where the picture cannot
    show it, and the parsed answer (point in original screenshot pixels). The rest is in `describe`."""
    from .actions import POINT_ACTIONS

    hit = bool(_outcome(record)["hit"])
    lines = [f"{prefix}{'✓ HIT' if hit else '✗ MISS'} · {record.get('instruction', '')}"]
    text = record.get("gt_input_text")
    text = None if text == "no input text" else text
    if record.get("gt_action") not in POINT_ACTIONS or text is not None:
        lines.append(f"want: {record.get('gt_action')}" + (f" {text!r}" if text is not None else ""))
    if record.get("pred_action") is None:
        lines.append("answer: nothing read" + (f" ({record['parse_error']})" if record.get("parse_error") else ""))
    else:
        answer = f"answer: {record['pred_action']}"
        if _shown_point(record) is not None:
            answer += f" at {_fmt_point(record.get('pred_coord'))}"
        if record.get("pred_input_text") not in (None, "no input text"):
            answer += f" {record['pred_input_text']!r}"
        lines.append(answer)
    return lines


def prediction_card(record: dict, image: Image.Image, ax=None, wrap: int | None = None, prefix: str = ""):
    """One prediction: the screenshot, the ground-truth box, the predicted click (filled circle:
    hit, cross: miss) and a short caption (`card_title`, after `prefix`), wrapped at `wrap`
    characters (None: what fits). Alone (no `ax`), it has a legend. Returns the figure."""
    alone = ax is None
    if alone:
        w, h = image.size
        with _readable(4.5):
            fig, ax = plt.subplots(figsize=(4.5, min(9.0, 4.5 * h / w) + 1.6), layout="constrained")
    size = readable_points(ax.figure.get_figwidth())
    ax.imshow(image)
    ax.axis("off")
    ax.set_anchor("N")  # spare height of a grid cell goes below the picture, never between it and its caption
    _mark(ax, record)
    wrap = wrap or _chars_per_line(ax.figure.get_figwidth() * ax.get_position().width, size)
    ax.set_title("\n".join(_caption(record, prefix, wrap)), fontsize=size, loc="left")
    if alone:
        add_legend(ax.figure)
    return ax.figure


def _caption(record: dict, prefix: str, wrap: int) -> list[str]:
    return [x for line in card_title(record, prefix) for x in _wrap_lines(line, wrap, 2)][:5]


def _mark(ax, record: dict) -> None:
    """The box (or ring) and the predicted click, sized like the text: the same on screen whatever
    the screenshot's own size."""
    size = readable_points(ax.figure.get_figwidth())
    box = record.get("gt_bbox")
    if box is not None and len(box) == 4:
        x1, y1, x2, y2 = map(float, box)
        # above the click's marker, so a hit does not hide the box it hit
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, ec=_rgb(GT_COLOR), lw=size / 5, zorder=3))
    elif box is not None and len(box) == 2 and has_target(box):
        ax.plot(*map(float, box), marker="o", ms=2 * size, mfc="none", mec=_rgb(GT_COLOR), mew=size / 5)
    point = _shown_point(record)
    if point is not None:
        hit = bool(_outcome(record)["hit"])
        w, h = ax.images[0].get_size()[::-1] if ax.images else (None, None)
        x, y = float(point[0]), float(point[1])
        ax.plot(x, y, **_point_style(hit, size), clip_on=False)
        if w is not None and not (0 <= x <= w and 0 <= y <= h):
            ax.set_xlim(min(-0.5, x - 10), max(w - 0.5, x + 10))  # a click off the screenshot stays in view
            ax.set_ylim(max(h - 0.5, y + 10), min(-0.5, y - 10))


def _point_style(hit: bool, size: float) -> dict:
    """A predicted click's marker for text of `size` points: a filled circle (hit) or X (miss), white-rimmed."""
    return {"marker": HIT_MARKER if hit else MISS_MARKER, "ms": 1.3 * size,
            "mfc": _rgb(HIT_COLOR if hit else MISS_COLOR), "mec": "white", "mew": size / 8, "ls": "none"}


def legend_handles(size: float = 10.0) -> list:
    """Legend entries for the marks of `prediction_card` / `draw_step` (markers for `size`-point text)."""
    return [Patch(fill=False, ec=_rgb(GT_COLOR), lw=size / 5, label="target box (ground truth)"),
            Line2D([], [], **_point_style(True, size), label="predicted click: hit"),
            Line2D([], [], **_point_style(False, size), label="predicted click: miss")]


def add_legend(fig: plt.Figure) -> None:
    """One legend above the panels: what the box and the two markers mean, and in which frame."""
    size = readable_points(fig.get_figwidth())
    handles = legend_handles(size)
    one_row = sum(len(h.get_label()) for h in handles) * 0.6 * size / 72 + 0.6 * len(handles) < fig.get_figwidth()
    with _readable(fig.get_figwidth()):
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles) if one_row else 1, frameon=False,
                   title="positions in original screenshot pixels", columnspacing=1.2, handletextpad=0.4)


def gallery(records: Sequence[dict], images, cols: int = 4, limit: int = 16, width: float = 3.6):
    """A grid of prediction cards (the first `limit` records) under one legend."""
    records = list(records)[:limit]
    pictures = [_image_for(images, r) for r in records]
    n = max(1, len(records))
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    wrap = _chars_per_line(width, readable_points(width * cols))
    lines = max((len(_caption(r, "", wrap)) for r in records), default=0)
    with _readable(width * cols):
        fig, axes = plt.subplots(rows, cols, figsize=(width * cols, _cell_height(pictures, width, width * cols, lines)
                                                      * rows + _legend_height(width * cols)),
                                 squeeze=False, layout="constrained")
    for ax in axes.flat:
        ax.axis("off")
    for ax, rec, im in zip(axes.flat, records, pictures, strict=False):
        prediction_card(rec, im, ax=ax, wrap=wrap)
    if records:
        add_legend(fig)
    return fig


def _cell_height(pictures: Sequence[Image.Image], width: float, fig_width: float, lines: int) -> float:
    """Figure inches per card: the tallest picture at `width` inches wide, plus `lines` of caption."""
    aspect = max((im.height / im.width for im in pictures), default=1.0)
    return width * min(aspect, 2.2) + lines * readable_points(fig_width) * 1.25 / 72 + 0.15


def _legend_height(fig_width: float) -> float:
    return 3.2 * readable_points(fig_width) * 1.3 / 72


def before_after(before: Sequence[dict], after: Sequence[dict], images, labels: tuple[str, str] = ("before", "after"),
                 limit: int = 6, width: float = 3.6):
    """Two prediction files on the same rows, side by side (one row of the figure per step). Steps
    whose outcome changed come first (fixed, then broken), then the rest."""
    b = {r["id"]: r for r in before}
    pairs = [(b[r["id"]], r) for r in after if r["id"] in b]

    def order(pair):
        hb, ha = bool(_outcome(pair[0])["hit"]), bool(_outcome(pair[1])["hit"])
        return 0 if (not hb and ha) else 1 if (hb and not ha) else 2

    pairs = sorted(pairs, key=order)[:limit]
    pictures = [_image_for(images, ra) for _, ra in pairs]
    n = max(1, len(pairs))
    wrap = _chars_per_line(width, readable_points(width * 2))
    captions = [_caption(r, f"[{label}] ", wrap) for pair in pairs for r, label in zip(pair, labels, strict=True)]
    lines = max(map(len, captions), default=0)
    with _readable(width * 2):
        fig, axes = plt.subplots(n, 2, figsize=(width * 2, _cell_height(pictures, width, width * 2, lines) * n
                                                + _legend_height(width * 2)), squeeze=False, layout="constrained")
    for ax in axes.flat:
        ax.axis("off")
    for i, ((rb, ra), image) in enumerate(zip(pairs, pictures, strict=True)):
        for j, (rec, label) in enumerate(((rb, labels[0]), (ra, labels[1]))):
            prediction_card(rec, image, ax=axes[i, j], prefix=f"[{label}] ", wrap=wrap)
    if pairs:
        add_legend(fig)
    return fig


#: What the curves show first, when a log has it (each reward's mean follows these three): the
#: reward and its parts, validation on held-out rows, the share of groups whose answers all scored
#: alike (they teach nothing), the answers' length, the KL to the start and the loss.
_FIRST_KEYS = ("reward", "rewards/gui_r1/mean", "rewards/accuracy/mean", "rewards/format/mean",
               "validation/click_accuracy", "validation/format_rate", "validation/reward",
               "frac_reward_zero_std", "completions/mean_length", "kl", "loss")
_X_KEYS = ("step", "global_step", "epoch")


def read_log(log: str | Path | Iterable[dict]) -> list[dict]:
    """A run's `metrics.jsonl` (path; bad or torn lines skipped) or a list of dicts -> list of dicts."""
    if isinstance(log, (str, Path)):
        if not Path(log).exists():
            raise FileNotFoundError(f"{log}: no such metrics log")
        return read_jsonl(log)
    return [dict(r) for r in log]


def _is_num(v) -> bool:
    import math

    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def numeric_keys(log: Sequence[dict]) -> list[str]:
    """Numeric keys of a log, without the step counters: the rewards (their means), validation,
    `frac_reward_zero_std`, completion length, KL and loss first, then the rest as they come."""
    seen: dict[str, None] = {}
    for rec in log:
        for k, v in rec.items():
            if k not in _X_KEYS and _is_num(v):
                seen.setdefault(k)
    first = [k for k in _FIRST_KEYS if k in seen]
    means = [k for k in seen if k.startswith("rewards/") and k.endswith("/mean") and k not in first]
    at = sum(1 for k in first if k == "reward" or k.startswith("rewards/"))
    first[at:at] = means  # after the reward and its known parts
    return first + [k for k in seen if k not in first]


def training_curves(log, keys: Sequence[str] | None = None, cols: int = 3, limit: int = 12, smooth: int = 0):
    """One panel per numeric key of a run's log against the training step (or the line number),
    in `numeric_keys`' order (rewards, validation, zero-std groups, answer length, KL, loss first);
    `smooth` > 1 adds a running mean over that many points."""
    log = read_log(log)
    keys = list(keys) if keys is not None else numeric_keys(log)[:limit]
    n = max(1, len(keys))
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    xkey = next((k for k in _X_KEYS if any(k in r for r in log)), None)
    with _readable(4 * cols):
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.9 * rows + 0.5), squeeze=False, layout="constrained")
        for ax in axes.flat[n:]:
            ax.axis("off")
        for ax, key in zip(axes.flat, keys, strict=False):
            _curve(ax, log, key, xkey, smooth)
        if smooth > 1 and any(ax.lines for ax in axes.flat):
            fig.legend(handles=[Line2D([], [], lw=1, color="C0", alpha=0.6, label="each logged value"),
                                Line2D([], [], lw=2, color="C1", label=f"running mean of {smooth}")],
                       loc="outside lower center", ncols=2, frameon=False)
    return fig


def _curve(ax, log: Sequence[dict], key: str, xkey: str | None, smooth: int) -> None:
    pts = [(r.get(xkey, i) if xkey else i, r[key]) for i, r in enumerate(log) if _is_num(r.get(key))]
    if pts:
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, lw=1, color="C0", marker="." if len(xs) < 50 else None, alpha=0.6 if smooth > 1 else 1.0)
        if smooth > 1 and len(ys) >= smooth:
            run = [sum(ys[i - smooth + 1:i + 1]) / smooth for i in range(smooth - 1, len(ys))]
            ax.plot(xs[smooth - 1:], run, lw=2, color="C1")
    else:
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(key)
    ax.set_xlabel({"step": "training step", "global_step": "training step", "epoch": "epoch"}.get(xkey, "log line"))
    ax.grid(alpha=0.3)


#: What the marks in the browser's picture mean (the figures carry the same as a legend).
_KEY_HTML = ("<div style='color:#555'>in the picture (original screenshot pixels): blue box = target, "
             "filled green circle = click that hit, orange cross = click that missed</div>")


class PredictionBrowser:
    """An ipywidgets browser over prediction records: step through them, filter by group,
    ui_type and outcome (hit / miss / format error), see the screenshot with the boxes, the
    parsed answer, the thinking text and the raw completion. `display(browser.widget)`."""

    OUTCOMES = ("all", "hit", "miss", "format error")

    def __init__(self, records: Sequence[dict], images, max_side: int = 520):
        import ipywidgets as w

        self.records = list(records)
        self.images = images
        self.max_side = max_side
        self._hits = [bool(_outcome(r)["hit"]) for r in self.records]
        groups = sorted({str(r.get("group") or "") for r in self.records})
        ui_types = sorted({str(r.get("ui_type") or "") for r in self.records})
        self.group = w.Dropdown(options=["all"] + groups, value="all", description="group")
        self.ui_type = w.Dropdown(options=["all"] + ui_types, value="all", description="ui_type")
        self.outcome = w.ToggleButtons(options=list(self.OUTCOMES), value="all")
        self.index = w.IntSlider(min=0, max=0, value=0, description="#", continuous_update=False)
        self.prev = w.Button(description="◀ prev")
        self.next = w.Button(description="next ▶")
        self.image = w.Image(format="png")
        self.info = w.HTML()
        self.count = w.HTML()
        for control in (self.group, self.ui_type, self.outcome):
            control.observe(lambda _: self._refilter(), names="value")
        self.index.observe(lambda _: self._render(), names="value")
        self.prev.on_click(lambda _: self.step(-1))
        self.next.on_click(lambda _: self.step(1))
        self.widget = w.VBox([w.HBox([self.group, self.ui_type]), self.outcome,
                              w.HBox([self.prev, self.index, self.next, self.count]),
                              w.HBox([self.image, self.info])])
        self.filtered: list[int] = []
        self._refilter()

    def _keep(self, i: int) -> bool:
        r = self.records[i]
        if self.group.value != "all" and str(r.get("group") or "") != self.group.value:
            return False
        if self.ui_type.value != "all" and str(r.get("ui_type") or "") != self.ui_type.value:
            return False
        o = self.outcome.value
        if o == "hit":
            return self._hits[i]
        if o == "miss":
            return not self._hits[i]
        if o == "format error":
            return bool(r.get("parse_error"))
        return True

    def _refilter(self) -> None:
        self.filtered = [i for i in range(len(self.records)) if self._keep(i)]
        self.index.max = max(0, len(self.filtered) - 1)
        self.index.value = 0
        self._render()

    def step(self, delta: int) -> None:
        if self.filtered:
            self.index.value = (self.index.value + delta) % len(self.filtered)

    @property
    def current(self) -> dict | None:
        return self.records[self.filtered[self.index.value]] if self.filtered else None

    def _render(self) -> None:
        import html
        import io

        rec = self.current
        count = f"{len(self.filtered)} of {len(self.records)} shown"
        if rec is None:
            self.image.value = b""
            self.info.value = "<i>no prediction matches the filters</i>"
            self.count.value = count
            return
        im = prediction_image(rec, _image_for(self.images, rec))
        im.thumbnail((self.max_side, self.max_side))
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        self.image.value = buf.getvalue()
        lines = "".join(f"<div>{html.escape(s)}</div>" for s in describe(rec))
        think = html.escape(thinking_text(rec.get("completion", ""))) or "<i>(none)</i>"
        raw = html.escape(rec.get("completion", ""))
        self.info.value = (f"<div style='max-width:480px;font-size:12px'><b>{html.escape(str(rec['id']))}</b> "
                           f"({html.escape(str(rec.get('group', '')))} {html.escape(str(rec.get('ui_type', '')))})"
                           f"{lines}<div><b>thinking:</b> {think}</div>{_KEY_HTML}"
                           f"<details><summary>raw completion</summary><pre style='white-space:pre-wrap'>{raw}</pre>"
                           "</details></div>")
        self.count.value = count  # last: once the count reads right, the picture and the text are this row's


def browse(records: Sequence[dict], images, max_side: int = 520):
    """The ipywidgets widget of a `PredictionBrowser` over `records` (display it in a notebook)."""
    return PredictionBrowser(records, images, max_side).widget


def stage_counts(stages: dict[str, Sequence], by: Sequence[str] = ("platform", "gt_action"),
                 rates: Sequence[float] | None = None) -> plt.Figure:
    """Rows per group (`by` fields of each sample) at each curation stage as grouped bars, and,
    when `rates` are given, the histogram of difficulty success rates beside them."""
    from collections import Counter

    counts = {name: Counter("/".join(str(getattr(s, f) or "unknown") for f in by) for s in samples)
              for name, samples in stages.items()}
    groups = sorted(set().union(*counts.values())) or ["(none)"]
    panels = 2 if rates is not None else 1
    width_in = max(6.0, 0.9 * len(groups) + 2) + 4 * (panels - 1)
    with _readable(width_in):
        fig, axes = plt.subplots(1, panels, figsize=(width_in, 4.2), squeeze=False, layout="constrained",
                                 gridspec_kw={"width_ratios": [3, 1][:panels]})
        _stage_bars(axes[0, 0], counts, groups, by)
        if rates is not None:
            ax = axes[0, 1]
            ax.hist(list(rates), bins=[i / 10 for i in range(11)], color="0.4", edgecolor="white")
            ax.set_xlabel("success rate of k samples")
            ax.set_ylabel("curated rows")
            ax.set_title("difficulty")
    return fig


def _stage_bars(ax, counts: dict, groups: list[str], by: Sequence[str]) -> None:
    width = 0.8 / max(1, len(counts))
    for i, (name, c) in enumerate(counts.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [c.get(g, 0) for g in groups], width, label=f"{name} ({sum(c.values())})")
    ax.set_xticks([g + width * (len(counts) - 1) / 2 for g in range(len(groups))], groups, rotation=30, ha="right")
    ax.set_ylabel("rows")
    sizes = [v for c in counts.values() for v in c.values() if v]
    if sizes and max(sizes) > 20 * min(sizes):
        ax.set_yscale("log")  # a big group must not flatten the small ones
        ax.set_ylabel("rows (log scale)")
    ax.set_title("rows per " + " / ".join(by) + " at each stage")
    ax.legend(title="stage (rows)")


def miniature_bars(result: dict, arms: Sequence[str] = ("random", "sft", "sft_grpo"),
                   metrics: Sequence[str] = ("format_rate", "click_accuracy", "strict_step_success")):
    """The miniature's table as bars: per metric, each arm's mean over seeds with every seed's value
    as a dot and, where the result has one (`stats`, click accuracy), its 95 % bootstrap interval
    (seeds, then held-out episodes, drawn) as a whisker; beside them the gain of SFT → GRPO over SFT
    with its interval (`miniature.run_miniature`'s result, or the arms alone as
    `miniature.arm_results` gives them, plus `seeds`)."""
    stats = result.get("stats") or {}
    gain = stats.get("gain")
    width_in = 2.4 + 1.9 * len(metrics) + (3.4 if gain else 0.0)
    with _readable(width_in):
        fig, axes = plt.subplots(1, 2 if gain else 1, figsize=(width_in, 4.2), layout="constrained", squeeze=False,
                                 width_ratios=[len(metrics), 1.8] if gain else None)
        _arm_bars(axes[0, 0], result, arms, metrics, stats.get("arms") or {})
        if gain:
            _gain_bars(axes[0, 1], gain, stats)
    return fig


def _arm_bars(ax, result: dict, arms: Sequence[str], metrics: Sequence[str], intervals: dict) -> None:
    width = 0.8 / len(arms)
    for j, arm in enumerate(arms):
        xs = [i + (j - (len(arms) - 1) / 2) * width for i in range(len(metrics))]
        means = [100 * result[arm][m]["mean"] for m in metrics]
        ax.bar(xs, means, width, label=arm)
        for x, m in zip(xs, metrics, strict=True):
            seeds = result[arm][m]["per_seed"]
            ax.scatter([x] * len(seeds), [100 * v for v in seeds], s=10, color="black", zorder=3)
            _whisker(ax, x, ((intervals.get(arm) or {}).get(m) or {}).get("ci95"))
    ax.scatter([], [], s=10, color="black", label="one seed")
    ax.set_xticks(range(len(metrics)), [m.replace("_", " ") for m in metrics])
    ax.set_ylabel("% of held-out rows")
    ax.set_ylim(0, 118)  # room above the 100 % bars for the legend, which would hide them
    ax.set_yticks(range(0, 101, 20))
    ax.legend(loc="upper center", ncol=len(arms) + 1, columnspacing=1.0, handletextpad=0.4)
    seeds = len(result.get("seeds") or [])
    ax.set_title(f"held-out rows, mean over {seeds} seeds" + ("; whisker: 95 % interval" if intervals else ""))


def _whisker(ax, x: float, ci: Sequence[float] | None) -> None:
    """An interval (fractions, drawn in %) as a capped whisker at `x`."""
    if ci:
        lo, hi = 100 * ci[0], 100 * ci[1]
        ax.errorbar([x], [(lo + hi) / 2], yerr=[(hi - lo) / 2], fmt="none", color="black", capsize=4, linewidth=1.2,
                    zorder=4)


def _gain_bars(ax, gain: dict, stats: dict) -> None:
    """The gain's bars: click accuracy on all rows and on parsed rows and, when both arms played in
    the live page, closed-loop success (paired on the pages), each with its seeds and interval."""
    labels = {"click_accuracy": "click,\nall rows", "click_accuracy_parsed": "click,\nparsed rows"}
    shown = [(labels[k], gain[k]) for k in labels if (gain.get(k) or {}).get("mean") is not None]
    if (stats.get("online_gain") or {}).get("mean") is not None:
        shown.append(("closed\nloop", stats["online_gain"]))
    for i, (_, g) in enumerate(shown):
        mean = 100 * g["mean"]
        ax.bar([i], [mean], 0.6, color=_rgb(HIT_COLOR if mean >= 0 else MISS_COLOR))
        seeds = [100 * v for v in g["per_seed"] if v is not None]
        ax.scatter([i] * len(seeds), seeds, s=10, color="black", zorder=3)
        _whisker(ax, i, g.get("ci95"))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(shown)), [label for label, _ in shown])
    ax.set_xlim(-0.7, len(shown) - 0.3)
    ax.set_ylabel("gain, points")
    ax.set_title(f"{stats.get('arm', 'sft_grpo')} − {stats.get('vs', 'sft')}")


def save_figure_atomic(fig, path: str | Path, dpi: int = 80) -> Path:
    """Save `fig` through a temporary file and a rename, so a reader (or a kill mid-write, as a
    picture redrawn while training runs risks) never meets a half-written image."""
    import os

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        fig.savefig(tmp, dpi=dpi, format=p.suffix.lstrip(".") or "png")
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p


class LiveCurves:
    """Training curves redrawn while a run trains: pass `callback()` to `training.train(cfg,
    callbacks=[...])` (or anything that takes TrainerCallbacks). On each log, at most every
    `every` seconds and once more at the end, it reads `<output_dir>/metrics.jsonl` (the main
    process writes it first) and replaces the figure shown in the notebook; without IPython it
    only keeps the latest figure in `self.figure` (and saves it to `save_to` when given)."""

    def __init__(self, keys: Sequence[str] | None = None, every: float = 5.0, smooth: int = 0,
                 save_to: str | None = None):
        self.keys, self.every, self.smooth, self.save_to = keys, every, smooth, save_to
        self.figure = None
        self.draws = 0
        self._last = float("-inf")
        self._handle = None

    def draw(self, metrics_path: str | Path) -> None:
        """Redraw the curves from `metrics_path` (nothing while the file does not exist yet)."""
        import time

        if not Path(metrics_path).exists():
            return
        fig = training_curves(metrics_path, keys=self.keys, smooth=self.smooth)
        fig.suptitle(f"{Path(metrics_path).parent.name}: step {(read_log(metrics_path) or [{}])[-1].get('step', 0)}",
                     fontsize=readable_points(fig.get_figwidth()))
        if self.save_to:
            save_figure_atomic(fig, self.save_to)
        try:
            from IPython import get_ipython
            from IPython.display import display

            if get_ipython() is not None:
                if self._handle is None:
                    self._handle = display(fig, display_id=True)
                else:
                    self._handle.update(fig)
        except ImportError:
            pass
        if self.figure is not None:
            plt.close(self.figure)
        self.figure = fig
        self.draws += 1
        self._last = time.monotonic()

    def callback(self):
        """A `transformers.TrainerCallback` that calls `draw` (main process only)."""
        import time

        from transformers import TrainerCallback

        live = self

        class _Live(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):
                if state.is_world_process_zero and time.monotonic() - live._last >= live.every:
                    live.draw(Path(args.output_dir) / "metrics.jsonl")

            def on_train_end(self, args, state, control, **kw):
                if state.is_world_process_zero:
                    live.draw(Path(args.output_dir) / "metrics.jsonl")
                    live._handle = None  # the next run gets its own figure

        return _Live()


def episode_strip(records: Sequence[dict], images, cols: int = 5, width: float = 2.6, title: str | None = None):
    """One online episode as a strip of its screenshots, in step order: on each, the scripted target
    box and the predicted click (filled circle: hit, cross: miss, crosshair: no ground truth at that
    step), under a caption of the step's answer and what the page did. `images` is the run folder
    (records name their `screenshot` file in it), a mapping of record id to image, or a function of
    the record. Returns the figure (titled by task, seed, instruction and outcome unless `title`)."""
    records = sorted(records, key=lambda r: r.get("step", 0))
    if not records:
        raise ValueError("no step records: pass the records of one episode (an online run's steps.jsonl)")
    folder = Path(images) if isinstance(images, (str, Path)) else None
    pictures = [Image.open(folder / r["screenshot"]).convert("RGB") if folder else _image_for(images, r)
                for r in records]
    n = len(records)
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    fig_w = max(width * cols, 6.5)  # room for the title and legend even under one screenshot
    size = readable_points(fig_w)
    wrap = _chars_per_line(fig_w / cols, size)
    captions = [[x for line in _strip_caption(r) for x in _wrap_lines(line, wrap, 2)][:5] for r in records]
    lines = max(map(len, captions))
    head = _wrap_lines(title if title is not None else _strip_title(records), _chars_per_line(fig_w, size), 3)
    with _readable(fig_w):
        fig, axes = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                                 figsize=(fig_w, _cell_height(pictures, min(width, fig_w / cols), fig_w, lines) * rows
                                          + _legend_height(fig_w) + len(head) * size * 1.4 / 72))
        for ax in axes.flat:
            ax.axis("off")
        for ax, rec, im, caption in zip(axes.flat, records, pictures, captions, strict=False):
            _strip_panel(ax, rec, im, size)
            ax.set_title("\n".join(caption), fontsize=size, loc="left")
        fig.suptitle("\n".join(head), fontsize=size)
        unknown = Line2D([], [], **_unknown_style(size), label="click, no scripted step to check")
        fig.legend(handles=[*legend_handles(size), unknown], loc="outside lower center", ncols=2, frameon=False,
                   title="positions in screenshot pixels", columnspacing=1.2, handletextpad=0.4)
    return fig


def _strip_panel(ax, record: dict, image: Image.Image, size: float) -> None:
    """A screenshot framed in grey (the page is mostly white), its target box and the click."""
    ax.axis("on")
    ax.imshow(image)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_edgecolor("0.6")
    ax.set_anchor("N")
    if record.get("gt_action") is not None:
        _mark(ax, record)
    elif _shown_point(record) is not None:
        ax.plot(*map(float, _shown_point(record)), **_unknown_style(size), clip_on=False)


def _unknown_style(size: float) -> dict:
    return {"marker": "P", "ms": 1.3 * size, "mfc": _rgb(UNKNOWN_COLOR), "mec": "white", "mew": size / 8, "ls": "none"}


def _strip_caption(record: dict) -> list[str]:
    """A strip panel's caption: step and outcome, the answer (point in screenshot pixels), the page's state."""
    if record.get("gt_action") is None:
        outcome = "? no scripted step"
    else:
        outcome = "✓ hit" if _outcome(record)["hit"] else "✗ miss"
    lines = [f"step {record.get('step', 0) + 1} · {outcome}"]
    if record.get("failed"):
        lines.append(f"unparsable: {record['failed']}")
    else:
        answer = str(record.get("pred_action"))
        if _shown_point(record) is not None:
            answer += f" {_fmt_point(record.get('pred_coord'))}"
        if record.get("pred_input_text") not in (None, "no input text"):
            answer += f" {record['pred_input_text']!r}"
        lines.append(answer)
    if record.get("done"):
        lines.append(f"page: done, reward {float(record.get('raw_reward', 0)):g}")
    return lines


def _strip_title(records: Sequence[dict]) -> str:
    last = records[-1]
    solved = bool(last.get("done")) and float(last.get("raw_reward", 0)) >= 1.0
    outcome = (f"solved in {len(records)} step{'s' if len(records) > 1 else ''}" if solved
               else f"not solved (page reward {float(last.get('raw_reward', 0)):g}"
                    f"{'' if last.get('done') else ', not done'})")
    return f"{last.get('task', '')} · seed {last.get('seed', '')} · {outcome}\n{last.get('instruction', '')}"
