"""Kill-and-resume: a GRPO run on the tiny model is SIGKILLed between two checkpoints, or stopped by
SIGTERM (it saves a checkpoint at the end of its step), and continued with `--resume`; it must end at
exactly `max_steps`, from the checkpoint, with every step logged once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gui_r1_lite.runio import iter_jsonl
from gui_r1_lite.training import last_checkpoint, read_metrics
from tests.helpers import probe_env as _env

ROOT = Path(__file__).resolve().parents[1]
MAX_STEPS = 6
SAVE_STEPS = 2
# Each step of the killed run sleeps this long after its update, before it logs and saves: the
# kill window after a step is logged is then at least this wide, however fast the machine is.
STEP_SLEEP = 1.0
CHILD_TIMEOUT = 300

pytestmark = pytest.mark.slow  # two training processes, one killed, one resumed



def _command(data: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "gui_r1_lite.train", "--method", "grpo", "--train_data", data,
            "--output_dir", str(out), "--max_steps", str(MAX_STEPS), "--save_steps", str(SAVE_STEPS),
            "--num_generations", "4", "--per_device_train_batch_size", "4",
            "--max_completion_length", "12", "--min_pixels", "3136", "--max_pixels", "50176", "--device", "cpu"]


def _logged_steps(out: Path) -> list[int]:
    """Steps of the training records in metrics.jsonl so far (a line being written is skipped)."""
    return [rec["step"] for rec in iter_jsonl(out / "metrics.jsonl") if "loss" in rec]


def _step_of(checkpoint: str | None) -> int:
    return int(Path(checkpoint).name.rsplit("-", 1)[1]) if checkpoint else 0


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def test_killed_grpo_run_resumes_from_its_last_checkpoint(toy_data, tmp_path):
    out = tmp_path / "run"
    cmd = _command(toy_data, out)
    killed_log = tmp_path / "killed.log"
    probe = tmp_path / "probe"

    # 1. Start, and SIGKILL once a complete checkpoint exists AND a later step has been logged, so
    #    the resume must also drop metrics lines the checkpoint does not cover.
    with killed_log.open("w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env=_env(GUI_R1_PROBE_STEP_SLEEP=str(STEP_SLEEP)))
        deadline = time.monotonic() + CHILD_TIMEOUT
        try:
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"the run ended (rc {proc.returncode}) before it could be killed:\n"
                                         f"{_tail(killed_log)}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"no checkpoint within {CHILD_TIMEOUT} s:\n{_tail(killed_log)}")
                saved = _step_of(last_checkpoint(out))
                if saved and max(_logged_steps(out), default=0) > saved:
                    proc.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.02)
        finally:
            if proc.poll() is None:  # a failed wait above must not leave the run behind
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)

    assert proc.returncode == -signal.SIGKILL
    # Killed mid-run: nothing of a finished run was written.
    assert not (out / "adapter").exists() and not (out / "ranks").exists()
    checkpoint = last_checkpoint(out)
    saved = _step_of(checkpoint)
    before = _logged_steps(out)
    assert 0 < saved < MAX_STEPS and saved < max(before) <= MAX_STEPS, (saved, before)
    kept_lines = (out / "metrics.jsonl").read_text().splitlines()[:saved]

    # 2. Resume (no sleeping); the probe records the step the trainer starts from.
    resumed = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT,
                             env=_env(GUI_R1_PROBE_DIR=str(probe)))
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"[train] resuming from {checkpoint}" in resumed.stdout, resumed.stdout[-3000:]
    assert f"[train] done: {MAX_STEPS} steps" in resumed.stdout
    assert json.loads((probe / "begin-rank0.json").read_text())["global_step"] == saved

    # 3. Exactly max_steps, each step logged once; the lines up to the checkpoint are the killed run's.
    assert json.loads((out / "ranks" / "rank0.json").read_text())["global_step"] == MAX_STEPS
    state = json.loads((out / f"checkpoint-{MAX_STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == MAX_STEPS
    records = read_metrics(out)
    assert [r["step"] for r in records if "loss" in r] == list(range(1, MAX_STEPS + 1))
    assert [r["step"] for r in records if "train_runtime" in r] == [MAX_STEPS]  # the end-of-run summary
    assert (out / "metrics.jsonl").read_text().splitlines()[:saved] == kept_lines
    assert (out / "adapter" / "adapter_config.json").exists()


def test_sigterm_stops_at_the_end_of_a_step_with_a_checkpoint_and_resume_ends_as_an_uninterrupted_run(
        toy_data, tmp_path):
    out, whole = tmp_path / "run", tmp_path / "whole"
    cmd = _command(toy_data, out)
    cmd[cmd.index("--save_steps") + 1] = "100"  # no checkpoint on the schedule: the one to resume is the stop's
    log = tmp_path / "stopped.log"

    # 1. SIGTERM once a step is logged: the run ends at the end of its step, saving a checkpoint there.
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=fh,
                                env=_env(GUI_R1_PROBE_STEP_SLEEP=str(STEP_SLEEP)))
        try:
            deadline = time.monotonic() + CHILD_TIMEOUT
            while not _logged_steps(out):
                assert proc.poll() is None and time.monotonic() < deadline, _tail(log)
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            proc.wait(timeout=60)  # before: killed at once (-15), the steps since the last checkpoint lost
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
    assert proc.returncode == 143, _tail(log)
    assert time.monotonic() - sent < 30  # the end of one step, not the end of the run
    stopped = last_checkpoint(out)
    saved = _step_of(stopped)
    assert 0 < saved < MAX_STEPS and _logged_steps(out) == list(range(1, saved + 1))
    said = _tail(log).strip().splitlines()[-1]
    assert said == (f"[train] stopped by SIGTERM after step {saved} of {MAX_STEPS} (saved as checkpoint-{saved}); "
                    f"what it finished is kept in {out}; to continue, run the same command again with --resume")
    assert not (out / "adapter").exists()

    # 2. --resume continues from that checkpoint and ends where an uninterrupted run ends.
    resumed = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT,
                             env=_env())
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"[train] resuming from {stopped}" in resumed.stdout
    records = read_metrics(out)
    assert [r["step"] for r in records if "loss" in r] == list(range(1, MAX_STEPS + 1))
    assert [r["step"] for r in records if "train_runtime" in r] == [MAX_STEPS]  # the stopped part's summary dropped
    cmd[cmd.index("--output_dir") + 1] = str(whole)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((folder / "ranks" / "rank0.json").read_text()) for folder in (out, whole)]
    assert ranks[0]["global_step"] == ranks[1]["global_step"] == MAX_STEPS
    assert ranks[0]["trainable_fingerprint"] == ranks[1]["trainable_fingerprint"]
