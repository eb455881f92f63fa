"""Training settings: `TrainConfig` holds what is ours (model, quantisation, LoRA, data, pixels,
rewards, device, resume); every other recipe key is a setting of TRL's `GRPOConfig` / `SFTConfig`,
passed to it as TRL names it. Recipes stay one flat mapping; all checks run before any model loads.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ..actions import Compat
from ..errors import UsageError
from ..geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS
from ..modeling import Quantization, native_bf16

Method = Literal["grpo", "sft"]
METHODS: tuple[str, ...] = typing.get_args(Method)

#: TRL settings whose value in our runs differs from TRL's default; a recipe or flag may set each.
COMMON_DEFAULTS: dict[str, Any] = {
    "output_dir": "runs/train", "seed": 0, "learning_rate": 1e-5, "lr_scheduler_type": "constant",
    "num_train_epochs": 1.0, "per_device_train_batch_size": 5, "logging_steps": 1, "save_strategy": "steps",
    "save_steps": 50, "save_total_limit": 2,
    # reward functions read the dataset's own columns, so the trainer must keep them
    "remove_unused_columns": False,
    "ddp_find_unused_parameters": False,
}
METHOD_DEFAULTS: dict[str, dict[str, Any]] = {
    # GUI-R1's values: 5 completions a prompt, KL beta 0.01, answers up to 1,024 tokens, sampled as drawn
    "grpo": {"num_generations": 5, "beta": 0.01, "max_completion_length": 1024, "loss_type": "grpo",
             "temperature": 1.0, "top_p": 1.0},
    # no truncation of the (short) answers; the loss covers the answer, not the prompt
    "sft": {"max_length": None, "completion_only_loss": True},
}
#: TRL settings a run derives from ours; the message says which of ours to set instead.
DERIVED: dict[str, str] = {
    "use_cpu": "set device: cpu",
    "reward_weights": "give each reward's weight in rewards: {name: weight}",
    "activation_checkpointing": "set gradient_checkpointing (applied when the model loads)",
}


class ConfigError(UsageError):
    """A configuration that cannot run; the message says what to change (exit code 2)."""


def checkpointing_field(cls) -> str:
    """The name `cls` (a TRL config class) gives gradient checkpointing: transformers 5.24 renamed
    `gradient_checkpointing` to `activation_checkpointing`; 5.15-5.23 (Colab's, a GPU image's) know
    only the old name and reject the new one."""
    fields = getattr(cls, "__dataclass_fields__", {})
    return "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"


def trl_config_class(method: str) -> type:
    """TRL's config class of `method`: `GRPOConfig` or `SFTConfig`."""
    if method not in METHODS:
        raise ConfigError(f"method must be one of {METHODS}, got {method!r}")
    from trl import GRPOConfig, SFTConfig

    return GRPOConfig if method == "grpo" else SFTConfig


def trl_defaults(method: str) -> dict[str, Any]:
    """The TRL settings our runs of `method` get unless the recipe sets them."""
    return {**COMMON_DEFAULTS, **METHOD_DEFAULTS[method]}


@dataclass
class TrainConfig:
    """The settings of a run that are ours; `trl_args` holds the recipe's TRL settings, by TRL's name.

    Build one with `from_dict` / `from_yaml` / `from_cli` (one flat mapping of both kinds of key);
    `to_dict()` gives that mapping back."""

    method: Method = field(default="grpo", metadata={"help": "grpo (GUI-R1's method) or sft (the baseline)"})
    model: str = field(default="tiny", metadata={
        "help": "hub id, local folder, or 'tiny' (a small Qwen2.5-VL built into <output_dir>/base_model)"})
    tiny: dict = field(default_factory=dict, metadata={
        "help": "keyword arguments of tiny.build_tiny_model when model is 'tiny', e.g. {hidden_size: 128}"})
    tiny_seed: int = field(default=0, metadata={"help": "seed of the tiny model's random weights"})
    quantization: Quantization | None = field(default=None, metadata={
        "help": "null (full precision), 4bit (QLoRA, NF4) or 8bit; needs bitsandbytes and an adapter"})
    lora: bool = field(default=True, metadata={"help": "train a LoRA adapter (else every weight)"})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha (the update is scaled by alpha / r)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    train_vision: bool = field(default=False, metadata={
        "help": "also train the vision tower (LoRA on its layers, or its weights without LoRA)"})
    init_adapter: str | None = field(default=None, metadata={
        "help": "folder of a saved adapter to start from and go on training (e.g. the SFT warm start)"})
    gradient_checkpointing: bool = field(default=False, metadata={
        "help": "recompute activations in the backward pass (less memory); applied when the model loads"})
    train_data: str = field(default="data_samples/train", metadata={
        "help": "GUI-R1 data: hub id (ritzzai/GUI-R1), parquet file or folder of parquet files"})
    train_split: str | None = field(default=None, metadata={"help": "split of hub data (e.g. train)"})
    limit: int | None = field(default=None, metadata={"help": "use at most this many rows"})
    min_pixels: int = field(default=GUI_R1_MIN_PIXELS, metadata={
        "help": "screenshots smaller than this many pixels are scaled up (processor and boxes alike)"})
    max_pixels: int = field(default=GUI_R1_MAX_PIXELS, metadata={
        "help": "screenshots larger than this many pixels are scaled down (processor and boxes alike)"})
    rewards: dict = field(default_factory=lambda: {"gui_r1": 1.0}, metadata={
        "help": "GRPO rewards by registered name, with weights, e.g. {gui_r1: 1.0, point_gaussian: 0.5}"})
    compat: Compat = field(default="official", metadata={
        "help": "official (the original GUI-R1 rules) or strict (the corrected ones)"})
    monitor_rewards: bool = field(default=True, metadata={
        "help": "GRPO: also log format and accuracy as reward columns of weight 0 (rewards/format/mean, "
                "rewards/accuracy/mean) beside the rewards learnt from; watched, they do not change training"})
    validation_data: str | None = field(default=None, metadata={
        "help": "held-out GUI-R1 rows to validate on while training (greedy answers, metrics to metrics.jsonl): "
                "parquet file or folder (e.g. data_samples/test), or a hub id with validation_split; null: none"})
    validation_split: str | None = field(default=None, metadata={
        "help": "split of hub validation data (e.g. androidcontrol_low_test)"})
    validation_steps: int = field(default=5, metadata={
        "help": "validate every this many training steps (GUI-R1 validates every 5)"})
    validation_limit: int = field(default=16, metadata={
        "help": "validate on at most this many rows (the first rows of each file, shared out evenly)"})
    validation_max_new_tokens: int | None = field(default=None, metadata={
        "help": "longest validation answer in tokens; null: max_completion_length (GRPO) or 256 (SFT)"})
    sft_thinking: str = field(default="", metadata={"help": "text inside <think> of the SFT targets"})
    device: str = field(default="auto", metadata={"help": "auto (CUDA when present), cpu or cuda"})
    resume: bool = field(default=False, metadata={
        "help": "continue from the newest complete checkpoint in output_dir (a killed run's)"})
    trl_args: dict = field(default_factory=dict, metadata={
        "help": "settings of TRL's GRPOConfig / SFTConfig, by TRL's name (learning_rate, max_steps, ...)"})

    @classmethod
    def own_fields(cls) -> list[dataclasses.Field]:
        """Our settings (every field but `trl_args`)."""
        return [f for f in dataclasses.fields(cls) if f.name != "trl_args"]

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "config") -> TrainConfig:
        """One flat mapping of our keys and TRL's; `source` (a file, "command line") names it in errors."""
        if "trl_args" in values:
            raise ConfigError(f"{source}: give TRL's settings as keys of their own, not under trl_args")
        ours = {f.name for f in cls.own_fields()}
        own = {k: v for k, v in values.items() if k in ours}
        method = own.get("method", "grpo")
        if method not in METHODS:
            raise ConfigError(f"{source}: method must be one of {METHODS}, got {method!r}")
        own = {k: coerce_number(k, v, _own_hints()[k], source) for k, v in own.items()}
        rest = {k: v for k, v in values.items() if k not in ours}
        return cls(**own, trl_args=check_trl_args(rest, method, source))

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, **overrides: Any) -> TrainConfig:
        """A YAML recipe (one flat mapping), with `overrides` on top."""
        return cls.from_dict({**read_recipe(path), **overrides}, source=str(path))

    @classmethod
    def from_cli(cls, argv: list[str] | None = None) -> TrainConfig:
        """`--config recipe.yaml` and flags (which override it); `--help` lists them all."""
        from .flags import parse_flags

        return parse_flags(argv)

    def to_dict(self) -> dict[str, Any]:
        """The flat mapping `from_dict` reads: our settings, then the TRL settings given."""
        own = {f.name: getattr(self, f.name) for f in self.own_fields()}
        return {**own, **self.trl_args}

    def get(self, name: str) -> Any:
        """The value a run uses for `name`, ours or TRL's: as set, else our default, else TRL's."""
        if name in {f.name for f in self.own_fields()}:
            return getattr(self, name)
        if name in self.trl_args:
            return self.trl_args[name]
        defaults = trl_defaults(self.method)
        if name in defaults:
            return defaults[name]
        cls = trl_config_class(self.method)
        if name not in cls.__dataclass_fields__:
            raise KeyError(f"{name!r} is neither our setting nor one of TRL's {cls.__name__}")
        f = cls.__dataclass_fields__[name]
        return f.default_factory() if f.default is dataclasses.MISSING else f.default

    def use_cpu(self) -> bool:
        """Whether the run trains on the CPU: asked for, or no CUDA device is visible."""
        import torch

        return self.device == "cpu" or not torch.cuda.is_available()

    def trainer_args(self):
        """TRL's `GRPOConfig` / `SFTConfig` of this run: our defaults, the recipe's TRL settings, and
        what is derived from ours (CPU or not, bf16 when the GPU has it natively, the reward weights:
        the recipe's, then 0 for each watched reward of `monitor_rewards`)."""
        use_cpu = self.use_cpu()
        cls = trl_config_class(self.method)
        args = {**trl_defaults(self.method), **self.trl_args, "use_cpu": use_cpu,
                # load_policy applies gradient checkpointing itself (k-bit preparation needs it there)
                checkpointing_field(cls): False}
        if args.get("bf16") is None:
            # native bf16 only (`modeling.native_bf16`, the decision the load dtype follows too); without
            # it the model itself is fp16 and no autocast runs, so the fp32 vision tower stays fp32
            args["bf16"] = not use_cpu and native_bf16()
        if self.method == "grpo":
            from ..rewards import build_rewards

            args["reward_weights"] = build_rewards(self.rewards, self.compat, monitor=self.monitor_rewards)[1]
        try:
            return cls(**args)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"TRL's {cls.__name__} rejected the settings: {exc}") from None

    def validate(self) -> TrainConfig:
        """Check what TRL cannot (settings of ours, and ours against TRL's), then let TRL check its own."""
        from .checks import check_config

        check_config(self)
        self.trainer_args()
        return self


def read_recipe(path: str | os.PathLike) -> dict[str, Any]:
    """The flat mapping of a YAML recipe."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a folder, not a recipe file; pass a YAML file such as configs/grpo_tiny_cpu.yaml")
    try:
        values = yaml.safe_load(p.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"{p}: recipe not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML{_where(exc)}") from None
    if not isinstance(values, dict):
        raise ConfigError(f"{p}: expected a mapping of settings, got {type(values).__name__}")
    return values


def _where(exc: yaml.YAMLError) -> str:
    """Where a YAML error is, from PyYAML's marks: "at line 3, column 10: expected ',' or ']', but
    got ':' (while parsing a flow sequence begun at line 2)"."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    context, begun = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    text = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    text += f": {problem}" if problem else ""
    if context and begun is not None and (mark is None or begun.line != mark.line):
        text += f" ({context} begun at line {begun.line + 1})"
    return text


def _own_hints() -> dict[str, Any]:
    return typing.get_type_hints(TrainConfig)


def coerce_number(name: str, value: Any, hint: Any, source: str) -> Any:
    """`value` as the number `hint` asks for when it came as text: YAML 1.1 reads `1e-5` (no dot) as
    a string, and numbers are numbers whichever way they are written."""
    kinds = set(typing.get_args(hint)) or {hint}
    if not isinstance(value, str) or str in kinds or not kinds & {int, float}:
        return value
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{source}: {name} must be a number, got {value!r}") from None
    if float not in kinds:
        if not number.is_integer():
            raise ConfigError(f"{source}: {name} must be a whole number, got {value!r}")
        return int(number)
    return number


def check_trl_args(values: dict[str, Any], method: str, source: str) -> dict[str, Any]:
    """The TRL settings of `values`, numbers read as numbers; a key that is neither ours nor a setting
    of TRL's config class of `method`, or one we derive, is an error naming it and `source`."""
    cls = trl_config_class(method)
    derived = sorted(set(values) & set(DERIVED))
    if derived:
        raise ConfigError(f"{source}: {derived[0]} is derived from our settings: {DERIVED[derived[0]]}")
    unknown = sorted(set(values) - set(cls.__dataclass_fields__))
    if unknown:
        ours = [f.name for f in TrainConfig.own_fields()]
        raise ConfigError(f"{source}: unknown key(s) {unknown}: neither our settings {ours} nor settings of TRL's "
                          f"{cls.__name__} (see python -m gui_r1_lite.train --method {method} --help)")
    hints = typing.get_type_hints(cls)
    return {k: coerce_number(k, v, hints[k], source) for k, v in values.items()}
