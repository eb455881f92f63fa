"""One evaluation run (`evaluate`): a policy and its settings made whole, the run folder opened for
what made it (refused when another run's), every row predicted, the metrics written as JSON and
Markdown."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..blind import blind_record, blind_samples
from ..data import to_eval_rows
from ..errors import UsageError
from ..metrics import summarize, to_markdown
from ..runfolder import as_stored, completer_identity, hold_folder
from ..runfolder import open_run_folder as open_folder
from ..runio import write_json_atomic, write_text_atomic
from .benchmark import Benchmark, load_benchmark, report_skipped, row_keys
from .completers import Completer, ModelCompleter, as_completer, completer_pixels, processor_pixels
from .predictions import PREDICTIONS, predict
from .presets import Preset, check_settings, prediction_settings

METRICS_JSON = "metrics.json"
METRICS_MD = "metrics.md"
#: How an evaluation stopped part-way goes on (said with its folder when it stops: SIGTERM, Ctrl-C, a full disk).
RESUME_NOTE = "to continue, run the same command again (same arguments): finished rows are not predicted again"
#: What a blind run's Markdown says first (`--blind`): its figures are not the policy's with the screen.
BLIND_NOTE = "Blind check: every screenshot was replaced by a white image of the same size.\n\n"


def run_about(policy_name: str, bench: Benchmark, settings: dict) -> dict:
    """What `run.json` notes beside the record it compares: the policy's name, the data files and
    every prediction setting."""
    return {"policy_name": policy_name, "data_files": [str(f) for f in bench.files], "settings": settings}


def run_record(bench: Benchmark, policy: dict, compat: str, min_pixels: int, max_pixels: int,
               max_new_tokens: int | None, limit: int | None) -> dict:
    """What a run folder's predictions depend on: the policy's identity, how completions are read,
    the resize bounds, the longest answer, the data and the row limit."""
    return as_stored({"policy": policy, "compat": compat, "min_pixels": min_pixels, "max_pixels": max_pixels,
                      "max_new_tokens": max_new_tokens, "data": bench.digest, "limit": limit})


def open_run_folder(out_dir: str | os.PathLike, made_by: dict, *, overwrite: bool = False,
                    about: dict | None = None) -> Path:
    """Make `out_dir` the folder of the run `made_by` describes (`run_record`), before anything is
    predicted: resumed when its `run.json` matches, else refused (`RunFolderMismatch`) unless
    `overwrite` deletes its predictions."""
    return open_folder(out_dir, made_by, results=[PREDICTIONS], clear=[METRICS_JSON, METRICS_MD],
                       holds=f"predictions ({PREDICTIONS})", resume="to resume that run, run again with the same "
                       "arguments", overwrite=overwrite, about=about)


def open_run(out_dir: str | os.PathLike, bench: Benchmark, identity: dict, name: str, settings: dict, compat: str,
             limit: int | None, *, blind: bool, overwrite: bool) -> Path:
    """`open_run_folder` for the policy of `identity` (named `name`) on `bench` with the resolved `settings`."""
    made_by = blind_record(run_record(bench, identity, compat, settings["min_pixels"], settings["max_pixels"],
                                      settings["max_new_tokens"], limit), blind)
    return open_run_folder(out_dir, made_by, overwrite=overwrite, about=run_about(name, bench, settings))


def resolve_completer(policy: Any, settings: dict, seed: int = 0) -> tuple[Completer, dict]:
    """The completer for `policy` and `settings` (`prediction_settings`) made whole: a
    `ModelCompleter` without a repetition penalty of its own gets the preset's; the pixel bounds
    left None are the processor's for a model, GUI-R1's for a baseline. A preset's pixel bounds
    that the policy's processor does not resize within are refused (`UsageError`): its points
    would be read in another frame."""
    completer = as_completer(policy, seed)
    settings = dict(settings)
    if isinstance(completer, ModelCompleter):
        if completer.repetition_penalty is None and settings["repetition_penalty"] is not None:
            completer = completer.with_repetition_penalty(settings["repetition_penalty"])
        settings["repetition_penalty"] = completer.penalty
        processor = processor_pixels(completer.policy.processor)
        wanted = (settings["min_pixels"], settings["max_pixels"])
        if settings["preset"] is not None and None not in processor and processor != wanted:
            raise UsageError(f"the policy's processor resizes screenshots within {processor[0]}..{processor[1]} "
                             f"pixels, the run asks {wanted[0]}..{wanted[1]} (preset {settings['preset']!r}): load "
                             f"the policy with min_pixels={wanted[0]}, max_pixels={wanted[1]} "
                             "(modeling.load_policy), or pass the processor's bounds")
    else:
        settings["repetition_penalty"] = settings["temperature"] = settings["top_p"] = None
    settings["min_pixels"], settings["max_pixels"] = completer_pixels(completer, settings["min_pixels"],
                                                                      settings["max_pixels"])
    return completer, settings


def evaluate(data: Any, policy: Any, out_dir: str | os.PathLike, *, benchmark: str | None = None, batch_size: int = 4,
             max_new_tokens: int | None = None, compat: str = "official", min_pixels: int | None = None,
             max_pixels: int | None = None, limit: int | None = None, seed: int = 0, progress: bool = True,
             overwrite: bool = False, preset: str | Preset | None = None, blind: bool = False) -> dict:
    """Predict a benchmark with a policy and write `predictions.jsonl`, `metrics.json` and
    `metrics.md` into `out_dir`; an interrupted run in the same `out_dir` with the same arguments
    resumes (`open_run_folder`), a folder made otherwise is refused unless `overwrite`.

    `data` is anything `load_benchmark` reads, `policy` anything `as_completer` takes, `limit` rows
    per file. `max_new_tokens` and the pixel bounds left None come from `preset` ("paper" or
    "fast"), else `DEFAULT_MAX_NEW_TOKENS` and the processor's bounds for a model, GUI-R1's for a
    baseline; a model policy without a repetition penalty of its own takes the preset's. `compat`:
    "official" (the original's rules) or "strict". `blind` scores the same rows with every
    screenshot white: does the policy look at the screen? (A blind run never resumes a seeing
    run's folder, nor the reverse.)

    Returns the metrics (`metrics.summarize`) with the policy, what validation skipped and every
    resolved setting (`settings`); `per_file` when the rows come from several files. Raises
    `RunFailed` when no row of `data`, or of one of its files, passed validation.
    """
    wanted = prediction_settings(preset, max_new_tokens=max_new_tokens, min_pixels=min_pixels, max_pixels=max_pixels)
    completer, settings = resolve_completer(policy, wanted, seed)
    lo, hi, tokens = settings["min_pixels"], settings["max_pixels"], settings["max_new_tokens"]
    check_settings(limit, lo, hi)
    bench = load_benchmark(data, limit)
    bench.require_rows()
    if blind:
        bench = replace(bench, samples=blind_samples(bench.samples))
    validation = report_skipped(bench)
    rows = to_eval_rows(bench.samples, lo, hi)
    with hold_folder(out_dir, RESUME_NOTE):
        out = open_run(out_dir, bench, completer_identity(completer), completer.name, settings, compat, limit,
                       blind=blind, overwrite=overwrite)
        records = predict(completer, rows, out / PREDICTIONS, batch_size, tokens, compat,
                          min_pixels=lo, max_pixels=hi, keys=row_keys(bench.samples), seed=seed, progress=progress)
        summary = summarize(records, benchmark or bench.name)
        summary.update({"policy": completer.name, "compat": compat, "skipped": bench.report.skipped(),
                        "skipped_rows": bench.report.rows_skipped, "validation": validation, "min_pixels": lo,
                        "max_pixels": hi, "max_new_tokens": tokens, "preset": settings["preset"],
                        "settings": settings, "blind": blind})
        stems = sorted({r["benchmark"] for r in records})
        if len(stems) > 1:
            summary["per_file"] = {s: summarize([r for r in records if r["benchmark"] == s], s) for s in stems}
        write_json_atomic(out / METRICS_JSON, summary)
        write_text_atomic(out / METRICS_MD, (BLIND_NOTE if blind else "") + to_markdown(summary) + "\n")
    return summary
