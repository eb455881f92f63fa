"""Merging a trained LoRA adapter into its base model, for inference without PEFT."""

from __future__ import annotations

from pathlib import Path

DTYPES = ("float32", "bfloat16", "float16")


def merge_adapter(base: str, adapter: str, out: str, dtype: str = "float32", dequantize: bool = False) -> Path:
    """Write `base` + LoRA `adapter` merged into one model folder for inference.

    A QLoRA adapter was trained against the NF4-rounded base weights, not the full-precision ones.
    By default it is merged into the full-precision base (the model differs slightly from the one
    trained and evaluated); `dequantize=True` merges it into the weights it was trained against:
    the base is loaded in 4-bit NF4 as training loaded it, dequantized, then merged. Evaluating the
    4-bit base with the adapter (`load_policy(base, "4bit", adapter=...)`) needs no merge at all.

    The processor comes from the adapter folder when training saved one there (it holds the pixel
    bounds the adapter was trained with), else from `base`. `scripts/merge_adapter.py` is the CLI."""
    import torch

    from ..modeling import load_policy

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    torch_dtype = getattr(torch, dtype)
    if dequantize:
        policy = load_policy(base, "4bit", lora=None, dtype=torch_dtype, device="cpu", min_pixels=None,
                             max_pixels=None)
        merged = _merge_into(policy.model.dequantize(dtype=torch_dtype), adapter)
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


def _merge_into(model, adapter: str):
    """`model` (plain weights) with the saved LoRA `adapter` merged in."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, adapter).merge_and_unload()
