"""Merging a trained LoRA adapter into its base model, for inference without PEFT."""

from __future__ import annotations

from pathlib import Path

DTYPES = ("float32", "bfloat16", "float16")


def merge_adapter(base: str, adapter: str, out: str, dtype: str = "float32", dequantize: bool = False) -> Path:
    """Write `base` + LoRA `adapter` merged into one model folder (CLI: `scripts/merge_adapter.py`).

    A QLoRA adapter was trained against the NF4-rounded base weights. By default it is merged into the
    full-precision base (a model slightly different from the one trained); `dequantize=True` loads the
    base in 4-bit as training did and merges into its dequantized weights. Evaluating the 4-bit base
    with the adapter (`load_policy(base, "4bit", adapter=...)`) needs no merge at all. The processor
    is the adapter folder's when training saved one there (its pixel bounds), else `base`'s."""
    import torch

    from ..modeling import load_policy

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    torch_dtype = getattr(torch, dtype)
    if dequantize:
        from peft import PeftModel

        policy = load_policy(base, "4bit", lora=None, dtype=torch_dtype, device="cpu", min_pixels=None,
                             max_pixels=None)
        merged = PeftModel.from_pretrained(policy.model.dequantize(dtype=torch_dtype), adapter).merge_and_unload()
    else:
        policy = load_policy(base, None, lora=None, adapter=adapter, dtype=torch_dtype, device="cpu",
                             min_pixels=None, max_pixels=None)
        merged = policy.model.merge_and_unload()
    merged.save_pretrained(out)
    processor = policy.processor
    if any((Path(adapter) / name).is_file() for name in ("processor_config.json", "preprocessor_config.json")):
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(adapter)
    processor.save_pretrained(out)
    return Path(out)
