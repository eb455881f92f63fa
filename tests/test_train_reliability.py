"""Training's run folder and command line under misuse: a folder holding another run is refused
(or resumed only by the same run), bad inputs fail before any model loads, and every command-line
error is one line with the exit code of its kind."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui_r1_lite.errors import UsageError
from gui_r1_lite.training import ConfigError, TrainConfig, last_checkpoint, read_metrics, resolve_model, train
from tests.helpers import full_disk_for, hold_lock

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(min_pixels=3136, max_pixels=50176, device="cpu", logging_steps=1)
GRPO = dict(method="grpo", num_generations=4, per_device_train_batch_size=4, max_completion_length=8,
            learning_rate=1e-3, **SMALL)


class ModelLoaded(AssertionError):
    pass


@pytest.fixture
def no_model(monkeypatch):
    """Loading (or building) a model fails the test: the checks must come first."""
    from gui_r1_lite.training import trainer

    def refuse(*_a, **_k):
        raise ModelLoaded("a model was loaded before the bad input was found")
    monkeypatch.setattr(trainer, "load_model", refuse)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- item 2: a folder that holds another run --------------------------------------------------------

def test_a_folder_holding_another_run_is_refused_without_resume(toy_data, tmp_path, no_model):
    out = tmp_path / "run"
    out.mkdir()
    old = '{"step": 1, "loss": 0.5}\n'
    (out / "metrics.jsonl").write_text(old)  # another run's log
    with pytest.raises(ConfigError, match=r"holds another run.*metrics\.jsonl.*another --output_dir.*--resume"):
        train(TrainConfig.from_dict(dict(train_data=toy_data, output_dir=str(out), max_steps=1, **GRPO)))
    assert (out / "metrics.jsonl").read_text() == old and not (out / "train_config.yaml").exists()


def test_files_of_other_kinds_do_not_make_a_folder_a_run(toy_data, tmp_path, monkeypatch):
    # the miniature writes its log.txt into a stage folder before training there; a built tiny
    # model (resolve_model, before a run) is the run's own cache, checked by its build arguments
    out = tmp_path / "stage"
    out.mkdir()
    (out / "log.txt").write_text("loading\n")
    (out / "base_model").mkdir()
    from gui_r1_lite.training import trainer

    monkeypatch.setattr(trainer, "load_model", lambda *a, **k: (_ for _ in ()).throw(ModelLoaded("reached")))
    with pytest.raises(ModelLoaded):
        train(TrainConfig.from_dict(dict(train_data=toy_data, output_dir=str(out), max_steps=1, **GRPO)))
    assert json.loads((out / "run.json").read_text())["settings"]["method"] == "grpo"


def test_resume_continues_only_the_same_run(toy_data, tmp_path, monkeypatch):
    out = tmp_path / "run"
    base = dict(train_data=toy_data, output_dir=str(out), save_steps=1, **GRPO)
    first = train(TrainConfig.from_dict(dict(base, max_steps=1)))
    assert first.global_step == 1 and last_checkpoint(out)
    record = json.loads((out / "run.json").read_text())
    assert record["base_model"]["tiny"]["seed"] == 0 and record["data"][0]["sha256"] == _sha(Path(toy_data))
    weights = _sha(out / "base_model" / "model.safetensors")

    from gui_r1_lite.training import trainer

    real_load = trainer.load_model
    monkeypatch.setattr(trainer, "load_model", lambda *a, **k: (_ for _ in ()).throw(ModelLoaded("loaded")))
    # the same settings without --resume would overwrite the run
    with pytest.raises(ConfigError, match="holds another run"):
        train(TrainConfig.from_dict(dict(base, max_steps=2)))
    # SFT must not continue a GRPO checkpoint, nor a run at another learning rate or from another base
    sft = {k: v for k, v in base.items() if k not in ("num_generations", "max_completion_length")}
    with pytest.raises(ConfigError, match=r"method: 'grpo' there, 'sft' now.*learning_rate: 0\.001 there, 0\.01"):
        train(TrainConfig.from_dict(dict(sft, method="sft", learning_rate=1e-2, max_steps=2, resume=True)))
    with pytest.raises(ConfigError, match=r"base model: .*seed.*0.*there.*1.*now"):
        train(TrainConfig.from_dict(dict(base, tiny_seed=1, max_steps=2, resume=True)))
    assert _sha(out / "base_model" / "model.safetensors") == weights  # refused before the cache was touched

    # what may change on resume: how long, how often it saves and logs
    monkeypatch.setattr(trainer, "load_model", real_load)
    again = train(TrainConfig.from_dict(dict(base, max_steps=2, save_steps=5, logging_steps=2, resume=True)))
    assert again.global_step == 2
    assert [r["step"] for r in read_metrics(out) if "loss" in r] == [1, 2]


def test_a_cached_tiny_model_of_other_build_arguments_is_rebuilt(tmp_path):
    out = str(tmp_path / "run")
    folder = Path(resolve_model(TrainConfig.from_dict(dict(output_dir=out, tiny_seed=0))))
    seed0 = _sha(folder / "model.safetensors")
    assert Path(resolve_model(TrainConfig.from_dict(dict(output_dir=out, tiny_seed=0)))) == folder
    assert _sha(folder / "model.safetensors") == seed0  # same arguments: reused
    resolve_model(TrainConfig.from_dict(dict(output_dir=out, tiny_seed=1)))
    assert _sha(folder / "model.safetensors") != seed0, "the seed-0 model was reused for tiny_seed 1"
    resolve_model(TrainConfig.from_dict(dict(output_dir=out, tiny_seed=1, tiny={"hidden_size": 128})))
    assert json.loads((folder / "config.json").read_text())["text_config"]["hidden_size"] == 128


# --- item 6: bad inputs fail before any model loads -----------------------------------------------------

def _file(tmp_path: Path) -> str:
    (tmp_path / "a_file").write_text("not a folder")
    return str(tmp_path / "a_file" / "out")


@pytest.mark.parametrize("over, words", [
    (lambda t, d: {"train_data": str(t / "empty")}, "no parquet files"),
    (lambda t, d: {"train_data": "nobody-here/no-such-dataset"}, "no such file or folder.*hub dataset"),
    (lambda t, d: {"rewards": {"gui_r1": "heavy"}}, "rewards: the weight of 'gui_r1' must be a number, got 'heavy'"),
    (lambda t, d: {"rewards": ["gui_r1"]}, "rewards must be a mapping"),
    (lambda t, d: {"output_dir": _file(t)}, "output_dir .* cannot be written"),
], ids=["empty-folder", "unreachable-hub-id", "reward-weight-text", "rewards-list", "unwritable-output"])
def test_bad_inputs_fail_before_any_model_loads(toy_data, tmp_path, no_model, monkeypatch, over, words):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub is unreachable: fail at once, not after retries
    (tmp_path / "empty").mkdir()
    values = dict(train_data=toy_data, output_dir=str(tmp_path / "run"), max_steps=1, **GRPO)
    with pytest.raises(UsageError, match=words):
        train(TrainConfig.from_dict({**values, **over(tmp_path, toy_data)}))


# --- item 7: a torn last line of metrics.jsonl -------------------------------------------------------

def test_metrics_with_a_torn_last_line_still_read(tmp_path):
    from gui_r1_lite.training import start_and_end

    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.0}\n{"step": 3, "lo')
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2]
    assert start_and_end(tmp_path, window=1)["end"]["steps"] == [2, 2]


# --- item 8: command-line errors are one line with an exit code ------------------------------------------

def _run_main(argv: list[str], capsys) -> tuple[int, str]:
    from gui_r1_lite.train import main

    code = main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (lambda t: ["--config", str(t / "bad.yaml")], r"bad\.yaml: not valid YAML.* line 2"),
    (lambda t: ["--config", str(t)], r"is a folder, not a recipe file"),
    (lambda t: ["--config", str(ROOT / "configs" / "grpo_tiny_cpu.yaml"), "--per_device_train_batch_size", "four"],
     r"--per_device_train_batch_size.*'four'"),
    (lambda t: ["--config", str(t / "unknown.yaml")], r"unknown key\(s\) \['lr'\]"),
    (lambda t: ["--method", "ppo"], "method must be one of"),
    (lambda t: ["--config", str(t / "missing.yaml")], "recipe not found"),
], ids=["yaml-syntax", "config-folder", "flag-value", "unknown-key", "unknown-method", "missing-recipe"])
def test_command_line_errors_are_one_line_with_exit_code_2(tmp_path, capsys, argv, words):
    (tmp_path / "bad.yaml").write_text("method: grpo\nlearning_rate: [1, 2\nmax_steps: 3\n")
    (tmp_path / "unknown.yaml").write_text("lr: 1\n")
    code, err = _run_main(argv(tmp_path), capsys)
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert lines[0].startswith("[train] error: ") and len(lines) == 2 and "--debug" in lines[1], err
    assert __import__("re").search(words, lines[0]), lines[0]
    if "--per_device_train_batch_size" in words:
        assert "grpo_tiny_cpu.yaml" not in lines[0]  # the flag was wrong, not the recipe


def test_debug_shows_the_traceback(tmp_path, capsys):
    (tmp_path / "bad.yaml").write_text("method: [grpo\n")
    code, err = _run_main(["--config", str(tmp_path / "bad.yaml"), "--debug"], capsys)
    assert code == 2 and "Traceback" in err and "[train] error:" in err


def test_python_m_train_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "bad.yaml").write_text("method: grpo\nlearning_rate: [1, 2\n")
    done = subprocess.run([sys.executable, "-m", "gui_r1_lite.train", "--config", str(tmp_path / "bad.yaml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "bad.yaml: not valid YAML" in done.stderr


# --- faults: two writers of one folder, a bad line inside metrics.jsonl, a full disk -------------------

def _argv(data: str, out: Path) -> list[str]:
    return ["--method", "grpo", "--train_data", data, "--output_dir", str(out), "--max_steps", "1",
            "--num_generations", "4", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
            "--min_pixels", "3136", "--max_pixels", "50176", "--device", "cpu"]


def test_a_second_run_into_a_held_output_dir_is_refused_naming_its_pid(toy_data, tmp_path, capsys, no_model):
    out = tmp_path / "run"
    holder = hold_lock(out)
    try:
        code, err = _run_main(_argv(toy_data, out), capsys)  # before: went on to load its model beside the other
        lines = err.strip().splitlines()
        assert code == 2 and lines[0].startswith("[train] error: --output_dir ") and len(lines) == 2, err
        assert str(out) in lines[0] and f"pid {holder.pid}" in lines[0]
        assert not (out / "run.json").exists()
    finally:
        holder.kill()  # SIGKILL: the kernel drops its lock, the file stays with its pid
        holder.wait()
    with pytest.raises(ModelLoaded):  # a lock left by a dead process does not block: the run goes on
        train(TrainConfig.from_dict(dict(train_data=toy_data, output_dir=str(out), max_steps=1, **GRPO)))


def test_a_bad_line_inside_metrics_is_named_and_dropped_on_resume(tmp_path, capsys):
    from types import SimpleNamespace

    from gui_r1_lite.training.callbacks import MetricsJsonl

    path = tmp_path / "metrics.jsonl"
    step = [json.dumps({"step": s, "loss": s / 10}).encode() for s in range(5)]
    # line 2: bytes that are not UTF-8 where step 2 stood; line 4: step 4 cut short with step 5 on its line;
    # then the end-of-run summary of the run that was stopped at step 4
    path.write_bytes(b"\n".join([step[1], b"\xff\xfe\x00garbage", step[3], step[4][:9] + step[4], step[4],
                                 b'{"step": 4, "train_runtime": 3.0}']) + b"\n")
    state = SimpleNamespace(global_step=3, is_world_process_zero=True)  # resumed from checkpoint-3
    MetricsJsonl().on_train_begin(SimpleNamespace(output_dir=str(tmp_path)), state, None)  # before: UnicodeDecodeError
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and str(path) in warning[0] and "line 2, 4" in warning[0], warning
    assert path.read_bytes() == step[1] + b"\n" + step[3] + b"\n"  # no garbage; steps past 3 are logged again


def test_a_full_disk_is_one_line_exit_1_naming_the_file(toy_data, tmp_path, capsys, monkeypatch, no_model):
    out = tmp_path / "run"
    full_disk_for(monkeypatch, f".run.json.tmp-{os.getpid()}")  # run.json's atomic write, the run's first file
    code, err = _run_main(_argv(toy_data, out), capsys)  # before: a traceback
    assert code == 1 and "Traceback" not in err, err
    assert err.startswith("[train] error: disk full: could not write ") and str(out / "run.json") in err
    assert "--resume" in err and not (out / "run.json").exists()
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]


@pytest.fixture
def small_disk(tmp_path):
    """A filesystem of its own (tmpfs, made larger or smaller by `.resize(bytes)`) at `.path`; where
    mounting is not permitted (not root, no CAP_SYS_ADMIN) `.path` is a plain folder and `.real` False."""
    import gc
    import shutil
    from types import SimpleNamespace

    path = tmp_path / "disk"
    path.mkdir()

    def mount(*options: str) -> bool:
        return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(path)],
                              capture_output=True).returncode == 0

    real = os.geteuid() == 0 and shutil.which("mount") is not None and mount("size=64m")
    disk = SimpleNamespace(path=path, real=real, resize=lambda size: mount("remount", f"size={-(-size // 4096) * 4}k"))
    try:
        yield disk
    finally:
        if real:
            gc.collect()  # the trainer's weights are memory-mapped from the disk
            if subprocess.run(["umount", str(path)], capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(path)], check=True)  # detached now, gone when unmapped


def _no_room_for(name: str, disk, step: int, monkeypatch, final: bool = False):
    """A callback that, at the end of `step` (before its checkpoint is saved; `final`: at the end of
    training, before the adapter is saved), leaves the disk room for what the newest checkpoint held
    before its `name` and half of `name` (tmpfs records the order of writes to the nanosecond; a
    checkpoint starts with what the adapter holds, in the same order). Without a real disk: the
    library call writing `name` raises its own error of a full disk (and the disk says it has no room
    left)."""
    import shutil

    import torch
    from safetensors import SafetensorError
    from transformers import TrainerCallback

    from gui_r1_lite import errors

    class NoRoom(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if not final and state.global_step == step:
                self.fill(args)

        def on_train_end(self, args, state, control, **kw):
            if final and state.global_step == step:
                self.fill(args)

        def fill(self, args):
            files = [f for f in Path(last_checkpoint(args.output_dir)).rglob("*") if f.is_file()]
            cut = min((f for f in files if f.name == name), key=lambda f: f.stat().st_mtime_ns)
            room = sum(f.stat().st_blocks * 512 for f in files if f.stat().st_mtime_ns < cut.stat().st_mtime_ns)
            if disk.real:
                assert disk.resize(shutil.disk_usage(disk.path).used + room + cut.stat().st_size // 2)
            elif name.endswith(".safetensors"):
                import peft.peft_model

                def save_file(tensors, filename, *a, **k):
                    raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
                monkeypatch.setattr(peft.peft_model, "safe_save_file", save_file)
            else:
                real_save, real_usage = torch.save, shutil.disk_usage

                def save(obj, f, *a, **k):
                    if str(f).endswith(name):
                        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")
                    return real_save(obj, f, *a, **k)
                monkeypatch.setattr(torch, "save", save)
                monkeypatch.setattr(errors.shutil, "disk_usage",
                                    lambda p: real_usage(p)._replace(free=0) if str(p).startswith(str(disk.path))
                                    else real_usage(p))
    return NoRoom()


@pytest.mark.slow  # two tiny training runs a case
@pytest.mark.parametrize("cut", ["adapter_model.safetensors", "optimizer.pt"])
def test_a_full_disk_while_a_checkpoint_is_saved_is_one_line_and_resume_goes_on(toy_data, small_disk, capsys,
                                                                                monkeypatch, cut):
    # safetensors (the adapter) and torch.save (the optimizer) say it in errors that are not OSError
    import functools

    import gui_r1_lite.train as cli

    out = small_disk.path / "run"
    argv = [*_argv(toy_data, out), "--max_steps", "2", "--save_steps", "1"]
    with monkeypatch.context() as faults:
        faults.setattr(cli, "train", functools.partial(train, callbacks=[_no_room_for(cut, small_disk, 2, faults)]))
        code, err = _run_main(argv, capsys)  # before: a traceback (SafetensorError, RuntimeError)
    assert code == 1 and "Traceback" not in err and err.count("[train] error: ") == 1, err
    lines = err[err.index("[train] error: "):].strip().splitlines()  # after the progress bar of the steps done
    assert len(lines) == 2 and "--debug" in lines[1], err
    assert lines[0].startswith(f"[train] error: disk full: could not write {out / 'checkpoint-2'} "), lines[0]
    assert "checkpoint-1 and the checkpoints before it are complete and kept" in lines[0], lines[0]
    assert "cut short, is skipped and removed by --resume" in lines[0] and lines[0].endswith("with --resume")
    assert last_checkpoint(out) == str(out / "checkpoint-1") and (out / "checkpoint-2").is_dir()

    if small_disk.real:
        assert small_disk.resize(64 << 20)  # space freed
    code, said = cli.main([*argv, "--resume"]), capsys.readouterr()
    assert code == 0, said.err
    assert "removed incomplete checkpoint(s) ['checkpoint-2']" in said.out
    assert f"resuming from {out / 'checkpoint-1'}" in said.out
    assert last_checkpoint(out) == str(out / "checkpoint-2") and (out / "adapter" / "adapter_model.safetensors").is_file()
    assert [r["step"] for r in read_metrics(out) if "loss" in r] == [1, 2]


@pytest.mark.slow  # two tiny training runs (the second trains no step)
def test_a_full_disk_while_the_adapter_is_saved_is_one_line_and_resume_saves_it(toy_data, small_disk, capsys,
                                                                                 monkeypatch):
    import functools

    from safetensors.torch import load_file

    import gui_r1_lite.train as cli

    out = small_disk.path / "run"
    argv = [*_argv(toy_data, out), "--max_steps", "2", "--save_steps", "2"]  # checkpoint-2, then the adapter
    with monkeypatch.context() as faults:
        cut = _no_room_for("adapter_model.safetensors", small_disk, 2, faults, final=True)
        faults.setattr(cli, "train", functools.partial(train, callbacks=[cut]))
        code, err = _run_main(argv, capsys)  # before: a traceback (SafetensorError)
    assert code == 1 and "Traceback" not in err and err.count("[train] error: ") == 1, err
    lines = err[err.index("[train] error: "):].strip().splitlines()
    assert len(lines) == 2 and "--debug" in lines[1], err
    assert lines[0].startswith(f"[train] error: disk full: could not write {out / 'adapter'} "), lines[0]
    assert ("checkpoint-2 and the checkpoints before it are complete and kept (adapter, cut short, is removed; "
            "--resume finishes the run from checkpoint-2 and saves it)") in lines[0] and lines[0].endswith("with --resume"), lines[0]
    assert last_checkpoint(out) == str(out / "checkpoint-2")
    assert not [p.name for p in out.iterdir() if "adapter" in p.name], "a half-written adapter was left"

    if small_disk.real:
        assert small_disk.resize(64 << 20)  # space freed
    code, said = cli.main([*argv, "--resume"]), capsys.readouterr()
    assert code == 0, said.err
    assert f"resuming from {out / 'checkpoint-2'}" in said.out and "removed incomplete" not in said.out
    assert "nothing to train" in said.out and "done: 2 steps" in said.out  # before: a step past max_steps
    saved, kept = (load_file(d / "adapter_model.safetensors") for d in (out / "adapter", out / "checkpoint-2"))
    assert saved.keys() == kept.keys() and all(saved[k].equal(kept[k]) for k in saved)
    assert (out / "adapter" / "adapter_config.json").is_file() and not list(out.glob(".adapter*"))
    assert [r["step"] for r in read_metrics(out) if "loss" in r] == [1, 2] and not (out / "checkpoint-3").exists()


def test_only_a_full_disk_saving_a_checkpoint_becomes_an_oserror_naming_it(tmp_path):
    import errno
    from types import SimpleNamespace

    from safetensors import SafetensorError

    from gui_r1_lite.training.trainer import checkpoint_disk_full_as_oserror

    def trainer_failing_with(exc: BaseException):
        def save(model, trial):
            raise exc
        found = SimpleNamespace(_save_checkpoint=save, state=SimpleNamespace(global_step=3),
                                _get_output_dir=lambda trial: str(tmp_path))
        checkpoint_disk_full_as_oserror(found)
        return found

    def saving_raises(exc: BaseException) -> BaseException:
        with pytest.raises(BaseException) as raised:
            trainer_failing_with(exc)._save_checkpoint(None, None)
        return raised.value

    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    within = RuntimeError("while saving")
    within.__context__ = quota
    for full, code in [(SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"),
                        errno.ENOSPC), (within, errno.EDQUOT)]:
        said = saving_raises(full)
        assert isinstance(said, OSError) and said.errno == code and said.filename == str(tmp_path / "checkpoint-3")
        assert said.__cause__ is full and "no checkpoint was complete yet" in said.kept
    # a write that fails without saying why, on a disk with room, and anything else: left as they are
    for other in [RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534"),
                  OSError(errno.EIO, os.strerror(errno.EIO)), TypeError("a bug"), KeyboardInterrupt()]:
        assert saving_raises(other) is other


def test_the_adapter_appears_only_whole_and_a_full_disk_saving_it_names_it(tmp_path):
    from types import SimpleNamespace

    from safetensors import SafetensorError

    from gui_r1_lite.training.trainer import save_adapter

    class Processor:
        def save_pretrained(self, folder):
            (Path(folder) / "processor_config.json").write_text("{}")

    def trainer_failing_with(exc: BaseException | None):
        def save_model(folder):
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / "adapter_model.safetensors").write_bytes(b"half of it")
            if exc is not None:
                raise exc
        return SimpleNamespace(save_model=save_model, accelerator=SimpleNamespace(wait_for_everyone=lambda: None))

    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_model.safetensors").write_bytes(b"of an earlier finish")
    full = SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
    with pytest.raises(OSError) as raised:
        save_adapter(trainer_failing_with(full), Processor(), tmp_path)
    said = raised.value
    assert said.filename == str(tmp_path / "adapter") and said.__cause__ is full
    assert said.kept == "no checkpoint was complete yet (adapter, cut short, is removed; --resume starts afresh)"
    assert not list(tmp_path.iterdir()), "an adapter cut short (or an earlier one) was left to be loaded"
    bug = TypeError("a bug")
    with pytest.raises(TypeError) as raised:
        save_adapter(trainer_failing_with(bug), Processor(), tmp_path)
    assert raised.value is bug and not list(tmp_path.iterdir())

    assert save_adapter(trainer_failing_with(None), Processor(), tmp_path) == tmp_path / "adapter"
    assert [p.name for p in tmp_path.iterdir()] == ["adapter"]
    assert sorted(p.name for p in (tmp_path / "adapter").iterdir()) == ["adapter_model.safetensors",
                                                                        "processor_config.json"]
