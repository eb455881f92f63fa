"""Shared pieces of the capture tools: the two GUI-R1 parquet schemas of the shipped files
(training: normalised boxes; benchmark: pixel boxes), rows and files, file checks, box previews,
and the dependency errors that say which Debian package is missing. The step record, PNG encoding
and history text are the closed loop's (`harness.online`), re-exported here.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from gui_r1_lite.actions import ACTION_SPACES, NO_TEXT, POINT_ACTIONS, TEXT_ACTIONS
from gui_r1_lite.data import BENCHMARK_COLUMNS as GUI_R1_TEST_COLUMNS
from gui_r1_lite.data import TRAIN_COLUMNS as GUI_R1_TRAIN_COLUMNS
from gui_r1_lite.geometry import NO_POINT, box_center
from harness.online.browser import (
    CHROMIUM,
    CaptureDependencyError,
    Shot,
    encode_png,
    find_chromium,
    require_playwright,
)
from harness.online.miniwob import PLATFORMS, UI_TYPES, Step, clip_box, history_text, quote

#: Exact column order of the training files (GUI-R1 train.parquet plus `platform`).
TRAIN_COLUMNS: tuple[str, ...] = (*GUI_R1_TRAIN_COLUMNS, "platform")
#: Exact column order of the benchmark files (GUI-R1 *_test.parquet plus `id` and `task_type`).
TEST_COLUMNS: tuple[str, ...] = (*GUI_R1_TEST_COLUMNS, "id", "task_type")
NO_BOX: tuple[float, float] = (float(NO_POINT[0]), float(NO_POINT[1]))

SYSTEM_PYTHON = "/usr/bin/python3"


def require_executable(path_or_name: str, apt_package: str, what: str) -> str:
    """Absolute path of an executable, or a `CaptureDependencyError` naming the apt package."""
    is_executable = os.path.isabs(path_or_name) and os.access(path_or_name, os.X_OK)
    found = path_or_name if is_executable else shutil.which(path_or_name)
    if not found:
        raise CaptureDependencyError(
            f"{what} not found ({path_or_name}); install it with `apt-get install -y {apt_package}` "
            f"(or run scripts/install_capture_deps.sh)"
        )
    return found


# --- images ------------------------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of PNG bytes."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return im.size


# --- rows and files ----------------------------------------------------------------------------


def _image_cell(step: Step) -> dict:
    return {"bytes": step.shot.png, "path": re.sub(r"[^A-Za-z0-9._-]+", "_", step.id) + ".png"}


def train_row(step: Step) -> dict:
    """The training-schema row of a step (box normalised to [0, 1])."""
    if step.box is None:
        bbox = list(NO_BOX)
    else:
        w, h = step.shot.width, step.shot.height
        bbox = [step.box[0] / w, step.box[1] / h, step.box[2] / w, step.box[3] / h]
    return {
        "image": _image_cell(step), "instruction": step.instruction, "history": history_text(step.history),
        "task_type": step.task_type, "gt_action": step.action, "gt_bbox": [float(v) for v in bbox],
        "gt_input_text": step.input_text, "id": step.id, "platform": step.platform,
    }


def benchmark_row(step: Step) -> dict:
    """The benchmark-schema row of a step (box in pixels of the stored image)."""
    bbox = list(NO_BOX) if step.box is None else list(step.box)
    return {
        "image": _image_cell(step), "instruction": step.instruction, "history": history_text(step.history),
        "gt_action": step.action, "gt_bbox": [float(v) for v in bbox], "gt_input_text": step.input_text,
        "group": step.platform, "ui_type": step.ui_type, "id": step.id, "task_type": step.task_type,
    }


def _arrow_schema(columns: Sequence[str]):
    import pyarrow as pa

    types = {
        "image": pa.struct([("bytes", pa.binary()), ("path", pa.string())]),
        "gt_bbox": pa.list_(pa.float64()),
    }
    return pa.schema([(c, types.get(c, pa.string())) for c in columns])


def write_rows(rows: Sequence[dict], path: str | os.PathLike, columns: Sequence[str]) -> Path:
    """Write rows to parquet with the exact column order and types. Identical screenshots are
    stored once (parquet dictionary encoding), so several targets on one page cost one image."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    ids = [r["id"] for r in rows]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"{path}: duplicate ids {dupes[:5]}")
    schema = _arrow_schema(columns)
    table = pa.Table.from_pylist([{c: r[c] for c in columns} for r in rows], schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", dictionary_pagesize_limit=256 << 20)
    return path


def read_rows(path: str | os.PathLike) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def merge_group(path: str | os.PathLike, rows: Sequence[dict], group: str) -> Path:
    """Replace the rows of one `group` in a benchmark file shared by several sources (the
    realgui test file holds web, mobile and desktop rows), keeping the others."""
    path = Path(path)
    kept = [r for r in read_rows(path) if r["group"] != group] if path.exists() else []
    order = {g: i for i, g in enumerate(PLATFORMS)}
    merged = sorted(kept + list(rows), key=lambda r: (order.get(r["group"], 99), r["id"]))
    return write_rows(merged, path, TEST_COLUMNS)


def write_steps(steps: Iterable[Step], out_dir: str | os.PathLike, train_name: str,
                test_name: str | None, group: str | None = None) -> dict[str, int]:
    """Write a source's steps: train split to `out/train/<train_name>.parquet`, test split to
    `out/test/<test_name>.parquet` (merged by `group` when given). Returns rows per file."""
    out = Path(out_dir)
    steps = list(steps)
    train = [train_row(s) for s in steps if s.split == "train"]
    test = [benchmark_row(s) for s in steps if s.split == "test"]
    counts: dict[str, int] = {}
    if train:
        p = write_rows(train, out / "train" / f"{train_name}.parquet", TRAIN_COLUMNS)
        counts[str(p)] = len(train)
    if test and test_name:
        p = out / "test" / f"{test_name}.parquet"
        if group:
            merge_group(p, test, group)
        else:
            write_rows(test, p, TEST_COLUMNS)
        counts[str(p)] = len(test)
    problems = [m for p in counts for m in check_file(p)]
    if problems:
        raise ValueError("written files fail their checks:\n" + "\n".join(problems[:20]))
    return counts


def check_file(path: str | os.PathLike) -> list[str]:
    """Problems of one shipped parquet file (empty list when it is fine): exact columns and
    types, unique ids, known actions, boxes inside their images with positive area (normalised
    in train files, pixels in test files), no-target rows at [-100, -100], text on type rows."""
    import pyarrow.parquet as pq

    path = Path(path)
    table = pq.read_table(path)
    kind = "train" if path.parent.name == "train" else "test"
    columns = TRAIN_COLUMNS if kind == "train" else TEST_COLUMNS
    problems = []
    if tuple(table.column_names) != columns:
        return [f"{path}: columns {table.column_names}, expected {list(columns)}"]
    if not table.schema.equals(_arrow_schema(columns)):
        problems.append(f"{path}: schema {table.schema}, expected {_arrow_schema(columns)}")
    seen: set[str] = set()
    sizes: dict[bytes, tuple[int, int]] = {}
    for i, r in enumerate(table.to_pylist()):
        where = f"{path} row {i} ({r['id']})"
        if r["id"] in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(r["id"])
        problems += [f"{where}: {p}" for p in _cell_problems(r, kind)]
        image = r["image"]["bytes"]
        if image not in sizes:
            try:
                sizes[image] = png_size(image)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{where}: image does not decode ({exc})")
                continue
        problems += [f"{where}: {p}" for p in _target_problems(r, kind, sizes[image])]
    return problems


def _cell_problems(r: dict, kind: str) -> list[str]:
    """Problems of one row's action, task type, platform/group and texts."""
    problems = []
    if r["gt_action"] not in ACTION_SPACES["high"]:
        problems.append(f"gt_action {r['gt_action']!r} not in the high-level action space")
    if r["task_type"] not in ("low", "high"):
        problems.append(f"task_type {r['task_type']!r}")
    if kind == "test" and (r["group"] not in PLATFORMS or r["ui_type"] not in UI_TYPES):
        problems.append(f"group {r['group']!r} / ui_type {r['ui_type']!r}")
    if kind == "train" and r["platform"] not in PLATFORMS:
        problems.append(f"platform {r['platform']!r}")
    if not r["instruction"] or not r["history"]:
        problems.append("empty instruction or history")
    return problems


def _target_problems(r: dict, kind: str, size: tuple[int, int]) -> list[str]:
    """Problems of one row's box and input text against its action (`size`: the image's)."""
    problems = []
    w, h = size
    box = r["gt_bbox"]
    if r["gt_action"] in POINT_ACTIONS:
        lim = (1.0, 1.0) if kind == "train" else (float(w), float(h))
        if len(box) != 4 or not (0 <= box[0] < box[2] <= lim[0] and 0 <= box[1] < box[3] <= lim[1]):
            frame = "unit square" if kind == "train" else f"{w}x{h} image"
            problems.append(f"click box {box} not inside the {frame}")
    elif list(box) != list(NO_BOX):
        problems.append(f"{r['gt_action']} row must have gt_bbox [-100.0, -100.0], got {box}")
    if r["gt_action"] in TEXT_ACTIONS and r["gt_input_text"] == NO_TEXT:
        problems.append(f"{r['gt_action']} row without input text")
    if r["gt_action"] not in TEXT_ACTIONS and r["gt_input_text"] != NO_TEXT:
        problems.append(f"{r['gt_action']} row has input text {r['gt_input_text']!r}")
    return problems


def draw_box(png: bytes, box: Sequence[float] | None, label: str = ""):
    """A PIL image of `png` with `box` (pixels) outlined in red and its centre marked: for
    checking by eye that a captured box sits on its element."""
    from PIL import Image, ImageDraw

    im = Image.open(io.BytesIO(png)).convert("RGB")
    d = ImageDraw.Draw(im)
    if box is not None and len(box) == 4:
        w = max(1, round(im.width / 400))
        d.rectangle([box[0], box[1], box[2] - 1, box[3] - 1], outline=(255, 0, 0), width=w)
        cx, cy = box_center(box)
        d.ellipse([cx - 2 * w, cy - 2 * w, cx + 2 * w, cy + 2 * w], fill=(255, 0, 0))
    if label:
        d.text((4, im.height - 14), label[:80], fill=(255, 0, 0))
    return im


__all__ = [
    "CHROMIUM", "NO_BOX", "PLATFORMS", "SYSTEM_PYTHON", "TEST_COLUMNS", "TRAIN_COLUMNS", "UI_TYPES",
    "CaptureDependencyError", "Shot", "Step", "benchmark_row", "check_file", "clip_box", "draw_box", "encode_png",
    "find_chromium", "history_text", "merge_group", "png_size", "quote", "read_rows", "require_executable",
    "require_playwright", "train_row", "write_rows", "write_steps",
]
