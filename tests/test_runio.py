"""Run-file I/O: torn last lines are skipped, atomic writes never leave a partial file."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

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


def test_a_resuming_writer_names_every_line_it_cannot_trust_and_rewrites_the_file_without_them(tmp_path, capsys):
    path = tmp_path / "p.jsonl"
    # line 2: bytes that are not UTF-8; line 4: a record cut short with the next one on its line; line 6:
    # a record without what makes it one (`valid`); line 7: the torn last line a kill leaves
    path.write_bytes(b'{"id": "a"}\n\xff\xfe\x00\x00garbage\n{"id": "b"}\n{"id": "c", "x{"id": "d"}\n\n'
                     b'{"note": 1}\n{"id": "e", "pa')
    assert runio.read_jsonl(path) == [{"id": "a"}, {"id": "b"}, {"note": 1}]  # a reader skips them, with no word
    kept = runio.clean_jsonl(path, lambda r: True, valid=lambda r: "id" in r, then="they are computed again")
    assert [r["id"] for r in kept] == ["a", "b"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "4 line(s)" in err[0] and "line 2, 4, 6, 7" in err[0]
    assert "computed again" in err[0]
    assert path.read_text() == '{"id": "a"}\n{"id": "b"}\n'  # appending to it stays valid
    runio.clean_jsonl(path, lambda r: True)
    assert capsys.readouterr().err == ""  # a clean file: nothing to say, nothing rewritten


class _ShortWriteThenFull:
    """A file whose write puts down half the text, then fails as a full disk does."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, text):
        self.fh.write(text[:len(text) // 2])
        self.fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def test_an_append_that_finds_the_disk_full_leaves_whole_lines_and_names_the_file(tmp_path, monkeypatch):
    path = tmp_path / "p.jsonl"
    runio.append_jsonl(path, [{"id": "a"}, {"id": "b"}])
    before = path.read_bytes()
    real = Path.open
    monkeypatch.setattr(Path, "open", lambda self, mode="r", *a, **k: _ShortWriteThenFull(real(self, mode, *a, **k))
                        if self == path and "a" in mode else real(self, mode, *a, **k))
    with pytest.raises(OSError) as err:
        runio.append_jsonl(path, [{"id": "c", "pad": "x" * 100}, {"id": "d"}])
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(path)  # before: no file named
    assert path.read_bytes() == before  # before: half a line left at the end


def test_an_atomic_write_that_finds_the_disk_full_keeps_the_old_file_and_names_it(tmp_path):
    path = tmp_path / "r.json"
    runio.write_json_atomic(path, {"ok": 1})
    tmp = tmp_path / f".r.json.tmp-{os.getpid()}"
    tmp.symlink_to("/dev/full")  # the temporary file is /dev/full: the kernel answers ENOSPC
    with pytest.raises(OSError) as err:
        runio.write_json_atomic(path, {"ok": 2})
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(path)
    assert runio.read_json(path) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
