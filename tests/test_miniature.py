"""GUI-R1 in miniature: data splits, settings, and a whole run (every arm, every stage) on a tiny budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_r1_lite import miniature as MN

ROOT = Path(__file__).resolve().parents[1]
TINY_BUDGET = dict(tiny={}, warm_steps=2, sft_batch=2, extra_prompts=2, grpo_prompts_per_step=1, num_generations=2,
                   max_completion_length=8, max_new_tokens=8, eval_limit=6, eval_batch_size=6,
                   tasks=("click-tab", "login-user"), min_heldout_rows=1)


def test_row_ids_give_task_and_seed():
    assert MN.task_of("miniwob/click-tab/seed1003/step0") == "click-tab"
    assert MN.seed_of("miniwob/login-user/seed25/step2") == 25
    with pytest.raises(ValueError, match="not of the form"):
        MN.task_of("web/index/click0")


@pytest.mark.parametrize("over, words", [
    ({"fair": "flops"}, "fair must be"),
    ({"warm_steps": 0}, "warm_steps"),
    ({"num_generations": 1}, "num_generations"),
    ({"tasks": ("click-everything",)}, "unknown task"),
])
def test_settings_are_checked(over, words):
    with pytest.raises(ValueError, match=words):
        MN.MiniatureSettings.from_overrides(**over).validate()
    with pytest.raises(TypeError, match="unknown miniature setting"):
        MN.MiniatureSettings.from_overrides(warmup=3)


def test_splits_never_share_an_episode_seed(tmp_path):
    settings = MN.MiniatureSettings()
    data = MN.prepare_data(tmp_path, MN.DEFAULT_TRAIN, MN.DEFAULT_HELDOUT, settings)
    from gui_r1_lite.data import load_gui_r1

    train = load_gui_r1(data["train"], strict=True)
    held = load_gui_r1(data["heldout"], strict=True)
    assert {MN.task_of(s.id) for s in train} == set(MN.DEFAULT_TASKS) == {MN.task_of(s.id) for s in held}
    assert all(0 <= MN.seed_of(s.id) <= 24 for s in train)
    assert all(MN.seed_of(s.id) >= 1000 for s in held)
    assert data["n_heldout"] == len(held) >= 200 and data["n_train"] == len(train)
    val = MN.prepare_data(tmp_path / "val", MN.DEFAULT_TRAIN, MN.DEFAULT_HELDOUT, settings, validate=True)
    assert {MN.seed_of(s.id) for s in load_gui_r1(val["heldout"])} <= set(range(25, 30))
    with pytest.raises(ValueError, match="overlap"):
        MN.prepare_data(tmp_path / "bad", MN.DEFAULT_TRAIN, MN.DEFAULT_HELDOUT,
                        MN.MiniatureSettings(validation_seeds=(20, 29)), validate=True)
    with pytest.raises(ValueError, match="widen the task mix"):
        MN.prepare_data(tmp_path / "few", MN.DEFAULT_TRAIN, MN.DEFAULT_HELDOUT,
                        MN.MiniatureSettings(tasks=("click-tab",)))


def test_a_whole_miniature_on_a_tiny_budget(tmp_path):
    out = tmp_path / "mini"
    result = MN.run_miniature(out, seeds=[0, 1], **TINY_BUDGET)
    assert set(MN.headline(result)) == {"random", "sft", "sft_grpo"}
    for arm in MN.ARMS:
        for metric in MN.METRICS:
            v = result[arm][metric]
            assert len(v["per_seed"]) == 2 and all(0.0 <= x <= 1.0 for x in v["per_seed"])
            assert v["mean"] == pytest.approx(sum(v["per_seed"]) / 2)
    assert result["random"]["format_rate"]["mean"] == 1.0  # the baseline always writes the format
    assert result["n_heldout"] == 6
    for seed in ("0", "1"):
        compute = result["compute"][seed]
        # "visits": both arms see the same number of training prompts after the shared warm start
        assert compute["sft"]["prompt_visits"] == compute["sft_grpo"]["prompt_visits"] == 2
        assert compute["warm"]["steps"] == 2
        for arm in ("warm", "sft", "sft_grpo"):
            model, adapter = result["models"][seed][arm]
            assert (Path(model) / "config.json").exists() and adapter is None  # full fine-tuning
        preds = Path(result["predictions"][seed]["sft_grpo"]) / "predictions.jsonl"
        assert len(preds.read_text().splitlines()) == 6
    # the two seeds built different tiny models
    w0 = (Path(result["models"]["0"]["warm"][0]) / "model.safetensors").read_bytes()
    w1 = (Path(result["models"]["1"]["warm"][0]) / "model.safetensors").read_bytes()
    assert w0 != w1
    assert json.loads((out / MN.RESULT_FILE).read_text())["sft"] == result["sft"]
    table = MN.miniature_table(result)
    assert table.count("\n| ") == 3 and "seeds 0, 1" in table

    # a rerun with the same settings reuses every finished stage
    again = MN.run_miniature(out, seeds=[0, 1], **TINY_BUDGET)
    assert again["skipped_stages"]["0"] == sorted(["random_eval", "warm", "grpo", "sft_extra", "sft_eval",
                                                   "sft_grpo_eval", "warm_eval"])
    assert MN.headline(again) == MN.headline(result)
    with pytest.raises(ValueError, match="other settings"):
        MN.run_miniature(out, seeds=[0], **{**TINY_BUDGET, "warm_steps": 3})
