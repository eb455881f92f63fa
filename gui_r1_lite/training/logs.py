"""Reading a run's metrics.jsonl: every record, or how the numbers moved from start to end."""

from __future__ import annotations

import os
from pathlib import Path

from ..runio import read_jsonl


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The records of a run's metrics.jsonl (`path`: the file or its run folder); a last line cut
    short by a kill is skipped."""
    p = Path(path)
    p = p / "metrics.jsonl" if p.is_dir() else p
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no metrics.jsonl (has the run logged a step yet?)")
    return read_jsonl(p)


def _mean_of(records: list[dict]) -> dict:
    keys = [k for k, v in records[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out = {k: sum(float(r[k]) for r in records if k in r) / sum(1 for r in records if k in r) for k in keys}
    out["steps"] = [records[0]["step"], records[-1]["step"]]
    return out


def start_and_end(path: str | os.PathLike, window: int = 10) -> dict[str, dict]:
    """The mean of each number over the first and the last `window` training steps of a run (one
    GRPO step scores only a few prompts, so a single step says little); `steps` says which."""
    steps = [r for r in read_metrics(path) if "loss" in r]
    if not steps:
        return {"start": {}, "end": {}}
    window = max(1, min(window, len(steps)))
    return {"start": _mean_of(steps[:window]), "end": _mean_of(steps[-window:])}
