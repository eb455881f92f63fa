"""What each GPU recipe costs: the real Qwen2.5-VL-3B architecture with random weights (no download), loaded
as the recipe says (NF4 + LoRA), trained for a few steps through `gui_r1_lite.training.train` on the
largest screenshots of `data_samples/train`, every GRPO completion forced to the full `max_completion_length`
(random weights rarely stop, so this is the worst case a real run can reach). One JSON per run in --out.

    python benchmarks/bench_gpu_recipe.py --out runs/bench_gpu                 # every recipe with device: cuda
    python benchmarks/bench_gpu_recipe.py --out runs/bench_gpu --t4 --recipe configs/grpo_qwen2_5_vl_3b_t4.yaml
    python benchmarks/bench_gpu_recipe.py --tiny --out /tmp/bench              # the same code on the CPU, seconds

Per run: peak allocated and reserved CUDA memory (while loading, and while training), and seconds per
optimiser step split into generation (`generate`), forward/backward (every policy forward outside
generation, `backward`, the optimiser step) and rest (rewards, data preparation, TRL's bookkeeping), with
CUDA synchronised at each boundary (the timers of bench_train_step.py). The JSON is written when the run
starts (status `loading`), when training starts (`running`: loading seconds and memory) and after every step,
so a run stopped by a time limit keeps what it measured; `--summarize` reports such a run as stopped.
`--build-only` builds and saves the random 3B model and exits (scripts/gpu_check.sh times it as its own part).
Each step's grad_norm is recorded; a run passes (gpu_report.py) when every step trained with a grad_norm that is
finite and not 0 and every GRPO completion ran to full length. GRPO runs score a `spread` reward beside the
recipe's (random weights earn no reward, and all-equal rewards give a zero gradient).

`--t4` runs a recipe as a 16 GB T4 would: torch answers that bf16 is only emulated (as on a T4), so the
project computes in fp16 mixed precision (with its loss scaler) and the vision tower in fp32, and torch's
allocator may take at most `--t4-gib` GiB (default: a T4's usable memory, `gpu_estimate.T4`), a fraction of
this GPU's real total (`torch.cuda.set_per_process_memory_fraction`). Out of memory there, the recipe does
not fit a T4: the run fails. Memory is what a T4 would need; seconds are this GPU's.
`--tiny` swaps the 3B architecture for the tiny stand-in, on the CPU unless `--device cuda`, with short
completions and small screenshots.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib.metadata
import io
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_train_step as step_timing  # noqa: E402
import torch  # noqa: E402
from gpu_estimate import T4  # noqa: E402
from gpu_report import describe, passed, per_step, summarize  # noqa: E402

from gui_r1_lite import training  # noqa: E402
from gui_r1_lite.modeling import free_memory, vision_tower  # noqa: E402
from gui_r1_lite.runio import read_json, write_json_atomic  # noqa: E402
from gui_r1_lite.training.config import read_recipe  # noqa: E402

GIB = 1024**3
CONFIGS = ROOT / "configs"
TRAIN_DATA = ROOT / "data_samples" / "train"
REAL_MODEL = "Qwen/Qwen2.5-VL-3B-Instruct"
MODEL_DIR = Path(tempfile.gettempdir()) / "gui_r1_lite_bench_qwen2_5_vl_3b_random"
BUILT = "bench_build.json"
#: --t4: what torch's allocator may take, a T4's usable memory (its total less its CUDA context)
T4_GIB = round(T4.usable_gib, 2)
#: --tiny: screenshots (and GRPO's completions) cut so that a run takes seconds on a CPU
TINY = {"model": "tiny", "min_pixels": 3136, "max_pixels": 12544}
TINY_GRPO = {"max_completion_length": 8}
PARTS = {"generation": "generation_s", "forward/backward + optimizer": "forward_backward_s",
         "rewards": "rewards_s", "data preparation": "data_preparation_s"}
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "bitsandbytes", "datasets", "pyarrow")


class SyncTimers(step_timing.Timers):
    """bench_train_step's timers, with CUDA synchronised before each clock reading: kernels are queued
    asynchronously, and unsynchronised their time lands in whichever later call waits for them."""

    def start(self, category: str, label: str) -> None:
        _sync()
        super().start(category, label)

    def stop(self) -> None:
        _sync()
        super().stop()


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


_timers_installed = False


def install_timers() -> None:
    """bench_train_step's wrappers (policy, processor, rewards, dataset, backward), timed with `SyncTimers`
    (its module-level timer object is the one every wrapper reads); once per process."""
    global _timers_installed
    if not _timers_installed:
        step_timing.TIMERS = SyncTimers()
        step_timing.install_wrappers()
        _timers_installed = True


def gpu_recipes(folder: Path = CONFIGS) -> list[Path]:
    """The recipes in `folder` that say `device: cuda`."""
    return sorted(p for p in folder.glob("*.yaml") if read_recipe(p).get("device") == "cuda")


def pixels(image: dict) -> int:
    from PIL import Image

    with Image.open(io.BytesIO(image["bytes"])) as im:  # reads the header only
        return im.width * im.height


def largest_rows(n: int, out: Path, source: Path = TRAIN_DATA) -> dict:
    """Write the `n` rows of `source`'s parquet files with the largest screenshots (most pixels) to `out`;
    returns how many and how large (width x height in pixels)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(f) for f in sorted(source.glob("*.parquet"))]
    if not tables:
        raise FileNotFoundError(f"{source}: no parquet files")
    columns = [c for c in tables[0].column_names if all(c in t.column_names for t in tables)]
    table = pa.concat_tables([t.select(columns) for t in tables])
    sizes = [pixels(im) for im in table.column("image").to_pylist()]
    picked = sorted(range(len(sizes)), key=lambda i: -sizes[i])[:n]
    pq.write_table(table.take(picked), out)
    return {"file": str(out), "rows": len(picked), "pixels": [sizes[i] for i in picked],
            "largest_in_source": max(sizes)}


def random_model(folder: Path) -> Path:
    """The real 3B architecture with random weights, bf16, saved in `folder` (built on CUDA, once: a
    folder with a complete build is reused). Training loads it as it would the hub's model."""
    if (folder / BUILT).is_file():
        return folder
    from gui_r1_lite.tiny import real_architecture

    t0 = time.perf_counter()
    policy = real_architecture(REAL_MODEL, random_weights=True, device="cuda", dtype=torch.bfloat16)
    tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    policy.model.save_pretrained(tmp)
    policy.processor.save_pretrained(tmp)
    parameters = sum(p.numel() for p in policy.model.parameters())
    del policy
    free_memory()
    write_json_atomic(tmp / BUILT, {"model": REAL_MODEL, "random_weights": True, "parameters": parameters,
                                    "seconds": round(time.perf_counter() - t0, 1)})
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return folder


def run_config(recipe: Path, args: argparse.Namespace, work: Path, model: str) -> tuple[training.TrainConfig, int]:
    """The recipe as the benchmark runs it: `--steps` steps, no checkpoints, validation or resume, its
    own run folder, and (GRPO) no completion shorter than max_completion_length; and how many rows its
    steps take (the data file it names is written by `largest_rows`)."""
    values = {**read_recipe(recipe), "output_dir": str(work / "runs" / run_name(recipe, args.t4)),
              "max_steps": args.steps, "save_steps": args.steps + 1, "logging_steps": 1, "resume": False,
              "report_to": "none", "train_split": None, "limit": None, "model": model, "device": args.device}
    if "validation_data" in {f.name for f in training.TrainConfig.own_fields()}:
        values["validation_data"] = None
    if args.tiny:
        values.update(TINY, **(TINY_GRPO if values.get("method") == "grpo" else {}))
    cfg = training.TrainConfig.from_dict(values, source=str(recipe))
    if cfg.method == "grpo":
        # min_new_tokens keeps EOS from being sampled before the last token; TRL's own suppress_tokens stay
        cfg.trl_args["generation_kwargs"] = {**(cfg.get("generation_kwargs") or {}),
                                             "min_new_tokens": cfg.get("max_completion_length")}
    rows = cfg.get("per_device_train_batch_size") * cfg.get("gradient_accumulation_steps")
    prompts = max(1, rows // cfg.get("num_generations")) if cfg.method == "grpo" else rows
    cfg.train_data = str(work / f"largest_{prompts * args.steps}.parquet")
    return cfg, prompts * args.steps


def run_name(recipe: Path, t4: bool) -> str:
    return recipe.stem + ("_t4" if t4 else "")


def environment() -> dict:
    """Versions of what the run used, and the GPU."""
    env: dict[str, Any] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            env[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            env[name] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                   gpu_total_gib=round(props.total_memory / GIB, 2), cuda=torch.version.cuda)
    return env


def memory_now(cuda: bool) -> dict:
    """CUDA memory of this process in GiB (peaks since the last reset), or the CPU's peak resident size."""
    if not cuda:
        return {"device": "cpu", "peak_rss_gib": round(step_timing.peak_rss_mib()[0] / 1024, 3)}
    return {"device": "cuda", "allocated_gib": round(torch.cuda.memory_allocated() / GIB, 3),
            "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 3),
            "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 3)}


def precision(model, args) -> dict:
    """What the trainer got: dtypes of the LoRA weights, the vision tower and the text embedding, how many
    layers are 4-bit, and the trainer's mixed-precision flags."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    embed = base.get_input_embeddings().weight
    return {"lora": sorted({str(p.dtype) for p in model.parameters() if p.requires_grad}),
            "vision": sorted({str(p.dtype) for p in vision_tower(model).parameters()}),
            "text_embedding": str(embed.dtype), "bf16": bool(args.bf16), "fp16": bool(args.fp16),
            "linear4bit": sum(type(m).__name__ == "Linear4bit" and type(m).__module__.startswith("bitsandbytes")
                              for m in model.modules())}  # not PEFT's LoRA wrappers of the same name


def step_record(step: dict) -> dict:
    """One step of bench_train_step's clock in seconds: generation, forward/backward, and the rest (itself
    split into rewards, data preparation and everything else)."""
    record = {"step_s": step["step"], **{key: step[part] for part, key in PARTS.items()}}
    record["rest_s"] = record["step_s"] - record["generation_s"] - record["forward_backward_s"]
    return {k: round(v, 4) for k, v in record.items()}


def completion_lengths(run_dir: Path, expected: int) -> dict | None:
    """Shortest, mean and longest completion over the run (TRL's logged lengths), and whether every
    completion ran to `expected` tokens."""
    try:
        logs = [r for r in training.read_metrics(run_dir) if "completions/min_length" in r]
    except FileNotFoundError:
        return None
    if not logs:
        return None
    shortest = min(r["completions/min_length"] for r in logs)
    return {"min": shortest, "mean": statistics.fmean(r["completions/mean_length"] for r in logs),
            "max": max(r["completions/max_length"] for r in logs), "expected": expected,
            "full_length": shortest == expected}


GENERATION_FIELDS = ("max_new_tokens", "min_new_tokens", "do_sample", "temperature", "top_k", "top_p",
                     "repetition_penalty", "eos_token_id", "suppress_tokens")


def record_generation(model, result: dict) -> None:
    """Wrap `model.generate` to keep, in `result["generation"]`, the settings TRL samples the first completions
    with: what reached `generate`, not what was asked for."""
    generate = model.generate

    @functools.wraps(generate)
    def recorded(*args, **kwargs):
        config = kwargs.get("generation_config")
        if config is not None and "generation" not in result:
            result["generation"] = {k: getattr(config, k, None) for k in GENERATION_FIELDS}
        return generate(*args, **kwargs)

    model.generate = recorded


def probe(result: dict, clock, out_file: Path, t0: float, cuda: bool):
    """A callback that fills `result` while training runs (precision and memory when it starts, each step's
    seconds, the memory peaks after it and its gradients: grad_norm, and whether the fp16 loss scaler skipped
    the step, with its scale) and rewrites `out_file` after every step and every log."""
    from transformers import TrainerCallback

    gradients = result.setdefault("gradients", [])

    def gradient_record(step: int) -> dict:
        if not gradients or gradients[-1]["step"] != step:
            gradients.append({"step": step})
        return gradients[-1]

    class Probe(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            result["status"] = "running"
            result["setup_s"] = round(time.perf_counter() - t0, 2)  # data, model load, trainer
            result["precision"] = precision(model, args)
            record_generation(model, result)
            result["memory"]["loading"] = memory_now(cuda)
            if cuda:
                torch.cuda.reset_peak_memory_stats()  # from here on: training's own peaks
            write_json_atomic(out_file, result)  # a run killed in its first step still says what loading took

        def on_step_end(self, args, state, control, optimizer=None, **kw):
            result["steps"] = [step_record(s) for s in clock.steps]
            result["per_step"] = per_step(result["steps"])
            result["memory"]["training"] = memory_now(cuda)
            result["wall_s"] = round(time.perf_counter() - t0, 2)
            scaler = getattr(optimizer, "scaler", None)  # accelerate's optimizer: a GradScaler under fp16
            gradient_record(len(clock.steps)).update(
                skipped=bool(getattr(optimizer, "step_was_skipped", False)),
                loss_scale=float(scaler.get_scale()) if scaler is not None else None)
            write_json_atomic(out_file, result)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "grad_norm" in logs:  # logged after the step's on_step_end (logging_steps 1)
                gradient_record(len(clock.steps))["grad_norm"] = float(logs["grad_norm"])
                write_json_atomic(out_file, result)

    return Probe()


def spread(completions: list, **columns: Any) -> list[float]:
    """A reward that tells a group's answers apart: a hash of each answer's text, in [0, 1). The random 3B never
    answers in the format, so the recipe's rewards are all 0, every advantage 0 and the gradient exactly 0,
    and a zero grad_norm would then say nothing about the path the gradients take (what the check is for)."""
    from gui_r1_lite.rewards import completion_text

    return [zlib.crc32(completion_text(c).encode()) % 1000 / 1000 for c in completions]


@contextlib.contextmanager
def spread_rewards() -> Iterator[None]:
    """The recipe's rewards and `spread` beside them with weight 1 (its own column in TRL's logs)."""
    from gui_r1_lite import rewards

    build = rewards.build_rewards

    def with_spread(*args, **kwargs):
        funcs, weights = build(*args, **kwargs)
        return [*funcs, step_timing.TIMERS.wrap(step_timing.REW, spread, "reward spread")], [*weights, 1.0]

    rewards.build_rewards = with_spread
    try:
        yield
    finally:
        rewards.build_rewards = build


@contextlib.contextmanager
def as_t4(gib: float) -> Iterator[float]:
    """This process as a 16 GB T4 runs it: bf16 only emulated (`torch.cuda.is_bf16_supported` answers as on a
    T4: yes with emulation, no without; `modeling.native_bf16` asks the latter), and at most `gib` GiB of
    CUDA memory for torch's allocator: the fraction of this GPU's real total that is `gib`. Yields it."""
    fraction = min(1.0, gib * GIB / torch.cuda.get_device_properties(0).total_memory)
    answer = torch.cuda.is_bf16_supported
    torch.cuda.is_bf16_supported = lambda including_emulation=True: bool(including_emulation)
    torch.cuda.set_per_process_memory_fraction(fraction)
    try:
        yield fraction
    finally:
        torch.cuda.is_bf16_supported = answer
        torch.cuda.set_per_process_memory_fraction(1.0)


def settings(cfg: training.TrainConfig) -> dict:
    """The settings that decide a step's cost, as the run used them."""
    names = ("method", "quantization", "lora", "lora_r", "train_vision", "gradient_checkpointing", "min_pixels",
             "max_pixels", "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "max_steps")
    grpo = ("num_generations", "max_completion_length", "steps_per_generation", "loss_type", "beta",
            "generation_kwargs")
    return {n: cfg.get(n) for n in names + (grpo if cfg.method == "grpo" else ())}


def run(recipe: Path, args: argparse.Namespace, work: Path, model: str) -> dict:
    """Train `recipe` for `--steps` steps; returns (and writes to --out) what it measured."""
    cfg, rows = run_config(recipe, args, work, model)
    name, run_dir = run_name(recipe, args.t4), Path(cfg.get("output_dir"))
    out_file = args.out / f"{name}.json"
    shutil.rmtree(run_dir, ignore_errors=True)
    result: dict[str, Any] = {
        "run": name, "recipe": os.path.relpath(recipe, ROOT), "status": "loading", "t4": args.t4,
        "model": "tiny stand-in" if model == "tiny" else {**read_json(Path(model) / BUILT), "folder": model},
        "environment": environment(), "settings": settings(cfg), "memory": {}, "steps": [],
        "data": largest_rows(rows, Path(cfg.train_data)), "passed": False}
    write_json_atomic(out_file, result)  # stopped while loading, the run is still on record
    cuda = args.device == "cuda"
    free_memory()
    if cuda:
        torch.cuda.reset_peak_memory_stats()  # not the random model's build, nor an earlier run
    clock = step_timing.step_clock()
    t0 = time.perf_counter()
    with as_t4(args.t4_gib) if args.t4 else contextlib.nullcontext() as fraction:
        if args.t4:
            result.update(memory_limit_gib=args.t4_gib, memory_fraction=round(fraction, 4))
        try:
            with spread_rewards() if cfg.method == "grpo" else contextlib.nullcontext():
                training.train(cfg, callbacks=[clock, probe(result, clock, out_file, t0, cuda)])
            result["status"] = "ok"
        except Exception as exc:  # recorded: the next recipe still runs
            oom = isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc)
            result.update(status="out_of_memory" if oom else "error", error=traceback.format_exc(limit=-6))
            result["memory"]["at_failure"] = memory_now(cuda)
    free_memory()
    result.update(wall_s=round(time.perf_counter() - t0, 2), steps=[step_record(s) for s in clock.steps])
    result["per_step"] = per_step(result["steps"])
    if cfg.method == "grpo":
        result["completion_lengths"] = completion_lengths(run_dir, cfg.get("max_completion_length"))
    result["passed"] = passed(result)
    write_json_atomic(out_file, result)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", type=Path, action="append", help="a recipe (repeatable; default: every one in "
                    "configs/ with device: cuda)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_gpu", help="folder for one JSON per run")
    ap.add_argument("--steps", type=int, default=2, help="optimiser steps per run (the first is left out of the "
                    "medians when there are more)")
    ap.add_argument("--t4", action="store_true", help=f"as a 16 GB T4: fp16, at most --t4-gib GiB (default {T4_GIB})")
    ap.add_argument("--t4-gib", type=float, default=T4_GIB)
    ap.add_argument("--tiny", action="store_true", help="the tiny stand-in, short completions, small screenshots")
    ap.add_argument("--device", choices=("cpu", "cuda"), help="default: cpu with --tiny, else cuda")
    ap.add_argument("--model-dir", type=Path, default=MODEL_DIR, help="where the random 3B model is saved (and "
                    "reused)")
    ap.add_argument("--work", type=Path, help="folder for the run folders and data (default: a temporary one)")
    ap.add_argument("--summarize", action="store_true", help="only write --out/summary.md from the JSON there")
    ap.add_argument("--build-only", action="store_true", help="only build and save the random 3B model in "
                    "--model-dir (reused by later runs)")
    args = ap.parse_args(argv)
    if args.summarize:
        if not args.out.is_dir():
            ap.error(f"--out {args.out}: no such folder (--summarize reads the runs' JSON files there)")
        return args
    args.device = args.device or ("cpu" if args.tiny else "cuda")
    missing = [str(p) for p in args.recipe or [] if not p.is_file()]
    if missing:
        ap.error(f"--recipe {', '.join(missing)}: no such file (the recipes are in configs/)")
    args.recipe = [p.resolve() for p in args.recipe] if args.recipe else gpu_recipes()
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if args.t4_gib <= 0:
        ap.error(f"--t4-gib must be above 0 (GiB torch's allocator may take as a T4), got {args.t4_gib:g}")
    if (not args.tiny or args.device == "cuda" or args.t4) and not torch.cuda.is_available():
        ap.error(f"no CUDA device is visible to torch {torch.__version__}: the 3B benchmark and --t4 need one "
                 "(--tiny runs the same code on the CPU)")
    if args.t4 and args.device != "cuda":
        ap.error("--t4 needs --device cuda")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summarize:
        return summarize(args.out)
    if args.build_only:
        t0 = time.perf_counter()
        folder = random_model(args.model_dir)
        print(f"random 3B model in {folder} ({time.perf_counter() - t0:.0f} s): {read_json(folder / BUILT)}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    install_timers()
    model = "tiny" if args.tiny else str(random_model(args.model_dir))
    with contextlib.ExitStack() as stack:
        work = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_gpu_recipe-")))
        work.mkdir(parents=True, exist_ok=True)
        results = []
        for recipe in args.recipe:
            results.append(run(recipe, args, work, model))
            print(describe(results[-1]), flush=True)
            gc.collect()
    failed = [r["run"] for r in results if not r["passed"]]
    print(f"{len(results) - len(failed)} of {len(results)} runs passed; results in {args.out}"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
