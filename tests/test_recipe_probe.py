"""The recipe probe (`study.recipe`): each recipe value reaches the GRPO trainer of its own run, from the
same warm start; values adopted one by one are run together; the table reads the result file."""

from __future__ import annotations

import json

import pytest
import yaml

from gui_r1_lite.errors import UsageError
from harness.miniature.runner import check_same_settings, run_record
from harness.miniature.settings import MiniatureSettings
from study import recipe
from tests.test_miniature import TINY_BUDGET


def trainer_settings(out, config: dict) -> dict:
    folder = out / "-".join(["sft_grpo", *(f"{k}={v}" for k, v in config.items())])
    return yaml.safe_load((folder / "seed0" / "sft_grpo_train" / "train_config.yaml").read_text())


@pytest.mark.slow  # a warm start and six GRPO runs
def test_each_variant_trains_from_the_same_warm_start_with_its_own_recipe_value(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "NOISE_ROWS", -1)  # every value adopted: the values are then run together
    out = tmp_path / "probe"
    result = recipe.run_probe(str(out), [0], workers=1, **TINY_BUDGET)
    assert set(result["variants"]) == set(recipe.VARIANTS)
    assert json.loads((out / recipe.PROBE_FILE).read_text()) == json.loads(json.dumps(result))
    base = result["variants"]["miniature"]
    assert base["vs_miniature"] == {"click_accuracy": 0.0, "train_cpu_seconds_ratio": 1.0}
    together = {k: v for config in recipe.VARIANTS.values() for k, v in config.items()}
    assert result["together"]["config"] == together and len(together) == 4
    for config in [*recipe.VARIANTS.values(), together]:
        args = trainer_settings(out, config)
        for key, value in config.items():
            if key == "grpo_prompts_per_step":
                assert args["per_device_train_batch_size"] == value * args["num_generations"]
            else:
                assert args[key] == value, key
    table = recipe.probe_table(result)
    assert table.count("\n") == len(recipe.VARIANTS) + 2 and "loss_type dapo" in table


@pytest.mark.slow  # a warm start and two GRPO runs
def test_nothing_is_run_together_unless_two_values_are_adopted(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "VARIANTS", {"miniature": {}, "beta": {"beta": 0.01}})
    result = recipe.run_probe(str(tmp_path / "probe"), [0], workers=1, **TINY_BUDGET)
    assert result["together"] is None and not result["variants"]["miniature"]["adopt"]


def test_the_noise_threshold_is_two_rows_of_the_split_it_scores():
    # 2/55 was right for the layout tasks' 55 rows a seed; the seeing tasks give 37, where 2/55 is 1.5 rows
    assert recipe.noise({"n_heldout": 40, "n_heldout_click": 37}) == pytest.approx(2 / 37)
    assert recipe.noise({"n_heldout": 70, "n_heldout_click": 55}) == pytest.approx(2 / 55)


def test_a_folder_of_other_settings_is_refused_before_anything_runs(tmp_path):
    # the probe's cached warm starts and runs are reused only by the settings that made them
    out = tmp_path / "probe"
    out.mkdir()
    other = MiniatureSettings.from_overrides(None, **{**TINY_BUDGET, "warm_steps": 3})
    check_same_settings(out, run_record(other, recipe.DEFAULT_TRAIN, recipe.DEFAULT_TRAIN, True))
    with pytest.raises(UsageError, match=r"settings\.warm_steps: 3 there, 2 now"):
        recipe.run_probe(str(out), [0], workers=1, **TINY_BUDGET)
    assert sorted(p.name for p in out.iterdir()) == ["settings.json"]  # nothing trained, no data split made


def test_the_command_prints_the_table_and_ships_the_file_byte_for_byte(tmp_path, monkeypatch, capsys):
    out, dest = tmp_path / "probe", tmp_path / "results"
    variant = {"config": {}, "mean_click_accuracy": 0.5, "adopt": False,
               "vs_miniature": {"click_accuracy": 0.0, "train_cpu_seconds_ratio": 1.0}}
    fake = {"variants": {"miniature": variant}, "together": None}

    def fake_probe(folder, seeds, workers=None):
        assert seeds == [0, 1]
        out.mkdir()
        (out / recipe.PROBE_FILE).write_text(json.dumps(fake))
        return fake

    monkeypatch.setattr(recipe, "run_probe", fake_probe)
    assert recipe.main([str(out), "--results", str(dest)]) == 0
    assert (dest / recipe.PROBE_FILE).read_bytes() == (out / recipe.PROBE_FILE).read_bytes()
    assert "| the miniature's settings | 50.0 % |" in capsys.readouterr().out
