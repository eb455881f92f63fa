"""`python -m harness.miniature`: run the miniature and print its tables (the study: `python -m study`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from gui_r1_lite.data import DataError, resolve_files
from gui_r1_lite.errors import UsageError, run_cli
from gui_r1_lite.evaluate import require_positive
from gui_r1_lite.runfolder import writable_folder

from .. import miniature
from .report import blind_task_table, miniature_table
from .runner import RESULT_FILE, run_miniature
from .settings import DEFAULT_HELDOUT, DEFAULT_TRAIN

_TUPLES = ("tasks", "train_seeds", "validation_seeds", "online_arms")


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


def add_run_arguments(ap: argparse.ArgumentParser, seeds: str = "0,1,2", workers: str = "seeds") -> None:
    """The flags this command and `python -m study` share; `seeds` and `workers` word their help."""
    ap.add_argument("--seeds", default=None, help=f"comma-separated seeds (default {seeds})")
    ap.add_argument("--workers", type=int, default=None,
                    help=f"{workers} side by side, a process each (default: one per core)")
    ap.add_argument("--train-data", default=str(DEFAULT_TRAIN), help="MiniWoB++ training parquet")
    ap.add_argument("--heldout-data", default=str(DEFAULT_HELDOUT), help="held-out MiniWoB++ parquet")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                    help="override a MiniatureSettings field, e.g. --set warm_steps=100 --set 'tasks=[click-tab]'")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m harness.miniature", description=miniature.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder of one miniature run (a rerun skips finished stages)")
    add_run_arguments(ap)
    ap.add_argument("--validate", action="store_true",
                    help="evaluate on the validation seeds of the training file instead of the held-out file")
    ap.add_argument("--progress", action="store_true", help="show training logs")
    return ap


def parse_seeds(text: str | None, default: tuple[int, ...]) -> list[int]:
    """`--seeds 0,1,2` as a list (`default` when not given); empty, negative (numpy's seeding refuses
    them deep inside a run) or not integers: `UsageError` naming the flag."""
    if text is None:
        return list(default)
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise UsageError(f"--seeds {text!r}: expected comma-separated integers >= 0 such as 0,1,2")
    return seeds


def parse_command(ap: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, dict]:
    """The arguments and the `--set` overrides, checked before anything runs: a bad override, a data file
    that is not there, `--workers` below 1: the parser's usage error, or `UsageError` naming the flag."""
    args = ap.parse_args(argv)
    require_positive({"--workers": args.workers})
    for flag, path in (("--train-data", args.train_data), ("--heldout-data", args.heldout_data)):
        try:
            resolve_files(path)
        except DataError as exc:
            ap.error(f"{flag} {exc}")
    try:
        return args, parse_overrides(args.set)
    except ValueError as exc:
        ap.error(str(exc))


def main(argv: list[str] | None = None) -> int:
    args, overrides = parse_command(_parser(), argv)
    t0, seeds = time.perf_counter(), parse_seeds(args.seeds, (0, 1, 2))
    writable_folder(args.out, "--out")
    result = run_miniature(args.out, seeds, train_data=args.train_data,
                           heldout_data=args.heldout_data, validate=args.validate, progress=args.progress,
                           workers=args.workers, **overrides)
    print(miniature_table(result))
    print("\nThe blind check per task (every screenshot white; distinct answers: mean over seeds):\n")
    print(blind_task_table(result))
    print(f"\nwall time {time.perf_counter() - t0:.1f} s; wrote {Path(args.out) / RESULT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m harness.miniature"))
