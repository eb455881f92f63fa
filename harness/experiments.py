"""Notebook 04's experiment: `plan_experiment` turns the notebook's parameters into the profile's
experiment (the recipe's GRPO run, or the miniature), `run_experiment` trains it and scores the policy
before and after, `notebook_result` reports it."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gui_r1_lite.errors import UsageError
from gui_r1_lite.profiles import Profile, get_profile
from gui_r1_lite.progress import report

from . import pipeline
from .miniature import MiniatureSettings, arm_results, run_miniature
from .miniature.parallel import default_workers
from .miniature.report import arm_names
from .miniature.runner import online_missing
from .miniature.stages import STAGE_FILE

EXPERIMENTS = ("miniature", "recipe")
#: What the pipeline's summary keeps of the miniature besides its arms, in notebook 04's result (the
#: last two when the run made them).
MINIATURE_DETAILS = ("seeds", "n_heldout", "data", "per_task_click_accuracy", "warm_start", "compute", "seconds",
                     "settings", "workers", "threads", "wall_seconds_this_call", "stats", "online_success")


@dataclass
class Experiment:
    """What notebook 04 runs: `kind` "recipe" (`config`, scored on `heldout`) or "miniature"
    (`settings` over `seeds`), for `profile`, into `output_dir`."""

    kind: str
    profile: Profile
    output_dir: Path
    config: Any = None                  # recipe: a training.TrainConfig
    heldout: Path | None = None         # recipe: the rows answered before and after training
    settings: MiniatureSettings | None = None
    seeds: list[int] = field(default_factory=list)
    workers: int = 0                    # miniature: seeds side by side (0: one per core, at most one per seed)
    notes: list[str] = field(default_factory=list)  # what the plan changed in what was asked, and why

    @property
    def miniature_dir(self) -> Path:
        return self.output_dir / "miniature"

    @property
    def pixels(self) -> dict[str, int]:
        return {"min_pixels": self.profile.min_pixels, "max_pixels": self.profile.max_pixels}

    def describe(self, full: bool = False) -> str:
        """The notes (what the plan changed, where its data comes from), then the settings a learner reads
        first, a few lines; `full`: every setting of the training configuration or the miniature, as YAML."""
        notes = "".join(f"# {note}\n" for note in self.notes)
        if full:
            values = self.config.to_dict() if self.kind == "recipe" else self.settings.to_dict()
            return notes + yaml.safe_dump(values, sort_keys=False)
        return notes + "\n".join(f"{k}: {v}" for k, v in self._headline().items())

    def _headline(self) -> dict[str, Any]:
        if self.kind == "recipe":
            c = self.config.to_dict()
            return {"method": c["method"], "model": f"{c['model']} ({c['quantization'] or 'no'} quantisation, "
                                                       f"LoRA {'r ' + str(c['lora_r']) if c['lora'] else 'off'})",
                    "train_data": c["train_data"], "steps": c["max_steps"], "learning rate": c["learning_rate"],
                    "answers per prompt": c["num_generations"], "temperature": c["temperature"],
                    "beta (KL)": c["beta"], "max_completion_length": c["max_completion_length"],
                    "pixels": f"{c['min_pixels']}..{c['max_pixels']}", "rewards": c["rewards"],
                    "every setting": f"{c['output_dir']}/train_config.yaml (describe(full=True))"}
        s = self.settings
        return {"from": s.base_model, "tasks": ", ".join(s.tasks), "seeds": ", ".join(map(str, self.seeds)),
                "SFT": f"lr {s.sft_extra_lr}, trains {s.sft_extra_stop:.0%} of {s.extra_prompts} prompt visits "
                       "(early stopping)",
                "GRPO": f"lr {s.grpo_lr}, {s.num_generations} answers a prompt, {s.grpo_prompts_per_step} prompts "
                        f"a step, temperature {s.temperature}, beta {s.beta}",
                "budget": f"fair={s.fair}", "rewards": s.rewards,
                "every setting": f"{self.miniature_dir}/settings.json (describe(full=True))"}


@dataclass
class TrainingRun:
    """What `run_experiment` trained, the predictions before and after it, and where the policy is."""

    grpo_run: Path
    heldout: str
    before_dir: Path
    after_dir: Path
    before_name: str
    after_name: str
    base_model: str
    trained_model: str | None = None    # a fully fine-tuned model folder
    adapter_dir: str | None = None      # a LoRA adapter on `base_model`
    study: dict | None = None           # the miniature: `run_miniature`'s result, every seed


def plan_experiment(profile: str, experiment: str = "", *, output_dir: str | os.PathLike,
                    data_dir: str | os.PathLike, run_dir: str | os.PathLike, train_data: str = "",
                    max_steps: int = 0, seeds: str | Sequence[int] = "0,1,2",
                    miniature_settings: str = "", workers: int = 0, online_episodes: int = 0,
                    online_arms: str | Sequence[str] = "") -> Experiment:
    """Notebook 04's parameters as an `Experiment`, checked before anything trains.

    `experiment` defaults to the profile's. The recipe trains on `train_data`, else on notebook 01's
    curated file in `run_dir` when it is there, for `max_steps` (0: the recipe's). The miniature runs
    `seeds` ("0,1,2" or a list) with `miniature_settings` (a YAML mapping of `MiniatureSettings`
    overrides), `workers` side by side (0: one per core); `online_episodes` and `online_arms` ("" or 0:
    the settings') override those settings, and where the live page cannot run the plan scores offline
    only and says so in `notes`."""
    prof = get_profile(profile)
    kind = experiment or prof.experiment
    out = Path(output_dir)
    if kind == "recipe":  # scored on the profile's evaluation data, or the shipped test files
        eval_file = Path(prof.data_source("eval", str(data_dir)))
        config, note = _recipe_config(prof, out, data_dir, run_dir, train_data, max_steps)
        return Experiment(kind, prof, out, config=config, notes=[note],
                          heldout=eval_file if eval_file.exists() else Path(data_dir, "test"))
    if kind == "miniature":
        overrides = yaml.safe_load(miniature_settings or "") or {}
        notes = []
        missing = online_missing() if online_episodes else None
        if missing:
            notes.append(f"online_episodes={online_episodes} asked, but {missing}: scored offline only")
        elif online_episodes:
            overrides["online_episodes"] = int(online_episodes)
        arms = [a.strip() for a in (online_arms.split(",") if isinstance(online_arms, str) else online_arms)]
        if any(arms):
            overrides["online_arms"] = tuple(a for a in arms if a)
        settings = MiniatureSettings.from_overrides(**overrides).validate()
        seed_list = [int(s) for s in (seeds.split(",") if isinstance(seeds, str) else seeds) if str(s).strip()]
        if not seed_list:
            raise ValueError(f"seeds {seeds!r}: no seed to run")
        return Experiment(kind, prof, out, settings=settings, seeds=seed_list, notes=notes,
                          workers=int(workers) or default_workers(settings.threads, len(seed_list)))
    raise ValueError(f"experiment must be one of {EXPERIMENTS}, got {kind!r}")


def curated_source(prof: Profile, run_dir, data_dir) -> tuple[str, str]:
    """Notebook 01's curated file in `run_dir` and a note saying so, or, where 01 has not run there, the
    profile's raw training split and a note naming where the curated file was looked for. Curated data of
    another profile (another model judged its difficulty) is refused, naming both."""
    found = pipeline.result_path(run_dir, "01")
    curated = pipeline.read_result(run_dir, "01")
    if not curated or not curated.get("curated"):
        raw = prof.data_source("train", str(data_dir))
        return raw, (f"notebook 01's curated data is not in {found} (run notebook 01 with this run_dir, or pass "
                     f"train_data): training on the uncurated split {raw}")
    made = (curated.get("profile"), curated.get("model", prof.model))
    if made != (prof.name, prof.model):
        raise UsageError(f"{found}: notebook 01 curated under profile {made[0]!r} (model {made[1]}), this run is "
                         f"{prof.name!r} (model {prof.model}); run notebook 01 with profile {prof.name!r} into "
                         f"this run_dir, or pass train_data")
    rows = curated.get("rows")
    note = f"training on notebook 01's curated file {curated['curated']} ({rows} rows)"
    scored, balanced = curated.get("scored_rows"), curated.get("balanced_rows")
    if scored is not None and balanced is not None and scored < balanced:
        note += (f"; notebook 01 judged the difficulty of {scored} of its {balanced} balanced rows and kept "
                 f"{rows} of those, so GRPO sees only them (to judge every row, run notebook 01 with "
                 "difficulty_rows=0, or pass train_data)")
    return curated["curated"], note


def _cuda_card() -> tuple[float, bool] | None:
    """(total memory in GiB, bf16 supported) of the first CUDA card, or None without one."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(0).total_memory / 2**30, torch.cuda.is_bf16_supported()


def _recipe_config(prof: Profile, out: Path, data_dir, run_dir, train_data: str, max_steps: int):
    """The profile's GRPO recipe, on notebook 01's curated file when there is one, and a note on its data."""
    from gui_r1_lite.training import TrainConfig
    from gui_r1_lite.training.config import read_recipe

    source, note = (train_data, f"training on train_data {train_data}") if train_data else \
        curated_source(prof, run_dir, data_dir)
    # resume: a re-run into the same folder (`--from 04`, a new Colab session) continues the run; a
    # changed recipe is still refused by the run folder's fingerprint
    overrides: dict[str, Any] = {"train_data": source, "output_dir": str(out / "grpo"), "resume": True}
    if max_steps:
        overrides["max_steps"] = int(max_steps)
    recipe, why = prof.recipe(_cuda_card())
    note = f"{note}; {why}"
    held_out = read_recipe(pipeline.REPO / recipe).get("validation_data") or ""
    if data_dir and held_out.startswith("data_samples/"):  # notebooks run from their own folder
        overrides["validation_data"] = str(Path(data_dir) / held_out[len("data_samples/"):])
    return TrainConfig.from_yaml(pipeline.REPO / recipe, **overrides), note


def run_experiment(exp: Experiment, callbacks: Sequence = (), samples_shown: int = 4, live=None) -> TrainingRun:
    """Train `exp` and score the policy before and after training on held-out rows.

    The miniature's "before" is the first seed's warm start, "after" its SFT → GRPO; the recipe scores
    `samples_shown` rows of each held-out file before and after. `callbacks` (TrainerCallbacks) go to
    every training run in this process; seeds run side by side are followed instead by `live` (a
    `viz.LiveCurves`), redrawn from the first seed's training log."""
    if exp.kind == "miniature":
        return _run_miniature(exp, callbacks, live)
    return _run_recipe(exp, callbacks, samples_shown)


def follow_first_seed(live, seed_dir: Path) -> Callable[..., None]:
    """A `watch` for `run_miniature`: redraw `live` (a `viz.LiveCurves`) from the training log of the
    stage the seed in `seed_dir` is training, at most every `live.every` seconds.

    The stage training is the one whose log has no `stage.json` beside it yet (GRPO and SFT alike; several:
    the one that logged last); between stages, the stage that logged last. When the seed moves on, the stage
    it left is drawn once more as it ended, then the next one (which `LiveCurves` draws in a figure of its
    own, so the stage left stays on the page); `watch(final=True)`, once the seeds are done, draws the last
    stage as it ended."""
    last = [float("-inf")]
    shown: list[Path | None] = [None]

    def training() -> Path | None:
        logs = [(p.stat().st_mtime, p) for p in seed_dir.glob("*_train/metrics.jsonl")]
        running = [x for x in logs if not (x[1].parent / STAGE_FILE).exists()]
        return max(running or logs, default=(0.0, None))[1]

    def watch(final: bool = False) -> None:
        with contextlib.suppress(OSError):  # a log replaced while it is read: the next call draws it
            log, before = training(), shown[0]
            if log is None:
                return
            moved = before is not None and log != before
            if not (final or moved) and time.monotonic() - last[0] < live.every:
                return
            if moved and (before.parent / STAGE_FILE).exists():
                live.draw(before)  # the stage it left, as that stage ended
            live.draw(log)
            shown[0], last[0] = log, time.monotonic()

    return watch


def _run_miniature(exp: Experiment, callbacks: Sequence, live) -> TrainingRun:
    side_by_side = exp.workers > 1 and len(exp.seeds) > 1
    watch = follow_first_seed(live, exp.miniature_dir / f"seed{exp.seeds[0]}") if live and side_by_side else None
    study = run_miniature(exp.miniature_dir, exp.seeds, settings=exp.settings, workers=exp.workers,
                          callbacks=() if side_by_side else list(callbacks), watch=watch)
    if watch is not None:
        watch(final=True)  # the last stage as it ended: the seeds' last watch came up to a poll before
    seed = str(exp.seeds[0])
    predictions, models = study["predictions"][seed], study["models"][seed]
    names = arm_names(study.get("settings"))
    return TrainingRun(grpo_run=Path(study["runs"][seed]["sft_grpo"]), heldout=study["data"]["heldout"],
                       before_dir=Path(predictions["warm"]), after_dir=Path(predictions["sft_grpo"]),
                       before_name=names["warm"], after_name=names["sft_grpo"],
                       base_model=models["warm"][0], trained_model=models["sft_grpo"][0], study=study)


def _score(exp: Experiment, model: str, adapter: str | None, name: str, folder: Path, limit: int) -> None:
    """Answer `limit` rows of each held-out file with `model` (+ `adapter`) into `folder`, then free it."""
    from gui_r1_lite.evaluate import PREDICTIONS, ModelCompleter, evaluate
    from gui_r1_lite.modeling import free_memory, load_policy

    report(f"scoring the {name} policy", "start", count_lines=str(folder / PREDICTIONS))
    policy = load_policy(model, quantization=exp.config.quantization, lora=None, adapter=adapter, **exp.pixels)
    evaluate(exp.heldout, ModelCompleter(policy, name), folder, limit=limit, progress=False, overwrite=True,
             max_new_tokens=exp.config.get("max_completion_length"), **exp.pixels)
    del policy
    free_memory()


def _run_recipe(exp: Experiment, callbacks: Sequence, samples_shown: int) -> TrainingRun:
    from gui_r1_lite.modeling import free_memory
    from gui_r1_lite.training import resolve_model, train
    from gui_r1_lite.training.callbacks import TrainingProgress

    before_dir, after_dir = exp.output_dir / "samples_start", exp.output_dir / "samples_end"
    _score(exp, resolve_model(exp.config), None, "start", before_dir, samples_shown)
    res = train(exp.config, callbacks=[*callbacks, TrainingProgress("GRPO training")])
    free_memory()
    _score(exp, res.base_model, res.adapter_dir, "end", after_dir, samples_shown)
    return TrainingRun(grpo_run=Path(res.output_dir), heldout=str(exp.heldout), before_dir=before_dir,
                       after_dir=after_dir, before_name="start", after_name="end", base_model=res.base_model,
                       adapter_dir=res.adapter_dir)


def notebook_result(exp: Experiment, run: TrainingRun, study: dict | None = None) -> dict:
    """Notebook 04's `result.json`: the GRPO run's metrics at the start and the end, its last step,
    where the trained policy is, and with `study` (`run_miniature`'s result) the miniature's arms and
    the details notebook 05 shows."""
    from gui_r1_lite.training import read_metrics, start_and_end

    steps = [r["step"] for r in read_metrics(run.grpo_run) if "step" in r]
    result = {"profile": exp.profile.name, "experiment": exp.kind, "grpo_run": str(run.grpo_run),
              "global_step": max(steps, default=0), **start_and_end(run.grpo_run),
              "base_model": run.base_model, "adapter_dir": run.adapter_dir, "trained_model": run.trained_model}
    if study is not None:
        result["miniature"] = arm_results(study)
        result["miniature_details"] = {k: study[k] for k in MINIATURE_DETAILS if k in study}
    return result

