"""GUI-R1 in miniature: row ids, settings, data splits, the stage cache, the report, seeds side by side
in processes of their own, the validation sweep's grid, and a whole run (every arm, every stage) on a
tiny budget, with online stages played by a stand-in of the live-page evaluator."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from gui_r1_lite import progress
from gui_r1_lite.data import load_gui_r1
from gui_r1_lite.errors import RunFailed, UsageError
from gui_r1_lite.runio import read_json, read_jsonl, write_jsonl_atomic
from harness import miniature
from harness.miniature.__main__ import main as miniature_main
from harness.miniature.__main__ import parse_overrides
from harness.miniature.parallel import run_parallel
from harness.miniature.runner import SFT_BUDGET_FILE, STAGES_PER_SEED
from harness.miniature.settings import SECONDS_CHOSEN
from harness.miniature.stages import run_stage
from study import __main__ as study_cli
from study.__main__ import main
from study.orchestrate import run_study, share_stages
from study.sweep import SHIPPED_EVIDENCE, choose, config_name, configurations, run_sweep, sweep_table
from study.tables import compute_table

TINY_BUDGET = dict(base_model=None, tiny={}, warm_steps=2, sft_batch=2, extra_prompts=2, grpo_prompts_per_step=1, num_generations=2,
                   max_completion_length=8, max_new_tokens=8, eval_limit=6, eval_batch_size=6,
                   tasks=("click-tab", "login-user"), min_heldout_rows=1)
SEEDS = [0, 1]


def test_row_ids_give_task_and_seed():
    assert miniature.task_of("miniwob/click-tab/seed1003/step0") == "click-tab"
    assert miniature.seed_of("miniwob/login-user/seed25/step2") == 25
    assert (miniature.task_of("generated/colour/seed3/step7"), miniature.seed_of("generated/colour/seed3/step7")) \
        == ("colour", 3)
    with pytest.raises(ValueError, match="not of the form"):
        miniature.task_of("web/index/click0")


@pytest.mark.parametrize("over, words", [
    ({"fair": "flops"}, "fair must be"),
    ({"warm_steps": 0, "base_model": None}, "warm_steps"),
    ({"warm_steps": -1}, "warm_steps"),
    ({"num_generations": 1}, "num_generations"),
    ({"sft_extra_stop": 0.0}, "sft_extra_stop"),
    ({"threads": 0}, "threads"),
    ({"online_arms": ("oracle",)}, "online_arms"),
    ({"online_episodes": 2, "online_seed_start": 1000}, "online_seed_start"),
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


def test_a_rate_written_1e_4_is_a_number_though_yaml_1_1_reads_it_as_text():
    overrides = parse_overrides(["sft_lr=1e-4", "grpo_lr=3E-5"])
    assert overrides == {"sft_lr": "1e-4", "grpo_lr": "3E-5"}   # what PyYAML gives
    settings = miniature.MiniatureSettings.from_overrides(**overrides)
    assert (settings.sft_lr, settings.grpo_lr) == (1e-4, 3e-5)
    with pytest.raises(TypeError, match="sft_lr must be a number"):
        miniature.MiniatureSettings.from_overrides(sft_lr="fast")


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
    assert default_split["n_heldout"] == len(held) >= miniature.MiniatureSettings().min_heldout_rows >= 100


def test_validation_scores_on_seeds_25_to_29_of_the_training_file(tmp_path):
    val = miniature.prepare_data(tmp_path, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                                 miniature.MiniatureSettings(), validate=True)
    assert {miniature.seed_of(s.id) for s in load_gui_r1(val["heldout"])} <= set(range(25, 30))


def test_validation_seeds_that_overlap_the_training_seeds_are_refused(tmp_path):
    with pytest.raises(ValueError, match="overlap"):
        miniature.prepare_data(tmp_path, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                               miniature.MiniatureSettings(validation_seeds=(20, 29)), validate=True)


def test_a_task_the_training_file_does_not_hold_is_refused_naming_the_file(tmp_path):
    with pytest.raises(ValueError, match=r"miniwob_train.parquet: unknown task\(s\) \['click-everything'\]"):
        miniature.prepare_data(tmp_path, miniature.DEFAULT_TRAIN, miniature.DEFAULT_HELDOUT,
                               miniature.MiniatureSettings(tasks=("click-tab", "click-everything")))


def test_the_warm_start_starts_from_the_base_folder_when_one_is_set(tmp_path):
    from harness.miniature.stages import train_config

    kw = dict(method="sft", start=None, train_file="t.parquet", steps=2, lr=1e-3, seed=0, scheduler="cosine")
    assert train_config(miniature.MiniatureSettings(base_model=None), tmp_path, **kw)["model"] == "tiny"
    # the default, grounding/base, is the repository's shipped base from whatever folder the run starts in
    shipped = train_config(miniature.MiniatureSettings(), tmp_path, **kw)["model"]
    assert Path(shipped).resolve() == (Path(miniature.DEFAULT_TRAIN).parents[2] / "grounding" / "base").resolve()
    based = miniature.MiniatureSettings(base_model=str(tmp_path / "base"))
    assert train_config(based, tmp_path, **kw)["model"] == str(tmp_path / "base")
    assert train_config(based, tmp_path, **{**kw, "start": ("prev/model", None)})["model"] == "prev/model"


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


def test_fair_seconds_gives_sft_the_grpo_arm_s_training_time(tmp_path):
    run = miniature.SeedRun(tmp_path, 0, miniature.MiniatureSettings(fair="seconds", sft_extra_stop=1.0), {})
    run.stages = {"warm_train": {"train_runtime": 20.0, "seconds": 25.0, "steps": 10},
                  "sft_grpo_train": {"train_runtime": 30.0, "seconds": 40.0, "steps": 5}}
    assert run.sft_steps() == 15  # 30 s of GRPO at 2 s per SFT step
    run.settings = miniature.MiniatureSettings(extra_prompts=160, sft_batch=8, sft_extra_stop=1.0)
    assert run.sft_steps() == 20  # "visits": 160 prompts, 8 a step
    run.settings = miniature.MiniatureSettings(extra_prompts=160, sft_batch=8, sft_extra_stop=0.5)
    assert run.sft_budget() == {"fair": "visits", "budget_steps": 20, "stop": 0.5, "steps": 10}  # early stopping


def test_fair_seconds_counts_cpu_seconds_where_both_stages_have_them(tmp_path):
    run = miniature.SeedRun(tmp_path, 0, miniature.MiniatureSettings(fair="seconds", sft_extra_stop=1.0), {})
    run.stages = {"warm_train": {"train_runtime": 20.0, "train_cpu_seconds": 10.0, "seconds": 25.0, "steps": 10},
                  "sft_grpo_train": {"train_runtime": 90.0, "train_cpu_seconds": 30.0, "seconds": 95.0, "steps": 5}}
    budget = run.sft_budget()  # the GRPO stage ran while the machine was busy: its wall time is not its work
    assert budget["clock"] == "cpu" and budget["grpo_seconds"] == 30.0 and budget["steps"] == 30


def test_the_task_mix_is_the_rule_s_choice_on_the_training_split():
    """SEEING_TASKS is what the rule written in settings.py picks from the shipped training file: not a layout
    task, and a best blind score (one point per step, the screen unseen) below BLIND_CEILING."""
    from gui_r1_lite.data import load_gui_r1

    train = miniature.select_rows(load_gui_r1(miniature.DEFAULT_TRAIN).samples, None, (0, 24))
    blind = miniature.best_blind_score(train)
    assert set(blind) == set(miniature.ALL_TASKS)
    picked = tuple(sorted(t for t, v in blind.items() if t not in miniature.LAYOUT_TASKS
                          and v < miniature.BLIND_CEILING))
    assert picked == miniature.SEEING_TASKS == miniature.DEFAULT_TASKS
    assert blind["login-user"] == 1.0 and blind["click-test"] == pytest.approx(0.6)  # a layout task; one left out


def test_the_best_blind_score_takes_one_point_per_step():
    from types import SimpleNamespace as Row

    def row(step, box):
        return Row(id=f"miniwob/t/seed0/step{step}", gt_action="click", gt_bbox=box)
    left, right = (0.0, 0.0, 0.2, 0.2), (0.8, 0.8, 1.0, 1.0)
    rows = [row(0, left), row(0, left), row(0, right), row(1, right)]  # step 0: 2 of 3 at best; step 1: 1 of 1
    assert miniature.best_blind_score(rows) == {"t": 0.75}


def test_with_no_warm_start_sft_seconds_stop_on_the_grpo_arm_s_cpu_seconds(tmp_path):
    run = miniature.SeedRun(tmp_path, 0, miniature.MiniatureSettings(fair="seconds", sft_extra_stop=0.5), {})
    run.stages = {"warm_train": {"steps": 0, "train_cpu_seconds": 0.0, "seconds": 0.1},
                  "sft_grpo_train": {"train_runtime": 90.0, "train_cpu_seconds": 30.0, "seconds": 95.0, "steps": 5}}
    budget = run.sft_budget()  # nothing was trained to time an SFT step: the SFT run stops on the clock itself
    assert budget["clock"] == "cpu" and budget["cpu_seconds"] == 15.0 and budget["steps"] >= 20 * 50


def test_fair_seconds_keeps_the_steps_it_resolved_to_for_a_rerun(tmp_path):
    run = miniature.SeedRun(tmp_path, 0, miniature.MiniatureSettings(fair="seconds", sft_extra_stop=1.0), {})
    run.stages = {"warm_train": {"train_runtime": 20.0, "seconds": 25.0, "steps": 10},
                  "sft_grpo_train": {"train_runtime": 30.0, "seconds": 40.0, "steps": 5}}
    assert run.sft_steps() == 15
    assert read_json(tmp_path / "seed0" / SFT_BUDGET_FILE)["grpo_seconds"] == 30.0
    run.stages["sft_grpo_train"]["train_runtime"] = 90.0  # a rerun measures other seconds (load) ...
    assert run.sft_steps() == 15  # ... and trains the steps the first run resolved to


def test_a_seed_s_stages_and_the_online_ones_when_asked_for():
    names = miniature.stage_names(miniature.MiniatureSettings())
    assert len(names) == STAGES_PER_SEED and names[0] == "random_eval" and "sft_grpo_train" in names
    with_online = miniature.stage_names(miniature.MiniatureSettings(online_episodes=3, online_arms=("sft",)))
    assert with_online == [*names, "sft_online"]


# --- seeds side by side --------------------------------------------------------------------------------


def _square(x: int) -> int:
    return x * x


def _fail_on_two(x: int) -> int:
    if x == 2:
        raise ValueError("two is not allowed")
    return x


def _die_on_two(x: int) -> int:
    if x == 2:
        os._exit(9)  # as a process killed for memory ends: no word back
    return x


def test_jobs_run_in_processes_of_their_own_and_come_back_by_key():
    assert run_parallel(_square, {"a": (2,), "b": (3,), "c": (4,)}, workers=2, threads=1,
                        name=str) == {"a": 4, "b": 9, "c": 16}  # a third job starts when one of two ends


@pytest.mark.parametrize("fn, words", [(_fail_on_two, "job 2: ValueError: two is not allowed"),
                                       (_die_on_two, r"job 2: its process ended \(exit code 9\) without a result")])
def test_a_failed_job_is_named_and_the_others_finish(tmp_path, fn, words):
    watched = []
    with pytest.raises(RunFailed, match=words) as err:
        run_parallel(fn, {1: (1,), 2: (2,)}, workers=2, threads=1, poll=0.2,
                     name=lambda k: f"job {k}", watch=lambda: watched.append(1))
    assert "job 1" not in str(err.value) and "continues" in str(err.value)
    assert watched  # the main process's live view was called while the jobs ran


def test_callbacks_need_the_seeds_in_this_process(tmp_path):
    with pytest.raises(ValueError, match="workers=1"):
        miniature.run_miniature(tmp_path, seeds=[0, 1], workers=2, callbacks=[object()], **TINY_BUDGET)


def test_online_stages_need_the_live_page_evaluator(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "miniwob", None)  # as if the package were not there
    with pytest.raises(ValueError, match="online_episodes > 0 needs the live MiniWoB.* miniwob is missing"):
        miniature.run_miniature(tmp_path, seeds=[0], online_episodes=2, **TINY_BUDGET)


# --- the validation sweep and the study's shared stages -----------------------------------------------


def test_the_study_lives_beside_the_packages_and_neither_imports_it():
    import subprocess

    root = Path(__file__).resolve().parents[1]
    code = ("import sys, harness.miniature, harness.miniature.__main__, harness.pipeline, "
            "harness.experiments; print(sorted(m for m in sys.modules if m == 'study' or m.startswith('study.')))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"  # the miniature and notebook 04's path load nothing of the study
    imports_study = re.compile(r"^\s*(?:from|import)\s+study(?:[.\s]|$)", re.MULTILINE)
    assert imports_study.search("    from study.sweep import run_sweep") and not imports_study.search("from .x import study_stats")
    for path in [*(root / "gui_r1_lite").rglob("*.py"), *(root / "harness").rglob("*.py")]:
        assert not imports_study.search(path.read_text(encoding="utf-8")), path
    assert not list((root / "harness" / "miniature").glob("*.json"))  # the sweep's evidence moved with it
    assert root / "docs" / "results" / "sweep_evidence.json" == SHIPPED_EVIDENCE and SHIPPED_EVIDENCE.exists()
    helped = subprocess.run([sys.executable, "-m", "study", "--help"], cwd=root, capture_output=True, text=True)
    assert helped.returncode == 0 and "--study OUT" in helped.stdout and "--sweep OUT" in helped.stdout
    with pytest.raises(SystemExit):  # the miniature's own command runs the miniature only
        miniature_main(["--study", "x"])


def test_the_sweep_gives_both_arms_the_same_number_of_configurations():
    configs = configurations()
    assert len(configs["sft"]) == len(configs["sft_grpo"]) == 6
    assert {tuple(c) for c in configs["sft"]} == {("sft_extra_lr", "sft_extra_stop")}  # lr AND stopping point
    assert {tuple(c) for c in configs["sft_grpo"]} == {("grpo_lr", "temperature")}
    with pytest.raises(ValueError, match="as many configurations"):
        configurations({"sft": {"sft_extra_lr": (1e-5,)}, "sft_grpo": {"grpo_lr": (1e-4, 2e-4)}})
    assert config_name("sft", {"sft_extra_lr": 1e-05, "sft_extra_stop": 0.5}) == "sft-sft_extra_lr=1e-05-sft_extra_stop=0.5"
    assert config_name("sft", {"sft_extra_lr": 1e-05}, "seconds") == "sft-sft_extra_lr=1e-05-fair=seconds"
    assert config_name("sft_grpo", {"grpo_lr": 1e-4}, "seconds") == "sft_grpo-grpo_lr=0.0001"  # one GRPO run serves both


def test_the_settings_are_the_shipped_sweep_s_choices():
    """The defaults are the shipped sweep's choices, under both budgets where the sweep ran both (the
    seconds-matched SFT arm's are `SECONDS_CHOSEN`; empty where the sweep ran the visits budget only)."""
    shipped = read_json(SHIPPED_EVIDENCE)
    assert shipped["grid"] == {a: {k: list(v) for k, v in knobs.items()} for a, knobs in miniature.SWEEP_GRID.items()}
    assert shipped["seeds"] and "visits" in shipped["chosen"] and set(shipped["chosen"]) <= set(miniature.FAIR_MODES)
    for fair, chosen in shipped["chosen"].items():  # the choice is the best mean, the first in grid order on a tie
        for arm, config in chosen.items():
            means = [row["click_accuracy"] for row in shipped["means"][fair][arm]]
            assert shipped["means"][fair][arm][means.index(max(means))]["config"] == config, (fair, arm)
    defaults = miniature.MiniatureSettings()
    for arm in ("sft", "sft_grpo"):
        assert {k: getattr(defaults, k) for k in shipped["chosen"]["visits"][arm]} == shipped["chosen"]["visits"][arm]
    if "seconds" in shipped["chosen"]:
        assert shipped["chosen"]["seconds"]["sft"] == SECONDS_CHOSEN
        assert shipped["chosen"]["seconds"]["sft_grpo"] == shipped["chosen"]["visits"]["sft_grpo"]  # one set of GRPO runs
    else:
        assert SECONDS_CHOSEN == {}  # not swept under seconds: the seconds part uses the visits choice


def test_the_sweep_chooses_the_best_mean_over_seeds_and_records_ties():
    configs = {"sft": [{"sft_extra_lr": 1e-5}, {"sft_extra_lr": 1e-4}], "sft_grpo": [{"grpo_lr": 1e-4}, {"grpo_lr": 2e-4}]}
    runs = [{"arm": "sft", "config": {"sft_extra_lr": 1e-5}, "metrics": {"click_accuracy": v}} for v in (0.4, 0.6)]
    runs += [{"arm": "sft", "config": {"sft_extra_lr": 1e-4}, "metrics": {"click_accuracy": v}} for v in (0.7, 0.2)]
    runs += [{"arm": "sft_grpo", "config": c, "metrics": {"click_accuracy": 0.5}} for c in configs["sft_grpo"]]
    chosen = choose(runs, configs)
    assert chosen["sft"]["config"] == {"sft_extra_lr": 1e-5} and chosen["sft"]["click_accuracy"] == pytest.approx(0.5)
    assert [row["blind"] for row in chosen["sft"]["means"]] == [None, None]  # runs not scored blind
    for r, blind in zip(runs, (0.9, 0.9, 0.0, 0.1, 0.2, 0.3), strict=True):
        r["blind_metrics"] = {"click_accuracy": blind}
    blinded = choose(runs, configs)  # the white-screen score is reported, and the choice never reads it
    assert blinded["sft"]["config"] == chosen["sft"]["config"]
    assert [row["blind"]["click_accuracy"] for row in blinded["sft"]["means"]] == pytest.approx([0.9, 0.05])
    assert chosen["sft_grpo"]["config"] == {"grpo_lr": 1e-4} and chosen["sft_grpo"]["ties"] == [{"grpo_lr": 2e-4}]


def test_the_seconds_matched_part_shares_the_stages_fair_does_not_change(tmp_path):
    src, dst = tmp_path / "visits", tmp_path / "seconds"
    for name in ("warm_train", "sft_train"):
        (src / "seed0" / name).mkdir(parents=True)
        (src / "seed0" / name / "stage.json").write_text("{}")
        (src / "seed0" / name / "model.safetensors").write_text("weights")
    (src / "seed0" / "sft_grpo_train").mkdir()  # unfinished: not shared
    assert share_stages(src, dst, [0]) == ["seed0/warm_train"]
    shared = dst / "seed0" / "warm_train" / "model.safetensors"
    assert shared.read_text() == "weights" and not (dst / "seed0" / "sft_train").exists()
    assert os.stat(shared).st_ino == os.stat(src / "seed0" / "warm_train" / "model.safetensors").st_ino  # a link
    assert share_stages(src, dst, [0]) == []  # already there


def test_aggregate_uses_the_sample_standard_deviation():
    assert miniature.aggregate([0.2, 0.4]) == {"mean": pytest.approx(0.3), "std": pytest.approx(0.1414, abs=1e-4),
                                               "per_seed": [0.2, 0.4]}
    assert miniature.aggregate([0.5])["std"] == 0.0


# --- a whole run on a tiny budget ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, dict]:
    """Both seeds side by side (the default: a process each on this 2-core machine), as the main job
    runs them: reporting progress."""
    out = tmp_path_factory.mktemp("mini") / "mini"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(progress.PROGRESS_ENV, str(out.parent / "progress.jsonl"))
        return out, miniature.run_miniature(out, seeds=SEEDS, workers=2, **TINY_BUDGET)


def test_the_seeds_ran_side_by_side_on_one_thread_each(tiny_run):
    _, result = tiny_run
    assert result["workers"] == 2 and result["threads"] == 1
    for seed in SEEDS:
        for name in miniature.stage_names(miniature.MiniatureSettings()):
            record = read_json(tiny_run[0] / f"seed{seed}" / name / miniature.STAGE_FILE)
            assert record["threads"] == 1 and record["deterministic"] is True


def test_every_stage_reports_its_start_steps_and_end(tiny_run):
    records = read_jsonl(tiny_run[0].parent / "progress.jsonl")
    starts = {r["stage"]: r for r in records if r["event"] == "start"}  # the two seeds' records interleave
    per_seed = STAGES_PER_SEED
    assert sorted(r["index"] for r in starts.values()) == list(range(1, 2 * per_seed + 1))
    assert {r["total"] for r in starts.values()} == {2 * per_seed}
    assert starts["seed 1 · random_eval"]["index"] == per_seed + 1 and starts["seed 0 · warm_train"]["index"] == 3
    assert starts["seed 0 · random_blind_eval"]["index"] == 2  # the blind check right after its seeing stage
    assert [r["step"] for r in records if r["stage"] == "seed 0 · warm_train" and r["event"] == "step"][-1] == 2
    assert starts["seed 0 · warm_train"]["steps"] == 2 and starts["seed 0 · random_eval"]["steps"] == 6
    assert Path(starts["seed 0 · random_eval"]["count_lines"]).name == "predictions.jsonl"
    ends = [r["stage"] for r in records if r["event"] == "end"]
    assert sorted(ends) == sorted(starts)


def test_every_arm_reports_every_metric_for_every_seed(tiny_run):
    _, result = tiny_run
    assert set(miniature.arm_results(result)) - {"looks", "warm_start"} == set(miniature.ARMS) == {"random", "sft", "sft_grpo"}
    for arm in miniature.ARMS:
        for metric in miniature.METRICS:
            v = result[arm][metric]
            assert len(v["per_seed"]) == 2 and all(0.0 <= x <= 1.0 for x in v["per_seed"])
            assert v["mean"] == pytest.approx(sum(v["per_seed"]) / 2)
    assert result["n_heldout"] == 6
    gain = result["stats"]["gain"]["click_accuracy"]
    paired = [b - a for a, b in zip(result["sft"]["click_accuracy"]["per_seed"],
                                    result["sft_grpo"]["click_accuracy"]["per_seed"], strict=True)]
    assert gain["per_seed"] == pytest.approx(paired) and -1.0 <= gain["ci95"][0] <= gain["mean"] <= gain["ci95"][1] <= 1.0


def test_every_scored_arm_is_scored_blind_on_the_same_rows(tiny_run):
    out, result = tiny_run
    for seed in map(str, SEEDS):
        for arm in ("random", "warm", "sft", "sft_grpo"):
            seeing = Path(result["predictions"][seed][arm])
            blind = Path(result["predictions"][seed][f"{arm}_blind"])
            assert blind == out / f"seed{seed}" / f"{arm}_blind_eval" and (blind / miniature.STAGE_FILE).exists()
            assert read_json(blind / "metrics.json")["blind"] is True and read_json(blind / "run.json")["made_by"][
                "blind"] is True
            assert [r["id"] for r in read_jsonl(blind / "predictions.jsonl")] == \
                [r["id"] for r in read_jsonl(seeing / "predictions.jsonl")]  # the same rows, the same settings
            assert read_json(blind / "run.json")["settings"] == read_json(seeing / "run.json")["settings"]
    for arm in miniature.ARMS:
        assert len(result[arm]["blind"]["click_accuracy"]["per_seed"]) == 2
    assert len(result["warm_start"]["blind"]["click_accuracy"]["per_seed"]) == 2
    assert set(result["looks"]) == {"random", "warm", "sft", "sft_grpo"}
    assert result["looks"]["random"] == {"mean": 0.0, "ci95": [0.0, 0.0], "per_seed": [0.0, 0.0]}  # random looks = 0
    for arm, looks in result["looks"].items():
        paired = [a - b for a, b in zip(result["stats"]["arms"][arm]["click_accuracy"]["per_seed"],
                                        result["stats"]["arms"][f"{arm}_blind"]["click_accuracy"]["per_seed"],
                                        strict=True)]
        assert looks["per_seed"] == pytest.approx(paired) and looks["ci95"][0] <= looks["mean"] <= looks["ci95"][1]
    assert set(result["distinct_answers"]["sft"]) <= {"click-tab", "login-user"}
    summary = miniature.arm_results(result)
    assert set(summary) == {*miniature.ARMS, "warm_start", "looks"} and summary["sft"]["blind"] == result["sft"]["blind"]


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
    assert table.count("\n| ") == 4 and "seeds 0, 1" in table   # the arms and the warm start they begin from
    assert "looks: seeing − white, points [95 % CI]" in table.splitlines()[0]
    assert table.splitlines()[3].startswith("| warm start (reference) | ")


def test_the_compute_table_shows_each_training_stage_s_cost_over_seeds(tiny_run):
    _, result = tiny_run
    table = compute_table(result).splitlines()
    assert [r.split(" | ")[0] for r in table[2:]] == ["| warm start (both arms)", "| SFT", "| SFT → GRPO"]
    grpo = dict(zip(table[0].split(" | "), table[4].split(" | "), strict=True))
    steps = {result["compute"][str(s)]["sft_grpo"]["steps"] for s in SEEDS}
    assert grpo["optimiser steps"] == f"{steps.pop():,}" and not steps   # one count: no range
    cpu = [result["compute"][str(s)]["sft_grpo"]["train_cpu_seconds"] for s in SEEDS]
    assert grpo["training-loop CPU s"].startswith(f"{sum(cpu) / len(cpu):,.0f}")
    assert table[3].split(" | ")[3] == "–"   # SFT samples no answers


def test_a_rerun_reuses_every_finished_stage(tiny_run):
    out, result = tiny_run
    again = miniature.run_miniature(out, seeds=SEEDS, **TINY_BUDGET)
    assert again["skipped_stages"]["0"] == sorted(miniature.stage_names(miniature.MiniatureSettings()))
    assert len(again["skipped_stages"]["0"]) == 11  # the random baseline, three trained arms, each scored blind too
    assert miniature.arm_results(again) == miniature.arm_results(result)


def test_a_rerun_with_other_settings_is_refused(tiny_run):
    with pytest.raises(ValueError, match=r"other settings .*: settings.warm_steps: 2 there, 3 now\)"):
        miniature.run_miniature(tiny_run[0], seeds=[0], **{**TINY_BUDGET, "warm_steps": 3})
    with pytest.raises(ValueError, match="settings.threads: 1 there, 2 now"):  # the thread count can change the figures
        miniature.run_miniature(tiny_run[0], seeds=[0], **{**TINY_BUDGET, "threads": 2})


def test_a_base_or_data_replaced_in_place_is_another_run(tmp_path):
    """The run record holds what the base model's and the data files' contents are, not only their paths: a
    base pretrained again into the same folder, or a data file written anew, must not reuse the stages
    trained from the old one."""
    from harness.miniature.runner import check_same_settings, run_record

    base, train, heldout = tmp_path / "base", tmp_path / "train.parquet", tmp_path / "heldout.parquet"
    base.mkdir()
    (base / "config.json").write_text("{}")
    (base / "model.safetensors").write_bytes(b"weights 1")
    train.write_bytes(b"rows 1")
    heldout.write_bytes(b"held out")
    settings = miniature.MiniatureSettings(base_model=str(base))
    out = tmp_path / "run"
    out.mkdir()
    check_same_settings(out, run_record(settings, train, heldout, False))
    check_same_settings(out, run_record(settings, train, heldout, False))  # the same contents: the same run
    (base / "model.safetensors").write_bytes(b"weights 2")
    with pytest.raises(UsageError, match=r"other settings .*sources\.base_model: "):
        check_same_settings(out, run_record(settings, train, heldout, False))
    (base / "model.safetensors").write_bytes(b"weights 1")
    train.write_bytes(b"rows 2")
    with pytest.raises(UsageError, match=r"other settings .*sources\.train_data: "):
        check_same_settings(out, run_record(settings, train, heldout, False))
    assert "base_model" not in run_record(miniature.MiniatureSettings(base_model=None), train, heldout,
                                          False)["sources"]


def test_the_data_split_is_made_once_per_run_folder(tiny_run):
    record = tiny_run[0] / "data" / "data.json"
    made = os.stat(record).st_mtime_ns
    miniature.run_miniature(tiny_run[0], seeds=[0], **TINY_BUDGET)
    assert os.stat(record).st_mtime_ns == made


def test_a_crash_names_the_seed_and_stage_and_keeps_the_other_seed_s_stages(tiny_run, tmp_path):
    out = tmp_path / "crash"
    share_stages(tiny_run[0], out, SEEDS, ["random_eval", "warm_train"])  # both seeds' first stages: no retraining
    (out / "seed1" / "sft_grpo_train").write_text("a file where the stage's folder goes")
    with pytest.raises(RunFailed, match=r"seed 1 · sft_grpo_train: NotADirectoryError") as err:
        miniature.run_miniature(out, seeds=SEEDS, workers=2, **TINY_BUDGET)
    assert "seed 0" not in str(err.value)
    assert all((out / "seed0" / name / miniature.STAGE_FILE).exists()
               for name in miniature.stage_names(miniature.MiniatureSettings()))


class _StandIn:
    """The live-page evaluator's interface (`online.evaluate_online`), recording its calls."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def evaluate_online(self, policy, tasks, episodes, seed_start, out_dir, *, max_steps=None, adapter=None,
                        min_pixels=None, max_pixels=None, max_new_tokens=256, compat="official", progress=False):
        self.calls.append({"policy": policy, "tasks": tasks, "episodes": episodes, "seed_start": seed_start,
                           "out_dir": Path(out_dir), "pixels": (min_pixels, max_pixels), "adapter": adapter})
        solved = 1 if isinstance(policy, str) else 0  # trained models solve one episode a task, random none
        seeds = list(range(seed_start, seed_start + episodes))
        write_jsonl_atomic(Path(out_dir) / "episodes.jsonl", [  # as the evaluator records them: its first pages
            {"task": t, "seed": s, "steps": 2, "done": s < seed_start + solved, "raw_reward": 1.0,
             "success": s < seed_start + solved, "end": "done", "why": None} for t in tasks for s in seeds])
        return {"success": solved / episodes, "seeds": seeds,
                "tasks": {t: {"success": solved / episodes, "episodes": episodes, "ci95": [0.0, 1.0],
                              "mean_steps": 2.0} for t in tasks}}


def test_each_arm_plays_in_the_live_page_as_a_cached_stage(tiny_run, tmp_path, monkeypatch):
    stand_in = _StandIn()
    # the attribute the stage looks up at call time: a stub module in sys.modules alone is bypassed once
    # another test has imported harness.online (then `from .. import online` takes the package's attribute)
    monkeypatch.setattr("harness.online.evaluate_online", stand_in.evaluate_online)
    monkeypatch.setattr("harness.miniature.runner.online_missing", lambda: None)  # no browser needed
    out = tmp_path / "online"
    share_stages(tiny_run[0], out, SEEDS, miniature.stage_names(miniature.MiniatureSettings()))  # offline: done
    over = {**TINY_BUDGET, "online_episodes": 2, "online_seed_start": 3000}
    result = miniature.run_miniature(out, seeds=SEEDS, workers=1, **over)
    assert len(stand_in.calls) == 2 * len(miniature.ONLINE_ARMS)
    call = stand_in.calls[0]
    assert call["tasks"] == ["click-tab", "login-user"] and call["episodes"] == 2 and call["seed_start"] == 3000
    assert call["out_dir"] == out / "seed0" / "random_online" and call["pixels"][0] is not None
    assert type(call["policy"]).__name__ == "RandomBaseline" and call["policy"].seed == 0  # the seed's own random
    assert stand_in.calls[1]["policy"] == result["models"]["0"]["warm"][0]
    assert result["online"]["1"]["sft_grpo"]["tasks"]["click-tab"]["episodes"] == 2
    assert result["online_success"]["sft"]["per_seed"] == [0.5, 0.5]
    assert result["online_success"]["random"]["mean"] == 0.0
    assert result["online_runs"]["1"]["sft"] == str(out / "seed1" / "sft_online")
    # both trained arms solve the same pages: a paired gain of 0 in every draw
    assert result["stats"]["online_gain"] == {"mean": 0.0, "ci95": [0.0, 0.0], "per_seed": [0.0, 0.0], "seeds": SEEDS}
    again = miniature.run_miniature(out, seeds=SEEDS, workers=1, **over)
    assert len(stand_in.calls) == 8 and again["online"] == result["online"]  # read back, not played again


def test_the_sweep_tunes_both_arms_on_the_validation_seeds_only(tiny_run, tmp_path):
    out = tmp_path / "sweep"
    share_stages(tiny_run[0], out, [0], ["warm_train"])  # the seed's warm start, trained on seeds 0-24
    grid = {"sft": {"sft_extra_lr": (1e-5, 1e-4)}, "sft_grpo": {"temperature": (0.7, 1.0)}}
    result = run_sweep(out, [0], grid=grid, workers=1, **{**TINY_BUDGET, "temperature": 0.7})
    assert json.loads((out / "sweep.json").read_text())["chosen"] == result["chosen"]
    assert sorted((r["arm"], r["fair"] or "", tuple(r["config"].values())) for r in result["runs"]) == [
        ("sft", "seconds", (1e-5,)), ("sft", "seconds", (1e-4,)), ("sft", "visits", (1e-5,)),
        ("sft", "visits", (1e-4,)), ("sft_grpo", "", (0.7,)), ("sft_grpo", "", (1.0,))]  # GRPO runs once
    assert set(result["chosen"]) == {"visits", "seconds"} and result["seconds_basis"] == {"temperature": 0.7}
    assert all(set(c) == {"sft", "sft_grpo"} for c in result["chosen"].values())
    assert result["chosen"]["visits"]["sft_grpo"] == result["chosen"]["seconds"]["sft_grpo"]  # the same GRPO runs
    scored = load_gui_r1(result["data"]["heldout"])
    assert {miniature.seed_of(s.id) for s in scored} <= set(range(25, 30))  # never the held-out file
    grpo = read_json(out / "sft_grpo-temperature=0.7" / "seed0" / "sft_grpo_train" / miniature.STAGE_FILE)
    sft = read_json(out / "sft-sft_extra_lr=0.0001-fair=seconds" / "seed0" / "sft_train" / miniature.STAGE_FILE)
    assert sft["budget"]["fair"] == "seconds" and sft["budget"]["clock"] == "cpu"
    assert sft["budget"]["grpo_seconds"] == grpo["train_cpu_seconds"] > 0 and sft["train_cpu_seconds"] > 0
    visits = read_json(out / "sft-sft_extra_lr=0.0001" / "seed0" / "sft_train" / miniature.STAGE_FILE)
    assert visits["budget"]["fair"] == "visits" and visits["steps"] == visits["budget"]["steps"]
    assert all(r["train_seconds"] > 0 and 0.0 <= r["metrics"]["click_accuracy"] <= 1.0 for r in result["runs"])
    for r in result["runs"]:  # every configuration also scored with white screens, into its own folder
        blind = read_json(Path(r["folder"]) / f"{r['arm']}_blind_eval" / "metrics.json")
        assert r["blind_metrics"]["click_accuracy"] == blind["grounding"]["overall"]
    assert set(result["warm_start_blind"]) == {"0"} and (out / "seed0" / "warm_blind_eval").is_dir()
    shipped_shape = read_json(out / "sweep_evidence.json")
    assert shipped_shape["chosen"] == {f: {a: p["config"] for a, p in c.items()} for f, c in result["chosen"].items()}
    assert shipped_shape["seeds"] == [0] and shipped_shape["validation_rows_per_seed"] == result["data"]["n_heldout"]
    assert shipped_shape["warm_start_blind"] == result["warm_start_blind"]["0"]["click_accuracy"]
    table = sweep_table(result)
    assert "chosen" in table and "prompt visits" in table and "training seconds" in table
    assert "white screens %" in table and "with white screens)" in table
    again = run_sweep(out, [0], grid=grid, workers=1, fair_modes=("visits",), **{**TINY_BUDGET, "temperature": 0.7})
    assert set(again["chosen"]) == {"visits"} and again["chosen"]["visits"] == result["chosen"]["visits"]  # read back
    with pytest.raises(ValueError, match="fair_modes must be among"):
        run_sweep(out, [0], grid=grid, workers=1, fair_modes=("hours",), **{**TINY_BUDGET, "temperature": 0.7})


def test_the_sweep_command_runs_both_budgets_unless_one_is_named(monkeypatch, tmp_path):
    command = study_cli
    calls = []

    def fake_sweep(out, seeds, **kwargs):
        calls.append(kwargs)
        return {"chosen": {}, "seeds": seeds, "warm_start": {"0": {"click_accuracy": 0.5}}, "data": {"n_heldout": 1},
                "wall_seconds": 1.0}

    monkeypatch.setattr(command, "run_sweep", fake_sweep)
    command.main(["--sweep", str(tmp_path / "a")])
    command.main(["--sweep", str(tmp_path / "b"), "--set", "fair=seconds", "--set", "warm_steps=3"])
    assert calls[0]["fair_modes"] == ("visits", "seconds") and "fair" not in calls[0]
    assert calls[1]["fair_modes"] == ("seconds",) and calls[1]["warm_steps"] == 3 and "fair" not in calls[1]


def test_the_study_runs_every_part_and_records_its_wall_time(tiny_run, tmp_path, monkeypatch, capsys):
    out = tmp_path / "study"
    share_stages(tiny_run[0], out / "visits", [0], miniature.stage_names(miniature.MiniatureSettings()))
    study = run_study(out, [0], workers=1, online_episodes=0, **TINY_BUDGET)
    assert set(study["parts"]) == {"visits", "seconds", "all_tasks"} and study["wall_seconds"] > 0
    assert json.loads((out / "study.json").read_text())["wall_seconds"] == study["wall_seconds"]
    seconds = read_json(out / "seconds" / miniature.RESULT_FILE)
    assert seconds["settings"]["fair"] == "seconds" and "warm_train" in seconds["skipped_stages"]["0"]  # shared
    assert seconds["compute"]["0"]["sft"]["budget"]["fair"] == "seconds"
    assert read_json(out / "all_tasks" / miniature.RESULT_FILE)["settings"]["tasks"] is None
    md = (out / "study.md").read_text()
    assert md.count("\n## ") == 3 and md.count("| task | click rows | episodes |") == 3 and md.count("| stage |") == 3
    assert md.count("| task | click rows | distinct targets |") == 3  # the blind check per task, each part
    assert "Closed-loop success per task" not in md   # no episodes played: no online table
    (out / "study.md").unlink()
    assert main(["--study", str(out), "--report"]) == 0 and (out / "study.md").read_text() == md  # nothing ran
    # the command prints the same tables at the end of its run (the study itself is the one above)
    monkeypatch.setattr(study_cli, "run_study", lambda *args, **kwargs: study)
    capsys.readouterr()
    assert main(["--study", str(out)]) == 0 and md in capsys.readouterr().out
    moved = out.rename(tmp_path / "moved")   # the parts are read from the folder, not from where it once was
    assert main(["--study", str(moved), "--report"]) == 0 and (moved / "study.md").read_text() == md
    (moved / "all_tasks" / miniature.RESULT_FILE).unlink()
    assert main(["--study", str(moved), "--report"]) == 0
    assert "all_tasks/miniature.json is gone" in (moved / "study.md").read_text()


def test_report_needs_a_finished_study(tmp_path):
    with pytest.raises(UsageError, match="no finished study"):
        main(["--study", str(tmp_path), "--report"])
    with pytest.raises(SystemExit):
        main(["--sweep", str(tmp_path), "--report"])


@pytest.mark.slow
def test_with_no_warm_start_both_arms_start_from_the_base_itself(tmp_path, tiny_model_dir):
    """warm_steps 0 (the default): the `warm` stage trains nothing and is the base, scored as the arms' start;
    both arms train from the base folder; a seconds-matched SFT arm stops on the GRPO arm's CPU seconds."""
    budget = {**TINY_BUDGET, "base_model": str(tiny_model_dir), "warm_steps": 0, "fair": "seconds"}
    result = miniature.run_miniature(tmp_path / "m", seeds=[0], workers=1, **budget)
    compute, models = result["compute"]["0"], result["models"]["0"]
    assert compute["warm"]["steps"] == 0 and compute["warm"]["prompt_visits"] == 0
    assert models["warm"] == [str(tiny_model_dir), None] or models["warm"] == (str(tiny_model_dir), None)
    assert not (tmp_path / "m" / "seed0" / "warm_train" / "metrics.jsonl").exists()
    for arm in ("sft", "sft_grpo"):
        config = read_json(tmp_path / "m" / "seed0" / f"{arm}_train" / "run.json")
        assert Path(config["base_model"]["folder"]).resolve() == Path(tiny_model_dir).resolve(), arm
    sft_budget = read_json(tmp_path / "m" / "seed0" / SFT_BUDGET_FILE)
    stop = result["settings"]["sft_extra_stop"]
    assert sft_budget["cpu_seconds"] == pytest.approx(compute["sft_grpo"]["train_cpu_seconds"] * stop, abs=1e-3)
    assert compute["sft"]["steps"] >= 1 and compute["sft"]["train_cpu_seconds"] >= sft_budget["cpu_seconds"]
    assert miniature.miniature_table(result).splitlines()[3].startswith("| base (both arms' start) | ")


def test_the_base_model_is_a_setting_the_command_line_can_set():
    settings = miniature.MiniatureSettings.from_overrides(base_model="grounding/base")
    assert settings.base_model == "grounding/base" and settings.to_dict()["base_model"] == "grounding/base"


def test_the_study_skips_the_secondary_run_when_its_mix_is_every_task_of_the_file(tmp_path):
    from study.orchestrate import every_task

    folder = tmp_path / "visits"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "data.json").write_text(json.dumps({"key": {"train_data": str(miniature.DEFAULT_TRAIN)}}))
    part = {"folder": str(folder), "result": str(folder / miniature.RESULT_FILE)}

    def with_tasks(tasks):
        (folder / miniature.RESULT_FILE).write_text(json.dumps({"settings": {"tasks": tasks}}))
        return every_task(part)

    assert not with_tasks(list(miniature.LAYOUT_TASKS))
    assert with_tasks(list(miniature.ALL_TASKS)) and with_tasks(None)


def test_the_study_records_the_command_that_reruns_it():
    """Every setting a study changed is on its recorded command line (it once dropped them: a study run with
    `--set online_episodes=2` said only `--seeds 0,1,2,3,4 --no-all-tasks`)."""
    from study.orchestrate import STUDY_ONLINE_EPISODES, study_command

    line = study_command(Path("runs/s 1"), [0, 1], False, 2, {"tasks": ("click-link", "focus-text"),
                                                              "train_data": "d/t.parquet", "heldout_data": None,
                                                              "sft_lr": 1e-4, "base_model": "grounding/base"})
    assert line == ("python -m study --study 'runs/s 1' --seeds 0,1 --no-all-tasks --train-data d/t.parquet "
                    "--set online_episodes=2 --set 'tasks=[\"click-link\", \"focus-text\"]' --set sft_lr=0.0001 "
                    "--set base_model=grounding/base")
    assert study_command(Path("r"), [0], True, STUDY_ONLINE_EPISODES, {}) == "python -m study --study r --seeds 0"
