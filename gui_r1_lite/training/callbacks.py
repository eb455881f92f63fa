"""Trainer callbacks that write the run's own files: metrics.jsonl, validation records,
`ranks/rank{R}.json`, and the main job's progress; and the one that stops a run asked to stop at
the end of a step, with a checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..progress import report
from ..runio import append_jsonl, clean_jsonl, rank, world_size, write_json_atomic
from .fingerprint import trainable_fingerprint

#: The key of the record the trainer logs when `train()` ends (its runtime, its mean loss).
END_SUMMARY = "train_runtime"


class MetricsJsonl(TrainerCallback):
    """Appends each log to `<output_dir>/metrics.jsonl` with seconds per step; on resume drops the
    lines past the checkpoint and the end-of-run summary of the part run before, so every step (and
    one summary) appears once, and names on stderr any line it cannot trust."""

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
            # a line cut short by a kill, or garbage inside, is dropped here too (and named): past the
            # checkpoint the resumed run logs that step again
            clean_jsonl(path, lambda r: r.get("step", 0) <= state.global_step and END_SUMMARY not in r,
                        then=f"steps after {state.global_step} (the checkpoint) are logged again, "
                             "earlier ones stay without their record")

    def on_log(self, args, state, control, logs=None, **kw):
        if not state.is_world_process_zero or not logs:
            return
        now = time.perf_counter()
        steps = max(1, state.global_step - self.step_last)
        rec = {"step": state.global_step, "epoch": state.epoch,
               "step_seconds": round((now - self.t_last) / steps, 4), **logs}
        self.t_last, self.step_last = now, state.global_step
        append_jsonl(self.path(args), rec)

    def pause(self, seconds: float) -> None:
        """Leave `seconds` spent on something else (validation) out of `step_seconds`."""
        self.t_last += seconds


class Validation(TrainerCallback):
    """Every `steps` steps, on the main process: the policy's greedy answers to held-out `rows`
    (kept in `validation/step-<N>.jsonl`) and one record of their metrics in metrics.jsonl; its time
    is left out of `step_seconds`. Other processes wait at the next step's first collective."""

    def __init__(self, policy: Any, rows: Sequence, *, steps: int, max_new_tokens: int, batch_size: int,
                 compat: str, pixels: tuple[int, int], metrics: MetricsJsonl | None = None) -> None:
        self.policy, self.rows, self.steps = policy, list(rows), steps
        self.max_new_tokens, self.batch_size, self.compat, self.pixels = max_new_tokens, batch_size, compat, pixels
        self.metrics = metrics

    def on_step_end(self, args, state, control, **kw):
        if not state.is_world_process_zero or state.global_step % self.steps:
            return
        start = time.perf_counter()
        records = self.answer(Path(args.output_dir) / "validation" / f"step-{state.global_step}.jsonl")
        seconds = time.perf_counter() - start
        append_jsonl(MetricsJsonl.path(args), {"step": state.global_step, "epoch": state.epoch,
                                               **validation_metrics(records, self.rows, self.compat),
                                               "validation/seconds": round(seconds, 3)})
        if self.metrics is not None:
            self.metrics.pause(seconds)

    def answer(self, path: Path) -> list[dict]:
        """The policy's greedy answers to the rows (eval mode, then back), written to `path`."""
        from ..evaluate import ModelCompleter, predict

        path.unlink(missing_ok=True)  # a killed run's answers: the resumed run recomputes the weights they came from
        model = self.policy.model
        training = model.training
        model.eval()
        try:
            return predict(ModelCompleter(self.policy, name="validation"), self.rows, path, self.batch_size,
                           self.max_new_tokens, self.compat, min_pixels=self.pixels[0], max_pixels=self.pixels[1],
                           progress=False)
        finally:
            model.train(training)


def validation_metrics(records: Sequence[dict], rows: Sequence, compat: str) -> dict[str, float | int | None]:
    """A validation record (fractions; None where no row applies): `click_accuracy` (point in the box
    of click rows), `format_rate`, `type_accuracy` (the original's Type), `strict_step_success`
    (action, point and text all right; the original's SR measures a box from its corner), `reward`
    (the mean GUI-R1 reward, the original's validation score) and `rows`."""
    from ..data import to_model_frame
    from ..metrics import summarize
    from ..rewards import gui_r1_score

    summary = summarize(records)
    grounding, action = summary["grounding"] or {}, summary["action"] or {}
    n = len(records)
    scores = [gui_r1_score(r["completion"], row.sample.gt_action, to_model_frame(row.sample, row.model_size),
                           row.sample.gt_input_text, compat)["overall"] for r, row in zip(records, rows, strict=True)]
    return {"validation/click_accuracy": grounding.get("overall"),
            "validation/format_rate": sum(bool(r["format_ok"]) for r in records) / n if n else None,
            "validation/type_accuracy": action.get("type"),
            "validation/strict_step_success": action.get("strict_step_success"),
            "validation/reward": sum(scores) / n if n else None, "validation/rows": n}


class StopWhenAsked(TrainerCallback):
    """Ends training at the end of the first step after which `asked()` says yes (a SIGTERM, through
    `errors.deferred_sigterm`) with a checkpoint saved there, so `--resume` continues from it; the
    step's metrics line is written first. The processes of a multi-process run agree: one asked is
    enough, so all stop (and save) at the same step instead of waiting for each other forever."""

    def __init__(self, asked: Callable[[], bool] = lambda: False) -> None:
        self.asked = asked
        self.stopped_at: int | None = None

    def on_step_end(self, args, state, control, **kw):
        if _any_process(self.asked()):
            control.should_save = control.should_training_stop = True
            self.stopped_at = state.global_step


def _any_process(flag: bool) -> bool:
    """`flag` of this process, or of any process of a multi-process run (one small all-reduce a step)."""
    if world_size() == 1:
        return flag
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return flag
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    seen = torch.tensor([int(flag)], device=device)
    dist.all_reduce(seen, op=dist.ReduceOp.MAX)
    return bool(seen.item())


class RankReport(TrainerCallback):
    """Writes `ranks/rank{R}.json` on every process when training ends (step and weights
    fingerprint), so a test can see the ranks agree."""

    def on_train_end(self, args, state, control, model=None, **kw):
        write_json_atomic(Path(args.output_dir) / "ranks" / f"rank{rank()}.json", {
            "rank": rank(), "world_size": world_size(), "global_step": state.global_step,
            "trainable_fingerprint": trainable_fingerprint(model) if model is not None else None,
        }, indent=None)


class TrainingProgress(TrainerCallback):
    """Reports `stage`'s step k of n to the main job's progress file: at the start, at most every
    `every` seconds, and at the last step."""

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
