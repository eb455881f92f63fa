"""The miniature's data: row ids read as (task, episode seed), and the training and evaluation files
cut from the parquet files so that no episode seed is in both. Ids are `<source>/<task>/seed<N>/step<k>`:
MiniWoB++ captures (`miniwob/click-tab/seed3/step0`) or generated pages (`generated/colour/seed3/step0`)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gui_r1_lite.errors import UsageError
from gui_r1_lite.runio import read_json, write_json_atomic

from .settings import MiniatureSettings

#: The record of the files `prepared_data` made, in `<out_dir>/data/`.
DATA_RECORD = "data.json"

_ID = re.compile(r"^(?P<source>[a-z0-9_-]+)/(?P<task>[^/]+)/seed(?P<seed>\d+)/step(?P<step>\d+)")


def _match(sample_id: str) -> re.Match:
    m = _ID.match(sample_id)
    if not m:
        raise UsageError(f"row id {sample_id!r} is not of the form <source>/<task>/seed<N>/step<k>")
    return m


def task_of(sample_id: str) -> str:
    """The task of a row id `<source>/<task>/seed<N>/step<k>`."""
    return _match(sample_id)["task"]


def seed_of(sample_id: str) -> int:
    """The episode seed of a row id `<source>/<task>/seed<N>/step<k>`."""
    return int(_match(sample_id)["seed"])


def select_rows(samples: Iterable, tasks: Sequence[str] | None = None,
                seeds: tuple[int, int] | None = None) -> list:
    """Samples of `tasks` (None: all) whose episode seed lies in the inclusive range `seeds` (None: all)."""
    return [s for s in samples if (tasks is None or task_of(s.id) in tasks)
            and (seeds is None or seeds[0] <= seed_of(s.id) <= seeds[1])]


def best_blind_score(samples: Iterable) -> dict[str, float]:
    """Per task, the share of its click rows (with a box) that a policy told the task and the step, but not
    shown the screen, hits at best with one point per step: for each step the centre of one of that step's
    target boxes, the one inside most of them (the rule `settings.SEEING_TASKS` was picked by)."""
    from gui_r1_lite.geometry import point_in_box

    steps: dict[str, dict[int, list]] = {}
    for s in samples:
        if s.gt_action == "click" and len(s.gt_bbox) == 4:
            steps.setdefault(task_of(s.id), {}).setdefault(int(_match(s.id)["step"]), []).append(s.gt_bbox)
    out = {}
    for task, by_step in sorted(steps.items()):
        hits = sum(max(sum(point_in_box(((x1 + x2) / 2, (y1 + y2) / 2), box, inclusive=True) for box in boxes)
                       for x1, y1, x2, y2 in boxes) for boxes in by_step.values())
        out[task] = hits / sum(len(boxes) for boxes in by_step.values())
    return out


def task_mix(samples: Iterable) -> dict[str, int]:
    """Rows per task, tasks in alphabetical order."""
    return dict(sorted(Counter(task_of(s.id) for s in samples).items()))


def _split(train_data, heldout_data, settings: MiniatureSettings, validate: bool) -> tuple[list, list]:
    """(training rows, evaluation rows), checked to share no episode seed."""
    from gui_r1_lite.data import load_gui_r1

    tasks = tuple(settings.tasks) if settings.tasks is not None else None
    train_all = load_gui_r1(train_data).samples
    unknown = sorted(set(tasks or ()) - set(task_mix(train_all)))
    if unknown:
        raise UsageError(f"{train_data}: unknown task(s) {unknown}; tasks there: {list(task_mix(train_all))}")
    train = select_rows(train_all, tasks, tuple(settings.train_seeds))
    if validate:
        lo, hi = settings.validation_seeds
        if not (hi < settings.train_seeds[0] or lo > settings.train_seeds[1]):
            raise UsageError(f"validation seeds {settings.validation_seeds} overlap train seeds "
                             f"{settings.train_seeds}")
        heldout = select_rows(train_all, tasks, tuple(settings.validation_seeds))
    else:
        heldout = select_rows(load_gui_r1(heldout_data).samples, tasks)
    if not train:
        raise UsageError(f"{train_data}: no rows of tasks {tasks} with seeds {settings.train_seeds}")
    if not validate and len(heldout) < settings.min_heldout_rows:
        raise UsageError(f"only {len(heldout)} evaluation rows for tasks {tasks} (at least "
                         f"{settings.min_heldout_rows} wanted); widen the task mix")
    overlap = {seed_of(s.id) for s in train} & {seed_of(s.id) for s in heldout}
    if overlap:
        raise UsageError(f"evaluation rows share episode seeds {sorted(overlap)} with the training rows")
    return train, heldout


def prepare_data(out_dir: str | os.PathLike, train_data: str | os.PathLike, heldout_data: str | os.PathLike,
                 settings: MiniatureSettings, validate: bool = False) -> dict[str, Any]:
    """Write the two files a miniature run trains and scores on, `out_dir/data/train.parquet` (the
    task mix's `train_seeds` rows of `train_data`) and `heldout.parquet` (its rows of `heldout_data`, or
    with `validate` the `validation_seeds` rows of `train_data`); returns their paths, row counts, rows
    with a box target and task mixes."""
    from gui_r1_lite.data import write_gui_r1

    data = Path(out_dir) / "data"
    data.mkdir(parents=True, exist_ok=True)
    train, heldout = _split(train_data, heldout_data, settings, validate)
    train_path = write_gui_r1(train, data / "train.parquet", schema="train")
    heldout_path = write_gui_r1(heldout, data / "heldout.parquet", schema="benchmark")
    return {"train": str(train_path), "heldout": str(heldout_path), "validate": validate,
            "n_train": len(train), "n_heldout": len(heldout),
            "n_heldout_click": sum(1 for s in heldout if s.gt_action == "click" and len(s.gt_bbox) == 4),
            "train_tasks": task_mix(train), "heldout_tasks": task_mix(heldout),
            "heldout_source": str(train_data if validate else heldout_data)}


def _source_key(path: str | os.PathLike) -> list | None:
    """A source file's size and modification time (None when it is not there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def prepared_data(out_dir: str | os.PathLike, train_data: str | os.PathLike, heldout_data: str | os.PathLike,
                  settings: MiniatureSettings, validate: bool = False) -> dict[str, Any]:
    """`prepare_data`, made once per run folder and reused while its sources and settings are the same."""
    key = json.loads(json.dumps({
        "train_data": str(train_data), "heldout_data": str(heldout_data), "validate": validate,
        "sources": [_source_key(train_data), _source_key(heldout_data)],
        **{k: getattr(settings, k) for k in ("tasks", "train_seeds", "validation_seeds", "min_heldout_rows")}}))
    path = Path(out_dir) / "data" / DATA_RECORD
    try:
        made = read_json(path)
    except (FileNotFoundError, ValueError):
        made = None
    if isinstance(made, dict) and made.get("key") == key and all(
            Path(made["data"][k]).exists() for k in ("train", "heldout")):
        return made["data"]
    data = prepare_data(out_dir, train_data, heldout_data, settings, validate)
    write_json_atomic(path, {"key": key, "data": data})
    return data
