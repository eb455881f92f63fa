"""The miniature's run: for each seed the random baseline, the shared SFT warm start and the two
arms after it (`sft`, `sft_grpo`), each trained and scored as a cached stage; then the seeds combined
into `miniature.json`."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..runio import read_json, write_json_atomic
from .report import WARM, combine_seeds
from .settings import DEFAULT_HELDOUT, DEFAULT_TRAIN, MiniatureSettings
from .splits import prepare_data
from .stages import evaluate_stage, policy_of, run_stage, train_stage

RESULT_FILE = "miniature.json"
SETTINGS_FILE = "settings.json"
#: Arms that are trained (each has a `<arm>_train` and a `<arm>_eval` stage); `random` is only scored.
TRAINED: tuple[str, ...] = (WARM, "sft", "sft_grpo")
_COMPUTE = ("steps", "prompt_visits", "completions", "train_runtime", "seconds")
#: Stages of one seed: the random baseline's evaluation, and a training and an evaluation per trained arm.
STAGES_PER_SEED = 1 + 2 * len(TRAINED)


@dataclass
class SeedRun:
    """The stages of one seed, each in `out_dir/seed<N>/<arm>_train` or `<arm>_eval` and cached
    there. `callbacks` (TrainerCallbacks, e.g. live curves) go to every training stage; `place`
    (this seed's position, number of seeds) numbers the stages in the main job's progress."""

    out_dir: Path
    seed: int
    settings: MiniatureSettings
    data: dict
    progress: bool = False
    callbacks: Sequence = ()
    place: tuple[int, int] = (0, 1)
    stages: dict[str, dict] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return Path(self.out_dir) / f"seed{self.seed}"

    def announce(self, name: str, **fields: Any) -> dict:
        """The progress record of stage `name` starting: its name, its number among all seeds' stages, `fields`."""
        index = self.place[0] * STAGES_PER_SEED + len(self.stages) + 1
        return {"stage": f"seed {self.seed} · {name}", "index": index,
                "total": self.place[1] * STAGES_PER_SEED, **fields}

    def train(self, arm: str, method: str, *, steps: int, lr: float, scheduler: str,
              start: tuple[str, str | None] | None = None) -> dict:
        from ..training.callbacks import TrainingProgress

        name, s = f"{arm}_train", self.settings
        folder, announce = self.folder / name, self.announce(name, steps=steps)
        callbacks = [*self.callbacks, TrainingProgress(announce["stage"])]
        self.stages[name] = run_stage(folder, lambda: train_stage(
            s, folder, method=method, start=start, train_file=self.data["train"], steps=steps, lr=lr,
            seed=self.seed, scheduler=scheduler, callbacks=callbacks), self.progress, fresh=True, announce=announce)
        return self.stages[name]

    def evaluate(self, arm: str) -> dict:
        name, limit = f"{arm}_eval", self.settings.eval_limit
        folder = self.folder / name
        policy = self.seed if arm == "random" else policy_of(self.settings, self.stages[f"{arm}_train"])
        rows = self.data.get("n_heldout")
        announce = self.announce(name, steps=min(rows, limit) if rows and limit else rows,
                                 count_lines=str(folder / "predictions.jsonl"))
        self.stages[name] = run_stage(folder, lambda: evaluate_stage(
            self.settings, self.data["heldout"], folder, policy, f"{arm}-seed{self.seed}"), self.progress,
            announce=announce)
        return self.stages[name]

    def sft_steps(self) -> int:
        """The `sft` arm's steps: as many prompt visits as the `sft_grpo` arm ("visits"), or as many
        steps as fit in its training time at the warm start's measured speed ("seconds")."""
        if self.settings.fair == "visits":
            return self.settings.sft_extra_steps_visits
        warm, grpo = self.stages["warm_train"], self.stages["sft_grpo_train"]
        sft_step_s = (warm.get("train_runtime") or warm["seconds"]) / max(1, warm["steps"])
        return max(1, round((grpo.get("train_runtime") or grpo["seconds"]) / sft_step_s))

    def run(self) -> dict:
        """Every stage of the seed, in order; returns `summary()`."""
        s = self.settings
        self.evaluate("random")
        warm = self.train(WARM, "sft", steps=s.warm_steps, lr=s.sft_lr, scheduler=s.warm_scheduler)
        start = policy_of(s, warm)  # both arms start from the warm start
        self.train("sft_grpo", "grpo", steps=s.grpo_steps, lr=s.grpo_lr, scheduler=s.extra_scheduler, start=start)
        self.train("sft", "sft", steps=self.sft_steps(), lr=s.sft_extra_lr, scheduler=s.extra_scheduler, start=start)
        for arm in ("sft", "sft_grpo", WARM):
            self.evaluate(arm)
        return self.summary()

    def summary(self) -> dict:
        """Per-arm metrics, per-task click accuracy, compute and seconds, and where each arm's
        training run, model and predictions are."""
        st, scored = self.stages, ("random", "sft", "sft_grpo", WARM)
        seconds = {"random": st["random_eval"]["seconds"], WARM: st["warm_train"]["seconds"],
                   **{a: st[f"{a}_train"]["seconds"] + st[f"{a}_eval"]["seconds"] for a in ("sft", "sft_grpo")},
                   "warm_eval": st["warm_eval"]["seconds"]}
        return {"metrics": {a: st[f"{a}_eval"]["metrics"] for a in scored},
                "per_task": {a: st[f"{a}_eval"]["per_task_click_accuracy"] for a in scored},
                "n_eval": st["sft_eval"]["n"],
                "compute": {a: {k: st[f"{a}_train"].get(k) for k in _COMPUTE
                                if k != "completions" or a == "sft_grpo"} for a in TRAINED},
                "seconds": seconds,
                "runs": {a: str(self.folder / f"{a}_train") for a in TRAINED},
                "models": {a: policy_of(self.settings, st[f"{a}_train"]) for a in TRAINED},
                "predictions": {a: str(self.folder / f"{a}_eval") for a in scored},
                "skipped": sorted(k for k, v in st.items() if v.get("skipped"))}


def run_seed(out_dir: Path, seed: int, settings: MiniatureSettings, data: dict, progress: bool = False,
             callbacks: Sequence = (), place: tuple[int, int] = (0, 1)) -> dict:
    """The random baseline and the three trained arms for one seed (see `SeedRun`); `data` is
    `prepare_data`'s output. Returns per-arm metrics, seconds, compute and folders."""
    return SeedRun(Path(out_dir), seed, settings, data, progress, callbacks, place).run()


def _check_same_settings(out: Path, wanted: dict) -> None:
    """Stages cached under `out` are reused only by a run with the same settings."""
    path = out / SETTINGS_FILE
    if not path.exists():
        write_json_atomic(path, wanted)
    elif read_json(path) != wanted:
        raise UsageError(f"{out} holds a run with other settings ({path}); use another out_dir or delete it")


def run_miniature(out_dir: str | os.PathLike, seeds: Sequence[int] = (0, 1, 2), *,
                  train_data: str | os.PathLike = DEFAULT_TRAIN, heldout_data: str | os.PathLike = DEFAULT_HELDOUT,
                  settings: MiniatureSettings | None = None, validate: bool = False, progress: bool = False,
                  callbacks: Sequence = (), **overrides: Any) -> dict:
    """Run the miniature (every arm for every seed) and write `out_dir/miniature.json`.

    Args:
        out_dir: the run folder; finished stages in it are skipped on a rerun with the same settings,
            so a longer `seeds` list reuses the seeds already run.
        seeds: each seed sets the tiny model's weights and tokenizer and the training order.
        train_data: the MiniWoB++ training parquet (`prepare_data`).
        heldout_data: the held-out parquet the arms are scored on.
        settings: the budget (default `MiniatureSettings()`); `overrides` replace its fields.
        validate: score on the validation seeds of `train_data` instead of `heldout_data`.
        progress: show training logs instead of writing them to each stage's `log.txt`.
        callbacks: TrainerCallbacks given to every training stage (e.g. `viz.LiveCurves().callback()`).

    Returns:
        `{"random"|"sft"|"sft_grpo": {"format_rate"|"click_accuracy"|"strict_step_success":
        {"mean", "std", "per_seed"}}}` plus `seeds`, `warm_start`, `per_task_click_accuracy`,
        `data`, `n_heldout`, `compute`, `runs`, `models`, `predictions`, `seconds`, `settings` and
        `skipped_stages`.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    settings = MiniatureSettings.from_overrides(settings, **overrides).validate()
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise UsageError("seeds is empty")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_same_settings(out, json.loads(json.dumps({  # compared as stored
        "settings": settings.to_dict(), "train_data": str(train_data), "heldout_data": str(heldout_data),
        "validate": validate})))
    t0 = time.perf_counter()
    data = prepare_data(out, train_data, heldout_data, settings, validate)
    result = combine_seeds({seed: run_seed(out, seed, settings, data, progress, callbacks, (i, len(seeds)))
                            for i, seed in enumerate(seeds)})
    result.update({"data": data, "wall_seconds_this_call": round(time.perf_counter() - t0, 2),
                   "settings": settings.to_dict()})
    write_json_atomic(out / RESULT_FILE, result)
    return result
