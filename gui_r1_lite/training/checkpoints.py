"""Checkpoints of a run folder: the newest complete one to resume from, and the clean-up of those a
killed run left half-written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..runio import read_json


def checkpoints(output_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """Every `checkpoint-N` folder in `output_dir` as (N, folder), oldest first, complete or not."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    out = Path(output_dir)
    if not out.is_dir():
        return []
    prefix = f"{PREFIX_CHECKPOINT_DIR}-"
    found = [(d.name.removeprefix(prefix), d) for d in out.glob(f"{prefix}*") if d.is_dir()]
    return sorted((int(step), d) for step, d in found if step.isdigit())


def is_complete(checkpoint: Path) -> bool:
    """The trainer writes trainer_state.json last: a folder without a readable one was cut short."""
    try:
        read_json(checkpoint / "trainer_state.json")
    except (OSError, ValueError):
        return False
    return True


def last_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The newest *complete* `checkpoint-N` in `output_dir`. Not transformers' `get_last_checkpoint`:
    it returns the newest folder whatever is in it, and resuming from one a kill cut short fails."""
    complete = [d for _, d in checkpoints(output_dir) if is_complete(d)]
    return str(complete[-1]) if complete else None


def drop_incomplete_checkpoints(output_dir: str | os.PathLike, keep: str | None) -> list[str]:
    """Remove the `checkpoint-N` folders newer than `keep`: the trainer would later save into them
    over stale files and count them in `save_total_limit`."""
    keep_step = int(Path(keep).name.rsplit("-", 1)[1]) if keep else -1
    dropped = [d for step, d in checkpoints(output_dir) if step > keep_step]
    for d in dropped:
        shutil.rmtree(d)
    return sorted(d.name for d in dropped)
