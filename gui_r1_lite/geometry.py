"""Points, boxes and a screenshot's three pixel frames: normalised [0, 1], the model's (as the
Qwen2.5-VL processor resizes the image) and the stored image's. Plain arithmetic, no actions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: GUI-R1's marker for "no target" (what it stores as `gt_bbox` and answers as `point` for type, scroll, ...).
NO_POINT: tuple[int, int] = (-100, -100)

#: GUI-R1's training resolution bounds for the Qwen2.5-VL processor.
GUI_R1_MIN_PIXELS = 262_144
GUI_R1_MAX_PIXELS = 1_258_291
QWEN_FACTOR = 28  # patch 14 x spatial merge 2


def as_float(v: object) -> float:
    """`float(v)`, except that an integer beyond float range becomes ±inf instead of raising
    OverflowError: a policy can write `10**400` as a coordinate, and it is as far off as inf."""
    try:
        return float(v)  # type: ignore[arg-type]
    except OverflowError:
        return math.inf if v > 0 else -math.inf  # type: ignore[operator]


def is_finite_number(v: object) -> bool:
    """An int or float (not a bool), finite as a float (an integer beyond float range is no pixel)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(as_float(v))


def is_no_target(box: Sequence[float]) -> bool:
    return len(box) == 2 and tuple(box) == NO_POINT


def has_target(box: Sequence[float]) -> bool:
    """A 4-value box (x1, y1, x2, y2) or a 2-value point other than [-100, -100]."""
    return len(box) in (2, 4) and not is_no_target(box)


def box_center(box: Sequence[float]) -> tuple[float, float]:
    return (as_float(box[0]) + as_float(box[2])) / 2, (as_float(box[1]) + as_float(box[3])) / 2


def target_point(gt_bbox: Sequence[float]) -> tuple[float, float] | None:
    """The centre of a 4-value box, a 2-value point itself, or None when there is no target."""
    box = [as_float(v) for v in gt_bbox]
    if len(box) == 4:
        return box_center(box)
    if has_target(box):
        return box[0], box[1]
    return None


def point_in_box(point: Sequence[float], box: Sequence[float], *, inclusive: bool) -> bool:
    """Whether `point` lies in the 4-value `box`; edges count only when `inclusive` (the original's
    ScreenSpot metric and click reward are strict)."""
    x, y = as_float(point[0]), as_float(point[1])
    x1, y1, x2, y2 = (as_float(v) for v in box)
    if inclusive:
        return x1 <= x <= x2 and y1 <= y <= y2
    return x1 < x < x2 and y1 < y < y2


def within_distance(point: Sequence[float], target: Sequence[float], radius: float) -> bool:
    """Squared pixel distance below `radius`² (the original's test for a 2-value point). An offset of
    `radius` or more on one axis (or NaN) answers False before squaring, so a far point cannot overflow."""
    dx = as_float(point[0]) - as_float(target[0])
    dy = as_float(point[1]) - as_float(target[1])
    if not (abs(dx) < radius and abs(dy) < radius):
        return False
    return dx**2 + dy**2 < radius**2


def within_normalised_distance(point: Sequence[float], target: Sequence[float], image_size: Sequence[float],
                               radius: float) -> bool:
    """((tx-px)/W)² + ((ty-py)/H)² < radius²: the original GR metric's distance in image widths and heights."""
    w, h = float(image_size[0]), float(image_size[1])
    dx = (as_float(target[0]) - as_float(point[0])) / w
    dy = (as_float(target[1]) - as_float(point[1])) / h
    return dx * dx + dy * dy < radius * radius  # float products saturate to inf; `**` would raise


def model_image_size(width: int, height: int, min_pixels: int = GUI_R1_MIN_PIXELS,
                     max_pixels: int = GUI_R1_MAX_PIXELS, factor: int = QWEN_FACTOR) -> tuple[int, int]:
    """(width, height) as the Qwen2.5-VL processor resizes an image (transformers' `smart_resize`)."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    h, w = smart_resize(int(height), int(width), factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)
    return int(w), int(h)


def _check_size(size: Sequence[float], what: str) -> tuple[float, float]:
    if len(size) != 2 or not all(is_finite_number(v) and v > 0 for v in size):
        raise ValueError(f"{what} must be (width, height) with positive values, got {size!r}")
    return float(size[0]), float(size[1])


def _scale(coords: Sequence[float], sx: float, sy: float) -> list[float]:
    if len(coords) not in (2, 4):
        raise ValueError(f"coordinates must be a point (x, y) or a box (x1, y1, x2, y2), got {list(coords)!r}")
    return [as_float(v) * (sx if i % 2 == 0 else sy) for i, v in enumerate(coords)]  # 10**400 -> inf, no raise


def normalized_to_pixels(coords: Sequence[float], size: Sequence[float]) -> list[float]:
    """[0, 1] coordinates (point or box) -> pixels of an image of `size` (width, height)."""
    w, h = _check_size(size, "size")
    return _scale(coords, w, h)


def pixels_to_normalized(coords: Sequence[float], size: Sequence[float]) -> list[float]:
    """Pixels of an image of `size` (width, height) -> [0, 1] coordinates."""
    w, h = _check_size(size, "size")
    return _scale(coords, 1.0 / w, 1.0 / h)


def rescale_pixels(coords: Sequence[float], from_size: Sequence[float], to_size: Sequence[float]) -> list[float]:
    """Pixels of one frame -> another's (model <-> stored image), as the original evaluation maps predictions back."""
    fw, fh = _check_size(from_size, "from_size")
    tw, th = _check_size(to_size, "to_size")
    return _scale(coords, tw / fw, th / fh)
