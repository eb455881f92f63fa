"""Load the policy: a Qwen2.5-VL model and its processor from a hub id or a local folder, in full
precision, 4-bit NF4 or 8-bit, with a new or saved LoRA adapter (settings in `lora.py`, re-exported
here). The same call serves the 3B, the 7B and the tiny local model."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from .errors import UsageError
from .geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS
from .hub import hub_offline, hub_reachable, is_hub_id
from .lora import LoraSettings, lora_targets, resolve_lora, set_vision_trainable, settle_peft_torchao, vision_tower

logger = logging.getLogger(__name__)

# peft imports bitsandbytes whenever it is installed; on an AVX512-BF16 CPU that import logs a
# warning when an optional hub kernel for the 4-bit CPU matmul is absent (the fallback is correct).
# The filter holds back that one message and `load_policy` repeats it for a 4-bit model on the CPU.
_BNB_CPU_LOGGER = "bitsandbytes.backends.cpu.ops"
_BNB_KERNEL_MESSAGE = "Failed to load CPU gemm_4bit_forward from kernels-community"


class _HeldBnbKernelMessage(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.held: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(_BNB_KERNEL_MESSAGE):
            self.held.append(record.getMessage())
            return False
        return True

    def release(self) -> None:
        """Log the held message once."""
        while self.held:
            logger.warning("bitsandbytes: %s", self.held.pop())


# Installed before anything imports bitsandbytes (peft and trl come in only through modules that
# import this one first); a logger made early is the one bitsandbytes gets later.
_bnb_kernel_message = _HeldBnbKernelMessage()
logging.getLogger(_BNB_CPU_LOGGER).addFilter(_bnb_kernel_message)

#: bitsandbytes weight formats: "4bit" is QLoRA's NF4 with double quantisation, "8bit" LLM.int8.
Quantization = Literal["4bit", "8bit"]
QUANTIZATIONS: tuple[str, ...] = get_args(Quantization)


def check_quantization(quantization: str | None) -> Quantization | None:
    """`quantization` itself when it is None or one of `QUANTIZATIONS`; else a ValueError."""
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be None or one of {QUANTIZATIONS}, got {quantization!r}")
    return quantization  # type: ignore[return-value]


class ModelSourceError(UsageError, FileNotFoundError):
    """A model or adapter source that is neither a usable folder nor a loadable hub id. Also a
    `FileNotFoundError`, as transformers raises for a missing model."""


@dataclass
class Policy:
    """A loaded policy: the (possibly PEFT-wrapped) model, its processor, and how it was loaded."""
    model: Any
    processor: Any
    device: Any
    dtype: Any = None
    quantization: str | None = None
    lora: LoraSettings | None = None
    source: str = ""
    adapter: str | None = None


def free_memory() -> None:
    """Give back what dropped models held: Python's garbage, then CUDA's cached blocks."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def resolve_device(device=None):
    """`None` -> this process's CUDA device (`cuda:$LOCAL_RANK`) when there is one, else CPU."""
    import torch

    if device is None:
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", torch.cuda.current_device())))
        return torch.device("cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"device={device!r} asks for CUDA, but torch {torch.__version__} sees no CUDA device; "
                               "pass device='cpu' (or device=None to pick one), or install a CUDA build of torch")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise RuntimeError(f"device={device!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    elif dev.type not in ("cpu", "mps", "xpu"):
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or None, got {device!r}")
    return dev


def native_bf16() -> bool:
    """Whether this process's CUDA device computes bf16 natively (Ampere or newer): mixed precision,
    the load dtype and 4-bit compute follow it. `is_bf16_supported()` alone also says yes where bf16
    is only emulated (a T4)."""
    import torch

    if not torch.cuda.is_available():
        return False
    try:
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:  # torch without the keyword: compute capability 8.0 is where bf16 is native
        return torch.cuda.get_device_capability()[0] >= 8


#: Said once per process when a CUDA device without native bf16 makes the run fp16.
FP16_NOTE = ("[modeling] this GPU has no native bf16: the language model's weights and computation run in fp16, "
             "the vision tower in fp32 (its MLP overflows in fp16) and LoRA weights in fp32")
_fp16_noted = False


def resolve_dtype(dtype, device):
    """`None` -> float32 on CPU, bfloat16 on a CUDA device that has it natively, else float16."""
    import torch

    global _fp16_noted
    if dtype is None:
        if device.type != "cuda":
            return torch.float32
        if native_bf16():
            return torch.bfloat16
        if not _fp16_noted:
            print(FP16_NOTE, flush=True)
            _fp16_noted = True
        return torch.float16
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if dtype in names:
        return names[dtype]
    raise ValueError(f"dtype must be a torch.dtype, one of {sorted(names)} or None, got {dtype!r}")


def outside_autocast(module) -> None:
    """Run `module`'s forward with autocast off: under fp16 mixed precision (TRL's `fp16`, the loss scaler's
    partner on a GPU without native bf16) autocast would compute the fp32 vision tower's matmuls in fp16,
    where its MLP overflows. Its output is cast to the language model's dtype where it is used, as without
    autocast. A bound method, as accelerate wraps forwards: a deep copy of the model rebinds it to the copy."""
    if getattr(module.forward, "__func__", None) is not _forward_outside_autocast:
        module.forward = types.MethodType(_forward_outside_autocast, module)


def _forward_outside_autocast(self, *args, **kwargs):
    import torch

    with torch.autocast(next(self.parameters()).device.type, enabled=False):
        return type(self).forward(self, *args, **kwargs)


#: The variables through which torch reads its CUDA allocator's settings (the second is torch >= 2.9's name).
ALLOC_CONF_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def set_cuda_allocator(conf: str | None) -> str | None:
    """Apply `conf` (PYTORCH_CUDA_ALLOC_CONF's syntax, e.g. "expandable_segments:True") to this process's CUDA
    memory, unless the environment already sets the allocator (it wins). Before CUDA starts it goes into the
    environment, which torch reads then; once CUDA runs (a notebook that used the GPU already) into the running
    allocator, for the memory it reserves from then on. Returns the settings in force (None: torch's own)."""
    import torch

    current = next((os.environ[v] for v in ALLOC_CONF_VARIABLES if os.environ.get(v)), None)
    if not conf or current:
        return current
    os.environ[ALLOC_CONF_VARIABLES[0]] = conf
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.memory._set_allocator_settings(conf)
    return conf


#: Kept out of quantisation: the vision tower (the original trains it, and NF4 costs it most) and the
#: output head. "visual" covers the older layout where the tower sits at the top.
QUANTIZATION_SKIP = ("model.visual", "visual", "lm_head")


def quantization_config(quantization: str | None, device, compute_dtype=None):
    """The `BitsAndBytesConfig` for `quantization` ("4bit": NF4, double quantisation, computing in
    `compute_dtype`, by default `resolve_dtype`'s on CUDA and fp32 on CPU; "8bit": LLM.int8), or None."""
    if check_quantization(quantization) is None:
        return None
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ImportError(f"quantization={quantization!r} needs bitsandbytes: `pip install 'bitsandbytes>=0.50'` "
                          "(or `pip install gui_r1_lite[quant]`), or pass quantization=None")
    import torch
    from transformers import BitsAndBytesConfig

    skip = list(QUANTIZATION_SKIP)
    if quantization == "4bit":
        if compute_dtype is None:
            compute_dtype = resolve_dtype(None, device) if device.type == "cuda" else torch.float32
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                  bnb_4bit_compute_dtype=compute_dtype, llm_int8_skip_modules=skip)
    return BitsAndBytesConfig(load_in_8bit=True, llm_int8_skip_modules=skip)


def _settle_bnb_cpu_kernels(model, training: bool) -> int:
    """bitsandbytes 0.50 repacks a Linear4bit's weights for its AVX512-BF16 CPU kernel on the first
    eval-mode, no-grad forward; the repacked layer fails in a later training forward, and packing
    needs in_features % 64 == 0 and out_features % 32 == 0. Keep the generic path for models that
    will be trained and layers of unpackable shape; returns how many layers were switched."""
    switched = 0
    for module in model.modules():
        if type(module).__name__ != "Linear4bit" or not getattr(module, "support_avx512bf16_for_cpu", False):
            continue
        unpackable = module.in_features % 64 != 0 or module.out_features % 32 != 0
        if training or unpackable:
            module.support_avx512bf16_for_cpu = False
            switched += 1
    return switched


def _looked_at(source: str) -> str:
    """Where `source` was looked for on disk, so that a mistyped path shows."""
    return f"{os.path.abspath(os.path.expanduser(source))} does not exist; relative paths start from {os.getcwd()}"


def _not_found(source: str, exc: Exception, unreachable: bool = False) -> ModelSourceError:
    why = ("the Hugging Face hub is not reachable from here (a short connection probe failed; set "
           "HF_HUB_OFFLINE=1 to skip the probe) and it is not in the local cache"
           if unreachable else "the Hugging Face hub could not provide it")
    return ModelSourceError(
        f"could not load {source!r}: no such local folder ({_looked_at(source)}); as a hub model id it fails too: "
        f"{why} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). If you meant a local "
        f"folder, fix the path. Download it on a machine with internet, e.g. `huggingface-cli download {source} "
        f"--local-dir <folder>` (`hf download {source} --local-dir <folder>` with huggingface_hub >= 1.0), copy "
        "the folder here and pass the local folder instead of the hub id")


def _cache_only(source: str) -> bool:
    """True when hub id `source` must come from the local cache: the hub does not answer a short
    probe (HF_HUB_OFFLINE=1 skips it)."""
    return not (Path(source).is_dir() or hub_offline() or hub_reachable())


def _check_source(model_id_or_dir: str | os.PathLike) -> str:
    source = os.fspath(model_id_or_dir)
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelSourceError(f"{source}: folder has no config.json; expected a saved Qwen2.5-VL model "
                                    "(save_pretrained output, or a hub snapshot)")
        return str(path)
    if path.exists():
        raise ModelSourceError(f"{source}: is a file; expected a model folder or a hub id like "
                               "'Qwen/Qwen2.5-VL-3B-Instruct'")
    if not is_hub_id(source):
        raise ModelSourceError(f"{source}: no such folder ({_looked_at(source)}), and not a hub id of the form "
                               "'owner/name' either")
    return source


def _load_processor(source: str, min_pixels: int | None, max_pixels: int | None, cache_only: bool):
    """The processor with the image and video resize bounds set (None keeps the saved value) and
    left padding (batched generation)."""
    from transformers import AutoProcessor
    from transformers.image_processing_utils import SizeDict

    processor = _from_pretrained(AutoProcessor, source, cache_only,
                                 **({"local_files_only": True} if cache_only else {}))
    for sub in (getattr(processor, "image_processor", None), getattr(processor, "video_processor", None)):
        if sub is None:
            continue
        size = dict(sub.size) if sub.size is not None else {}
        lo = min_pixels if min_pixels is not None else size.get("shortest_edge")
        hi = max_pixels if max_pixels is not None else size.get("longest_edge")
        if lo is not None and hi is not None and not 0 < lo <= hi:
            raise ValueError(f"need 0 < min_pixels <= max_pixels, got {lo}, {hi}")
        # transformers 5 reads the bounds from `size`; min_pixels/max_pixels kwargs are deprecated.
        sub.size = SizeDict(shortest_edge=lo, longest_edge=hi)
    processor.tokenizer.padding_side = "left"
    return processor


def load_policy(model_id_or_dir: str | os.PathLike, quantization: Quantization | None = None,
                lora: LoraSettings | dict | bool | None = True, *, min_pixels: int | None = GUI_R1_MIN_PIXELS,
                max_pixels: int | None = GUI_R1_MAX_PIXELS, device=None, dtype=None,
                adapter: str | os.PathLike | None = None, adapter_trainable: bool = False,
                train_vision: bool | None = None, gradient_checkpointing: bool = False,
                attn_implementation: str | None = None) -> Policy:
    """Load a Qwen2.5-VL policy and its processor; a bad setting raises before anything loads.

    - `quantization`: None, "4bit" (NF4) or "8bit"; the vision tower and `lm_head` stay unquantised.
    - `lora`: True (`LoraSettings()`), a `LoraSettings` or dict of its fields, or None/False for none.
    - `adapter`: a saved adapter folder instead of a new one, frozen unless `adapter_trainable`.
    - `train_vision`: overrides `LoraSettings.train_vision`; the vision tower is frozen by default.
    - `min_pixels` / `max_pixels`: the resize bounds (GUI-R1's by default; None keeps the saved ones).
    - `device` / `dtype`: None picks as `resolve_device` / `resolve_dtype`; in fp16 the vision tower
      is kept in fp32 (its MLP overflows in fp16)."""
    from transformers import AutoModelForImageTextToText

    settings = _adapter_settings(lora, adapter, train_vision)
    vision_trainable = bool(train_vision) if train_vision is not None else bool(settings and settings.train_vision)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    qconfig = quantization_config(quantization, dev, torch_dtype if dev.type == "cuda" else None)
    source = _check_source(model_id_or_dir)

    hidden = settle_peft_torchao()  # before PEFT wraps or merges anything in this process
    if hidden:
        logger.info("torchao %s is older than this peft accepts; LoRA goes on without it (unused here)", hidden)
    cache_only = _cache_only(source)  # one probe for the processor and the weights
    processor = _load_processor(source, min_pixels, max_pixels, cache_only)
    model = _from_pretrained(AutoModelForImageTextToText, source, cache_only,
                             **_model_kwargs(torch_dtype, dev, qconfig, attn_implementation, cache_only))
    if str(torch_dtype) == "torch.float16":
        vision_tower(model).float()  # Qwen2.5-VL's vision MLP overflows in fp16; its output is cast back
        outside_autocast(vision_tower(model))  # and fp16 mixed precision (a T4's) must not compute it in fp16

    training = settings is not None or (adapter is not None and adapter_trainable)
    if quantization == "4bit" and dev.type == "cpu":
        _settle_bnb_cpu_kernels(model, training)
        _bnb_kernel_message.release()
    model = _prepare_for_training(model, quantized=qconfig is not None, training=training,
                                  gradient_checkpointing=gradient_checkpointing)
    if settings is not None or adapter is not None:
        model = _with_adapter(model, settings, adapter, adapter_trainable)
    elif qconfig is None:
        set_vision_trainable(model, vision_trainable)  # full fine-tuning (PEFT freezes the base model itself)
    if not training:
        model.eval()
    return Policy(model=model, processor=processor, device=dev, dtype=torch_dtype, quantization=quantization,
                  lora=settings, source=source, adapter=None if adapter is None else os.fspath(adapter))


def _adapter_settings(lora: LoraSettings | dict | bool | None, adapter: str | os.PathLike | None,
                      train_vision: bool | None) -> LoraSettings | None:
    """The new adapter's settings (None with a saved `adapter` or without LoRA)."""
    settings = resolve_lora(lora)
    if adapter is not None and lora not in (True, None, False):
        raise ValueError("pass either lora= (a new adapter) or adapter= (a saved one), not both")
    if adapter is not None:
        settings = None
        if not (Path(adapter).expanduser() / "adapter_config.json").is_file():
            raise ModelSourceError(f"{adapter}: no adapter_config.json; expected a folder saved by "
                                    "PeftModel.save_pretrained / the trainer's output_dir")
    if train_vision is not None and settings is not None:
        settings = LoraSettings(**{**settings.to_dict(), "train_vision": bool(train_vision)})
    return settings


def _model_kwargs(torch_dtype, dev, qconfig, attn_implementation: str | None, cache_only: bool) -> dict[str, Any]:
    from transformers.integrations import is_deepspeed_zero3_enabled

    optional = {"local_files_only": True if cache_only else None, "quantization_config": qconfig,
                "attn_implementation": attn_implementation,
                # ZeRO-3 places (and partitions) the weights itself
                "device_map": None if is_deepspeed_zero3_enabled() else {"": str(dev)}}
    return {"dtype": torch_dtype, **{k: v for k, v in optional.items() if v is not None}}


def _from_pretrained(cls, source: str, cache_only: bool, **kwargs):
    """`cls.from_pretrained`; a hub id that fails is a `ModelSourceError` saying what to do."""
    try:
        return cls.from_pretrained(source, **kwargs)
    except OSError as exc:
        if Path(source).is_dir():
            raise
        raise _not_found(source, exc, unreachable=cache_only) from exc


@contextlib.contextmanager
def _quiet_peft() -> Iterator[None]:
    """peft calls a transformers API that 5.x marks deprecated; the warning is not the caller's to act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


def _prepare_for_training(model, *, quantized: bool, training: bool, gradient_checkpointing: bool):
    """Before the adapter: a quantised model's base weights frozen, and gradient checkpointing
    (non-reentrant, with input gradients) when asked. Not `peft.prepare_model_for_kbit_training`: it
    also casts every unquantised parameter to fp32 (the 3B's tied embedding: +0.6 GB) and so the
    whole residual stream (activations x2), which QLoRA does not need."""
    if quantized and training:
        for p in model.parameters():
            p.requires_grad_(False)
    if gradient_checkpointing:
        # transformers 5.24 renamed it (and its keyword); the older name serves the releases before
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    return model


def _with_adapter(model, settings: LoraSettings | None, adapter: str | os.PathLike | None, adapter_trainable: bool):
    """`model` wrapped with a new LoRA adapter (`settings`) or a saved one (`adapter`)."""
    from peft import PeftModel, get_peft_model

    with _quiet_peft():
        if settings is not None:
            return get_peft_model(model, settings.to_peft())
        return PeftModel.from_pretrained(model, os.fspath(adapter), is_trainable=adapter_trainable)


__all__ = [
    "FP16_NOTE", "QUANTIZATIONS", "QUANTIZATION_SKIP", "LoraSettings", "ModelSourceError", "Policy", "Quantization",
    "check_quantization", "free_memory", "load_policy", "lora_targets", "native_bf16", "outside_autocast",
    "quantization_config", "resolve_device", "resolve_dtype", "set_cuda_allocator", "set_vision_trainable",
    "vision_tower",
]
