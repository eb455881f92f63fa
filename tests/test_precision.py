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


def _dtype_seen(seen: dict, name: str):
    """A forward hook that keeps, under `name`, the dtype of the module's first output (and changes nothing)."""

    def hook(module, args, out):
        seen.setdefault(name, out.dtype)

    return hook


def test_on_a_t4_fp16_autocast_leaves_the_vision_tower_in_fp32(tiny_model_dir):
    # TRL's fp16 (a T4's mixed precision, with the loss scaler) computes the forward under fp16 autocast: the
    # text decoder's matmuls go fp16, the vision tower's stay fp32 (its MLP overflows in fp16); on the CPU here
    # with the CPU's autocast, the same switch
    import copy

    policy = load_policy(tiny_model_dir, lora=None, dtype="float16", device="cpu", **TINY_BOUNDS)
    model, seen = policy.model, {}
    tower = vision_tower(model)
    vision_mlp = tower.blocks[0].mlp.up_proj
    text_mlp = model.model.language_model.layers[0].mlp.up_proj
    for name, module in (("vision", vision_mlp), ("text", text_mlp)):
        module.register_forward_hook(_dtype_seen(seen, name))
    inputs = _inputs(policy.processor)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        logits = model(**inputs).logits
    assert seen == {"vision": torch.float32, "text": torch.float16}
    assert torch.isfinite(logits).all()
    # without the switch the same autocast computes the tower in fp16: the check above can fail
    plain, seen_plain = copy.deepcopy(model), {}
    del vision_tower(plain).forward  # back to the class's forward
    vision_tower(plain).blocks[0].mlp.up_proj.register_forward_hook(_dtype_seen(seen_plain, "vision"))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        plain(**inputs)
    assert seen_plain == {"vision": torch.float16}
    # a deep copy of the model (as a reference model is made) keeps the switch, bound to the copy's own tower
    twin = copy.deepcopy(model)
    assert vision_tower(twin).forward.__self__ is vision_tower(twin) is not tower


def test_t4_recipe_allocator_setting_reaches_torch_unless_the_environment_has_one(monkeypatch):
    for name in modeling.ALLOC_CONF_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    import os

    assert modeling.set_cuda_allocator(None) is None and "PYTORCH_CUDA_ALLOC_CONF" not in os.environ
    assert modeling.set_cuda_allocator("expandable_segments:True") == "expandable_segments:True"
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:64")
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    assert modeling.set_cuda_allocator("expandable_segments:True") == "max_split_size_mb:64"  # the environment wins
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ
