"""GUI-R1 data as published: load parquet files (training or benchmark schema) from a file, a folder
or the hub, every row validated (`validation`), and write them back. Re-exports `samples` and
`validation`, so `gui_r1_lite.data` stays the one import for data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .geometry import pixels_to_normalized
from .hub import HUB_ID, hub_offline, hub_reachable, is_hub_id
from .samples import (
    EvalRow,
    Sample,
    model_view,
    to_eval_rows,
    to_model_frame,
    to_train_dataset,
    to_train_rows,
    with_extras,
)
from .validation import (
    BENCHMARK_COLUMNS,
    KNOWN_EXTRAS,
    TRAIN_COLUMNS,
    UI_TYPE_REQUIRED,
    RowError,
    ValidationReport,
    detect_schema,
    missing_columns,
    normalised_boxes,
    read_table,
    validate_row,
)

HUB_DATASET = "ritzzai/GUI-R1"


class DataError(UsageError):
    """A source, file or row that does not meet the GUI-R1 schema (a usage error: the input must change)."""


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


def _hub_file(repo_id: str, split: str, local: Path) -> Path:
    """One split of a hub dataset, downloaded or cached; fails fast offline. `local` is where the name was
    looked for on disk: a mistyped relative path looks like a hub id, so the error says that first."""
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


def _refuse(report: ValidationReport, error: RowError, strict: bool) -> None:
    if strict:
        raise DataError(str(error))
    report.errors.append(error)


def _load_file(file: Path, report: ValidationReport, *, strict: bool, schema: str | None, space: str | None,
               limit: int | None) -> list[Sample]:
    """One file's valid samples (at most `limit`); what it skipped goes into `report`."""
    name = str(file)
    report.files.append(name)
    table, error = read_table(file)
    file_schema = None if table is None else schema or detect_schema(table.column_names, file.stem)
    error = error or missing_columns(file, table, file_schema)
    read, samples = 0 if table is None else table.num_rows, []
    if error is None:
        read = 0
        for i, rec in enumerate(table.to_pylist()):
            if limit is not None and len(samples) >= limit:
                break
            read += 1
            sample, row_error = validate_row(file, i, rec, file_schema, space)
            if row_error is not None:
                _refuse(report, row_error, strict)
            else:
                samples.append(sample)
        error = normalised_boxes(file, samples) if file_schema == "benchmark" else None
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
    """Load GUI-R1 parquet rows into validated `Sample`s (`gt_bbox` in stored-image pixels).

    `schema` is `train` (normalised boxes, `task_type`) or `benchmark` (pixel boxes, `group`,
    `UI_TYPE_REQUIRED`); by default each file's name and columns decide (`detect_schema`).
    `strict=True` raises `DataError` on the first bad row or file; otherwise bad rows and unusable
    files are skipped and listed in `Dataset.report`.
    """
    report = ValidationReport()
    samples: list[Sample] = []
    for file in resolve_files(source, split):
        left = None if limit is None else limit - len(samples)
        samples += _load_file(file, report, strict=strict, schema=schema, space=space, limit=left)
    return Dataset(samples, report)


def write_gui_r1(samples: Iterable[Sample], path: str | os.PathLike, schema: str = "train") -> Path:
    """Write samples as GUI-R1 parquet (`train`: normalised boxes; `benchmark`: pixels), with `platform`
    and extras such as `success_rate`; `load_gui_r1` reads it back unchanged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if schema not in ("train", "benchmark"):
        raise ValueError(f"schema must be 'train' or 'benchmark', got {schema!r}")
    samples = list(samples)
    extra_keys = sorted(set().union(*(s.extras for s in samples)))
    rows = []
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
        for k in extra_keys:
            row[k] = s.extras.get(k)
        rows.append(row)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out


__all__ = [
    "BENCHMARK_COLUMNS", "HUB_DATASET", "HUB_ID", "KNOWN_EXTRAS", "TRAIN_COLUMNS", "UI_TYPE_REQUIRED", "DataError",
    "Dataset", "EvalRow", "RowError", "Sample", "ValidationReport", "detect_schema", "hub_offline", "hub_reachable",
    "is_hub_id", "load_gui_r1", "model_view", "resolve_files", "to_eval_rows", "to_model_frame", "to_train_dataset",
    "to_train_rows", "with_extras", "write_gui_r1",
]
