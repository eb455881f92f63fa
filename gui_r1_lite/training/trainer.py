"""One training run end to end: the configured model, data and rewards wired into TRL's
`GRPOTrainer` (GUI-R1's method) or `SFTTrainer` (the paper's baseline on the same data)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

import yaml

from ..actions import format_answer, target_action
from ..errors import Terminated, deferred_sigterm, disk_full_errno
from ..runfolder import (
    RUN_FILE,
    check_training_folder,
    hold_folder,
    record_base_model,
    run_identity,
    writable_folder,
)
from ..runio import is_main_process, write_json_atomic, write_text_atomic
from .checkpoints import checkpoints, drop_incomplete_checkpoints, last_checkpoint
from .config import ConfigError, TrainConfig, trl_defaults

#: What a run writes into its folder besides `checkpoint-N`: any of them means a run was there.
#: (`base_model`, the built tiny model, is a cache checked by its build arguments.)
RUN_FILES = (RUN_FILE, "train_config.yaml", "data_report.json", "metrics.jsonl", "adapter", "ranks")
#: How a run stopped part-way goes on (said with its folder when it stops: SIGTERM, Ctrl-C, a full disk).
RESUME_NOTE = "to continue, run the same command again with --resume"


@dataclass
class TrainResult:
    """Where a finished run wrote everything, and how far it got."""
    output_dir: str
    adapter_dir: str
    metrics_path: str
    global_step: int
    data_report: dict
    base_model: str = ""  # hub id or folder (the built tiny model)


def resolve_model(cfg: TrainConfig, wait_seconds: float = 600.0) -> str:
    """The model folder or hub id; "tiny" is built under output_dir/base_model."""
    if cfg.model != "tiny":
        return cfg.model
    from ..tiny import ensure_tiny_model

    folder = Path(cfg.get("output_dir")) / "base_model"
    return ensure_tiny_model(folder, seed=cfg.tiny_seed, wait_seconds=wait_seconds, **cfg.tiny)


def sft_completion(row: dict, thinking: str = "") -> list[dict]:
    """The SFT target of a training row: the ground-truth action as the policy should write it."""
    answer = format_answer(target_action(row["gt_action"], row["gt_bbox"], row["gt_input_text"]), thinking)
    return [{"role": "assistant", "content": answer}]


def build_datasets(cfg: TrainConfig):
    """(TRL dataset, validation report) from the configured data, in the model's pixel frame."""
    import datasets

    from ..data import load_gui_r1, to_train_rows

    loaded = load_gui_r1(cfg.train_data, split=cfg.train_split, limit=cfg.limit)
    if not loaded.samples:
        raise ConfigError(f"{cfg.train_data}: no valid rows to train on\n{loaded.report.summary()}")
    rows = to_train_rows(loaded.samples, cfg.min_pixels, cfg.max_pixels)
    if cfg.method == "sft":
        for r in rows:
            r["completion"] = sft_completion(r, cfg.sft_thinking)
    return datasets.Dataset.from_list(rows), loaded.report


def validation_rows(cfg: TrainConfig) -> list:
    """The held-out `data.EvalRow`s a run validates on: the first rows of each file, in turn, up to
    `validation_limit` ([] when validation is off)."""
    if cfg.validation_data is None:
        return []
    from ..data import DataError, ValidationReport, load_gui_r1, resolve_files, to_eval_rows

    try:
        loaded = [load_gui_r1(f, limit=cfg.validation_limit)
                  for f in resolve_files(cfg.validation_data, cfg.validation_split)]
    except DataError as exc:
        raise ConfigError(f"validation_data: {exc}") from None
    in_turn = [s for group in zip_longest(*(d.samples for d in loaded)) for s in group if s is not None]
    if not in_turn:
        report = ValidationReport.combine([d.report for d in loaded])
        raise ConfigError(f"validation_data: {cfg.validation_data}: no valid rows to validate on\n{report.summary()}")
    return to_eval_rows(in_turn[:cfg.validation_limit], cfg.min_pixels, cfg.max_pixels)


def validation_callback(cfg: TrainConfig, args, policy, rows: list, metrics):
    """The `Validation` callback; answers as long as the run's unless `validation_max_new_tokens` says."""
    from ..evaluate import DEFAULT_MAX_NEW_TOKENS
    from .callbacks import Validation

    tokens = cfg.validation_max_new_tokens or (
        cfg.get("max_completion_length") if cfg.method == "grpo" else DEFAULT_MAX_NEW_TOKENS)
    return Validation(policy, rows, steps=cfg.validation_steps, max_new_tokens=tokens,
                      batch_size=args.per_device_eval_batch_size, compat=cfg.compat,
                      pixels=(cfg.min_pixels, cfg.max_pixels), metrics=metrics)


def prepare_run_folder(cfg: TrainConfig, out: Path) -> dict:
    """Before any model loads: `out` can be written, the data exist, and `out` holds no other run
    (the main process checks and writes `run.json`). Returns the run's record."""
    from ..data import resolve_files

    writable_folder(out, "output_dir", error=ConfigError)
    identity = run_identity(cfg, resolve_files(cfg.train_data, cfg.train_split), error=ConfigError)
    if is_main_process():
        found = [name for name in RUN_FILES if (out / name).exists()] + [d.name for _, d in checkpoints(out)]
        check_training_folder(out, cfg, identity, found, cfg.resume, error=ConfigError)
        write_json_atomic(out / RUN_FILE, identity)
    return identity


def write_run_settings(cfg: TrainConfig, out: Path) -> None:
    """`train_config.yaml`: the run's settings as one recipe (our TRL defaults written out) that
    reproduces the run."""
    record = {**cfg.to_dict(), **{k: v for k, v in trl_defaults(cfg.method).items() if k not in cfg.trl_args}}
    write_text_atomic(out / "train_config.yaml", yaml.safe_dump(record, sort_keys=False))


def load_model(cfg: TrainConfig, args) -> tuple[Any, str]:
    """(the policy to train, the model it came from), seeded before LoRA is drawn.

    Not TRL's `get_quantization_config` / `get_peft_config`: its 4-bit config would quantise the
    vision tower and lm_head too (`modeling.QUANTIZATION_SKIP`; docs/gpu.md), and its `ModelConfig`
    has no setting for the vision LoRA targets of `train_vision`."""
    import torch
    from transformers import set_seed

    from ..modeling import LoraSettings, load_policy, set_cuda_allocator

    if not args.use_cpu:
        set_cuda_allocator(cfg.cuda_alloc_conf)  # before the weights take CUDA memory
    source = resolve_model(cfg)
    set_seed(args.seed)  # the LoRA initialisation is drawn in load_policy, before the trainer seeds anything
    settings = LoraSettings(r=cfg.lora_r, alpha=cfg.lora_alpha, dropout=cfg.lora_dropout,
                            train_vision=cfg.train_vision) if cfg.lora else None
    return load_policy(
        source, cfg.quantization, lora=None if cfg.init_adapter else settings,
        adapter=cfg.init_adapter, adapter_trainable=cfg.init_adapter is not None,
        min_pixels=cfg.min_pixels, max_pixels=cfg.max_pixels,
        device="cpu" if args.use_cpu else None, dtype=torch.bfloat16 if args.bf16 else None,
        train_vision=cfg.train_vision, gradient_checkpointing=cfg.gradient_checkpointing), source


def build_trainer(cfg: TrainConfig, args, policy, dataset, callbacks: list, validation: list | None = None):
    """TRL's `GRPOTrainer` (with the configured rewards) or `SFTTrainer`, validating on the
    `validation` rows when given; the trainable weights keep the dtypes they were loaded in."""
    from .callbacks import MetricsJsonl, RankReport

    metrics = MetricsJsonl()
    watch = [validation_callback(cfg, args, policy, validation, metrics)] if validation else []
    common = dict(model=policy.model, args=args, train_dataset=dataset, processing_class=policy.processor,
                  callbacks=[metrics, RankReport(), *watch, *callbacks])
    with keep_trainable_dtypes(policy.model):
        if cfg.method == "grpo":
            from trl import GRPOTrainer

            from ..rewards import build_rewards

            funcs, _ = build_rewards(cfg.rewards, cfg.compat, monitor=cfg.monitor_rewards)
            return GRPOTrainer(reward_funcs=funcs, **common)
        from trl import SFTTrainer

        return SFTTrainer(**common)


@contextmanager
def keep_trainable_dtypes(model) -> Iterator[None]:
    """Give every trainable parameter back the tensor it had on entry if its dtype changed inside.

    TRL casts a quantised model's LoRA weights (fp32) to bf16 when its trainer is built. At LoRA
    learning rates Adam's steps (~lr) are below half of bf16's spacing for most `lora_A` entries
    (|a| ~ 0.01: spacing ~ 6e-5), so those would never change. The optimizer is created later, in
    `train()`, from the parameters restored here."""
    before = {name: p.data for name, p in model.named_parameters() if p.requires_grad}
    yield
    for name, p in model.named_parameters():
        if name in before and p.data.dtype != before[name].dtype:
            p.data = before[name]


def checkpoint_to_resume(cfg: TrainConfig, out: Path) -> str | None:
    """The checkpoint a `resume` run continues from (None: start fresh); incomplete ones are removed."""
    if not cfg.resume:
        return None
    resume = last_checkpoint(out)
    if is_main_process():
        dropped = drop_incomplete_checkpoints(out, resume)
        if dropped:
            print(f"[train] removed incomplete checkpoint(s) {dropped}", flush=True)
        print(f"[train] resuming from {resume}" if resume else "[train] no checkpoint to resume; starting fresh",
              flush=True)
    return resume


@contextmanager
def disk_full_as_oserror(folder: Path, adapter: bool = False) -> Iterator[None]:
    """Inside, an error saying that a write into `folder` found no room (`errors.disk_full_errno`: the
    libraries say it otherwise, safetensors' `SafetensorError`, `torch.save`'s `RuntimeError`) is an
    `OSError` (`errors.DISK_FULL`) naming `folder` that says what was kept (`kept`, for the command
    line's one line; `adapter`: `folder` is the adapter, removed already). Any other error is left
    as it is."""
    try:
        yield
    except Exception as exc:
        code = disk_full_errno(exc, folder)
        if code is None:
            raise
        full = OSError(code, os.strerror(code), str(folder))
        full.kept = _kept_besides(folder, adapter)  # type: ignore[attr-defined]
        raise full from exc


def checkpoint_disk_full_as_oserror(trainer) -> None:
    """Make a full disk while `trainer` saves `checkpoint-N` an `OSError` naming that folder
    (`disk_full_as_oserror`)."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    save = trainer._save_checkpoint

    def saving(model, trial) -> None:
        name = f"{PREFIX_CHECKPOINT_DIR}-{trainer.state.global_step}"  # as `_save_checkpoint` names it
        with disk_full_as_oserror(Path(trainer._get_output_dir(trial=trial)) / name):
            save(model, trial)

    trainer._save_checkpoint = saving


def _kept_besides(cut: Path, adapter: bool = False) -> str:
    """What a full disk that cut `cut` short kept (the newest complete checkpoint beside it), and what
    `--resume` does: a checkpoint cut short is removed by it; the adapter (`adapter`) is removed
    already, and saved again by the resumed run when it has finished."""
    before = last_checkpoint(cut.parent)
    if before is None:
        fate = "is removed; --resume starts afresh" if adapter else "is removed by --resume, which starts afresh"
        return f"no checkpoint was complete yet ({cut.name}, cut short, {fate})"
    name = Path(before).name
    fate = f"is removed; --resume finishes the run from {name} and saves it" if adapter else \
        "is skipped and removed by --resume"
    return f"{name} and the checkpoints before it are complete and kept ({cut.name}, cut short, {fate})"


class TrainingDone(Exception):
    """`trainer.train` was resumed from a checkpoint at `max_steps` already (`finished_already`)."""


def finished_already():
    """A callback that ends `trainer.train` as it begins (`TrainingDone`, the checkpoint's weights and
    state loaded) when the checkpoint it resumes from is at `max_steps` or past it: the trainer would
    train a step past `max_steps` (it checks only after a step). A run whose adapter was not saved
    (a full disk, a stop while saving it) is finished so by `--resume`."""
    from transformers import TrainerCallback

    class FinishedAlready(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if state.global_step >= state.max_steps > 0:
                raise TrainingDone(state.global_step)

    return FinishedAlready()


def save_adapter(trainer, processor, out: Path) -> Path:
    """`out/adapter`: the trained weights (`trainer.save_model`) and `processor`, written into a hidden
    sibling and renamed when complete, so a later step never loads one cut short; the adapter of an
    earlier finish (a run resumed past it) is removed first. Any failure removes the hidden folder;
    a full disk is an `OSError` naming `out/adapter` (`disk_full_as_oserror`). Every process calls it
    (the trainer's save gathers sharded weights); the main one writes."""
    adapter, partial = out / "adapter", out / ".adapter.partial"
    main = is_main_process()
    if main:
        for old in (partial, adapter):
            if old.is_dir():
                shutil.rmtree(old)
    trainer.accelerator.wait_for_everyone()  # no process writes into `partial` before it is cleared
    try:
        with disk_full_as_oserror(adapter, adapter=True):
            trainer.save_model(str(partial))
            if main:
                processor.save_pretrained(str(partial))
    except BaseException:
        if main:
            shutil.rmtree(partial, ignore_errors=True)
        raise
    trainer.accelerator.wait_for_everyone()  # every process's part is written
    if main:
        os.replace(partial, adapter)
    return adapter


def train(cfg: TrainConfig, callbacks: list | None = None) -> TrainResult:
    """Run one training job end to end; returns where everything was written. `callbacks`: extra
    `TrainerCallback`s (e.g. `viz.LiveCurves(...).callback()` for live curves in a notebook).

    The main process holds `output_dir` while it runs (`runfolder.hold_folder`): a second run into it
    is refused at once. A SIGTERM while training stops the run at the end of its step with a
    checkpoint saved there (a second one, more than `errors.SAME_STOP_SECONDS` later, stops it at
    once) and raises `errors.Terminated`: `--resume` continues it. A full disk while it saves a
    checkpoint or the adapter raises an `OSError` naming that folder; `--resume` of a run at
    `max_steps` already trains nothing and saves its adapter."""
    cfg.validate()
    args = cfg.trainer_args()
    out = Path(args.output_dir)
    with hold_folder(out, RESUME_NOTE, flag="--output_dir", error=ConfigError):
        return _train(cfg, args, out, list(callbacks or []))


def _train(cfg: TrainConfig, args, out: Path, callbacks: list) -> TrainResult:
    from .callbacks import StopWhenAsked

    identity = prepare_run_folder(cfg, out)  # before the data and the model load
    dataset, report = build_datasets(cfg)
    held_out = validation_rows(cfg)
    if is_main_process():
        write_run_settings(cfg, out)
        write_json_atomic(out / "data_report.json", report.to_dict())
    policy, source = load_model(cfg, args)
    record_base_model(cfg, out, identity)
    stop = StopWhenAsked()
    trainer = build_trainer(cfg, args, policy, dataset, [finished_already(), *callbacks, stop], validation=held_out)
    checkpoint_disk_full_as_oserror(trainer)
    resume = checkpoint_to_resume(cfg, out)
    with deferred_sigterm() as asked:
        stop.asked = asked
        try:
            trainer.train(resume_from_checkpoint=resume)
        except TrainingDone:
            if is_main_process():
                print(f"[train] {Path(resume).name} is at max_steps already: nothing to train; saving the adapter",
                      flush=True)
    step = trainer.state.global_step
    if stop.stopped_at is not None and step < trainer.state.max_steps:
        raise Terminated(f"after step {step} of {trainer.state.max_steps} (saved as checkpoint-{step})")
    adapter_dir = save_adapter(trainer, policy.processor, out)
    return TrainResult(str(out), str(adapter_dir), str(out / "metrics.jsonl"), step,
                       report.to_dict(), base_model=source)
