"""GUI-R1 in miniature: row ids, settings, data splits, the stage cache, the report, and a whole run
(every arm, every stage) on a tiny budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_r1_lite import miniature, progress
from gui_r1_lite.data import load_gui_r1
from gui_r1_lite.miniature.__main__ import parse_overrides
from gui_r1_lite.miniature.runner import STAGES_PER_SEED
from gui_r1_lite.miniature.stages import run_stage
from gui_r1_lite.runio import read_jsonl

TINY_BUDGET = dict(tiny={}, warm_steps=2, sft_batch=2, extra_prompts=2, grpo_prompts_per_step=1, num_generations=2,
                   max_completion_length=8, max_new_tokens=8, eval_limit=6, eval_batch_size=6,
                   tasks=("click-tab", "login-user"), min_heldout_rows=1)
SEEDS = [0, 1]


def test_row_ids_give_task_and_seed():
    assert miniature.task_of("miniwob/click-tab/seed1003/step0") == "click-tab"
    assert miniature.seed_of("miniwob/login-user/seed25/step2") == 25
    with pytest.raises(ValueError, match="not of the form"):
        miniature.task_of("web/index/click0")


@pytest.mark.parametrize("over, words", [
    ({"fair": "flops"}, "fair must be"),
    ({"warm_steps": 0}, "warm_steps"),
    ({"num_generations": 1}, "num_generations"),
    ({"tasks": ("click-everything",)}, "unknown task"),
])
def test_settings_are_checked(over, words):
    with pytest.raises(ValueError, match=words):
        miniature.MiniatureSettings.from_overrides(**over).validate()


def test_an_unknown_setting_is_refused():
    with pytest.raises(TypeError, match="unknown miniature setting"):
        miniature.MiniatureSettings.from_overrides(warmup=3)


def test_set_flags_read_yaml_and_lists_become_tuples():
    assert parse_overrides(["warm_steps=3", "tasks=[click-tab]", "sft_lr=0.0001"]) == {
        "warm_steps": 3, "tasks": ("click-tab",), "sft_lr": 1e-4}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_overrides(["warm_steps"])


# --- data splits --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def default_split(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("split")
    return miniature.prepare_data(out, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                                  miniature.MiniatureSettings())


def test_training_rows_are_the_task_mix_of_seeds_0_to_24(default_split):
    train = load_gui_r1(default_split["train"], strict=True)
    assert {miniature.task_of(s.id) for s in train} == set(miniature.DEFAULT_TASKS)
    assert all(0 <= miniature.seed_of(s.id) <= 24 for s in train)
    assert default_split["n_train"] == len(train)


def test_heldout_rows_come_from_the_heldout_seeds_only(default_split):
    held = load_gui_r1(default_split["heldout"], strict=True)
    assert {miniature.task_of(s.id) for s in held} == set(miniature.DEFAULT_TASKS)
    assert all(miniature.seed_of(s.id) >= 1000 for s in held)
    assert default_split["n_heldout"] == len(held) >= 200


def test_validation_scores_on_seeds_25_to_29_of_the_training_file(tmp_path):
    val = miniature.prepare_data(tmp_path, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                                 miniature.MiniatureSettings(), validate=True)
    assert {miniature.seed_of(s.id) for s in load_gui_r1(val["heldout"])} <= set(range(25, 30))


def test_validation_seeds_that_overlap_the_training_seeds_are_refused(tmp_path):
    with pytest.raises(ValueError, match="overlap"):
        miniature.prepare_data(tmp_path, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                               miniature.MiniatureSettings(validation_seeds=(20, 29)), validate=True)


def test_too_few_heldout_rows_are_refused(tmp_path):
    with pytest.raises(ValueError, match="widen the task mix"):
        miniature.prepare_data(tmp_path, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                               miniature.MiniatureSettings(tasks=("click-tab",)))


# --- stages and report, without training -------------------------------------------------------------


def test_a_finished_stage_is_read_back_not_run_again(tmp_path):
    calls = []

    def work() -> dict:
        calls.append(1)
        return {"value": 7}

    first = run_stage(tmp_path / "stage", work)
    again = run_stage(tmp_path / "stage", work)
    assert calls == [1] and first["skipped"] is False and again["skipped"] is True
    assert again["value"] == 7 and again["seconds"] == first["seconds"]


def test_an_unfinished_training_stage_starts_over(tmp_path):
    folder = tmp_path / "stage"
    folder.mkdir()
    (folder / "half-written").write_text("x")
    run_stage(folder, lambda: {}, fresh=True)
    assert not (folder / "half-written").exists() and (folder / miniature.STAGE_FILE).exists()


def test_fair_seconds_gives_sft_the_grpo_arm_s_training_time():
    run = miniature.SeedRun(Path("."), 0, miniature.MiniatureSettings(fair="seconds"), {})
    run.stages = {"warm_train": {"train_runtime": 20.0, "seconds": 25.0, "steps": 10},
                  "sft_grpo_train": {"train_runtime": 30.0, "seconds": 40.0, "steps": 5}}
    assert run.sft_steps() == 15  # 30 s of GRPO at 2 s per SFT step
    run.settings = miniature.MiniatureSettings(extra_prompts=160, sft_batch=8)
    assert run.sft_steps() == 20  # "visits": 160 prompts, 8 a step


def test_aggregate_uses_the_sample_standard_deviation():
    assert miniature.aggregate([0.2, 0.4]) == {"mean": pytest.approx(0.3), "std": pytest.approx(0.1414, abs=1e-4),
                                               "per_seed": [0.2, 0.4]}
    assert miniature.aggregate([0.5])["std"] == 0.0


# --- a whole run on a tiny budget ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("mini") / "mini"
    with pytest.MonkeyPatch.context() as mp:  # run as the main job runs it: reporting progress
        mp.setenv(progress.PROGRESS_ENV, str(out.parent / "progress.jsonl"))
        return out, miniature.run_miniature(out, seeds=SEEDS, **TINY_BUDGET)


def test_every_stage_reports_its_start_steps_and_end(tiny_run):
    records = read_jsonl(tiny_run[0].parent / "progress.jsonl")
    starts = [r for r in records if r["event"] == "start"]
    per_seed = STAGES_PER_SEED
    assert [r["index"] for r in starts] == list(range(1, 2 * per_seed + 1))
    assert {r["total"] for r in starts} == {2 * per_seed}
    assert starts[per_seed]["stage"] == "seed 1 · random_eval" and starts[1]["stage"] == "seed 0 · warm_train"
    assert [r["step"] for r in records if r["stage"] == "seed 0 · warm_train" and r["event"] == "step"][-1] == 2
    assert starts[1]["steps"] == 2 and starts[0]["steps"] == 6  # training steps; held-out rows scored
    assert Path(starts[0]["count_lines"]).name == "predictions.jsonl"
    ends = [r["stage"] for r in records if r["event"] == "end"]
    assert ends == [r["stage"] for r in starts]


def test_every_arm_reports_every_metric_for_every_seed(tiny_run):
    _, result = tiny_run
    assert set(miniature.arm_results(result)) == set(miniature.ARMS) == {"random", "sft", "sft_grpo"}
    for arm in miniature.ARMS:
        for metric in miniature.METRICS:
            v = result[arm][metric]
            assert len(v["per_seed"]) == 2 and all(0.0 <= x <= 1.0 for x in v["per_seed"])
            assert v["mean"] == pytest.approx(sum(v["per_seed"]) / 2)
    assert result["n_heldout"] == 6


def test_the_random_baseline_always_writes_the_format(tiny_run):
    assert tiny_run[1]["random"]["format_rate"]["mean"] == 1.0


def test_both_arms_get_the_same_prompt_visits_after_the_warm_start(tiny_run):
    for seed in map(str, SEEDS):
        compute = tiny_run[1]["compute"][seed]
        assert compute["sft"]["prompt_visits"] == compute["sft_grpo"]["prompt_visits"] == 2
        assert compute["warm"]["steps"] == 2


def test_each_trained_arm_is_a_whole_model(tiny_run):
    for seed in map(str, SEEDS):
        for arm in miniature.TRAINED:
            model, adapter = tiny_run[1]["models"][seed][arm]
            assert (Path(model) / "config.json").exists() and adapter is None  # full fine-tuning


def test_stage_folders_are_named_after_the_arms(tiny_run):
    out, result = tiny_run
    for arm in miniature.TRAINED:
        assert result["runs"]["0"][arm] == str(out / "seed0" / f"{arm}_train")
    for arm in miniature.ARMS + (miniature.WARM,):
        folder = Path(result["predictions"]["0"][arm])
        assert folder == out / "seed0" / f"{arm}_eval" and (folder / miniature.STAGE_FILE).exists()


def test_predictions_hold_one_record_per_heldout_row(tiny_run):
    for seed in map(str, SEEDS):
        preds = Path(tiny_run[1]["predictions"][seed]["sft_grpo"]) / "predictions.jsonl"
        assert len(preds.read_text().splitlines()) == 6


def test_each_seed_builds_its_own_tiny_model(tiny_run):
    models = tiny_run[1]["models"]
    w0 = (Path(models["0"]["warm"][0]) / "model.safetensors").read_bytes()
    w1 = (Path(models["1"]["warm"][0]) / "model.safetensors").read_bytes()
    assert w0 != w1


def test_the_result_file_and_the_table(tiny_run):
    out, result = tiny_run
    assert json.loads((out / miniature.RESULT_FILE).read_text())["sft"] == result["sft"]
    table = miniature.miniature_table(result)
    assert table.count("\n| ") == 3 and "seeds 0, 1" in table


def test_a_rerun_reuses_every_finished_stage(tiny_run):
    out, result = tiny_run
    again = miniature.run_miniature(out, seeds=SEEDS, **TINY_BUDGET)
    assert again["skipped_stages"]["0"] == sorted(["random_eval", "warm_train", "warm_eval", "sft_train", "sft_eval",
                                                   "sft_grpo_train", "sft_grpo_eval"])
    assert miniature.arm_results(again) == miniature.arm_results(result)


def test_a_rerun_with_other_settings_is_refused(tiny_run):
    with pytest.raises(ValueError, match="other settings"):
        miniature.run_miniature(tiny_run[0], seeds=[0], **{**TINY_BUDGET, "warm_steps": 3})
