"""`python -m gui_r1_lite.miniature`: run the miniature from the command line and print its table."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .. import miniature
from ..errors import UsageError, run_cli
from ..runfolder import writable_folder
from .report import miniature_table
from .runner import RESULT_FILE, run_miniature
from .settings import DEFAULT_HELDOUT, DEFAULT_TRAIN

#: Settings whose YAML lists become tuples.
_TUPLES = ("tasks", "train_seeds", "validation_seeds")


def parse_overrides(items: list[str]) -> dict:
    """`--set KEY=YAML` items as MiniatureSettings overrides (ValueError names a malformed item)."""
    import yaml

    overrides = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--set needs KEY=VALUE, got {item!r}")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(f"--set {item}: the value is not YAML ({exc.problem or exc})") from None
        overrides[key] = tuple(value) if key in _TUPLES and isinstance(value, list) else value
    return overrides


def main(argv: list[str] | None = None) -> int:
    """Run the miniature with the command line's seeds, files and `--set` overrides."""
    ap = argparse.ArgumentParser(prog="python -m gui_r1_lite.miniature", description=miniature.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (a rerun skips finished stages)")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    ap.add_argument("--train-data", default=str(DEFAULT_TRAIN), help="MiniWoB++ training parquet")
    ap.add_argument("--heldout-data", default=str(DEFAULT_HELDOUT), help="held-out MiniWoB++ parquet")
    ap.add_argument("--validate", action="store_true",
                    help="evaluate on the validation seeds of the training file instead of the held-out file")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                    help="override a MiniatureSettings field, e.g. --set warm_steps=100 --set 'tasks=[click-tab]'")
    ap.add_argument("--progress", action="store_true", help="show training logs")
    args = ap.parse_args(argv)
    try:
        overrides = parse_overrides(args.set)
    except ValueError as exc:
        ap.error(str(exc))
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--seeds {args.seeds}: expected comma-separated integers such as 0,1,2") from None
    writable_folder(args.out, "--out")
    t0 = time.perf_counter()
    result = run_miniature(args.out, seeds, train_data=args.train_data, heldout_data=args.heldout_data,
                           validate=args.validate, progress=args.progress, **overrides)
    print(miniature_table(result))
    print(f"\nwall time {time.perf_counter() - t0:.1f} s; wrote {Path(args.out) / RESULT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m gui_r1_lite.miniature"))
