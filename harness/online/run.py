"""`evaluate_online`: a policy plays episodes of MiniWoB++ tasks in headless Chromium, one record
per step and per episode appended to the run folder (a stopped run resumes and skips finished
episodes), and `online.json` sums them up."""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gui_r1_lite.actions import check_compat
from gui_r1_lite.data import is_hub_id
from gui_r1_lite.errors import UsageError
from gui_r1_lite.evaluate import (
    BASELINES,
    Completer,
    ModelCompleter,
    as_completer,
    check_settings,
    completer_pixels,
    prediction_settings,
    require_positive,
)
from gui_r1_lite.progress import bar
from gui_r1_lite.runfolder import as_stored, completer_identity, model_identity, open_run_folder
from gui_r1_lite.runio import append_jsonl, clean_jsonl, iter_jsonl, write_json_atomic, write_text_atomic

from .browser import chromium, require_playwright
from .episode import PAGE_MAX_TIME_MS, PAGE_TIMEOUT_MS, SHOTS_DIR, STEPS_FILE, Settings, max_steps_for, run_episode
from .miniwob import TASKS, TEST_SEEDS, TRAIN_SEEDS, html_dir, miniwob_version, new_task_page
from .results import online_table, summarize_online

#: Online episodes start here by default: far from the seeds of data_samples/.
DEFAULT_SEED_START = 2000
#: Seeds whose episodes are in data_samples/ (MiniWoB rows): online episodes never use them.
RESERVED_SEEDS: dict[str, range] = {"training": TRAIN_SEEDS, "held-out": TEST_SEEDS}
#: Tasks on which the oracle solves every episode. The other scripted ones, click-test-2 and
#: click-button-sequence, place two buttons at random; when they overlap, the asked one's centre
#: lies under the other (capture skips those episodes; an online run cannot).
ORACLE_TASKS: tuple[str, ...] = tuple(t for t in TASKS if t not in ("click-test-2", "click-button-sequence"))
EPISODES_FILE = "episodes.jsonl"
ONLINE_JSON = "online.json"
ONLINE_MD = "online.md"


def known_tasks() -> list[str]:
    """Every task MiniWoB++ has (its task pages' names)."""
    return sorted(p.stem for p in html_dir().glob("*.html"))


def check_tasks(tasks: str | Iterable[str], oracle: bool = False) -> list[str]:
    """`tasks` (a list, or names separated by commas) checked against MiniWoB++'s; the oracle needs
    a task with a script (`miniwob.TASKS`)."""
    names = [t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip()]
    if not names:
        raise UsageError(f"no task given; pass MiniWoB++ task names, e.g. {','.join(ORACLE_TASKS[:3])}")
    known = known_tasks()
    for t in names:
        if t not in known:
            near = difflib.get_close_matches(t, known, n=3)
            hint = f"did you mean {', '.join(near)}? " if near else ""
            raise UsageError(f"unknown MiniWoB++ task {t!r}; {hint}the {len(known)} tasks are the page names in "
                             f"{html_dir()}")
    if oracle:
        unscripted = [t for t in names if t not in TASKS]
        if unscripted:
            raise UsageError(f"the oracle needs a task's scripted steps; {unscripted} have none. Scripted: "
                             f"{sorted(TASKS)} (every episode solved on {list(ORACLE_TASKS)})")
    return list(dict.fromkeys(names))


def episode_seeds(seed_start: int, episodes: int) -> list[int]:
    """The seeds of `episodes` episodes from `seed_start`; refused (`UsageError`) when they reach
    the seeds of data_samples/ (`RESERVED_SEEDS`)."""
    if episodes < 1:
        raise UsageError(f"episodes must be at least 1 (per task), got {episodes}")
    if seed_start < 0:
        raise UsageError(f"seed_start must be 0 or more, got {seed_start}")
    seeds = list(range(seed_start, seed_start + episodes))
    for what, reserved in RESERVED_SEEDS.items():
        clash = sorted(set(seeds) & set(reserved))
        if clash:
            raise UsageError(f"seeds {seeds[0]}–{seeds[-1]} reach the {what} seeds {reserved.start}–"
                             f"{reserved.stop - 1} of data_samples/ (e.g. {clash[0]}): those episodes were trained "
                             f"or tested on; start at {DEFAULT_SEED_START} (--seed-start) or above "
                             f"{max(r.stop - 1 for r in RESERVED_SEEDS.values())}")
    return seeds


def _policy(policy: Any, adapter: str | os.PathLike | None,
            penalty: float | None) -> tuple[Completer | None, str, dict, str | None]:
    """(completer, name, identity, model source). A model folder is not loaded here (its source is
    returned instead) so that cheap checks come first; a model without a repetition penalty of its
    own gets `penalty`."""
    if isinstance(policy, (str, os.PathLike)) and os.fspath(policy) not in BASELINES:
        source = os.fspath(policy)
        if not Path(source).expanduser().is_dir() and not is_hub_id(source):
            raise UsageError(f"model folder {source} does not exist (relative paths start from {Path.cwd()}); "
                             f"pass a saved model folder, a hub id, or one of {sorted(BASELINES)}")
        name = "+".join(os.fspath(p) for p in (source, adapter) if p is not None)
        return None, name, model_identity(source, adapter, repetition_penalty=penalty or 1.0), source
    if adapter is not None:
        raise UsageError("adapter goes with a model folder (policy=MODEL_DIR); a baseline or a loaded policy has none")
    completer = as_completer(os.fspath(policy) if isinstance(policy, os.PathLike) else policy)
    if isinstance(completer, ModelCompleter) and completer.repetition_penalty is None and penalty is not None:
        completer = completer.with_repetition_penalty(penalty)
    return completer, completer.name, completer_identity(completer), None


def open_online_folder(out_dir: str | os.PathLike, made_by: dict, about: dict | None = None,
                       overwrite: bool = False) -> Path:
    """`out_dir` as this run's folder (`runfolder.open_run_folder`)."""
    return open_run_folder(out_dir, made_by, results=[EPISODES_FILE, STEPS_FILE],
                           clear=[ONLINE_JSON, ONLINE_MD, SHOTS_DIR], holds=f"online episodes ({EPISODES_FILE})",
                           resume="to resume that run, run again with the same policy, tasks and settings",
                           overwrite=overwrite, about=about)


def finished_episodes(out: Path) -> dict[tuple[str, int], dict]:
    """The finished episodes of a run folder by (task, seed). Steps of an episode a stopped run left
    unfinished are dropped from the steps file (that episode is played again from its start)."""
    episodes = {(e["task"], e["seed"]): e for e in clean_jsonl(out / EPISODES_FILE, lambda r: "task" in r)}
    clean_jsonl(out / STEPS_FILE, lambda r: (r.get("task"), r.get("seed")) in episodes)
    return episodes


def read_episode(out_dir: str | os.PathLike, task: str | None = None, seed: int | None = None) -> list[dict]:
    """The step records of one finished episode of a run folder, in order (for `viz.episode_strip`):
    of `task` and `seed`, or by default the first of those with the most steps."""
    out = Path(out_dir)
    episodes = [e for e in iter_jsonl(out / EPISODES_FILE)
                if (task is None or e["task"] == task) and (seed is None or e["seed"] == seed)]
    if not episodes:
        raise ValueError(f"{out}: no finished episode" + (f" of {task}" if task else "")
                         + (f" with seed {seed}" if seed is not None else ""))
    chosen = max(episodes, key=lambda e: e["steps"])
    steps = [r for r in iter_jsonl(out / STEPS_FILE) if (r["task"], r["seed"]) == (chosen["task"], chosen["seed"])]
    return sorted(steps, key=lambda r: r["step"])


def evaluate_online(policy: Any, tasks: str | Sequence[str], episodes: int, seed_start: int,
                    out_dir: str | os.PathLike, *, max_steps: int | None = None,
                    adapter: str | os.PathLike | None = None, min_pixels: int | None = None,
                    max_pixels: int | None = None, max_new_tokens: int | None = None,
                    compat: str = "official", progress: bool = False, overwrite: bool = False,
                    preset: str | None = None) -> dict:
    """Play `episodes` episodes (seeds `seed_start`, `seed_start + 1`, …) of each task in a live
    MiniWoB++ page with `policy`, write every step to `out_dir`, and return (and write) online.json.

    `policy` is "oracle", "random", a model folder (or hub id, with its LoRA `adapter`), a loaded
    policy or a `Completer`. A folder begun by the same policy, tasks and settings resumes (more
    episodes extend it); with `overwrite`, one holding episodes made otherwise starts fresh.
    `max_steps` defaults to a task's scripted steps + 2 (10 without a script); the pixel bounds
    and `max_new_tokens` to the preset's (`evaluate.PRESETS`), else the processor's and 256.
    """
    compat = check_compat(compat)
    decoding = prediction_settings(preset, max_new_tokens=max_new_tokens, min_pixels=min_pixels,
                                   max_pixels=max_pixels)
    min_pixels, max_pixels, max_new_tokens = (decoding[k] for k in ("min_pixels", "max_pixels", "max_new_tokens"))
    completer, name, identity, source = _policy(policy, adapter, decoding["repetition_penalty"])
    names = check_tasks(tasks, oracle=name == "oracle" and source is None)
    seeds = episode_seeds(seed_start, episodes)
    require_positive({"max_steps": max_steps, "max_new_tokens": max_new_tokens})
    check_settings(None, min_pixels, max_pixels)
    made_by = as_stored({"policy": identity, "tasks": sorted(names), "compat": compat, "preset": decoding["preset"],
                         "min_pixels": min_pixels, "max_pixels": max_pixels, "max_new_tokens": max_new_tokens,
                         "max_steps": max_steps, "miniwob": miniwob_version(), "page_max_time_ms": PAGE_MAX_TIME_MS})
    out = open_online_folder(out_dir, made_by, {"policy_name": name}, overwrite=overwrite)
    done = finished_episodes(out)
    todo = [(t, s) for t in names for s in seeds if (t, s) not in done]
    if todo:
        require_playwright()  # before a model loads: a missing browser costs nothing
        if completer is None:
            completer = _load(source, adapter, min_pixels, max_pixels, name, decoding["repetition_penalty"])
        lo, hi = completer_pixels(completer, min_pixels, max_pixels)
        _play(completer, todo, Settings(lo, hi, max_new_tokens, compat, out), max_steps, progress)
    summary = summarize_online(iter_jsonl(out / EPISODES_FILE), names, seeds)
    summary.update({"policy": name, "compat": compat, "preset": decoding["preset"], "max_new_tokens": max_new_tokens,
                    "max_steps": {t: max_steps_for(t, max_steps) for t in names},
                    "miniwob": miniwob_version(), "success_means": "the page's raw reward is 1.0"})
    write_json_atomic(out / ONLINE_JSON, summary)
    write_text_atomic(out / ONLINE_MD, online_table(summary) + "\n")
    return summary


def _load(source: str, adapter, min_pixels: int | None, max_pixels: int | None, name: str,
          penalty: float | None) -> ModelCompleter:
    from gui_r1_lite.modeling import load_policy

    # None bounds keep the processor's saved ones (a model is asked at the size it was trained at)
    return ModelCompleter(load_policy(source, lora=None, adapter=adapter, min_pixels=min_pixels,
                                      max_pixels=max_pixels), name=name, repetition_penalty=penalty)


def _play(completer: Completer, todo: Sequence[tuple[str, int]], settings: Settings, max_steps: int | None,
          progress: bool) -> None:
    """Play the episodes of `todo` in one browser. Playwright's sync API refuses to run where an
    asyncio loop runs (a Jupyter kernel runs one), so there they are played in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _play_here(completer, todo, settings, max_steps, progress)
    with ThreadPoolExecutor(1, thread_name_prefix="online") as pool:
        return pool.submit(_play_here, completer, todo, settings, max_steps, progress).result()


def _play_here(completer: Completer, todo: Sequence[tuple[str, int]], settings: Settings, max_steps: int | None,
               progress: bool) -> None:
    with chromium() as browser, bar(len(todo), f"online {completer.name}", show=progress) as advance:
        page = new_task_page(browser)
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        for task, seed in todo:
            episode = run_episode(page, completer, task, seed, max_steps_for(task, max_steps), settings)
            append_jsonl(settings.out / EPISODES_FILE, episode)
            advance(1)
