"""GUI-R1 in miniature: does GRPO with the GUI-R1 rule-based reward beat SFT on the same samples,
measured on held-out MiniWoB++ pages, with a tiny Qwen2.5-VL on two CPU cores in minutes?

Design (the README's miniature section has the figures):

- Data: MiniWoB++ training pages (`miniwob_train.parquet`, seeds 0-29). Training uses seeds
  `train_seeds` (0-24); seeds 25-29 are the validation split every choice below was made on
  (`--validate`); the held-out file (seeds 1000-1014) is read only by the final run.
- Task mix: `DEFAULT_TASKS`, see its comment for which tasks and why.
- Arms, per seed (the seed sets the tiny model's weights and tokenizer and the training order):
  `random` (`evaluate.RandomBaseline`), `sft` and `sft_grpo`. Both trained arms start from the
  SAME SFT warm start (`warm_steps` steps), then each gets the same extra budget on the same
  training rows: `sft` continues SFT, `sft_grpo` runs GRPO with the `rewards` of
  `rewards.REWARDS`. Each arm's learning rate is its best on the validation split
  (`VALIDATION_RUNS`); the held-out file played no part in any choice.
- Fair compute (`fair`): "visits" (default) gives both arms the same number of prompt visits
  after the warm start (`extra_prompts`; a GRPO visit is one prompt with `num_generations`
  sampled answers, an SFT visit one prompt with its target answer), i.e. both see the same
  training rows equally often, as in the paper's SFT-vs-RFT comparison on one data set. "seconds"
  instead gives SFT continuation as many steps as fit in the GRPO arm's measured training time
  (GRPO steps cost more: they generate). Both arms' prompt visits and seconds are recorded
  either way (`compute` in the result).
- Metrics on the held-out rows: `format_rate` (completions whose answer parses),
  `click_accuracy` (`metrics.grounding_metrics` overall: point strictly inside the box, over
  rows with a box target) and `strict_step_success` (`metrics.action_metrics`); mean, sample
  std (ddof 1) and per-seed values over the seeds.

Everything lands under `out_dir`: `data/` (the filtered files), `seed<N>/<stage>/` (models,
`metrics.jsonl`, predictions, `stage.json` when the stage finished), `miniature.json`. A rerun
skips every stage whose `stage.json` exists; an interrupted training stage starts over.

    python -m gui_r1_lite.miniature --out runs/miniature [--seeds 0,1,2] [--validate]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .profiles import PROFILES

_REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRAIN = _REPO / "data_samples" / "train" / "miniwob_train.parquet"
DEFAULT_HELDOUT = _REPO / "data_samples" / "test" / "miniwob_test.parquet"
ARMS: tuple[str, ...] = ("random", "sft", "sft_grpo")
METRICS: tuple[str, ...] = ("format_rate", "click_accuracy", "strict_step_success")
RESULT_FILE = "miniature.json"
STAGE_FILE = "stage.json"
FAIR_MODES = ("visits", "seconds")

#: How the continuation learning rates and the sampling temperature were chosen: seed 0, trained on
#: seeds 0-24 of the training file and scored on its seeds 25-29 (70 rows, 55 with a box;
#: `--validate`), every other setting at its default. Click accuracy %; the warm start alone: 49.1.
VALIDATION_RUNS: tuple[dict, ...] = (
    {"temperature": 1.0, "grpo_lr": 1e-4, "sft_extra_lr": 1e-3, "sft": 20.0, "sft_grpo": 23.6},
    {"temperature": 0.7, "grpo_lr": 5e-5, "sft_extra_lr": 1e-4, "sft": 30.9, "sft_grpo": 61.8},
    {"temperature": 0.7, "grpo_lr": 2e-4, "sft_extra_lr": 3e-4, "sft": 27.3, "sft_grpo": 23.6},
    {"temperature": 0.7, "grpo_lr": 1e-4, "sft_extra_lr": 3e-5, "sft": 54.5, "sft_grpo": 67.3},
    {"temperature": 0.7, "grpo_lr": 1e-4, "sft_extra_lr": 1e-5, "sft": 49.1, "sft_grpo": 67.3},
)

#: Every MiniWoB++ task in the shipped files (data_samples/README.md).
ALL_TASKS: tuple[str, ...] = (
    "click-button", "click-link", "click-tab", "click-test", "click-test-2", "focus-text", "click-color",
    "click-dialog", "click-dialog-2", "click-option", "click-button-sequence", "click-collapsible",
    "enter-text", "login-user")
#: Tasks whose target follows from the instruction, the history and the page's fixed layout
#: (login form, text field + Submit, collapsible section, option list + Submit, tab strip, dialog).
LAYOUT_TASKS: tuple[str, ...] = ("login-user", "enter-text", "click-collapsible", "click-option", "click-tab",
                                 "click-dialog")
#: The task mix trained and evaluated: the layout tasks, which a model this small learns in minutes
#: (the README's miniature section); `tasks=None` trains and scores every task.
DEFAULT_TASKS: tuple[str, ...] = LAYOUT_TASKS

_ID = re.compile(r"^miniwob/(?P<task>[^/]+)/seed(?P<seed>\d+)/step(?P<step>\d+)")


def task_of(sample_id: str) -> str:
    """The MiniWoB task of a row id `miniwob/<task>/seed<N>/step<k>`."""
    m = _ID.match(sample_id)
    if not m:
        raise ValueError(f"row id {sample_id!r} is not of the form miniwob/<task>/seed<N>/step<k>")
    return m["task"]


def seed_of(sample_id: str) -> int:
    """The MiniWoB episode seed of a row id `miniwob/<task>/seed<N>/step<k>`."""
    m = _ID.match(sample_id)
    if not m:
        raise ValueError(f"row id {sample_id!r} is not of the form miniwob/<task>/seed<N>/step<k>")
    return int(m["seed"])


@dataclass
class MiniatureSettings:
    """Every knob of the miniature; the defaults are the configuration reported in the README."""

    tasks: tuple[str, ...] | None = DEFAULT_TASKS   # None: every task in the files
    train_seeds: tuple[int, int] = (0, 24)           # inclusive; 25-29 are the validation split
    validation_seeds: tuple[int, int] = (25, 29)
    min_heldout_rows: int = 200
    # policy: the tiny Qwen2.5-VL (tiny.build_tiny_model keyword arguments), fully fine-tuned
    tiny: dict = field(default_factory=lambda: {"hidden_size": 128, "num_layers": 4,
                                                "vision_hidden": 64, "vision_depth": 2})
    lora: bool = False
    train_vision: bool = True
    min_pixels: int = PROFILES["cpu-mini"].min_pixels
    max_pixels: int = PROFILES["cpu-mini"].max_pixels
    # shared SFT warm start
    warm_steps: int = 200
    sft_batch: int = 8
    sft_lr: float = 1e-3
    warm_scheduler: str = "cosine"
    # the extra budget after the warm start, the same for both arms (see `fair`)
    fair: str = "visits"
    extra_prompts: int = 160
    sft_extra_lr: float = 3e-5                 # chosen on the validation split (VALIDATION_RUNS)
    extra_scheduler: str = "constant"          # both arms' schedule after the warm start
    # GRPO
    rewards: dict = field(default_factory=lambda: {"gui_r1": 1.0})
    grpo_lr: float = 1e-4                      # chosen on the validation split (VALIDATION_RUNS)
    num_generations: int = 8
    grpo_prompts_per_step: int = 2
    # GUI-R1 samples at 1.0; the warm-started tiny model's answers then rarely parse (mean reward
    # about 0.05 on validation), which leaves GRPO almost no signal: 0.7 gives rewards 0.1-0.8
    temperature: float = 0.7
    beta: float = 0.0
    loss_type: str = "grpo"
    max_completion_length: int = 44
    # evaluation
    eval_batch_size: int = 32
    max_new_tokens: int = 44
    eval_limit: int | None = None

    @classmethod
    def from_overrides(cls, base: MiniatureSettings | None = None, **overrides: Any) -> MiniatureSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown miniature setting(s) {unknown}; valid: {sorted(known)}")
        return dataclasses.replace(base or cls(), **overrides)

    def validate(self) -> MiniatureSettings:
        if self.fair not in FAIR_MODES:
            raise ValueError(f"fair must be one of {FAIR_MODES}, got {self.fair!r}")
        if self.warm_steps < 1:
            raise ValueError(f"warm_steps must be at least 1 (a random model never answers in format), got {self.warm_steps}")
        if self.extra_prompts < 1 or self.sft_batch < 1 or self.grpo_prompts_per_step < 1:
            raise ValueError("extra_prompts, sft_batch and grpo_prompts_per_step must be at least 1")
        if self.num_generations < 2:
            raise ValueError(f"num_generations must be at least 2 (GRPO compares answers in a group), got {self.num_generations}")
        unknown = sorted(set(self.tasks or ()) - set(ALL_TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; MiniWoB tasks here: {list(ALL_TASKS)}")
        return self

    @property
    def grpo_steps(self) -> int:
        return max(1, math.ceil(self.extra_prompts / self.grpo_prompts_per_step))

    @property
    def sft_extra_steps_visits(self) -> int:
        return max(1, math.ceil(self.extra_prompts / self.sft_batch))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["tasks"] = list(self.tasks) if self.tasks is not None else None
        return d


# --- data -----------------------------------------------------------------------------------------


def select_rows(samples: Iterable, tasks: Sequence[str] | None = None,
                seeds: tuple[int, int] | None = None) -> list:
    """Samples of `tasks` (None: all) whose episode seed lies in the inclusive range `seeds` (None: all)."""
    out = []
    for s in samples:
        if tasks is not None and task_of(s.id) not in tasks:
            continue
        if seeds is not None and not seeds[0] <= seed_of(s.id) <= seeds[1]:
            continue
        out.append(s)
    return out


def prepare_data(out_dir: str | os.PathLike, train_data: str | os.PathLike, heldout_data: str | os.PathLike,
                 settings: MiniatureSettings, validate: bool = False) -> dict[str, Any]:
    """Write `data/train.parquet` (train seeds, task mix; GUI-R1 training schema) and
    `data/heldout.parquet` (benchmark schema: the held-out file's task-mix rows, or with
    `validate` the validation seeds of the training file). Returns paths and row counts."""
    from .data import load_gui_r1, write_gui_r1

    data = Path(out_dir) / "data"
    data.mkdir(parents=True, exist_ok=True)
    tasks = tuple(settings.tasks) if settings.tasks is not None else None
    train_all = load_gui_r1(train_data).samples
    train = select_rows(train_all, tasks, tuple(settings.train_seeds))
    if validate:
        heldout = select_rows(train_all, tasks, tuple(settings.validation_seeds))
        lo, hi = settings.validation_seeds
        if not (hi < settings.train_seeds[0] or lo > settings.train_seeds[1]):
            raise ValueError(f"validation seeds {settings.validation_seeds} overlap train seeds {settings.train_seeds}")
    else:
        heldout = select_rows(load_gui_r1(heldout_data).samples, tasks)
    if not train:
        raise ValueError(f"{train_data}: no rows of tasks {tasks} with seeds {settings.train_seeds}")
    if not validate and len(heldout) < settings.min_heldout_rows:
        raise ValueError(f"only {len(heldout)} evaluation rows for tasks {tasks} (at least "
                         f"{settings.min_heldout_rows} wanted); widen the task mix")
    train_seeds = {seed_of(s.id) for s in train}
    overlap = train_seeds & {seed_of(s.id) for s in heldout}
    if overlap:
        raise ValueError(f"evaluation rows share episode seeds {sorted(overlap)} with the training rows")
    train_path = write_gui_r1(train, data / "train.parquet", schema="train")
    heldout_path = write_gui_r1(heldout, data / "heldout.parquet", schema="benchmark")

    def mix(rows):
        counts: dict[str, int] = {}
        for s in rows:
            counts[task_of(s.id)] = counts.get(task_of(s.id), 0) + 1
        return dict(sorted(counts.items()))

    return {"train": str(train_path), "heldout": str(heldout_path), "validate": validate,
            "n_train": len(train), "n_heldout": len(heldout),
            "n_heldout_click": sum(1 for s in heldout if s.gt_action == "click" and len(s.gt_bbox) == 4),
            "train_tasks": mix(train), "heldout_tasks": mix(heldout),
            "heldout_source": str(train_data if validate else heldout_data)}


# --- stages ---------------------------------------------------------------------------------------


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, default=float) + "\n")
    tmp.replace(path)


@contextlib.contextmanager
def _quiet(log: Path, progress: bool):
    """Training and loading chatter goes to `log` unless `progress`."""
    if progress:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        yield


def _stage(folder: Path, fn: Callable[[], dict], progress: bool, *, fresh: bool = False) -> dict:
    """Run `fn` once: its result (plus `seconds`) is stored in `folder/stage.json`, which later
    runs read instead of running it again. `fresh` clears an unfinished folder first."""
    done = folder / STAGE_FILE
    if done.exists():
        info = json.loads(done.read_text())
        info["skipped"] = True
        return info
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if progress:
        print(f"[miniature] {folder}", flush=True)
    t0 = time.perf_counter()
    with _quiet(folder / "log.txt", progress):
        info = fn()
    info["seconds"] = round(time.perf_counter() - t0, 2)
    _write_json(done, info)
    info["skipped"] = False
    return info


def _train_runtime(output_dir: str) -> float | None:
    from .train import read_metrics

    for rec in reversed(read_metrics(output_dir)):
        if "train_runtime" in rec:
            return float(rec["train_runtime"])
    return None


def _train(settings: MiniatureSettings, folder: Path, *, method: str, model: str, init_adapter: str | None,
           train_file: str, steps: int, lr: float, seed: int, tiny_seed: int, scheduler: str,
           callbacks: Sequence = ()) -> dict:
    from .train import TrainConfig, train

    common: dict[str, Any] = dict(
        model=model, tiny=dict(settings.tiny), tiny_seed=tiny_seed, lora=settings.lora,
        train_vision=settings.train_vision, init_adapter=init_adapter, train_data=train_file,
        min_pixels=settings.min_pixels, max_pixels=settings.max_pixels, learning_rate=lr, max_steps=steps,
        lr_scheduler_type=scheduler,
        seed=seed, output_dir=str(folder), save_steps=10**9, save_total_limit=None, device="cpu",
        logging_steps=1, sft_thinking="")
    if method == "sft":
        cfg = TrainConfig(method="sft", per_device_train_batch_size=settings.sft_batch, **common)
    else:
        cfg = TrainConfig(method="grpo", rewards=dict(settings.rewards),
                          per_device_train_batch_size=settings.grpo_prompts_per_step * settings.num_generations,
                          num_generations=settings.num_generations, temperature=settings.temperature,
                          beta=settings.beta, loss_type=settings.loss_type,
                          max_completion_length=settings.max_completion_length, **common)
    result = train(cfg, callbacks=list(callbacks))
    prompts_per_step = settings.sft_batch if method == "sft" else settings.grpo_prompts_per_step
    return {"method": method, "steps": result.global_step, "adapter_dir": result.adapter_dir,
            "base_model": result.base_model,
            "prompt_visits": result.global_step * prompts_per_step,
            "completions": result.global_step * (settings.grpo_prompts_per_step * settings.num_generations
                                                 if method == "grpo" else 0),
            "train_runtime": _train_runtime(str(folder)), "learning_rate": lr}


def _policy_args(settings: MiniatureSettings, stage: dict) -> tuple[str, str | None]:
    """(model folder, adapter folder or None) of a trained stage."""
    if settings.lora:
        return stage["base_model"], stage["adapter_dir"]
    return stage["adapter_dir"], None  # full fine-tuning saves the whole model there


def arm_metrics(summary: dict, records: Sequence[dict]) -> dict[str, float]:
    """The three headline fractions of one evaluation (`evaluate.evaluate` output and its records)."""
    n = len(records)
    fmt = sum(1 for r in records if not r.get("parse_error")) / n if n else 0.0
    g = summary.get("grounding") or {}
    a = summary.get("action") or {}
    return {"format_rate": fmt, "click_accuracy": float(g.get("overall") or 0.0),
            "strict_step_success": float(a.get("strict_step_success") or 0.0)}


def per_task_click_accuracy(records: Sequence[dict]) -> dict[str, float | None]:
    """Grounding accuracy per MiniWoB task (None for tasks without box targets)."""
    from .metrics import grounding_metrics

    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(task_of(r["id"]), []).append(r)
    out = {}
    for task, recs in sorted(by.items()):
        g = grounding_metrics(recs)
        out[task] = g["overall"] if g else None
    return out


def _evaluate(settings: MiniatureSettings, heldout: str, folder: Path, policy_spec: tuple[str, str | None] | int,
              name: str) -> dict:
    from .evaluate import PREDICTIONS, ModelCompleter, RandomBaseline, evaluate, read_records

    if isinstance(policy_spec, int):
        completer = RandomBaseline(policy_spec)
    else:
        from .modeling import load_policy

        model, adapter = policy_spec
        completer = ModelCompleter(load_policy(model, None, lora=None, adapter=adapter,
                                               min_pixels=settings.min_pixels, max_pixels=settings.max_pixels,
                                               device="cpu"), name)
    summary = evaluate(heldout, completer, folder, batch_size=settings.eval_batch_size,
                       max_new_tokens=settings.max_new_tokens, min_pixels=settings.min_pixels,
                       max_pixels=settings.max_pixels, limit=settings.eval_limit, progress=False)
    records = read_records(folder / PREDICTIONS)
    return {"metrics": arm_metrics(summary, records), "n": len(records),
            "per_task_click_accuracy": per_task_click_accuracy(records)}


# --- the run --------------------------------------------------------------------------------------


def _aggregate(values: Sequence[float]) -> dict[str, Any]:
    vals = [float(v) for v in values]
    return {"mean": statistics.fmean(vals) if vals else None,
            "std": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "per_seed": vals}


def run_seed(out_dir: Path, seed: int, settings: MiniatureSettings, data: dict, progress: bool = False,
             callbacks: Sequence = ()) -> dict:
    """The three arms for one seed; returns per-arm metrics, seconds and compute. `callbacks`
    (TrainerCallbacks, e.g. live curves) are passed to every training stage."""
    sd = out_dir / f"seed{seed}"
    heldout = data["heldout"]
    stages: dict[str, dict] = {}
    stages["random_eval"] = _stage(out_dir / "random" / f"seed{seed}",
                                   lambda: _evaluate(settings, heldout, out_dir / "random" / f"seed{seed}", seed,
                                                     "random"), progress)
    stages["warm"] = _stage(sd / "warm", lambda: _train(
        settings, sd / "warm", method="sft", model="tiny", init_adapter=None, train_file=data["train"],
        steps=settings.warm_steps, lr=settings.sft_lr, seed=seed, tiny_seed=seed,
        scheduler=settings.warm_scheduler, callbacks=callbacks), progress, fresh=True)
    model, adapter = _policy_args(settings, stages["warm"])  # both arms start from the warm start
    stages["grpo"] = _stage(sd / "grpo", lambda: _train(
        settings, sd / "grpo", method="grpo", model=model, init_adapter=adapter, train_file=data["train"],
        steps=settings.grpo_steps, lr=settings.grpo_lr, seed=seed, tiny_seed=seed,
        scheduler=settings.extra_scheduler, callbacks=callbacks), progress, fresh=True)
    if settings.fair == "visits":
        sft_steps = settings.sft_extra_steps_visits
    else:  # as many SFT steps as fit in GRPO's training time, at the warm start's measured speed
        sft_step_s = (stages["warm"].get("train_runtime") or stages["warm"]["seconds"]) / max(1, stages["warm"]["steps"])
        grpo_s = stages["grpo"].get("train_runtime") or stages["grpo"]["seconds"]
        sft_steps = max(1, round(grpo_s / sft_step_s))
    stages["sft_extra"] = _stage(sd / "sft_extra", lambda: _train(
        settings, sd / "sft_extra", method="sft", model=model, init_adapter=adapter, train_file=data["train"],
        steps=sft_steps, lr=settings.sft_extra_lr, seed=seed, tiny_seed=seed,
        scheduler=settings.extra_scheduler, callbacks=callbacks), progress, fresh=True)
    stages["sft_eval"] = _stage(sd / "eval_sft", lambda: _evaluate(
        settings, heldout, sd / "eval_sft", _policy_args(settings, stages["sft_extra"]), f"sft-seed{seed}"), progress)
    stages["sft_grpo_eval"] = _stage(sd / "eval_sft_grpo", lambda: _evaluate(
        settings, heldout, sd / "eval_sft_grpo", _policy_args(settings, stages["grpo"]), f"sft_grpo-seed{seed}"),
        progress)
    # the warm start alone, for reference (what both arms started from)
    stages["warm_eval"] = _stage(sd / "eval_warm", lambda: _evaluate(
        settings, heldout, sd / "eval_warm", _policy_args(settings, stages["warm"]), f"warm-seed{seed}"), progress)
    compute = {
        "warm": {k: stages["warm"].get(k) for k in ("steps", "prompt_visits", "train_runtime", "seconds")},
        "sft": {k: stages["sft_extra"].get(k) for k in ("steps", "prompt_visits", "train_runtime", "seconds")},
        "sft_grpo": {k: stages["grpo"].get(k) for k in ("steps", "prompt_visits", "completions", "train_runtime",
                                                         "seconds")},
    }
    seconds = {
        "random": stages["random_eval"]["seconds"],
        "warm": stages["warm"]["seconds"],
        "sft": stages["sft_extra"]["seconds"] + stages["sft_eval"]["seconds"],
        "sft_grpo": stages["grpo"]["seconds"] + stages["sft_grpo_eval"]["seconds"],
        "warm_eval": stages["warm_eval"]["seconds"],
    }
    return {"metrics": {"random": stages["random_eval"]["metrics"], "sft": stages["sft_eval"]["metrics"],
                        "sft_grpo": stages["sft_grpo_eval"]["metrics"], "warm": stages["warm_eval"]["metrics"]},
            "per_task": {"random": stages["random_eval"]["per_task_click_accuracy"],
                         "sft": stages["sft_eval"]["per_task_click_accuracy"],
                         "sft_grpo": stages["sft_grpo_eval"]["per_task_click_accuracy"],
                         "warm": stages["warm_eval"]["per_task_click_accuracy"]},
            "n_eval": stages["sft_eval"]["n"], "compute": compute, "seconds": seconds,
            "runs": {"warm": str(sd / "warm"), "sft": str(sd / "sft_extra"), "sft_grpo": str(sd / "grpo")},
            "models": {name: _policy_args(settings, stages[stage])
                       for name, stage in (("warm", "warm"), ("sft", "sft_extra"), ("sft_grpo", "grpo"))},
            "predictions": {"random": str(out_dir / "random" / f"seed{seed}"), "warm": str(sd / "eval_warm"),
                            "sft": str(sd / "eval_sft"), "sft_grpo": str(sd / "eval_sft_grpo")},
            "skipped": sorted(k for k, v in stages.items() if v.get("skipped"))}


def run_miniature(out_dir: str | os.PathLike, seeds: Sequence[int] = (0, 1, 2), *,
                  train_data: str | os.PathLike = DEFAULT_TRAIN, heldout_data: str | os.PathLike = DEFAULT_HELDOUT,
                  settings: MiniatureSettings | None = None, validate: bool = False, progress: bool = False,
                  callbacks: Sequence = (), **overrides: Any) -> dict:
    """Run the miniature (every arm for every seed) and write `out_dir/miniature.json`.

    Returns `{"random"|"sft"|"sft_grpo": {"format_rate"|"click_accuracy"|"strict_step_success":
    {"mean", "std", "per_seed"}}}` plus metadata under other keys (`settings`, `data`, `compute`,
    `seconds`, `per_task`, `warm`, `seeds`). `settings` (default `MiniatureSettings()`) and
    keyword `overrides` of its fields set the budget; `validate=True` evaluates on the
    validation seeds of the training file instead of `heldout_data`. Finished stages are
    skipped on a rerun in the same `out_dir` (with the same settings), so a larger `seeds` list
    reuses the seeds already run. `callbacks` go to every training stage."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    settings = MiniatureSettings.from_overrides(settings, **overrides).validate()
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings_file = out / "settings.json"
    wanted = json.loads(json.dumps({"settings": settings.to_dict(), "train_data": str(train_data),
                                    "heldout_data": str(heldout_data), "validate": validate}))  # as stored
    if settings_file.exists():
        before = json.loads(settings_file.read_text())
        if before != wanted:
            raise ValueError(f"{out} holds a run with other settings ({settings_file}); use another out_dir "
                             "or delete it")
    else:
        _write_json(settings_file, wanted)
    t0 = time.perf_counter()
    data = prepare_data(out, train_data, heldout_data, settings, validate)
    per_seed = {}
    for seed in seeds:
        per_seed[seed] = run_seed(out, seed, settings, data, progress, callbacks)
    result: dict[str, Any] = {}
    for arm in ARMS + ("warm",):
        result[arm] = {m: _aggregate([per_seed[s]["metrics"][arm][m] for s in seeds]) for m in METRICS}
    warm = result.pop("warm")
    tasks = sorted({t for s in seeds for t in per_seed[s]["per_task"]["sft"]})
    per_task = {arm: {t: _mean_or_none([per_seed[s]["per_task"][arm].get(t) for s in seeds]) for t in tasks}
                for arm in ARMS + ("warm",)}
    result.update({
        "seeds": seeds,
        "warm_start": warm,
        "per_task_click_accuracy": per_task,
        "data": data,
        "n_heldout": per_seed[seeds[0]]["n_eval"],
        "compute": {str(s): per_seed[s]["compute"] for s in seeds},
        "runs": {str(s): per_seed[s]["runs"] for s in seeds},
        "models": {str(s): per_seed[s]["models"] for s in seeds},
        "predictions": {str(s): per_seed[s]["predictions"] for s in seeds},
        "seconds": {str(s): per_seed[s]["seconds"] for s in seeds},
        "seconds_total": round(sum(sum(v for v in per_seed[s]["seconds"].values()) for s in seeds), 2),
        "wall_seconds_this_call": round(time.perf_counter() - t0, 2),
        "settings": settings.to_dict(),
        "skipped_stages": {str(s): per_seed[s]["skipped"] for s in seeds},
    })
    _write_json(out / RESULT_FILE, result)
    return result


def headline(result: dict) -> dict:
    """The arms' metrics alone (`{"random"|"sft"|"sft_grpo": {metric: {"mean", "std", "per_seed"}}}`),
    as `summary.json` reports them."""
    return {arm: result[arm] for arm in ARMS}


def _mean_or_none(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def miniature_table(result: dict) -> str:
    """A Markdown table of `run_miniature`'s result: arm x metric, mean ± std in percent."""
    names = {"format_rate": "format rate %", "click_accuracy": "click accuracy %",
             "strict_step_success": "strict step success %"}
    seeds = result.get("seeds")
    lines = [f"| arm | {' | '.join(names[m] for m in METRICS)} |", "|---|" + "---:|" * len(METRICS)]
    rows = list(ARMS)
    for arm in rows:
        cells = []
        for m in METRICS:
            v = result[arm][m]
            cells.append(f"{100 * v['mean']:.1f} ± {100 * v['std']:.1f}")
        lines.append(f"| {arm} | {' | '.join(cells)} |")
    if seeds is not None:
        lines.append("")
        lines.append(f"mean ± std over seeds {', '.join(map(str, seeds))}; n = {result.get('n_heldout')} evaluation rows")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gui_r1_lite.miniature", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (a rerun skips finished stages)")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    ap.add_argument("--train-data", default=str(DEFAULT_TRAIN))
    ap.add_argument("--heldout-data", default=str(DEFAULT_HELDOUT))
    ap.add_argument("--validate", action="store_true",
                    help="evaluate on the validation seeds of the training file instead of the held-out file")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                    help="override a MiniatureSettings field, e.g. --set warm_steps=100 --set 'tasks=[click-tab]'")
    ap.add_argument("--progress", action="store_true", help="show training logs")
    args = ap.parse_args(argv)
    import yaml

    overrides = {}
    for item in args.set:
        key, sep, raw = item.partition("=")
        if not sep:
            ap.error(f"--set needs KEY=VALUE, got {item!r}")
        value = yaml.safe_load(raw)
        if key in ("tasks", "train_seeds", "validation_seeds") and isinstance(value, list):
            value = tuple(value)
        overrides[key] = value
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    t0 = time.perf_counter()
    result = run_miniature(args.out, seeds, train_data=args.train_data, heldout_data=args.heldout_data,
                           validate=args.validate, progress=args.progress, **overrides)
    print(miniature_table(result))
    print(f"\nwall time {time.perf_counter() - t0:.1f} s; wrote {Path(args.out) / RESULT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
