"""A run's settings, one flat mapping: our keys (`TrainArguments`) and TRL's (`GRPOConfig` /
`SFTConfig`, by `method`). On the command line a YAML recipe (`--config`) comes first and flags
override its keys; `TrlParser` builds the flags from both dataclasses, as TRL's own scripts do."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..modeling import native_bf16
from .arguments import METHODS, ConfigError, TrainArguments
from .checks import check_config

#: TRL settings whose value in our runs differs from TRL's default; a recipe or flag may set each.
COMMON_DEFAULTS: dict[str, Any] = {
    "output_dir": "runs/train", "seed": 0, "learning_rate": 1e-5, "lr_scheduler_type": "constant",
    "num_train_epochs": 1.0, "per_device_train_batch_size": 5, "logging_steps": 1, "save_strategy": "steps",
    "save_steps": 50, "save_total_limit": 2,
    "remove_unused_columns": False,  # reward functions read the dataset's own columns
    "ddp_find_unused_parameters": False,
}
METHOD_DEFAULTS: dict[str, dict[str, Any]] = {
    # GUI-R1's values; its loss adds the plain k3 KL term, where TRL 1.16 multiplies it by the ratio
    # (use_bias_correction_kl: the same value on-policy, another gradient; tests/test_grpo_by_hand.py)
    "grpo": {"num_generations": 5, "beta": 0.01, "max_completion_length": 1024, "loss_type": "grpo",
             "temperature": 1.0, "top_p": 1.0, "use_bias_correction_kl": False},
    # no truncation of the (short) answers; the loss covers the answer, not the prompt
    "sft": {"max_length": None, "completion_only_loss": True},
}
#: TRL settings a run derives from ours; the message says which of ours to set instead.
DERIVED: dict[str, str] = {
    "use_cpu": "set device: cpu",
    "reward_weights": "give each reward's weight in rewards: {name: weight}",
    "activation_checkpointing": "set gradient_checkpointing (applied when the model loads)",
}


def checkpointing_field(cls) -> str:
    """The name `cls` (a TRL config class) gives gradient checkpointing: transformers 5.24 renamed it
    `activation_checkpointing`; 5.15-5.23 (Colab's) know only the old name."""
    fields = getattr(cls, "__dataclass_fields__", {})
    return "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"


def trl_config_class(method: str) -> type:
    """`GRPOConfig` or `SFTConfig`."""
    if method not in METHODS:
        raise ConfigError(f"method must be one of {METHODS}, got {method!r}")
    from trl import GRPOConfig, SFTConfig

    return GRPOConfig if method == "grpo" else SFTConfig


def trl_defaults(method: str) -> dict[str, Any]:
    """The TRL settings our runs of `method` get unless the recipe sets them."""
    return {**COMMON_DEFAULTS, **METHOD_DEFAULTS[method]}


@dataclass
class TrainConfig(TrainArguments):
    """A run's settings: ours (the fields of `TrainArguments`) and, in `trl_args`, the TRL settings
    given. Built by `from_dict` / `from_yaml` / `from_cli`; `to_dict()` gives the flat mapping back."""

    trl_args: dict = field(default_factory=dict, metadata={
        "help": "settings of TRL's GRPOConfig / SFTConfig given, by TRL's name (learning_rate, max_steps, ...)"})

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "config") -> TrainConfig:
        """One flat mapping of our keys and TRL's; `source` (a file, "command line") names it in errors."""
        if "trl_args" in values:
            raise ConfigError(f"{source}: give TRL's settings as keys of their own, not under trl_args")
        hints = typing.get_type_hints(TrainArguments)
        method = values.get("method", "grpo")
        if method not in METHODS:
            raise ConfigError(f"{source}: method must be one of {METHODS}, got {method!r}")
        own = {k: coerce_number(k, v, hints[k], source) for k, v in values.items() if k in hints}
        rest = {k: v for k, v in values.items() if k not in hints}
        return cls(**own, trl_args=check_trl_args(rest, method, source))

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, **overrides: Any) -> TrainConfig:
        """A YAML recipe (one flat mapping), with `overrides` on top."""
        return cls.from_dict({**read_recipe(path), **overrides}, source=str(path))

    @classmethod
    def from_cli(cls, argv: list[str] | None = None) -> TrainConfig:
        """`--config recipe.yaml` and flags, which override its keys; `--help` lists them and exits.
        The recipe and `--method` are read first: the method decides which flags there are."""
        argv = sys.argv[1:] if argv is None else list(argv)
        first, _ = FirstPass().parse_known_args(argv)
        recipe = read_recipe(first.config) if first.config else {}
        method = first.method or recipe.get("method", "grpo")
        if method not in METHODS:
            raise ConfigError(f"method must be one of {METHODS}, got {method!r}")
        if "-h" in argv or "--help" in argv:
            build_parser(method, show_defaults=True).parse_args(argv)  # prints the help and exits
        source = f"{first.config} and the command line" if first.config else "command line"
        return cls.from_dict({**recipe, **given_flags(build_parser(method), argv)}, source=source)

    def to_dict(self) -> dict[str, Any]:
        """The flat mapping `from_dict` reads: our settings, then the TRL settings given."""
        return {**{f.name: getattr(self, f.name) for f in self.own_fields()}, **self.trl_args}

    def get(self, name: str) -> Any:
        """The value a run uses for `name`, ours or TRL's: as set, else our default, else TRL's."""
        if name in {f.name for f in self.own_fields()}:
            return super().get(name)
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

    def setting_names(self) -> set[str]:
        """Every setting this run names: ours, the TRL settings given, and those we give a default."""
        return {f.name for f in self.own_fields()} | set(self.trl_args) | set(trl_defaults(self.method))

    def default_of(self, name: str) -> Any:
        """The value a run of this method gets for `name` when nothing sets it."""
        return TrainConfig(method=self.method).get(name)

    def use_cpu(self) -> bool:
        """Whether the run trains on the CPU: asked for, or no CUDA device is visible."""
        import torch

        return self.device == "cpu" or not torch.cuda.is_available()

    def loss_scaled(self, use_cpu: bool) -> bool:
        """Whether the run trains in fp16 mixed precision, with TRL's (torch.amp's) loss scaler: on CUDA
        without native bf16 (a T4), where the model itself is fp16 and gradients below fp16's smallest
        numbers (~6e-8) would flush to zero without scaling (the fp32 vision tower runs outside autocast,
        `modeling.outside_autocast`). Only while the trainable weights are fp32 (LoRA, or an adapter): the
        scaler cannot unscale fp16 gradients of the fp16 model's own weights."""
        return not use_cpu and not native_bf16() and (self.lora or self.init_adapter is not None)

    def trainer_args(self):
        """TRL's config of this run: our defaults, the TRL settings given, and what is derived from
        ours (CPU or not, bf16 when native, else fp16 with the loss scaler (`loss_scaled`), the reward
        weights with 0 for each watched reward)."""
        use_cpu = self.use_cpu()
        cls = trl_config_class(self.method)
        args = {**trl_defaults(self.method), **self.trl_args, "use_cpu": use_cpu,
                # load_policy applies gradient checkpointing itself (k-bit preparation needs it there)
                checkpointing_field(cls): False}
        if args.get("bf16") is None:
            # native bf16 only (as the load dtype decides); else the model itself is fp16
            args["bf16"] = not use_cpu and native_bf16()
        if args.get("fp16") is None:
            args["fp16"] = self.loss_scaled(use_cpu)
        if self.method == "grpo":
            from ..rewards import build_rewards

            args["reward_weights"] = build_rewards(self.rewards, self.compat, monitor=self.monitor_rewards)[1]
        try:
            return cls(**args)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"TRL's {cls.__name__} rejected the settings: {exc}") from None

    def validate(self) -> TrainConfig:
        """Check what TRL cannot (settings of ours, and ours against TRL's), then let TRL check its own."""
        check_config(self)
        self.trainer_args()
        return self


def read_recipe(path: str | os.PathLike) -> dict[str, Any]:
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
    """Where a YAML error is: " at line 3, column 10: expected ',' or ']', but got ':' (while parsing a
    flow sequence begun at line 2)"."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    context, begun = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    text = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    text += f": {problem}" if problem else ""
    if context and begun is not None and (mark is None or begun.line != mark.line):
        text += f" ({context} begun at line {begun.line + 1})"
    return text


def coerce_number(name: str, value: Any, hint: Any, source: str) -> Any:
    """`value` as the number `hint` asks for when it came as text (YAML 1.1 reads `1e-5` as a string)."""
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
    """The TRL settings of `values`, numbers read as numbers; an unknown key, or one we derive, is an
    error naming it and `source`."""
    cls = trl_config_class(method)
    derived = sorted(set(values) & set(DERIVED))
    if derived:
        raise ConfigError(f"{source}: {derived[0]} is derived from our settings: {DERIVED[derived[0]]}")
    unknown = sorted(set(values) - set(cls.__dataclass_fields__))
    if unknown:
        ours = [f.name for f in TrainArguments.own_fields()]
        raise ConfigError(f"{source}: unknown key(s) {unknown}: neither our settings {ours} nor settings of TRL's "
                          f"{cls.__name__} (see python -m gui_r1_lite.train --method {method} --help)")
    hints = typing.get_type_hints(cls)
    return {k: coerce_number(k, v, hints[k], source) for k, v in values.items()}


# --- the command line -------------------------------------------------------------------------------

PROG = "python -m gui_r1_lite.train"
USAGE = f"{PROG} [--config RECIPE.yaml] [--method {{grpo,sft}}] [--SETTING VALUE ...]"
DESCRIPTION = """GRPO / SFT training of a Qwen2.5-VL GUI agent.

A run's settings are one flat mapping: a YAML recipe (--config), then the flags on top of it. Our
settings are listed last; every other flag is a setting of TRL's GRPOConfig (or, with --method sft,
SFTConfig), passed to it unchanged. A default shown is what a run gets (ours where it differs from
TRL's); use_cpu, bf16 and fp16 (when unset), reward_weights and activation_checkpointing follow from ours."""


def _command_line_error(self: argparse.ArgumentParser, message: str) -> NoReturn:
    """A bad flag is a `ConfigError` (exit code 2 through `run_cli`), not argparse's exit."""
    raise ConfigError(f"command line: {message}")


class FirstPass(argparse.ArgumentParser):
    """`--config` and `--method`, read before the flags: they decide which flags there are."""

    error = _command_line_error

    def __init__(self) -> None:
        super().__init__(add_help=False, allow_abbrev=False)
        self.add_argument("--config")
        self.add_argument("--method")


def build_parser(method: str, show_defaults: bool = False) -> argparse.ArgumentParser:
    """TRL's parser of `method`'s config class and `TrainArguments` (ours win gradient_checkpointing,
    the one name both have), with `--config`; `show_defaults` shows the defaults a run gets."""
    from trl import TrlParser

    class Parser(TrlParser):
        error = _command_line_error

    parser = Parser([trl_config_class(method), TrainArguments], prog=PROG, usage=USAGE, description=DESCRIPTION,
                    conflict_handler="resolve", allow_abbrev=False)
    parser.add_argument("--config", help="YAML recipe (configs/*.yaml); flags override its keys")
    if show_defaults:
        parser.set_defaults(**trl_defaults(method))
    return parser


def given_flags(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    """The settings `argv` gives: with every default SUPPRESSed argparse leaves out what was not
    given, so a recipe's value stands unless a flag overrides it."""
    for action in parser._actions:  # as TrlParser.set_defaults_with_config does (set_defaults would fill them in)
        action.default = argparse.SUPPRESS
    flags = vars(parser.parse_args(argv))
    flags.pop("config", None)
    return flags
