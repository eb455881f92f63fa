"""The miniature's run: for each seed the random baseline, the shared SFT warm start and the two arms
after it, each trained and scored as a cached stage; the seeds side by side, then combined into
`miniature.json`."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_r1_lite.errors import RunFailed, UsageError
from gui_r1_lite.runfolder import as_stored, differences, digest, source_identity
from gui_r1_lite.runio import read_json, write_json_atomic

from .parallel import default_workers, pinned_threads, run_parallel
from .report import WARM, aggregate, blind_arm, combine_seeds
from .settings import DEFAULT_HELDOUT, DEFAULT_TRAIN, MiniatureSettings
from .splits import prepared_data
from .stages import (
    STAGE_FILE,
    base_stage,
    evaluate_stage,
    online_stage,
    policy_of,
    run_stage,
    seed_folder,
    train_stage,
)

RESULT_FILE = "miniature.json"
SETTINGS_FILE = "settings.json"
#: How the `sft` arm's steps were reached (`SeedRun.sft_budget`), kept per seed so that a rerun under
#: `fair="seconds"` trains the steps it resolved to, not those of its own timings.
SFT_BUDGET_FILE = "sft_budget.json"
#: With no warm start to time, a seconds-matched SFT arm's step bound is this many times its visits budget.
_SECONDS_BOUND = 50
#: Arms that are trained (each has a `<arm>_train` and a `<arm>_eval` stage); `random` is only scored.
TRAINED: tuple[str, ...] = (WARM, "sft", "sft_grpo")
_COMPUTE = ("steps", "prompt_visits", "completions", "train_runtime", "train_cpu_seconds", "seconds", "budget")
#: The arms scored on the held-out rows, each also blind (`<arm>_blind_eval`: every screenshot white).
SCORED: tuple[str, ...] = ("random", "sft", "sft_grpo", WARM)
#: Offline stages of one seed.
STAGES_PER_SEED = 1 + 2 * len(TRAINED) + len(SCORED)


def stage_names(settings: MiniatureSettings) -> list[str]:
    """A seed's stages in the order they run."""
    names = ["random_eval", "random_blind_eval", "warm_train", "sft_grpo_train", "sft_train", "sft_eval",
             "sft_blind_eval", "sft_grpo_eval", "sft_grpo_blind_eval", "warm_eval", "warm_blind_eval"]
    return names + ([f"{arm}_online" for arm in settings.online_arms] if settings.online_episodes else [])


@dataclass
class SeedRun:
    """The stages of one seed, each in `out_dir/seed<N>/<stage>` and cached there. `callbacks`
    (TrainerCallbacks) go to every training stage; `place` (this seed's position, number of seeds)
    numbers the stages in the main job's progress."""

    out_dir: Path
    seed: int
    settings: MiniatureSettings
    data: dict
    progress: bool = False
    callbacks: Sequence = ()
    place: tuple[int, int] = (0, 1)
    stages: dict[str, dict] = field(default_factory=dict)
    runtime: dict = field(default_factory=dict)  # what every stage records of its threads
    current: str = ""                            # the stage running or last run

    @property
    def folder(self) -> Path:
        return seed_folder(self.out_dir, self.seed)

    def announce(self, name: str, **fields: Any) -> dict:
        """The progress record of stage `name` starting, numbered among all seeds' stages."""
        per_seed = len(stage_names(self.settings))
        index = self.place[0] * per_seed + len(self.stages) + 1
        return {"stage": f"seed {self.seed} · {name}", "index": index, "total": self.place[1] * per_seed, **fields}

    def _run(self, name: str, fn: Callable[[], dict], announce: dict, *, fresh: bool = False,
             record: dict | None = None) -> dict:
        self.current = name
        self.stages[name] = run_stage(self.folder / name, fn, self.progress, fresh=fresh, announce=announce,
                                      record={**self.runtime, **(record or {})})
        return self.stages[name]

    def train(self, arm: str, method: str, *, steps: int, lr: float, scheduler: str,
              start: tuple[str, str | None] | None = None, record: dict | None = None,
              cpu_seconds: float | None = None) -> dict:
        """Train `arm` into `<arm>_train` (`steps` 0: nothing is trained, the stage is the base itself);
        `cpu_seconds`: stop once the training loop has used that many CPU seconds."""
        from gui_r1_lite.training.callbacks import TrainingProgress

        name, s = f"{arm}_train", self.settings
        folder, announce = self.folder / name, self.announce(name, steps=steps)
        if steps == 0:
            return self._run(name, lambda: base_stage(s), announce, record=record)
        callbacks = [*self.callbacks, TrainingProgress(announce["stage"])]
        return self._run(name, lambda: train_stage(
            s, folder, method=method, start=start, train_file=self.data["train"], steps=steps, lr=lr,
            seed=self.seed, scheduler=scheduler, callbacks=callbacks, cpu_seconds=cpu_seconds), announce,
            fresh=True, record=record)

    def evaluate(self, arm: str, blind: bool = False) -> dict:
        """Score `arm` on the held-out rows; `blind`: with every screenshot white, into `<arm>_blind_eval`."""
        name, limit = f"{blind_arm(arm) if blind else arm}_eval", self.settings.eval_limit
        folder, policy = self.folder / name, self._policy(arm)
        rows = self.data.get("n_heldout")
        announce = self.announce(name, steps=min(rows, limit) if rows and limit else rows,
                                 count_lines=str(folder / "predictions.jsonl"))
        return self._run(name, lambda: evaluate_stage(
            self.settings, self.data["heldout"], folder, policy, f"{arm}-seed{self.seed}", blind), announce)

    def _policy(self, arm: str) -> tuple[str, str | None] | int:
        """A trained arm's `(model, adapter)`; the random baseline's seed."""
        return self.seed if arm == "random" else policy_of(self.settings, self.stages[f"{arm}_train"])

    def play(self, arm: str) -> dict:
        """`arm`'s closed-loop episodes in the live page."""
        name, s = f"{arm}_online", self.settings
        folder, policy = self.folder / name, self._policy(arm)
        announce = self.announce(name, steps=len(s.online_tasks) * s.online_episodes)
        return self._run(name, lambda: online_stage(s, folder, policy), announce)

    def sft_budget(self) -> dict:
        """The `sft` arm's steps and how they were reached: its budget is as many prompt visits as the
        `sft_grpo` arm ("visits"), or that arm's training-loop CPU seconds ("seconds": as many steps as fit
        at the warm start's measured speed, or, with no warm start to time, the SFT run itself stops when
        its CPU seconds reach the budget, `cpu_seconds`, `steps` being a bound); it trains `sft_extra_stop`
        of it. A "seconds" budget is kept in `SFT_BUDGET_FILE` when first resolved and read from there on a rerun."""
        s = self.settings
        if s.fair == "visits":
            budget = math.ceil(s.extra_prompts / s.sft_batch)
            return {"fair": "visits", "budget_steps": budget, "stop": s.sft_extra_stop, "steps": s.stopped(budget)}
        path = self.folder / SFT_BUDGET_FILE
        with contextlib.suppress(FileNotFoundError, ValueError):
            return read_json(path)
        warm, grpo = self.stages["warm_train"], self.stages["sft_grpo_train"]
        if not warm["steps"]:
            grpo_s = grpo.get("train_cpu_seconds") or grpo.get("train_runtime") or grpo["seconds"]
            clock = "cpu" if grpo.get("train_cpu_seconds") else "wall"
            # a bound far above what the seconds allow (an SFT step costs less than a GRPO step's sampling)
            bound = _SECONDS_BOUND * math.ceil(s.extra_prompts / s.sft_batch)
            record = {"fair": "seconds", "clock": clock, "grpo_seconds": grpo_s, "stop": s.sft_extra_stop,
                      "cpu_seconds": round(grpo_s * s.sft_extra_stop, 3), "budget_steps": None, "steps": bound}
            write_json_atomic(path, record)
            return record
        # CPU seconds when both stages have them (independent of what else ran beside them), else wall
        clock = "cpu" if warm.get("train_cpu_seconds") and grpo.get("train_cpu_seconds") else "wall"
        key = "train_cpu_seconds" if clock == "cpu" else "train_runtime"
        sft_step_s = (warm.get(key) or warm["seconds"]) / max(1, warm["steps"])
        grpo_s = grpo.get(key) or grpo["seconds"]
        budget = max(1, round(grpo_s / sft_step_s))
        record = {"fair": "seconds", "clock": clock, "grpo_seconds": grpo_s, "sft_step_seconds": round(sft_step_s, 4),
                  "budget_steps": budget, "stop": s.sft_extra_stop, "steps": s.stopped(budget)}
        write_json_atomic(path, record)
        return record

    def sft_steps(self) -> int:
        """The `sft` arm's steps."""
        return self.sft_budget()["steps"]

    def run(self) -> dict:
        """Every stage of the seed, in order; returns `summary()`."""
        s = self.settings
        with pinned_threads(s.threads) as runtime:
            self.runtime = runtime
            self.evaluate("random")
            self.evaluate("random", blind=True)
            warm = self.train(WARM, "sft", steps=s.warm_steps, lr=s.sft_lr, scheduler=s.warm_scheduler)
            start = policy_of(s, warm)  # both arms start from the warm start
            self.train("sft_grpo", "grpo", steps=s.grpo_steps, lr=s.grpo_lr, scheduler=s.extra_scheduler,
                       start=start)
            budget = self.sft_budget()
            self.train("sft", "sft", steps=budget["steps"], lr=s.sft_extra_lr, scheduler=s.extra_scheduler,
                       start=start, record={"budget": budget}, cpu_seconds=budget.get("cpu_seconds"))
            for arm in ("sft", "sft_grpo", WARM):
                self.evaluate(arm)
                self.evaluate(arm, blind=True)
            if s.online_episodes:
                for arm in s.online_arms:
                    self.play(arm)
        return self.summary()

    def summary(self) -> dict:
        """What the seed's stages recorded, and where each arm's training run, model and predictions are."""
        st, scored = self.stages, SCORED
        blind = [a for a in scored if f"{blind_arm(a)}_eval" in st]
        seconds = {"random": st["random_eval"]["seconds"], WARM: st["warm_train"]["seconds"],
                   **{a: st[f"{a}_train"]["seconds"] + st[f"{a}_eval"]["seconds"] for a in ("sft", "sft_grpo")},
                   "warm_eval": st["warm_eval"]["seconds"]}
        online = {name.removesuffix("_online"): {k: v for k, v in rec.items() if k != "skipped"}
                  for name, rec in st.items() if name.endswith("_online")}
        seconds.update({f"{a}_online": online[a]["seconds"] for a in online})
        seconds.update({f"{blind_arm(a)}_eval": st[f"{blind_arm(a)}_eval"]["seconds"] for a in blind})
        return {"metrics": {a: st[f"{a}_eval"]["metrics"] for a in scored},
                "blind_metrics": {a: st[f"{blind_arm(a)}_eval"]["metrics"] for a in blind},
                "per_task": {a: st[f"{a}_eval"]["per_task_click_accuracy"] for a in scored},
                "n_eval": st["sft_eval"]["n"],
                "compute": {a: {k: st[f"{a}_train"].get(k) for k in _COMPUTE
                                if (k != "completions" or a == "sft_grpo") and (k != "budget" or a == "sft")}
                            for a in TRAINED},
                "seconds": seconds,
                "online": online,
                "threads": self.runtime.get("threads"),
                "runs": {a: str(self.folder / f"{a}_train") for a in TRAINED},
                "models": {a: policy_of(self.settings, st[f"{a}_train"]) for a in TRAINED},
                "predictions": {**{a: str(self.folder / f"{a}_eval") for a in scored},
                                **{blind_arm(a): str(self.folder / f"{blind_arm(a)}_eval") for a in blind}},
                "online_runs": {a: str(self.folder / f"{a}_online") for a in online},
                "skipped": sorted(k for k, v in st.items() if v.get("skipped"))}

    def finished(self) -> bool:
        """Whether every stage of the seed has its record."""
        return all((self.folder / name / STAGE_FILE).exists() for name in stage_names(self.settings))

    def unfinished(self) -> str:
        """The first stage of the seed without its record ("" when all have one)."""
        return next((n for n in stage_names(self.settings) if not (self.folder / n / STAGE_FILE).exists()), "")


def run_seed(out_dir: Path, seed: int, settings: MiniatureSettings, data: dict, progress: bool = False,
             callbacks: Sequence = (), place: tuple[int, int] = (0, 1)) -> dict:
    """Every stage of one seed (`SeedRun`); `data` is `prepare_data`'s output."""
    return SeedRun(Path(out_dir), seed, settings, data, progress, callbacks, place).run()


def seed_job(out_dir: str, seed: int, settings: MiniatureSettings, data: dict, progress: bool,
             place: tuple[int, int]) -> dict:
    """`run_seed` in a job process; an error names the seed and the stage it stopped in."""
    run = SeedRun(Path(out_dir), seed, settings, data, progress, (), place)
    try:
        return run.run()
    except Exception as exc:
        log = f" (its log: {run.folder / run.current / 'log.txt'})" if run.current else ""
        raise RunFailed(f"seed {seed} · {run.current or 'setup'}: {type(exc).__name__}: {exc}{log}") from exc


def run_record(settings: MiniatureSettings, train_data: str | os.PathLike, heldout_data: str | os.PathLike,
               validate: bool) -> dict:
    """What makes a run folder's stages: the settings, the data files (by path, and by content under
    `sources`) and the base model (a folder by a hash of its weight and configuration files), so that a base
    pretrained again into the same folder, or data written anew, is another run and not the cached one."""
    sources = {}
    for name, path in (("train_data", train_data), ("heldout_data", heldout_data)):
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: the miniature's {name.replace('_', ' ')} is not there")
        sources[name] = digest(path, cheap=True)
    if settings.base_model:
        sources["base_model"] = source_identity(settings.base_path)
    return as_stored({"settings": settings.to_dict(), "train_data": str(train_data),
                      "heldout_data": str(heldout_data), "validate": validate, "sources": sources})


def check_same_settings(out: Path, wanted: dict) -> None:
    """Stages cached under `out` are reused only by a run with the same settings."""
    path = out / SETTINGS_FILE
    if not path.exists():
        write_json_atomic(path, wanted)
    elif (held := read_json(path)) != wanted:
        raise UsageError(f"{out} holds a run with other settings ({path}: {'; '.join(_differences(held, wanted))}); "
                         "use another out_dir or delete it")


def _differences(held: dict, wanted: dict) -> list[str]:
    """What differs between two run records, the settings and the sources one by one."""
    nested = ("settings", "sources")
    rest = [{k: v for k, v in r.items() if k not in nested} for r in (held, wanted)]
    return differences(*rest) + [d for key in nested for d in differences(
        held.get(key) or {}, wanted.get(key) or {}, prefix=f"{key}.")]



def online_missing() -> str | None:
    """Why closed-loop episodes cannot be played here (Playwright, Chromium or miniwob missing), or None."""
    import importlib.util

    from ..online.browser import CaptureDependencyError, require_playwright

    for module in ("harness.online", "miniwob"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"the Python package {module} is missing"
        except (ImportError, ValueError):
            return f"the Python package {module} is missing"
    try:
        require_playwright()
    except CaptureDependencyError as exc:
        return str(exc)
    return None


def _run_seeds(out: Path, seeds: list[int], settings: MiniatureSettings, data: dict, *, progress: bool,
               callbacks: Sequence, workers: int, watch: Callable[[], None] | None) -> dict[int, dict]:
    """Every seed's summary: seeds with stages left to run in `workers` job processes, the others here."""
    places = {seed: (i, len(seeds)) for i, seed in enumerate(seeds)}
    runs = {seed: SeedRun(out, seed, settings, data, progress, callbacks, places[seed]) for seed in seeds}
    todo = [seed for seed in seeds if not runs[seed].finished()]
    done: dict[int, dict] = {}
    if workers > 1 and len(todo) > 1:
        jobs = {seed: (str(out), seed, settings, data, progress, places[seed]) for seed in todo}
        done = run_parallel(seed_job, jobs, workers=min(workers, len(todo)), threads=settings.threads, watch=watch,
                            name=lambda seed: f"seed {seed} · {runs[seed].unfinished() or 'setup'}")
    return {seed: done[seed] if seed in done else runs[seed].run() for seed in seeds}


def _add_online_success(result: dict) -> None:
    """Each arm's closed-loop success over the seeds that played it, beside `result["online"]`."""
    online = result.get("online") or {}
    played = [v for v in online.values() if v]
    if not played:
        return
    arms = [a for a in played[0] if all(a in v for v in played)]
    result["online_success"] = {a: aggregate([v[a]["success"] for v in played]) for a in arms}


def run_miniature(out_dir: str | os.PathLike, seeds: Sequence[int] = (0, 1, 2), *,
                  train_data: str | os.PathLike = DEFAULT_TRAIN, heldout_data: str | os.PathLike = DEFAULT_HELDOUT,
                  settings: MiniatureSettings | None = None, validate: bool = False, progress: bool = False,
                  callbacks: Sequence = (), workers: int | None = None, watch: Callable[[], None] | None = None,
                  **overrides: Any) -> dict:
    """Run the miniature (every arm for every seed) and write `out_dir/miniature.json`; returns it.

    Finished stages in `out_dir` are skipped on a rerun with the same settings, so a longer `seeds`
    list reuses the seeds already run. `overrides` replace fields of `settings`; `validate` scores on
    the validation seeds of `train_data`; `progress` shows training logs instead of writing them to
    each stage's `log.txt`. `workers` seeds run side by side, a process each (default: one per
    `threads` cores), which changes no figure; `callbacks` (TrainerCallbacks) live in this process, so
    they need `workers=1`; `watch` is called every few seconds in this process meanwhile."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    settings = MiniatureSettings.from_overrides(settings, **overrides).validate()
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise UsageError("seeds is empty")
    missing = online_missing() if settings.online_episodes else None
    if missing:
        raise UsageError(f"online_episodes > 0 needs the live MiniWoB++ page, but {missing}; "
                         "set online_episodes=0 to score offline only")
    workers = default_workers(settings.threads, len(seeds)) if workers is None else max(1, int(workers))
    if callbacks and workers > 1:
        raise UsageError("callbacks (TrainerCallbacks) run in this process only: pass workers=1, or follow the "
                         "seeds run side by side with watch=")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_same_settings(out, run_record(settings, train_data, heldout_data, validate))
    t0 = time.perf_counter()
    data = prepared_data(out, train_data, heldout_data, settings, validate)
    per_seed = _run_seeds(out, seeds, settings, data, progress=progress, callbacks=callbacks, workers=workers,
                          watch=watch)
    result = combine_seeds(per_seed)
    _add_online_success(result)
    result.update({"data": data, "wall_seconds_this_call": round(time.perf_counter() - t0, 2),
                   "workers": workers, "threads": settings.threads, "settings": settings.to_dict()})
    write_json_atomic(out / RESULT_FILE, result)
    return result
