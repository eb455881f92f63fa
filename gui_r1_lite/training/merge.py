"""Merging a trained LoRA adapter into its base model, for inference without PEFT."""

from __future__ import annotations

from pathlib import Path


def merge_adapter(base: str, adapter: str, out: str, dtype: str = "float32") -> Path:
    """Write `base` + LoRA `adapter` merged into one model folder (full precision) for inference.

    The processor comes from the adapter folder when training saved one there (it holds the pixel
    bounds the adapter was trained with), else from `base`. `scripts/merge_adapter.py` is the CLI."""
    import torch

    from ..modeling import load_policy

    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    policy = load_policy(base, None, lora=None, adapter=adapter, dtype=getattr(torch, dtype), device="cpu",
                         min_pixels=None, max_pixels=None)
    merged = policy.model.merge_and_unload()
    merged.save_pretrained(out)
    processor = policy.processor
    if any((Path(adapter) / name).is_file() for name in ("processor_config.json", "preprocessor_config.json")):
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(adapter)
    processor.save_pretrained(out)
    return Path(out)


