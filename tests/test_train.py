"""Training configuration and TRL wiring on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gui_r1_lite.train import ConfigError, TrainConfig, read_metrics, train

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(min_pixels=3136, max_pixels=50176, device="cpu", logging_steps=1, save_steps=100)


@pytest.mark.parametrize("over, words", [
    ({"per_device_train_batch_size": 3, "num_generations": 2}, "not divisible by num_generations"),
    ({"device": "cuda"}, "no CUDA device"),
    ({"num_generations": 1, "per_device_train_batch_size": 1}, "num_generations >= 2"),
    ({"rewards": {"nope": 1.0}}, "unknown reward"),
    ({"method": "ppo"}, "method must be"),
    ({"quantization": "3bit"}, "quantization must be"),
    ({"quantization": "4bit", "lora": False}, "without an adapter"),
    ({"use_vllm": True}, "CUDA"),
    ({"min_pixels": 10, "max_pixels": 5}, "min_pixels"),
    ({"model": "not-a-model"}, "neither 'tiny'"),
])
def test_invalid_configs_fail_before_loading(over, words):
    if over.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.raises(ConfigError, match=words):
        TrainConfig(**{**dict(per_device_train_batch_size=4, num_generations=4), **over}).validate()


def test_yaml_cli_and_notebook_build_the_same_config(tmp_path):
    recipe = ROOT / "configs" / "grpo_qwen2_5_vl_3b_qlora.yaml"
    a = TrainConfig.from_yaml(recipe, max_steps=50)
    b = TrainConfig.from_cli(["--config", str(recipe), "--max_steps", "50"])
    assert a == b and a.num_generations == 5 and a.beta == 0.01 and a.max_pixels == 1_258_291
    assert a.quantization == "4bit" and a.max_completion_length == 1024
    c = TrainConfig(**{**b.to_dict()})
    assert c == b
    assert TrainConfig.from_cli(["--rewards", "{gui_r1: 1.0, point_gaussian: 0.5}", "--resume"]).resume is True
    assert TrainConfig.from_cli(["--learning_rate", "1e-2", "--beta", "1e-3"]).learning_rate == 0.01
    with pytest.raises(ConfigError, match="learning_rate must be a number"):
        TrainConfig.from_cli(["--learning_rate", "fast"])
    with pytest.raises(ConfigError, match="unknown key"):
        TrainConfig.from_dict({"lr": 1})
    for name in ("grpo_tiny_cpu", "sft_tiny_cpu", "sft_qwen2_5_vl_3b_qlora"):
        TrainConfig.from_yaml(ROOT / "configs" / f"{name}.yaml")


def lora_and_base(model):
    lora = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}
    base = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}
    return lora, base


@pytest.mark.parametrize("quantization", [None, "4bit"])
def test_grpo_moves_lora_weights_only(toy_data, tmp_path, varying_reward, quantization, monkeypatch):
    from gui_r1_lite import modeling

    seen = {}

    original = modeling.load_policy

    def spy(*args, **kw):
        policy = original(*args, **kw)
        seen["model"] = policy.model
        seen["before"] = lora_and_base(policy.model)
        return policy
    monkeypatch.setattr(modeling, "load_policy", spy)
    cfg = TrainConfig(train_data=toy_data, output_dir=str(tmp_path / "run"), max_steps=2, num_generations=4,
                      per_device_train_batch_size=4, max_completion_length=12, learning_rate=5e-2,
                      rewards={varying_reward: 1.0}, quantization=quantization, **SMALL)
    result = train(cfg)
    assert result.global_step == 2
    lora0, base0 = seen["before"]
    lora1, base1 = lora_and_base(seen["model"])
    assert lora0 and any(not torch.equal(lora0[n], lora1[n]) for n in lora0), "LoRA weights did not move"
    assert all(torch.equal(base0[n], base1[n]) for n in base0), "base weights changed"
    logs = read_metrics(result.metrics_path)
    assert [r["step"] for r in logs if "loss" in r] == [1, 2]
    assert {"rewards/length_test/mean", "kl", "learning_rate", "step_seconds"} <= set(logs[0])
    assert (Path(result.adapter_dir) / "adapter_config.json").exists()


def test_sft_lowers_its_loss(toy_data, tmp_path):
    cfg = TrainConfig(method="sft", train_data=toy_data, output_dir=str(tmp_path / "sft"), max_steps=12,
                      per_device_train_batch_size=4, learning_rate=1e-2, **SMALL)
    result = train(cfg)
    losses = [r["loss"] for r in read_metrics(result.metrics_path) if "loss" in r]
    assert len(losses) == 12 and sum(losses[-3:]) / 3 < 0.95 * sum(losses[:3]) / 3, losses


def test_start_and_end_average_the_first_and_last_steps(tmp_path):
    from gui_r1_lite.train import start_and_end

    lines = [{"step": i, "loss": 0.0, "reward": float(i), "kl": 0.1} for i in range(1, 21)]
    lines.append({"step": 20, "train_runtime": 9.0})  # the end-of-run summary has no loss
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    ends = start_and_end(tmp_path, window=4)
    assert ends["start"]["reward"] == 2.5 and ends["start"]["steps"] == [1, 4]
    assert ends["end"]["reward"] == 18.5 and ends["end"]["steps"] == [17, 20] and "train_runtime" not in ends["end"]
    assert start_and_end(tmp_path, window=100)["start"]["reward"] == 10.5
