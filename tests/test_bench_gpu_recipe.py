"""benchmarks/bench_gpu_recipe.py on the CPU (`--tiny`: the code a GPU runs, with the tiny stand-in): the recipes it
runs and the rows it feeds them, what it records of a run and when, and the T4: its recipe, the memory arithmetic
of benchmarks/gpu_estimate.py and the pass/fail verdict of benchmarks/gpu_report.py. What travels to the device
image, and what scripts/gpu_check.sh checks of it, is tests/test_bench_gpu_recipe_wheels.py."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests._gpu_recipe_helpers import BENCH, GRPO, ROOT, SFT, STEPS, _cuda, _load

# `bench` (the benchmark as a module) and `tiny_results` (its --tiny run of every GPU recipe) are in conftest.py.


def _screen_pixels(folder: Path) -> list[int]:
    sizes = []
    for f in sorted(folder.glob("*.parquet")):
        for image in pq.read_table(f, columns=["image"]).column("image").to_pylist():
            sizes.append(Image.open(io.BytesIO(image["bytes"])).size)
    return sorted((w * h for w, h in sizes), reverse=True)


def test_gpu_recipes_are_the_cuda_ones(bench):
    names = [p.name for p in bench.gpu_recipes()]
    assert GRPO.name in names and SFT.name in names
    assert not any("tiny" in n for n in names)  # the CPU recipes say device: cpu


def test_largest_rows_takes_the_largest_screenshots(bench, tmp_path):
    picked = bench.largest_rows(5, tmp_path / "big.parquet")
    table = pq.read_table(tmp_path / "big.parquet")
    # the five largest of every training file, counted here independently
    assert sorted(_screen_pixels(tmp_path), reverse=True) == _screen_pixels(ROOT / "data_samples" / "train")[:5]
    assert table.num_rows == picked["rows"] == 5 and picked["pixels"][0] == picked["largest_in_source"]
    assert {"instruction", "gt_action", "gt_bbox", "image"} <= set(table.column_names)


def test_run_config_forces_full_length_and_keeps_the_recipe(bench, tmp_path):
    from gui_r1_lite.training.config import read_recipe

    args = bench.parse_args(["--tiny", "--steps", "3", "--out", str(tmp_path / "out")])
    args.tiny = False  # the 3B settings, built without CUDA: only the configuration is looked at
    cfg, rows = bench.run_config(GRPO, args, tmp_path, model="/some/model")
    recipe = read_recipe(GRPO)
    assert cfg.get("max_completion_length") == recipe["max_completion_length"] == 1024
    assert cfg.get("generation_kwargs")["min_new_tokens"] == 1024
    for key in ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "loss_type",
                "beta", "max_pixels", "quantization", "lora_r", "gradient_checkpointing"):
        assert cfg.get(key) == recipe[key], key
    assert cfg.get("max_steps") == 3 and cfg.get("save_steps") > 3 and not cfg.resume
    assert Path(cfg.get("output_dir")).parent == tmp_path / "runs" and Path(cfg.train_data).parent == tmp_path
    assert rows == 3 * 5 * 4 // 5  # 4 prompts of 5 completions per step
    # TRL takes the forcing as it is given
    assert cfg.trainer_args().generation_kwargs["min_new_tokens"] == 1024


@pytest.mark.slow  # tiny_results: the benchmark's run of every GPU recipe, in a process of its own
def test_tiny_runs_every_gpu_recipe_and_records_it(tiny_results):
    from gui_r1_lite.training.config import read_recipe

    _, results, _ = tiny_results
    largest = _screen_pixels(ROOT / "data_samples" / "train")[0]
    for recipe, r in results.items():
        grpo = read_recipe(recipe)["method"] == "grpo"
        assert r["status"] == "ok" and r["passed"] and not r["t4"], recipe
        assert len(r["steps"]) == STEPS and r["per_step"]["steps"] == STEPS - 1
        for step in r["steps"]:
            assert step["forward_backward_s"] > 0 and step["data_preparation_s"] > 0
            assert (step["generation_s"] > 0) == grpo and (step["rewards_s"] > 0) == grpo
        assert r["settings"]["max_steps"] == STEPS and r["settings"]["quantization"] == "4bit"
        assert r["precision"]["lora"] == ["torch.float32"] and r["precision"]["linear4bit"] > 0
        assert r["data"]["pixels"][0] == largest
        prompts = r["settings"]["per_device_train_batch_size"] * r["settings"]["gradient_accumulation_steps"]
        assert r["data"]["rows"] == STEPS * (prompts // r["settings"]["num_generations"] if grpo else prompts)
        assert r["memory"]["training"]["device"] == "cpu" and r["memory"]["training"]["peak_rss_gib"] > 0
        # every step's gradient logged, finite and not 0 (GRPO: the spread reward tells the answers apart)
        assert [g["step"] for g in r["gradients"]] == list(range(1, STEPS + 1)), recipe
        assert all(0 < g["grad_norm"] < float("inf") and not g["skipped"] for g in r["gradients"]), r["gradients"]
        if grpo:
            # what reached `generate`: EOS barred until the last token (random weights seldom sample it in a
            # short run, so the logged lengths alone would pass without the forcing)
            length = r["settings"]["max_completion_length"]
            assert r["generation"]["min_new_tokens"] == r["generation"]["max_new_tokens"] == length
            assert r["generation"]["do_sample"] and r["generation"]["temperature"] == 1.0
            lengths = r["completion_lengths"]  # TRL's logged lengths
            assert lengths["min"] == lengths["max"] == lengths["expected"] == length


@pytest.mark.slow  # tiny_results: the benchmark's run of every GPU recipe, in a process of its own
def test_summary_has_a_row_per_run(tiny_results):
    out, results, _ = tiny_results
    proc = subprocess.run([sys.executable, str(BENCH), "--summarize", "--out", str(out)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in (out / "summary.md").read_text().splitlines() if line.startswith("| ")][1:]
    assert sorted(row.split(" | ")[0][2:] for row in rows) == sorted(p.stem for p in results)
    assert all(" ok " in row for row in rows)


@pytest.mark.skipif(_cuda(), reason="checks what happens without CUDA")
@pytest.mark.parametrize("argv", [["--out", "x"], ["--tiny", "--t4", "--out", "x"]], ids=["3b", "t4"])
def test_3b_and_t4_runs_need_cuda(bench, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.parse_args(argv)
    assert stop.value.code == 2 and "no CUDA device" in capsys.readouterr().err



# --- the JSON of a run: written when it starts, when training starts and after each step -------------------


def test_json_is_written_before_training_at_train_start_and_after_each_step(bench, tmp_path, monkeypatch):
    from gui_r1_lite.runio import read_json

    args = bench.parse_args(["--tiny", "--steps", "2", "--out", str(tmp_path / "out")])
    args.out.mkdir()
    out_file = args.out / f"{SFT.stem}.json"
    seen = []

    def fake_train(cfg, callbacks):
        clock, probe = callbacks
        seen.append(read_json(out_file))  # before any model is loaded
        probe.on_train_begin(None, None, None, model=None)
        seen.append(read_json(out_file))
        for k in range(2):
            clock.steps.append({"step": 1.0 + k, "generation": 0.0, "forward/backward + optimizer": 0.5,
                                "rewards": 0.0, "data preparation": 0.1})
            probe.on_step_end(None, None, None)
            seen.append(read_json(out_file))
        raise RuntimeError("stopped here")

    monkeypatch.setattr(bench.training, "train", fake_train)
    monkeypatch.setattr(bench, "precision", lambda model, args: {"lora": []})
    monkeypatch.setattr(bench, "record_generation", lambda model, result: None)
    (tmp_path / "work").mkdir()
    result = bench.run(SFT, args, tmp_path / "work", model="tiny")
    assert [r["status"] for r in seen] == ["loading", "running", "running", "running"]
    assert "setup_s" not in seen[0] and seen[1]["setup_s"] >= 0 and "loading" in seen[1]["memory"]
    assert [len(r["steps"]) for r in seen] == [0, 0, 1, 2]
    assert seen[3]["per_step"]["step_s"] == 2.0 and seen[3]["memory"]["training"]["device"] == "cpu"
    assert result["status"] == "error" and "stopped here" in result["error"] and not result["passed"]
    assert read_json(out_file)["status"] == "error"


def test_a_killed_run_keeps_its_steps_and_is_reported_as_stopped(tmp_path):
    # the benchmark on the CPU, killed (as `timeout` kills a part) once its JSON holds a step
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(BENCH), "--tiny", "--recipe", str(SFT), "--steps", "500",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    from gui_r1_lite.runio import read_json

    statuses, deadline = set(), time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            result = read_json(out / f"{SFT.stem}.json") if (out / f"{SFT.stem}.json").exists() else {}
            statuses.add(result.get("status"))
            if len(result.get("steps") or []) >= 1:
                break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    result = read_json(out / f"{SFT.stem}.json")
    assert result["status"] == "running" and len(result["steps"]) >= 1, statuses
    assert result["setup_s"] > 0 and result["per_step"]["steps"] >= 1 and not result["passed"]
    summary = subprocess.run([sys.executable, str(BENCH), "--summarize", "--out", str(out)], capture_output=True,
                             text=True, cwd=ROOT, timeout=120)
    assert summary.returncode == 0 and f"| {SFT.stem} | stopped after {len(result['steps'])} step" in summary.stdout


# --- the T4: its recipe, the memory arithmetic, and what counts as a failure ---------------------------------

T4_RECIPE = ROOT / "configs" / "grpo_qwen2_5_vl_3b_t4.yaml"


@pytest.fixture(scope="module")
def estimate():
    return _load(ROOT / "benchmarks" / "gpu_estimate.py")


@pytest.fixture(scope="module")
def report():
    return _load(ROOT / "benchmarks" / "gpu_report.py")


def _trainer_args(monkeypatch, recipe: Path, native_bf16: bool) -> dict:
    """What the training code hands TRL for `recipe` on a CUDA GPU with or without native bf16 (a T4: emulated
    only, as torch says on compute capability 7.5), before TRL's config class (which needs the GPU) is built."""
    import torch

    from gui_r1_lite.training import TrainConfig, config

    cfg = TrainConfig.from_yaml(recipe)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: native_bf16 or
                        including_emulation)
    with monkeypatch.context() as patch:
        patch.setattr(config, "trl_config_class", lambda method: dict)
        return cfg.trainer_args()


def test_t4_recipe_trains_fp16_with_the_loss_scaler_at_its_pixels_and_lengths(monkeypatch):
    from trl import GRPOConfig

    from gui_r1_lite.training import TrainConfig

    args = _trainer_args(monkeypatch, T4_RECIPE, native_bf16=False)
    assert args["fp16"] is True and args["bf16"] is False  # fp16 mixed precision: autocast + GradScaler
    assert (args["max_completion_length"], args["num_generations"], args["per_device_train_batch_size"],
            args["gradient_accumulation_steps"], args["steps_per_generation"]) == (512, 5, 5, 4, 2)
    cfg = TrainConfig.from_yaml(T4_RECIPE)
    assert (cfg.min_pixels, cfg.max_pixels, cfg.quantization, cfg.gradient_checkpointing) == \
        (262_144, 802_816, "4bit", True)
    assert cfg.cuda_alloc_conf == "expandable_segments:True" and cfg.device == "cuda"
    # TRL's own config takes them (on the CPU here): mixed precision fp16, which the Trainer runs with
    # torch.amp's GradScaler, and 10 sequences a generation batch
    trl = GRPOConfig(**{**args, "use_cpu": True, "output_dir": "/tmp/unused"})
    assert trl.fp16 and not trl.bf16 and trl.mixed_precision == "fp16" and trl.generation_batch_size == 10
    # on a GPU with native bf16 the same recipe is bf16, no scaler
    monkeypatch.undo()
    native = _trainer_args(monkeypatch, T4_RECIPE, native_bf16=True)
    assert native["bf16"] is True and native["fp16"] is False
    monkeypatch.undo()
    # every GPU recipe on a T4 (the SFT one too); a CPU recipe never
    assert _trainer_args(monkeypatch, SFT, native_bf16=False)["fp16"] is True
    assert _trainer_args(monkeypatch, ROOT / "configs" / "grpo_tiny_cpu.yaml", native_bf16=False)["fp16"] is False
    # without an adapter no fp16: the scaler cannot unscale the fp16 model's own gradients
    assert TrainConfig.from_dict({"device": "cuda", "lora": False}).loss_scaled(use_cpu=False) is False
    assert TrainConfig.from_dict({"device": "cuda"}).loss_scaled(use_cpu=False) is True  # the T4 still patched


def test_t4_estimate_counts_the_real_architecture(estimate):
    # the arithmetic's parameter counts against the 3B architecture built from the shipped configuration
    # (shapes only, no memory): the decoder's linear layers, the embedding, the vision tower, LoRA r 16
    import re

    from gui_r1_lite.lora import TEXT_LORA_TARGETS
    from gui_r1_lite.modeling import vision_tower
    from gui_r1_lite.tiny import real_architecture

    model = real_architecture(device="meta", dtype="bfloat16").model
    linear = {n: m for n, m in model.named_modules() if ".language_model.layers." in n and type(m).__name__ == "Linear"}
    sizes = estimate.SIZES
    assert sizes.text_linear() == sum(m.weight.numel() for m in linear.values()) == 2_774_532_096
    assert sizes.embedding() == model.get_input_embeddings().weight.numel()
    assert model.lm_head.weight is model.get_input_embeddings().weight  # tied: counted once
    assert sizes.vision() == sum(p.numel() for p in vision_tower(model).parameters()) == 668_684_288
    lora = sum(16 * (m.in_features + m.out_features) for n, m in linear.items() if re.fullmatch(TEXT_LORA_TARGETS, n))
    assert sizes.lora(16) == lora


def test_t4_recipe_fits_a_t4_with_margin_and_the_l4_recipe_does_not(estimate):
    t4 = estimate.grpo_step(estimate.T4, estimate.GrpoShape.of_recipe(T4_RECIPE))
    l4 = estimate.grpo_step(estimate.T4, estimate.GrpoShape.of_recipe(GRPO))
    assert t4["peak"] <= estimate.T4_TARGET_GIB < estimate.T4.usable_gib
    assert t4["margin"] > 2 and l4["margin"] < 1  # the L4 recipe leaves no room for the estimate's error
    shape = estimate.GrpoShape.of_recipe(T4_RECIPE)
    assert (shape.generation_batch, shape.micro_batch, shape.max_pixels // 196) == (10, 5, 4096)
    # the vision tower's prefill grows with the sequences sampled at once: 20 copies of 1.26 MP screenshots
    assert l4["sampling"]["vision tower"] > 3 * t4["sampling"]["vision tower"]


def test_t4_memory_figure_has_one_home(bench, estimate):
    # the cap of --t4 is the T4's usable memory (its total as torch reports it, less the CUDA context)
    assert estimate.T4.total_gib == 14.75 and bench.T4_GIB == round(estimate.T4.usable_gib, 2) < 14.75
    assert bench.parse_args(["--tiny", "--out", "x"]).t4_gib == bench.T4_GIB
    for path in ("benchmarks/bench_gpu_recipe.py", "docs/gpu.md", "tests/test_gpu.py"):
        assert not re.search(r"\b15(\.0)? GiB|T4_GIB = 15", (ROOT / path).read_text()), path


def test_t4_docs_quote_the_estimate_as_it_computes_now(estimate):
    text = (ROOT / "docs" / "gpu.md").read_text()
    assert estimate.tables() in text, "docs/gpu.md is stale: paste `python benchmarks/gpu_estimate.py`"


def test_t4_curation_of_the_gpu_profile_samples_one_row_a_generate(estimate):
    from gui_r1_lite import curation
    from gui_r1_lite.data import load_gui_r1
    from gui_r1_lite.profiles import get_profile

    prof = get_profile("gpu-3b")  # the real profile
    assert (prof.difficulty_rows, prof.difficulty_batch_rows, prof.difficulty_k) == (12, 1, 5)
    settings = prof.difficulty_settings()
    assert settings["batch_size"] == 1 and settings["max_pixels"] == prof.max_pixels
    # sized to a T4: one generate of 5 sequences fits with margin and the 12 rows take minutes; the earlier
    # 8 rows a generate (40 sequences of full screenshots) does not fit
    c = estimate.curation(estimate.T4, prof)
    assert c["sequences"] == 5 and c["peak"] <= estimate.T4_TARGET_GIB and c["total_s"] <= 15 * 60
    from dataclasses import replace

    assert estimate.curation(estimate.T4, replace(prof, difficulty_batch_rows=8))["margin"] < 0
    # and notebook 01's call with these settings hands the policy one row at a time, 12 rows in all
    calls = []

    def policy(rows, k):
        calls.append(len(rows))
        return [["no answer"] * k for _ in rows]

    samples = load_gui_r1(ROOT / "data_samples" / "train" / "miniwob_train.parquet", limit=30).samples
    kept, rep = curation.difficulty(prof.rows_to_score(samples), policy, **settings)
    assert calls == [1] * 12 and rep.rows_in == 12
    assert len(prof.rows_to_score(samples, 0)) == len(samples)  # 0: every row


def _result(status: str = "ok", t4: bool = True, steps: int = 2, gradients=None) -> dict:
    """A recorded benchmark run, as bench_gpu_recipe.run writes it."""
    step = {"step_s": 1.0, "generation_s": 0.5, "forward_backward_s": 0.4, "rest_s": 0.1}
    return {"run": "grpo_qwen2_5_vl_3b_t4_t4", "status": status, "t4": t4, "memory_limit_gib": 14.4,
            "environment": {"gpu": "NVIDIA H100"}, "memory": {"at_failure": {"peak_reserved_gib": 14.39,
                                                                              "peak_allocated_gib": 13.8}},
            "steps": [step] * steps, "precision": {"text_embedding": "torch.float16"},
            "gradients": [{"step": k + 1, "grad_norm": 0.5, "skipped": False} for k in range(steps)]
            if gradients is None else gradients, "completion_lengths": {"min": 8, "max": 8, "expected": 8,
                                                                           "full_length": True}}


def test_t4_out_of_memory_is_not_passed_and_does_not_fit(report, bench, tmp_path):
    oom = _result("out_of_memory", steps=0, gradients=[])
    assert not report.passed(oom) and not bench.passed(oom)
    assert report.status_text(oom) == "does not fit (out of memory)"
    assert "does not fit a T4: 14.39 GiB reserved" in report.failure(oom)
    assert "| does not fit (out of memory) (FAILED) |" in report.summary_table([oom])
    assert "(FAILED: does not fit a T4" in report.describe(oom)
    healthy = _result()
    assert report.passed(healthy) and "(FAILED" not in report.summary_table([healthy])
    # what gpu_check.sh runs: one FAIL line, exit 1
    (tmp_path / "oom.json").write_text(json.dumps(oom))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_report.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "FAIL: grpo_qwen2_5_vl_3b_t4_t4: does not fit a T4" in proc.stdout


@pytest.mark.parametrize("norms, problem", [
    ([0.5, 0.7], None),
    ([0.5, float("nan")], "step 2: grad_norm nan and the step was applied"),
    ([float("inf"), 0.5], "step 1: grad_norm inf and the step was applied"),
    ([0.5, 0.0], "step 2: grad_norm 0.0 (no gradient reached the trained weights)"),
    ([0.5, None], "step 2: no grad_norm logged"),
], ids=["healthy", "nan", "inf", "zero", "missing"])
def test_t4_check_fails_a_gradient_that_is_not_finite_or_zero(report, tmp_path, norms, problem):
    gradients = [{"step": k + 1, "skipped": False, **({} if g is None else {"grad_norm": g})}
                 for k, g in enumerate(norms)]
    result = _result(gradients=gradients)
    assert report.gradient_problem(result) == problem and report.passed(result) == (problem is None)
    # as written to and read from JSON (NaN and Infinity), by the command gpu_check.sh runs
    (tmp_path / "run.json").write_text(json.dumps(result))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_report.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == (0 if problem is None else 1), proc.stdout
    assert (f"FAIL: {result['run']}: {problem}" in proc.stdout) if problem else "FAIL" not in proc.stdout


def test_t4_check_allows_a_step_the_loss_scaler_skipped_but_not_only_such_steps(report):
    skipped = {"step": 1, "grad_norm": float("inf"), "skipped": True, "loss_scale": 65536.0}
    assert report.gradient_problem(_result(gradients=[skipped, {"step": 2, "grad_norm": 0.3}])) is None
    every = report.gradient_problem(_result(gradients=[skipped, {**skipped, "step": 2}]))
    assert every.startswith("every step's grad_norm is not finite")
    # a run stopped by its time limit may lack its last step's log, not an earlier one
    stopped = _result("running", gradients=[{"step": 1, "grad_norm": 0.3}, {"step": 2}])
    assert report.gradient_problem(stopped) is None and report.failure(stopped) is None
    assert report.gradient_problem(_result("running", steps=3, gradients=[{"step": 1, "grad_norm": 0.3}])) == \
        "step 2: no grad_norm logged"


def test_t4_probe_records_each_steps_grad_norm_and_the_scalers_skip(bench, tmp_path):
    # the benchmark's callback, fed as the Trainer feeds it: on_step_end (with accelerate's optimizer) then on_log
    from gui_r1_lite.runio import read_json

    class Scaler:
        def get_scale(self):
            return 32768.0

    class Optimizer:  # accelerate's AcceleratedOptimizer under fp16: a scaler and step_was_skipped
        scaler, step_was_skipped = Scaler(), True

    clock = type("Clock", (), {"steps": []})()
    result, out_file = {"memory": {}, "steps": []}, tmp_path / "run.json"
    probe = bench.probe(result, clock, out_file, time.perf_counter(), cuda=False)
    for norm, opt in [(float("inf"), Optimizer()), (0.25, None)]:
        clock.steps.append({"step": 1.0, "generation": 0.0, "forward/backward + optimizer": 0.5, "rewards": 0.0,
                            "data preparation": 0.1})
        probe.on_step_end(None, None, None, optimizer=opt)
        probe.on_log(None, None, None, logs={"loss": 0.1, "grad_norm": norm})
    probe.on_log(None, None, None, logs={"train_runtime": 3.0})  # the end-of-run record has no grad_norm
    assert read_json(out_file)["gradients"] == [
        {"step": 1, "skipped": True, "loss_scale": 32768.0, "grad_norm": float("inf")},
        {"step": 2, "skipped": False, "loss_scale": None, "grad_norm": 0.25}]
