"""`python -m study`: the full study (`--study OUT`; with `--report`, its `study.md` written again from
its files) or the validation sweep (`--sweep OUT`), with the miniature command's seeds, files and
`--set KEY=YAML` overrides, printing the tables at the end."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gui_r1_lite.errors import UsageError, run_cli
from gui_r1_lite.runfolder import writable_folder
from gui_r1_lite.runio import read_json
from harness.miniature.__main__ import add_run_arguments, parse_command, parse_seeds
from harness.miniature.settings import FAIR_MODES

from . import __doc__ as STUDY_DOC
from .orchestrate import STUDY_FILE, STUDY_ONLINE_EPISODES, STUDY_SEEDS, rewrite_report, run_study, study_markdown
from .results import ship_results, study_result_files
from .sweep import EVIDENCE_FILE, SWEEP_FILE, run_sweep, sweep_table


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m study", description=STUDY_DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--study", metavar="OUT", help="run the full study into OUT: seeds 0-4 (--seeds), SFT matched "
                       "on visits and on seconds, every task as a secondary run, closed-loop episodes "
                       f"(--set online_episodes=N, default {STUDY_ONLINE_EPISODES}); wall time in OUT/{STUDY_FILE}")
    where.add_argument("--sweep", metavar="OUT", help="tune both arms on the validation split into OUT "
                       "(settings.SWEEP_GRID, seeds --seeds, default 0; SFT under both budgets, or the one "
                       f"--set fair=... names); every run in OUT/{SWEEP_FILE}")
    add_run_arguments(ap, seeds="--study 0-4, --sweep 0", workers="seeds (or sweep runs)")
    ap.add_argument("--results", metavar="DIR", help="then copy the result files, byte for byte, into DIR: the "
                    f"study's {STUDY_FILE}, study.md and each part's result file (make study: "
                    f"docs/results/study), the sweep's {EVIDENCE_FILE} (docs/results: the copy the settings cite)")
    ap.add_argument("--no-all-tasks", action="store_true",
                    help="with --study: leave out the secondary run on every task (recorded in study.json)")
    ap.add_argument("--report", action="store_true",
                    help="with --study: write OUT/study.md again from the finished study's files (nothing runs)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the study or the sweep (or rewrite a finished study's report) and print its tables."""
    ap = _parser()
    args, overrides = parse_command(ap, argv)
    seeds = parse_seeds(args.seeds, STUDY_SEEDS if args.study else (0,))
    if args.results:
        writable_folder(args.results, "--results")  # before anything runs
    if args.report and not args.study:
        ap.error("--report goes with --study (it rewrites a finished study's study.md)")
    if args.study and args.report:
        try:
            print(f"wrote {rewrite_report(args.study)}")
            if args.results:
                _ship(args.study, study_result_files(read_json(Path(args.study) / STUDY_FILE)), args.results)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        return 0
    if args.study:
        writable_folder(args.study, "--study")
        episodes = overrides.pop("online_episodes", STUDY_ONLINE_EPISODES)
        study = run_study(args.study, seeds, workers=args.workers,
                          online_episodes=episodes, all_tasks=not args.no_all_tasks, train_data=args.train_data,
                          heldout_data=args.heldout_data,
                          **overrides)
        print(study_markdown(study, args.study))
        print(f"\nwrote {Path(args.study) / STUDY_FILE}")
        if args.results:
            _ship(args.study, study_result_files(study), args.results)
        return 0
    writable_folder(args.sweep, "--sweep")
    # every SFT configuration under both budgets, unless `--set fair=...` names one
    fair_modes = (overrides.pop("fair"),) if "fair" in overrides else FAIR_MODES
    result = run_sweep(args.sweep, seeds, train_data=args.train_data, workers=args.workers,
                       fair_modes=fair_modes, **overrides)
    print(sweep_table(result))
    print(f"\nwall time {result['wall_seconds']:.1f} s; wrote {Path(args.sweep) / SWEEP_FILE}")
    if args.results:
        _ship(args.sweep, [EVIDENCE_FILE], args.results)
    return 0


def _ship(out: str, names: list[str], dest: str) -> None:
    """`--results DIR`: copy a finished run's result files into DIR and say where they went."""
    for path in ship_results(out, names, dest):
        print(f"shipped {path}")


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m study"))
