"""GUI-R1 data as published: load parquet files (training or benchmark schema) from a file, a
folder or the hub, validate every row with errors that name file/row/column, and convert rows
into what training (TRL conversational prompts, images in the model's frame) and evaluation need.

Inside the package every `Sample.gt_bbox` is in pixels of the stored image, whatever the schema.
"""

from __future__ import annotations

import io
import math
import os
import re
import socket
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from PIL import Image

from .actions import (
    ACTION_SPACES,
    BENCHMARK_SPACES,
    GUI_R1_MAX_PIXELS,
    GUI_R1_MIN_PIXELS,
    NO_POINT,
    NO_TEXT,
    POINT_ACTIONS,
    TEXT_ACTIONS,
    model_image_size,
    normalized_to_pixels,
    pixels_to_normalized,
    rescale_pixels,
)
from .prompts import NO_HISTORY, build_messages

HUB_DATASET = "ritzzai/GUI-R1"
HUB_SPLITS = ("train", "test", "screenspot_test", "screenspot_pro_test", "androidcontrol_low_test",
              "androidcontrol_high_test", "guiact_web_test", "guiodyssey_test", "omniact_web_test",
              "omniact_desktop_test")
TRAIN_COLUMNS = ("image", "instruction", "history", "task_type", "gt_action", "gt_bbox", "gt_input_text", "id")
BENCHMARK_COLUMNS = ("image", "instruction", "history", "gt_action", "gt_bbox", "gt_input_text", "group", "ui_type")
#: Extra columns some releases carry; read into `Sample.extras`, never required.
KNOWN_EXTRAS = ("verify_bbox", "success_rate", "scale", "platform", "task_type", "id")


class DataError(ValueError):
    """A row or file that does not meet the GUI-R1 schema; the message names file, row and column."""


@dataclass(frozen=True)
class RowError:
    file: str
    row: int | None
    column: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.column is not None:
            where += f", column {self.column!r}"
        return f"{where}: {self.message}"


@dataclass
class ValidationReport:
    """What loading read, kept and skipped (and why). Nothing is dropped without a line here."""

    rows_read: int = 0
    rows_kept: int = 0
    errors: list[RowError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def rows_skipped(self) -> int:
        return self.rows_read - self.rows_kept

    def by_column(self) -> dict[str, int]:
        return dict(Counter(e.column or "<file>" for e in self.errors))

    def summary(self, limit: int = 10) -> str:
        lines = [f"{len(self.files)} file(s): read {self.rows_read} rows, kept {self.rows_kept}, "
                 f"skipped {self.rows_skipped}"]
        if self.errors:
            lines.append("skipped by column: " + ", ".join(f"{k}={v}" for k, v in sorted(self.by_column().items())))
            lines += [f"  - {e}" for e in self.errors[:limit]]
            if len(self.errors) > limit:
                lines.append(f"  … and {len(self.errors) - limit} more (report.errors)")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"files": self.files, "rows_read": self.rows_read, "rows_kept": self.rows_kept,
                "rows_skipped": self.rows_skipped, "skipped_by_column": self.by_column(),
                "errors": [str(e) for e in self.errors]}


@dataclass(frozen=True)
class Sample:
    """One validated step. `gt_bbox` is in pixels of the stored image ([-100, -100]: no target)."""

    id: str
    image_bytes: bytes
    image_size: tuple[int, int]
    instruction: str
    history: str
    gt_action: str
    gt_bbox: tuple[float, ...]
    gt_input_text: str
    task_type: str = "high"
    group: str | None = None
    ui_type: str | None = None
    platform: str | None = None
    space: str = "high"
    schema: str = "train"
    source: str = ""
    row: int = -1
    extras: dict = field(default_factory=dict, compare=False)

    def image(self) -> Image.Image:
        return Image.open(io.BytesIO(self.image_bytes)).convert("RGB")

    @property
    def has_target(self) -> bool:
        return has_target(self.gt_bbox)


@dataclass
class Dataset:
    """Loaded samples plus the report of what was skipped."""

    samples: list[Sample]
    report: ValidationReport

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self):
        return iter(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


def has_target(box: Sequence[float]) -> bool:
    """False for the no-target marker [-100, -100] (what GUI-R1 writes for type/scroll/...)."""
    return not (len(box) == 2 and tuple(box) == NO_POINT)


# --- sources ------------------------------------------------------------------------------------

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def _hub_reachable(timeout: float = 3.0) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = urlparse(endpoint).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _hub_file(repo_id: str, split: str) -> Path:
    """Download (or find in the cache) one split of a hub dataset; fail fast when offline."""
    from huggingface_hub import hf_hub_download

    advice = (f"download it where the hub is reachable (`huggingface-cli download {repo_id} {split}.parquet "
              f"--repo-type dataset --local-dir DIR`) and pass the local file or folder instead")
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    try:
        if offline or not _hub_reachable():
            return Path(hf_hub_download(repo_id, f"{split}.parquet", repo_type="dataset", local_files_only=True))
        return Path(hf_hub_download(repo_id, f"{split}.parquet", repo_type="dataset"))
    except Exception as exc:  # noqa: BLE001 - any hub failure gets the same advice
        raise DataError(f"cannot fetch {split}.parquet of hub dataset {repo_id!r} (hub unreachable or file "
                        f"missing: {type(exc).__name__}); {advice}") from None


def resolve_files(source: str | os.PathLike, split: str | None = None) -> list[Path]:
    """Parquet files for a file, a folder (every `*.parquet` below it, sorted), or a hub id
    (`ritzzai/GUI-R1` with `split` = a file stem such as `train` or `screenspot_test`)."""
    path = Path(source)
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(path.rglob("*.parquet"))
        if split is not None:
            files = [f for f in files if f.stem == split]
        if not files:
            raise DataError(f"{path}: no parquet files" + (f" named {split}.parquet" if split else ""))
        return files
    if _HUB_ID.match(str(source)) and not path.exists():
        split = split or "train"
        return [_hub_file(str(source), split)]
    raise DataError(f"{source}: no such file or folder (and not a hub dataset id like {HUB_DATASET!r})")


# --- validation -----------------------------------------------------------------------------------

def _as_list(value: Any) -> list | None:
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        return [float(v) for v in list(value)]
    except (TypeError, ValueError):
        return None


def _image_bytes(value: Any) -> bytes | None:
    if isinstance(value, dict):
        value = value.get("bytes")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return None


def _check_box(box: list[float], size: tuple[int, int], normalised: bool) -> str | None:
    if len(box) not in (2, 4):
        return f"expected 2 (x, y) or 4 (x1, y1, x2, y2) values, got {len(box)}: {box}"
    if any(math.isnan(v) or math.isinf(v) for v in box):
        return f"NaN or infinite value: {box}"
    w, h = (1.0, 1.0) if normalised else (float(size[0]), float(size[1]))
    frame = "[0, 1]" if normalised else f"the {size[0]}x{size[1]} image"
    xs, ys = box[0::2], box[1::2]
    if any(x < 0 or x > w for x in xs) or any(y < 0 or y > h for y in ys):
        return f"outside {frame}: {box}"
    if len(box) == 4:
        if box[2] < box[0] or box[3] < box[1]:
            return f"x2 < x1 or y2 < y1: {box}"
        if box[2] == box[0] or box[3] == box[1]:
            return f"zero area: {box}"
    return None


def _space_for(file: Path, schema: str, task_type: str, space: str | None) -> str:
    if space is not None:
        return space
    if file.stem in BENCHMARK_SPACES:
        return BENCHMARK_SPACES[file.stem]
    return "low" if task_type == "low" else "high"


def _validate_row(file: Path, i: int, rec: dict, schema: str, space: str | None) -> tuple[Sample | None, RowError | None]:
    f = str(file)

    def err(column: str, message: str):
        return None, RowError(f, i, column, message)

    data = _image_bytes(rec.get("image"))
    if data is None:
        return err("image", "expected {'bytes': PNG/JPEG bytes, 'path': ...} or bytes")
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            size = (int(im.width), int(im.height))
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a bad row
        return err("image", f"bytes do not decode as an image ({type(exc).__name__})")

    for col in ("instruction", "gt_action"):
        if not isinstance(rec.get(col), str) or not rec[col].strip():
            return err(col, f"expected a non-empty string, got {rec.get(col)!r}")
    history = rec.get("history")
    history = NO_HISTORY if history is None or (isinstance(history, float) and math.isnan(history)) else history
    if not isinstance(history, str):
        return err("history", f"expected a string, got {type(history).__name__}")
    text = rec.get("gt_input_text")
    if not isinstance(text, str):
        return err("gt_input_text", f"expected a string ('{NO_TEXT}' when none), got {text!r}")

    task_type = rec.get("task_type") if schema == "train" else (rec.get("task_type") or "high")
    if task_type not in ("high", "low"):
        return err("task_type", f"expected 'high' or 'low', got {task_type!r}")
    name = rec["gt_action"]
    space_name = _space_for(file, schema, task_type, space)
    allowed = ACTION_SPACES.get(space_name, ACTION_SPACES["high"])
    if name not in allowed:
        return err("gt_action", f"{name!r} is not in the {space_name!r} action space {list(allowed)}")
    if name in TEXT_ACTIONS and text.strip() in ("", NO_TEXT):
        return err("gt_input_text", f"a {name!r} step needs an input text, got {text!r}")

    box = _as_list(rec.get("gt_bbox"))
    if box is None:
        return err("gt_bbox", f"expected a list of numbers, got {rec.get('gt_bbox')!r}")
    if has_target(box):
        problem = _check_box(box, size, normalised=schema == "train")
        if problem:
            return err("gt_bbox", problem)
        pixels = normalized_to_pixels(box, size) if schema == "train" else box
    elif name in POINT_ACTIONS:
        return err("gt_bbox", f"a {name!r} step needs a target box or point, got {box}")
    else:
        pixels = list(NO_POINT)

    extras = {k: rec[k] for k in KNOWN_EXTRAS if k in rec and k not in ("task_type", "id", "platform")}
    sid = rec.get("id")
    sid = str(sid) if sid is not None and str(sid) != "nan" else f"{file.stem}/{i}"
    group, ui_type = rec.get("group"), rec.get("ui_type")
    platform = rec.get("platform") or (group if schema == "benchmark" else None)
    return Sample(
        id=sid, image_bytes=data, image_size=size, instruction=rec["instruction"], history=history,
        gt_action=name, gt_bbox=tuple(float(v) for v in pixels), gt_input_text=text, task_type=task_type,
        group=group if isinstance(group, str) else None, ui_type=ui_type if isinstance(ui_type, str) else None,
        platform=platform if isinstance(platform, str) else None, space=space_name, schema=schema,
        source=f, row=i, extras=extras,
    ), None


def detect_schema(columns: Iterable[str]) -> str:
    cols = set(columns)
    if {"group", "ui_type"} <= cols or "task_type" not in cols:
        return "benchmark"
    return "train"


def load_gui_r1(source: str | os.PathLike, split: str | None = None, *, strict: bool = False,
                schema: str | None = None, space: str | None = None, limit: int | None = None) -> Dataset:
    """Load GUI-R1 parquet rows into validated `Sample`s.

    `schema` is `train` (normalised boxes, `task_type`) or `benchmark` (pixel boxes, `group`,
    `ui_type`); by default each file's columns decide. `strict=True` raises `DataError` on the
    first bad row; otherwise bad rows are skipped and listed in `Dataset.report`.
    """
    import pyarrow.parquet as pq

    report = ValidationReport()
    samples: list[Sample] = []
    for file in resolve_files(source, split):
        report.files.append(str(file))
        try:
            table = pq.read_table(file)
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"{file}: not a readable parquet file ({type(exc).__name__}: {exc})") from None
        file_schema = schema or detect_schema(table.column_names)
        required = TRAIN_COLUMNS if file_schema == "train" else BENCHMARK_COLUMNS
        required = tuple(c for c in required if c != "id")
        missing = [c for c in required if c not in table.column_names]
        if missing:
            e = RowError(str(file), None, missing[0],
                         f"missing column(s) {missing} for the {file_schema} schema; has {table.column_names}")
            if strict:
                raise DataError(str(e))
            report.rows_read += table.num_rows
            report.errors.append(e)
            continue
        for i, rec in enumerate(table.to_pylist()):
            if limit is not None and len(samples) >= limit:
                break
            report.rows_read += 1
            sample, error = _validate_row(file, i, rec, file_schema, space)
            if error is not None:
                if strict:
                    raise DataError(str(error))
                report.errors.append(error)
                continue
            samples.append(sample)
            report.rows_kept += 1
    return Dataset(samples, report)


# --- writing --------------------------------------------------------------------------------------

def write_gui_r1(samples: Iterable[Sample], path: str | os.PathLike, schema: str = "train") -> Path:
    """Write samples as GUI-R1 parquet (`train`: normalised boxes; `benchmark`: pixels), keeping
    `platform` and extras such as `success_rate`. `load_gui_r1` reads the file back unchanged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if schema not in ("train", "benchmark"):
        raise ValueError(f"schema must be 'train' or 'benchmark', got {schema!r}")
    rows = []
    extra_keys: set[str] = set()
    samples = list(samples)
    for s in samples:
        extra_keys |= set(s.extras)
    for s in samples:
        box = list(s.gt_bbox)
        if s.has_target and schema == "train":
            box = pixels_to_normalized(box, s.image_size)
        row = {"image": {"bytes": s.image_bytes, "path": f"{s.id}.png"}, "instruction": s.instruction,
               "history": s.history, "task_type": s.task_type, "gt_action": s.gt_action,
               "gt_bbox": [float(v) for v in box], "gt_input_text": s.gt_input_text, "id": s.id,
               "platform": s.platform}
        if schema == "benchmark":
            row["group"] = s.group or s.platform or ""
            row["ui_type"] = s.ui_type or ""
        for k in sorted(extra_keys):
            row[k] = s.extras.get(k)
        rows.append(row)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out


# --- conversion for training and evaluation ---------------------------------------------------------

def model_view(sample: Sample, min_pixels: int = GUI_R1_MIN_PIXELS,
               max_pixels: int = GUI_R1_MAX_PIXELS) -> tuple[Image.Image, tuple[int, int]]:
    """The screenshot resized exactly as the Qwen2.5-VL processor would (so the processor resizes
    no further and the model's pixel frame is the image's), and that size."""
    size = model_image_size(*sample.image_size, min_pixels=min_pixels, max_pixels=max_pixels)
    image = sample.image()
    if image.size != size:
        image = image.resize(size, Image.Resampling.BICUBIC)
    return image, size


def to_model_frame(sample: Sample, model_size: tuple[int, int]) -> list[float]:
    """Ground-truth box/point of `sample` in the model's resized pixel frame."""
    if not sample.has_target:
        return list(NO_POINT)
    return rescale_pixels(sample.gt_bbox, sample.image_size, model_size)


def to_train_rows(samples: Iterable[Sample], min_pixels: int = GUI_R1_MIN_PIXELS,
                  max_pixels: int = GUI_R1_MAX_PIXELS) -> list[dict]:
    """TRL rows: conversational `prompt` with the image placeholder, `image` (PIL, model frame)
    and the columns rewards read (`gt_action`, `gt_bbox` in model pixels, `gt_input_text`)."""
    rows = []
    for s in samples:
        image, size = model_view(s, min_pixels, max_pixels)
        rows.append({
            "prompt": build_messages(s.instruction, s.history, s.task_type, s.space),
            "image": image,
            "gt_action": s.gt_action,
            "gt_bbox": to_model_frame(s, size),
            "gt_input_text": s.gt_input_text,
            "id": s.id,
            "task_type": s.task_type,
            "platform": s.platform or "",
        })
    return rows


def to_train_dataset(samples: Iterable[Sample], min_pixels: int = GUI_R1_MIN_PIXELS,
                     max_pixels: int = GUI_R1_MAX_PIXELS):
    """`to_train_rows` as a `datasets.Dataset` (what `GRPOTrainer` / `SFTTrainer` take)."""
    import datasets

    return datasets.Dataset.from_list(to_train_rows(samples, min_pixels, max_pixels))


@dataclass(frozen=True)
class EvalRow:
    """One evaluation step: the prompt, the model-frame image and size, and the ground truth in
    the stored image's pixels (predictions are mapped back with `actions.rescale_pixels`)."""

    sample: Sample
    messages: list
    model_size: tuple[int, int]

    @property
    def image_size(self) -> tuple[int, int]:
        return self.sample.image_size


def to_eval_rows(samples: Iterable[Sample], min_pixels: int = GUI_R1_MIN_PIXELS,
                 max_pixels: int = GUI_R1_MAX_PIXELS) -> list[EvalRow]:
    out = []
    for s in samples:
        size = model_image_size(*s.image_size, min_pixels=min_pixels, max_pixels=max_pixels)
        out.append(EvalRow(s, build_messages(s.instruction, s.history, s.task_type, s.space), size))
    return out


def with_extras(sample: Sample, **extras: Any) -> Sample:
    """A copy of `sample` with more extras (e.g. `success_rate` from difficulty curation)."""
    return replace(sample, extras={**sample.extras, **extras})
