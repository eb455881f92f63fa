"""Watching a run: format and accuracy logged beside the reward that trains (weight 0), and
validation on held-out rows every N steps, both in metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gui_r1_lite.rewards import build_rewards
from gui_r1_lite.training import ConfigError, TrainConfig, read_metrics, train
from gui_r1_lite.training.callbacks import MetricsJsonl, Validation, validation_metrics
from gui_r1_lite.training.trainer import validation_rows

ROOT = Path(__file__).resolve().parents[1]
HELD_OUT = str(ROOT / "data_samples" / "test")
SMALL = dict(min_pixels=3136, max_pixels=50176, device="cpu", logging_steps=1, save_steps=100)
CLICK = dict(gt_action=["click"], gt_bbox=[[0, 0, 50, 50]], gt_input_text=["no input text"])
TYPE = dict(gt_action=["type"], gt_bbox=[[-100, -100]], gt_input_text=["hello"])
RIGHT = "<think>x</think> <answer>[{'action': 'click', 'point': [10, 10], 'input_text': 'no input text'}]</answer>"


def test_format_and_accuracy_are_watched_with_weight_zero():
    funcs, weights = build_rewards({"gui_r1": 1.0}, monitor=True)
    assert [f.__name__ for f in funcs] == ["gui_r1", "format", "accuracy"] and weights == [1.0, 0.0, 0.0]
    assert [f([RIGHT], **CLICK) for f in funcs] == [[1.0], [1.0], [1.0]]
    # a reward the recipe learns from is not added again; without monitor nothing is added
    funcs, weights = build_rewards({"gui_r1": 1.0, "format": 0.5}, monitor=True)
    assert [f.__name__ for f in funcs] == ["gui_r1", "format", "accuracy"] and weights == [1.0, 0.5, 0.0]
    assert build_rewards({"gui_r1": 1.0})[1] == [1.0]


def test_a_watched_reward_abstains_where_every_learning_reward_does():
    # TRL gives a completion no reward scores (all None) no advantage; one scored by a weight-0
    # column alone would get reward 0 and an advantage, so the watched column must abstain there
    funcs, _ = build_rewards({"point_distance": 1.0}, monitor=True)
    assert [f(["x"], **TYPE) for f in funcs] == [[None], [None], [None]]
    assert [f(["x"], **CLICK) for f in funcs] == [[0.0], [0.0], [0.0]]
    funcs, _ = build_rewards({"point_distance": 1.0, "gui_r1": 1.0}, monitor=True)
    assert [f(["x"], **TYPE) for f in funcs] == [[None], [0.0], [0.0], [0.0]]


def test_the_run_s_reward_weights_follow_monitor_rewards(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert TrainConfig.from_dict({}).trainer_args().reward_weights == [1.0, 0.0, 0.0]
    off = TrainConfig.from_cli(["--monitor_rewards", "false"])
    assert off.monitor_rewards is False and off.trainer_args().reward_weights == [1.0]
    for recipe in ("grpo_tiny_cpu", "grpo_qwen2_5_vl_3b_qlora"):  # the recipes keep their learning weights
        cfg = TrainConfig.from_yaml(ROOT / "configs" / f"{recipe}.yaml", device="cpu")
        assert cfg.rewards == {"gui_r1": 1.0} and cfg.trainer_args().reward_weights == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("over, words", [
    ({"validation_data": "/nowhere/held_out.parquet"}, r"validation_data: /nowhere/held_out.parquet does not exist"),
    # a hub id's default split is its training rows, and a mistyped relative path looks like a hub id
    ({"validation_data": "data_samples/tset"}, "validation_data: data_samples/tset does not exist"),
    ({"validation_data": HELD_OUT, "validation_steps": 0}, "validation_steps must be at least 1"),
    ({"validation_data": HELD_OUT, "validation_limit": 0}, "validation_limit must be at least 1"),
    ({"validation_data": HELD_OUT, "validation_max_new_tokens": 0}, "validation_max_new_tokens must be at least 1"),
])
def test_bad_validation_settings_fail_before_the_model_loads(over, words, tmp_path, monkeypatch):
    from gui_r1_lite import modeling

    monkeypatch.setattr(modeling, "load_policy", lambda *a, **k: pytest.fail("the model was loaded"))
    with pytest.raises(ConfigError, match=words):  # a count is refused when the settings are read
        train(TrainConfig.from_dict({"output_dir": str(tmp_path / "run"), **SMALL, **over}))
    assert not (tmp_path / "run").exists()


def test_validation_is_refused_under_zero3_where_one_process_cannot_generate(monkeypatch):
    from gui_r1_lite.training.checks import check_config  # TRL's config would start a process group

    cfg = TrainConfig.from_dict({"validation_data": HELD_OUT, **SMALL})
    monkeypatch.setenv("WORLD_SIZE", "2")
    check_config(cfg)  # DDP / ZeRO-2: whole weights on every process
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3")
    with pytest.raises(ConfigError, match="ZeRO-3.*validation_data: null"):
        check_config(cfg)


def test_held_out_rows_are_shared_out_over_the_files(tmp_path):
    cfg = TrainConfig.from_dict({"validation_data": HELD_OUT, "validation_limit": 5, **SMALL})
    rows = validation_rows(cfg)
    assert [Path(r.sample.source).stem for r in rows] == ["miniwob_test", "realgui_test"] * 2 + ["miniwob_test"]
    assert all(r.model_size[0] * r.model_size[1] <= 50176 for r in rows)  # in the run's pixel frame
    assert validation_rows(TrainConfig.from_dict({})) == []
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(ConfigError, match="validation_data: .*no valid rows"):
        validation_rows(TrainConfig.from_dict({"validation_data": str(tmp_path / "bad.parquet")}))


def test_validation_metrics_of_right_and_wrong_answers(tmp_path):
    from gui_r1_lite.evaluate import predict

    rows = validation_rows(TrainConfig.from_dict({"validation_data": HELD_OUT, "validation_limit": 6, **SMALL}))
    right = predict("oracle", rows, tmp_path / "oracle.jsonl", min_pixels=3136, max_pixels=50176, progress=False)
    got = validation_metrics(right, rows, "official")
    assert got == {"validation/click_accuracy": 1.0, "validation/format_rate": 1.0, "validation/type_accuracy": 1.0,
                   "validation/strict_step_success": 1.0, "validation/reward": 1.0, "validation/rows": 6}
    wrong = [{**r, "completion": "I would click it", "format_ok": False, "pred_action": None, "pred_coord": None,
              "pred_input_text": None} for r in right]
    got = validation_metrics(wrong, rows, "official")
    assert {k: v for k, v in got.items() if k != "validation/rows"} == dict.fromkeys(
        ["validation/click_accuracy", "validation/format_rate", "validation/type_accuracy",
         "validation/strict_step_success", "validation/reward"], 0.0)


def test_validation_answers_greedily_in_eval_mode_on_the_main_process_only(tiny_policy, tmp_path):
    rows = validation_rows(TrainConfig.from_dict({"validation_data": HELD_OUT, "validation_limit": 2, **SMALL}))
    modes = []
    generate = tiny_policy.model.generate

    def spy(*args, **kw):
        modes.append((tiny_policy.model.training, kw["generation_config"].do_sample))
        return generate(*args, **kw)
    tiny_policy.model.generate = spy
    tiny_policy.model.train()
    metrics = MetricsJsonl()
    t_last = metrics.t_last
    cb = Validation(tiny_policy, rows, steps=2, max_new_tokens=6, batch_size=2, compat="official",
                    pixels=(3136, 50176), metrics=metrics)
    args = SimpleNamespace(output_dir=str(tmp_path))
    for step, main in [(1, True), (2, False), (2, True)]:
        cb.on_step_end(args, SimpleNamespace(global_step=step, epoch=0.5, is_world_process_zero=main), None)
    assert modes == [(False, False)] and tiny_policy.model.training  # eval mode to answer, training mode after
    [record] = read_metrics(tmp_path)
    assert record["step"] == 2 and record["validation/rows"] == 2 and record["validation/seconds"] > 0
    assert metrics.t_last == pytest.approx(t_last + record["validation/seconds"], abs=1e-3)  # not a step's time
    answers = [json.loads(line) for line in (tmp_path / "validation" / "step-2.jsonl").read_text().splitlines()]
    assert [a["id"] for a in answers] == [r.sample.id for r in rows]


def test_watching_a_run_does_not_change_its_training(tiny_model_dir, toy_data, tmp_path, varying_reward):
    # the same seeded run twice: watched (format/accuracy columns, validation every 2 steps) and not
    common = dict(model=str(tiny_model_dir), train_data=toy_data, max_steps=4, num_generations=4, per_device_train_batch_size=4,
                  max_completion_length=10, learning_rate=5e-2, rewards={"gui_r1": 1.0, varying_reward: 1.0}, **SMALL)
    watched = train(TrainConfig.from_dict(dict(
        common, output_dir=str(tmp_path / "watched"), validation_data=HELD_OUT, validation_steps=2,
        validation_limit=2, validation_max_new_tokens=8)))
    plain = train(TrainConfig.from_dict(dict(common, output_dir=str(tmp_path / "plain"), monitor_rewards=False)))
    logs, plain_logs = read_metrics(watched.metrics_path), read_metrics(plain.metrics_path)
    steps = [r for r in logs if "loss" in r]
    columns = {"rewards/gui_r1/mean", "rewards/format/mean", "rewards/accuracy/mean", f"rewards/{varying_reward}/mean"}
    assert len(steps) == 4 and all(columns <= set(r) for r in steps)
    assert not any("rewards/format/mean" in r for r in plain_logs)
    # what trains is the same: rewards, loss, and the weights the run ends with
    same = ("loss", "reward", "reward_std", "kl", f"rewards/{varying_reward}/mean", "rewards/gui_r1/mean")
    assert [{k: r[k] for k in same} for r in steps] == [{k: r[k] for k in same} for r in plain_logs if "loss" in r]
    ends = [json.loads((Path(run.output_dir) / "ranks" / "rank0.json").read_text())["trainable_fingerprint"]
            for run in (watched, plain)]
    assert ends[0] == ends[1]
    # validation: one record at steps 2 and 4, fractions in [0, 1]; none when it is off
    checks = [r for r in logs if "validation/rows" in r]
    assert [r["step"] for r in checks] == [2, 4] and all(r["validation/rows"] == 2 for r in checks)
    for r in checks:
        values = [v for k, v in r.items() if k.startswith("validation/") and k not in ("validation/rows",
                                                                                       "validation/seconds")]
        assert values and all(v is None or 0.0 <= v <= 1.0 for v in values), r
    assert not any(k.startswith("validation/") for r in plain_logs for k in r)
