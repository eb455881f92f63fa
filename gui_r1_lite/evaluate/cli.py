"""Evaluate a policy (or a baseline) on GUI-R1 benchmark files: batched greedy generation with the
training prompts, each completion read by `actions.parse_completion`, its point mapped from the
model's frame back to the stored image's pixels, records appended to a resumable JSONL file, and
the metrics of `metrics.py` written as JSON and Markdown. The output folder's `run.json` records
what made the predictions, so that a folder is only ever resumed by the run that began it.

    python -m gui_r1_lite.evaluate (--data FILE_OR_DIR | --suite DIR) (--model ID_OR_DIR [--adapter DIR]
        [--quantization 4bit] | --baseline oracle|random) --out DIR [--preset paper|fast] [--limit N] [--blind] ...

`--blind` scores the same rows with every screenshot white (`blind`): does the policy look at the screen?

`--preset paper` predicts as the original's inference scripts do (`PRESETS`); `--suite DIR` runs
every GUI-R1 benchmark file in DIR and writes one table beside the paper's figures (`suite`). The
command is `evaluate_cli.main` (also `gui-r1-lite evaluate`): `suite` is built on
`gui_r1_lite.evaluate`, so this module's `main` runs one benchmark and the command dispatches.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..actions import COMPATS
from ..errors import UsageError
from ..metrics import to_markdown
from ..modeling import QUANTIZATIONS
from ..runfolder import completer_identity, hold_folder, model_identity
from .benchmark import load_benchmark
from .completers import BASELINES, Completer, ModelCompleter, make_baseline
from .predictions import PREDICTIONS
from .presets import DEFAULT_PRESET, PRESETS, check_settings, prediction_settings, require_positive
from .run import BLIND_NOTE, METRICS_JSON, METRICS_MD, RESUME_NOTE, evaluate, open_run, resolve_completer


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line's flags (`--data` or `--suite`), checked; `evaluate_cli` dispatches on them."""
    ap = argparse.ArgumentParser(prog="gui-r1-lite evaluate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--data", help="benchmark parquet file or folder")
    what.add_argument("--suite", help="folder of GUI-R1's benchmark files: each into OUT/<stem>/, one table")
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--model", help="hub id or local model folder")
    who.add_argument("--baseline", choices=sorted(BASELINES))
    ap.add_argument("--adapter", default=None, help="saved LoRA adapter folder (with --model)")
    ap.add_argument("--quantization", choices=QUANTIZATIONS, default=None)
    ap.add_argument("--out", required=True, help="output folder (resumes a run there made with the same arguments)")
    ap.add_argument("--overwrite", action="store_true",
                    help="when --out holds predictions made otherwise, delete them and start fresh")
    ap.add_argument("--preset", choices=sorted(PRESETS), default=None,
                    help=f"prediction settings: paper (the original's inference scripts) or fast; default "
                         f"{DEFAULT_PRESET}; the flags below override it")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the preset's (paper 1024, fast 256)")
    ap.add_argument("--min-pixels", type=int, default=None, help="default: the preset's (paper 3136, fast 262144)")
    ap.add_argument("--max-pixels", type=int, default=None,
                    help="default: the preset's (paper 12845056, fast 1258291)")
    ap.add_argument("--repetition-penalty", type=float, default=None, help="default: the preset's (paper 1.05)")
    ap.add_argument("--limit", type=int, default=None, help="rows per file (default: all)")
    ap.add_argument("--compat", choices=COMPATS, default="official")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random baseline")
    ap.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: CUDA when available)")
    ap.add_argument("--blind", action="store_true",
                    help="every screenshot replaced by a white image of the same size: does the policy look? "
                         "(compare with a seeing run in another --out)")
    args = ap.parse_args(argv)
    if args.model is None and (args.adapter or args.quantization):
        ap.error("--adapter and --quantization need --model")
    if args.blind and args.suite is not None:
        ap.error("--blind goes with --data (score one benchmark blind, then compare it with its seeing run)")
    require_positive({"--batch-size": args.batch_size, "--max-new-tokens": args.max_new_tokens})
    if args.repetition_penalty is not None and not args.repetition_penalty > 0:
        raise UsageError(f"--repetition-penalty must be positive (1.0: none), got {args.repetition_penalty}")
    args.settings = prediction_settings(args.preset or DEFAULT_PRESET, max_new_tokens=args.max_new_tokens,
                                        min_pixels=args.min_pixels, max_pixels=args.max_pixels,
                                        repetition_penalty=args.repetition_penalty)
    check_settings(args.limit, args.settings["min_pixels"], args.settings["max_pixels"],
                   {"limit": "--limit", "min_pixels": "--min-pixels", "max_pixels": "--max-pixels"})
    return args


def policy_from_args(args: argparse.Namespace) -> tuple[Completer | None, dict, str, dict]:
    """The command line's policy before any model loads: the baseline (None for a model), the
    identity its run folders record, its name, and the settings as `evaluate` will resolve them."""
    if args.model is None:
        baseline, settings = resolve_completer(make_baseline(args.baseline, args.seed), args.settings, args.seed)
        return baseline, completer_identity(baseline), baseline.name, settings
    identity = model_identity(args.model, args.adapter, args.quantization,
                              repetition_penalty=args.settings["repetition_penalty"])
    return None, identity, "+".join(filter(None, (args.model, args.adapter))), args.settings


def load_model_completer(args: argparse.Namespace, name: str) -> ModelCompleter:
    """The command line's model, loaded at the run's pixel bounds with its repetition penalty."""
    from ..modeling import load_policy

    s = args.settings
    policy = load_policy(args.model, quantization=args.quantization, lora=None, min_pixels=s["min_pixels"],
                         max_pixels=s["max_pixels"], adapter=args.adapter, device=args.device)
    return ModelCompleter(policy, name=name, repetition_penalty=s["repetition_penalty"])


def main(argv: list[str] | None = None) -> int:
    """Evaluate a model or a baseline on one benchmark and print the metrics (`--suite` runs through
    `evaluate_cli`). Everything that can be checked without the model is checked before it loads."""
    args = parse_args(argv)
    if args.suite is not None:
        raise UsageError("--suite runs through the command, evaluate_cli.main (python -m gui_r1_lite.evaluate "
                         "--suite DIR ..., gui-r1-lite evaluate --suite DIR ...)")
    with hold_folder(args.out, RESUME_NOTE):  # a second process writing --out is refused before anything loads
        bench = load_benchmark(args.data, args.limit)
        bench.require_rows()
        policy, identity, name, s = policy_from_args(args)
        open_run(args.out, bench, identity, name, s, args.compat, args.limit, blind=args.blind,
                 overwrite=args.overwrite)
        policy = policy or load_model_completer(args, name)
        summary = evaluate(bench, policy, args.out, batch_size=args.batch_size, compat=args.compat,
                           limit=args.limit, seed=args.seed, preset=s["preset"], max_new_tokens=s["max_new_tokens"],
                           min_pixels=s["min_pixels"], max_pixels=s["max_pixels"], blind=args.blind)
    print((BLIND_NOTE if args.blind else "") + to_markdown(summary))
    print(f"wrote {Path(args.out) / PREDICTIONS}, {METRICS_JSON}, {METRICS_MD}")
    return 0
