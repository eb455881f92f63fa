"""LoRA on Qwen2.5-VL: the adapter settings, which Linear modules get adapters (text decoder by
default, vision tower on request), and the vision tower itself. Apart from `modeling` because
training and the merge read the settings without loading anything."""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import asdict, dataclass, fields
from typing import Any

# The vision MLP also has gate/up/down_proj, so a plain list of names would put adapters on the
# vision tower too; these patterns (transformers 5's module names) keep the two apart.
TEXT_LORA_TARGETS = (
    r".*language_model\.layers\.\d+\.(?:self_attn\.(?:q|k|v|o)_proj|mlp\.(?:gate|up|down)_proj)"
)
VISION_LORA_TARGETS = (
    r".*visual\.blocks\.\d+\.(?:attn\.(?:qkv|proj)|mlp\.(?:gate|up|down)_proj)|.*visual\.merger\.mlp\.(?:0|2)"
)


@dataclass
class LoraSettings:
    """LoRA adapter settings. `target_modules`: a regex PEFT full-matches against module names;
    `train_vision` adds adapters to the vision tower's blocks and merger."""
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: str = TEXT_LORA_TARGETS
    train_vision: bool = False
    bias: str = "none"

    def __post_init__(self) -> None:
        if not isinstance(self.r, int) or self.r <= 0:
            raise ValueError(f"LoraSettings.r must be a positive integer, got {self.r!r}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"LoraSettings.dropout must be in [0, 1), got {self.dropout!r}")
        if self.bias not in ("none", "all", "lora_only"):
            raise ValueError(f"LoraSettings.bias must be 'none', 'all' or 'lora_only', got {self.bias!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> LoraSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown LoRA setting(s) {unknown}; expected some of {sorted(known)}")
        return cls(**values)

    @property
    def pattern(self) -> str:
        """The regex PEFT gets: the text targets, plus the vision ones when `train_vision`."""
        if self.train_vision:
            return f"(?:{self.target_modules})|(?:{VISION_LORA_TARGETS})"
        return self.target_modules

    def to_peft(self):
        from peft import LoraConfig

        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=self.pattern, bias=self.bias, task_type="CAUSAL_LM")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def base_model(model):
    """The transformers model under any PEFT wrapping."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def vision_tower(model):
    """The vision encoder (`model.model.visual` in transformers 5) of a Qwen2.5-VL model."""
    base = base_model(model)
    if hasattr(getattr(base, "model", None), "visual"):
        return base.model.visual
    if hasattr(base, "visual"):
        return base.visual
    raise AttributeError(f"{type(base).__name__} has no vision tower at .model.visual or .visual")


def lora_targets(model, settings: LoraSettings | None = None) -> list[str]:
    """Names of the Linear modules that `settings` (default `LoraSettings()`) puts adapters on (on a
    PEFT model, those of the wrapped base model)."""
    import torch

    settings = settings or LoraSettings()
    pattern = re.compile(settings.pattern)
    base = base_model(model)
    names = []
    for name, module in base.named_modules():
        if ".lora_" in name or name.endswith(".base_layer"):
            continue
        # bitsandbytes' Linear4bit/Linear8bitLt subclass nn.Linear; PEFT's wrapper holds one as base_layer.
        is_linear = isinstance(module, torch.nn.Linear) or isinstance(getattr(module, "base_layer", None),
                                                                       torch.nn.Linear)
        if is_linear and pattern.fullmatch(name):
            names.append(name)
    return names


def set_vision_trainable(model, trainable: bool) -> None:
    """Freeze (or unfreeze) every parameter of the vision tower."""
    for p in vision_tower(model).parameters():
        p.requires_grad_(trainable)


def settle_peft_torchao() -> str | None:
    """Let PEFT work beside a torchao too old for it, as Colab's 0.10 beside peft 0.20.

    peft >= 0.19 asks whether torchao is available for every layer LoRA wraps that no earlier
    dispatcher claimed (any layer not in 4-bit: the whole tiny model, `quantization: null`, the
    vision tower under `train_vision`, a merge), and answers an old torchao with an ImportError
    instead of "no". Nothing here quantises with torchao, and PEFT cannot use an old one anyway,
    so PEFT is given the answer it gives when torchao is absent: torchao is hidden for one call of
    PEFT's own check, which PEFT caches for the process; torchao itself stays importable.
    Returns the torchao version it hid from PEFT, else None (no torchao, or one PEFT accepts)."""
    if importlib.util.find_spec("torchao") is None:
        return None
    from peft.import_utils import is_torchao_available

    try:
        is_torchao_available()
        return None
    except ImportError:  # PEFT's own verdict: this torchao is below its floor
        pass
    from importlib.metadata import version

    loaded = sys.modules.get("torchao")
    sys.modules["torchao"] = None  # importlib.util.find_spec now answers None, as without torchao
    try:
        is_torchao_available()  # False, kept by PEFT's cache for every later dispatch and merge
    finally:
        if loaded is None:
            del sys.modules["torchao"]
        else:
            sys.modules["torchao"] = loaded
    try:
        is_torchao_available()
    except ImportError:  # a PEFT that does not cache its answer: torchao stays hidden in this process
        sys.modules["torchao"] = None
    return version("torchao")


def resolve_lora(lora) -> LoraSettings | None:
    """`load_policy`'s `lora` argument as settings: None/False -> none, True -> the defaults."""
    if lora is None or lora is False:
        return None
    if lora is True:
        return LoraSettings()
    if isinstance(lora, LoraSettings):
        return lora
    if isinstance(lora, dict):
        return LoraSettings.from_dict(lora)
    raise TypeError("lora must be LoraSettings, a dict of its fields, True (defaults) or None/False, "
                    f"got {type(lora).__name__}")
