"""The CUDA path on the tiny model: QLoRA (4-bit NF4 + LoRA) GRPO steps, `evaluate` generating on the GPU,
and the GPU benchmark's T4 path (fp16 under a memory cap). Marked `gpu`: skipped without CUDA;
`scripts/gpu_smoke.sh` (and `scripts/gpu_check.sh`, which runs it) run them on a GPU machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gui_r1_lite import evaluate as E
from gui_r1_lite.runio import read_json
from gui_r1_lite.training import TrainConfig, read_metrics, train

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
EVAL_FILE = ROOT / "data_samples" / "test" / "miniwob_test.parquet"
BENCH = ROOT / "benchmarks" / "bench_gpu_recipe.py"
T4_RECIPE = ROOT / "configs" / "grpo_qwen2_5_vl_3b_t4.yaml"


def _lora_and_base(model) -> tuple[dict, dict]:
    """(the trainable LoRA weights, every frozen weight: the 4-bit base and TRL's reference adapter)."""
    lora = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    base = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    assert all("lora_" in n for n in lora), "a non-LoRA weight is trainable"
    return lora, base


def _check_predictions(summary: dict, out: Path, rows: int) -> None:
    records = E.read_records(out / E.PREDICTIONS)
    assert len(records) == summary["n"] == rows
    assert all(isinstance(r["completion"], str) for r in records)
    assert (out / E.METRICS_JSON).exists() and (out / E.METRICS_MD).exists()


class _Snapshot:
    """Takes the weights when training begins (after the trainer was built, so after any cast it
    makes) and again when it ends: what training itself changed."""

    def callback(self):
        from transformers import TrainerCallback

        snap = self

        class Take(TrainerCallback):
            def on_train_begin(self, args, state, control, model=None, **kw):
                snap.model, snap.begin = model, _lora_and_base(model)

            def on_train_end(self, args, state, control, model=None, **kw):
                snap.end = _lora_and_base(model)
        return Take()


def test_qlora_grpo_on_cuda_moves_lora_weights_only(toy_data, tmp_path, varying_reward):
    snap = _Snapshot()
    # the GPU recipe's learning rate: Adam's steps (~1e-5) are below half a bf16 step of most lora_A entries
    # (|a| ~ 0.01: spacing ~ 6e-5), so in bf16 those would never change
    cfg = TrainConfig.from_dict(dict(
        train_data=toy_data, output_dir=str(tmp_path / "run"), max_steps=3, num_generations=4,
        per_device_train_batch_size=4, max_completion_length=12, learning_rate=1e-5, rewards={varying_reward: 1.0},
        quantization="4bit", device="cuda", min_pixels=3136, max_pixels=50176, logging_steps=1, save_steps=100))
    result = train(cfg, callbacks=[snap.callback()])
    assert result.global_step == 3

    model = snap.model
    assert all(p.device.type == "cuda" for p in model.parameters())
    assert any(type(m).__name__ == "Linear4bit" for m in model.modules()), "the base model is not 4-bit"
    (lora0, base0), (lora1, base1) = snap.begin, snap.end
    assert lora0 and all(t.dtype == torch.float32 for t in lora1.values()), "LoRA weights are not fp32"
    # compared with themselves at the start of training, not with a copy taken before the trainer cast them
    changed = [n for n in lora0 if "lora_B" in n and not torch.equal(lora0[n], lora1[n])]
    assert len(changed) == sum("lora_B" in n for n in lora0), "some lora_B weights never moved"
    # lora_A gets a gradient from the second step on (lora_B starts at zero): most of its entries must move
    a_names = [n for n in lora0 if "lora_A" in n]
    moved = sum(int((lora0[n] != lora1[n]).sum()) for n in a_names) / sum(lora0[n].numel() for n in a_names)
    assert moved > 0.5, f"only {moved:.0%} of the lora_A entries changed"
    assert all(torch.equal(base0[n], base1[n]) for n in base0), "base weights changed"
    assert [r["step"] for r in read_metrics(result.metrics_path) if "loss" in r] == [1, 2, 3]

    # The adapter it saved loads over the 4-bit base on CUDA and generates through evaluate.
    from gui_r1_lite.modeling import load_policy

    policy = load_policy(result.base_model, "4bit", lora=None, adapter=result.adapter_dir, device="cuda",
                      min_pixels=cfg.min_pixels, max_pixels=cfg.max_pixels)
    out = tmp_path / "eval"
    summary = E.evaluate(toy_data, policy, out, batch_size=4, max_new_tokens=8, limit=4, progress=False)
    _check_predictions(summary, out, 4)


@pytest.mark.parametrize("quantization", [None, "4bit"])
def test_predict_on_cuda(tiny_model_dir, tmp_path, quantization):
    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    policy = load_policy(tiny_model_dir, quantization, lora=None, device="cuda",
                         min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS)
    assert next(policy.model.parameters()).device.type == "cuda"
    four_bit = sum(type(m).__name__ == "Linear4bit" for m in policy.model.modules())
    assert (four_bit > 0) == (quantization == "4bit")
    out = tmp_path / "eval"
    summary = E.evaluate(EVAL_FILE, E.ModelCompleter(policy), out, batch_size=4, max_new_tokens=8, limit=6,
                         progress=False)
    _check_predictions(summary, out, 6)
    assert (summary["min_pixels"], summary["max_pixels"]) == (TINY_MIN_PIXELS, TINY_MAX_PIXELS)


def test_qlora_on_cuda_keeps_precision_as_decided(tiny_model_dir):
    # one bf16 decision (native only), the vision tower and lm_head out of NF4 (and out of fp16),
    # and no fp32 upcast of the unquantised weights when the model is prepared for training
    from gui_r1_lite.modeling import load_policy, native_bf16, vision_tower
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    assert native_bf16() == (torch.cuda.get_device_capability()[0] >= 8)
    policy = load_policy(tiny_model_dir, "4bit", device="cuda", gradient_checkpointing=True,
                         min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS)
    model = policy.model
    expected = torch.bfloat16 if native_bf16() else torch.float16
    assert policy.dtype == expected
    quantised = [n for n, m in model.named_modules() if type(m).__name__ == "Linear4bit"]
    assert quantised and not any(".visual." in n or "lm_head" in n for n in quantised)
    vision = {p.dtype for p in vision_tower(model).parameters()}
    assert vision == ({torch.bfloat16} if native_bf16() else {torch.float32})
    embed = model.get_base_model().model.language_model.embed_tokens.weight
    assert embed.dtype == expected and not embed.requires_grad


def _bench_t4(out: Path, *extra: str, rc: int = 0) -> tuple[dict, str]:
    """The GPU benchmark's T4 path on the tiny model: the T4 recipe, two steps; its JSON and its output."""
    proc = subprocess.run([sys.executable, str(BENCH), "--tiny", "--device", "cuda", "--t4", "--recipe",
                           str(T4_RECIPE), "--steps", "2", "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == rc, proc.stdout[-3000:] + proc.stderr[-3000:]
    return read_json(out / f"{T4_RECIPE.stem}_t4.json"), proc.stdout


def _t4_gib() -> float:
    """The cap the benchmark puts on a T4 run: the one T4 figure (benchmarks/gpu_estimate.py)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_estimate import T4

    return round(T4.usable_gib, 2)


def test_bench_as_a_t4_runs_fp16_under_the_memory_cap(tmp_path):
    result, _ = _bench_t4(tmp_path)
    assert result["status"] == "ok" and result["passed"]
    # what the project decides on a GPU without native bf16: fp16 weights and mixed precision (the loss
    # scaler), fp32 vision tower and LoRA
    prec = result["precision"]
    assert prec["text_embedding"] == "torch.float16" and not prec["bf16"] and prec["fp16"]
    assert prec["vision"] == ["torch.float32"] and prec["lora"] == ["torch.float32"] and prec["linear4bit"] > 0
    assert all(g["loss_scale"] for g in result["gradients"]) and len(result["gradients"]) == 2
    total, cap = torch.cuda.get_device_properties(0).total_memory, _t4_gib()
    assert result["memory_limit_gib"] == cap < 14.75
    assert result["memory_fraction"] == pytest.approx(min(1.0, cap * 1024**3 / total), abs=1e-4)
    assert result["memory"]["training"]["peak_reserved_gib"] <= cap
    length = result["settings"]["max_completion_length"]
    assert result["generation"]["min_new_tokens"] == length == result["completion_lengths"]["min"]


def test_bench_memory_cap_binds_and_a_t4_out_of_memory_fails(tmp_path):
    # 1 MiB cannot hold even the tiny model: the run stops for memory, and as a T4 that means it does not fit
    result, out = _bench_t4(tmp_path, "--t4-gib", "0.001", rc=1)
    assert result["status"] == "out_of_memory" and not result["passed"]
    assert result["memory"]["at_failure"]["peak_reserved_gib"] <= 0.001
    assert "does not fit" in out and "(FAILED" in out
