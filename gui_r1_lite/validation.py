"""The GUI-R1 schema, checked: every row of a training or benchmark file becomes a `Sample` or a
`RowError` naming file, row and column, counted in the `ValidationReport` of what loading read,
kept and skipped."""

from __future__ import annotations

import io
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from .actions import ACTION_SPACES, BENCHMARK_SPACES, NO_TEXT, POINT_ACTIONS, TEXT_ACTIONS
from .geometry import NO_POINT, is_no_target, normalized_to_pixels
from .prompts import NO_HISTORY
from .samples import Sample

TRAIN_COLUMNS = ("image", "instruction", "history", "task_type", "gt_action", "gt_bbox", "gt_input_text", "id")
BENCHMARK_COLUMNS = ("image", "instruction", "history", "gt_action", "gt_bbox", "gt_input_text", "group", "ui_type")
#: Benchmark files that need `ui_type` (ScreenSpot's table is per `group-ui_type`); some action
#: benchmarks are published without it.
UI_TYPE_REQUIRED = ("screenspot_test", "screenspot_pro_test")
#: Extra columns some releases carry; read into `Sample.extras`, never required.
KNOWN_EXTRAS = ("verify_bbox", "success_rate", "scale", "platform", "task_type", "id")


@dataclass(frozen=True)
class RowError:
    """A problem with a row, or with the whole file (`row` None); `rows` is how many rows it cost."""

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
    """What loading read, kept and skipped (and why), per file: nothing is dropped without a line here."""

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
        """The report for a person: totals, then per file its whole-file errors and its row errors by
        column (up to `limit` row numbers each)."""
        lines = [f"{len(self.files)} file(s): read {self.rows_read} rows, kept {self.rows_kept}, "
                 f"skipped {self.rows_skipped}"]
        for f in self.files:
            read, kept = self.read_by_file.get(f, 0), self.kept_by_file.get(f, 0)
            lines.append(f"{f}: read {read}, kept {kept}, skipped {read - kept}")
            lines += _error_lines([e for e in self.errors if e.file == f], limit)
        return "\n".join(lines)

    def empty_files(self) -> list[str]:
        """The files that gave no usable row."""
        return [f for f in self.files if not self.kept_by_file.get(f)]

    def skipped(self) -> dict:
        """Rows skipped, by column at fault and by file, as `metrics.json` counts them."""
        return {"rows": self.rows_skipped, "by_column": self.by_column(),
                "by_file": {f: d["rows_skipped"] for f, d in self.by_file().items() if d["rows_skipped"]}}

    def to_dict(self) -> dict:
        return {"files": self.files, "rows_read": self.rows_read, "rows_kept": self.rows_kept,
                "rows_skipped": self.rows_skipped, "skipped_by_column": self.by_column(),
                "errors": [str(e) for e in self.errors], "by_file": self.by_file()}

    def add(self, other: ValidationReport) -> None:
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
    groups: dict[str | None, list[RowError]] = {}
    for e in errors:
        if e.row is None:
            where = (f", column {e.column!r}" if e.column else "") + (f", {e.rows} {plural(e.rows)}" if e.rows else "")
            lines.append(f"  - whole file{where}: {e.message}")
        else:
            groups.setdefault(e.column, []).append(e)
    for column, group in groups.items():
        rows = ", ".join(str(e.row) for e in group[:limit]) + (", …" if len(group) > limit else "")
        n = len(group)
        lines.append(f"  - column {column!r}: {n} {plural(n)} ({plural(n)} {rows}), e.g. {group[0].message}")
    return lines


def _as_list(value: Any) -> list | None:
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        return [float(v) for v in list(value)]
    except (TypeError, ValueError):
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
    return BENCHMARK_SPACES.get(file.stem, "low" if task_type == "low" else "high")


class _BadCell(Exception):
    """A cell that fails validation; `validate_row` makes it a `RowError`."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column, self.message = column, message


def _decoded_image(value: Any) -> tuple[bytes, tuple[int, int]]:
    data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise _BadCell("image", "expected {'bytes': PNG/JPEG bytes, 'path': ...} or bytes")
    data = bytes(data)
    try:
        with warnings.catch_warnings():
            # PIL only warns between MAX_IMAGE_PIXELS and twice that, then decodes gigabytes: a row, refused
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                return data, (int(im.width), int(im.height))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        pixels = re.search(r"\((\d+) pixels\)", str(exc))
        size = f"{int(pixels[1]):,} pixels" if pixels else str(exc)
        raise _BadCell("image", f"{size}, above the {Image.MAX_IMAGE_PIXELS:,} PIL decodes safely "
                                "(PIL.Image.MAX_IMAGE_PIXELS, its decompression-bomb guard); no screen is this "
                                "large: downscale the screenshot before storing it") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a bad row
        raise _BadCell("image", f"bytes do not decode as an image ({type(exc).__name__})") from None


def _text_cells(rec: dict) -> tuple[str, str]:
    """(history, gt_input_text), once instruction and gt_action are checked."""
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


def validate_row(file: Path, i: int, rec: dict, schema: str,
                  space: str | None) -> tuple[Sample | None, RowError | None]:
    """The row as a `Sample`, or its first problem (image, texts, task type, action, box)."""
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
    """`benchmark` for a file named as a GUI-R1 benchmark (e.g. `androidcontrol_low_test`), with
    `group` and `ui_type`, or without `task_type`; else `train`."""
    cols = set(columns)
    if stem in BENCHMARK_SPACES or {"group", "ui_type"} <= cols or "task_type" not in cols:
        return "benchmark"
    return "train"


def read_table(file: Path) -> tuple[Any, RowError | None]:
    """The file's table, or the whole-file error that it is not readable parquet."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file), None
    except Exception as exc:  # noqa: BLE001 - any reader failure means the file is unusable
        return None, RowError(str(file), None, None, f"not a readable parquet file ({type(exc).__name__}: {exc})", 0)


def missing_columns(file: Path, table: Any, schema: str) -> RowError | None:
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


def normalised_boxes(file: Path, samples: list[Sample]) -> RowError | None:
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
