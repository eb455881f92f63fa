"""Merging a LoRA adapter: into the full-precision base (default), or, for a QLoRA adapter, into
the dequantized NF4 weights it was trained against (`--dequantize`)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from gui_r1_lite.modeling import load_policy
from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

ROOT = Path(__file__).resolve().parents[1]
Q_PROJ = "model.language_model.layers.0.self_attn.q_proj.weight"


def _cli():
    spec = importlib.util.spec_from_file_location("merge_adapter_cli", ROOT / "scripts" / "merge_adapter.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def _weights(folder) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32)
    return {n: p.detach() for n, p in model.named_parameters()}


def test_dequantize_merges_into_the_nf4_weights_the_adapter_was_trained_against(tiny_model_dir, tmp_path, capsys):
    pytest.importorskip("bitsandbytes")
    policy = load_policy(tiny_model_dir, "4bit", device="cpu", min_pixels=TINY_MIN_PIXELS,
                         max_pixels=TINY_MAX_PIXELS)
    torch.manual_seed(0)
    with torch.no_grad():  # LoRA B starts at zero; make the adapter change something
        for n, p in policy.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)
    policy.model.save_pretrained(tmp_path / "adapter")
    main = _cli()
    args = ["--base", str(tiny_model_dir), "--adapter", str(tmp_path / "adapter")]
    assert main([*args, "--out", str(tmp_path / "full")]) == 0
    assert main([*args, "--out", str(tmp_path / "nf4"), "--dequantize"]) == 0
    assert "dequantized from NF4" in capsys.readouterr().out

    base, full, nf4 = _weights(tiny_model_dir), _weights(tmp_path / "full"), _weights(tmp_path / "nf4")
    rounded = load_policy(tiny_model_dir, "4bit", lora=None, device="cpu").model.dequantize(dtype=torch.float32)
    rounded = dict(rounded.named_parameters())[Q_PROJ].detach()
    delta = full[Q_PROJ] - base[Q_PROJ]  # what the adapter adds, whichever base it goes into
    assert delta.abs().max() > 0 and not torch.equal(rounded, base[Q_PROJ])
    torch.testing.assert_close(nf4[Q_PROJ], rounded + delta)
    assert "quantization_config" not in json.loads((tmp_path / "nf4" / "config.json").read_text())
    # the vision tower was never quantised: both merges leave it as the base has it
    vision = [n for n in base if ".visual." in n]
    assert vision and all(torch.equal(nf4[n], base[n]) for n in vision)
