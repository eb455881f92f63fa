"""The training command line: `--config recipe.yaml` plus flags, our settings and every setting of
TRL's `GRPOConfig` (or `SFTConfig` with `--method sft`), each with its help text. TRL's flags come
from transformers' `HfArgumentParser`, as TRL's own scripts build them; flags override the recipe.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from typing import Any

import yaml
from transformers import HfArgumentParser
from transformers.hf_argparser import string_to_bool

from .config import METHODS, ConfigError, TrainConfig, read_recipe, trl_config_class, trl_defaults

PROG = "python -m gui_r1_lite.train"
USAGE = f"{PROG} [--config RECIPE.yaml] [--method {{grpo,sft}}] [--SETTING VALUE ...]"
DESCRIPTION = """GRPO / SFT training of a Qwen2.5-VL GUI agent.

A run's settings are one flat mapping: a YAML recipe (--config), then the flags on top of it. Our
settings are listed last; every other flag is a setting of TRL's GRPOConfig (or, with --method sft,
SFTConfig), passed to it unchanged. A default shown is what a run gets (ours where it differs from
TRL's); use_cpu, bf16 (when unset), reward_weights and activation_checkpointing follow from ours."""


#: The default of every flag when parsing: what is still UNSET after parsing was not given.
UNSET = object()


class FirstPass(argparse.ArgumentParser):
    """Reads --config and --method before the full parser exists; errors raise `ConfigError`."""

    def error(self, message: str) -> typing.NoReturn:
        raise ConfigError(f"command line: {message}")


class FlagParser(HfArgumentParser):
    """Argument errors raise `ConfigError` (naming the flag) instead of exiting the process."""

    def error(self, message: str) -> typing.NoReturn:
        raise ConfigError(f"command line: {message}")


def whole_number(text: str) -> int | None:
    """An integer flag's value; `null` for none."""
    value = yaml.safe_load(text)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(text)
    return value


def number(text: str) -> float | None:
    """A float flag's value (`1e-5` too); `null` for none."""
    value = yaml.safe_load(text)
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(text)
    return float(value)


def mapping(text: str) -> dict:
    """A mapping flag's value, written as YAML: `{gui_r1: 1.0, point_gaussian: 0.5}`."""
    value = yaml.safe_load(text)
    if not isinstance(value, dict):
        raise ValueError(text)
    return value


def text_or_null(text: str) -> str | None:
    return None if text.strip().lower() in ("null", "none", "~") else text


def _flag_kwargs(hint: Any) -> dict[str, Any]:
    if typing.get_origin(hint) is typing.Literal:
        return {"type": str, "choices": typing.get_args(hint)}
    kinds = set(typing.get_args(hint)) or {hint}
    if bool in kinds:
        return {"type": string_to_bool, "nargs": "?", "const": True}
    if int in kinds:
        return {"type": whole_number}
    if float in kinds:
        return {"type": number}
    if dict in kinds:
        return {"type": mapping}
    return {"type": text_or_null if type(None) in kinds else str}


def build_parser(method: str, show_defaults: bool = False) -> argparse.ArgumentParser:
    """The parser of our flags and TRL's for `method`. For parsing, every default is `UNSET`, so that
    only the flags given reach the settings; `show_defaults` sets the real ones, for `--help`."""
    parser = FlagParser([trl_config_class(method)], prog=PROG, usage=USAGE, description=DESCRIPTION,
                             conflict_handler="resolve", allow_abbrev=False)
    ours = parser.add_argument_group("our settings")
    ours.add_argument("--config", help="YAML recipe (configs/*.yaml); flags override its keys")
    hints = typing.get_type_hints(TrainConfig)
    for f in TrainConfig.own_fields():
        spellings = [f"--{f.name}", f"--{f.name.replace('_', '-')}"] if "_" in f.name else [f"--{f.name}"]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        ours.add_argument(*dict.fromkeys(spellings), dest=f.name, help=f.metadata["help"], default=default,
                          **_flag_kwargs(hints[f.name]))
    if show_defaults:
        parser.set_defaults(**trl_defaults(method))
    else:
        names = [f.name for f in dataclasses.fields(trl_config_class(method))]
        names += [f.name for f in TrainConfig.own_fields()] + ["config"]
        parser.set_defaults(**dict.fromkeys(names, UNSET))
    return parser


def _recipe_and_method(argv: list[str]) -> tuple[str | None, dict, str]:
    first = FirstPass(add_help=False, allow_abbrev=False)
    first.add_argument("--config")
    first.add_argument("--method")
    known, _ = first.parse_known_args(argv)
    recipe = read_recipe(known.config) if known.config else {}
    method = known.method or recipe.get("method", "grpo")
    if method not in METHODS:
        raise ConfigError(f"method must be one of {METHODS}, got {method!r}")
    return known.config, recipe, method


def parse_flags(argv: list[str] | None = None) -> TrainConfig:
    """The `TrainConfig` of a command line; `--help` prints every flag and exits."""
    argv = sys.argv[1:] if argv is None else list(argv)
    config, recipe, method = _recipe_and_method(argv)
    wants_help = any(a in ("-h", "--help") for a in argv)
    parsed = vars(build_parser(method, show_defaults=wants_help).parse_args(argv))
    flags = {k: v for k, v in parsed.items() if v is not UNSET and k != "config"}
    source = f"{config} and the command line" if config else "command line"
    return TrainConfig.from_dict({**recipe, **flags}, source=source)
