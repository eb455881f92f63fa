"""Trainer callbacks that write the run's own files: metrics.jsonl (one record per log, resumable),
`ranks/rank{R}.json` (the step and weights fingerprint each process ended with), and the main job's
progress records (step k of n)."""

from __future__ import annotations

import time
from pathlib import Path

from transformers import TrainerCallback

from ..progress import report
from ..runio import append_jsonl, iter_jsonl, rank, world_size, write_json_atomic, write_jsonl_atomic
from .fingerprint import trainable_fingerprint


class MetricsJsonl(TrainerCallback):
    """Appends each log to `<output_dir>/metrics.jsonl` (main process), with seconds per step;
    on resume drops lines past the checkpoint so every step appears once."""

    def __init__(self) -> None:
        self.t_last = time.perf_counter()
        self.step_last = 0

    @staticmethod
    def path(args) -> Path:
        return Path(args.output_dir) / "metrics.jsonl"

    def on_train_begin(self, args, state, control, **kw):
        self.t_last, self.step_last = time.perf_counter(), state.global_step
        path = self.path(args)
        if state.is_world_process_zero and path.exists():
            # a line cut short by a kill is dropped here too: the resumed run logs that step again
            kept = [r for r in iter_jsonl(path) if r.get("step", 0) <= state.global_step]
            write_jsonl_atomic(path, kept)

    def on_log(self, args, state, control, logs=None, **kw):
        if not state.is_world_process_zero or not logs:
            return
        now = time.perf_counter()
        steps = max(1, state.global_step - self.step_last)
        rec = {"step": state.global_step, "epoch": state.epoch,
               "step_seconds": round((now - self.t_last) / steps, 4), **logs}
        self.t_last, self.step_last = now, state.global_step
        append_jsonl(self.path(args), rec)


class RankReport(TrainerCallback):
    """Writes `<output_dir>/ranks/rank{R}.json` when training ends, on every process: the step it
    reached and the fingerprint of its trainable weights, so a test can see the ranks agree."""

    def on_train_end(self, args, state, control, model=None, **kw):
        write_json_atomic(Path(args.output_dir) / "ranks" / f"rank{rank()}.json", {
            "rank": rank(), "world_size": world_size(), "global_step": state.global_step,
            "trainable_fingerprint": trainable_fingerprint(model) if model is not None else None,
        }, indent=None)




class TrainingProgress(TrainerCallback):
    """Reports `stage`'s step k of n to the main job's progress file (`progress.report`): when
    training starts, then at most every `every` seconds, and at its last step."""

    def __init__(self, stage: str, every: float = 5.0) -> None:
        self.stage, self.every, self.t_last = stage, every, 0.0

    def _report(self, state) -> None:
        self.t_last = time.perf_counter()
        report(self.stage, step=state.global_step, steps=state.max_steps)

    def on_train_begin(self, args, state, control, **kw):
        self._report(state)

    def on_step_end(self, args, state, control, **kw):
        if state.global_step >= state.max_steps or time.perf_counter() - self.t_last >= self.every:
            self._report(state)
