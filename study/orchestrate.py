"""The full study, one command: the miniature over `STUDY_SEEDS` with the SFT arm matched on prompt
visits (`visits/`) and on seconds (`seconds/`, with the SFT settings chosen for that budget,
`settings.SECONDS_CHOSEN`; it reuses every stage of `visits/` that does not depend on the SFT arm),
and on every MiniWoB++ task as a secondary run (`all_tasks/`); its wall time, and each part's, in
`study.json`, the tables in `study.md`.

    python -m study --study runs/study      (or: make study)
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gui_r1_lite.runio import read_json, write_json_atomic, write_text_atomic
from harness.miniature.report import blind_task_table, miniature_table, per_task_table
from harness.miniature.runner import RESULT_FILE, run_miniature
from harness.miniature.settings import SECONDS_CHOSEN
from harness.miniature.stages import STAGE_FILE

from .tables import compute_table, online_task_table, restated

STUDY_FILE = "study.json"
STUDY_SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
#: Closed-loop episodes per task, per arm and seed, in the study's main part (0: offline only).
STUDY_ONLINE_EPISODES = 5
#: Stages of a seed that neither `fair` nor the SFT arm's settings change: the seconds-matched part
#: takes them from the visits-matched one instead of training them again.
SHARED_STAGES: tuple[str, ...] = ("random_eval", "random_blind_eval", "warm_train", "warm_eval", "warm_blind_eval",
                                  "sft_grpo_train", "sft_grpo_eval", "sft_grpo_blind_eval", "random_online",
                                  "warm_online", "sft_grpo_online")


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link (no second copy of a model on disk), a copy where links cannot be made."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def share_stages(src: Path, dst: Path, seeds: Sequence[int], stages: Sequence[str] = SHARED_STAGES) -> list[str]:
    """Give run folder `dst` the finished `stages` of `src` for each seed (hard-linked files; a stage
    `dst` already finished is kept, an unfinished one replaced). Returns the stages given."""
    given = []
    for seed in seeds:
        for name in stages:
            a, b = src / f"seed{seed}" / name, dst / f"seed{seed}" / name
            if not (a / STAGE_FILE).exists() or (b / STAGE_FILE).exists():
                continue
            if b.exists():
                shutil.rmtree(b)
            shutil.copytree(a, b, copy_function=_link_or_copy)
            given.append(f"seed{seed}/{name}")
    return given


def _part(name: str, out: Path, seeds: Sequence[int], workers: int | None, settings: dict[str, Any]) -> dict:
    """One part of the study: a miniature run in `out/name`, timed."""
    t0 = time.perf_counter()
    result = run_miniature(out / name, seeds, workers=workers, **settings)
    return {"folder": str(out / name), "result": str(out / name / RESULT_FILE), "settings": settings,
            "wall_seconds": round(time.perf_counter() - t0, 2), "table": miniature_table(result)}


def every_task(part: dict) -> bool:
    """Whether a part's task mix already holds every task of its training file (its data record)."""
    from gui_r1_lite.data import load_gui_r1
    from harness.miniature.splits import DATA_RECORD, task_mix

    settings = read_json(part["result"])["settings"]
    source = read_json(Path(part["folder"]) / "data" / DATA_RECORD)["key"]["train_data"]
    return settings["tasks"] is None or set(settings["tasks"]) >= set(task_mix(load_gui_r1(source).samples))


def study_command(out: Path, seeds: Sequence[int], all_tasks: bool, online_episodes: int,
                  overrides: dict[str, Any]) -> str:
    """The command line that reruns a study: its folder, seeds, parts and every setting it changed
    (`--set name=value`, JSON values, which the command's YAML reads back)."""
    line = f"python -m study --study {shlex.quote(str(out))} --seeds {','.join(map(str, seeds))}"
    line += "" if all_tasks else " --no-all-tasks"
    changed = {**({"online_episodes": online_episodes} if online_episodes != STUDY_ONLINE_EPISODES else {}),
               **overrides}
    for flag in ("train_data", "heldout_data"):  # the command's own flags, not settings
        path = changed.pop(flag, None)
        line += f" --{flag.replace('_', '-')} {shlex.quote(str(path))}" if path is not None else ""
    for name, value in changed.items():
        text = value if isinstance(value, str) else json.dumps(list(value) if isinstance(value, tuple) else value)
        line += f" --set {shlex.quote(f'{name}={text}')}"
    return line


def run_study(out_dir: str | os.PathLike, seeds: Sequence[int] = STUDY_SEEDS, *, workers: int | None = None,
              online_episodes: int = STUDY_ONLINE_EPISODES, all_tasks: bool = True, **overrides: Any) -> dict:
    """Run the study into `out_dir` (a rerun continues it: every finished stage is kept) and write
    `study.json` and `study.md`.

    Args:
        out_dir: the study's folder: `visits/`, `seconds/` and `all_tasks/` are miniature run folders.
        seeds: at least five for the reported study.
        workers: seeds side by side (`run_miniature`).
        online_episodes: closed-loop episodes per task for each arm of `visits/` and `seconds/`.
        all_tasks: run the secondary part on every task (False: recorded as not run, `all_tasks_skipped`).
        overrides: MiniatureSettings fields for every part (e.g. a smaller budget for a trial).

    Returns:
        `study.json`'s object: `seeds`, `parts` (each part's folder, result file, settings, wall
        time and table), `shared_stages`, `wall_seconds`.
    """
    out, seeds, t0 = Path(out_dir), [int(s) for s in seeds], time.perf_counter()
    base = study_command(out, seeds, all_tasks, online_episodes, overrides)
    main = {"online_episodes": online_episodes, **overrides}
    parts = {"visits": _part("visits", out, seeds, workers, {**main, "fair": "visits"})}
    shared = share_stages(out / "visits", out / "seconds", seeds)
    parts["seconds"] = _part("seconds", out, seeds, workers, {**main, **SECONDS_CHOSEN, "fair": "seconds"})
    if every_task(parts["visits"]):
        skipped = "the task mix is every task of the training file: the secondary run would be the main one"
    elif not all_tasks:
        skipped = "not run (--no-all-tasks): the secondary run on every task was left out of this study"
    else:
        skipped = None
        parts["all_tasks"] = _part("all_tasks", out, seeds, workers,
                                   {**overrides, "tasks": None, "fair": "visits", "online_episodes": 0})
    study = {**({"all_tasks_skipped": skipped} if skipped else {}), "seeds": seeds, "command": base, "parts": parts,
             "shared_stages": shared, "wall_seconds": round(time.perf_counter() - t0, 2)}
    write_json_atomic(out / STUDY_FILE, study)
    write_text_atomic(out / "study.md", study_markdown(study, out))
    return study


def part_tables(part: dict, result_path: str | os.PathLike) -> str:
    """A part's tables: the arms (with the gain and its tests), click accuracy per task, closed-loop
    success per task and each stage's compute, read from the part's result file `result_path`, with
    the statistics computed afresh from the seed folders beside it (`tables.restated`); the arms'
    table stored in `study.json`, said to be that, when the file is gone."""
    path = Path(result_path)
    if not path.exists():
        return f"{part['table']}\n\n(the table stored in {STUDY_FILE}: {path} is gone, so no per-task tables)"
    result = restated(read_json(path), path.parent)
    online = ["Closed-loop success per task (episodes of every seed together):",
              online_task_table(result)] if result.get("online") else []
    blind = ["The blind check per task (every screenshot white; distinct answers: mean over seeds):",
             blind_task_table(result)] if (result.get("stats") or {}).get("looks") else []
    return "\n\n".join([miniature_table(result), "Click accuracy per task (mean over seeds):",
                        per_task_table(result), *blind, *online,
                        "Compute of each training stage, a seed (mean over seeds (range)):", compute_table(result)])


def study_markdown(study: dict, out_dir: str | os.PathLike) -> str:
    """The study's tables, one set per part (each read from `out_dir/<part>/`, wherever the study
    ran from or was moved to), with each part's wall time and the command."""
    titles = {"visits": "SFT matched on prompt visits (the main comparison)",
              "seconds": "SFT matched on the GRPO arm's training seconds",
              "all_tasks": "every MiniWoB++ task (secondary; SFT matched on visits)"}
    lines = [f"`{study['command']}`: {study['wall_seconds'] / 60:.1f} min wall time", ""]
    if study.get("all_tasks_skipped"):
        lines += [f"No secondary run on every task: {study['all_tasks_skipped']}.", ""]
    for name, part in study["parts"].items():
        lines += [f"## {titles.get(name, name)}", "", part_tables(part, Path(out_dir) / name / RESULT_FILE), "",
                  f"{part['wall_seconds'] / 60:.1f} min; {name}/{RESULT_FILE}", ""]
    return "\n".join(lines)


def rewrite_report(out_dir: str | os.PathLike) -> Path:
    """Write `study.md` again from a finished study's `study.json` and its parts' result files (the
    tables of this version of the report, nothing run again). Returns its path."""
    out = Path(out_dir)
    if not (out / STUDY_FILE).exists():
        raise FileNotFoundError(f"{out / STUDY_FILE}: no finished study there (run --study {out} first)")
    return write_text_atomic(out / "study.md", study_markdown(read_json(out / STUDY_FILE), out))
