"""Two-process DDP on CPU (gloo): `torchrun --standalone --nproc_per_node 2 -m gui_r1_lite.train` runs
tiny SFT steps; both ranks must start from and end with the same trainable weights, and the
weights must have moved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui_r1_lite.training import read_metrics

ROOT = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "train_probe"
STEPS = 2
PER_DEVICE = 2

pytestmark = pytest.mark.slow  # two torchrun processes, each loading the stack


def test_two_cpu_processes_stay_in_sync(toy_data, tmp_path):
    out = tmp_path / "ddp"
    probe = tmp_path / "probe"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONUNBUFFERED": "1", "GUI_R1_PROBE_DIR": str(probe),
           "PYTHONPATH": os.pathsep.join(p for p in (str(PROBE), os.environ.get("PYTHONPATH")) if p)}
    env.pop("GUI_R1_PROBE_STEP_SLEEP", None)
    # SFT rather than GRPO: a random tiny policy earns GUI-R1 reward 0 everywhere, so GRPO would
    # leave the weights where they started and "the ranks agree" would prove nothing.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "gui_r1_lite.train", "--method", "sft", "--train_data", toy_data, "--output_dir", str(out),
           "--max_steps", str(STEPS), "--per_device_train_batch_size", str(PER_DEVICE), "--learning_rate", "0.01",
           "--min_pixels", "3136", "--max_pixels", "50176", "--device", "cpu", "--save_steps", "100"]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    ranks = [json.loads((out / "ranks" / f"rank{r}.json").read_text()) for r in (0, 1)]
    begin = [json.loads((probe / f"begin-rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    assert [r["global_step"] for r in ranks] == [STEPS, STEPS]
    # DDP hands rank 0's weights to rank 1 when it wraps the model, then averages every gradient.
    assert begin[0]["trainable_fingerprint"] == begin[1]["trainable_fingerprint"]
    assert ranks[0]["trainable_fingerprint"] == ranks[1]["trainable_fingerprint"]
    assert ranks[0]["trainable_fingerprint"] != begin[0]["trainable_fingerprint"], "the weights did not move"

    # Rank 0 alone writes metrics; the sampler splits the 16 rows between the ranks, so each step
    # covers PER_DEVICE x 2 of them.
    logs = [r for r in read_metrics(out) if "loss" in r]
    assert [r["step"] for r in logs] == list(range(1, STEPS + 1))
    assert logs[-1]["epoch"] == STEPS * PER_DEVICE * 2 / 16
    assert (out / "adapter" / "adapter_config.json").exists()
