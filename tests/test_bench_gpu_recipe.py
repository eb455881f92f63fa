"""benchmarks/bench_gpu_recipe.py on the CPU (`--tiny`: the code a GPU runs, with the tiny stand-in), and what
a CPU can check of scripts/gpu_check.sh and scripts/fetch_gpu_wheels.sh."""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_gpu_recipe.py"
GRPO = ROOT / "configs" / "grpo_qwen2_5_vl_3b_qlora.yaml"
SFT = ROOT / "configs" / "sft_qwen2_5_vl_3b_qlora.yaml"
STEPS = 2


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gpu_recipe", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory, bench):
    """Every GPU recipe run by the benchmark with --tiny on the CPU: {recipe path: its JSON}."""
    out = tmp_path_factory.mktemp("bench_gpu")
    proc = subprocess.run([sys.executable, str(BENCH), "--tiny", "--out", str(out), "--steps", str(STEPS)],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    from gui_r1_lite.runio import read_json

    return out, {recipe: read_json(out / f"{recipe.stem}.json") for recipe in bench.gpu_recipes()}


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


def test_tiny_runs_every_gpu_recipe_and_records_it(tiny_results):
    from gui_r1_lite.training.config import read_recipe

    _, results = tiny_results
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
        if grpo:
            # what reached `generate`: EOS barred until the last token (random weights seldom sample it in a
            # short run, so the logged lengths alone would pass without the forcing)
            length = r["settings"]["max_completion_length"]
            assert r["generation"]["min_new_tokens"] == r["generation"]["max_new_tokens"] == length
            assert r["generation"]["do_sample"] and r["generation"]["temperature"] == 1.0
            lengths = r["completion_lengths"]  # TRL's logged lengths
            assert lengths["min"] == lengths["max"] == lengths["expected"] == length


def test_summary_has_a_row_per_run(tiny_results):
    out, results = tiny_results
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


@pytest.mark.skipif(_cuda(), reason="checks what happens without CUDA")
def test_gpu_check_without_cuda_stops_at_once(tmp_path):
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stdout and "sees none" in proc.stdout
    assert "== wheels" not in proc.stdout  # nothing else ran
    assert (tmp_path / "out" / "gpu_check.log").read_text() == proc.stdout
    assert time.monotonic() - t0 < 60


def _pins(path: Path) -> dict[str, str]:
    return dict(re.findall(r"^\s*([A-Za-z0-9_.-]+)==([^\s#]+)", path.read_text(), flags=re.M))


def test_travelling_wheels_are_the_tested_versions():
    from packaging.requirements import Requirement

    wheels = _pins(ROOT / "scripts" / "fetch_gpu_wheels.sh")
    tested, colab = _pins(ROOT / "requirements.txt"), _pins(ROOT / "requirements-colab.txt")
    for name in ("trl", "peft", "bitsandbytes"):
        assert wheels[name] == tested[name], name
    assert wheels["datasets"] == colab["datasets"]
    # transformers does not travel: the base image's 5.17 must stay inside the project's range
    assert "transformers" not in wheels
    pyproject = (ROOT / "pyproject.toml").read_text()
    spec = Requirement(re.search(r'"(transformers[^"]*)"', pyproject).group(1)).specifier
    assert spec.contains("5.17.0") and spec.contains(tested["transformers"])


@pytest.mark.skipif(not any((ROOT / "wheels").glob("*.whl")), reason="wheels/ not fetched (scripts/fetch_gpu_wheels.sh)")
def test_fetched_wheels_install_offline_for_python_3_12(tmp_path):
    # what gpu_check.sh does on the GPU machine, as a dry run for its Python
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps",
                           "--only-binary=:all:", "--python-version", "3.12", "--target", str(tmp_path / "site"),
                           *map(str, sorted((ROOT / "wheels").glob("*.whl")))],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_FIND_LINKS": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert all(name in proc.stdout for name in ("trl-", "bitsandbytes-", "datasets-", "peft-"))
