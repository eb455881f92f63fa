"""The checks that need more than one setting: ours against TRL's, and both against the machine
(CUDA, bf16, bitsandbytes, the data, the launcher). They run before any model loads; each message
says what to change."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ..data import is_hub_id
from ..modeling import native_bf16
from ..runio import world_size
from .arguments import ConfigError, TrainArguments

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


def check_config(cfg: TrainArguments) -> None:
    """Raise `ConfigError` for the first setting that cannot run (`cfg`: a `config.TrainConfig`)."""
    check_report_to(cfg)
    check_model(cfg)
    check_device(cfg)
    check_steps(cfg)
    check_validation(cfg)
    if cfg.method == "grpo":
        check_grpo(cfg)


def check_report_to(cfg: TrainArguments) -> None:
    report_to = cfg.get("report_to")
    for name in [report_to] if isinstance(report_to, str) or report_to is None else report_to:
        if name not in REPORTERS:
            raise ConfigError(f"report_to must be none, tensorboard or wandb, got {report_to!r}")


def check_model(cfg: TrainArguments) -> None:
    if cfg.quantization and importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError(f"quantization {cfg.quantization!r} needs bitsandbytes: `pip install bitsandbytes` "
                          "or set quantization: null")
    if cfg.model != "tiny" and not Path(cfg.model).exists() and "/" not in cfg.model:
        raise ConfigError(f"model {cfg.model!r} is neither 'tiny', a folder, nor a hub id 'owner/name'")


def check_device(cfg: TrainArguments) -> None:
    import torch

    cuda = torch.cuda.is_available()
    if cfg.device == "cuda" and not cuda:
        raise ConfigError(NO_CUDA.format(torch=torch.__version__, cuda=torch.version.cuda or "none (a CPU build)"))
    if cfg.method == "grpo" and cfg.get("use_vllm") and not cuda:
        raise ConfigError("use_vllm needs a CUDA GPU (vLLM is CUDA-only); set use_vllm: false")
    if cfg.get("bf16") and not native_bf16():
        raise ConfigError("bf16: true needs a CUDA GPU with native bf16 (Ampere or newer; a T4 only emulates it); "
                          "set bf16: null (auto: fp16 weights, an fp32 vision tower)")


def check_steps(cfg: TrainArguments) -> None:
    for name in POSITIVE + (POSITIVE_GRPO if cfg.method == "grpo" else ()):
        value = cfg.get(name)
        if value is None or int(value) < 1:
            raise ConfigError(f"{name} must be at least 1, got {value!r}")
    if cfg.get("max_steps") == 0 or (cfg.get("max_steps") < 0 and cfg.get("num_train_epochs") <= 0):
        raise ConfigError("set max_steps > 0 or num_train_epochs > 0")
    if not cfg.get("learning_rate") > 0:
        raise ConfigError(f"learning_rate must be positive, got {cfg.get('learning_rate')!r}")


def check_validation(cfg: TrainArguments) -> None:
    """Validation data that exists (a hub id needs its split: a mistyped relative path has a hub
    id's shape, and a hub dataset's default split is its training rows), and a launcher under which
    one process can generate alone."""
    if cfg.validation_data is None:
        return
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


def check_grpo(cfg: TrainArguments) -> None:
    generations = cfg.get("num_generations")
    if generations < 2:
        raise ConfigError("GRPO needs num_generations >= 2: advantages are relative within a group")
    batch = cfg.get("per_device_train_batch_size") * cfg.get("gradient_accumulation_steps") * world_size()
    if batch % generations:
        raise ConfigError(
            f"per_device_train_batch_size x gradient_accumulation_steps x processes = {batch} is not "
            f"divisible by num_generations = {generations}; e.g. set per_device_train_batch_size to {generations}")
