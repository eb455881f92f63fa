"""The study's own report tables, beside the miniature's (`harness.miniature.report`): closed-loop
success per task, each training stage's compute, and a result's statistics restated from the folder it
was moved to. Only the study's `study.md` shows them."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from pathlib import Path

from harness.miniature import stats
from harness.miniature.report import ARMS, WARM, pct, study_statistics
from harness.miniature.stages import seed_folder
from harness.online.results import wilson


def restated(result: dict, folder: str | os.PathLike) -> dict:
    """`result` (a miniature run's result file) with its statistics computed afresh from the
    prediction and episode files of its seeds' stages under `folder`, the run's folder wherever it
    now is (the folders the result recorded are relative to where it ran). Unchanged when a stage
    folder is gone."""
    seeds = [str(s) for s in result.get("seeds") or []]
    predictions = {s: {a: str(seed_folder(folder, int(s)) / f"{a}_eval") for a in result["predictions"][s]}
                   for s in seeds}
    online = result.get("online")
    runs = {s: {a: str(seed_folder(folder, int(s)) / f"{a}_online") for a in (online or {}).get(s) or {}}
            for s in seeds} if online else None
    folders = [f for by_arm in (predictions, runs or {}) for s in by_arm.values() for f in s.values()]
    if not seeds or not all(Path(f).is_dir() for f in folders):
        return result
    return {**result, "stats": study_statistics(predictions, online, online_runs=runs)}


def online_task_table(result: dict) -> str:
    """A Markdown table of closed-loop success per task: for every arm that played on every seed,
    the episodes solved of those played, pooled over seeds, in % with Wilson's 95 % interval of the
    pooled episodes, which treats every episode as an independent draw (the arms' table's interval
    also draws seeds, so it covers the spread between seeds' models too)."""
    online = result.get("online") or {}
    seeds = sorted(online, key=int)
    arms = [a for a in (ARMS[0], WARM, *ARMS[1:]) if seeds and all(a in (online[s] or {}) for s in seeds)]
    if not arms:
        return "(no closed-loop episodes in this run)"
    counts = {a: [stats.online_counts(online[s][a]) for s in seeds] for a in arms}
    tasks = sorted({t for a in arms for c in counts[a] for t in c})
    lines = [f"| task | {' | '.join(f'{a}: solved / episodes, % [95 % CI]' for a in arms)} |",
             "|---|" + "---:|" * len(arms)]
    for t in tasks:
        cells = []
        for a in arms:
            solved, n = (sum(c.get(t, (0, 0))[i] for c in counts[a]) for i in (0, 1))
            lo, hi = wilson(solved, n)
            cells.append(f"{solved} / {n}, {pct(solved / n)} [{pct(lo)}, {pct(hi)}]" if n else "–")
        lines.append(f"| {t} | {' | '.join(cells)} |")
    return "\n".join(lines)


#: The compute of each trained stage as `compute_table` shows it: (result key, column heading).
COMPUTE_COLUMNS = (("steps", "optimiser steps"), ("prompt_visits", "prompt visits"),
                   ("completions", "sampled answers"), ("train_cpu_seconds", "training-loop CPU s"),
                   ("train_runtime", "training wall s"))


def _spread(values: Sequence[float | None], digits: int = 0) -> str:
    """`mean (min–max)` of the values that are known; `–` when none is."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return "–"
    mean = f"{statistics.fmean(vals):,.{digits}f}"
    lo, hi = f"{min(vals):,.{digits}f}", f"{max(vals):,.{digits}f}"
    return mean if lo == hi else f"{mean} ({lo}–{hi})"


def compute_table(result: dict) -> str:
    """A Markdown table of what each trained stage cost (warm start, SFT, SFT → GRPO): optimiser
    steps, prompt visits, sampled answers, the training loop's CPU seconds (one thread, so the work
    done, whatever else ran) and its wall seconds; the mean over seeds with the range in brackets.
    The SFT and GRPO rows are the arms' own cost, after the warm start both share."""
    compute = result.get("compute") or {}
    seeds = sorted(compute, key=int)
    names = {WARM: "warm start (both arms)", "sft": "SFT", "sft_grpo": "SFT → GRPO"}
    if (result.get("settings") or {}).get("warm_steps") == 0:
        names = {WARM: "base (both arms' start: nothing trained)", "sft": "SFT", "sft_grpo": "GRPO"}
    lines = [f"| stage | {' | '.join(h for _, h in COMPUTE_COLUMNS)} |", "|---|" + "---:|" * len(COMPUTE_COLUMNS)]
    for arm, name in names.items():
        rows = [compute[s].get(arm) or {} for s in seeds]
        if not any(rows):
            continue
        lines.append(f"| {name} | {' | '.join(_spread([r.get(k) for r in rows]) for k, _ in COMPUTE_COLUMNS)} |")
    return "\n".join(lines)
