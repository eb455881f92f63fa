"""One validated step (`Sample`) and what training and evaluation make of it: the screenshot resized
as the processor would, the ground truth in that frame, TRL's conversational rows and evaluation rows.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from PIL import Image

from .geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS, NO_POINT, has_target, model_image_size, rescale_pixels
from .prompts import build_messages


@dataclass(frozen=True)
class Sample:
    """One validated step; `gt_bbox` is in stored-image pixels whatever the schema ([-100, -100]: no target)."""

    id: str
    image_bytes: bytes
    image_size: tuple[int, int]
    instruction: str
    history: str
    gt_action: str
    gt_bbox: tuple[float, ...]
    gt_input_text: str
    task_type: str = "high"
    group: str | None = None
    ui_type: str | None = None
    platform: str | None = None
    space: str = "high"
    schema: str = "train"
    source: str = ""
    row: int = -1
    extras: dict = field(default_factory=dict, compare=False)

    def image(self) -> Image.Image:
        return Image.open(io.BytesIO(self.image_bytes)).convert("RGB")

    @property
    def has_target(self) -> bool:
        return has_target(self.gt_bbox)


def model_view(sample: Sample, min_pixels: int = GUI_R1_MIN_PIXELS,
               max_pixels: int = GUI_R1_MAX_PIXELS) -> tuple[Image.Image, tuple[int, int]]:
    """The screenshot resized exactly as the Qwen2.5-VL processor would (so it resizes no further and the
    model's pixel frame is the image's), and that size."""
    size = model_image_size(*sample.image_size, min_pixels=min_pixels, max_pixels=max_pixels)
    image = sample.image()
    if image.size != size:
        image = image.resize(size, Image.Resampling.BICUBIC)
    return image, size


def to_model_frame(sample: Sample, model_size: tuple[int, int]) -> list[float]:
    """The ground-truth box or point in the model's pixel frame."""
    if not sample.has_target:
        return list(NO_POINT)
    return rescale_pixels(sample.gt_bbox, sample.image_size, model_size)


def to_train_rows(samples: Iterable[Sample], min_pixels: int = GUI_R1_MIN_PIXELS,
                  max_pixels: int = GUI_R1_MAX_PIXELS) -> list[dict]:
    """TRL rows: conversational `prompt`, `image` (PIL, model frame) and the columns rewards read
    (`gt_bbox` in model pixels)."""
    rows = []
    for s in samples:
        image, size = model_view(s, min_pixels, max_pixels)
        rows.append({
            "prompt": build_messages(s.instruction, s.history, s.task_type, s.space),
            "image": image,
            "gt_action": s.gt_action,
            "gt_bbox": to_model_frame(s, size),
            "gt_input_text": s.gt_input_text,
            "id": s.id,
            "task_type": s.task_type,
            "platform": s.platform or "",
        })
    return rows


def to_train_dataset(samples: Iterable[Sample], min_pixels: int = GUI_R1_MIN_PIXELS,
                     max_pixels: int = GUI_R1_MAX_PIXELS):
    """`to_train_rows` as the `datasets.Dataset` that `GRPOTrainer` / `SFTTrainer` take."""
    import datasets

    return datasets.Dataset.from_list(to_train_rows(samples, min_pixels, max_pixels))


@dataclass(frozen=True)
class EvalRow:
    """One evaluation step: the prompt and the model frame's size; the ground truth stays in stored-image
    pixels (predictions are mapped back with `geometry.rescale_pixels`)."""

    sample: Sample
    messages: list
    model_size: tuple[int, int]

    @property
    def image_size(self) -> tuple[int, int]:
        return self.sample.image_size


def to_eval_rows(samples: Iterable[Sample], min_pixels: int = GUI_R1_MIN_PIXELS,
                 max_pixels: int = GUI_R1_MAX_PIXELS) -> list[EvalRow]:
    out = []
    for s in samples:
        size = model_image_size(*s.image_size, min_pixels=min_pixels, max_pixels=max_pixels)
        out.append(EvalRow(s, build_messages(s.instruction, s.history, s.task_type, s.space), size))
    return out


def with_extras(sample: Sample, **extras: Any) -> Sample:
    """A copy of `sample` with more extras (e.g. `success_rate`)."""
    return replace(sample, extras={**sample.extras, **extras})
