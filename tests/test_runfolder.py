"""The run-record module that training, evaluation, the closed loop and the miniature's stages share:
content digests (cheap for large weights), records with a fingerprint read back tolerantly,
differences in words, refusals, and a results folder opened, resumed or refused."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gui_r1_lite import runfolder as R
from gui_r1_lite.errors import UsageError


def test_a_file_digest_is_what_sha256sum_prints_and_changes_with_the_content(tmp_path):
    f = tmp_path / "data.parquet"
    f.write_bytes(b"rows one")
    assert R.digest(f) == hashlib.sha256(b"rows one").hexdigest()
    f.write_bytes(b"rows two")
    assert R.digest(f) == hashlib.sha256(b"rows two").hexdigest()


def test_a_folder_digest_sees_names_and_contents_of_its_files(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "b.bin").write_bytes(b"weights")
    first = R.digest(tmp_path)
    assert R.digest(sorted(tmp_path.iterdir())) == first  # a folder is its files in name order
    (tmp_path / "b.bin").write_bytes(b"weight5")
    assert R.digest(tmp_path) != first
    (tmp_path / "b.bin").write_bytes(b"weights")
    assert R.digest(tmp_path) == first
    (tmp_path / "b.bin").rename(tmp_path / "c.bin")
    assert R.digest(tmp_path) != first


def test_the_cheap_digest_reads_head_and_tail_of_a_big_file_yet_sees_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "WHOLE_HASH_LIMIT", 4 * R._CHUNK)
    big = tmp_path / "model.safetensors"
    body = bytearray(b"x" * (6 * R._CHUNK))
    big.write_bytes(body)
    cheap, whole = R.digest(big, cheap=True), R.digest(big)
    assert cheap != whole
    body[3 * R._CHUNK] = ord("y")  # a change in the middle is not read...
    big.write_bytes(body)
    assert R.digest(big, cheap=True) == cheap and R.digest(big) != whole  # ...but the full digest sees it
    big.write_bytes(body + b"x")  # one byte longer
    assert R.digest(big, cheap=True) != cheap
    body[-1] = ord("z")  # the last MiB is read
    big.write_bytes(body)
    assert R.digest(big, cheap=True) != cheap
    small = tmp_path / "config.json"
    small.write_bytes(b"{}")
    assert R.digest(small, cheap=True) == R.digest(small)  # small files are hashed whole either way


def test_a_record_keeps_its_fingerprint_and_is_read_back_tolerantly(tmp_path):
    record = R.with_fingerprint({"settings": {"lr": 0.1, "pixels": (1, 2)}, "path": Path("x")})
    assert len(record["fingerprint"]) == 16
    stored = R.as_stored(record)
    assert stored["settings"]["pixels"] == [1, 2] and stored["path"] == "x"
    assert R.with_fingerprint({**record, "fingerprint": "stale"}) == record
    assert R.with_fingerprint({"settings": {"lr": 0.2}})["fingerprint"] != record["fingerprint"]
    assert R.read_record(tmp_path) is None  # missing
    (tmp_path / R.RUN_FILE).write_text('{"settings": {"lr"')  # torn
    assert R.read_record(tmp_path) is None
    (tmp_path / R.RUN_FILE).write_text("[1, 2]")  # not a record
    assert R.read_record(tmp_path) is None
    (tmp_path / R.RUN_FILE).write_text('{"a": 1}')
    assert R.read_record(tmp_path) == {"a": 1}


def test_differences_are_listed_in_words():
    old = {"compat": "official", "limit": 3, "gone": True, "same": 1}
    new = {"compat": "strict", "limit": None, "same": 1}
    assert R.differences(old, new) == ["compat: 'official' there, 'strict' now", "limit: 3 there, None now",
                                       "gone: True there, None now"]
    assert R.differences(new, new) == []
    assert R.differences({"a": 1}, {"a": 2}, prefix="base model: ") == ["base model: a: 1 there, 2 now"]
    long = R.differences({"policy": "p" * 500}, {"policy": "q"})[0]
    assert len(long) < 200 and long.endswith("'q' now")


def test_a_mismatch_is_refused_with_what_differs_and_the_callers_how_to(tmp_path):
    diffs = [f"setting{i}: {i} there, {i + 1} now" for i in range(8)]
    with pytest.raises(R.RunFolderMismatch) as err:
        R.refuse(tmp_path, "predictions", diffs, fresh="To start fresh, pass --overwrite", resume="to resume, rerun")
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path} holds predictions made otherwise: setting0: 0 there, 1 now")
    assert "setting5" in msg and "setting6" not in msg and "and 2 more" in msg
    assert msg.endswith("To start fresh, pass --overwrite; to resume, rerun")
    assert isinstance(err.value, UsageError)

    class SettingsError(UsageError):
        pass

    with pytest.raises(SettingsError, match=r"no readable run\.json saying what made them.*--output_dir"):
        R.refuse(tmp_path, "run files", None, fresh="pass another --output_dir", resume="x", error=SettingsError)


def test_an_unwritable_folder_is_refused_naming_the_flag(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(UsageError, match=r"^--out .*file/run: cannot be written .*pass a folder you can write to"):
        R.writable_folder(tmp_path / "file" / "run", "--out")
    with pytest.raises(UsageError, match=r"^output_dir "):
        R.writable_folder(tmp_path / "file" / "run", "output_dir")
    made = R.writable_folder(tmp_path / "new" / "run")
    assert made.is_dir() and list(made.iterdir()) == []  # made, and the probe file is gone


def test_a_results_folder_is_resumed_by_its_run_refused_to_another_and_cleared_on_overwrite(tmp_path):
    def open_(made_by: dict, overwrite: bool = False):
        return R.open_run_folder(tmp_path, made_by, results=["episodes.jsonl"], clear=["summary.json", "shots"],
                                 holds="episodes", resume="to resume, rerun", overwrite=overwrite,
                                 about={"name": "p"})

    ours = {"policy": {"hub_id": "a/b"}, "limit": 3}
    assert open_(ours) == tmp_path and R.read_record(tmp_path)["made_by"] == ours
    (tmp_path / "episodes.jsonl").write_text('{"seed": 1}\n')
    (tmp_path / "shots").mkdir()
    open_(ours)  # the same run resumes: nothing is deleted
    assert (tmp_path / "episodes.jsonl").exists() and (tmp_path / "shots").is_dir()
    with pytest.raises(R.RunFolderMismatch, match=r"holds episodes made otherwise: limit: 3 there, 4 now.*"
                                                   r"--overwrite.*to resume, rerun \(see .*run\.json\)"):
        open_({**ours, "limit": 4})
    open_({**ours, "limit": 4}, overwrite=True)
    assert not (tmp_path / "episodes.jsonl").exists() and not (tmp_path / "shots").exists()
    assert R.read_record(tmp_path)["made_by"]["limit"] == 4 and R.read_record(tmp_path)["name"] == "p"


def test_a_stage_record_is_read_like_a_run_record_and_a_completer_without_identity_by_its_class(tmp_path):
    (tmp_path / "stage.json").write_text('{"steps": 2}')
    assert R.read_record(tmp_path, "stage.json") == {"steps": 2} and R.read_record(tmp_path) is None

    class Player:
        name = "player"

    assert R.completer_identity(Player()) == {"class": f"{__name__}.{Player.__qualname__}", "name": "player"}


def test_how_a_step_is_computed_may_change_on_resume_what_it_learns_may_not():
    """A run that ran out of CUDA memory resumes with `expandable_segments` (or gradient
    checkpointing, or on another device); a run at another learning rate does not."""
    from gui_r1_lite.runfolder import run_settings
    from gui_r1_lite.training import TrainConfig

    first = run_settings(TrainConfig.from_dict({"output_dir": "o"}))
    assert run_settings(TrainConfig.from_dict({
        "output_dir": "o", "cuda_alloc_conf": "expandable_segments:True", "gradient_checkpointing": True,
        "device": "cpu", "max_steps": 999})) == first
    assert run_settings(TrainConfig.from_dict({"output_dir": "o", "learning_rate": 0.5})) != first
