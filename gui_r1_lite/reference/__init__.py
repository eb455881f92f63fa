"""Scored cases from the original GUI-R1 code, shipped with the package so that every clone and
install can check `compat="official"` against them (see README.md beside this file)."""

from __future__ import annotations

from importlib import resources

from ..runio import read_jsonl

REWARD_CASES = "gui_r1_reward_cases.jsonl"


def reward_cases() -> list[dict]:
    """The 240 completions the original scored: completion, ground truth and its three scores."""
    with resources.as_file(resources.files(__package__) / REWARD_CASES) as path:
        return read_jsonl(path)
