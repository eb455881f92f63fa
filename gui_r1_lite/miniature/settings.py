"""The miniature's knobs: which MiniWoB++ tasks and seeds, the tiny policy, the warm start, the extra
budget both arms get, GRPO's sampling and the evaluation, with the checks a run makes before it starts."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..profiles import PROFILES

_REPO = Path(__file__).resolve().parents[2]
DEFAULT_TRAIN = _REPO / "data_samples" / "train" / "miniwob_train.parquet"
DEFAULT_HELDOUT = _REPO / "data_samples" / "test" / "miniwob_test.parquet"
FAIR_MODES = ("visits", "seconds")

#: How the continuation learning rates and the sampling temperature were chosen: seed 0, trained on
#: seeds 0-24 of the training file and scored on its seeds 25-29 (70 rows, 55 with a box;
#: `--validate`), every other setting at its default. Click accuracy %; the warm start alone: 49.1.
VALIDATION_RUNS: tuple[dict, ...] = (
    {"temperature": 1.0, "grpo_lr": 1e-4, "sft_extra_lr": 1e-3, "sft": 20.0, "sft_grpo": 23.6},
    {"temperature": 0.7, "grpo_lr": 5e-5, "sft_extra_lr": 1e-4, "sft": 30.9, "sft_grpo": 61.8},
    {"temperature": 0.7, "grpo_lr": 2e-4, "sft_extra_lr": 3e-4, "sft": 27.3, "sft_grpo": 23.6},
    {"temperature": 0.7, "grpo_lr": 1e-4, "sft_extra_lr": 3e-5, "sft": 54.5, "sft_grpo": 67.3},
    {"temperature": 0.7, "grpo_lr": 1e-4, "sft_extra_lr": 1e-5, "sft": 49.1, "sft_grpo": 67.3},
)

#: Every MiniWoB++ task in the shipped files (data_samples/README.md).
ALL_TASKS: tuple[str, ...] = (
    "click-button", "click-link", "click-tab", "click-test", "click-test-2", "focus-text", "click-color",
    "click-dialog", "click-dialog-2", "click-option", "click-button-sequence", "click-collapsible",
    "enter-text", "login-user")
#: Tasks whose target follows from the instruction, the history and the page's fixed layout
#: (login form, text field + Submit, collapsible section, option list + Submit, tab strip, dialog).
LAYOUT_TASKS: tuple[str, ...] = ("login-user", "enter-text", "click-collapsible", "click-option", "click-tab",
                                 "click-dialog")
#: The task mix trained and evaluated: the layout tasks, which a model this small learns in minutes
#: (the README's miniature section); `tasks=None` trains and scores every task.
DEFAULT_TASKS: tuple[str, ...] = LAYOUT_TASKS


class SettingError(UsageError, TypeError):
    """A miniature setting that is unknown, of the wrong type or out of range; the message names it."""


_PLAIN = {"int": int, "float": (int, float), "str": str, "bool": bool, "dict": dict}


def _checked(name: str, annotation: str, value: Any) -> Any:
    """`value` as setting `name` (declared `annotation`) holds it (an int for a float, a list for a
    tuple), or SettingError naming the setting and the type expected."""
    base = annotation.removesuffix("| None").strip()
    if value is None and base != annotation:
        return None
    kind, _, inner = base.partition("[")
    if kind not in _PLAIN and kind != "tuple":
        return value  # a type this check does not know: the run's own checks apply
    if kind == "tuple":
        item = int if inner.startswith("int") else str
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, item) and not isinstance(v, bool) for v in value)
        ok = ok and (inner.endswith("...]") or len(value) == inner.count(",") + 1)
        expected = f"a list of {item.__name__}s"
    else:
        ok = isinstance(value, _PLAIN[kind]) and (kind == "bool" or not isinstance(value, bool))
        expected = {"int": "an int", "float": "a number", "str": "a string", "bool": "true or false",
                    "dict": "a mapping"}[kind]
    if not ok:
        raise SettingError(f"miniature setting {name} must be {expected}"
                           f"{' or null' if base != annotation else ''}, got {value!r} ({type(value).__name__})")
    return tuple(value) if kind == "tuple" else float(value) if kind == "float" else value


@dataclass
class MiniatureSettings:
    """Every knob of the miniature; the defaults are the configuration reported in the README."""

    tasks: tuple[str, ...] | None = DEFAULT_TASKS   # None: every task in the files
    train_seeds: tuple[int, int] = (0, 24)           # inclusive; 25-29 are the validation split
    validation_seeds: tuple[int, int] = (25, 29)
    min_heldout_rows: int = 200
    # policy: the tiny Qwen2.5-VL (tiny.build_tiny_model keyword arguments), fully fine-tuned
    tiny: dict = field(default_factory=lambda: {"hidden_size": 128, "num_layers": 4,
                                                "vision_hidden": 64, "vision_depth": 2})
    lora: bool = False
    train_vision: bool = True
    min_pixels: int = PROFILES["cpu-mini"].min_pixels
    max_pixels: int = PROFILES["cpu-mini"].max_pixels
    # shared SFT warm start
    warm_steps: int = 200
    sft_batch: int = 8
    sft_lr: float = 1e-3
    warm_scheduler: str = "cosine"
    # the extra budget after the warm start, the same for both arms (see `fair`)
    fair: str = "visits"
    extra_prompts: int = 160
    sft_extra_lr: float = 3e-5                 # chosen on the validation split (VALIDATION_RUNS)
    extra_scheduler: str = "constant"          # both arms' schedule after the warm start
    # GRPO
    rewards: dict = field(default_factory=lambda: {"gui_r1": 1.0})
    grpo_lr: float = 1e-4                      # chosen on the validation split (VALIDATION_RUNS)
    num_generations: int = 8
    grpo_prompts_per_step: int = 2
    # GUI-R1 samples at 1.0; the warm-started tiny model's answers then rarely parse (mean reward
    # about 0.05 on validation), which leaves GRPO almost no signal: 0.7 gives rewards 0.1-0.8
    temperature: float = 0.7
    beta: float = 0.0
    loss_type: str = "grpo"
    max_completion_length: int = 44
    # evaluation
    eval_batch_size: int = 32
    max_new_tokens: int = 44
    eval_limit: int | None = None

    @classmethod
    def from_overrides(cls, base: MiniatureSettings | None = None, **overrides: Any) -> MiniatureSettings:
        """`base` (default: the defaults) with the fields named in `overrides` replaced; an unknown
        name, or a value of the wrong type, raises SettingError (a TypeError) naming it."""
        types = {f.name: str(f.type) for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - set(types))
        if unknown:
            raise SettingError(f"unknown miniature setting(s) {unknown}; valid: {sorted(types)}")
        return dataclasses.replace(base or cls(), **{k: _checked(k, types[k], v) for k, v in overrides.items()})

    def validate(self) -> MiniatureSettings:
        """Raise SettingError (a ValueError) on a setting no run can use; returns self."""
        if self.fair not in FAIR_MODES:
            raise SettingError(f"fair must be one of {FAIR_MODES}, got {self.fair!r}")
        if self.warm_steps < 1:
            raise SettingError("warm_steps must be at least 1 (a random model never answers in format), "
                             f"got {self.warm_steps}")
        if self.extra_prompts < 1 or self.sft_batch < 1 or self.grpo_prompts_per_step < 1:
            raise SettingError("extra_prompts, sft_batch and grpo_prompts_per_step must be at least 1")
        if self.num_generations < 2:
            raise SettingError("num_generations must be at least 2 (GRPO compares answers in a group), "
                             f"got {self.num_generations}")
        unknown = sorted(set(self.tasks or ()) - set(ALL_TASKS))
        if unknown:
            raise SettingError(f"unknown task(s) {unknown}; MiniWoB tasks here: {list(ALL_TASKS)}")
        return self

    @property
    def grpo_steps(self) -> int:
        """GRPO steps of the `sft_grpo` arm: `extra_prompts` visits, `grpo_prompts_per_step` a step."""
        return max(1, math.ceil(self.extra_prompts / self.grpo_prompts_per_step))

    @property
    def sft_extra_steps_visits(self) -> int:
        """SFT steps of the `sft` arm under `fair="visits"`: `extra_prompts` visits, `sft_batch` a step."""
        return max(1, math.ceil(self.extra_prompts / self.sft_batch))

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values (tuples as lists)."""
        d = dataclasses.asdict(self)
        d["tasks"] = list(self.tasks) if self.tasks is not None else None
        return d
