"""`tiny.ensure_tiny_model`: the one place that finds or builds the tiny model in a folder; the
main process builds it whole (temporary folder, then a rename), the other processes wait for it;
a model built with other arguments is rebuilt, never reused."""

from __future__ import annotations

import json
import threading

import pytest

from gui_r1_lite.tiny import BUILD_FILE, STANDIN_VERSION, build_arguments, ensure_tiny_model


def test_builds_whole_once_then_reuses(tmp_path):
    folder = tmp_path / "tiny"
    (tmp_path / "tiny.tmp-999").mkdir()  # left by a build killed half-way
    folder.mkdir()
    (folder / "model.safetensors").write_text("cut short")  # an incomplete folder: no config.json
    assert ensure_tiny_model(folder, seed=0, vocab_size=512) == str(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["text_config"]["vocab_size"] <= 512 + 22  # the build arguments reached build_tiny_model
    assert (folder / "model.safetensors").stat().st_size > 100
    assert not list(tmp_path.glob("tiny.tmp-*"))
    stamp = (folder / "config.json").stat().st_mtime_ns
    assert ensure_tiny_model(folder, seed=0, vocab_size=512) == str(folder)  # the same arguments: reused
    assert (folder / "config.json").stat().st_mtime_ns == stamp
    assert ensure_tiny_model(folder, seed=1, vocab_size=512) == str(folder)  # another seed: rebuilt
    assert json.loads((folder / BUILD_FILE).read_text()) == build_arguments(1, vocab_size=512)
    assert build_arguments(0) == build_arguments(0, hidden_size=64)  # defaults filled in


def test_a_model_of_an_older_stand_in_is_rebuilt(tmp_path):
    # the same arguments built another model before the stand-in followed the shipped configuration
    folder = tmp_path / "tiny"
    ensure_tiny_model(folder, vocab_size=512)
    older = {**build_arguments(vocab_size=512), "standin_version": STANDIN_VERSION - 1}
    (folder / BUILD_FILE).write_text(json.dumps(older))
    (folder / "generation_config.json").write_text("{}")
    ensure_tiny_model(folder, vocab_size=512)
    assert json.loads((folder / "generation_config.json").read_text())["temperature"] == 1e-06
    assert json.loads((folder / BUILD_FILE).read_text())["standin_version"] == STANDIN_VERSION


def test_other_processes_wait_for_the_main_one(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    folder = tmp_path / "tiny"
    with pytest.raises(RuntimeError, match="rank 1: .* did not appear within 0 s"):
        ensure_tiny_model(folder, wait_seconds=0.2)
    assert not folder.exists()  # only the main process builds

    def main_process_finishes() -> None:
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        (folder / BUILD_FILE).write_text(json.dumps(build_arguments()))

    timer = threading.Timer(0.3, main_process_finishes)
    timer.start()
    try:
        assert ensure_tiny_model(folder, wait_seconds=30) == str(folder)
    finally:
        timer.cancel()
