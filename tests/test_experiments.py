"""Notebook 04's experiment as the package plans and reports it (no training here: the notebook tests
run both experiments end to end)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gui_r1_lite import profiles
from gui_r1_lite.errors import UsageError
from gui_r1_lite.runio import append_jsonl
from harness import experiments, miniature, pipeline

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data_samples"


def plan(tmp_path: Path, **params) -> experiments.Experiment:
    return experiments.plan_experiment("cpu-mini", output_dir=tmp_path / "04", data_dir=DATA, run_dir=tmp_path,
                                       **params)


def test_cpu_mini_plans_the_miniature_with_the_notebook_s_settings(tmp_path):
    exp = plan(tmp_path, seeds="0, 2", miniature_settings="{warm_steps: 8, tasks: [click-tab]}")
    assert exp.kind == "miniature" and exp.seeds == [0, 2]
    assert exp.settings.warm_steps == 8 and exp.miniature_dir == tmp_path / "04" / "miniature"
    assert "warm_steps: 8" in exp.describe(full=True)


def test_the_miniature_runs_its_seeds_side_by_side_one_per_core(tmp_path, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert plan(tmp_path, seeds="0,1,2").workers == 2
    assert plan(tmp_path, seeds="0").workers == 1  # one seed: nothing beside it
    assert plan(tmp_path, seeds="0,1,2", workers=1).workers == 1
    monkeypatch.setattr(experiments, "online_missing", lambda: None)
    assert plan(tmp_path, online_episodes=3).settings.online_episodes == 3
    assert plan(tmp_path, online_episodes=1).settings.online_arms == miniature.ONLINE_ARMS  # by default every arm
    assert plan(tmp_path, online_episodes=1, online_arms="sft, sft_grpo").settings.online_arms == ("sft", "sft_grpo")
    with pytest.raises(ValueError, match="online_arms must be among"):
        plan(tmp_path, online_episodes=1, online_arms="sft,oracle")
    monkeypatch.setattr(experiments, "online_missing", lambda: "Chromium not found")
    offline = plan(tmp_path, online_episodes=3)  # the notebook still runs, offline, and says why
    assert offline.settings.online_episodes == 0 and "Chromium not found" in offline.describe()
    with pytest.raises(ValueError, match="no seed"):
        plan(tmp_path, seeds=" ")


class _Live:
    """What `follow_first_seed` uses of `viz.LiveCurves`."""

    every = 0.0

    def __init__(self) -> None:
        self.drawn: list[Path] = []

    def draw(self, path: Path) -> None:
        self.drawn.append(path)


def test_the_live_curves_follow_the_first_seed_s_stage_in_training(tmp_path):
    live = _Live()
    watch = experiments.follow_first_seed(live, tmp_path / "seed0")
    watch()
    assert live.drawn == []  # nothing trains yet
    append_jsonl(tmp_path / "seed0" / "warm_train" / "metrics.jsonl", {"step": 1, "loss": 2.0})
    watch()
    later = tmp_path / "seed0" / "sft_grpo_train" / "metrics.jsonl"
    append_jsonl(later, {"step": 1, "loss": 1.0})
    os.utime(later, (later.stat().st_mtime + 5,) * 2)  # written after the warm start's log
    watch()
    assert [p.parent.name for p in live.drawn] == ["warm_train", "sft_grpo_train"]


def test_bad_miniature_settings_fail_before_anything_trains(tmp_path):
    with pytest.raises(ValueError, match="num_generations"):
        plan(tmp_path, miniature_settings="{num_generations: 1}")


def test_an_unknown_experiment_is_refused(tmp_path):
    with pytest.raises(ValueError, match="experiment must be one of"):
        plan(tmp_path, experiment="bandit")


def test_the_recipe_trains_on_the_profile_s_data_without_notebook_01(tmp_path):
    exp = plan(tmp_path, experiment="recipe", max_steps=3)
    cfg = exp.config.to_dict()
    assert cfg["train_data"] == str(DATA / "train") and cfg["max_steps"] == 3
    assert cfg["output_dir"] == str(tmp_path / "04" / "grpo") and exp.heldout == DATA / "test"
    assert "max_steps: 3" in exp.describe(full=True) and "steps: 3" in exp.describe()


def test_the_recipe_trains_on_notebook_01_s_curated_file_when_there_is_one(tmp_path):
    pipeline.write_result(pipeline.artifacts_dir(tmp_path, "01"), {"curated": "/data/curated.parquet",
                                                                  "profile": "cpu-mini"})
    assert plan(tmp_path, experiment="recipe").config.to_dict()["train_data"] == "/data/curated.parquet"
    given = plan(tmp_path, experiment="recipe", train_data="/data/mine.parquet")
    assert given.config.to_dict()["train_data"] == "/data/mine.parquet"


def test_notebook_05_reads_back_the_miniature_notebook_04_reported(tmp_path):
    grpo = tmp_path / "grpo"
    append_jsonl(grpo / "metrics.jsonl", [{"step": 1, "loss": 0.5, "reward": 0.1},
                                          {"step": 2, "loss": 0.3, "reward": 0.4}])
    arm = {m: {"mean": 0.5, "std": 0.0, "per_seed": [0.5]} for m in miniature.METRICS}
    study = {**{a: arm for a in miniature.ARMS}, **{k: k for k in experiments.MINIATURE_DETAILS}, "runs": {}}
    run = experiments.TrainingRun(grpo_run=grpo, heldout="h", before_dir=tmp_path, after_dir=tmp_path,
                                  before_name="b", after_name="a", base_model="m", trained_model="t")
    result = experiments.notebook_result(plan(tmp_path), run, study)
    assert result["global_step"] == 2 and result["end"]["reward"] == pytest.approx(0.25)
    assert set(result["miniature"]) == {*miniature.ARMS, "warm_start"} and "runs" not in result["miniature_details"]
    assert result["miniature_details"]["seeds"] == "seeds" and result["miniature"]["sft"] == arm


def test_the_gpu_recipe_validates_on_held_out_rows_found_from_the_notebook_folder(tmp_path, monkeypatch):
    # notebooks run from notebooks/: the recipe's data_samples/test must be read through data_dir
    monkeypatch.chdir(Path(__file__).resolve().parents[1] / "notebooks")
    cfg, _ = experiments._recipe_config(profiles.get_profile("gpu-3b"), tmp_path, "../data_samples", tmp_path, "", 0)
    assert cfg.validation_data == "../data_samples/test" and Path(cfg.validation_data).is_dir()


def test_the_plan_reads_in_a_few_lines_and_keeps_every_setting_on_request(tmp_path):
    exp = plan(tmp_path)
    short, full = exp.describe(), exp.describe(full=True)
    assert len(short.splitlines()) <= 10 < len(full.splitlines())
    assert f"lr {exp.settings.grpo_lr}" in short and exp.settings.base_model in short
    assert str(exp.miniature_dir / "settings.json") in short


def test_the_recipe_says_it_trains_on_the_uncurated_split_when_01_has_not_run_there(tmp_path):
    exp = plan(tmp_path, experiment="recipe")
    looked = pipeline.result_path(tmp_path, "01")
    assert f"not in {looked}" in exp.describe() and f"uncurated split {DATA / 'train'}" in exp.describe()


def test_curated_data_of_another_profile_is_refused_naming_both(tmp_path):
    pipeline.write_result(pipeline.artifacts_dir(tmp_path, "01"),
                          {"curated": "/data/curated.parquet", "profile": "gpu-3b",
                           "model": "Qwen/Qwen2.5-VL-3B-Instruct", "rows": 9})
    with pytest.raises(UsageError, match=r"profile 'gpu-3b' \(model Qwen/Qwen2.5-VL-3B-Instruct\), this run is "
                                         r"'cpu-mini' \(model tiny\)"):
        plan(tmp_path, experiment="recipe")
    # the same profile's curation is used, and the plan says so
    pipeline.write_result(pipeline.artifacts_dir(tmp_path, "01"),
                          {"curated": "/data/curated.parquet", "profile": "cpu-mini", "model": "tiny", "rows": 9})
    exp = plan(tmp_path, experiment="recipe")
    assert exp.config.to_dict()["train_data"] == "/data/curated.parquet" and "(9 rows)" in exp.describe()


def test_a_curation_that_judged_only_some_rows_says_how_few_the_recipe_trains_on(tmp_path):
    # gpu-3b judges 12 rows by default (minutes on a T4): the curated file holds only those it kept
    pipeline.write_result(pipeline.artifacts_dir(tmp_path, "01"),
                          {"curated": "/data/curated.parquet", "profile": "cpu-mini", "model": "tiny", "rows": 5,
                           "scored_rows": 12, "balanced_rows": 2900})
    text = plan(tmp_path, experiment="recipe").describe()
    assert "judged the difficulty of 12 of its 2900 balanced rows and kept 5" in text
    assert "difficulty_rows=0" in text
    pipeline.write_result(pipeline.artifacts_dir(tmp_path, "01"),
                          {"curated": "/data/curated.parquet", "profile": "cpu-mini", "model": "tiny", "rows": 5,
                           "scored_rows": 12, "balanced_rows": 12})
    assert "judged the difficulty" not in plan(tmp_path, experiment="recipe").describe()


def test_a_small_or_bf16_less_gpu_gets_the_t4_recipe_and_the_plan_says_why(tmp_path, monkeypatch):
    gpu = profiles.get_profile("gpu-3b")
    t4, l4 = "configs/grpo_qwen2_5_vl_3b_t4.yaml", "configs/grpo_qwen2_5_vl_3b_qlora.yaml"
    assert gpu.recipe((14.75, False))[0] == t4 and gpu.recipe((15.9, True))[0] == t4  # a T4; a 16 GB card
    assert gpu.recipe((22.0, True))[0] == l4 and gpu.recipe(None)[0] == l4          # an L4; no CUDA
    assert profiles.get_profile("cpu-mini").recipe((14.75, False))[0] == "configs/grpo_tiny_cpu.yaml"
    monkeypatch.setattr(experiments, "_cuda_card", lambda: (14.75, False))
    exp = experiments.plan_experiment("gpu-3b", output_dir=tmp_path / "04", data_dir=DATA, run_dir=tmp_path,
                                      experiment="recipe", train_data=str(DATA / "train"))
    assert "14.8 GiB, no bf16" in exp.describe() and t4 in exp.describe()
    from gui_r1_lite.training.config import read_recipe

    t4_recipe, l4_recipe = read_recipe(ROOT / t4), read_recipe(ROOT / l4)
    differs = [k for k in t4_recipe if t4_recipe[k] != l4_recipe.get(k) and k != "output_dir"]
    assert differs and all(exp.config.to_dict()[k] == t4_recipe[k] for k in differs), differs
