"""Paths and loaders shared by the tests of benchmarks/bench_gpu_recipe.py (tests/test_bench_gpu_recipe.py) and
of what travels to the device image (tests/test_bench_gpu_recipe_wheels.py), and by their fixtures in
tests/conftest.py (`bench`, `tiny_results`). Test modules import these from here, never from each other."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_gpu_recipe.py"
GRPO = ROOT / "configs" / "grpo_qwen2_5_vl_3b_qlora.yaml"
SFT = ROOT / "configs" / "sft_qwen2_5_vl_3b_qlora.yaml"
STEPS = 2


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _load(path: Path):
    """The script at `path` (beside the package, not importable by name) as a module."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
