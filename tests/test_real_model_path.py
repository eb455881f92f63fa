"""Defects that only the real model's configuration shows, reproduced on the tiny model given that
configuration: the published generation settings (curation must still sample), TRL's bf16 cast
of QLoRA adapters (trainable weights must stay fp32), and GPU recipes on a machine without CUDA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from gui_r1_lite import curation as C
from gui_r1_lite import data as D
from gui_r1_lite.reference import qwen2_5_vl_3b_generation_config
from gui_r1_lite.training import ConfigError, TrainConfig
from tests.helpers import screenshot_png

ROOT = Path(__file__).resolve().parents[1]
PIXELS = {"min_pixels": 3136, "max_pixels": 50176}
TOKEN_FIELDS = ("bos_token_id", "pad_token_id", "eos_token_id")
GPU_RECIPES = ("grpo_qwen2_5_vl_3b_qlora", "sft_qwen2_5_vl_3b_qlora")


def test_the_shipped_generation_config_is_the_published_one():
    got = qwen2_5_vl_3b_generation_config()
    assert got == {"bos_token_id": 151643, "pad_token_id": 151643, "do_sample": True,
                   "eos_token_id": [151645, 151643], "repetition_penalty": 1.05, "temperature": 1e-06}


@pytest.fixture(scope="module")
def real_config_policy(tiny_model_dir, tmp_path_factory):
    """The tiny model with Qwen2.5-VL-3B-Instruct's sampling fields in its generation_config.json
    (the tiny vocabulary keeps its own special-token ids)."""
    from gui_r1_lite.modeling import load_policy

    folder = tmp_path_factory.mktemp("tiny_real_generation") / "model"
    shutil.copytree(tiny_model_dir, folder)
    path = folder / "generation_config.json"
    own = json.loads(path.read_text())
    real = {k: v for k, v in qwen2_5_vl_3b_generation_config().items() if k not in TOKEN_FIELDS}
    path.write_text(json.dumps({**own, **real}, indent=2))
    policy = load_policy(folder, lora=None, device="cpu", **PIXELS)
    assert policy.model.generation_config.temperature == 1e-06  # the real settings are what generate falls back on
    return policy


def rows(n: int = 4) -> list[D.Sample]:
    return [D.Sample(id=f"s{i}", image_bytes=screenshot_png(200, 100, i), image_size=(200, 100),
                     instruction=f"open item {i}", history="None", gt_action="click",
                     gt_bbox=(10.0, 10.0, 50.0, 30.0), gt_input_text="no input text", task_type="high",
                     platform="web") for i in range(n)]


def test_curation_samples_vary_with_the_real_generation_config(real_config_policy):
    # model_sampler at temperature 1.0 must sample as asked, not fall back on the model's
    # temperature 1e-06 (which makes every row's k answers identical: rates 0 or 1)
    answers = []

    def spy(train_rows, k):
        got = C.model_sampler(real_config_policy, temperature=1.0, max_new_tokens=8, seed=0)(train_rows, k)
        answers.extend(got)
        return got

    C.difficulty(rows(), spy, k=4, band=(0.0, 1.0), **PIXELS)
    assert len(answers) == 4 and all(len(a) == 4 for a in answers)
    assert all(len(set(a)) > 1 for a in answers), f"identical answers within a row: {answers}"


def test_greedy_evaluation_ignores_the_models_sampling_fields(real_config_policy):
    # greedy is greedy whatever the model ships: no repetition penalty refilled from its 1.05,
    # and no sampling field left None for generate to refill
    from gui_r1_lite.evaluate import ModelCompleter

    got = ModelCompleter(real_config_policy).generation_config(24)
    assert (got.do_sample, got.num_beams, got.repetition_penalty) == (False, 1, 1.0)
    assert None not in (got.temperature, got.top_k, got.top_p)
    assert got.max_new_tokens == 24


def test_sampling_fields_are_all_set_explicitly(real_config_policy):
    # nothing generate would refill from the model's config is left None
    from gui_r1_lite.evaluate import ModelCompleter

    completer = ModelCompleter(real_config_policy, do_sample=True, temperature=0.7, num_return_sequences=2)
    got = completer.generation_config(16)
    assert (got.do_sample, got.temperature, got.top_p, got.repetition_penalty) == (True, 0.7, 1.0, 1.0)
    assert got.top_k == 0 and got.min_p == 0.0  # disabled, not None: None would be refilled (top_k 50)
    assert (got.num_return_sequences, got.max_new_tokens) == (2, 16)


@pytest.mark.parametrize("method", ["grpo", "sft"])
def test_qlora_trainable_weights_stay_fp32_once_the_trainer_is_built(toy_data, tmp_path, method, varying_reward):
    # TRL casts a quantised model's trainable parameters to bf16 when the trainer is built; at
    # lr 1e-5 Adam's steps are below bf16's spacing for most lora_A entries, so they would never move
    from gui_r1_lite.training.trainer import build_datasets, build_trainer, load_model

    extra = {"num_generations": 4, "max_completion_length": 8, "rewards": {varying_reward: 1.0}} \
        if method == "grpo" else {}
    cfg = TrainConfig.from_dict(dict(method=method, train_data=toy_data, output_dir=str(tmp_path / "run"),
                                     max_steps=1, per_device_train_batch_size=4, quantization="4bit",
                                     device="cpu", save_steps=100, **PIXELS, **extra)).validate()
    args = cfg.trainer_args()
    dataset, _ = build_datasets(cfg)
    policy, _ = load_model(cfg, args)
    trainer = build_trainer(cfg, args, policy, dataset, [])
    trainable = {n: p.dtype for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and any("lora_A" in n for n in trainable)
    assert set(trainable.values()) == {torch.float32}, {n: d for n, d in trainable.items() if d != torch.float32}
    assert trainer.optimizer is None  # built later, in train(), from these fp32 parameters


@pytest.mark.parametrize("recipe", GPU_RECIPES)
def test_a_gpu_recipe_without_cuda_fails_at_once_with_the_fix(recipe, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = TrainConfig.from_yaml(ROOT / "configs" / f"{recipe}.yaml")
    assert cfg.device == "cuda"
    with pytest.raises(ConfigError) as err:
        cfg.validate()
    message = str(err.value)
    for words in ("no CUDA device", "driver", "580", "nvidia-smi", "cu126", "device: cpu"):
        assert words in message, (words, message)
