"""Reference data shipped with the package so that every clone and install can check against it
(see README.md beside this file): the original GUI-R1's scored reward cases, and the published
generation settings of Qwen2.5-VL-3B-Instruct."""

from __future__ import annotations

import json
from importlib import resources

from ..runio import read_jsonl

REWARD_CASES = "gui_r1_reward_cases.jsonl"
QWEN2_5_VL_3B_GENERATION_CONFIG = "qwen2_5_vl_3b_generation_config.json"


def reward_cases() -> list[dict]:
    """The 240 completions the original scored: completion, ground truth and its three scores."""
    with resources.as_file(resources.files(__package__) / REWARD_CASES) as path:
        return read_jsonl(path)


def qwen2_5_vl_3b_generation_config() -> dict:
    """Qwen2.5-VL-3B-Instruct's published `generation_config.json`: near-greedy sampling
    (top_k 1, top_p 0.001, temperature 0.1, repetition_penalty 1.05) that `generate` falls back on
    for every field a caller leaves None."""
    text = (resources.files(__package__) / QWEN2_5_VL_3B_GENERATION_CONFIG).read_text(encoding="utf-8")
    return json.loads(text)
