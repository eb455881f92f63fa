"""What an online run found: success per task with its 95 % interval (Wilson's score interval:
close to its nominal coverage even for a handful of episodes and rates of 0 or 1, where the
normal approximation collapses to a zero-width interval), steps per episode, and a table."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

INTERVAL = "Wilson score interval, 95 %"
#: How an episode that stopped on an answer the parser could not read ended (its record's `end`).
UNPARSABLE_END = "unparsable answer"
_Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = _Z95) -> list[float]:
    """Wilson's score interval [lo, hi] of a success rate `successes / n` ([0, 1] when n is 0).

    >>> [round(v, 3) for v in wilson(10, 10)]
    [0.722, 1.0]
    """
    if n <= 0:
        return [0.0, 1.0]
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def task_result(episodes: Sequence[dict]) -> dict:
    """One task's figures, how its episodes ended included."""
    n = len(episodes)
    solved = sum(bool(e["success"]) for e in episodes)
    return {"success": solved / n if n else None, "episodes": n, "solved": solved, "ci95": wilson(solved, n),
            "mean_steps": sum(e["steps"] for e in episodes) / n if n else None,
            "mean_raw_reward": sum(float(e["raw_reward"]) for e in episodes) / n if n else None,
            "ends": dict(Counter(e["end"] for e in episodes))}


def summarize_online(episodes: Iterable[dict], tasks: Sequence[str], seeds: Sequence[int]) -> dict:
    """online.json's figures over the episodes of `tasks` x `seeds` (others are left out): pooled
    success with its interval, and per task `task_result`."""
    wanted = {(t, s) for t in tasks for s in seeds}
    chosen = [e for e in episodes if (e["task"], e["seed"]) in wanted]
    n = len(chosen)
    solved = sum(bool(e["success"]) for e in chosen)
    return {"success": solved / n if n else None, "ci95": wilson(solved, n), "episodes": n, "interval": INTERVAL,
            "mean_steps": sum(e["steps"] for e in chosen) / n if n else None,
            "tasks": {t: task_result([e for e in chosen if e["task"] == t]) for t in tasks},
            "seeds": list(seeds)}


def online_table(summary: dict) -> str:
    """online.json as a Markdown table: a row per task and the pooled row."""
    def pct(v) -> str:
        return "-" if v is None else f"{100 * v:.1f}"

    lines = [f"policy `{summary.get('policy', '?')}`; success = the page's raw reward is 1.0; "
             f"{summary.get('interval', INTERVAL)}", "",
             "| task | episodes | success % | 95 % interval | mean steps |", "|---|---:|---:|---|---:|"]
    rows = [(t, r) for t, r in summary["tasks"].items()] + [("**all**", summary)]
    for task, r in rows:
        lo, hi = r["ci95"]
        steps = r.get("mean_steps")
        lines.append(f"| {task} | {r['episodes']} | {pct(r['success'])} | {pct(lo)}–{pct(hi)} | "
                     f"{'' if steps is None else f'{steps:.2f}'} |")
    return "\n".join(lines)
