"""The stand-in (tiny.py) is Qwen2.5-VL-3B-Instruct's shipped configuration with only the sizes
scaled down: config, generation settings and processor field by field against the published files,
the sampling defect those settings cause when a caller leaves fields None, and the full-size
architecture built on the meta device."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image

from gui_r1_lite.evaluate import ModelCompleter
from gui_r1_lite.geometry import model_image_size
from gui_r1_lite.modeling import load_policy
from gui_r1_lite.prompts import build_messages
from gui_r1_lite.reference import (
    qwen2_5_vl_3b_config,
    qwen2_5_vl_3b_generation_config,
    qwen2_5_vl_3b_preprocessor_config,
)
from gui_r1_lite.tiny import (
    TINY_MAX_PIXELS,
    TINY_MIN_PIXELS,
    full_attention_blocks,
    mrope_section,
    real_architecture,
)

# The released tokenizer's ids of the special tokens the shipped files name.
REAL_SPECIAL_IDS = {151643: "<|endoftext|>", 151645: "<|im_end|>", 151652: "<|vision_start|>",
                    151653: "<|vision_end|>", 151654: "<|vision_pad|>", 151655: "<|image_pad|>",
                    151656: "<|video_pad|>"}
# What the stand-in scales down; every other field must be the shipped one.
TEXT_SIZES = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "layer_types"}
VISION_SIZES = {"depth", "hidden_size", "intermediate_size", "num_heads", "out_hidden_size", "fullatt_block_indexes"}
NOT_CONFIGURATION = {"transformers_version", "_name_or_path"}


def _normalised(raw: dict) -> dict:
    """A config.json as transformers reads it (the shipped one is in the flat pre-5 layout)."""
    from transformers import Qwen2_5_VLConfig

    return Qwen2_5_VLConfig.from_dict(raw).to_dict()


def _names(values: dict, tokenizer=None) -> dict:
    """Token-id fields as token strings: the real ids through the released tokenizer's table,
    the stand-in's through its own tokenizer."""
    named = {}
    for key, value in values.items():
        if isinstance(value, dict):
            named[key] = _names(value, tokenizer)
        elif str(key).endswith("_token_id"):
            named[key] = _token_names(value, tokenizer)
        else:
            named[key] = value
    return named


def _token_names(value, tokenizer):
    if value is None:
        return None
    if isinstance(value, list):
        return [_token_names(v, tokenizer) for v in value]
    return tokenizer.convert_ids_to_tokens(value) if tokenizer is not None else REAL_SPECIAL_IDS[value]


def test_the_shipped_files_are_the_published_ones():
    cfg, pre = qwen2_5_vl_3b_config(), qwen2_5_vl_3b_preprocessor_config()
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["intermediate_size"], cfg["vocab_size"]) == (2048, 36, 16, 2, 11008, 151936)
    assert cfg["tie_word_embeddings"] is True and cfg["torch_dtype"] == "bfloat16"
    assert cfg["rope_scaling"]["mrope_section"] == [16, 24, 24] and cfg["rope_theta"] == 1e6
    vis = cfg["vision_config"]
    assert (vis["depth"], vis["hidden_size"], vis["intermediate_size"], vis["num_heads"], vis["out_hidden_size"]) == \
        (32, 1280, 3420, 16, 2048)
    assert vis["fullatt_block_indexes"] == [7, 15, 23, 31] and vis["window_size"] == 112
    assert (vis["patch_size"], vis["spatial_merge_size"], vis["temporal_patch_size"]) == (14, 2, 2)
    assert (pre["min_pixels"], pre["max_pixels"], pre["patch_size"], pre["merge_size"]) == (3136, 12845056, 14, 2)
    assert qwen2_5_vl_3b_config() is not qwen2_5_vl_3b_config()  # a fresh dict: callers may change theirs


def test_config_is_the_shipped_one_except_the_sizes(tiny_model_dir):
    from transformers import AutoConfig, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    real = _names(_normalised(qwen2_5_vl_3b_config()))
    got = _names(AutoConfig.from_pretrained(tiny_model_dir).to_dict(), tok)
    real_text, got_text = real.pop("text_config"), got.pop("text_config")
    real_vision, got_vision = real.pop("vision_config"), got.pop("vision_config")
    assert {k: v for k, v in got.items() if k not in NOT_CONFIGURATION} == \
        {k: v for k, v in real.items() if k not in NOT_CONFIGURATION}
    # the rotary split is a size too (it follows the head size); the rest of rope_parameters is not
    got_rope, real_rope = got_text.pop("rope_parameters"), real_text.pop("rope_parameters")
    assert {**got_rope, "mrope_section": None} == {**real_rope, "mrope_section": None}
    assert {k: v for k, v in got_text.items() if k not in TEXT_SIZES | NOT_CONFIGURATION} == \
        {k: v for k, v in real_text.items() if k not in TEXT_SIZES | NOT_CONFIGURATION}
    assert {k: v for k, v in got_vision.items() if k not in VISION_SIZES | NOT_CONFIGURATION} == \
        {k: v for k, v in real_vision.items() if k not in VISION_SIZES | NOT_CONFIGURATION}
    # the scaled fields keep the real proportions
    head_dim = got_text["hidden_size"] // got_text["num_attention_heads"]
    assert got_rope["mrope_section"] == [4, 6, 6] and sum(got_rope["mrope_section"]) * 2 == head_dim
    assert got_vision["fullatt_block_indexes"] == [1] and got_vision["depth"] == 2  # one windowed, one full
    assert got_vision["out_hidden_size"] == got_text["hidden_size"]
    assert got_text["vocab_size"] == len(tok) and got_text["layer_types"] == ["full_attention"] * 2


def test_generation_config_is_the_real_one_with_the_stand_ins_token_ids(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    got = json.loads((tiny_model_dir / "generation_config.json").read_text())
    got.pop("transformers_version")
    assert _names(got, tok) == _names(qwen2_5_vl_3b_generation_config())
    assert (got["do_sample"], got["temperature"], got["repetition_penalty"]) == (True, 1e-06, 1.05)
    assert "top_k" not in got and "top_p" not in got  # as published: transformers' defaults
    assert got["eos_token_id"] == [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]


def test_processor_resizes_within_the_real_bounds(tiny_model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    pre = qwen2_5_vl_3b_preprocessor_config()
    for sub in (processor.image_processor, processor.video_processor):
        assert (sub.size.shortest_edge, sub.size.longest_edge) == (3136, 12845056)
        assert list(sub.image_mean) == pre["image_mean"] and list(sub.image_std) == pre["image_std"]
        assert (sub.patch_size, sub.merge_size, sub.temporal_patch_size) == (14, 2, 2)


def test_scaled_vision_pattern_and_rotary_split():
    assert full_attention_blocks(32) == [7, 15, 23, 31]  # the real tower's
    assert mrope_section(128) == [16, 24, 24]
    for depth in range(2, 33):
        full = full_attention_blocks(depth)
        assert full[-1] == depth - 1 and len(full) < depth, depth  # full and windowed blocks both present
    assert full_attention_blocks(4) == [1, 3] and full_attention_blocks(16) == [3, 7, 11, 15]
    with pytest.raises(ValueError, match="at least 2"):
        full_attention_blocks(1)


def test_sampling_varies_only_when_every_field_is_set(tiny_model_dir):
    # Qwen2.5-VL-3B-Instruct's generation config is near-greedy (temperature 1e-06); generate refills
    # every field a caller leaves None from it. ModelCompleter sets them all: its 4 samples at
    # temperature 1.0 differ. A call that leaves the temperature None gets 4 copies of one answer.
    policy = load_policy(tiny_model_dir, lora=None, device="cpu", min_pixels=TINY_MIN_PIXELS,
                         max_pixels=TINY_MAX_PIXELS)
    size = model_image_size(200, 100, TINY_MIN_PIXELS, TINY_MAX_PIXELS)
    image = Image.new("RGB", size, (30, 120, 240))
    messages = build_messages("open the settings")
    torch.manual_seed(0)
    completer = ModelCompleter(policy, do_sample=True, temperature=1.0, num_return_sequences=4)
    sampled = completer.generate([messages], [image], [size], ["r0"], max_new_tokens=8)
    assert len(sampled) == 4 and len(set(sampled)) >= 2, sampled

    processor = policy.processor
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    with torch.inference_mode():
        out = policy.model.generate(**inputs, num_return_sequences=4, max_new_tokens=8)
    collapsed = processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    assert len(collapsed) == 4 and len(set(collapsed)) == 1, collapsed


def test_real_architecture_on_the_meta_device():
    policy = real_architecture(device="meta")
    model, cfg = policy.model, policy.model.config
    assert {p.device.type for p in model.parameters()} == {"meta"}  # nothing materialised
    params = dict(model.named_parameters())
    assert sum(p.numel() for p in model.parameters()) == 3_754_622_976  # ~3.75 B, tied embedding counted once
    assert sum(p.numel() for n, p in params.items() if ".visual." in n) == 668_684_288
    text = model.model.language_model
    assert text.embed_tokens.weight.shape == (151936, 2048) and model.lm_head.weight is text.embed_tokens.weight
    assert len(text.layers) == 36 and text.layers[0].self_attn.k_proj.out_features == 256  # 2 KV heads x 128
    assert text.layers[0].mlp.gate_proj.out_features == 11008
    visual = model.model.visual
    assert len(visual.blocks) == 32 and visual.blocks[0].mlp.gate_proj.out_features == 3420
    assert cfg.vision_config.fullatt_block_indexes == [7, 15, 23, 31] and cfg.vision_config.window_size == 112
    # the processor feeds it: its image token is the model's, its bounds the real ones
    tok = policy.processor.tokenizer
    assert cfg.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>") == policy.processor.image_token_id
    size = policy.processor.image_processor.size
    assert (size.shortest_edge, size.longest_edge) == (3136, 12845056) and tok.padding_side == "left"
    assert model.generation_config.temperature == 1e-06 and not model.training

    short = real_architecture(device="meta", text_layers=2, vision_depth=8, dtype="bf16")
    assert len(short.model.model.language_model.layers) == 2 and len(short.model.model.visual.blocks) == 8
    assert short.model.config.vision_config.fullatt_block_indexes == [1, 3, 5, 7]
    assert {p.dtype for p in short.model.parameters()} == {torch.bfloat16}
    with pytest.raises(ValueError, match="from_pretrained.*load_policy"):
        real_architecture(random_weights=False)
    with pytest.raises(ValueError, match="only Qwen/Qwen2.5-VL-3B-Instruct"):
        real_architecture("Qwen/Qwen2.5-VL-7B-Instruct", device="meta")
