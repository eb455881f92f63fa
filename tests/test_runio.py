"""Run-file I/O: torn last lines are skipped, atomic writes never leave a partial file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from gui_r1_lite import runio


def test_read_jsonl_skips_a_torn_last_line_blank_lines_and_non_objects(tmp_path):
    path = tmp_path / "m.jsonl"
    # a complete record, a blank line, a list (not a record), and a line cut short by a kill
    path.write_text('{"step": 1}\n\n[1, 2]\n{"step": 2}\n{"step": 3, "lo')
    assert runio.read_jsonl(path) == [{"step": 1}, {"step": 2}]


def test_read_jsonl_of_a_missing_file_is_empty(tmp_path):
    assert runio.read_jsonl(tmp_path / "none.jsonl") == []


def test_append_after_a_torn_line_is_read_back_after_rewrite(tmp_path):
    path = tmp_path / "p.jsonl"
    runio.append_jsonl(path, {"id": "a"})
    with path.open("a") as fh:
        fh.write('{"id": "b", "comp')  # the kill
    runio.write_jsonl_atomic(path, runio.read_jsonl(path))  # what a resuming writer does first
    runio.append_jsonl(path, [{"id": "c"}, {"id": "d"}])
    assert [r["id"] for r in runio.read_jsonl(path)] == ["a", "c", "d"]


def test_write_json_atomic_leaves_no_temporary_file_and_converts_scalars(tmp_path):
    import numpy as np

    out = runio.write_json_atomic(tmp_path / "sub" / "r.json", {"x": np.float32(0.5)})
    assert json.loads(out.read_text()) == {"x": 0.5}
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    runio.write_json_atomic(path, {"ok": 1})
    with pytest.raises(TypeError):
        runio.write_json_atomic(path, {"bad": object()}, indent=None)  # not serialisable: fails before the rename
    assert json.loads(path.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_sigkill_during_repeated_atomic_writes_never_tears_the_file(tmp_path):
    path = tmp_path / "summary.json"
    code = (
        "import sys; from gui_r1_lite import runio\n"
        "i = 0\n"
        "while True:\n"
        "    runio.write_json_atomic(sys.argv[1], {'i': i, 'pad': 'x' * 200000}); i += 1\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)])
    try:
        for _ in range(200):
            if path.exists():
                break
            import time
            time.sleep(0.05)
        import time
        time.sleep(0.3)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    value = runio.read_json(path)  # complete JSON, whichever write it is
    assert value["i"] >= 0 and len(value["pad"]) == 200000


def test_read_json_names_the_file(tmp_path):
    bad = tmp_path / "torn.json"
    bad.write_text('{"a": ')
    with pytest.raises(ValueError, match="torn.json: not valid JSON"):
        runio.read_json(bad)
    with pytest.raises(FileNotFoundError, match="nothing.json"):
        runio.read_json(tmp_path / "nothing.json")


def test_rank_and_world_size_follow_the_launcher(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert (runio.rank(), runio.world_size(), runio.is_main_process()) == (0, 1, True)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (runio.rank(), runio.world_size(), runio.is_main_process()) == (1, 2, False)
