"""Closed-loop speed: seconds per episode step in a live MiniWoB++ page (screenshot, prompt, policy,
parsing, the action in the browser, the page's state), for the tiny model on CPU and, for the
browser's share alone, the oracle; median and spread over a few episodes of several tasks.

    python benchmarks/bench_online.py [--episodes 3] [--tasks enter-text,login-user,click-option,click-button]
        [--max-new-tokens 256]

The tiny model has random weights: its answers are rarely readable, so its episodes end after a
step or two; each step still generates `--max-new-tokens` tokens, which is what a step costs.
The oracle's steps cost the browser and the bookkeeping only (its policy time is ~0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gui_r1_lite.errors import UsageError  # noqa: E402
from gui_r1_lite.runio import read_jsonl  # noqa: E402
from harness import online  # noqa: E402


def spread(values: list[float]) -> str:
    """Median, interquartile range and extremes of `values`, in seconds."""
    qs = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return (f"median {statistics.median(values):.3f} s (IQR {qs[0]:.3f}–{qs[2]:.3f}, min {min(values):.3f}, "
            f"max {max(values):.3f}; {len(values)} steps)")


def measure(policy, tasks: list[str], episodes: int, out: Path, max_new_tokens: int) -> tuple[list[dict], float]:
    """Play the episodes; their step records and the run's wall seconds (browser start included)."""
    t0 = time.perf_counter()
    online.evaluate_online(policy, tasks, episodes, online.DEFAULT_SEED_START, out, max_new_tokens=max_new_tokens)
    return read_jsonl(out / online.STEPS_FILE), time.perf_counter() - t0


def report(label: str, steps: list[dict], wall: float) -> None:
    step = [s["seconds"] for s in steps]
    policy = [s["policy_seconds"] for s in steps]
    share = sum(policy) / sum(step) if sum(step) else 0.0
    print(f"{label}: {spread(step)}; policy {statistics.median(policy):.3f} s a step ({share:.0%} of step time); "
          f"{wall:.1f} s for the run")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=3, help="episodes per task")
    ap.add_argument("--tasks", default="enter-text,login-user,click-option,click-button")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args()
    for flag, value in {"--episodes": args.episodes, "--max-new-tokens": args.max_new_tokens}.items():
        if value < 1:
            ap.error(f"{flag} must be at least 1, got {value}")
    try:  # the oracle plays them too: each needs its scripted steps
        tasks = online.check_tasks(args.tasks, oracle=True)
    except UsageError as exc:
        ap.error(f"--tasks {args.tasks!r}: {exc}")

    import torch

    from gui_r1_lite.evaluate import ModelCompleter
    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import build_tiny_model

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; tasks {tasks}, {args.episodes} episodes "
          f"each, seeds from {online.DEFAULT_SEED_START}")
    print(f"command: python benchmarks/bench_online.py --episodes {args.episodes} --tasks {args.tasks} "
          f"--max-new-tokens {args.max_new_tokens}")
    from gui_r1_lite.geometry import model_image_size

    model_image_size(160, 210)  # its first call imports transformers: not a step's cost
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        report("oracle (browser only)", *measure("oracle", tasks, args.episodes, tmp / "oracle", args.max_new_tokens))
        policy = ModelCompleter(load_policy(build_tiny_model(tmp / "tiny"), lora=None, min_pixels=None,
                                            max_pixels=None, device="cpu"), name="tiny")
        steps, wall = measure(policy, tasks, args.episodes, tmp / "tiny_run", args.max_new_tokens)
        report(f"tiny Qwen2.5-VL on CPU, {args.max_new_tokens} new tokens", steps, wall)


if __name__ == "__main__":
    main()
