"""Drawing on a screenshot with PIL (the target box and the predicted click), and reading a prediction
record (`evaluate.predict`'s, points in stored-image pixels) for a picture.

`images` gives a record's screenshot: a callable `record -> PIL image`, or a mapping record id -> PIL
image or `data.Sample` (e.g. `evaluate.samples_by_id(data)`)."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageDraw

from ..geometry import NO_POINT, as_float, has_target
from .style import GT_COLOR, HIT_COLOR, MISS_COLOR, UNKNOWN_COLOR, fmt_point


def draw_step(image: Image.Image, gt_bbox: Sequence[float] | None = None, point: Sequence[float] | None = None,
              hit: bool | None = None, label: str | None = None) -> Image.Image:
    """A copy of `image` with the target box (a 2-value target: a ring) and the predicted point: a filled
    circle when `hit`, a cross when not, a crosshair when unknown, sized in `image`'s pixels."""
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
        # a point far off the image (1e308) is drawn at its nearest edge: PIL's coordinates overflow
        x, y = (min(max(as_float(v), -10.0 * side), 11.0 * side) for v, side in zip(point, out.size, strict=True))
        if x == x and y == y:  # not NaN
            _draw_point(d, (x, y), hit, scale)
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


def thinking_text(completion: str) -> str:
    """The text between the first `<think>` and the next `</think>` ('' without both)."""
    start = completion.find("<think>")
    end = completion.find("</think>", start + 7) if start >= 0 else -1
    return completion[start + 7:end].strip() if start >= 0 and end >= 0 else ""


def image_for(images, record: dict) -> Image.Image:
    value = images(record) if callable(images) else images[record["id"]]
    if hasattr(value, "image") and callable(value.image):  # a data.Sample
        value = value.image()
    return value


def outcome(record: dict) -> dict:
    from ..metrics import record_outcome

    return record_outcome(record)


def record_task(record: dict) -> str | None:
    """A record's `task` field (online steps), else the task of a MiniWoB++ row id
    `miniwob/<task>/seed<N>/step<k>`; None for neither."""
    if record.get("task"):
        return str(record["task"])
    parts = str(record.get("id", "")).split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "miniwob" else None


def describe(record: dict) -> list[str]:
    """Lines that say what a record is: instruction, ground truth, parsed answer, outcome."""
    o = outcome(record)
    gt = f"gt: {record['gt_action']} {[round(float(v)) for v in record['gt_bbox']]}"
    if record.get("gt_input_text") not in (None, "no input text"):
        gt += f" {record['gt_input_text']!r}"
    if record.get("pred_action") is None:
        pred = "pred: (nothing read)"
    else:
        pred = f"pred: {record['pred_action']} {fmt_point(record.get('pred_coord'))}"
        if record.get("pred_input_text") not in (None, "no input text"):
            pred += f" {record['pred_input_text']!r}"
    lines = [("HIT " if o["hit"] else "MISS ") + str(record.get("instruction", "")), gt, pred]
    if record.get("parse_error"):
        lines.append(f"format: {record['parse_error']}")
    return lines


def prediction_image(record: dict, image: Image.Image) -> Image.Image:
    return draw_step(image, record.get("gt_bbox"), shown_point(record), hit=bool(outcome(record)["hit"]))


def shown_point(record: dict):
    """The predicted point, where one counts: the original's reading gives (0, 0) to an answer
    without a point, which is no click anyone made."""
    from ..actions import POINT_ACTIONS

    box = record.get("gt_bbox")
    counts = record.get("pred_action") in POINT_ACTIONS or (box is not None and has_target(box))
    point = record.get("pred_coord") if counts else None
    return None if point is None or tuple(point) == NO_POINT else point


def off_image(point, size: Sequence[int] | None) -> bool:
    """Whether `point` lies outside an image of `size` = (width, height) (NaN included)."""
    if point is None or size is None:
        return False
    x, y = as_float(point[0]), as_float(point[1])
    return not (0 <= x <= size[0] and 0 <= y <= size[1])


def card_title(record: dict, prefix: str = "", image_size: Sequence[int] | None = None) -> list[str]:
    """A card's short caption: outcome, task and instruction, the wanted action where the picture
    cannot show it, and the parsed answer (`answer_text`). The rest is in `describe`."""
    from ..actions import POINT_ACTIONS

    hit = bool(outcome(record)["hit"])
    task = record_task(record)
    lines = [f"{prefix}{'✓ HIT' if hit else '✗ MISS'} · {f'{task}: ' if task else ''}{record.get('instruction', '')}"]
    text = record.get("gt_input_text")
    text = None if text == "no input text" else text
    if record.get("gt_action") not in POINT_ACTIONS or text is not None:
        lines.append(f"want: {record.get('gt_action')}" + (f" {text!r}" if text is not None else ""))
    if record.get("pred_action") is None:
        lines.append("answer: nothing read" + (f" ({record['parse_error']})" if record.get("parse_error") else ""))
    else:
        lines.append(f"answer: {answer_text(record, image_size)}")
    return lines


def answer_text(record: dict, image_size: Sequence[int] | None = None, at: str = " at ") -> str:
    """The action, its point in original screenshot pixels (said to be off the screenshot when it is,
    given `image_size`) and its text."""
    answer = str(record.get("pred_action"))
    point = shown_point(record)
    if point is not None:
        answer += f"{at}{fmt_point(point)}" + (", off the screenshot" if off_image(point, image_size) else "")
    if record.get("pred_input_text") not in (None, "", "no input text"):
        answer += f" {record['pred_input_text']!r}"
    return answer
