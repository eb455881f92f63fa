"""Closed-loop evaluation in a live browser (`python -m harness.online`): a policy plays
MiniWoB++ task pages in headless Chromium, step by step through the same prompt, parsing and pixel
frames as training and offline evaluation, and the page's own reward says whether each episode was
solved."""

from .browser import CaptureDependencyError, find_chromium, require_playwright
from .episode import PAGE_MAX_TIME_MS, PAGE_TIMEOUT_MS, STEPS_FILE, max_steps_for, task_type
from .results import INTERVAL, online_table, summarize_online, wilson
from .run import (
    DEFAULT_SEED_START,
    EPISODES_FILE,
    ONLINE_JSON,
    ONLINE_MD,
    ORACLE_TASKS,
    RESERVED_SEEDS,
    check_tasks,
    episode_seeds,
    evaluate_online,
    finished_episodes,
    known_tasks,
    read_episode,
)

__all__ = [
    "DEFAULT_SEED_START", "EPISODES_FILE", "INTERVAL", "ONLINE_JSON", "ONLINE_MD", "ORACLE_TASKS", "PAGE_MAX_TIME_MS",
    "PAGE_TIMEOUT_MS", "RESERVED_SEEDS", "STEPS_FILE", "CaptureDependencyError", "check_tasks", "episode_seeds",
    "evaluate_online", "find_chromium", "finished_episodes", "known_tasks", "max_steps_for", "online_table",
    "read_episode", "require_playwright", "summarize_online", "task_type", "wilson",
]
