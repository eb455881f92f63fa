"""GUI-R1's rule-based rewards as pure functions, and their TRL-facing wrappers.

`compat="official"` reproduces the original exactly (spec §3); `"strict"` is the corrected variant
(spec §4). `REWARDS` maps stable names to TRL reward functions `fn(completions, **columns) -> list`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .actions import (
    OFFICIAL_REWARD_POINT_ACTIONS,
    OFFICIAL_REWARD_TEXT_ACTIONS,
    POINT_ACTIONS,
    TEXT_ACTIONS,
    Action,
    Compat,
    check_compat,
    parse_completion,
)
from .geometry import as_float, box_center, point_in_box, within_distance

FORMAT_WEIGHT = 0.2
ACCURACY_WEIGHT = 0.8
#: The original's tolerance for a ground-truth point (2-value `gt_bbox`), in pixels.
POINT_RADIUS_PX = 140.0

RewardFn = Callable[..., list]


def text_f1(pred: str, gt: str) -> float:
    """The original's text F1 (spec §3, "Text F1"): `[`/`]` dropped, lower-cased, whitespace
    tokens as sets; one token each and one a substring of the other gives 1."""
    p = set(str(pred).replace("[", "").replace("]", "").lower().split())
    g = set(str(gt).replace("[", "").replace("]", "").lower().split())
    if len(p) == 1 and len(g) == 1:
        (a,), (b,) = p, g
        if a in b or b in a:
            return 1.0
    common = len(p & g)
    precision = common / len(p) if p else 0.0
    recall = common / len(g) if g else 0.0
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _point_hits(point: Sequence[float], gt_bbox: Sequence[float], inclusive: bool) -> bool:
    """Inside a 4-value box, or within `POINT_RADIUS_PX` of a 2-value point."""
    if len(gt_bbox) == 4:
        return point_in_box(point, gt_bbox, inclusive=inclusive)
    if len(gt_bbox) == 2:
        return within_distance(point, gt_bbox, POINT_RADIUS_PX)
    return False


def _official_accuracy(pred: Action, gt_action: str, gt_bbox: Sequence[float], gt_input_text: str) -> float:
    """Spec §3 accuracy on the original's pattern reading `pred` (`actions.official_prediction`)."""
    try:
        gt = gt_action.lower()
        if pred.action.lower() != gt:
            return 0.0
        if gt in OFFICIAL_REWARD_POINT_ACTIONS:
            return 1.0 if _point_hits(pred.point, gt_bbox, inclusive=False) else 0.0
        if gt in OFFICIAL_REWARD_TEXT_ACTIONS:
            return 1.0 if text_f1(pred.input_text, gt_input_text) >= 0.5 else 0.0
        return 1.0
    except Exception:  # noqa: BLE001 - the original scores any error as 0
        return 0.0


def _strict_accuracy(pred: Action | None, gt_action: str, gt_bbox: Sequence[float], gt_input_text: str) -> float:
    if pred is None:
        return 0.0
    try:
        gt = str(gt_action).strip().lower()
        if pred.action != gt:
            return 0.0
        if gt in POINT_ACTIONS:
            return 1.0 if _point_hits(pred.point, gt_bbox, inclusive=True) else 0.0
        if gt in TEXT_ACTIONS:
            return 1.0 if text_f1(pred.input_text, gt_input_text) >= 0.5 else 0.0
        return 1.0
    except (TypeError, ValueError, ArithmeticError):  # a malformed ground truth scores 0
        return 0.0


def gui_r1_score(completion: str, gt_action: str, gt_bbox: Sequence[float], gt_input_text: str,
                 compat: Compat = "official") -> dict[str, float]:
    """Format (0/1), accuracy (0/1) and overall = 0.8·accuracy + 0.2·format for one completion.
    `gt_bbox` is in the same pixel frame as the completion's coordinates (2 or 4 values)."""
    check_compat(compat)
    parsed = parse_completion(completion, compat)
    fmt = 1.0 if parsed.format_ok else 0.0
    if compat == "official":
        acc = _official_accuracy(parsed.prediction, gt_action, gt_bbox, gt_input_text)
    else:
        acc = _strict_accuracy(parsed.prediction, gt_action, gt_bbox, gt_input_text)
    return {"format": fmt, "accuracy": acc, "overall": ACCURACY_WEIGHT * acc + FORMAT_WEIGHT * fmt}


# --- dense point rewards (options, never the default) -----------------------------------------


def _finite_box(gt_bbox: Any) -> list[float] | None:
    """`gt_bbox` as 2 or 4 finite floats, or None (a bad ground truth scores 0)."""
    try:
        box = [as_float(v) for v in gt_bbox]
    except (TypeError, ValueError):
        return None
    return box if len(box) in (2, 4) and all(math.isfinite(v) for v in box) else None


def _unit(score: float) -> float:
    """`score` clipped to [0, 1], NaN as 0: a point at ±inf, or a box whose centre or size overflows,
    makes inf - inf somewhere, and a reward must stay a finite float."""
    return min(1.0, max(0.0, score)) if not math.isnan(score) else 0.0


def _dense_point_score(completion: str, gt_action: str, gt_bbox: Any, compat: Compat,
                       shape: Callable[[tuple[float, float], list[float]], float]) -> float | None:
    """`shape(point, target)` clipped to [0, 1]; None when the ground truth has no target point.
    0 unless the completion meets the format, predicts the ground-truth action and a point was read:
    otherwise the official reading's (0, 0) default would pay garbage near the top-left corner."""
    gt = str(gt_action).strip().lower()
    if gt not in POINT_ACTIONS:
        return None
    parsed = parse_completion(completion, compat)
    pred = parsed.prediction
    point = None
    if parsed.format_ok and parsed.point_read and pred is not None and pred.action.lower() == gt:
        point = as_float(pred.point[0]), as_float(pred.point[1])  # 10**400 is inf, not an OverflowError
    box = _finite_box(gt_bbox)
    if point is None or box is None:
        return 0.0
    return _unit(shape(point, box))


def point_distance_score(completion: str, gt_action: str, gt_bbox: Sequence[float],
                         compat: Compat = "official", radius: float = POINT_RADIUS_PX) -> float | None:
    """Distance-shaped point reward: 1 inside the box (or on the point), falling linearly to 0 at
    `radius` pixels from it (see `_dense_point_score` for 0 and None)."""

    def shape(p: tuple[float, float], box: list[float]) -> float:
        if len(box) == 4:
            dx = max(box[0] - p[0], 0.0, p[0] - box[2])
            dy = max(box[1] - p[1], 0.0, p[1] - box[3])
        else:
            dx, dy = p[0] - box[0], p[1] - box[1]
        return 1.0 - math.hypot(dx, dy) / radius

    return _dense_point_score(completion, gt_action, gt_bbox, compat, shape)


def point_gaussian_score(completion: str, gt_action: str, gt_bbox: Sequence[float],
                         compat: Compat = "official", sigma_scale: float = 0.5,
                         point_sigma: float = POINT_RADIUS_PX / 2) -> float | None:
    """Gaussian point reward (as in GUI-G²): exp(-½((x-cx)²/σx² + (y-cy)²/σy²)) around the box
    centre with σ = `sigma_scale` × box width/height (`point_sigma` pixels for a 2-value target)."""

    def shape(p: tuple[float, float], box: list[float]) -> float:
        if len(box) == 4:
            cx, cy = box_center(box)
            sx = max(abs(box[2] - box[0]) * sigma_scale, 1e-6)
            sy = max(abs(box[3] - box[1]) * sigma_scale, 1e-6)
        else:
            cx, cy, sx, sy = box[0], box[1], point_sigma, point_sigma
        zx, zy = (p[0] - cx) / sx, (p[1] - cy) / sy
        return math.exp(-0.5 * (zx * zx + zy * zy))  # products saturate to inf where `** 2` raises

    return _dense_point_score(completion, gt_action, gt_bbox, compat, shape)


# --- TRL-facing ---------------------------------------------------------------------------------


def completion_text(completion: Any) -> str:
    """A TRL completion as text: a string, or a chat list whose last message's content is a string
    or a list of `{"type": "text", "text": ...}` parts. Anything else reads as "": what a policy
    wrote is data, it scores 0 and never stops a training run."""
    if isinstance(completion, str):
        return completion
    if not (isinstance(completion, list) and completion and isinstance(completion[-1], dict)):
        return ""
    content = completion[-1].get("content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content
                       if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""


def _columns(n: int, name: str, values: Any) -> list:
    if values is None:
        raise KeyError(f"reward needs the dataset column {name!r}; pass rows made by gui_r1_lite.data")
    values = list(values)
    if len(values) != n:
        raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
    return values


def _box_list(value: Any) -> list:
    """A ground-truth box cell as a list; one that is not a sequence becomes [] (scores 0)."""
    if isinstance(value, (str, bytes)) or value is None:
        return []
    try:
        return list(value)
    except TypeError:
        return []


def make_reward(name: str, compat: Compat = "official", **options: Any) -> RewardFn:
    """The TRL reward function of one registered reward, named `name` (TRL logs `rewards/<name>/mean`)."""
    check_compat(compat)
    if name not in _SCORERS:
        raise KeyError(f"unknown reward {name!r}; registered: {sorted(_SCORERS)}")
    scorer = _SCORERS[name]

    def reward(completions: list, gt_action: Sequence[str] | None = None, gt_bbox: Sequence | None = None,
               gt_input_text: Sequence[str] | None = None, **_: Any) -> list:
        n = len(completions)
        actions = _columns(n, "gt_action", gt_action)
        boxes = _columns(n, "gt_bbox", gt_bbox)
        texts = _columns(n, "gt_input_text", gt_input_text)
        return [scorer(completion_text(c), a, _box_list(b), t, compat, **options)
                for c, a, b, t in zip(completions, actions, boxes, texts, strict=True)]

    reward.__name__ = reward.__qualname__ = name
    reward.__doc__ = f"TRL reward {name!r} (compat={compat!r}). " + (scorer.__doc__ or "")
    return reward


def _format(c, a, b, t, compat, **_):
    """1 when the completion meets the answer format, else 0."""
    return gui_r1_score(c, a, b, t, compat)["format"]


def _accuracy(c, a, b, t, compat, **_):
    """1 when the action (and its point or text) is right, else 0."""
    return gui_r1_score(c, a, b, t, compat)["accuracy"]


def _overall(c, a, b, t, compat, **_):
    """0.8·accuracy + 0.2·format, the GUI-R1 reward."""
    return gui_r1_score(c, a, b, t, compat)["overall"]


def _distance(c, a, b, t, compat, **options):
    """Distance-shaped point reward (None for rows without a target point)."""
    return point_distance_score(c, a, b, compat, **options)


def _gaussian(c, a, b, t, compat, **options):
    """Gaussian point reward around the box centre (None for rows without a target point)."""
    return point_gaussian_score(c, a, b, compat, **options)


_SCORERS: dict[str, Callable[..., float | None]] = {
    "format": _format,
    "accuracy": _accuracy,
    "gui_r1": _overall,
    "point_distance": _distance,
    "point_gaussian": _gaussian,
}

#: Registered TRL reward functions by name (official compat); `make_reward` builds other variants.
REWARDS: dict[str, RewardFn] = {name: make_reward(name) for name in _SCORERS}

#: Rewards a GRPO run logs beside those it learns from (`build_rewards(..., monitor=True)`), with weight 0.
MONITORS: tuple[str, ...] = ("format", "accuracy")


def build_rewards(weights: dict[str, float], compat: Compat = "official",
                  monitor: bool = False) -> tuple[list[RewardFn], list[float]]:
    """TRL's `reward_funcs` and `GRPOConfig.reward_weights` from a recipe's `{name: weight}`.
    `monitor` adds each of `MONITORS` not named, with weight 0: TRL logs it, but learns nothing from
    it (`watched` keeps the rows TRL cannot score unscorable)."""
    if not weights:
        raise ValueError("at least one reward is needed, e.g. {'gui_r1': 1.0}")
    learning = [make_reward(name, compat) for name in weights]
    funcs, out = list(learning), [float(w) for w in weights.values()]
    if monitor:
        for name in MONITORS:
            if name not in weights:
                funcs.append(watched(make_reward(name, compat), learning))
                out.append(0.0)
    return funcs, out


def watched(reward: RewardFn, learning: Sequence[RewardFn]) -> RewardFn:
    """`reward`, None where every `learning` reward is None. TRL gives a completion no reward scores
    no advantage, but one that any reward scores (even with weight 0) a reward of 0 and an advantage;
    so a watched column scores only where the learning rewards do, and training is unchanged."""

    def watch(completions: list, **columns: Any) -> list:
        values = reward(completions, **columns)
        scored = [any(v is not None for v in row)
                  for row in zip(*(f(completions, **columns) for f in learning), strict=True)]
        return [v if s else None for v, s in zip(values, scored, strict=True)]

    watch.__name__ = watch.__qualname__ = reward.__name__
    watch.__doc__ = f"{reward.__name__}, watched (weight 0) beside {[f.__name__ for f in learning]}."
    return watch


def group_advantages(rewards: Sequence[float], group_size: int, scale: bool = True) -> list[float]:
    """GRPO's advantages for consecutive groups of `group_size` completions of one prompt: each
    reward minus its group's mean, divided by the group's (unbiased) std + 1e-4 when `scale`
    (TRL's `scale_rewards="group"`, its default). A group whose rewards are all equal gets zeros:
    its prompt contributes no policy gradient, only the KL term. Shown in notebook 04; training
    itself uses TRL's own computation."""
    if group_size < 2 or len(rewards) % group_size:
        raise ValueError(f"need groups of at least 2 and len(rewards) divisible by group_size, "
                         f"got {len(rewards)} rewards and group_size {group_size}")
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        group = [float(r) for r in rewards[start:start + group_size]]
        mean = sum(group) / group_size
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (group_size - 1))
        out += [(r - mean) / (std + 1e-4) if scale else r - mean for r in group]
    return out
