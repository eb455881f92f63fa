"""Prediction settings under one name (`PRESETS`: the original's inference scripts, or CPU work) and
the settings a run predicts with, as `run.json` and `metrics.json` record them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS

DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_PRESET = "fast"


@dataclass(frozen=True)
class Preset:
    """Prediction settings under one name. `temperature` 0 is greedy decoding (`generate` runs
    `do_sample=False`, where `top_p` has no effect); `repetition_penalty` applies under greedy
    decoding too."""

    name: str
    max_new_tokens: int
    min_pixels: int
    max_pixels: int
    repetition_penalty: float
    temperature: float
    top_p: float


#: The presets, in one place. `paper`: the original's inference scripts (`guir1/inference/*.py`:
#: vLLM `SamplingParams(temperature=0.0, top_p=0.001, repetition_penalty=1.05, max_tokens=1024)`;
#: the model sees screenshots resized by `qwen_vl_utils.process_vision_info` within its default
#: 3,136 to 12,845,056 pixels, near native; the ScreenSpot script's `processor.max_pixels = 2097152`
#: is set on the processor it uses only to compute the scale back to the screenshot).
#: `fast`: CPU work, as `evaluate` ran before presets (256 tokens, GUI-R1's 1.26 MP training frame).
PRESETS: dict[str, Preset] = {
    "paper": Preset("paper", max_new_tokens=1024, min_pixels=3_136, max_pixels=12_845_056, repetition_penalty=1.05,
                    temperature=0.0, top_p=0.001),
    "fast": Preset("fast", max_new_tokens=DEFAULT_MAX_NEW_TOKENS, min_pixels=GUI_R1_MIN_PIXELS,
                   max_pixels=GUI_R1_MAX_PIXELS, repetition_penalty=1.0, temperature=0.0, top_p=1.0),
}
_PRESET_FIELDS = ("max_new_tokens", "min_pixels", "max_pixels", "repetition_penalty")


def get_preset(preset: str | Preset) -> Preset:
    """The preset called `preset`; a `UsageError` listing them for another name."""
    if isinstance(preset, Preset):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise UsageError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}") from None


def prediction_settings(preset: str | Preset | None, *, max_new_tokens: int | None = None,
                        min_pixels: int | None = None, max_pixels: int | None = None,
                        repetition_penalty: float | None = None) -> dict[str, Any]:
    """The settings a run predicts with, as `run.json` and `metrics.json` record them: each value
    given (not None) as it is, the others from `preset`, with the preset's name, the names of its
    values that were `overridden`, and its decoding. Without a preset only `max_new_tokens` gets a
    default; the pixel bounds left None are then the processor's, `repetition_penalty` the completer's.

    >>> s = prediction_settings("paper", max_new_tokens=48)
    >>> s["max_new_tokens"], s["max_pixels"], s["repetition_penalty"], s["overridden"]
    (48, 12845056, 1.05, ['max_new_tokens'])
    """
    given = {"max_new_tokens": max_new_tokens, "min_pixels": min_pixels, "max_pixels": max_pixels,
             "repetition_penalty": repetition_penalty}
    if preset is None:
        out: dict[str, Any] = {"preset": None, **given, "temperature": None, "top_p": None, "overridden": []}
        out["max_new_tokens"] = DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else max_new_tokens
        return out
    p = get_preset(preset)
    values = {k: getattr(p, k) if given[k] is None else given[k] for k in _PRESET_FIELDS}
    overridden = [k for k in _PRESET_FIELDS if given[k] is not None and given[k] != getattr(p, k)]
    return {"preset": p.name, **values, "temperature": p.temperature, "top_p": p.top_p, "overridden": overridden}


def require_positive(values: dict[str, int | None]) -> None:
    """Refuse (`UsageError`) a value below 1 of `values` (name -> value; None passes)."""
    for name, value in values.items():
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")


def check_settings(limit: int | None, min_pixels: int | None, max_pixels: int | None,
                   flags: dict[str, str] | None = None) -> None:
    """Refuse (`UsageError`) a row limit below 1 and pixel bounds that are not positive or not in
    order; `flags` renames the arguments in the message."""
    name = {"limit": "limit", "min_pixels": "min_pixels", "max_pixels": "max_pixels", **(flags or {})}
    if limit is not None and limit < 1:
        raise UsageError(f"{name['limit']} must be at least 1 (rows per file; leave it out for all rows), got {limit}")
    for key, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
        if value is not None and value < 1:
            raise UsageError(f"{name[key]} must be a positive number of pixels, got {value}")
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise UsageError(f"{name['min_pixels']} ({min_pixels}) is above {name['max_pixels']} ({max_pixels}); "
                         "swap them or raise the upper bound")
