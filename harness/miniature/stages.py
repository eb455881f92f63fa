"""One stage of a miniature run: a training run or an evaluation, run once into its own folder and
cached there (`stage.json`), so that a rerun skips what finished and restarts what did not."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gui_r1_lite.progress import report
from gui_r1_lite.runfolder import read_record
from gui_r1_lite.runio import write_json_atomic

from .settings import MiniatureSettings
from .splits import task_of

STAGE_FILE = "stage.json"


def seed_folder(out_dir: str | Path, seed: int) -> Path:
    """Where a miniature run in `out_dir` keeps seed `seed`'s stages, a folder each."""
    return Path(out_dir) / f"seed{seed}"


@contextlib.contextmanager
def _quiet(log: Path, progress: bool) -> Iterator[None]:
    """Training and loading chatter goes to `log` unless `progress`."""
    if progress:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        yield


def run_stage(folder: Path, fn: Callable[[], dict], progress: bool = False, *, fresh: bool = False,
              announce: dict | None = None, record: dict | None = None) -> dict:
    """Run `fn` once: its result (plus `seconds` and `record`, e.g. the threads it ran on) is stored
    in `folder/stage.json`, which later runs read instead (the returned dict says `skipped`). `fresh`
    clears an unfinished folder first (a training run cut short must start over); `progress` shows the
    stage's output instead of sending it to `folder/log.txt`. A stage that runs reports its start
    (`announce`: `progress.report`'s fields, "stage" among them) and its end."""
    finished = read_record(folder, STAGE_FILE)  # None when missing or torn: the stage runs again
    if finished is not None:
        return {**finished, "skipped": True}
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if progress:
        print(f"[miniature] {folder}", flush=True)
    stage = dict(announce or {"stage": f"{folder.parent.name} · {folder.name}"})
    name = str(stage.pop("stage"))
    report(name, "start", **stage)
    t0 = time.perf_counter()
    with _quiet(folder / "log.txt", progress):
        info = fn()
    info.update(record or {})
    info["seconds"] = round(time.perf_counter() - t0, 2)
    write_json_atomic(folder / STAGE_FILE, info)
    report(name, "end", seconds=info["seconds"])
    return {**info, "skipped": False}


def train_config(settings: MiniatureSettings, folder: Path, *, method: str, start: tuple[str, str | None] | None,
                 train_file: str, steps: int, lr: float, seed: int, scheduler: str) -> dict[str, Any]:
    """The training configuration of one stage: `method` "sft" or "grpo" from `start` (a trained stage's
    `(model, adapter)`, or None for the settings' base_model or else a new tiny model built with `seed`), written to
    `folder`."""
    model, init_adapter = start or (settings.base_path or "tiny", None)
    cfg: dict[str, Any] = dict(
        method=method, model=model, tiny=dict(settings.tiny), tiny_seed=seed, lora=settings.lora,
        train_vision=settings.train_vision, init_adapter=init_adapter, train_data=train_file,
        min_pixels=settings.min_pixels, max_pixels=settings.max_pixels, learning_rate=lr, max_steps=steps,
        lr_scheduler_type=scheduler, seed=seed, output_dir=str(folder), save_steps=10**9, save_total_limit=None,
        device="cpu", logging_steps=1, sft_thinking="")
    if method == "sft":
        cfg["per_device_train_batch_size"] = settings.sft_batch
    else:
        cfg.update(rewards=dict(settings.rewards),
                   per_device_train_batch_size=settings.grpo_prompts_per_step * settings.num_generations,
                   num_generations=settings.num_generations, temperature=settings.temperature, beta=settings.beta,
                   loss_type=settings.loss_type, max_completion_length=settings.max_completion_length,
                   top_p=settings.top_p, top_k=settings.top_k, repetition_penalty=settings.repetition_penalty)
    return cfg


def train_runtime(output_dir: str | Path) -> float | None:
    """The trainer's own `train_runtime` (seconds) from a run's metrics.jsonl, if it got that far."""
    from gui_r1_lite.training import read_metrics

    for rec in reversed(read_metrics(output_dir)):
        if "train_runtime" in rec:
            return float(rec["train_runtime"])
    return None


def _cpu_clock():
    """A TrainerCallback that reads this process's CPU seconds over the training loop (the span of
    `train_runtime`): with a stage pinned to its threads they measure the work done, where wall seconds
    also count what else the machine was running."""
    from transformers import TrainerCallback

    class CpuClock(TrainerCallback):
        seconds: float | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self._start = time.process_time()

        def on_train_end(self, args, state, control, **kwargs):
            self.seconds = round(time.process_time() - self._start, 3)

    return CpuClock()


def _cpu_budget(seconds: float):
    """A TrainerCallback that stops training at the first step end after `seconds` CPU seconds of this
    process in the training loop: an SFT arm matched on a GRPO arm's training seconds."""
    from transformers import TrainerCallback

    class CpuBudget(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self._start = time.process_time()

        def on_step_end(self, args, state, control, **kwargs):
            if time.process_time() - self._start >= seconds:
                control.should_training_stop = True

    return CpuBudget()


def base_stage(settings: MiniatureSettings) -> dict:
    """The record of a stage that trains nothing: the start is `settings.base_model` itself (no warm start)."""
    base = settings.base_path
    return {"method": "none", "steps": 0, "adapter_dir": None if settings.lora else base, "base_model": base,
            "prompt_visits": 0, "completions": 0, "train_runtime": 0.0, "train_cpu_seconds": 0.0,
            "learning_rate": 0.0}


def train_stage(settings: MiniatureSettings, folder: Path, *, callbacks: Sequence = (),
                cpu_seconds: float | None = None, **stage: Any) -> dict:
    """Train one stage (`stage`: `train_config`'s keywords; with `cpu_seconds`, it stops once the training loop
    has used that many CPU seconds, `steps` being then a bound) and return what the run reports of it: steps,
    where the model is, prompt visits, sampled completions, wall and CPU seconds of the training loop,
    learning rate."""
    from gui_r1_lite.training import TrainConfig, train

    cfg = TrainConfig.from_dict(train_config(settings, folder, **stage), source=f"miniature stage {folder}")
    clock = _cpu_clock()
    budget = [_cpu_budget(cpu_seconds)] if cpu_seconds is not None else []
    result = train(cfg, callbacks=[*callbacks, clock, *budget])
    method, lr = stage["method"], stage["lr"]
    grpo = method == "grpo"
    prompts_per_step = settings.grpo_prompts_per_step if grpo else settings.sft_batch
    return {"method": method, "steps": result.global_step, "adapter_dir": result.adapter_dir,
            "base_model": result.base_model, "prompt_visits": result.global_step * prompts_per_step,
            "completions": result.global_step * prompts_per_step * settings.num_generations if grpo else 0,
            "train_runtime": train_runtime(folder), "train_cpu_seconds": clock.seconds, "learning_rate": lr}


def policy_of(settings: MiniatureSettings, stage: dict) -> tuple[str, str | None]:
    """(model folder, adapter folder or None) of a trained stage."""
    if settings.lora:
        return stage["base_model"], stage["adapter_dir"]
    return stage["adapter_dir"], None  # full fine-tuning saves the whole model there


def arm_metrics(summary: dict, records: Sequence[dict]) -> dict[str, float]:
    """Format rate, click accuracy and strict step success of one evaluation (its summary and records)."""
    n = len(records)
    fmt = sum(1 for r in records if not r.get("parse_error")) / n if n else 0.0
    g = summary.get("grounding") or {}
    a = summary.get("action") or {}
    return {"format_rate": fmt, "click_accuracy": float(g.get("overall") or 0.0),
            "strict_step_success": float(a.get("strict_step_success") or 0.0)}


def per_task_click_accuracy(records: Sequence[dict]) -> dict[str, float | None]:
    """Grounding accuracy per MiniWoB task (None for tasks without box targets)."""
    from gui_r1_lite.metrics import grounding_metrics

    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(task_of(r["id"]), []).append(r)
    metrics = {task: grounding_metrics(recs) for task, recs in sorted(by.items())}
    return {task: g["overall"] if g else None for task, g in metrics.items()}


def evaluate_stage(settings: MiniatureSettings, heldout: str, folder: Path,
                   policy: tuple[str, str | None] | int, name: str, blind: bool = False) -> dict:
    """Score `policy` on the `heldout` file into `folder`: a trained stage's `(model, adapter)`
    (named `name` in the records) or, as an int, the random baseline's seed; `blind`: with every
    screenshot white."""
    from gui_r1_lite.evaluate import PREDICTIONS, ModelCompleter, RandomBaseline, evaluate, read_records

    if isinstance(policy, int):
        completer = RandomBaseline(policy)
    else:
        from gui_r1_lite.modeling import load_policy

        model, adapter = policy
        completer = ModelCompleter(load_policy(model, None, lora=None, adapter=adapter,
                                               min_pixels=settings.min_pixels, max_pixels=settings.max_pixels,
                                               device="cpu"), name)
    summary = evaluate(heldout, completer, folder, batch_size=settings.eval_batch_size,
                       max_new_tokens=settings.max_new_tokens, min_pixels=settings.min_pixels,
                       max_pixels=settings.max_pixels, limit=settings.eval_limit, progress=False, blind=blind,
                       overwrite=True)  # the stage's own folder: a partial scoring of another model restarts
    records = read_records(folder / PREDICTIONS)
    return {"metrics": arm_metrics(summary, records), "n": len(records),
            "per_task_click_accuracy": per_task_click_accuracy(records)}


def online_stage(settings: MiniatureSettings, folder: Path, policy: tuple[str, str | None] | int) -> dict:
    """Play `settings.online_episodes` episodes of each task in the live MiniWoB++ page with `policy`."""
    from gui_r1_lite.evaluate import RandomBaseline

    from .. import online

    player, adapter = (RandomBaseline(policy), None) if isinstance(policy, int) else policy
    return online.evaluate_online(player, list(settings.online_tasks), settings.online_episodes,
                                  settings.online_seed_start, folder, max_steps=settings.online_max_steps,
                                  adapter=adapter, min_pixels=settings.min_pixels, max_pixels=settings.max_pixels,
                                  max_new_tokens=settings.max_new_tokens, progress=False)
