"""`python -m gui_r1_lite.miniature`: run the miniature, the full study (`--study`) or the validation
sweep (`--sweep`) from the command line and print its table."""

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
from .settings import DEFAULT_HELDOUT, DEFAULT_TRAIN, FAIR_MODES
from .study import STUDY_FILE, STUDY_ONLINE_EPISODES, STUDY_SEEDS, rewrite_report, run_study, study_markdown
from .sweep import SWEEP_FILE, run_sweep, sweep_table

#: Settings whose YAML lists become tuples.
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


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m gui_r1_lite.miniature", description=miniature.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="output folder of one miniature run (a rerun skips finished stages)")
    where.add_argument("--study", metavar="OUT", help="run the full study into OUT: seeds 0-4 (--seeds), SFT matched "
                       "on visits and on seconds, every task as a secondary run, closed-loop episodes "
                       f"(--set online_episodes=N, default {STUDY_ONLINE_EPISODES}); wall time in OUT/{STUDY_FILE}")
    where.add_argument("--sweep", metavar="OUT", help="tune both arms on the validation split into OUT "
                       "(settings.SWEEP_GRID, seeds --seeds, default 0; SFT under both budgets, or the one "
                       f"--set fair=... names); every run in OUT/{SWEEP_FILE}")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (default 0,1,2; --study 0-4; --sweep 0)")
    ap.add_argument("--workers", type=int, default=None,
                    help="seeds (or sweep runs) side by side, a process each (default: one per core)")
    ap.add_argument("--train-data", default=str(DEFAULT_TRAIN), help="MiniWoB++ training parquet")
    ap.add_argument("--heldout-data", default=str(DEFAULT_HELDOUT), help="held-out MiniWoB++ parquet")
    ap.add_argument("--validate", action="store_true",
                    help="evaluate on the validation seeds of the training file instead of the held-out file")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                    help="override a MiniatureSettings field, e.g. --set warm_steps=100 --set 'tasks=[click-tab]'")
    ap.add_argument("--progress", action="store_true", help="show training logs")
    ap.add_argument("--report", action="store_true",
                    help="with --study: write OUT/study.md again from the finished study's files (nothing runs)")
    return ap


def _seeds(text: str | None, default: tuple[int, ...]) -> list[int]:
    if text is None:
        return list(default)
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--seeds {text}: expected comma-separated integers such as 0,1,2") from None


def main(argv: list[str] | None = None) -> int:
    """Run the miniature, the study or the sweep with the command line's seeds, files and `--set` overrides."""
    ap = _parser()
    args = ap.parse_args(argv)
    try:
        overrides = parse_overrides(args.set)
    except ValueError as exc:
        ap.error(str(exc))
    if args.validate and not args.out:
        ap.error("--validate goes with --out (the sweep always scores on the validation split, the study never)")
    if args.report and not args.study:
        ap.error("--report goes with --study (it rewrites a finished study's study.md)")
    t0 = time.perf_counter()
    if args.study and args.report:
        try:
            print(f"wrote {rewrite_report(args.study)}")
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        return 0
    if args.study:
        writable_folder(args.study, "--study")
        episodes = overrides.pop("online_episodes", STUDY_ONLINE_EPISODES)
        study = run_study(args.study, _seeds(args.seeds, STUDY_SEEDS), workers=args.workers, online_episodes=episodes,
                          train_data=args.train_data, heldout_data=args.heldout_data, **overrides)
        print(study_markdown(study, args.study))
        print(f"\nwrote {Path(args.study) / STUDY_FILE}")
        return 0
    if args.sweep:
        writable_folder(args.sweep, "--sweep")
        # every SFT configuration under both budgets, unless `--set fair=...` names one
        fair_modes = (overrides.pop("fair"),) if "fair" in overrides else FAIR_MODES
        result = run_sweep(args.sweep, _seeds(args.seeds, (0,)), train_data=args.train_data, workers=args.workers,
                           fair_modes=fair_modes, **overrides)
        print(sweep_table(result))
        print(f"\nwall time {result['wall_seconds']:.1f} s; wrote {Path(args.sweep) / SWEEP_FILE}")
        return 0
    writable_folder(args.out, "--out")
    result = run_miniature(args.out, _seeds(args.seeds, (0, 1, 2)), train_data=args.train_data,
                           heldout_data=args.heldout_data, validate=args.validate, progress=args.progress,
                           workers=args.workers, **overrides)
    print(miniature_table(result))
    print(f"\nwall time {time.perf_counter() - t0:.1f} s; wrote {Path(args.out) / RESULT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m gui_r1_lite.miniature"))
