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
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from PIL import Image

from .actions import ACTION_SPACES, BENCHMARK_SPACES, NO_TEXT, POINT_ACTIONS, TEXT_ACTIONS
from .errors import UsageError
from .geometry import (
    GUI_R1_MAX_PIXELS,
    GUI_R1_MIN_PIXELS,
    NO_POINT,
    has_target,
    is_no_target,
    model_image_size,
    normalized_to_pixels,
    pixels_to_normalized,
    rescale_pixels,
)
from .prompts import NO_HISTORY, build_messages

HUB_DATASET = "ritzzai/GUI-R1"
TRAIN_COLUMNS = ("image", "instruction", "history", "task_type", "gt_action", "gt_bbox", "gt_input_text", "id")
BENCHMARK_COLUMNS = ("image", "instruction", "history", "gt_action", "gt_bbox", "gt_input_text", "group", "ui_type")
#: Benchmark files that need `ui_type`: ScreenSpot's table is per `group-ui_type`. The action
#: benchmarks are scored per action, and some are published without the column.
UI_TYPE_REQUIRED = ("screenspot_test", "screenspot_pro_test")
#: Extra columns some releases carry; read into `Sample.extras`, never required.
KNOWN_EXTRAS = ("verify_bbox", "success_rate", "scale", "platform", "task_type", "id")


class DataError(UsageError):
    """A source, file or row that does not meet the GUI-R1 schema; the message names file, row and
    column (a usage error: the input must change)."""


@dataclass(frozen=True)
class RowError:
    """One problem found while loading: a row (`row` set) or the whole file (`row` None, e.g. an
    unreadable file or a missing column); `rows` is how many rows it cost."""

    file: str
    row: int | None
    column: str | None
    message: str
    rows: int = 1

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.column is not None:
            where += f", column {self.column!r}"
        return f"{where}: {self.message}"


@dataclass
class ValidationReport:
    """What loading read, kept and skipped (and why), per file. Nothing is dropped without a line here."""

    rows_read: int = 0
    rows_kept: int = 0
    errors: list[RowError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    read_by_file: dict[str, int] = field(default_factory=dict)
    kept_by_file: dict[str, int] = field(default_factory=dict)

    @property
    def rows_skipped(self) -> int:
        return self.rows_read - self.rows_kept

    def by_column(self) -> dict[str, int]:
        """Rows skipped, by the column at fault (`<file>` for a whole-file error without a column)."""
        counts: Counter[str] = Counter()
        for e in self.errors:
            counts[e.column or "<file>"] += e.rows
        return {k: n for k, n in counts.items() if n}

    def by_file(self) -> dict[str, dict]:
        """Per file: rows read, kept and skipped, rows skipped by column, and its error lines."""
        out = {}
        for f in self.files:
            errors = [e for e in self.errors if e.file == f]
            read, kept = self.read_by_file.get(f, 0), self.kept_by_file.get(f, 0)
            out[f] = {"rows_read": read, "rows_kept": kept, "rows_skipped": read - kept,
                      "skipped_by_column": ValidationReport(errors=errors).by_column(),
                      "errors": [str(e) for e in errors]}
        return out

    def summary(self, limit: int = 5) -> str:
        """The report for a person: totals, then each file with its whole-file errors and, per
        column at fault, the number of rows, up to `limit` example rows and the first message."""
        lines = [f"{len(self.files)} file(s): read {self.rows_read} rows, kept {self.rows_kept}, "
                 f"skipped {self.rows_skipped}"]
        for f in self.files:
            read, kept = self.read_by_file.get(f, 0), self.kept_by_file.get(f, 0)
            lines.append(f"{f}: read {read}, kept {kept}, skipped {read - kept}")
            lines += _error_lines([e for e in self.errors if e.file == f], limit)
        return "\n".join(lines)

    def empty_files(self) -> list[str]:
        """The files that gave no usable row (unreadable, a required column missing, every row bad)."""
        return [f for f in self.files if not self.kept_by_file.get(f)]

    def skipped(self) -> dict:
        """What was left out, as `metrics.json` counts it: rows skipped, by column at fault and by file."""
        return {"rows": self.rows_skipped, "by_column": self.by_column(),
                "by_file": {f: d["rows_skipped"] for f, d in self.by_file().items() if d["rows_skipped"]}}

    def to_dict(self) -> dict:
        return {"files": self.files, "rows_read": self.rows_read, "rows_kept": self.rows_kept,
                "rows_skipped": self.rows_skipped, "skipped_by_column": self.by_column(),
                "errors": [str(e) for e in self.errors], "by_file": self.by_file()}

    def add(self, other: ValidationReport) -> None:
        """Count `other` (the report of another load) into this one."""
        self.rows_read += other.rows_read
        self.rows_kept += other.rows_kept
        self.errors += other.errors
        self.files += other.files
        for mine, theirs in ((self.read_by_file, other.read_by_file), (self.kept_by_file, other.kept_by_file)):
            for f, n in theirs.items():
                mine[f] = mine.get(f, 0) + n

    @classmethod
    def combine(cls, reports: Iterable[ValidationReport]) -> ValidationReport:
        """One report for several loads (e.g. one per benchmark file)."""
        out = cls()
        for r in reports:
            out.add(r)
        return out


def _error_lines(errors: list[RowError], limit: int) -> list[str]:
    """Whole-file errors one by one; row errors grouped by column with example rows."""
    def plural(n: int) -> str:
        return "row" if n == 1 else "rows"

    lines = []
    for e in errors:
        if e.row is None:
            where = (f", column {e.column!r}" if e.column else "") + (f", {e.rows} {plural(e.rows)}" if e.rows else "")
            lines.append(f"  - whole file{where}: {e.message}")
    groups: dict[str | None, list[RowError]] = {}
    for e in errors:
        if e.row is not None:
            groups.setdefault(e.column, []).append(e)
    for column, group in groups.items():
        rows = ", ".join(str(e.row) for e in group[:limit]) + (", …" if len(group) > limit else "")
        n = len(group)
        lines.append(f"  - column {column!r}: {n} {plural(n)} ({plural(n)} {rows}), e.g. {group[0].message}")
    return lines


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


# --- the hub -------------------------------------------------------------------------------------

#: A hub repository id: `owner/name`, each part starting with a letter or digit.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def is_hub_id(name: str) -> bool:
    """True when `name` has the form of a hub repository id (`owner/name`)."""
    return HUB_ID.fullmatch(name) is not None


def hub_offline() -> bool:
    """True when the environment says not to use the network (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "0"
    return value.strip().lower() in ("1", "true", "yes", "on")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub answers a short socket probe. Without it, an unreachable hub costs minutes
    of retries per file before the error."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = urlparse(endpoint).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _hub_file(repo_id: str, split: str, local: Path) -> Path:
    """Download (or find in the cache) one split of a hub dataset; fail fast when offline. `local`
    is where the same name was looked for on disk: a mistyped relative path has a hub id's shape,
    so the error says first that the path does not exist."""
    from huggingface_hub import hf_hub_download

    try:
        if hub_offline() or not hub_reachable():
            return Path(hf_hub_download(repo_id, f"{split}.parquet", repo_type="dataset", local_files_only=True))
        return Path(hf_hub_download(repo_id, f"{split}.parquet", repo_type="dataset"))
    except Exception as exc:  # noqa: BLE001 - any hub failure gets the same advice
        raise DataError(
            f"{repo_id}: no such file or folder ({local} does not exist; relative paths start from {Path.cwd()}); "
            f"as a hub dataset id it fails too: cannot fetch {split}.parquet of hub dataset {repo_id!r} "
            f"(hub unreachable or file missing: {type(exc).__name__}). Fix the path, or download the dataset "
            f"where the hub is reachable (`huggingface-cli download {repo_id} {split}.parquet --repo-type dataset "
            "--local-dir DIR`) and pass the local file or folder instead") from None


# --- sources ------------------------------------------------------------------------------------


def resolve_files(source: str | os.PathLike, split: str | None = None) -> list[Path]:
    """Parquet files for a file, a folder (every `*.parquet` below it, sorted), or a hub id
    (`ritzzai/GUI-R1` with `split` = a file stem such as `train` or `screenspot_test`)."""
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(path.rglob("*.parquet"))
        if split is not None:
            files = [f for f in files if f.stem == split]
        if not files:
            raise DataError(f"{path}: no parquet files" + (f" named {split}.parquet" if split else ""))
        return files
    if is_hub_id(str(source)) and not path.exists():
        return [_hub_file(str(source), split or "train", Path(os.path.abspath(path)))]
    raise DataError(f"{source}: no such file or folder ({os.path.abspath(path)} does not exist; relative paths start "
                    f"from {Path.cwd()}), and not a hub dataset id like {HUB_DATASET!r} either")


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


def _space_for(file: Path, task_type: str, space: str | None) -> str:
    if space is not None:
        return space
    if file.stem in BENCHMARK_SPACES:
        return BENCHMARK_SPACES[file.stem]
    return "low" if task_type == "low" else "high"


class _BadCell(Exception):
    """One cell of a row fails validation; `_validate_row` turns it into a `RowError`."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column, self.message = column, message


def _decoded_image(value: Any) -> tuple[bytes, tuple[int, int]]:
    data = _image_bytes(value)
    if data is None:
        raise _BadCell("image", "expected {'bytes': PNG/JPEG bytes, 'path': ...} or bytes")
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            return data, (int(im.width), int(im.height))
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a bad row
        raise _BadCell("image", f"bytes do not decode as an image ({type(exc).__name__})") from None


def _text_cells(rec: dict) -> tuple[str, str]:
    """Checks instruction and gt_action; returns (history, gt_input_text)."""
    for col in ("instruction", "gt_action"):
        if not isinstance(rec.get(col), str) or not rec[col].strip():
            raise _BadCell(col, f"expected a non-empty string, got {rec.get(col)!r}")
    history = rec.get("history")
    history = NO_HISTORY if history is None or (isinstance(history, float) and math.isnan(history)) else history
    if not isinstance(history, str):
        raise _BadCell("history", f"expected a string, got {type(history).__name__}")
    text = rec.get("gt_input_text")
    if not isinstance(text, str):
        raise _BadCell("gt_input_text", f"expected a string ('{NO_TEXT}' when none), got {text!r}")
    return history, text


def _task_type(rec: dict, schema: str) -> str:
    task_type = rec.get("task_type") if schema == "train" else (rec.get("task_type") or "high")
    if task_type not in ("high", "low"):
        raise _BadCell("task_type", f"expected 'high' or 'low', got {task_type!r}")
    return task_type


def _check_action(name: str, space_name: str, text: str) -> None:
    allowed = ACTION_SPACES.get(space_name, ACTION_SPACES["high"])
    if name not in allowed:
        raise _BadCell("gt_action", f"{name!r} is not in the {space_name!r} action space {list(allowed)}")
    if name in TEXT_ACTIONS and text.strip() in ("", NO_TEXT):
        raise _BadCell("gt_input_text", f"a {name!r} step needs an input text, got {text!r}")


def _bbox_pixels(value: Any, name: str, size: tuple[int, int], schema: str) -> tuple[float, ...]:
    """The ground-truth box or point in pixels of the stored image (train files store [0, 1])."""
    box = _as_list(value)
    if box is None:
        raise _BadCell("gt_bbox", f"expected a list of numbers, got {value!r}")
    if is_no_target(box):
        if name in POINT_ACTIONS:
            raise _BadCell("gt_bbox", f"a {name!r} step needs a target box or point, got {box}")
        return tuple(float(v) for v in NO_POINT)
    problem = _check_box(box, size, normalised=schema == "train")
    if problem:
        raise _BadCell("gt_bbox", problem)
    return tuple(normalized_to_pixels(box, size) if schema == "train" else box)


def _row_id(rec: dict, file: Path, i: int) -> str:
    sid = rec.get("id")
    return str(sid) if sid is not None and str(sid) != "nan" else f"{file.stem}/{i}"


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _validate_row(file: Path, i: int, rec: dict, schema: str,
                  space: str | None) -> tuple[Sample | None, RowError | None]:
    """The row as a `Sample`, or the first problem found (checked in column order: image, texts,
    task type, action, box)."""
    try:
        data, size = _decoded_image(rec.get("image"))
        history, text = _text_cells(rec)
        task_type = _task_type(rec, schema)
        space_name = _space_for(file, task_type, space)
        _check_action(rec["gt_action"], space_name, text)
        pixels = _bbox_pixels(rec.get("gt_bbox"), rec["gt_action"], size, schema)
    except _BadCell as bad:
        return None, RowError(str(file), i, bad.column, bad.message)
    group = rec.get("group")
    extras = {k: rec[k] for k in KNOWN_EXTRAS if k in rec and k not in ("task_type", "id", "platform")}
    return Sample(
        id=_row_id(rec, file, i), image_bytes=data, image_size=size, instruction=rec["instruction"],
        history=history, gt_action=rec["gt_action"], gt_bbox=pixels, gt_input_text=text, task_type=task_type,
        group=_optional_str(group), ui_type=_optional_str(rec.get("ui_type")),
        platform=_optional_str(rec.get("platform") or (group if schema == "benchmark" else None)),
        space=space_name, schema=schema, source=str(file), row=i, extras=extras,
    ), None


def detect_schema(columns: Iterable[str], stem: str | None = None) -> str:
    """`benchmark` for a file named as one of GUI-R1's benchmarks (`stem`, e.g.
    `androidcontrol_low_test`), with `group` and `ui_type`, or without `task_type`; else `train`."""
    cols = set(columns)
    if stem in BENCHMARK_SPACES or {"group", "ui_type"} <= cols or "task_type" not in cols:
        return "benchmark"
    return "train"


def _read_table(file: Path) -> tuple[Any, RowError | None]:
    """The file's table, or the whole-file error that it is not readable parquet."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file), None
    except Exception as exc:  # noqa: BLE001 - any reader failure means the file is unusable
        return None, RowError(str(file), None, None, f"not a readable parquet file ({type(exc).__name__}: {exc})", 0)


def _missing_columns(file: Path, table: Any, schema: str) -> RowError | None:
    columns = table.column_names
    if schema == "train":
        required = TRAIN_COLUMNS
    else:
        required = tuple(c for c in BENCHMARK_COLUMNS if c != "ui_type" or file.stem in UI_TYPE_REQUIRED)
    missing = [c for c in required if c != "id" and c not in columns]
    if not missing:
        return None
    return RowError(str(file), None, missing[0], f"missing column(s) {missing} for the {schema} schema; has {columns}",
                    table.num_rows)


def _normalised_boxes(file: Path, samples: list[Sample]) -> RowError | None:
    """A whole-file error when every target of a pixel-schema file lies within [0, 1] of a larger
    image: the boxes are normalised, and every prediction would be scored against the top-left pixel."""
    targets = [s for s in samples if s.has_target]
    if not targets or not all(max(s.gt_bbox) <= 1 < min(s.image_size) for s in targets):
        return None
    first = targets[0]
    return RowError(str(file), None, "gt_bbox", (
        f"every target box or point is within [0, 1] (e.g. row {first.row}: {list(first.gt_bbox)} on a "
        f"{first.image_size[0]}x{first.image_size[1]} image): these look normalised, but benchmark files hold "
        "pixels of the stored image, so even a perfect policy would score 0 %. Multiply x by the image width "
        "and y by its height (geometry.normalized_to_pixels); a training file needs its task_type column, "
        "which makes it load with the train schema"), len(samples))


def _refuse(report: ValidationReport, error: RowError, strict: bool) -> None:
    if strict:
        raise DataError(str(error))
    report.errors.append(error)


def _load_file(file: Path, report: ValidationReport, *, strict: bool, schema: str | None, space: str | None,
               limit: int | None) -> list[Sample]:
    """One file's valid samples (at most `limit`); what it skipped goes into `report`."""
    name = str(file)
    report.files.append(name)
    table, error = _read_table(file)
    file_schema = None if table is None else schema or detect_schema(table.column_names, file.stem)
    error = error or _missing_columns(file, table, file_schema)
    read, samples = 0 if table is None else table.num_rows, []
    if error is None:
        read = 0
        for i, rec in enumerate(table.to_pylist()):
            if limit is not None and len(samples) >= limit:
                break
            read += 1
            sample, row_error = _validate_row(file, i, rec, file_schema, space)
            if row_error is not None:
                _refuse(report, row_error, strict)
            else:
                samples.append(sample)
        error = _normalised_boxes(file, samples) if file_schema == "benchmark" else None
        samples = [] if error is not None else samples
    if error is not None:
        _refuse(report, error, strict)
    report.rows_read += read
    report.rows_kept += len(samples)
    report.read_by_file[name] = report.read_by_file.get(name, 0) + read
    report.kept_by_file[name] = report.kept_by_file.get(name, 0) + len(samples)
    return samples


def load_gui_r1(source: str | os.PathLike, split: str | None = None, *, strict: bool = False,
                schema: str | None = None, space: str | None = None, limit: int | None = None) -> Dataset:
    """Load GUI-R1 parquet rows into validated `Sample`s.

    `schema` is `train` (normalised boxes, `task_type`) or `benchmark` (pixel boxes, `group`, and
    `ui_type` where ScreenSpot needs it: `UI_TYPE_REQUIRED`); by default each file's name and
    columns decide (`detect_schema`). `strict=True` raises `DataError` on the
    first bad row or file; otherwise bad rows, and files that cannot be used at all (unreadable,
    a required column missing, normalised boxes where pixels belong), are skipped and listed in
    `Dataset.report` (`report.summary()` groups them by file and column).
    """
    report = ValidationReport()
    samples: list[Sample] = []
    for file in resolve_files(source, split):
        left = None if limit is None else limit - len(samples)
        samples += _load_file(file, report, strict=strict, schema=schema, space=space, limit=left)
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
    """One `EvalRow` per sample: its prompt and the size the processor resizes its image to."""
    out = []
    for s in samples:
        size = model_image_size(*s.image_size, min_pixels=min_pixels, max_pixels=max_pixels)
        out.append(EvalRow(s, build_messages(s.instruction, s.history, s.task_type, s.space), size))
    return out


def with_extras(sample: Sample, **extras: Any) -> Sample:
    """A copy of `sample` with more extras (e.g. `success_rate` from difficulty curation)."""
    return replace(sample, extras={**sample.extras, **extras})
