"""Our training settings, each with the help `--help` prints; TRL's are in its `GRPOConfig` / `SFTConfig`.
A value that can be judged alone is checked here; what needs both kinds, or the machine, in `checks`."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import yaml

from ..actions import COMPATS, Compat
from ..errors import UsageError
from ..geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS
from ..modeling import QUANTIZATIONS

Method = Literal["grpo", "sft"]
METHODS: tuple[str, ...] = typing.get_args(Method)
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
#: How a flag says "none" (`--init_adapter null`); YAML's own null is None already.
NULL_TEXT = ("null", "none", "~")


class ConfigError(UsageError):
    """A configuration that cannot run; the message says what to change (exit code 2)."""


# Mappings are typed `dict | str | None` (as transformers types fsdp_config) so that the parser hands
# a flag's text over to be read as YAML; `quantization` is `str | None` so that `--quantization null` parses.
@dataclass
class TrainArguments:
    """The settings of a run that are ours; every other setting is TRL's, by TRL's name."""

    _argument_group_name = "our settings"  # the heading of our flags in --help (HfArgumentParser reads it)

    method: Method = field(default="grpo", metadata={"help": "grpo (GUI-R1's method) or sft (the baseline)"})
    model: str = field(default="tiny", metadata={
        "help": "hub id, local folder, or 'tiny' (a small Qwen2.5-VL built into <output_dir>/base_model)"})
    tiny: dict | str | None = field(default_factory=dict, metadata={
        "help": "keyword arguments of tiny.build_tiny_model when model is 'tiny', e.g. {hidden_size: 128}"})
    tiny_seed: int = field(default=0, metadata={"help": "seed of the tiny model's random weights"})
    quantization: str | None = field(default=None, metadata={
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
    cuda_alloc_conf: str | None = field(default=None, metadata={
        "help": "PYTORCH_CUDA_ALLOC_CONF for the run's CUDA memory, e.g. expandable_segments:True (blocks that grow "
                "instead of new ones: less memory lost to fragmentation); set when the model loads, and a value "
                "already in the environment wins; null: the environment's"})
    train_data: str = field(default="data_samples/train", metadata={
        "help": "GUI-R1 data: hub id (ritzzai/GUI-R1), parquet file or folder of parquet files"})
    train_split: str | None = field(default=None, metadata={"help": "split of hub data (e.g. train)"})
    limit: int | None = field(default=None, metadata={"help": "use at most this many rows"})
    min_pixels: int = field(default=GUI_R1_MIN_PIXELS, metadata={
        "help": "screenshots smaller than this many pixels are scaled up (processor and boxes alike)"})
    max_pixels: int = field(default=GUI_R1_MAX_PIXELS, metadata={
        "help": "screenshots larger than this many pixels are scaled down (processor and boxes alike)"})
    rewards: dict | str | None = field(default_factory=lambda: {"gui_r1": 1.0}, metadata={
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

    def __post_init__(self) -> None:
        """Read the text a flag gives (null, YAML mappings), then refuse a value that cannot run."""
        for name in ("init_adapter", "quantization", "train_split", "validation_data", "validation_split",
                     "cuda_alloc_conf"):
            value = getattr(self, name)
            if isinstance(value, str) and value.strip().lower() in NULL_TEXT:
                setattr(self, name, None)
        for name in ("tiny", "rewards"):
            setattr(self, name, _mapping_text(name, getattr(self, name)))
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.compat not in COMPATS:
            raise ConfigError(f"compat must be one of {COMPATS}, got {self.compat!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if not 0 < self.min_pixels <= self.max_pixels:
            raise ConfigError(f"need 0 < min_pixels <= max_pixels, got {self.min_pixels}, {self.max_pixels}")
        if self.quantization not in (None, *QUANTIZATIONS):
            raise ConfigError(f"quantization must be null, '4bit' or '8bit', got {self.quantization!r}")
        if self.quantization and not (self.lora or self.init_adapter):
            raise ConfigError("a quantised model cannot be fine-tuned without an adapter: set lora: true")
        if not isinstance(self.tiny, dict):
            raise ConfigError(f"tiny must be a mapping of build arguments, e.g. {{hidden_size: 128}}, "
                              f"got {self.tiny!r}")
        if self.validation_data is not None:
            self._check_validation_counts()
        if self.method == "grpo":
            check_rewards(self.rewards)

    def _check_validation_counts(self) -> None:
        counts = {"validation_steps": self.validation_steps, "validation_limit": self.validation_limit}
        if self.validation_max_new_tokens is not None:  # null: the run's answer length
            counts["validation_max_new_tokens"] = self.validation_max_new_tokens
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value!r}")

    @classmethod
    def own_fields(cls) -> list:
        """Our settings' fields (a subclass's additions left out)."""
        return list(fields(TrainArguments))

    def get(self, name: str) -> Any:
        """The value of our setting `name`."""
        if name not in {f.name for f in self.own_fields()}:
            raise KeyError(f"{name!r} is not one of our settings")
        return getattr(self, name)


def _mapping_text(name: str, value: Any) -> Any:
    """A mapping setting given as YAML text (a flag's) read into its mapping."""
    if not isinstance(value, str):
        return value
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        raise ConfigError(f"{name}: {value!r} is not a YAML mapping such as {{gui_r1: 1.0}}") from None


def check_rewards(rewards: object) -> None:
    """A mapping of registered reward names to finite numbers (TRL's `reward_weights`)."""
    if not isinstance(rewards, dict):
        raise ConfigError(f"rewards must be a mapping of reward name to weight, e.g. {{gui_r1: 1.0}}, got {rewards!r}")
    if not rewards:
        raise ConfigError("rewards is empty; e.g. rewards: {gui_r1: 1.0}")
    from ..rewards import REWARDS

    unknown = sorted(set(rewards) - set(REWARDS))
    if unknown:
        raise ConfigError(f"unknown reward(s) {unknown}; registered: {sorted(REWARDS)}")
    for name, weight in rewards.items():
        if not _finite_number(weight):
            raise ConfigError(f"rewards: the weight of {name!r} must be a number, got {weight!r}; "
                              f"e.g. rewards: {{{name}: 1.0}}")


def _finite_number(value: object) -> bool:
    # YAML 1.1 reads 1e-1 (no dot) as text; a number written so is still a number
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return False
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
