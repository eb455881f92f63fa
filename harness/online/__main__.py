"""Command line of the closed-loop evaluation: play MiniWoB++ episodes in headless Chromium with a
baseline or a model and print the success table (written to DIR/online.json and online.md).

    python -m harness.online --policy oracle|random|MODEL_DIR [--adapter A] --tasks t1,t2,... \\
        --episodes N --seed-start S --out DIR [--max-steps K]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gui_r1_lite.actions import COMPATS
from gui_r1_lite.errors import UsageError, run_cli
from gui_r1_lite.evaluate import PRESETS, check_settings, require_positive

from .browser import CaptureDependencyError
from .results import online_table
from .run import DEFAULT_SEED_START, ONLINE_JSON, ORACLE_TASKS, evaluate_online


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="gui-r1-lite online", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", required=True, help="oracle, random, or a model folder (or hub id)")
    ap.add_argument("--adapter", default=None, help="a saved LoRA adapter folder (with a model folder)")
    ap.add_argument("--tasks", default=",".join(ORACLE_TASKS),
                    help="MiniWoB++ task names separated by commas (default: the tasks the oracle always solves)")
    ap.add_argument("--episodes", type=int, default=10, help="episodes per task (default 10)")
    ap.add_argument("--seed-start", type=int, default=DEFAULT_SEED_START,
                    help=f"first episode seed (default {DEFAULT_SEED_START}; data_samples/ seeds are refused)")
    ap.add_argument("--out", required=True, help="run folder (resumes a run there begun with the same settings)")
    ap.add_argument("--max-steps", type=int, default=None,
                    help="steps per episode (default: a task's scripted steps + 2, 10 without a script)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default=None,
                    help="prediction settings as `evaluate --preset` (paper: 1,024 tokens, repetition penalty 1.05)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the preset's, else 256")
    ap.add_argument("--min-pixels", type=int, default=None,
                    help="model frame bounds (default: the preset's, else the processor's)")
    ap.add_argument("--max-pixels", type=int, default=None)
    ap.add_argument("--compat", choices=COMPATS, default="official")
    ap.add_argument("--overwrite", action="store_true",
                    help="when --out holds episodes made otherwise, delete them and start fresh")
    ap.add_argument("--progress", action="store_true", help="show a progress bar")
    args = ap.parse_args(argv)
    # the run checks these too, by their argument names; here they are named by the flags typed
    require_positive({"--episodes": args.episodes, "--max-steps": args.max_steps,
                      "--max-new-tokens": args.max_new_tokens})
    check_settings(None, args.min_pixels, args.max_pixels,
                   {"min_pixels": "--min-pixels", "max_pixels": "--max-pixels"})
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the closed-loop evaluation and print its table."""
    args = _parse_args(argv)
    try:
        summary = evaluate_online(args.policy, args.tasks, args.episodes, args.seed_start, args.out,
                                  max_steps=args.max_steps, adapter=args.adapter, min_pixels=args.min_pixels,
                                  max_pixels=args.max_pixels, max_new_tokens=args.max_new_tokens,
                                  compat=args.compat, progress=args.progress, overwrite=args.overwrite,
                                  preset=args.preset)
    except CaptureDependencyError as exc:  # a missing browser or package: the message says what to install
        raise UsageError(str(exc)) from None
    print(online_table(summary))
    print(f"wrote {Path(args.out) / ONLINE_JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="gui-r1-lite online"))
