"""The miniature's knobs: which MiniWoB++ tasks and seeds, the tiny policy, the warm start, the extra
budget both arms get, GRPO's sampling and the evaluation, with the checks a run makes before it starts."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        name raises TypeError listing the valid ones."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown miniature setting(s) {unknown}; valid: {sorted(known)}")
        return dataclasses.replace(base or cls(), **overrides)

    def validate(self) -> MiniatureSettings:
        """Raise ValueError on a setting no run can use; returns self."""
        if self.fair not in FAIR_MODES:
            raise ValueError(f"fair must be one of {FAIR_MODES}, got {self.fair!r}")
        if self.warm_steps < 1:
            raise ValueError("warm_steps must be at least 1 (a random model never answers in format), "
                             f"got {self.warm_steps}")
        if self.extra_prompts < 1 or self.sft_batch < 1 or self.grpo_prompts_per_step < 1:
            raise ValueError("extra_prompts, sft_batch and grpo_prompts_per_step must be at least 1")
        if self.num_generations < 2:
            raise ValueError("num_generations must be at least 2 (GRPO compares answers in a group), "
                             f"got {self.num_generations}")
        unknown = sorted(set(self.tasks or ()) - set(ALL_TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; MiniWoB tasks here: {list(ALL_TASKS)}")
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
