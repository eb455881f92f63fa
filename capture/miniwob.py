"""MiniWoB++ samples (task pages of the PyPI package `miniwob`) captured in headless Chromium: every
scripted step of every episode, one screenshot of the 160x210 task area per step, with the step
actually performed so the page's own reward checks every episode (a box that misses shows up as a
reward below 1). The task scripts and page driving are the closed loop's (`harness.online.miniwob`,
re-exported here), which the closed loop plays with too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.online.browser import chromium
from harness.online.miniwob import (
    TASKS,
    TEST_SEEDS,
    TRAIN_SEEDS,
    Expected,
    MStep,
    Step,
    episode_state,
    expected_step,
    html_dir,
    miniwob_version,
    new_task_page,
    seed_of,
    start_episode,
    wrap_clip,
)

from .common import write_steps


@dataclass
class EpisodeResult:
    task: str
    seed: int
    steps: list[Step] = field(default_factory=list)
    raw_reward: float | None = None
    done: bool = False
    skipped: str | None = None


def perform(page, expected: Expected) -> None:
    """Do an expected step on the page: type its text, or click the centre of its target."""
    if expected.step.action == "type":
        page.keyboard.type(expected.step.input_text)
    else:
        page.mouse.click(*expected.click_at)


def run_episode(page, task: str, seed: int, split: str, act: bool = True) -> EpisodeResult:
    """Start episode `seed` of `task`, capture every step and (with `act`) perform it, then read
    the page's raw reward (WOB_RAW_REWARD_GLOBAL: 1.0 = solved)."""
    result = EpisodeResult(task, seed)
    instruction = start_episode(page, task, seed)
    history: list[str] = []
    pending: list[Step] = []
    for k in range(len(TASKS[task])):
        expected = expected_step(page, task, seed, k, instruction, history, split)
        if expected.skipped:
            result.skipped = expected.skipped
            return result
        pending.append(expected.step)
        history.append(expected.history)
        if act:
            perform(page, expected)
    result.steps = pending
    if act:
        result.done, result.raw_reward = episode_state(page)
    return result


def capture(tasks: Sequence[str] | None = None, train_seeds: Iterable[int] = TRAIN_SEEDS,
            test_seeds: Iterable[int] = TEST_SEEDS, act: bool = True, progress=None) -> tuple[list[Step], dict]:
    """All steps of `tasks` (default: every task in TASKS) for the training and held-out seeds,
    and a report: episodes, skipped episodes, and the page's raw reward per task."""
    tasks = list(tasks or TASKS)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown MiniWoB tasks {unknown}; known: {sorted(TASKS)}")
    train_seeds, test_seeds = list(train_seeds), list(test_seeds)
    overlap = sorted(set(train_seeds) & set(test_seeds))
    if overlap:
        raise ValueError(f"training and held-out seeds overlap: {overlap[:10]}")
    html_dir()
    steps: list[Step] = []
    report: dict = {"miniwob": miniwob_version(), "tasks": {}}
    with chromium() as browser:
        page = new_task_page(browser)
        for task in tasks:
            rep = {"episodes": 0, "skipped": [], "rewards": {}}
            for split, seeds in (("train", train_seeds), ("test", test_seeds)):
                for seed in seeds:
                    res = run_episode(page, task, seed, split, act=act)
                    rep["episodes"] += 1
                    if res.skipped:
                        rep["skipped"].append(f"seed{seed}: {res.skipped}")
                        continue
                    steps.extend(res.steps)
                    if act:
                        key = f"{res.raw_reward:g}" if res.done else "not done"
                        rep["rewards"][key] = rep["rewards"].get(key, 0) + 1
                    if progress:
                        progress(task, seed, res)
            report["tasks"][task] = rep
    return steps, report


def write(out_dir: str | os.PathLike, tasks: Sequence[str] | None = None,
          train_seeds: Iterable[int] = TRAIN_SEEDS, test_seeds: Iterable[int] = TEST_SEEDS) -> dict:
    """Capture and write `out/train/miniwob_train.parquet` and `out/test/miniwob_test.parquet`."""
    steps, report = capture(tasks, train_seeds, test_seeds)
    bad = {t: r["rewards"] for t, r in report["tasks"].items() if set(r["rewards"]) - {"1"}}
    if bad:
        raise RuntimeError(f"performing the ground-truth steps did not solve every episode: {bad}")
    report["files"] = write_steps(steps, out_dir, "miniwob_train", "miniwob_test")
    return report


__all__ = ["TASKS", "TEST_SEEDS", "TRAIN_SEEDS", "EpisodeResult", "Expected", "MStep", "capture", "episode_state",
           "expected_step", "html_dir", "miniwob_version", "new_task_page", "perform", "run_episode", "seed_of",
           "start_episode", "wrap_clip", "write"]
