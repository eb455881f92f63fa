"""Benchmark rows for evaluation: the validated samples of a file, a folder, a `Dataset` or a list,
with the validation report, a content digest for the run record, and the record id of each row."""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..data import Dataset, Sample, ValidationReport, load_gui_r1, resolve_files
from ..errors import RunFailed
from ..runfolder import digest


@dataclass
class Benchmark:
    """Validated benchmark rows (`load_benchmark`); `files` is empty for samples given in memory."""

    samples: list[Sample]
    report: ValidationReport
    name: str
    files: list[Path] = field(default_factory=list)

    @cached_property
    def digest(self) -> list[dict]:
        """Each file's name and content hash (in-memory samples: their count and one hash)."""
        if self.files:
            return [{"file": f.name, "sha256": digest(f)} for f in self.files]
        h = hashlib.sha256()
        for s in self.samples:
            h.update(json.dumps([s.id, s.instruction, s.history, s.gt_action, [float(v) for v in s.gt_bbox],
                                 s.gt_input_text, list(s.image_size)]).encode())
            h.update(hashlib.sha256(s.image_bytes or b"").digest())
        return [{"samples": len(self.samples), "sha256": h.hexdigest()}]

    def require_rows(self) -> None:
        """Raise `RunFailed` with the validation summary when no row is usable, or when one of the
        files gave none (a benchmark silently missing a file would score something else)."""
        if not self.samples:
            raise RunFailed(f"nothing to evaluate in {self.name}: no row passed validation\n{self.report.summary()}")
        if empty := self.report.empty_files():
            raise RunFailed(f"{len(empty)} of {len(self.report.files)} file(s) in {self.name} gave no usable row "
                            f"({', '.join(empty)}); fix or remove them\n{self.report.summary()}")


def row_keys(samples: Iterable[Sample]) -> list[str]:
    """Unique record ids for samples in order: the sample id, with `#2`, `#3`, … on repeats."""
    seen: Counter = Counter()
    keys = []
    for s in samples:
        seen[s.id] += 1
        keys.append(s.id if seen[s.id] == 1 else f"{s.id}#{seen[s.id]}")
    return keys


def load_benchmark(data: Any, limit: int | None = None) -> Benchmark:
    """The validated rows of a benchmark file, a folder of them (`limit` rows per file), a
    `Dataset` or a list of samples (`limit` rows in all)."""
    if isinstance(data, Benchmark):
        return data
    if isinstance(data, Dataset):
        return Benchmark(list(data.samples)[:limit], data.report, "samples")
    if isinstance(data, (list, tuple)):
        n = len(data[:limit])
        return Benchmark(list(data)[:limit], ValidationReport(rows_read=n, rows_kept=n), "samples")
    files = resolve_files(data)
    loaded = [load_gui_r1(f, limit=limit) for f in files]
    samples = [s for ds in loaded for s in ds.samples]
    path = Path(data)
    name = path.stem if path.is_file() else (path.name or str(data))
    return Benchmark(samples, ValidationReport.combine([ds.report for ds in loaded]), name, files)


def samples_by_id(data: Any, limit: int | None = None) -> dict[str, Sample]:
    """Record id -> sample, as `evaluate` numbers them (for pictures of predictions)."""
    samples = load_benchmark(data, limit).samples
    return dict(zip(row_keys(samples), samples, strict=True))


def report_skipped(bench: Benchmark) -> dict:
    """Print why rows or files were skipped (stderr) and return what metrics.json records of it: the counts,
    the summary, and every skipped row's or file's own reason (`errors`: file, row, column, why)."""
    report = bench.report
    if report.rows_skipped or report.errors:
        print(f"[evaluate] {report.rows_skipped} row(s) skipped by validation:\n{report.summary()}", file=sys.stderr)
    return {"rows_read": report.rows_read, "rows_kept": report.rows_kept, "rows_skipped": report.rows_skipped,
            "skipped_by_column": report.by_column(), "summary": report.summary(),
            "errors": [str(e) for e in report.errors]}
