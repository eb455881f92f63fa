"""The checks of a `TrainConfig` that TRL cannot make: our settings, and ours against TRL's (the
batch against the group size and the processes, the device against the machine). They run before
any model loads, and each message says what to change."""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

from ..actions import COMPATS
from ..data import is_hub_id
from ..modeling import QUANTIZATIONS, native_bf16
from ..runio import world_size
from .config import METHODS, ConfigError, TrainConfig

DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
REPORTERS: tuple[str, ...] = ("none", "tensorboard", "wandb")
POSITIVE = ("per_device_train_batch_size", "gradient_accumulation_steps", "logging_steps", "save_steps")
POSITIVE_GRPO = ("num_generations", "max_completion_length")


#: Why a CUDA recipe finds no GPU, most often: the registry's torch wheel is built for a CUDA that
#: the machine's NVIDIA driver is too old for, and then CUDA is simply invisible to torch.
NO_CUDA = (
    "device: cuda was asked for but no CUDA device is visible to torch {torch} (built for CUDA {cuda}).\n"
    "If the machine has an NVIDIA GPU, torch's CUDA build and the driver disagree: torch==2.14.1 from PyPI "
    "is built for CUDA 13 and needs an NVIDIA driver >= 580 (`nvidia-smi` shows the driver's version). With "
    "an older driver install the cu12x wheel of torch, e.g. `pip install torch==2.14.1 torchvision==0.29.1 "
    "--index-url https://download.pytorch.org/whl/cu126`.\n"
    "To run on the CPU instead (slow for a 3B model), set device: cpu.")


def check_config(cfg: TrainConfig) -> None:
    """Raise `ConfigError` for the first setting that cannot run."""
    check_choices(cfg)
    check_model(cfg)
    check_device(cfg)
    check_steps(cfg)
    check_validation(cfg)
    if cfg.method == "grpo":
        check_grpo(cfg)


def check_choices(cfg: TrainConfig) -> None:
    if cfg.method not in METHODS:
        raise ConfigError(f"method must be one of {METHODS}, got {cfg.method!r}")
    if cfg.compat not in COMPATS:
        raise ConfigError(f"compat must be one of {COMPATS}, got {cfg.compat!r}")
    if cfg.device not in DEVICES:
        raise ConfigError(f"device must be auto, cpu or cuda, got {cfg.device!r}")
    report_to = cfg.get("report_to")
    for name in [report_to] if isinstance(report_to, str) or report_to is None else report_to:
        if name not in REPORTERS:
            raise ConfigError(f"report_to must be none, tensorboard or wandb, got {report_to!r}")
    if not 0 < cfg.min_pixels <= cfg.max_pixels:
        raise ConfigError(f"need 0 < min_pixels <= max_pixels, got {cfg.min_pixels}, {cfg.max_pixels}")


def check_model(cfg: TrainConfig) -> None:
    if cfg.quantization not in (None, *QUANTIZATIONS):
        raise ConfigError(f"quantization must be null, '4bit' or '8bit', got {cfg.quantization!r}")
    if cfg.quantization and importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError(f"quantization {cfg.quantization!r} needs bitsandbytes: `pip install bitsandbytes` "
                          "or set quantization: null")
    if cfg.quantization and not (cfg.lora or cfg.init_adapter):
        raise ConfigError("a quantised model cannot be fine-tuned without an adapter: set lora: true")
    if cfg.model != "tiny" and not Path(cfg.model).exists() and "/" not in cfg.model:
        raise ConfigError(f"model {cfg.model!r} is neither 'tiny', a folder, nor a hub id 'owner/name'")


def check_device(cfg: TrainConfig) -> None:
    import torch

    cuda = torch.cuda.is_available()
    if cfg.device == "cuda" and not cuda:
        raise ConfigError(NO_CUDA.format(torch=torch.__version__, cuda=torch.version.cuda or "none (a CPU build)"))
    if cfg.method == "grpo" and cfg.get("use_vllm") and not cuda:
        raise ConfigError("use_vllm needs a CUDA GPU (vLLM is CUDA-only); set use_vllm: false")
    if cfg.get("bf16") and not native_bf16():
        raise ConfigError("bf16: true needs a CUDA GPU with native bf16 (Ampere or newer; a T4 only emulates it); "
                          "set bf16: null (auto: fp16 weights, an fp32 vision tower)")


def check_steps(cfg: TrainConfig) -> None:
    for name in POSITIVE + (POSITIVE_GRPO if cfg.method == "grpo" else ()):
        value = cfg.get(name)
        if value is None or int(value) < 1:
            raise ConfigError(f"{name} must be at least 1, got {value!r}")
    if cfg.get("max_steps") == 0 or (cfg.get("max_steps") < 0 and cfg.get("num_train_epochs") <= 0):
        raise ConfigError("set max_steps > 0 or num_train_epochs > 0")
    if not cfg.get("learning_rate") > 0:
        raise ConfigError(f"learning_rate must be positive, got {cfg.get('learning_rate')!r}")


def check_validation(cfg: TrainConfig) -> None:
    """Validation's settings, when it is on: counts of at least 1, and data that exists (a hub id
    needs its split: a mistyped relative path has a hub id's shape, and a hub dataset's default
    split is its training rows)."""
    if cfg.validation_data is None:
        return
    counts = {"validation_steps": cfg.validation_steps, "validation_limit": cfg.validation_limit}
    if cfg.validation_max_new_tokens is not None:  # null: the run's answer length
        counts["validation_max_new_tokens"] = cfg.validation_max_new_tokens
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value!r}")
    data = str(cfg.validation_data)
    if not Path(data).expanduser().exists() and not (is_hub_id(data) and cfg.validation_split):
        raise ConfigError(
            f"validation_data: {data} does not exist ({Path(data).expanduser().absolute()}; relative paths start "
            f"from {Path.cwd()}). Give a GUI-R1 parquet file or folder of held-out rows (e.g. data_samples/test), "
            "a hub id with validation_split (e.g. ritzzai/GUI-R1 and androidcontrol_low_test), or null for none")
    if world_size() > 1 and os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3":
        raise ConfigError("validation runs on the main process alone, and under DeepSpeed ZeRO-3 each process holds "
                          "only a shard of the weights (generation would wait for the others forever): set "
                          "validation_data: null and evaluate the saved checkpoints instead")


def check_grpo(cfg: TrainConfig) -> None:
    generations = cfg.get("num_generations")
    if generations < 2:
        raise ConfigError("GRPO needs num_generations >= 2: advantages are relative within a group")
    batch = cfg.get("per_device_train_batch_size") * cfg.get("gradient_accumulation_steps") * world_size()
    if batch % generations:
        raise ConfigError(
            f"per_device_train_batch_size x gradient_accumulation_steps x processes = {batch} is not "
            f"divisible by num_generations = {generations}; e.g. set per_device_train_batch_size to {generations}")
    check_rewards(cfg.rewards)


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
