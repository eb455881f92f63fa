"""The recipe probe (`study.recipe`): each recipe value reaches the GRPO trainer of its own run, from the
same warm start, and the table reads the result file."""

from __future__ import annotations

import json

import yaml

from study import recipe
from tests.test_miniature import TINY_BUDGET


def test_each_variant_trains_from_the_same_warm_start_with_its_own_recipe_value(tmp_path):
    out = tmp_path / "probe"
    result = recipe.run_probe(str(out), [0], workers=1, **TINY_BUDGET)
    assert set(result["variants"]) == set(recipe.VARIANTS)
    assert json.loads((out / recipe.PROBE_FILE).read_text()) == json.loads(json.dumps(result))
    base = result["variants"]["miniature"]
    assert base["vs_miniature"] == {"click_accuracy": 0.0, "train_cpu_seconds_ratio": 1.0} and not base["adopt"]
    for name, config in recipe.VARIANTS.items():
        folder = out / f"sft_grpo-{'-'.join(f'{k}={v}' for k, v in config.items())}" if config else None
        if folder is None:
            continue
        args = yaml.safe_load((folder / "seed0" / "sft_grpo_train" / "train_config.yaml").read_text())
        for key, value in config.items():
            trainer_key = {"grpo_prompts_per_step": "per_device_train_batch_size"}.get(key, key)
            expected = value * args["num_generations"] if key == "grpo_prompts_per_step" else value
            assert args[trainer_key] == expected, (name, key)
    table = recipe.probe_table(result)
    assert table.count("\n") == len(recipe.VARIANTS) + 1 and "loss_type dapo" in table
