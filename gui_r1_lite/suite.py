"""GUI-R1's eight benchmarks in one run: each benchmark file of a folder evaluated into its own run
folder (`evaluate.evaluate`, resumable), the model loaded once, and one table beside the paper's
GUI-R1-3B figures (`suite.json`, `suite.md`).

    python -m gui_r1_lite.evaluate --suite DIR (--model M [--adapter A] [--quantization 4bit]
        | --baseline oracle|random) --out OUT [--preset paper|fast]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import RunFailed, UsageError
from .evaluate import (
    RESUME_NOTE,
    Benchmark,
    Preset,
    evaluate,
    load_benchmark,
    load_model_completer,
    open_run_folder,
    policy_from_args,
    run_about,
    run_record,
)
from .metrics import GR_RULES, PAPER_GUI_R1_3B, PAPER_GUI_R1_3B_COLUMNS, paper_grounding, percent
from .runfolder import hold_folder
from .runio import write_json_atomic, write_text_atomic

#: GUI-R1's benchmark files as published (`<stem>.parquet`), in the order of the paper's tables.
SUITE_STEMS: tuple[str, ...] = ("screenspot_test", "screenspot_pro_test", "androidcontrol_low_test",
                                "androidcontrol_high_test", "guiact_web_test", "guiodyssey_test",
                                "omniact_web_test", "omniact_desktop_test")
SUITE_JSON = "suite.json"
SUITE_MD = "suite.md"
#: AndroidControl's test steps: the full split (1,543 episodes), and the subset OS-Atlas evaluated
#: (its paper's 7,708: steps its conversion could not read were left out). GUI-R1's authors say
#: they took their test sets from OS-Atlas (ritzz-ai/GUI-R1 issue 30).
ANDROIDCONTROL_STEPS = {"full": 8_444, "os_atlas": 7_708}


def find_benchmarks(folder: str | os.PathLike) -> dict[str, Path]:
    """`stem -> file` for each of GUI-R1's benchmark files (`SUITE_STEMS`) directly in `folder`."""
    path = Path(folder).expanduser()
    found = {stem: path / f"{stem}.parquet" for stem in SUITE_STEMS if (path / f"{stem}.parquet").is_file()}
    if not found:
        what = "does not exist" if not path.exists() else "is not a folder" if not path.is_dir() \
            else "holds none of GUI-R1's benchmark files"
        raise UsageError(f"--suite {folder}: {what} ({os.path.abspath(path)}); expected one or more of "
                         f"{', '.join(s + '.parquet' for s in SUITE_STEMS)}")
    return found


def load_suite(folder: str | os.PathLike, limit: int | None = None) -> dict[str, Benchmark]:
    """Each benchmark file of `folder`, `limit` rows a file; `RunFailed` naming every file without a
    usable row, before anything is predicted."""
    benches = {stem: load_benchmark(path, limit) for stem, path in find_benchmarks(folder).items()}
    failed = []
    for bench in benches.values():
        try:
            bench.require_rows()
        except RunFailed as exc:
            failed.append(str(exc))
    if failed:
        raise RunFailed("\n".join(failed))
    return benches


def file_rows(bench: Benchmark) -> int | None:
    """Rows in the benchmark's files whatever the row limit; None in memory."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in bench.files) if bench.files else None


def run_suite(data: str | os.PathLike | Mapping[str, Benchmark], policy: Any, out_dir: str | os.PathLike, *,
              preset: str | Preset | None = None, compat: str = "official", batch_size: int = 4,
              limit: int | None = None, seed: int = 0, progress: bool = True, overwrite: bool = False,
              max_new_tokens: int | None = None, min_pixels: int | None = None,
              max_pixels: int | None = None) -> dict:
    """`evaluate.evaluate` (with these arguments) on every benchmark of `data` (a folder or
    `load_suite`'s result), each into `out_dir/<stem>/`; writes and returns `suite.json`:
    `{"benchmarks": {stem: metrics}, "file_rows", "missing", "preset", "settings", "policy", ...}`."""
    benches = load_suite(data, limit) if not isinstance(data, Mapping) else dict(data)
    with hold_folder(out_dir, RESUME_NOTE) as out:
        results = {stem: evaluate(bench, policy, out / stem, benchmark=stem, batch_size=batch_size,
                                  max_new_tokens=max_new_tokens, compat=compat, min_pixels=min_pixels,
                                  max_pixels=max_pixels, limit=limit, seed=seed, progress=progress,
                                  overwrite=overwrite, preset=preset)
                   for stem, bench in benches.items()}
        first = next(iter(results.values()))
        suite = {"benchmarks": results, "file_rows": {stem: file_rows(b) for stem, b in benches.items()},
                 "missing": [s for s in SUITE_STEMS if s not in results], "preset": first["preset"],
                 "settings": first["settings"], "policy": first["policy"], "compat": compat,
                 "gr_rule": GR_RULES.get(compat, compat), "limit": limit}
        write_json_atomic(out / SUITE_JSON, suite)
        write_text_atomic(out / SUITE_MD, suite_markdown(suite) + "\n")
    return suite


def _cell(value: float | None, paper: float | None) -> str:
    if value is None and paper is None:
        return "–"
    return percent(value) + ("" if paper is None else f" ({percent(paper)})")


def steps_note(stem: str, rows: int | None) -> str:
    if not stem.startswith("androidcontrol") or rows is None:
        return ""
    if rows == ANDROIDCONTROL_STEPS["os_atlas"]:
        which = "the 7,708 steps OS-Atlas evaluated (and GUI-R1 after it)"
    elif rows == ANDROIDCONTROL_STEPS["full"]:
        which = "the full 8,444-step AndroidControl test split, not OS-Atlas's 7,708 steps"
    else:
        which = "neither OS-Atlas's 7,708-step test set nor the full 8,444-step split"
    return f"file has {rows:,} steps: {which}"


def _grounding_note(stem: str, summary: Mapping[str, Any]) -> tuple[float | None, str]:
    """The grounding figure as the paper aggregates it (column mean), and a note saying how."""
    g = summary.get("grounding")
    if g is None:
        return None, ""
    value, used = paper_grounding(g, stem)
    if value is None:
        return g["overall"], "grounding pooled over rows"
    columns = len(PAPER_GUI_R1_3B_COLUMNS.get(stem, {}))
    return value, (f"grounding: mean of {len(used)} of the paper's {columns} columns, as its table; "
                   f"pooled over rows {percent(g['overall'])}")


def _row(stem: str, summary: Mapping[str, Any] | None, rows: int | None) -> str:
    paper = PAPER_GUI_R1_3B.get(stem, {})
    if summary is None:
        figures = " | ".join(_cell(None, paper.get(k)) for k in ("grounding", "type", "gr", "sr"))
        return f"| {stem} | not in the folder | – | {figures} | – | |"
    grounding, note = _grounding_note(stem, summary)
    a = summary.get("action") or {}
    if "grounding" in paper:  # ScreenSpot: the paper reports grounding alone
        figures = [_cell(grounding, paper["grounding"]), "–", "–", "–"]
    else:
        figures = [_cell(grounding, None) if grounding is not None else "–", _cell(a.get("type"), paper.get("type")),
                   _cell(a.get("grounding"), paper.get("gr")), _cell(a.get("step_success"), paper.get("sr"))]
    notes = "; ".join(n for n in (note, steps_note(stem, rows)) if n)
    steps = f"{summary['n']:,}" + (f" of {rows:,}" if rows is not None and rows != summary["n"] else "")
    return (f"| {stem} | {steps} | {summary['parse_failures']} | {' | '.join(figures)} | "
            f"{percent(a.get('strict_step_success'))} | {notes} |")


def suite_markdown(suite: Mapping[str, Any]) -> str:
    """`suite.md`: the settings, then a row per benchmark, the paper's figures in brackets."""
    s = suite["settings"]
    overridden = f" (overridden: {', '.join(s['overridden'])})" if s.get("overridden") else ""
    if s.get("repetition_penalty") is None:
        decoding = "decoding: none (a baseline)"
    else:
        greedy = "greedy" if s.get("temperature") in (0, None) else f"temperature {s['temperature']}"
        decoding = f"{greedy}, repetition penalty {s['repetition_penalty']}"
    lines = [f"# GUI-R1 benchmarks: {suite['policy']}", "",
             f"Preset `{suite['preset']}`{overridden}: max_new_tokens {s['max_new_tokens']}, pixels "
             f"{s['min_pixels']:,}–{s['max_pixels']:,}, {decoding}. compat `{suite['compat']}`: GR measured "
             f"from {suite['gr_rule']}.", "",
             "Figures in %: this run, then in brackets GUI-R1-3B as the paper reports it (arXiv 2504.10458); "
             "steps evaluated, of the file's rows when fewer.", "",
             "| benchmark | steps | parse failures | grounding | Type | GR | SR | strict SR | note |",
             "|---|---:|---:|---|---|---|---|---:|---|"]
    lines += [_row(stem, suite["benchmarks"].get(stem), suite["file_rows"].get(stem)) for stem in SUITE_STEMS]
    return "\n".join(lines)


def suite_main(args: argparse.Namespace) -> int:
    """`evaluate --suite DIR`: check the folder, --out, every file and run folder before the model
    loads once."""
    with hold_folder(args.out, RESUME_NOTE) as out:  # a second process writing --out is refused at once
        benches = load_suite(args.suite, args.limit)
        others = sorted(p.name for p in Path(args.suite).glob("*.parquet") if p.stem not in SUITE_STEMS)
        if others:
            print(f"[evaluate] not GUI-R1 benchmark files, left out: {', '.join(others)}", file=sys.stderr)
        policy, identity, name, s = policy_from_args(args)
        for stem, bench in benches.items():
            made_by = run_record(bench, identity, args.compat, s["min_pixels"], s["max_pixels"],
                                 s["max_new_tokens"], args.limit)
            open_run_folder(out / stem, made_by, overwrite=args.overwrite, about=run_about(name, bench, s))
        policy = policy or load_model_completer(args, name)
        suite = run_suite(benches, policy, out, preset=s["preset"], compat=args.compat, batch_size=args.batch_size,
                          limit=args.limit, seed=args.seed, max_new_tokens=s["max_new_tokens"],
                          min_pixels=s["min_pixels"], max_pixels=s["max_pixels"])
    print(suite_markdown(suite))
    print(f"wrote {out / SUITE_JSON}, {out / SUITE_MD} and one folder per benchmark")
    return 0
