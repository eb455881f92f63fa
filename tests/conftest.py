"""Shared fixtures: the tiny Qwen2.5-VL is built once per session; marker-based skips."""

from __future__ import annotations

import importlib.util
import os
import shutil

# Before anything imports huggingface_hub: no network here, and tokenizers must not fork threads.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

TINY_SEED = 0


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny Qwen2.5-VL saved on disk (default dims, seed 0). Treat it as read-only."""
    from gui_r1_lite.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_qwen2_5_vl"), seed=TINY_SEED)


@pytest.fixture
def tiny_policy(tiny_model_dir):
    """A fresh policy on the tiny model per test: default LoRA, CPU, the tiny processor bounds."""
    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    return load_policy(tiny_model_dir, min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS, device="cpu")


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    checks = {
        "gpu": (_has_cuda, "needs a CUDA device"),
        "browser": (lambda: shutil.which("chromium") is not None and importlib.util.find_spec("playwright") is not None,
                    "needs /usr/bin/chromium and Python playwright"),
        "desktop": (lambda: shutil.which("Xvfb") is not None, "needs Xvfb and AT-SPI"),
    }
    results: dict[str, bool] = {}
    for item in items:
        for marker, (check, reason) in checks.items():
            if marker in item.keywords:
                if marker not in results:
                    results[marker] = bool(check())
                if not results[marker]:
                    item.add_marker(pytest.mark.skip(reason=reason))
