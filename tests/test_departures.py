"""The departures table (notebook 04) is read from the settings objects, not typed: change a setting
and the table changes; every value that differs from another column says why."""

from __future__ import annotations

from pathlib import Path

import yaml

from gui_r1_lite.grpo_step import RECIPE
from gui_r1_lite.training import TrainConfig
from harness.departures import ORIGINAL, ROWS, departures, departures_markdown
from harness.miniature.settings import MiniatureSettings


def by_key(rows) -> dict:
    return {r.key: r for r in rows}


def test_the_table_reads_the_miniature_the_recipe_and_the_original():
    rows = by_key(departures())
    assert list(rows) == [k for k, _ in ROWS]
    mini, recipe = MiniatureSettings(), TrainConfig.from_yaml(RECIPE)
    assert rows["beta"].miniature == mini.beta and rows["beta"].recipe == recipe.get("beta")
    assert rows["learning_rate"].miniature == mini.grpo_lr and rows["learning_rate"].recipe == recipe.get("learning_rate")
    assert rows["prompts_per_update"].recipe == 4 and rows["prompts_per_update"].miniature == mini.grpo_prompts_per_step
    assert rows["pixels"].recipe == (recipe.min_pixels, recipe.max_pixels) == ORIGINAL["pixels"][0]
    assert rows["quantization"].recipe == "NF4 (4-bit)" and rows["quantization"].miniature == "none"
    # every difference has a reason; the sweep's and the a-priori choices say which they are
    assert all(r.why for r in rows.values() if r.differs)
    assert "validation sweep" in rows["temperature"].why and "not measured" in rows["max_completion_length"].why
    for key in ("beta", "num_generations", "prompts_per_update", "loss_type"):  # measured, not assumed
        assert "recipe probe" in rows[key].why and "not measured" not in rows[key].why, key
    assert departures_markdown(list(rows.values())).count("\n") == len(ROWS) + 1


def test_changing_a_setting_changes_the_table(tmp_path: Path):
    rows = by_key(departures(MiniatureSettings.from_overrides(beta=0.01, loss_type="dapo", num_generations=5)))
    assert rows["beta"].miniature == 0.01 and "CPU" not in rows["beta"].why
    assert not rows["loss_type"].differs and not rows["loss_type"].why
    # our default follows the original (the k3 term alone), not TRL's (times the ratio)
    assert rows["kl_times_ratio"].miniature is False
    assert rows["num_generations"].miniature == 5 and not rows["num_generations"].differs
    rows = by_key(departures(MiniatureSettings.from_overrides(max_completion_length=8)))
    assert rows["max_completion_length"].why == "CPU: set for this run (the miniature's default: 44)"

    recipe = yaml.safe_load(RECIPE.read_text())
    recipe.update(learning_rate=2e-5, gradient_accumulation_steps=8, use_bias_correction_kl=True)
    changed = tmp_path / "recipe.yaml"
    changed.write_text(yaml.safe_dump(recipe))
    rows = by_key(departures(recipe=changed))
    assert rows["learning_rate"].recipe == 2e-5 and rows["prompts_per_update"].recipe == 8
    assert rows["kl_times_ratio"].recipe is True and "use_bias_correction_kl" in rows["kl_times_ratio"].why


def test_the_shipped_table_is_current():
    """docs/results/departures.md is what `python -m harness.departures` writes for today's settings."""
    shipped = (Path(__file__).resolve().parents[1] / "docs" / "results" / "departures.md").read_text()
    assert departures_markdown(departures()) in shipped, \
        "docs/results/departures.md is stale: python -m harness.departures > docs/results/departures.md"


def test_the_recipe_probe_figures_are_the_shipped_file_s():
    """settings.RECIPE_PROBE, which the table quotes, is what docs/results/recipe_probe.json holds; no value
    the probe's rule did not adopt is a default."""
    import json

    from harness.miniature.settings import RECIPE_PROBE

    shipped = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results" / "recipe_probe.json").read_text())
    variants, together = shipped["variants"], shipped["together"]
    assert set(RECIPE_PROBE) == set(variants) - {"miniature"}
    for key, probe in RECIPE_PROBE.items():
        v = variants[key]
        assert v["config"] == {key: probe["value"]}
        assert probe["recipe"] == v["mean_click_accuracy"]
        assert probe["miniature"] == variants["miniature"]["mean_click_accuracy"]
        assert probe["cpu_seconds_ratio"] == v["vs_miniature"]["train_cpu_seconds_ratio"]
        assert probe["together"] == (together["mean_click_accuracy"] if together and key in together["config"]
                                     else None)
        taken = v["adopt"] and (together is None or key not in together["config"] or together["adopt"])
        assert (getattr(MiniatureSettings(), key) == probe["value"]) == taken, key
