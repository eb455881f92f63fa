"""The run profiles: what changes between a laptop CPU run and a GPU run (model, quantisation, data,
sizes); the same code paths serve both. A notebook's `profile` parameter may change fields after the
name ("cpu-mini eval_limit=4")."""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from .modeling import Quantization


@dataclass(frozen=True)
class Profile:
    name: str
    model: str                 # hub id, local folder, or "tiny" (built locally by gui_r1_lite.tiny)
    quantization: Quantization | None
    train_data: str            # file, folder or hub id
    eval_data: str
    min_pixels: int
    max_pixels: int
    description: str
    # curation (notebook 01): answers sampled per row, their length (a real model needs room for
    # <think>…</think><answer>…</answer>), the success-rate band kept, rows per (platform, action) group;
    # rows scored (0: all) and rows sampled in one `generate` (each with k copies of its screenshot)
    difficulty_k: int = 5
    difficulty_max_new_tokens: int = 32
    difficulty_band: tuple[float, float] = (0.1, 0.9)
    balance_per_group: int = 1000
    difficulty_rows: int = 0
    difficulty_batch_rows: int = 8
    # the model whose answers judge each row's difficulty ("": the profile's own model); a folder relative
    # to the repository or absolute, or a hub id
    difficulty_model: str = ""
    # training (notebook 04, `experiments.plan_experiment`): the GRPO recipe; the experiment, "miniature"
    # (see miniature/) or "recipe" (its GRPO run on the training data); the miniature's seeds, seeds side
    # by side (0: one per core), live-page episodes per task and arm and the arms that play them; the
    # recipe's GRPO steps (0: the recipe's); rows answered before and after
    grpo_recipe: str = "configs/grpo_tiny_cpu.yaml"
    # the recipe on a CUDA card below `small_gpu_gib` of memory or without bf16 (a free Colab T4); "": none
    small_gpu_recipe: str = ""
    small_gpu_gib: float = 20.0
    experiment: str = "recipe"
    train_seeds: tuple[int, ...] = (0, 1)
    train_workers: int = 0
    train_online_episodes: int = 1
    train_online_arms: tuple[str, ...] = ("sft", "sft_grpo")
    train_max_steps: int = 0
    train_samples_shown: int = 4
    # evaluation (notebook 05): the preset (`evaluate.PRESETS`), rows per file for model policies (0:
    # all), the answer length (None: the preset's), and whether the profile's pixel bounds replace the preset's
    eval_preset: str = "paper"
    eval_limit: int = 0
    eval_max_new_tokens: int | None = None
    eval_own_pixels: bool = False
    # GUI-R1's benchmark files scored from this folder ("": only data_dir/test); after a miniature, rows of
    # each task it never trained on; MiniWoB++ episodes per task played live (0: none)
    eval_benchmark_dir: str = ""
    eval_transfer_rows: int = 2
    eval_online_episodes: int = 2

    def to_dict(self) -> dict:
        return asdict(self)

    def eval_settings(self, preset: str | None = None, max_new_tokens: int | None = None) -> dict:
        """Notebook 05's `evaluate.prediction_settings`: the profile's preset and answer length (or the
        arguments), with its pixel bounds where it sets them."""
        from .evaluate import prediction_settings

        pixels = {"min_pixels": self.min_pixels, "max_pixels": self.max_pixels} if self.eval_own_pixels else {}
        tokens = max_new_tokens if max_new_tokens is not None else self.eval_max_new_tokens
        return prediction_settings(preset or self.eval_preset, max_new_tokens=tokens, **pixels)

    def difficulty_settings(self) -> dict:
        """Notebook 01's `curation.difficulty` keyword arguments: answers per row, the band kept, the pixel
        bounds, and the rows sampled in one `generate` (`batch_size`)."""
        return {"k": self.difficulty_k, "band": self.difficulty_band, "min_pixels": self.min_pixels,
                "max_pixels": self.max_pixels, "batch_size": self.difficulty_batch_rows}

    def rows_to_score(self, samples: list, rows: int | None = None) -> list:
        """The first `rows` of `samples` for the difficulty step (None: the profile's `difficulty_rows`; 0: all)."""
        n = self.difficulty_rows if rows is None else rows
        return list(samples[:n]) if n else list(samples)

    def recipe(self, cuda: tuple[float, bool] | None = None) -> tuple[str, str]:
        """(recipe file, why): `small_gpu_recipe` where `cuda` = (total memory in GiB, bf16 supported)
        names a card below `small_gpu_gib` or without bf16, else `grpo_recipe`."""
        if self.small_gpu_recipe and cuda is not None:
            gib, bf16 = cuda
            if gib < self.small_gpu_gib or not bf16:
                why = f"{gib:.1f} GiB" + ("" if bf16 else ", no bf16")
                return self.small_gpu_recipe, f"recipe {self.small_gpu_recipe}: this GPU has {why} " \
                                              f"(below {self.small_gpu_gib:g} GiB or without bf16)"
        return self.grpo_recipe, f"recipe {self.grpo_recipe}"

    def data_source(self, which: str, data_dir: str | None = None) -> str:
        """The profile's `train` or `eval` data, `data_samples/` replaced by `data_dir` when given
        (notebooks run from their own folder)."""
        source = {"train": self.train_data, "eval": self.eval_data}[which]
        prefix = "data_samples/"
        if data_dir and source.startswith(prefix):
            return str(Path(data_dir) / source[len(prefix):])
        return source


PROFILES: dict[str, Profile] = {
    "cpu-mini": Profile(
        name="cpu-mini", model="tiny", quantization=None,
        train_data="data_samples/train", eval_data="data_samples/test",
        min_pixels=28 * 28 * 16, max_pixels=28 * 28 * 64,
        description="tiny Qwen2.5-VL built locally, shipped samples; any CPU, minutes",
        # The random-weight tiny model solves nothing (every rate would be 0): the shipped base of the
        # miniature judges instead, and solves some MiniWoB++ rows (its answers close within 48 tokens).
        # cpu-mini records the rates and keeps every row, so that later notebooks keep every platform;
        # notebook 01 prints what the (0.1, 0.9) band would drop.
        difficulty_k=4, difficulty_band=(0.0, 1.0), balance_per_group=600,
        difficulty_model="grounding/base", difficulty_max_new_tokens=48,
        grpo_recipe="configs/grpo_tiny_cpu.yaml", experiment="miniature",
        # a few short answers at the tiny model's own frame: the figures check the pipeline
        eval_preset="fast", eval_limit=8, eval_max_new_tokens=48, eval_own_pixels=True),
    "gpu-3b": Profile(
        name="gpu-3b", model="Qwen/Qwen2.5-VL-3B-Instruct", quantization="4bit",
        train_data="ritzzai/GUI-R1", eval_data="ritzzai/GUI-R1",
        min_pixels=262_144, max_pixels=1_258_291,
        description="Qwen2.5-VL-3B in 4-bit NF4 + LoRA (QLoRA), GUI-R1-3K; one CUDA GPU",
        difficulty_k=5, difficulty_max_new_tokens=512, difficulty_band=(0.1, 0.9), balance_per_group=1000,
        # one row's 5 answers a `generate`, 12 rows: sized to a T4 (docs/gpu.md, benchmarks/gpu_estimate.py:
        # ~7 GiB, ~1 min a generate, ~13 min in all); all rows: difficulty_rows=0 (hours)
        difficulty_rows=12, difficulty_batch_rows=1,
        grpo_recipe="configs/grpo_qwen2_5_vl_3b_qlora.yaml", experiment="recipe",
        # a free Colab T4 (14.75 GiB, no bf16) OOMs at the edge with the L4 recipe (docs/gpu.md)
        small_gpu_recipe="configs/grpo_qwen2_5_vl_3b_t4.yaml",
        # as the paper evaluates: every row, 1,024 tokens, near-native screenshots, greedy with penalty 1.05
        eval_preset="paper", eval_limit=0),
}


def get_profile(name: str) -> Profile:
    """The profile `name`, or with some fields changed: "cpu-mini eval_limit=4 difficulty_band=(0.0, 0.5)".
    Values are read as Python literals (a bare word as a string) and must have the field's type."""
    base, *changes = re.split(r"\s+(?=\w+=)", name.strip())
    try:
        prof = PROFILES[base]
    except KeyError:
        raise KeyError(f"unknown profile {base!r}; choose one of {sorted(PROFILES)}") from None
    known = {f.name: getattr(prof, f.name) for f in fields(Profile)}
    overrides = {}
    for change in changes:
        key, _, text = change.partition("=")
        if key not in known or key == "name":
            raise KeyError(f"profile {name!r}: no field {key!r} to change; fields: {sorted(set(known) - {'name'})}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        was = known[key]
        if was is not None and value is not None and not isinstance(value, type(was)) and \
                not (isinstance(was, float) and isinstance(value, int)):
            raise ValueError(f"profile {name!r}: {key} must be {type(was).__name__} like {was!r}, got {text!r}")
        overrides[key] = value
    return replace(prof, **overrides)
