"""The tiny Qwen2.5-VL (tiny.py) and policy loading (modeling.py): build, load, process an image,
run, LoRA placement, 4-bit, saved adapters and configuration errors."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch
from PIL import Image

from gui_r1_lite import modeling
from gui_r1_lite.actions import Action, format_answer
from gui_r1_lite.geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS, model_image_size
from gui_r1_lite.modeling import LoraSettings, load_policy, lora_targets, vision_tower
from gui_r1_lite.prompts import build_messages
from gui_r1_lite.tiny import SPECIAL_TOKENS, TINY_MAX_PIXELS, TINY_MIN_PIXELS, build_tiny_model

TINY_BOUNDS = dict(min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS)


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _screenshot(width: int = 811, height: int = 1623, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    img[height // 3 : height // 2, width // 4 : width // 2] = (30, 120, 240)  # a "button"
    return Image.fromarray(img)


def _inputs(processor, image, instruction="open the settings", **kw):
    text = processor.apply_chat_template(build_messages(instruction, **kw), tokenize=False, add_generation_prompt=True)
    return processor(text=[text], images=[image], return_tensors="pt")


# --- tiny.py ----------------------------------------------------------------------------------


def test_build_is_deterministic_for_a_seed(tmp_path, tiny_model_dir):
    again = build_tiny_model(tmp_path / "same", seed=0)
    other = build_tiny_model(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "generation_config.json", "processor_config.json"):
        assert _sha(again / name) == _sha(tiny_model_dir / name), name
    assert _sha(other / "model.safetensors") != _sha(tiny_model_dir / "model.safetensors")
    size = sum(p.stat().st_size for p in tiny_model_dir.iterdir())
    assert size < 5_000_000


def test_dims_are_settable(tmp_path):
    from transformers import AutoConfig

    out = build_tiny_model(tmp_path / "bigger", hidden_size=128, num_layers=4, vision_depth=4, vision_hidden=64,
                           vocab_size=800, min_pixels=4 * 784, max_pixels=64 * 784)
    cfg = AutoConfig.from_pretrained(out)
    assert (cfg.text_config.hidden_size, cfg.text_config.num_hidden_layers) == (128, 4)
    assert (cfg.vision_config.depth, cfg.vision_config.hidden_size, cfg.vision_config.out_hidden_size) == (4, 64, 128)
    assert cfg.vision_config.num_heads == 4
    assert cfg.vision_config.fullatt_block_indexes == [1, 3]  # each of 2 groups ends in a full-attention block
    assert sum(cfg.text_config.rope_parameters["mrope_section"]) * 2 == 128 // cfg.text_config.num_attention_heads
    proc = json.loads((out / "processor_config.json").read_text())
    assert proc["image_processor"]["size"] == {"shortest_edge": 4 * 784, "longest_edge": 64 * 784}
    with pytest.raises(ValueError, match="heads"):
        build_tiny_model(tmp_path / "bad", hidden_size=60, num_heads=8)


def test_loads_like_the_released_model(tiny_model_dir):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    model = AutoModelForImageTextToText.from_pretrained(tiny_model_dir, dtype=torch.float32)
    assert type(processor).__name__ == "Qwen2_5_VLProcessor"
    assert type(processor.tokenizer).__name__ == "Qwen2Tokenizer"
    assert type(processor.image_processor).__name__.startswith("Qwen2VLImageProcessor")
    assert type(model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    tok, cfg = processor.tokenizer, model.config
    assert cfg.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>") == processor.image_token_id
    assert cfg.video_token_id == tok.convert_tokens_to_ids("<|video_pad|>")
    assert cfg.vision_start_token_id == tok.convert_tokens_to_ids("<|vision_start|>")
    assert cfg.vision_end_token_id == tok.convert_tokens_to_ids("<|vision_end|>")
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert model.generation_config.eos_token_id == [tok.eos_token_id, tok.pad_token_id]  # as released: im_end or endoftext
    assert model.generation_config.pad_token_id == tok.pad_token_id
    assert cfg.text_config.vocab_size == len(tok)
    # Qwen's special tokens follow the BPE vocabulary in Qwen's order.
    first = tok.convert_tokens_to_ids(SPECIAL_TOKENS[0][0])
    assert [tok.convert_tokens_to_ids(t) for t, _ in SPECIAL_TOKENS] == list(range(first, first + len(SPECIAL_TOKENS)))


def test_tokenizer_splits_digits_and_round_trips(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    answer = format_answer(Action("click", (1234, 56)), "The button is near the top.")
    pieces = tok.tokenize(answer)
    digits = [p for p in pieces if any(c.isdigit() for c in p)]
    assert digits == ["1", "2", "3", "4", "5", "6"]
    assert tok.decode(tok(answer)["input_ids"]) == answer
    assert tok.decode(tok("<|im_start|>user\nzq∑ 😀<|im_end|>")["input_ids"]) == "<|im_start|>user\nzq∑ 😀<|im_end|>"
    assert len(tok(answer)["input_ids"]) < len(answer) / 2  # the corpus taught it words, not just bytes


def test_chat_template_renders_the_image_placeholder(tiny_model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    messages = build_messages("open the settings", "Step 1: tap the menu.", "high")
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                           "<|vision_start|><|image_pad|><|vision_end|>You are GUI-R1")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert text.count("<|image_pad|>") == 1
    no_prompt = processor.apply_chat_template(messages, tokenize=False)
    assert no_prompt == text[: -len("<|im_start|>assistant\n")]
    assert processor.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == text


# --- modeling.py ------------------------------------------------------------------------------


def test_processor_bounds_and_image_tokens(tiny_model_dir):
    policy = load_policy(tiny_model_dir, lora=None, device="cpu")  # GUI-R1's bounds by default
    processor = policy.processor
    assert processor.tokenizer.padding_side == "left"
    size = processor.image_processor.size
    assert (size.shortest_edge, size.longest_edge) == (GUI_R1_MIN_PIXELS, GUI_R1_MAX_PIXELS)
    assert (processor.video_processor.size.shortest_edge, processor.video_processor.size.longest_edge) == \
        (GUI_R1_MIN_PIXELS, GUI_R1_MAX_PIXELS)
    for (w, h), bounds in [((811, 1623), {}), ((811, 1623), TINY_BOUNDS), ((160, 210), TINY_BOUNDS)]:
        proc = load_policy(tiny_model_dir, lora=None, device="cpu", **bounds).processor if bounds else processor
        inputs = _inputs(proc, _screenshot(w, h))
        mw, mh = model_image_size(w, h, **bounds)
        assert inputs["image_grid_thw"].tolist() == [[1, mh // 14, mw // 14]]
        n_image_tokens = int((inputs["input_ids"] == policy.model.config.image_token_id).sum())
        assert n_image_tokens == (mh // 28) * (mw // 28)
        assert inputs["pixel_values"].shape[0] == (mh // 14) * (mw // 14)


def test_forward_and_generate_with_an_image(tiny_policy):
    model, processor = tiny_policy.model, tiny_policy.processor
    inputs = _inputs(processor, _screenshot(), "tap the blue button", task_type="low")
    with torch.no_grad():
        out = model(**inputs)
    assert out.logits.shape[:2] == inputs["input_ids"].shape
    assert torch.isfinite(out.logits).all()

    # A batch of two prompts of different lengths (left padding) and two screenshots.
    texts = [processor.apply_chat_template(build_messages(i), tokenize=False, add_generation_prompt=True)
             for i in ("open settings", "search for cheap flights to paris in chrome")]
    batch = processor(text=texts, images=[_screenshot(seed=1), _screenshot(400, 300, seed=2)],
                      padding=True, return_tensors="pt")
    assert (batch["attention_mask"][:, -1] == 1).all()  # padded on the left
    with torch.no_grad():
        gen = model.generate(**batch, max_new_tokens=5, do_sample=False)
    assert gen.shape == (2, batch["input_ids"].shape[1] + 5) or gen.shape[1] < batch["input_ids"].shape[1] + 5
    assert isinstance(processor.batch_decode(gen[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)[0], str)


def test_lora_targets_the_text_decoder_only(tiny_policy):
    model = tiny_policy.model
    targets = lora_targets(model)
    layers = model.config.text_config.num_hidden_layers
    assert len(targets) == 7 * layers
    assert all(".language_model.layers." in n for n in targets)
    assert {n.rsplit(".", 1)[1] for n in targets} == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n and ".language_model." in n for n in trainable)
    assert not any(p.requires_grad for p in vision_tower(model).parameters())
    # The vision MLP shares the decoder's projection names; a plain name list would catch it.
    assert any(n.endswith("mlp.gate_proj") and ".visual." in n for n, _ in model.get_base_model().named_modules())


def test_train_vision_and_full_fine_tuning(tiny_model_dir):
    with_vision = load_policy(tiny_model_dir, lora={"r": 4, "train_vision": True}, device="cpu", **TINY_BOUNDS)
    names = [n for n, p in with_vision.model.named_parameters() if p.requires_grad]
    assert any(".visual.blocks." in n for n in names) and any(".visual.merger." in n for n in names)
    assert all("lora_" in n for n in names)
    assert with_vision.lora.r == 4

    full = load_policy(tiny_model_dir, lora=None, device="cpu", **TINY_BOUNDS)
    assert not any(p.requires_grad for p in vision_tower(full.model).parameters())
    assert full.model.model.language_model.layers[0].self_attn.q_proj.weight.requires_grad
    full_vision = load_policy(tiny_model_dir, lora=False, train_vision=True, device="cpu", **TINY_BOUNDS)
    assert all(p.requires_grad for p in vision_tower(full_vision.model).parameters())


def test_4bit_qlora_on_cpu(tiny_model_dir):
    pytest.importorskip("bitsandbytes")
    policy = load_policy(tiny_model_dir, quantization="4bit", device="cpu", **TINY_BOUNDS)
    model = policy.model
    kinds = {type(m).__name__ for m in model.modules()}
    assert "Linear4bit" in kinds
    q_proj = model.get_base_model().model.language_model.layers[0].self_attn.q_proj
    assert type(q_proj.base_layer).__name__ == "Linear4bit"
    assert q_proj.base_layer.weight.quant_type == "nf4"
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert any("base_layer" in n for n in frozen)
    inputs = _inputs(policy.processor, _screenshot(160, 210))
    model.eval()
    with torch.no_grad():  # bitsandbytes' CPU inference path (repacked weights on AVX512-BF16 CPUs)
        logits = model(**inputs).logits
    assert torch.isfinite(logits).all()
    model.train()
    out = model(**inputs)
    out.logits[:, -1].float().logsumexp(-1).sum().backward()
    assert q_proj.lora_B["default"].weight.grad is not None
    assert q_proj.base_layer.weight.grad is None
    # Inference only: bitsandbytes may use its repacking CPU kernel; the tiny dims allow it.
    frozen_policy = load_policy(tiny_model_dir, quantization="4bit", lora=None, device="cpu", **TINY_BOUNDS)
    with torch.no_grad():
        assert torch.isfinite(frozen_policy.model(**inputs).logits).all()


def test_saved_adapter_gives_the_same_outputs(tiny_policy, tiny_model_dir, tmp_path):
    model = tiny_policy.model
    torch.manual_seed(1)
    with torch.no_grad():  # LoRA B starts at zero; make the adapter change something
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)
    model.save_pretrained(tmp_path / "adapter")
    inputs = _inputs(tiny_policy.processor, _screenshot(160, 210))
    model.eval()
    with torch.no_grad():
        expected = model(**inputs).logits

    loaded = load_policy(tiny_model_dir, adapter=tmp_path / "adapter", device="cpu", **TINY_BOUNDS)
    assert not any(p.requires_grad for p in loaded.model.parameters())
    with torch.no_grad():
        got = loaded.model(**inputs).logits
        base = load_policy(tiny_model_dir, lora=None, device="cpu", **TINY_BOUNDS).model(**inputs).logits
    torch.testing.assert_close(got, expected)
    assert not torch.allclose(base, expected)
    again = load_policy(tiny_model_dir, adapter=tmp_path / "adapter", adapter_trainable=True, device="cpu", **TINY_BOUNDS)
    assert any(p.requires_grad for p in again.model.parameters())


# --- configuration errors (raised before anything is loaded) -----------------------------------


@pytest.fixture
def nothing_loads(monkeypatch):
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("from_pretrained called although the configuration is wrong")

    monkeypatch.setattr(transformers.AutoModelForImageTextToText, "from_pretrained", refuse)
    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", refuse)


def test_config_errors(tiny_model_dir, tmp_path, monkeypatch, nothing_loads):
    with pytest.raises(ValueError, match="quantization must be"):
        load_policy(tiny_model_dir, quantization="3bit", device="cpu")
    real_find_spec = modeling.importlib.util.find_spec
    monkeypatch.setattr(modeling.importlib.util, "find_spec",
                        lambda name, *a: None if name == "bitsandbytes" else real_find_spec(name, *a))
    with pytest.raises(ImportError, match=r"pip install 'bitsandbytes.*quantization=None"):
        load_policy(tiny_model_dir, quantization="4bit", device="cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="device='cpu'"):
            load_policy(tiny_model_dir, device="cuda")
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    with pytest.raises(ValueError, match="not both"):
        load_policy(tiny_model_dir, lora={"r": 4}, adapter=tmp_path / "adapter", device="cpu")
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        load_policy(tiny_model_dir, adapter=tmp_path, device="cpu")
    with pytest.raises(ValueError, match="unknown LoRA setting"):
        load_policy(tiny_model_dir, lora={"rank": 4}, device="cpu")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_policy(tmp_path / "missing" / "model", device="cpu")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_policy(tmp_path, device="cpu")
    with pytest.raises(ValueError):
        LoraSettings(r=0)


def test_check_quantization_returns_the_value_or_names_the_allowed_ones():
    assert modeling.QUANTIZATIONS == ("4bit", "8bit")
    assert modeling.check_quantization(None) is None and modeling.check_quantization("8bit") == "8bit"
    with pytest.raises(ValueError, match=r"quantization must be None or one of \('4bit', '8bit'\), got '3bit'"):
        modeling.check_quantization("3bit")


def test_unreachable_hub_id_says_how_to_get_it(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # never touch the network
    with pytest.raises(OSError, match=r"huggingface-cli download nobody-here/no-such-model.*local folder"):
        load_policy("nobody-here/no-such-model", lora=None, device="cpu")


# --- bitsandbytes' import-time message ----------------------------------------------------------

# Run in a fresh interpreter (bitsandbytes speaks once, on import) as if the CPU had AVX512-BF16:
# that is the condition under which its import looks for the optional hub kernel and, without it,
# logs the failure. The script prints whether that branch of bitsandbytes ran.
_AS_IF_AVX512BF16 = """
import importlib, logging, sys
logging.basicConfig(level=logging.WARNING)
class AsIfAvx512Bf16:
    def find_spec(self, name, path=None, target=None):
        if name == "bitsandbytes.backends.cpu.ops":
            importlib.import_module("bitsandbytes.functional").has_avx512bf16 = lambda: True
        return None
sys.meta_path.insert(0, AsIfAvx512Bf16())
"""
_KERNEL_BRANCH_RAN = "\nprint(hasattr(sys.modules['bitsandbytes.backends.cpu.ops'], 'gemm_4bit_forward_kernel'))\n"


def _python(code: str) -> tuple[str, str]:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def test_a_load_without_quantization_does_not_print_bitsandbytes_kernel_message(tiny_model_dir):
    pytest.importorskip("bitsandbytes")
    # The stand-in CPU condition makes bitsandbytes print the message on a bare import...
    out, err = _python(_AS_IF_AVX512BF16 + "import bitsandbytes" + _KERNEL_BRANCH_RAN)
    assert out.strip() == "True" and modeling._BNB_KERNEL_MESSAGE in err
    # ...and a LoRA load without quantization, which imports it through peft, stays quiet.
    load = (f"from gui_r1_lite.modeling import load_policy\nload_policy({str(tiny_model_dir)!r}, device='cpu', "
            f"min_pixels={TINY_MIN_PIXELS}, max_pixels={TINY_MAX_PIXELS})")
    out, err = _python(_AS_IF_AVX512BF16 + load + _KERNEL_BRANCH_RAN)
    assert out.strip().splitlines()[-1] == "True"
    assert "gemm_4bit_forward" not in err and "kernels-community" not in err


def test_only_the_kernel_message_is_held_and_a_4bit_cpu_load_repeats_it(tiny_model_dir, caplog):
    import logging

    pytest.importorskip("bitsandbytes")
    bnb_log = logging.getLogger(modeling._BNB_CPU_LOGGER)
    with caplog.at_level(logging.WARNING):
        bnb_log.warning(modeling._BNB_KERNEL_MESSAGE + ": %s. Please make sure ...", "No module named 'kernels'")
        bnb_log.warning("something else bitsandbytes says")
        assert [r.getMessage() for r in caplog.records] == ["something else bitsandbytes says"]
        load_policy(tiny_model_dir, quantization=None, lora=None, device="cpu", **TINY_BOUNDS)
        assert not [r for r in caplog.records if r.name == "gui_r1_lite.modeling"]
        for _ in range(2):  # said once, by the first 4-bit CPU load
            load_policy(tiny_model_dir, quantization="4bit", lora=None, device="cpu", **TINY_BOUNDS)
    said = [r for r in caplog.records if r.name == "gui_r1_lite.modeling"]
    assert len(said) == 1 and "No module named 'kernels'" in said[0].getMessage()
