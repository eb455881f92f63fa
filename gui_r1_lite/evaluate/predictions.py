"""The prediction loop and its records: every row asked in batches, each completion read by
`actions.parse_completion` with its point mapped from the model's frame back to the stored image's
pixels, one record per row appended to a resumable JSONL file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..actions import parse_completion
from ..data import EvalRow, model_view
from ..geometry import rescale_pixels
from ..progress import bar
from ..runio import append_jsonl, clean_jsonl, iter_jsonl
from .benchmark import row_keys
from .completers import Completer, as_completer, completer_pixels
from .presets import DEFAULT_MAX_NEW_TOKENS

PREDICTIONS = "predictions.jsonl"


def make_record(row: EvalRow, key: str, completion: str, compat: str = "official") -> dict:
    """One prediction record: ground truth, sizes, the raw completion and its reading, with the
    predicted point in the stored image's pixels (`pred_coord`) and in the model frame."""
    s = row.sample
    parsed = parse_completion(completion, compat)
    # Without an answer block nothing was read: no action, point or text (every test misses).
    pred = parsed.prediction if parsed.answer is not None else None
    coord = coord_model = None
    if pred is not None and pred.has_point:
        coord_model = [pred.point[0], pred.point[1]]
        coord = rescale_pixels(coord_model, row.model_size, s.image_size)
    return {
        "id": key,
        "benchmark": Path(s.source).stem if s.source else "",
        "group": s.group or s.platform or "",
        "ui_type": s.ui_type or "",
        "instruction": s.instruction,
        "history": s.history,
        "gt_action": s.gt_action,
        "gt_bbox": [float(v) for v in s.gt_bbox],
        "gt_input_text": s.gt_input_text,
        "image_size": list(s.image_size),
        "model_size": list(row.model_size),
        "completion": completion,
        "pred_action": pred.action if pred is not None else None,
        "pred_coord": coord,
        "pred_coord_model": coord_model,
        "pred_input_text": pred.input_text if pred is not None else None,
        "format_ok": parsed.format_ok,
        "parse_error": parsed.error,
        "compat": compat,
    }


def read_records(path: str | os.PathLike) -> list[dict]:
    """Records of a predictions file, in file order; a line cut short by a crash, and any line
    without an "id", is skipped."""
    return [r for r in iter_jsonl(path) if "id" in r]


def predict(policy: Any, rows: Sequence[EvalRow], out_path: str | os.PathLike, batch_size: int = 4,
            max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, compat: str = "official", *,
            min_pixels: int | None = None, max_pixels: int | None = None, keys: Sequence[str] | None = None,
            seed: int = 0, progress: bool = True) -> list[dict]:
    """Predict every row with `policy` (`as_completer`) and append one record per row to `out_path`
    (JSONL), flushed per batch; return the records of `rows`, in order.

    Rows whose id is already in the file are skipped (resume after a crash: nothing computed is
    lost, and the finished file equals an uninterrupted run's); a line of it that is not a whole
    record, at the end or inside, is dropped, named on stderr, and its row predicted again. Only
    the compat of those records is checked here; `evaluate` checks that its folder was begun by the
    same policy, data and settings. `rows` must be made with the pixel bounds given (default: the
    processor's for a model, GUI-R1's for a baseline); `keys` are unique record ids, one per row
    (default `row_keys`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    completer = as_completer(policy, seed)
    lo, hi = completer_pixels(completer, min_pixels, max_pixels)
    rows = list(rows)
    keys = list(keys) if keys is not None else row_keys(r.sample for r in rows)
    if len(keys) != len(rows) or len(set(keys)) != len(keys):
        raise ValueError("keys must be unique, one per row")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # a line that is not a whole record, wherever it stands, is named on stderr and its row predicted again
    done = {r["id"]: r for r in clean_jsonl(out_path, lambda r: True, valid=lambda r: "id" in r,
                                            then="their rows are predicted again")}
    wanted = set(keys)
    other = {r.get("compat") for k, r in done.items() if k in wanted} - {compat}
    if other:
        raise ValueError(f"{out_path} holds records read with compat={sorted(map(str, other))}, not {compat!r}; "
                         "resume with the same compat or write to another file")
    todo = [(k, r) for k, r in zip(keys, rows, strict=True) if k not in done]

    with bar(len(rows), f"predict {completer.name}", show=progress, done=len(rows) - len(todo)) as advance:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            completions = _complete_batch(completer, batch, lo, hi, max_new_tokens)
            records = [make_record(row, key, text, compat)
                       for (key, row), text in zip(batch, completions, strict=True)]
            append_jsonl(out_path, records)  # flushed per batch: a crash loses at most this batch
            done.update((r["id"], r) for r in records)
            advance(len(batch))
    return [done[k] for k in keys]


def _complete_batch(completer: Completer, batch: Sequence[tuple[str, EvalRow]], lo: int, hi: int,
                    max_new_tokens: int) -> list[str]:
    """One completion per (key, row) of `batch`, each image checked to be in its row's model frame."""
    images = []
    for key, row in batch:
        image, size = model_view(row.sample, lo, hi)
        if tuple(size) != tuple(row.model_size):
            raise ValueError(f"row {key}: model_view gives {size} but the row was made for "
                             f"{tuple(row.model_size)}; use the same min/max pixels for both")
        images.append(image)
    completions = completer.complete([r for _, r in batch], images, [k for k, _ in batch], max_new_tokens)
    if len(completions) != len(batch):
        raise RuntimeError(f"{completer.name} returned {len(completions)} completions for {len(batch)} rows")
    return completions
