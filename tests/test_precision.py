"""Precision and quantisation on the GPU path, shown on the CPU: one bf16 decision for loading and
training, the vision tower out of fp16 and out of NF4, and QLoRA preparation that keeps the dtypes
the model was loaded in."""

from __future__ import annotations

import pytest
import torch

from gui_r1_lite import modeling
from gui_r1_lite.modeling import load_policy, vision_tower
from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS
from gui_r1_lite.training import ConfigError, TrainConfig

TINY_BOUNDS = dict(min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS)


def _inputs(processor):
    from PIL import Image

    from gui_r1_lite.prompts import build_messages

    text = processor.apply_chat_template(build_messages("open the settings"), tokenize=False,
                                         add_generation_prompt=True)
    return processor(text=[text], images=[Image.new("RGB", (160, 210), "white")], return_tensors="pt")


@pytest.fixture
def t4(monkeypatch):
    """CUDA that has bf16 only by emulation, as torch reports it on a T4 (compute capability 7.5)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    monkeypatch.setattr(modeling, "_fp16_noted", False, raising=False)


def _trl_args(monkeypatch, **recipe) -> dict:
    """What `trainer_args` would hand TRL (whose config sets up the CUDA device when built)."""
    from gui_r1_lite.training import config

    cfg = TrainConfig.from_dict(dict(device="cuda", per_device_train_batch_size=5, **recipe))
    with monkeypatch.context() as patch:
        patch.setattr(config, "trl_config_class", lambda method: dict)
        return cfg.trainer_args()


def test_a_gpu_with_emulated_bf16_trains_and_loads_in_fp16_and_says_so(t4, capsys, monkeypatch):
    # one decision: the load dtype and the trainer's mixed precision both say fp16 on a T4
    assert _trl_args(monkeypatch)["bf16"] is False
    assert modeling.resolve_dtype(None, torch.device("cuda")) == torch.float16
    assert "fp16" in capsys.readouterr().out and "vision tower in fp32" in modeling.FP16_NOTE
    assert modeling.native_bf16() is False
    with pytest.raises(ConfigError, match="native bf16"):
        TrainConfig.from_dict(dict(device="cuda", per_device_train_batch_size=5, bf16=True)).validate()


def test_a_gpu_with_native_bf16_uses_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert modeling.native_bf16() is True
    assert modeling.resolve_dtype(None, torch.device("cuda")) == torch.bfloat16
    assert _trl_args(monkeypatch)["bf16"] is True


def test_in_fp16_the_vision_tower_stays_fp32(tiny_model_dir):
    policy = load_policy(tiny_model_dir, lora=None, dtype="float16", device="cpu", **TINY_BOUNDS)
    assert {p.dtype for p in vision_tower(policy.model).parameters()} == {torch.float32}
    assert policy.model.model.language_model.embed_tokens.weight.dtype == torch.float16
    with torch.no_grad():
        assert torch.isfinite(policy.model(**_inputs(policy.processor)).logits).all()


def test_4bit_keeps_the_vision_tower_and_lm_head_unquantised(tiny_model_dir):
    pytest.importorskip("bitsandbytes")
    model = load_policy(tiny_model_dir, "4bit", lora=None, device="cpu", **TINY_BOUNDS).model
    quantised = [n for n, m in model.named_modules() if type(m).__name__ == "Linear4bit"]
    assert quantised and all(".language_model.layers." in n for n in quantised), quantised
    assert not any(".visual." in n or "lm_head" in n for n in quantised)


def test_4bit_training_keeps_the_load_dtype_and_trains(tiny_model_dir):
    # no fp32 upcast of unquantised weights (embedding, norms, vision tower): they keep bf16
    pytest.importorskip("bitsandbytes")
    policy = load_policy(tiny_model_dir, "4bit", dtype="bfloat16", device="cpu", gradient_checkpointing=True,
                         **TINY_BOUNDS)
    model = policy.model
    plain = {n: p.dtype for n, p in model.named_parameters()
             if "lora_" not in n and type(p).__name__ != "Params4bit"}
    assert plain and set(plain.values()) == {torch.bfloat16}, {n: d for n, d in plain.items() if d != torch.bfloat16}
    trainable = {n: p.dtype for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable) and set(trainable.values()) == {torch.float32}
    base = model.get_base_model()
    assert getattr(base, "is_activation_checkpointing", None) or base.is_gradient_checkpointing
    model.train()
    out = model(**_inputs(policy.processor))
    out.logits[:, -1].float().logsumexp(-1).sum().backward()
    grads = [p.grad for n, p in model.named_parameters() if "lora_B" in n]
    assert grads and all(g is not None for g in grads)
