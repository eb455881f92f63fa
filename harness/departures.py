"""Where the CPU miniature and the GPU recipe depart from GUI-R1's own GRPO run, and why: one table
built from the settings objects (`miniature.MiniatureSettings`, the recipe read by `TrainConfig`), so
that it changes when a setting does and can never disagree with what runs (notebook 04, README)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_r1_lite.geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS
from gui_r1_lite.tiny import QWEN_FIRST_SPECIAL_ID, SPECIAL_TOKENS

_REPO = Path(__file__).resolve().parents[1]
#: The GPU recipe's SFT counterpart (the baseline arm): what its targets write inside <think>.
SFT_RECIPE_NAME = "sft_qwen2_5_vl_3b_qlora.yaml"
#: Where the shipped studies' result files lie (one folder a study, each with its study.json).
RESULTS = _REPO / "docs" / "results"

#: GUI-R1's GRPO run as released (EasyR1/verl on 8 GPUs): the few values the table needs, each with
#: where it is written (the release's `examples/config.yaml` and `examples/qwen2_5_vl_3b_gui_grpo.sh`, EasyR1's
#: defaults where the release sets nothing; the reward as the release's code scores it, which
#: `rewards.py` reproduces in `compat="official"`; the pixel bounds also in `geometry.GUI_R1_*_PIXELS`).
ORIGINAL: dict[str, tuple[Any, str]] = {
    "model": ("Qwen/Qwen2.5-VL-3B-Instruct", "qwen2_5_vl_3b_gui_grpo.sh: MODEL_PATH"),
    "pretraining": ("Qwen's, as released", "qwen2_5_vl_3b_gui_grpo.sh: the released Qwen2.5-VL-3B-Instruct"),
    "tokenizer": (f"Qwen2.5-VL's, {QWEN_FIRST_SPECIAL_ID + len(SPECIAL_TOKENS):,} tokens",
                  "the model's own: 151,643 BPE entries and 22 added tokens (tiny.SPECIAL_TOKENS)"),
    "fine_tuning": ("full (vision tower too)", "config.yaml: no adapter, freeze_vision_tower: false"),
    "quantization": ("none", "config.yaml: bf16 weights under FSDP"),
    "warm_start": ("none", "qwen2_5_vl_3b_gui_grpo.sh: GRPO from MODEL_PATH itself, no SFT stage"),
    "think": ("no SFT (GRPO only)", "the release trains GRPO alone; the prompt asks for the thinking in <think>"),
    "reward": ("0.2 format + 0.8 accuracy", "worker.reward.compute_score=r1gui: 0.8 x accuracy + 0.2 x format, "
                                            "each 0 or 1"),
    "beta": (0.01, "config.yaml: use_kl_loss, kl_penalty low_var_kl (k3), kl_coef 1.0e-2"),
    "kl_times_ratio": (False, "verl adds kl_coef x k3 to the loss, not multiplied by the ratio"),
    "num_generations": (5, "config.yaml: worker.rollout.n"),
    "prompts_per_update": (128, "config.yaml: worker.actor.global_batch_size (rollouts of 512 prompts)"),
    "updates_per_rollout": (4, "config.yaml: data.rollout_batch_size 512 in updates of worker.actor.global_batch_size "
                               "128, each once (EasyR1's ppo_epochs default 1)"),
    "loss_type": ("dapo", "verl's actor: the mean over every answer token of an update's batch (token mean), "
                          "as TRL's dapo"),
    "learning_rate": (1e-6, "config.yaml: worker.actor.optim.lr"),
    "weight_decay": (0.01, "config.yaml: worker.actor.optim.weight_decay 1.0e-2 (AdamW)"),
    "temperature": (1.0, "config.yaml: worker.rollout.temperature"),
    "max_completion_length": (1024, "qwen2_5_vl_3b_gui_grpo.sh: data.max_response_length"),
    "pixels": ((GUI_R1_MIN_PIXELS, GUI_R1_MAX_PIXELS), "config.yaml min_pixels, the script's max_pixels"),
    "training_rows": ("GUI-R1-3K (ritzzai/GUI-R1)", "qwen2_5_vl_3b_gui_grpo.sh: data.train_files (train.parquet, "
                                                   "3,570 rows, as the authors selected them)"),
    "steps": ("15 epochs of GUI-R1-3K (3,570 rows)", "config.yaml: trainer.total_episodes"),
    "study": ("-", "no study of this kind"),
}

#: Why the GPU recipe departs from the original where it does (the recipe file's comments, in short); "GPU and
#: CPU" where the miniature does the same. `{...}` is filled in from the recipe (`_context`).
RECIPE_WHY: dict[str, str] = {
    "model": "",
    "fine_tuning": "full fine-tuning of 3B needs several GPUs (weights, gradients, AdamW states); LoRA fits one",
    "quantization": "NF4 base weights (QLoRA) leave room for a group of 1,024-token answers on one 16-24 GB GPU",
    "think": "an SFT target is the ground-truth answer with an empty `<think></think>` (training.trainer."
             "sft_completion; the data holds no reasoning to copy): SFT teaches the format and the action, no "
             "reasoning; GRPO may think but is rewarded for format and action only (not measured)",
    "kl_times_ratio": "TRL 1.16's default (use_bias_correction_kl): same value on-policy, another KL gradient",
    "prompts_per_update": "one GPU generates one group per micro-batch: 128 prompts would be 128 rounds an update",
    "updates_per_rollout": "TRL's default, kept (num_iterations {num_iterations}, a new generation for every "
                           "update): on-policy, the ratio is identically 1 and the clip (epsilon {epsilon:g}) never "
                           "acts, each update is the plain policy gradient (grpo_step.py); the original's rollout of "
                           "512 prompts feeds 4 updates of 128, so from its second update the ratio departs from 1 "
                           "and the clip acts (effect not measured)",
    "learning_rate": "a rank-16 LoRA starts at zero and needs a larger step than full fine-tuning to move",
    "weight_decay": "TRL's default, left unset (not measured); AdamW's decay shrinks every trained weight by "
                    "learning rate x decay a step: {original_shrink:g} at the original's values",
    "steps": "sized to a Colab session of a few hours (an estimate until measured)",
}

#: Why the miniature departs from the recipe where the settings module gives no reason of its own.
MINIATURE_WHY: dict[str, str] = {
    "model": "a 3B model does not train on a CPU in minutes; the stand-in is the 3B's configuration, sizes "
             "scaled (tiny.py)",
    "tokenizer": "the stand-in is built without a download (tiny.py): a byte-level BPE trained on this project's "
                 "prompts, with Qwen's pre-tokeniser, special tokens and chat template (Qwen's {qwen_rows:,}-row "
                 "embedding would hold {qwen_weights:,} weights at the stand-in's width {hidden}); every length in "
                 "tokens (answer length) counts the stand-in's tokens, not Qwen's",
    "fine_tuning": "a model this small needs no adapter: it trains in full in seconds (not measured against "
                   "LoRA){vision}",
    "quantization": "no reason to quantise a model this small (and full fine-tuning cannot train 4-bit weights)",
    "pixels": "at most {tokens} image tokens a screenshot, so that a CPU step takes seconds",
    "study": "the CPU column is the miniature's defaults (make run, notebook 04); `python -m study` runs them "
             "with closed-loop episodes (online_episodes), an SFT arm matched on seconds beside the one matched "
             "on visits and a secondary run on every task (unless --no-all-tasks), and a shipped study with the "
             "settings listed, read from the study's result files (docs/results/study*/: study.json and each "
             "part's miniature.json): its figures hold for those",
}

#: The miniature's settings field that gives a row's reason, where the row's key is not the field's name.
FIELDS: dict[str, str] = {"learning_rate": "grpo_lr", "prompts_per_update": "grpo_prompts_per_step",
                          "steps": "extra_prompts", "pretraining": "base_model", "warm_start": "warm_steps",
                          "training_rows": "tasks"}

ROWS: tuple[tuple[str, str], ...] = (
    ("model", "model"), ("pretraining", "what the start was pretrained on"), ("tokenizer", "tokenizer"),
    ("fine_tuning", "LoRA or full fine-tuning"), ("quantization", "4-bit"), ("warm_start", "SFT warm start"),
    ("think", "inside `<think>` of the SFT targets"), ("reward", "reward"),
    ("beta", "KL beta"), ("kl_times_ratio", "KL term x ratio"), ("num_generations", "answers a group (G)"),
    ("prompts_per_update", "prompts an update"), ("updates_per_rollout", "updates a rollout (clip active?)"),
    ("loss_type", "loss_type"), ("learning_rate", "learning rate"), ("weight_decay", "weight decay"),
    ("temperature", "temperature"), ("max_completion_length", "answer length (tokens)"),
    ("pixels", "pixels (min-max)"), ("training_rows", "training rows"), ("steps", "steps"),
    ("study", "a study's settings"))


@dataclass(frozen=True)
class Departure:
    """One row: a setting in the CPU miniature, the GPU recipe and the original, and why they differ."""

    key: str
    setting: str
    miniature: Any
    recipe: Any
    original: Any
    why: str

    @property
    def differs(self) -> bool:
        return not (self.miniature == self.recipe == self.original)


def columns(cfg, steps: str | None = None) -> dict[str, Any]:
    """The table's values of one GRPO run's `training.TrainConfig`, read as the run reads them."""
    if cfg.lora:
        tuning = f"LoRA r {cfg.lora_r}, alpha {cfg.lora_alpha}{', vision too' if cfg.train_vision else ''}"
    else:
        tuning = f"full{' (vision tower too)' if cfg.train_vision else ' (vision tower frozen)'}"
    beta = cfg.get("beta")
    return {
        "model": cfg.model, "pretraining": "Qwen's, as released" if _is_qwen(cfg.model) else cfg.model,
        "tokenizer": tokenizer_of(cfg.model, cfg.tiny), "fine_tuning": tuning,
        "quantization": {"4bit": "NF4 (4-bit)", "8bit": "int8"}.get(cfg.quantization, "none"),
        "warm_start": "none" if cfg.init_adapter is None else f"the adapter {cfg.init_adapter}",
        "reward": reward_text(cfg.rewards, cfg.compat),
        "beta": beta, "kl_times_ratio": bool(cfg.get("use_bias_correction_kl")) if beta else "- (no KL)",
        "num_generations": cfg.get("num_generations"),
        "prompts_per_update": cfg.get("per_device_train_batch_size") * cfg.get("gradient_accumulation_steps")
        // cfg.get("num_generations"),
        "updates_per_rollout": updates_per_rollout(cfg),
        "loss_type": cfg.get("loss_type"), "learning_rate": cfg.get("learning_rate"),
        "weight_decay": cfg.get("weight_decay"),
        "temperature": cfg.get("temperature"), "max_completion_length": cfg.get("max_completion_length"),
        "pixels": (cfg.min_pixels, cfg.max_pixels), "training_rows": _rows_of(cfg.train_data),
        "steps": steps or f"{cfg.get('max_steps')} updates", "study": "-"}


def _is_qwen(model: str) -> bool:
    from gui_r1_lite.tiny import REAL_MODEL_ID

    return model == REAL_MODEL_ID


def _rows_of(train_data: str) -> str:
    from gui_r1_lite.profiles import PROFILES

    return f"GUI-R1-3K ({train_data})" if train_data == PROFILES["gpu-3b"].train_data else train_data


def tokenizer_of(model: str, tiny: dict | None = None) -> str:
    """The tokenizer of `model` as the table names it: Qwen's, or the stand-in's own BPE (its size read from a
    local model folder's config.json, else what `tiny.build_tiny_model` builds with `tiny`)."""
    import json

    from gui_r1_lite.tiny import build_arguments

    if _is_qwen(model):
        return f"Qwen2.5-VL's, {QWEN_FIRST_SPECIAL_ID + len(SPECIAL_TOKENS):,} tokens"
    config = Path(model) / "config.json"
    if config.is_file():
        size = json.loads(config.read_text())["text_config"]["vocab_size"]
    else:
        size = build_arguments(0, **(tiny or {}))["vocab_size"] + len(SPECIAL_TOKENS)
    return f"its own byte-level BPE, {size:,} tokens"


def reward_text(rewards: dict[str, float], compat: str) -> str:
    """The rewards a GRPO run learns from, as a sum: the GUI-R1 reward written out as its two parts."""
    from gui_r1_lite.rewards import ACCURACY_WEIGHT, FORMAT_WEIGHT

    def term(name: str, weight: float) -> str:
        text = f"{FORMAT_WEIGHT:g} format + {ACCURACY_WEIGHT:g} accuracy" if name == "gui_r1" else name
        return text if weight == 1 else f"{weight:g} x ({text})" if name == "gui_r1" else f"{weight:g} x {text}"

    text = " + ".join(term(n, w) for n, w in rewards.items())
    return text if compat == "official" else f"{text} ({compat} rules)"


def updates_per_rollout(cfg) -> int | float:
    """Optimiser updates that one generation round feeds in TRL: `num_iterations` x the generation's
    accumulation steps (`steps_per_generation`, or `generation_batch_size` on one process) / the update's."""
    accumulation = cfg.get("gradient_accumulation_steps")
    per_generation = cfg.get("steps_per_generation")
    if per_generation is None:
        batch = cfg.get("generation_batch_size")
        per_generation = batch // cfg.get("per_device_train_batch_size") if batch else accumulation
    updates = cfg.get("num_iterations") * per_generation / accumulation
    return int(updates) if float(updates).is_integer() else updates


def think_of(thinking: str) -> str:
    """What SFT targets write inside <think> (`TrainConfig.sft_thinking`), as the table shows it."""
    return "`<think></think>` (empty)" if not thinking else f"`<think>{thinking}</think>`"


def miniature_config(settings, method: str = "grpo"):
    """The `TrainConfig` of the miniature's GRPO stage (or its SFT arm's, `method="sft"`) under `settings`
    (`miniature.stages.train_config`)."""
    from gui_r1_lite.training import TrainConfig

    from .miniature.stages import train_config

    if method == "grpo":
        steps, lr = settings.grpo_steps, settings.grpo_lr
    else:
        steps, lr = settings.stopped(max(1, settings.extra_prompts // settings.sft_batch)), settings.sft_extra_lr
    values = train_config(settings, Path("runs/miniature"), method=method, start=None, train_file="-",
                          steps=steps, lr=lr, seed=0, scheduler=settings.extra_scheduler)
    return TrainConfig.from_dict(values, source="miniature settings")


def miniature_why(settings, key: str) -> str:
    """The miniature's reason for its value of `key`: the settings module's own (fixed before any run, or
    chosen by the validation sweep), else `MINIATURE_WHY`."""
    from gui_r1_lite.reference import qwen2_5_vl_3b_config

    from .miniature.settings import FIXED_A_PRIORI, RECIPE_PROBE, SWEEP_GRID

    field = FIELDS.get(key, key)
    swept = {k: v for grid in SWEEP_GRID.values() for k, v in grid.items()}
    if field in swept:
        return f"chosen by the validation sweep among {list(swept[field])}"
    if field in RECIPE_PROBE:
        probe = RECIPE_PROBE[field]
        if probe["together"] is not None:
            both = " and ".join(f"{k} {p['value']}" for k, p in RECIPE_PROBE.items() if p["together"] is not None)
            verdict = f"better alone, but {both} together scored {probe['together']:.1%}"
        else:
            verdict = "it scored lower" if probe["recipe"] < probe["miniature"] else "within two rows a seed"
        return (f"measured on validation by the recipe probe (docs/results/recipe_probe.json): the recipe's "
                f"{probe['value']} scored {probe['recipe']:.1%} against {probe['miniature']:.1%}, at "
                f"x{probe['cpu_seconds_ratio']:.2f} the training CPU seconds; kept: {verdict}")
    if field in FIXED_A_PRIORI:
        return f"fixed before any run, not measured: {FIXED_A_PRIORI[field]}"
    qwen_rows = qwen2_5_vl_3b_config()["vocab_size"]
    hidden = settings.tiny.get("hidden_size", 0)
    vision = "" if settings.train_vision else f"; train_vision {FIXED_A_PRIORI['train_vision']}"
    return MINIATURE_WHY.get(key, "").format(tokens=settings.max_pixels // (28 * 28), qwen_rows=qwen_rows,
                                             hidden=hidden, qwen_weights=qwen_rows * hidden, vision=vision)


def departures(settings=None, recipe: str | Path | None = None, sft_recipe: str | Path | None = None,
               results: str | Path = RESULTS) -> list[Departure]:
    """The table: `settings` (default: the miniature's defaults) against the GPU recipe (default: the
    3B QLoRA recipe, its SFT baseline for what SFT targets write) against `ORIGINAL`, with why for each
    value that differs; the studies shipped under `results` give the study row."""
    from gui_r1_lite.grpo_step import RECIPE
    from gui_r1_lite.training import TrainConfig

    from .miniature.settings import MiniatureSettings

    settings = settings or MiniatureSettings()
    mini, default = (_miniature_columns(s) for s in (settings, MiniatureSettings()))
    mini["study"] = default["study"] = study_settings(results)
    recipe_cfg = TrainConfig.from_yaml(recipe or RECIPE)
    gpu = columns(recipe_cfg)
    gpu["think"] = think_of(TrainConfig.from_yaml(sft_recipe or RECIPE.with_name(SFT_RECIPE_NAME)).sft_thinking)
    context = _context(recipe_cfg)
    notes = _notes(settings, mini, gpu, results)
    rows = []
    for key, label in ROWS:
        original = ORIGINAL[key][0]
        reasons = []
        who = "GPU and CPU" if mini[key] == gpu[key] else "GPU"
        if key == "updates_per_rollout" and gpu[key] != 1:
            reasons.append(f"{who}: {gpu[key]} updates a generation (num_iterations {context['num_iterations']}): "
                           f"from the second the ratio departs from 1 and the clip acts")
        elif gpu[key] != original and RECIPE_WHY.get(key):
            reasons.append(f"{who}: {RECIPE_WHY[key].format(**context)}")
        if key == "kl_times_ratio" and not mini["beta"]:
            reasons.append("CPU: no KL term at beta 0 (see KL beta)")
        elif (mini[key] != gpu[key] and mini[key] != original) or _swept(key):  # a swept value: even where all agree
            why = miniature_why(settings, key) if mini[key] == default[key] else \
                f"set for this run (the miniature's default: {default[key]})"
            reasons.append(f"CPU: {why or 'not measured'}")
        if notes.get(key):
            reasons.append(notes[key])
        rows.append(Departure(key, label, mini[key], gpu[key], original, "; ".join(reasons)))
    return rows


def _swept(key: str) -> bool:
    """Whether the validation sweep chose the miniature's value of `key` (`settings.SWEEP_GRID`)."""
    from .miniature.settings import SWEEP_GRID

    return any(FIELDS.get(key, key) in grid for grid in SWEEP_GRID.values())


def _context(recipe_cfg) -> dict[str, Any]:
    """The values `RECIPE_WHY`'s texts quote."""
    return {"num_iterations": recipe_cfg.get("num_iterations"), "epsilon": recipe_cfg.get("epsilon"),
            "original_shrink": ORIGINAL["learning_rate"][0] * ORIGINAL["weight_decay"][0]}


def _notes(settings, mini: dict[str, Any], gpu: dict[str, Any], results: str | Path) -> dict[str, str]:
    """What a row says whether or not its columns differ: where all three agree but the paper or the data do
    not, or where the agreement itself needs saying."""
    from gui_r1_lite.profiles import PROFILES
    from gui_r1_lite.training.trainer import sft_completion

    who = "all three score" if mini["reward"] == gpu["reward"] == ORIGINAL["reward"][0] else "GUI-R1 scores"
    notes = {"reward": f"{who} as the original's code (compat official: the 240 scored cases of the "
                       "original match); the paper writes the accuracy reward as R_act + R_point + R_text, a sum of "
                       "three 0/1 parts, where the code gives one 0/1 accuracy: 0 unless the action matches, then "
                       "1 if the point lies in the box (click) or the text F1 is at least 0.5 (type, select, "
                       "scroll), and 1 for any other action (effect of the difference not measured)"}
    if not settings.warm_steps:
        notes["warm_start"] = (f"CPU: no warm start: both arms (SFT and GRPO) start from the base "
                               f"({settings.base_model or 'a new stand-in'}) itself, as GUI-R1's GRPO starts from "
                               f"Qwen2.5-VL-3B-Instruct")
    import inspect

    unsaid = inspect.signature(sft_completion).parameters["thinking"].default  # grounding/loop.py says none
    if settings.base_model and mini["think"] == think_of(unsaid):
        notes["think"] = (f"CPU: the base was pretrained on the same targets (grounding/loop.py), and answers of "
                          f"{settings.max_completion_length} tokens leave no room to reason")
    profile = PROFILES["gpu-3b"]
    notes["training_rows"] = (
        f"notebook 01's curation (validity, deduplication, at most {profile.balance_per_group:,} rows a platform "
        f"and action, a difficulty band {profile.difficulty_band} of the policy's success rate over "
        f"{profile.difficulty_k} "
        f"answers, on gpu-3b) is this project's own design, not the paper's procedure: GUI-R1-3K is released "
        f"already selected; notebook 04 trains on notebook 01's file where the main job made one")
    same = generated_study_pages(settings, results)
    if same:
        notes["pretraining"] = (f"the generated-pages study ({same['folder']}) draws its pages as a stage of "
                                f"the base's pretraining drew them ({same['pages']}): it trains and tests on "
                                f"the base's own pretraining distribution")
    return notes


def generated_study_pages(settings, results: str | Path = RESULTS) -> dict[str, str] | None:
    """A shipped study's data report whose pages are drawn as one of the stages `settings`' base was
    pretrained on drew them (grounding/base/pretrain_report.json: its last stage, or any run of its
    lineage), or None."""
    import json

    if not settings.base_path:
        return None
    report = Path(settings.base_path) / "pretrain_report.json"
    if not report.is_file():
        return None
    pretrained = json.loads(report.read_text())
    stages = [*pretrained["stages"], *(st for run in pretrained.get("runs", {}).values() for st in run["stages"])]
    for data in sorted(Path(results).glob("study*/data_report.json")):
        pages = json.loads(data.read_text())["pages"]
        if any(all(stage.get(k) == v for k, v in pages.items()) for stage in stages):
            kinds = "/".join(pages["kinds"])
            shown = (f"{pages['width']}x{pages['height']} px, {pages['grid']}x{pages['grid']} grid, "
                     f"{pages['min_elements']}-{pages['max_elements']} shapes told apart by {kinds}")
            folder = data.parent.relative_to(_REPO) if data.parent.is_relative_to(_REPO) else data.parent
            return {"folder": str(folder), "pages": shown}
    return None


def study_settings(results: str | Path = RESULTS) -> str:
    """The settings each shipped study ran with that are not the miniature's defaults: for each study folder
    under `results`, its parts' settings (each part's miniature.json) against `MiniatureSettings()`."""
    import json

    from .miniature.runner import RESULT_FILE
    from .miniature.settings import DEFAULT_HELDOUT, DEFAULT_TRAIN, MiniatureSettings

    default = MiniatureSettings().to_dict()
    data_files = {"train_data": DEFAULT_TRAIN, "heldout_data": DEFAULT_HELDOUT}  # listed only when others
    shown = []
    for path in sorted(Path(results).glob("study*/study.json")):
        study = json.loads(path.read_text())
        parts = {}
        for name, part in study["parts"].items():
            ran = json.loads((path.parent / name / RESULT_FILE).read_text())["settings"]
            data = {k: v for k, v in part["settings"].items()
                    if k in data_files and v and (_REPO / v).resolve() != data_files[k].resolve()}
            parts[name] = {**data, **{k: v for k, v in ran.items() if _plain(default.get(k)) != _plain(v)}}
        common = {k: v for k, v in next(iter(parts.values()), {}).items()
                  if all(p.get(k, object()) == v for p in parts.values())}
        own = [f"{name} part: {_settings_text({k: v for k, v in p.items() if k not in common})}"
               for name, p in parts.items() if set(p) - set(common)]
        skipped = "; no run on every task" if study.get("all_tasks_skipped") else ""
        shown.append(f"{path.parent.name} (seeds {_seeds_text(study['seeds'])}, parts {', '.join(parts)}{skipped}): "
                     + "; ".join([_settings_text(common) or "the defaults", *own]))
    return " / ".join(shown) or "no study shipped"


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _settings_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items())


def _seeds_text(seeds: list[int]) -> str:
    return f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))


def _miniature_columns(settings) -> dict[str, Any]:
    from gui_r1_lite.tiny import build_arguments

    steps = f"{settings.grpo_steps} GRPO updates"
    if settings.warm_steps:
        steps = f"{settings.warm_steps} SFT warm-start steps, then {steps}"
    mini = columns(miniature_config(settings), steps=steps)
    size = build_arguments(0, **settings.tiny)
    mini["model"] = (f"stand-in (text {size['hidden_size']} x {size['num_layers']} layers, "
                     f"vision {size['vision_hidden']} x {size['vision_depth']})")
    mini["pretraining"] = _pretraining(settings)
    mini["tokenizer"] = tokenizer_of(settings.base_path or "tiny", settings.tiny)
    mini["warm_start"] = f"{settings.warm_steps} SFT steps at {settings.sft_lr:g}" if settings.warm_steps else "none"
    mini["think"] = think_of(miniature_config(settings, method="sft").sft_thinking)
    from .miniature.settings import ALL_TASKS

    tasks = settings.tasks if settings.tasks is not None else ALL_TASKS
    lo, hi = settings.train_seeds
    mini["training_rows"] = f"MiniWoB++ captures (data_samples), {len(tasks)} tasks, seeds {lo}-{hi}"
    return mini


def _pretraining(settings) -> str:
    """The base the miniature starts from and what it was pretrained on (its pretrain_report.json)."""
    import json

    if not settings.base_model:
        return "none (random weights)"
    report = Path(settings.base_path) / "pretrain_report.json"
    if not report.is_file():
        return settings.base_model
    done = json.loads(report.read_text())
    return (f"{settings.base_model}: {done['steps']:,} SFT steps on {done['train_rows']:,} generated pages, "
            f"never MiniWoB++")


def departures_markdown(rows: list[Departure]) -> str:
    """The table as Markdown (notebook 04, README)."""
    def cell(v: Any) -> str:
        if isinstance(v, tuple):
            return " - ".join(f"{x:,}" for x in v)
        if isinstance(v, float):
            return f"{v:g}"
        return str(v)

    lines = ["| setting | CPU miniature | GPU recipe | GUI-R1 | why |", "|---|---|---|---|---|"]
    lines += [f"| {r.setting} | {cell(r.miniature)} | {cell(r.recipe)} | {cell(r.original)} | {r.why} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.departures > docs/results/departures.md`: the table for today's settings (no flags)."""
    import argparse

    argparse.ArgumentParser(prog="python -m harness.departures", description=main.__doc__).parse_args(argv)
    print("<!-- written by python -m harness.departures (tests/test_departures.py keeps it current) -->")
    print(departures_markdown(departures()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
