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


def test_the_rows_beside_the_trainer_s_settings_read_the_code(tmp_path: Path):
    """Rollout reuse, weight decay, the warm start, <think>, the reward, the tokenizer, the base, the training
    rows: each read from what runs, so that a change to it changes the row."""
    import json

    from gui_r1_lite.tiny import SPECIAL_TOKENS
    from harness.departures import SFT_RECIPE_NAME, miniature_config

    rows = by_key(departures())
    mini, recipe = miniature_config(MiniatureSettings()), TrainConfig.from_yaml(RECIPE)
    # on-policy: one update a generation, so the ratio is 1 and the clip never acts; the original reuses rollouts
    reuse = rows["updates_per_rollout"]
    assert reuse.miniature == reuse.recipe == mini.get("num_iterations") == 1 and reuse.original == 4
    assert reuse.why.startswith("GPU and CPU:") and "never acts" in reuse.why
    assert rows["weight_decay"].miniature == mini.get("weight_decay") == recipe.get("weight_decay") == 0.0
    assert rows["weight_decay"].original == 0.01 and "1e-08" in rows["weight_decay"].why
    # no warm start: both arms from the base, said although all three columns agree
    start = rows["warm_start"]
    assert start.miniature == start.recipe == start.original == "none" and "grounding/base" in start.why
    assert rows["steps"].miniature == f"{MiniatureSettings().grpo_steps} GRPO updates"
    assert rows["think"].miniature == rows["think"].recipe == "`<think></think>` (empty)"
    assert rows["reward"].miniature == rows["reward"].recipe == rows["reward"].original == "0.2 format + 0.8 accuracy"
    assert "R_act + R_point + R_text" in rows["reward"].why
    base = json.loads((Path(MiniatureSettings().base_path) / "config.json").read_text())["text_config"]
    assert rows["tokenizer"].miniature == f"its own byte-level BPE, {base['vocab_size']:,} tokens"
    assert rows["tokenizer"].recipe == rows["tokenizer"].original == f"Qwen2.5-VL's, {151_643 + len(SPECIAL_TOKENS):,} tokens"
    report = json.loads((Path(MiniatureSettings().base_path) / "pretrain_report.json").read_text())
    assert f"{report['steps']:,} SFT steps on {report['train_rows']:,} generated pages" in rows["pretraining"].miniature
    assert "own pretraining distribution" in rows["pretraining"].why  # the generated-pages study's data report
    assert "notebook 01's curation" in rows["training_rows"].why and "7 tasks" in rows["training_rows"].miniature

    rows = by_key(departures(MiniatureSettings.from_overrides(
        warm_steps=200, tasks=None, rewards={"gui_r1": 1.0, "point_gaussian": 0.5})))
    assert rows["warm_start"].miniature == "200 SFT steps at 0.0001"
    assert rows["warm_start"].why == "CPU: set for this run (the miniature's default: none)"
    assert rows["steps"].miniature.startswith("200 SFT warm-start steps, then ")
    assert rows["training_rows"].miniature.endswith("14 tasks, seeds 0-24")
    assert rows["reward"].miniature == "0.2 format + 0.8 accuracy + 0.5 x point_gaussian"
    assert rows["reward"].why.startswith("CPU: set for this run") and "; GUI-R1 scores as" in rows["reward"].why

    changed = yaml.safe_load(RECIPE.read_text())
    changed.update(num_iterations=2, weight_decay=0.01)
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(changed))
    sft = yaml.safe_load((RECIPE.parent / SFT_RECIPE_NAME).read_text())
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump({**sft, "sft_thinking": "I look."}))
    rows = by_key(departures(recipe=tmp_path / "grpo.yaml", sft_recipe=tmp_path / "sft.yaml"))
    assert rows["updates_per_rollout"].recipe == 2 and "the clip acts" in rows["updates_per_rollout"].why
    assert "never acts" not in rows["updates_per_rollout"].why
    assert rows["weight_decay"].recipe == 0.01 and rows["think"].recipe == "`<think>I look.</think>`"


def test_the_study_row_reads_the_shipped_studies(tmp_path: Path):
    """A shipped study's settings that are not the miniature's defaults are listed, part by part; no study
    shipped says so (and no generated-pages note without its data report)."""
    import json

    assert by_key(departures(results=tmp_path))["study"].miniature == "no study shipped"
    assert "own pretraining distribution" not in by_key(departures(results=tmp_path))["pretraining"].why
    study = tmp_path / "study"
    for part, extra in (("visits", {}), ("seconds", {"fair": "seconds"})):
        (study / part).mkdir(parents=True)
        ran = {**MiniatureSettings().to_dict(), "online_episodes": 5, **extra}
        (study / part / "miniature.json").write_text(json.dumps({"settings": ran}))
    shipped = {"online_episodes": 5, "train_data": "data_samples/train/miniwob_train.parquet"}  # the default file
    (study / "study.json").write_text(json.dumps({"seeds": [0, 1, 2], "parts": {
        "visits": {"settings": shipped}, "seconds": {"settings": {**shipped, "heldout_data": "other.parquet"}}}}))
    row = by_key(departures(results=tmp_path))["study"]
    assert row.miniature == ("study (seeds 0-2, parts visits, seconds): online_episodes 5; "
                             "seconds part: heldout_data other.parquet, fair seconds")
    assert row.differs and row.why
