"""Training: one `TrainConfig` (from a YAML recipe, CLI flags or a notebook's parameters) wired into
TRL's `GRPOTrainer` (GUI-R1's method) or `SFTTrainer` (the paper's baseline on the same data).

    python -m gui_r1_lite.train --config configs/grpo_qwen2_5_vl_3b_qlora.yaml --max_steps 50
    accelerate launch --config_file configs/accelerate/ddp.yaml -m gui_r1_lite.train --config ...

Metrics of every logging step go to `<output_dir>/metrics.jsonl`; checkpoints hold the LoRA
adapter and optimiser state, so `--resume` continues a run that was killed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .actions import COMPATS, GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS, format_answer, target_action

METHODS = ("grpo", "sft")


class ConfigError(ValueError):
    """A configuration that cannot run; the message says what to change."""


@dataclass
class TrainConfig:
    """Everything a run needs. Field names are the YAML keys and the CLI flags (`--max_steps 50`)."""

    method: str = "grpo"
    # model
    model: str = "tiny"                    # hub id, local folder, or "tiny" (built into output_dir/base_model)
    tiny: dict = field(default_factory=dict)  # build_tiny_model keyword arguments when model == "tiny"
    tiny_seed: int = 0
    quantization: str | None = None       # None, "4bit" (QLoRA), "8bit"
    lora: bool = True
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    train_vision: bool = False
    init_adapter: str | None = None       # start from a saved adapter (e.g. the SFT warm start)
    gradient_checkpointing: bool = False
    # data
    train_data: str = "data_samples/train"
    train_split: str | None = None
    limit: int | None = None
    min_pixels: int = GUI_R1_MIN_PIXELS
    max_pixels: int = GUI_R1_MAX_PIXELS
    # rewards (GRPO)
    rewards: dict = field(default_factory=lambda: {"gui_r1": 1.0})
    compat: str = "official"
    # optimisation
    learning_rate: float = 1e-5
    lr_scheduler_type: str = "constant"
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_steps: int = -1
    num_train_epochs: float = 1.0
    per_device_train_batch_size: int = 5
    gradient_accumulation_steps: int = 1
    # GRPO
    num_generations: int = 5
    temperature: float = 1.0
    top_p: float = 1.0
    beta: float = 0.01
    max_completion_length: int = 1024
    loss_type: str = "grpo"
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    # SFT
    sft_thinking: str = ""                # text inside <think> of the SFT targets
    max_length: int | None = None
    # run
    seed: int = 0
    output_dir: str = "runs/train"
    logging_steps: int = 1
    save_steps: int = 50
    save_total_limit: int | None = 2
    report_to: str = "none"               # none, tensorboard, wandb
    device: str = "auto"                  # auto, cpu, cuda
    bf16: bool | None = None              # None: bf16 when CUDA supports it
    resume: bool = False
    dataloader_num_workers: int = 0

    # --- building -------------------------------------------------------------------------

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "config") -> TrainConfig:
        unknown = sorted(set(values) - set(cls.field_names()))
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {unknown}; valid keys: {cls.field_names()}")
        values = dict(values)
        for f in dataclasses.fields(cls):
            # YAML 1.1 reads `1e-5` (no dot) as a string; numbers are numbers whichever way written
            if f.type in ("float", float) and isinstance(values.get(f.name), str):
                try:
                    values[f.name] = float(values[f.name])
                except ValueError:
                    raise ConfigError(f"{source}: {f.name} must be a number, got {values[f.name]!r}") from None
        return cls(**values)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, **overrides: Any) -> TrainConfig:
        p = Path(path)
        try:
            values = yaml.safe_load(p.read_text()) or {}
        except FileNotFoundError:
            raise ConfigError(f"{p}: recipe not found") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{p}: expected a mapping of TrainConfig fields, got {type(values).__name__}")
        return cls.from_dict({**values, **overrides}, source=str(p))

    @classmethod
    def from_cli(cls, argv: list[str] | None = None) -> TrainConfig:
        ap = argparse.ArgumentParser(prog="python -m gui_r1_lite.train",
                                     description="GRPO / SFT training of a Qwen2.5-VL GUI agent.")
        ap.add_argument("--config", help="YAML recipe (configs/*.yaml); flags override it")
        for f in dataclasses.fields(cls):
            if f.type in ("bool", bool) or f.name == "resume":
                ap.add_argument(f"--{f.name}", nargs="?", const="true", default=None,
                                help=f"(bool, default {f.default})")
            else:
                ap.add_argument(f"--{f.name}", default=None,
                                help="YAML value" if f.default is dataclasses.MISSING else f"default {f.default!r}")
        args = ap.parse_args(argv)
        overrides = {}
        for name in cls.field_names():
            raw = getattr(args, name)
            if raw is not None:
                overrides[name] = yaml.safe_load(raw)  # numbers, bools, null, {...} as YAML reads them
        if args.config:
            return cls.from_yaml(args.config, **overrides)
        return cls.from_dict(overrides, source="command line")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # --- checking (before any model loads) --------------------------------------------------

    def world_size(self) -> int:
        return int(os.environ.get("WORLD_SIZE", "1"))

    def validate(self) -> TrainConfig:
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.compat not in COMPATS:
            raise ConfigError(f"compat must be one of {COMPATS}, got {self.compat!r}")
        if self.quantization not in (None, "4bit", "8bit"):
            raise ConfigError(f"quantization must be null, '4bit' or '8bit', got {self.quantization!r}")
        if self.quantization and importlib.util.find_spec("bitsandbytes") is None:
            raise ConfigError(f"quantization {self.quantization!r} needs bitsandbytes: `pip install bitsandbytes` "
                              "or set quantization: null")
        if self.quantization and not (self.lora or self.init_adapter):
            raise ConfigError("a quantised model cannot be fine-tuned without an adapter: set lora: true")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"device must be auto, cpu or cuda, got {self.device!r}")
        import torch

        if self.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("device: cuda was asked for but no CUDA device is visible; use device: auto or cpu")
        if self.use_vllm and not torch.cuda.is_available():
            raise ConfigError("use_vllm needs a CUDA GPU (vLLM is CUDA-only); set use_vllm: false")
        if self.bf16 and not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()):
            raise ConfigError("bf16: true needs a CUDA GPU with bf16 support; set bf16: null (auto)")
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations",
                     "max_completion_length", "logging_steps", "save_steps"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)!r}")
        if self.max_steps == 0 or (self.max_steps < 0 and self.num_train_epochs <= 0):
            raise ConfigError("set max_steps > 0 or num_train_epochs > 0")
        if not self.learning_rate > 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate!r}")
        if not 0 < self.min_pixels <= self.max_pixels:
            raise ConfigError(f"need 0 < min_pixels <= max_pixels, got {self.min_pixels}, {self.max_pixels}")
        if self.method == "grpo":
            if self.num_generations < 2:
                raise ConfigError("GRPO needs num_generations >= 2: advantages are relative within a group")
            batch = self.per_device_train_batch_size * self.gradient_accumulation_steps * self.world_size()
            if batch % self.num_generations:
                raise ConfigError(
                    f"per_device_train_batch_size x gradient_accumulation_steps x processes = {batch} is not "
                    f"divisible by num_generations = {self.num_generations}; e.g. set "
                    f"per_device_train_batch_size to {self.num_generations}")
            if not self.rewards:
                raise ConfigError("rewards is empty; e.g. rewards: {gui_r1: 1.0}")
            from .rewards import REWARDS

            unknown = sorted(set(self.rewards) - set(REWARDS))
            if unknown:
                raise ConfigError(f"unknown reward(s) {unknown}; registered: {sorted(REWARDS)}")
        if self.report_to not in ("none", "tensorboard", "wandb"):
            raise ConfigError(f"report_to must be none, tensorboard or wandb, got {self.report_to!r}")
        if self.model != "tiny" and not Path(self.model).exists() and "/" not in self.model:
            raise ConfigError(f"model {self.model!r} is neither 'tiny', a folder, nor a hub id 'owner/name'")
        return self


# --- pieces ---------------------------------------------------------------------------------------

def _is_main() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def resolve_model(cfg: TrainConfig, wait_seconds: float = 600.0) -> str:
    """The model folder or hub id; "tiny" is built (deterministically) under output_dir/base_model.

    Rank 0 builds into a temporary folder and renames it into place, so `base_model/` exists only
    complete (a run killed mid-build leaves a `base_model.tmp-*` that the next build replaces);
    the other ranks wait for it (at most `wait_seconds`)."""
    if cfg.model != "tiny":
        return cfg.model
    import shutil

    from .tiny import build_tiny_model

    out = Path(cfg.output_dir) / "base_model"
    done = out / "config.json"
    if _is_main() and not done.exists():
        tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
        for stale in out.parent.glob(f"{out.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        build_tiny_model(tmp, seed=cfg.tiny_seed, **cfg.tiny)
        if out.exists():  # an incomplete folder from an older build; never one with config.json
            shutil.rmtree(out)
        os.replace(tmp, out)
    deadline = time.monotonic() + wait_seconds
    while not done.exists():  # other ranks wait for rank 0's build
        if time.monotonic() > deadline:
            raise RuntimeError(f"rank {os.environ.get('RANK')}: {out} did not appear within {wait_seconds:.0f} s; "
                               "did rank 0 fail while building the tiny model?")
        time.sleep(0.2)
    return str(out)


def last_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The newest *complete* `checkpoint-N` in `output_dir`: the trainer writes trainer_state.json
    last, so a folder without a readable one was cut short (killed while saving) and is skipped."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    out = Path(output_dir)
    if not out.is_dir():
        return None
    found = []
    for d in out.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        step = d.name[len(PREFIX_CHECKPOINT_DIR) + 1:]
        if not (d.is_dir() and step.isdigit()):
            continue
        try:
            json.loads((d / "trainer_state.json").read_text())
        except (OSError, ValueError):
            continue
        found.append((int(step), d))
    return str(max(found)[1]) if found else None


def _drop_incomplete_checkpoints(output_dir: Path, keep: str | None) -> list[str]:
    """Remove `checkpoint-N` folders newer than `keep` (incomplete ones): the trainer would later
    save into them over stale files and count them in `save_total_limit`."""
    import shutil

    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    keep_step = int(Path(keep).name.rsplit("-", 1)[1]) if keep else -1
    dropped = []
    for d in output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
        step = d.name[len(PREFIX_CHECKPOINT_DIR) + 1:]
        if d.is_dir() and step.isdigit() and int(step) > keep_step:
            shutil.rmtree(d)
            dropped.append(d.name)
    return sorted(dropped)


def sft_completion(row: dict, thinking: str = "") -> list[dict]:
    """The SFT target of a training row: the ground-truth action as the policy should write it."""
    answer = format_answer(target_action(row["gt_action"], row["gt_bbox"], row["gt_input_text"]), thinking)
    return [{"role": "assistant", "content": answer}]


def build_datasets(cfg: TrainConfig):
    """(TRL dataset, validation report) from the configured data, in the model's pixel frame."""
    import datasets

    from .data import load_gui_r1, to_train_rows

    loaded = load_gui_r1(cfg.train_data, split=cfg.train_split, limit=cfg.limit)
    if not loaded.samples:
        raise ConfigError(f"{cfg.train_data}: no valid rows to train on\n{loaded.report.summary()}")
    rows = to_train_rows(loaded.samples, cfg.min_pixels, cfg.max_pixels)
    if cfg.method == "sft":
        for r in rows:
            r["completion"] = sft_completion(r, cfg.sft_thinking)
    return datasets.Dataset.from_list(rows), loaded.report


def trainable_fingerprint(model) -> str:
    """Hash of the trainable weights: equal on every rank after a synchronised (DDP) step."""
    import torch

    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        if p.requires_grad:
            h.update(name.encode())
            h.update(p.detach().to(torch.float32).cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def _metrics_callback():
    from transformers import TrainerCallback

    class MetricsJsonl(TrainerCallback):
        """Appends each log to `<output_dir>/metrics.jsonl` (main process), with seconds per step;
        on resume drops lines past the checkpoint so every step appears once."""

        def __init__(self) -> None:
            self.t_last = None
            self.step_last = 0

        def _path(self, args) -> Path:
            return Path(args.output_dir) / "metrics.jsonl"

        def on_train_begin(self, args, state, control, **kw):
            self.t_last, self.step_last = time.perf_counter(), state.global_step
            path = self._path(args)
            if state.is_world_process_zero and path.exists():
                keep = []
                for line in path.read_text().splitlines():
                    try:
                        rec = json.loads(line)
                    except ValueError:  # empty, or cut short when the process was killed mid-write
                        continue
                    if isinstance(rec, dict) and rec.get("step", 0) <= state.global_step:
                        keep.append(line)
                tmp = path.with_suffix(".jsonl.tmp")
                tmp.write_text("".join(line + "\n" for line in keep))
                tmp.replace(path)

        def on_log(self, args, state, control, logs=None, **kw):
            if not state.is_world_process_zero or not logs:
                return
            now = time.perf_counter()
            steps = max(1, state.global_step - self.step_last)
            rec = {"step": state.global_step, "epoch": state.epoch,
                   "step_seconds": round((now - self.t_last) / steps, 4), **logs}
            self.t_last, self.step_last = now, state.global_step
            with self._path(args).open("a") as f:
                f.write(json.dumps(rec, default=float) + "\n")

        def on_train_end(self, args, state, control, model=None, **kw):
            rank = int(os.environ.get("RANK", "0"))
            out = Path(args.output_dir) / "ranks"
            out.mkdir(parents=True, exist_ok=True)
            (out / f"rank{rank}.json").write_text(json.dumps({
                "rank": rank, "world_size": int(os.environ.get("WORLD_SIZE", "1")),
                "global_step": state.global_step,
                "trainable_fingerprint": trainable_fingerprint(model) if model is not None else None,
            }))

    return MetricsJsonl()


def _common_args(cfg: TrainConfig, use_cpu: bool, bf16: bool) -> dict:
    return dict(
        output_dir=cfg.output_dir, seed=cfg.seed, learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler_type, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm, max_steps=cfg.max_steps, num_train_epochs=cfg.num_train_epochs,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, logging_steps=cfg.logging_steps,
        save_strategy="steps", save_steps=cfg.save_steps, save_total_limit=cfg.save_total_limit,
        report_to=[] if cfg.report_to == "none" else [cfg.report_to], use_cpu=use_cpu, bf16=bf16,
        remove_unused_columns=False, dataloader_num_workers=cfg.dataloader_num_workers,
        gradient_checkpointing=False,  # load_policy applies it (k-bit preparation needs it there)
        ddp_find_unused_parameters=False,
    )


@dataclass
class TrainResult:
    output_dir: str
    adapter_dir: str
    metrics_path: str
    global_step: int
    data_report: dict
    base_model: str = ""      # the model the run started from: hub id or folder (the built tiny model)


def train(cfg: TrainConfig, callbacks: list | None = None) -> TrainResult:
    """Run one configured training job end to end; returns where everything was written.

    `callbacks` are extra `transformers.TrainerCallback`s (e.g. `viz.LiveCurves(...).callback()`
    for live curves in a notebook); metrics.jsonl is written either way."""
    cfg.validate()
    import torch

    from .modeling import LoraSettings, load_policy

    use_cpu = cfg.device == "cpu" or not torch.cuda.is_available()
    bf16 = bool(cfg.bf16) if cfg.bf16 is not None else (not use_cpu and torch.cuda.is_bf16_supported())
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if _is_main():
        (out / "train_config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    source = resolve_model(cfg)
    from transformers import set_seed

    set_seed(cfg.seed)  # the LoRA initialisation is drawn in load_policy, before the trainer seeds anything
    settings = LoraSettings(r=cfg.lora_r, alpha=cfg.lora_alpha, dropout=cfg.lora_dropout,
                            train_vision=cfg.train_vision) if cfg.lora else None
    policy = load_policy(
        source, cfg.quantization, lora=None if cfg.init_adapter else settings,
        adapter=cfg.init_adapter, adapter_trainable=cfg.init_adapter is not None,
        min_pixels=cfg.min_pixels, max_pixels=cfg.max_pixels,
        device="cpu" if use_cpu else None, dtype=torch.bfloat16 if bf16 else None,
        train_vision=cfg.train_vision, gradient_checkpointing=cfg.gradient_checkpointing)
    dataset, report = build_datasets(cfg)
    if _is_main():
        (out / "data_report.json").write_text(json.dumps(report.to_dict(), indent=2))

    callbacks = [_metrics_callback(), *(callbacks or [])]
    if cfg.method == "grpo":
        from trl import GRPOConfig, GRPOTrainer

        from .rewards import build_rewards

        funcs, weights = build_rewards(cfg.rewards, cfg.compat)
        args = GRPOConfig(
            **_common_args(cfg, use_cpu, bf16), num_generations=cfg.num_generations, temperature=cfg.temperature,
            top_p=cfg.top_p, beta=cfg.beta, max_completion_length=cfg.max_completion_length,
            reward_weights=weights, loss_type=cfg.loss_type, use_vllm=cfg.use_vllm,
            **({"vllm_mode": cfg.vllm_mode} if cfg.use_vllm else {}))
        trainer = GRPOTrainer(model=policy.model, reward_funcs=funcs, args=args, train_dataset=dataset,
                              processing_class=policy.processor, callbacks=callbacks)
    else:
        from trl import SFTConfig, SFTTrainer

        args = SFTConfig(**_common_args(cfg, use_cpu, bf16), max_length=cfg.max_length,
                         completion_only_loss=True)
        trainer = SFTTrainer(model=policy.model, args=args, train_dataset=dataset,
                             processing_class=policy.processor, callbacks=callbacks)

    resume = None
    if cfg.resume:
        resume = last_checkpoint(out)
        if _is_main():
            dropped = _drop_incomplete_checkpoints(out, resume)
            if dropped:
                print(f"[train] removed incomplete checkpoint(s) {dropped}", flush=True)
            print(f"[train] resuming from {resume}" if resume else "[train] no checkpoint to resume; starting fresh",
                  flush=True)
    trainer.train(resume_from_checkpoint=resume)
    adapter_dir = out / "adapter"
    trainer.save_model(str(adapter_dir))
    if _is_main():
        policy.processor.save_pretrained(str(adapter_dir))
    return TrainResult(str(out), str(adapter_dir), str(out / "metrics.jsonl"), trainer.state.global_step,
                       report.to_dict(), base_model=source)


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The records of a run's metrics.jsonl."""
    p = Path(path)
    p = p / "metrics.jsonl" if p.is_dir() else p
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def start_and_end(path: str | os.PathLike, window: int = 10) -> dict[str, dict]:
    """How the rewards, KL and loss moved over a run: the mean of each number over the first and
    over the last `window` training-step records of its metrics.jsonl (those with a `loss`; one
    GRPO step scores only a few prompts, so a single step says little). `steps` says which."""
    steps = [r for r in read_metrics(path) if "loss" in r]
    if not steps:
        return {"start": {}, "end": {}}
    window = max(1, min(window, len(steps)))

    def mean_of(recs: list[dict]) -> dict:
        keys = [k for k, v in recs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out = {k: sum(float(r[k]) for r in recs if k in r) / sum(1 for r in recs if k in r) for k in keys}
        out["steps"] = [recs[0]["step"], recs[-1]["step"]]
        return out

    return {"start": mean_of(steps[:window]), "end": mean_of(steps[-window:])}


def merge_adapter(base: str, adapter: str, out: str, dtype: str = "float32") -> Path:
    """Write `base` + LoRA `adapter` merged into one model folder (full precision) for inference.

    The processor comes from the adapter folder when training saved one there (it holds the pixel
    bounds the adapter was trained with), else from `base`. `scripts/merge_adapter.py` is the CLI."""
    import torch

    from .modeling import load_policy

    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    policy = load_policy(base, None, lora=None, adapter=adapter, dtype=getattr(torch, dtype), device="cpu",
                         min_pixels=None, max_pixels=None)
    merged = policy.model.merge_and_unload()
    merged.save_pretrained(out)
    processor = policy.processor
    if any((Path(adapter) / name).is_file() for name in ("processor_config.json", "preprocessor_config.json")):
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(adapter)
    processor.save_pretrained(out)
    return Path(out)


def main(argv: list[str] | None = None) -> int:
    try:
        cfg = TrainConfig.from_cli(argv)
        result = train(cfg)
    except ConfigError as exc:
        print(f"[train] configuration error: {exc}", file=sys.stderr)
        return 2
    if _is_main():
        print(f"[train] done: {result.global_step} steps; adapter in {result.adapter_dir}; "
              f"metrics in {result.metrics_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
