"""Where the CPU miniature and the GPU recipe depart from GUI-R1's own GRPO run, and why: one table
built from the settings objects (`miniature.MiniatureSettings`, the recipe read by `TrainConfig`), so
that it changes when a setting does and can never disagree with what runs (notebook 04, README)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_r1_lite.geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS

#: GUI-R1's GRPO run as released (EasyR1/verl on 8 GPUs): the few values the table needs, each with
#: where it is written (the release's `examples/config.yaml` and `examples/qwen2_5_vl_3b_gui_grpo.sh`;
#: the pixel bounds also in /work/shared/spec/gui_r1_semantics.md section 2, `geometry.GUI_R1_*_PIXELS`).
ORIGINAL: dict[str, tuple[Any, str]] = {
    "model": ("Qwen/Qwen2.5-VL-3B-Instruct", "qwen2_5_vl_3b_gui_grpo.sh: MODEL_PATH"),
    "fine_tuning": ("full (vision tower too)", "config.yaml: no adapter, freeze_vision_tower: false"),
    "quantization": ("none", "config.yaml: bf16 weights under FSDP"),
    "beta": (0.01, "config.yaml: use_kl_loss, kl_penalty low_var_kl (k3), kl_coef 1.0e-2"),
    "kl_times_ratio": (False, "verl adds kl_coef x k3 to the loss, not multiplied by the ratio"),
    "num_generations": (5, "config.yaml: worker.rollout.n"),
    "prompts_per_update": (128, "config.yaml: worker.actor.global_batch_size (rollouts of 512 prompts)"),
    "loss_type": ("dapo", "verl's actor: the mean over every answer token of an update's batch (token mean), "
                          "as TRL's dapo"),
    "learning_rate": (1e-6, "config.yaml: worker.actor.optim.lr"),
    "temperature": (1.0, "config.yaml: worker.rollout.temperature"),
    "max_completion_length": (1024, "qwen2_5_vl_3b_gui_grpo.sh: data.max_response_length"),
    "pixels": ((GUI_R1_MIN_PIXELS, GUI_R1_MAX_PIXELS), "config.yaml min_pixels, the script's max_pixels"),
    "steps": ("15 epochs of GUI-R1-3K (3,570 rows)", "config.yaml: trainer.total_episodes"),
}

#: Why the GPU recipe departs from the original where it does (the recipe file's comments, in short).
RECIPE_WHY: dict[str, str] = {
    "model": "",
    "fine_tuning": "full fine-tuning of 3B needs several GPUs (weights, gradients, AdamW states); LoRA fits one",
    "quantization": "NF4 base weights (QLoRA) leave room for a group of 1,024-token answers on one 16-24 GB GPU",
    "kl_times_ratio": "TRL 1.16's default (use_bias_correction_kl): same value on-policy, another KL gradient",
    "prompts_per_update": "one GPU generates one group per micro-batch: 128 prompts would be 128 rounds an update",
    "learning_rate": "a rank-16 LoRA starts at zero and needs a larger step than full fine-tuning to move",
    "steps": "sized to a Colab session of a few hours (an estimate until measured)",
}

#: Why the miniature departs from the recipe where the settings module gives no reason of its own.
MINIATURE_WHY: dict[str, str] = {
    "model": "a 3B model does not train on a CPU in minutes; the stand-in is the 3B's configuration, sizes "
             "scaled (tiny.py)",
    "fine_tuning": "a model this small trains every weight in seconds (not measured against LoRA)",
    "quantization": "no reason to quantise a model this small (and full fine-tuning cannot train 4-bit weights)",
    "pixels": "at most {tokens} image tokens a screenshot, so that a CPU step takes seconds",
}

ROWS: tuple[tuple[str, str], ...] = (
    ("model", "model"), ("fine_tuning", "LoRA or full fine-tuning"), ("quantization", "4-bit"),
    ("beta", "KL beta"), ("kl_times_ratio", "KL term x ratio"), ("num_generations", "answers a group (G)"),
    ("prompts_per_update", "prompts an update"), ("loss_type", "loss_type"), ("learning_rate", "learning rate"),
    ("temperature", "temperature"), ("max_completion_length", "answer length (tokens)"),
    ("pixels", "pixels (min-max)"), ("steps", "steps"))


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
        "model": cfg.model, "fine_tuning": tuning,
        "quantization": {"4bit": "NF4 (4-bit)", "8bit": "int8"}.get(cfg.quantization, "none"),
        "beta": beta, "kl_times_ratio": bool(cfg.get("use_bias_correction_kl")) if beta else "- (no KL)",
        "num_generations": cfg.get("num_generations"),
        "prompts_per_update": cfg.get("per_device_train_batch_size") * cfg.get("gradient_accumulation_steps")
        // cfg.get("num_generations"),
        "loss_type": cfg.get("loss_type"), "learning_rate": cfg.get("learning_rate"),
        "temperature": cfg.get("temperature"), "max_completion_length": cfg.get("max_completion_length"),
        "pixels": (cfg.min_pixels, cfg.max_pixels), "steps": steps or f"{cfg.get('max_steps')} updates"}


def miniature_config(settings):
    """The `TrainConfig` of the miniature's GRPO stage under `settings` (`miniature.stages.train_config`)."""
    from gui_r1_lite.training import TrainConfig

    from .miniature.stages import train_config

    values = train_config(settings, Path("runs/miniature"), method="grpo", start=None, train_file="-",
                          steps=settings.grpo_steps, lr=settings.grpo_lr, seed=0, scheduler=settings.extra_scheduler)
    return TrainConfig.from_dict(values, source="miniature settings")


def miniature_why(settings, key: str) -> str:
    """The miniature's reason for its value of `key`: the settings module's own (fixed before any run, or
    chosen by the validation sweep), else `MINIATURE_WHY`."""
    from .miniature.settings import FIXED_A_PRIORI, RECIPE_PROBE, SWEEP_GRID

    field = {"learning_rate": "grpo_lr", "prompts_per_update": "grpo_prompts_per_step",
             "steps": "extra_prompts"}.get(key, key)
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
    return MINIATURE_WHY.get(key, "").format(tokens=settings.max_pixels // (28 * 28))


def departures(settings=None, recipe: str | Path | None = None) -> list[Departure]:
    """The table: `settings` (default: the miniature's defaults) against the GPU recipe (default: the
    3B QLoRA recipe) against `ORIGINAL`, with why for each value that differs."""
    from gui_r1_lite.grpo_step import RECIPE
    from gui_r1_lite.training import TrainConfig

    from .miniature.settings import MiniatureSettings

    settings = settings or MiniatureSettings()
    mini, default = (_miniature_columns(s) for s in (settings, MiniatureSettings()))
    gpu = columns(TrainConfig.from_yaml(recipe or RECIPE))
    rows = []
    for key, label in ROWS:
        original = ORIGINAL[key][0]
        reasons = []
        if gpu[key] != original and RECIPE_WHY.get(key):
            reasons.append(f"GPU: {RECIPE_WHY[key]}")
        if key == "kl_times_ratio" and not mini["beta"]:
            reasons.append("CPU: no KL term at beta 0 (see KL beta)")
        elif mini[key] != gpu[key] and mini[key] != original:
            why = miniature_why(settings, key) if mini[key] == default[key] else \
                f"set for this run (the miniature's default: {default[key]})"
            reasons.append(f"CPU: {why or 'not measured'}")
        rows.append(Departure(key, label, mini[key], gpu[key], original, "; ".join(reasons)))
    return rows


def _miniature_columns(settings) -> dict[str, Any]:
    from gui_r1_lite.tiny import build_arguments

    mini = columns(miniature_config(settings),
                   steps=f"{settings.warm_steps} SFT warm-start steps, then {settings.grpo_steps} GRPO updates")
    size = build_arguments(0, **settings.tiny)
    mini["model"] = (f"stand-in (text {size['hidden_size']} x {size['num_layers']} layers, "
                     f"vision {size['vision_hidden']} x {size['vision_depth']})")
    return mini


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


if __name__ == "__main__":  # python -m harness.departures > docs/results/departures.md
    print("<!-- written by python -m harness.departures (tests/test_departures.py keeps it current) -->")
    print(departures_markdown(departures()))
