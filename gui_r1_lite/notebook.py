"""Helpers every notebook calls first: the environment it runs in, and where its outputs go."""

from __future__ import annotations

import importlib
import platform
import sys
from pathlib import Path

PACKAGES = ("torch", "torchvision", "transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes",
            "papermill")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "gui_r1_lite": importlib.import_module("gui_r1_lite").__version__}
    for name in PACKAGES:
        try:
            out[name] = getattr(importlib.import_module(name), "__version__", "?")
        except Exception:  # noqa: BLE001 - an optional package may be missing or broken
            out[name] = "not installed"
    return out


def device_description() -> str:
    try:
        import torch
    except ImportError:
        return "cpu (torch not installed)"
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        return f"cuda: {p.name}, {p.total_memory / 2**30:.1f} GiB (x{torch.cuda.device_count()})"
    return f"cpu: {torch.get_num_threads()} threads"


def show_environment() -> dict[str, str]:
    """Print (and return) package versions and the device; the first cell of every notebook."""
    info = {**versions(), "device": device_description(), "executable": sys.executable}
    width = max(map(len, info))
    for k, v in info.items():
        print(f"{k:<{width}}  {v}")
    return info


def output_path(output_dir: str | Path, *parts: str) -> Path:
    """`output_dir/parts...`, with parent folders made."""
    path = Path(output_dir, *parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
