"""Where a GRPO step's time goes: the tiny Qwen2.5-VL on CPU through the real `gui_r1_lite.training.train`
path (cpu-mini pixel bounds, 2 prompts x 4 generations, 32 completion tokens, LoRA, beta 0.01) on
`data_samples/train/miniwob_train.parquet`.

    python benchmarks/bench_train_step.py [--steps 12] [--warmup 2] [--big] [--threads N]

Per step (median over the steps after the warm-up), seconds and share of the step spent in:

- generation: the policy's `generate` (sampling the completions);
- forward/backward + optimizer: every policy forward outside `generate` (the loss's, and the
  reference log-probs for the KL term), `loss.backward()` and `optimizer.step()`;
- rewards: the reward functions TRL calls;
- data preparation: fetching rows from the dataset (image decoding), the processor (chat
  template, tokenising, image patches) and decoding completions;
- rest: everything else in the step (TRL's bookkeeping, advantages, logging, gradient clipping).

The split comes from timing wrappers this script installs around those calls (nothing in the
package changes); a call nested in another is charged to the inner one only, and forwards inside
`generate` stay with generation. A step runs from one `on_step_end` to the next, so it includes
fetching its batch and logging the previous step. `--big` builds the tiny model with hidden 128 x 4
layers and a 64 x 2 vision tower instead of the default 64 x 2 / 64 x 2.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gui_r1_lite import modeling, rewards, training  # noqa: E402
from gui_r1_lite.data import DataError, resolve_files  # noqa: E402
from gui_r1_lite.profiles import get_profile  # noqa: E402

DATA = ROOT / "data_samples" / "train" / "miniwob_train.parquet"
BIG = {"hidden_size": 128, "num_layers": 4, "vision_hidden": 64, "vision_depth": 2}
CATEGORIES = ("generation", "forward/backward + optimizer", "rewards", "data preparation")
GEN, FWD, REW, DATA_PREP = CATEGORIES


class Timers:
    """Exclusive seconds per category: time spent in a timed call nested inside another timed call
    is charged to the inner call's category only."""

    def __init__(self) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[list[Any]] = []  # [category, label, start, seconds of nested timed calls]

    def inside(self, category: str) -> bool:
        return any(frame[0] == category for frame in self._stack)

    def start(self, category: str, label: str) -> None:
        self._stack.append([category, label, time.perf_counter(), 0.0])

    def stop(self) -> None:
        category, label, t0, nested = self._stack.pop()
        elapsed = time.perf_counter() - t0
        self.total[category] += elapsed - nested
        self.calls[label] += 1  # counted per call site, to show each wrapper fired
        if self._stack:
            self._stack[-1][3] += elapsed

    def wrap(self, category: str, fn: Callable, label: str) -> Callable:
        @functools.wraps(fn)  # keeps __name__: TRL names reward metrics after it
        def timed(*args, **kwargs):
            self.start(category, label)
            try:
                return fn(*args, **kwargs)
            finally:
                self.stop()
        return timed


TIMERS = Timers()


def _time_processor(processor) -> None:
    """Times the processor's calls. `processor(...)` looks `__call__` up on the class, so the instance
    gets a subclass of its own class, with the same name (save_pretrained records the class name)."""
    cls = type(processor)
    methods = {name: TIMERS.wrap(DATA_PREP, getattr(cls, name), f"processor.{name.strip('_')}")
               for name in ("__call__", "apply_chat_template", "batch_decode") if hasattr(cls, name)}
    processor.__class__ = type(cls.__name__, (cls,), {**methods, "__module__": cls.__module__})


def _time_model(model) -> None:
    model.generate = TIMERS.wrap(GEN, model.generate, "generate")

    # Forward hooks on the top-level (PEFT) model: TRL calls it for the loss and, with the adapter
    # disabled, for the reference log-probs; inside `generate` the inner model is called instead,
    # and any forward there counts as generation anyway.
    def before(module, args, kwargs):
        if not TIMERS.inside(GEN):
            TIMERS.start(FWD, "forward")

    def after(module, args, kwargs, output):
        if not TIMERS.inside(GEN) and TIMERS._stack and TIMERS._stack[-1][1] == "forward":
            TIMERS.stop()

    model.register_forward_pre_hook(before, with_kwargs=True)
    model.register_forward_hook(after, with_kwargs=True)


def install_wrappers() -> None:
    """Wraps what `train()` builds: the policy (generate, forwards, processor), the reward functions,
    dataset fetches and `loss.backward()`. The optimiser step is wrapped by `StepClock`."""
    load_policy = modeling.load_policy

    def timed_load_policy(*args, **kwargs):
        policy = load_policy(*args, **kwargs)
        _time_model(policy.model)
        _time_processor(policy.processor)
        return policy
    modeling.load_policy = timed_load_policy

    build_rewards = rewards.build_rewards

    def timed_build_rewards(*args, **kwargs):
        funcs, weights = build_rewards(*args, **kwargs)
        return [TIMERS.wrap(REW, f, f"reward {f.__name__}") for f in funcs], weights
    rewards.build_rewards = timed_build_rewards

    import datasets
    import torch

    for name in ("__getitems__", "__getitem__"):
        if hasattr(datasets.Dataset, name):
            timed = TIMERS.wrap(DATA_PREP, getattr(datasets.Dataset, name), f"dataset.{name.strip('_')}")
            setattr(datasets.Dataset, name, timed)
    torch.Tensor.backward = TIMERS.wrap(FWD, torch.Tensor.backward, "backward")


def step_clock():
    """A callback that snapshots the category totals at every step end (and wraps the optimiser)."""
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.steps: list[dict[str, float]] = []
            self.calls: dict[str, int] = {}
            self._last: tuple[float, dict[str, float]] | None = None

        def _snapshot(self) -> tuple[float, dict[str, float]]:
            return time.perf_counter(), dict(TIMERS.total)

        def on_train_end(self, args, state, control, **kw):
            self.calls = dict(TIMERS.calls)

        def on_train_begin(self, args, state, control, optimizer=None, **kw):
            if optimizer is not None:
                optimizer.step = TIMERS.wrap(FWD, optimizer.step, "optimizer.step")
            self._last = self._snapshot()

        def on_step_end(self, args, state, control, **kw):
            now, totals = self._snapshot()
            t0, before = self._last
            step = {"step": now - t0, **{c: totals.get(c, 0.0) - before.get(c, 0.0) for c in CATEGORIES}}
            step["rest"] = step["step"] - sum(step[c] for c in CATEGORIES)
            self.steps.append(step)
            self._last = (now, totals)

    return StepClock()


def peak_rss_mib() -> tuple[float, float]:
    """Peak resident set size of this process and of its finished children, in MiB."""
    per_mib = 1024 * 1024 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / per_mib,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / per_mib)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=12, help="GRPO steps to run")
    ap.add_argument("--warmup", type=int, default=2, help="first steps left out of the medians")
    ap.add_argument("--big", action="store_true", help=f"tiny model dims {BIG}")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--out", default=None, help="run folder (default: a temporary one)")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    if args.warmup < 0:
        ap.error(f"--warmup must be 0 or more, got {args.warmup}")
    if args.steps <= args.warmup:
        ap.error("--steps must exceed --warmup")
    if args.threads is not None and args.threads < 1:
        ap.error(f"--threads must be at least 1 (leave it out for torch's choice), got {args.threads}")
    try:
        resolve_files(args.data)
    except DataError as exc:
        ap.error(f"--data {exc}")

    import torch  # after the flags are checked: its import takes seconds

    if args.threads:
        torch.set_num_threads(args.threads)

    profile = get_profile("cpu-mini")
    install_wrappers()
    clock = step_clock()
    with tempfile.TemporaryDirectory(prefix="bench_train_step-") as tmp:
        cfg = training.TrainConfig.from_dict(dict(
            method="grpo", model="tiny", tiny=BIG if args.big else {}, train_data=args.data,
            min_pixels=profile.min_pixels, max_pixels=profile.max_pixels, num_generations=4,
            per_device_train_batch_size=8,  # 2 prompts x 4 generations
            max_completion_length=32, max_steps=args.steps, logging_steps=1, save_steps=args.steps + 1,
            save_total_limit=1, device="cpu", output_dir=args.out or str(Path(tmp) / "run")), source="benchmark")
        t0 = time.perf_counter()
        training.train(cfg, callbacks=[clock])
        wall = time.perf_counter() - t0

    steps = clock.steps[args.warmup:]
    med = {k: statistics.median(s[k] for s in steps) for k in ("step", *CATEGORIES, "rest")}
    own, children = peak_rss_mib()
    dims = BIG if args.big else "default (hidden 64 x 2 layers, vision 64 x 2)"
    print(f"tiny model dims: {dims}; torch threads {torch.get_num_threads()}; data {Path(args.data).name}; "
          f"pixels [{profile.min_pixels}, {profile.max_pixels}]; 2 prompts x 4 generations, 32 completion tokens")
    print(f"{len(clock.steps)} steps, medians over steps {args.warmup + 1}..{len(clock.steps)}; "
          f"whole train() call {wall:.1f} s (model build and data loading included)")
    print(f"peak RSS: this process {own:.0f} MiB; finished children {children:.0f} MiB (ru_maxrss; a child started"
          " by fork/vfork is charged the parent's resident size at that moment, so this is not memory added)")
    print("timed calls in the run:", ", ".join(f"{k} {v}" for k, v in sorted(clock.calls.items())))
    print("per-step seconds:", " ".join(f"{s['step']:.2f}" for s in clock.steps))
    print()
    print("| part of a GRPO step | median s | % of median step |")
    print("|---|---:|---:|")
    for k in (*CATEGORIES, "rest"):
        print(f"| {k} | {med[k]:.4f} | {100 * med[k] / med['step']:.1f} |")
    print(f"| **step** | **{med['step']:.4f}** | 100 |")
    print()
    print("(medians of each part need not add up to the median step exactly)")


if __name__ == "__main__":
    main()
