"""Reference data shipped with the package (README.md beside this file): the original GUI-R1's
scored reward cases, and Qwen2.5-VL-3B-Instruct's published configuration files."""

from __future__ import annotations

import json
from importlib import resources

from ..runio import read_jsonl


def reward_cases() -> list[dict]:
    """The 240 completions the original scored: completion, ground truth and its three scores."""
    with resources.as_file(resources.files(__package__) / "gui_r1_reward_cases.jsonl") as path:
        return read_jsonl(path)


def _shipped_json(name: str) -> dict:
    # A fresh dict on every call: callers scale and remap it in place.
    return json.loads((resources.files(__package__) / name).read_text(encoding="utf-8"))


def qwen2_5_vl_3b_config() -> dict:
    """Qwen2.5-VL-3B-Instruct's published `config.json`: text hidden 2048 x 36 layers, 16 heads, 2 KV
    heads, vocab 151,936, tied embeddings; vision depth 32, hidden 1280; bfloat16."""
    return _shipped_json("qwen2_5_vl_3b_config.json")


def qwen2_5_vl_3b_generation_config() -> dict:
    """Qwen2.5-VL-3B-Instruct's published `generation_config.json` (checked on 2026-12-05): near-greedy
    sampling (temperature 1e-06, repetition_penalty 1.05) that `generate` falls back on."""
    return _shipped_json("qwen2_5_vl_3b_generation_config.json")


def qwen2_5_vl_3b_preprocessor_config() -> dict:
    """Qwen2.5-VL-3B-Instruct's published `preprocessor_config.json` (3,136 to 12,845,056 pixels)."""
    return _shipped_json("qwen2_5_vl_3b_preprocessor_config.json")
