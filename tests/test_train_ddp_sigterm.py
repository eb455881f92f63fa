"""SIGTERM under `torchrun` (two CPU processes, gloo): sent to the launcher (what `kill PID` or a
scheduler does to the job's command; torchrun passes it on to its workers), to one worker alone, or
to every process at once (a scheduler that signals the whole job, so each worker has it twice),
the run must end within a bounded time, both ranks at the end of the same step with one complete
`checkpoint-N` there, and `--resume` must take both ranks on to `max_steps`, every step logged once."""

from __future__ import annotations

import contextlib
import json
import os
import re
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
# Each step sleeps this long after its update: the signal lands while steps are still to come.
STEP_SLEEP = 1.0
START_TIMEOUT = 300  # until the first step is logged (two processes loading the stack)
# After the signal: the step under way, its checkpoint, and torchrun's own shutdown (it waits
# 30 s for its workers before it SIGKILLs them); a hang fails the test here.
STOP_TIMEOUT = 120
RESUME_NOTE = "to continue, run the same command again with --resume"

pytestmark = pytest.mark.slow  # four torchrun runs of two processes, each loading the stack



def _command(data: str, out: Path) -> list[str]:
    # SFT, as in test_train_ddp.py; no checkpoint on the schedule: the one to resume is the stop's
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
            "-m", "gui_r1_lite.train", "--method", "sft", "--train_data", data, "--output_dir", str(out),
            "--max_steps", str(MAX_STEPS), "--per_device_train_batch_size", "2", "--learning_rate", "0.01",
            "--min_pixels", "3136", "--max_pixels", "50176", "--device", "cpu", "--save_steps", "100"]


def _logged_steps(out: Path) -> list[int]:
    return [rec["step"] for rec in iter_jsonl(out / "metrics.jsonl") if "loss" in rec]


def _tail(path: Path, n: int = 4000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def _worker(launcher: int, rank: int) -> int:
    """The pid of the launcher's worker process of `rank` (from its environment, in /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0") if ppid == launcher else []
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or not ours to read
        if f"RANK={rank}".encode() in environ:
            return int(entry.name)
    raise AssertionError(f"no worker of rank {rank} under the launcher (pid {launcher})")


def _is_worker(pid: int) -> bool:
    """Whether `pid` is still a running training process (not gone, not a zombie, not reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return stat[0] != "Z" and b"gui_r1_lite.train" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the worker's pid in /proc")
@pytest.mark.parametrize("target", ["launcher", "rank1", "every process"])
def test_sigterm_under_torchrun_stops_both_ranks_at_one_step_with_a_checkpoint_and_resume_finishes(
        toy_data, tmp_path, target):
    out, probe = tmp_path / "run", tmp_path / "probe"
    cmd = _command(toy_data, out)
    log = tmp_path / "stopped.log"

    # 1. Signal once a step is logged. torchrun starts each worker in a session of its own, so the
    #    clean-up after a failed wait kills the workers by pid, not by the launcher's group.
    workers: list[int] = []
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                env=_env(GUI_R1_PROBE_STEP_SLEEP=str(STEP_SLEEP)))
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while not _logged_steps(out):
                assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before a step:\n{_tail(log)}"
                assert time.monotonic() < deadline, f"no step logged within {START_TIMEOUT} s:\n{_tail(log)}"
                time.sleep(0.05)
            workers = [_worker(proc.pid, r) for r in (0, 1)]
            # "every process": what a scheduler that signals the whole job does (SLURM's scancel);
            # each worker then has it twice, directly and passed on by torchrun
            for pid in {"launcher": [proc.pid], "rank1": [workers[1]],
                        "every process": [proc.pid, *workers]}[target]:
                os.kill(pid, signal.SIGTERM)
            sent = time.monotonic()
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"still running {STOP_TIMEOUT} s after SIGTERM:\n{_tail(log)}") from None
            took = time.monotonic() - sent
            left = [pid for pid in workers if _is_worker(pid)]
            assert not left, f"workers {left} outlived the launcher"
        finally:
            for pid in [proc.pid, *workers]:
                if pid == proc.pid or _is_worker(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            proc.wait(timeout=60)
    said = _tail(log, 100_000)
    # The workers exit 143; torchrun reports a failed run: 1 (a worker failed, or its SignalException).
    assert proc.returncode == 1, said[-4000:]
    assert took < 60, took  # the end of one step and its checkpoint, not torchrun's SIGKILL

    # 2. Both ranks stopped at the end of the same step N < max_steps, with one complete checkpoint.
    stopped = last_checkpoint(out)
    assert stopped is not None, said[-4000:]
    saved = int(Path(stopped).name.rsplit("-", 1)[1])
    assert 0 < saved < MAX_STEPS
    assert sorted(p.name for p in out.glob("checkpoint-*")) == [f"checkpoint-{saved}"]
    assert all((Path(stopped) / f"rng_state_{r}.pth").exists() for r in (0, 1))  # each rank saved its part
    assert json.loads((Path(stopped) / "trainer_state.json").read_text())["global_step"] == saved
    ranks = [json.loads((out / "ranks" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["global_step"] for r in ranks] == [saved, saved]
    assert ranks[0]["trainable_fingerprint"] == ranks[1]["trainable_fingerprint"]
    assert _logged_steps(out) == list(range(1, saved + 1))
    assert not (out / "adapter").exists()
    # Each worker says so in one line (a line of its own, or after the progress bar of rank 0,
    # which torchrun's shared stderr leaves without a newline); rank 0's names the folder and how
    # to go on, rank 1 holds no folder.
    stop_line = f"[train] stopped by SIGTERM after step {saved} of {MAX_STEPS} (saved as checkpoint-{saved})"
    for line in (f"{stop_line}; what it finished is kept in {out}; {RESUME_NOTE}", stop_line):
        assert re.search(re.escape(line) + "$", said, re.MULTILINE), said[-4000:]

    # 3. --resume: both ranks start from the checkpoint and end at max_steps, every step logged once.
    resumed = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=START_TIMEOUT,
                             env=_env(GUI_R1_PROBE_DIR=str(probe)))
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"[train] resuming from {stopped}" in resumed.stdout
    assert [json.loads((probe / f"begin-rank{r}.json").read_text())["global_step"] for r in (0, 1)] == [saved, saved]
    ranks = [json.loads((out / "ranks" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["global_step"] for r in ranks] == [MAX_STEPS, MAX_STEPS]
    assert ranks[0]["trainable_fingerprint"] == ranks[1]["trainable_fingerprint"]
    records = read_metrics(out)
    assert [r["step"] for r in records if "loss" in r] == list(range(1, MAX_STEPS + 1))
    assert [r["step"] for r in records if "train_runtime" in r] == [MAX_STEPS]  # the stopped part's summary dropped
    assert (out / "adapter" / "adapter_config.json").exists()
