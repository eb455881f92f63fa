"""Loading, validation, writing and conversion of GUI-R1 rows."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_r1_lite import data as D
from gui_r1_lite.actions import target_action
from gui_r1_lite.geometry import model_image_size
from tests.helpers import BAD, png, train_row

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "data_samples"


@pytest.fixture
def mixed_file(tmp_path):
    rows = [train_row(0), train_row(1, task_type="high", gt_action="type", gt_bbox=[-100.0, -100.0],
                                    gt_input_text="pizza", history="Step 1: click search.")]
    for j, (over, _, _) in enumerate(BAD.values()):
        rows.append(train_row(100 + j, **over))
    rows.append(train_row(2, gt_bbox=[0.5, 0.5]))  # a 2-value point is fine
    table = pa.Table.from_pylist(rows)
    table = table.append_column("verify_bbox", pa.array([True] * len(rows)))  # extra columns are tolerated
    path = tmp_path / "mixed.parquet"
    pq.write_table(table, path)
    return path


def test_bad_rows_are_reported_by_file_row_and_column(mixed_file):
    ds = D.load_gui_r1(mixed_file)
    assert [s.id for s in ds] == ["r0", "r1", "r2"]
    rep = ds.report
    assert rep.rows_read == 3 + len(BAD) and rep.rows_kept == 3 and rep.rows_skipped == len(BAD)
    by_row = {e.row: e for e in rep.errors}
    for j, (name, (_, column, words)) in enumerate(BAD.items()):
        e = by_row[2 + j]
        assert e.file == str(mixed_file) and e.column == column and words in e.message, (name, str(e))
        assert f"row {2 + j}, column '{column}'" in str(e)
    assert "skipped 12" in rep.summary()
    assert rep.to_dict()["rows_skipped"] == len(BAD)


def test_strict_raises_on_the_first_bad_row(mixed_file):
    with pytest.raises(D.DataError, match=r"mixed.parquet, row 2, column 'image'"):
        D.load_gui_r1(mixed_file, strict=True)


def test_missing_column_names_the_file_and_column(tmp_path):
    rows = [train_row(0)]
    del rows[0]["gt_input_text"]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "m.parquet")
    ds = D.load_gui_r1(tmp_path / "m.parquet", schema="train")
    assert len(ds) == 0 and ds.report.rows_skipped == 1
    assert "missing column(s) ['gt_input_text']" in str(ds.report.errors[0])
    with pytest.raises(D.DataError, match="gt_input_text"):
        D.load_gui_r1(tmp_path / "m.parquet", schema="train", strict=True)


def test_normalised_boxes_become_pixels_and_write_round_trips(tmp_path, mixed_file):
    ds = D.load_gui_r1(mixed_file)
    s = ds[0]
    assert s.image_size == (200, 100) and s.gt_bbox == pytest.approx((20.0, 20.0, 60.0, 40.0))
    out = D.write_gui_r1(ds.samples, tmp_path / "curated" / "train.parquet")
    back = D.load_gui_r1(out, strict=True)
    assert [b.id for b in back] == [s.id for s in ds]
    for a, b in zip(ds, back, strict=True):
        assert a.gt_bbox == pytest.approx(b.gt_bbox) and a.image_bytes == b.image_bytes
        assert (a.instruction, a.history, a.gt_action, a.gt_input_text, a.task_type) == \
               (b.instruction, b.history, b.gt_action, b.gt_input_text, b.task_type)
    bench = D.write_gui_r1(ds.samples, tmp_path / "bench.parquet", schema="benchmark")
    assert D.load_gui_r1(bench)[0].gt_bbox == pytest.approx(s.gt_bbox)


def test_benchmark_schema_keeps_pixels(tmp_path):
    rows = [{"image": {"bytes": png(300, 150), "path": "a.png"}, "instruction": "the icon", "history": "None",
             "gt_action": "click", "gt_bbox": [10.0, 20.0, 50.0, 60.0], "gt_input_text": "no input text",
             "group": "web", "ui_type": "icon"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "screenspot_test.parquet")
    s = D.load_gui_r1(tmp_path, split="screenspot_test", strict=True)[0]
    assert s.schema == "benchmark" and s.space == "screenspot" and s.gt_bbox == (10.0, 20.0, 50.0, 60.0)
    assert (s.group, s.ui_type, s.id) == ("web", "icon", "screenspot_test/0")


@pytest.mark.parametrize("offline", ["1", "0"])
def test_hub_id_fails_fast_offline(monkeypatch, offline):
    monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    t0 = time.monotonic()
    with pytest.raises(D.DataError, match="huggingface-cli download ritzzai/GUI-R1 train.parquet"):
        D.load_gui_r1("ritzzai/GUI-R1", split="train")
    assert time.monotonic() - t0 < 30  # no retries against an unreachable hub


@pytest.mark.parametrize("name, hub", [
    ("ritzzai/GUI-R1", True), ("Qwen/Qwen2.5-VL-3B-Instruct", True), ("gpt2", False), ("../x", False),
    ("/abs/path", False), ("a/b/c", False), ("data_samples/train", True),
])
def test_hub_id_shape(name, hub):
    assert D.is_hub_id(name) is hub  # an existing folder of that shape is still read as a folder


def test_unknown_source():
    with pytest.raises(D.DataError, match="no such file or folder"):
        D.load_gui_r1("/nope/nothing.parquet")


def test_train_rows_are_in_the_model_frame(mixed_file):
    ds = D.load_gui_r1(mixed_file)
    rows = D.to_train_rows(ds.samples, min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64)
    r = rows[0]
    mw, mh = model_image_size(200, 100, 28 * 28 * 4, 28 * 28 * 64)
    assert r["image"].size == (mw, mh) and mw % 28 == 0 and mh % 28 == 0
    assert r["gt_bbox"] == pytest.approx([0.1 * mw, 0.2 * mh, 0.3 * mw, 0.4 * mh])
    assert r["prompt"][0]["content"][0] == {"type": "image"}
    assert "['click']" in r["prompt"][0]["content"][1]["text"]
    assert rows[1]["gt_bbox"] == [-100, -100] and rows[1]["gt_input_text"] == "pizza"
    hf = D.to_train_dataset(ds.samples[:2], min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64)
    assert set(hf.column_names) >= {"prompt", "image", "gt_action", "gt_bbox", "gt_input_text"}


def test_eval_rows_keep_the_original_size(mixed_file):
    ds = D.load_gui_r1(mixed_file)
    ev = D.to_eval_rows(ds.samples)
    assert ev[0].image_size == (200, 100) and ev[0].model_size == model_image_size(200, 100)
    assert target_action("click", ev[0].sample.gt_bbox).point == (40, 30)


def shipped_files():
    return sorted(SAMPLES.rglob("*.parquet")) if SAMPLES.exists() else []


@pytest.mark.skipif(not shipped_files(), reason="data_samples/ has no parquet files yet")
def test_every_shipped_file_loads_clean():
    for f in shipped_files():
        ds = D.load_gui_r1(f, strict=True)
        assert len(ds) > 0, f
        for s in ds:
            if s.has_target and len(s.gt_bbox) == 4:
                x1, y1, x2, y2 = s.gt_bbox
                assert 0 <= x1 < x2 <= s.image_size[0] and 0 <= y1 < y2 <= s.image_size[1], (f, s.id)


# --- benchmark files as published: ui_type only where ScreenSpot needs it ---------------------------

def _benchmark_rows(n: int = 3, **over) -> list[dict]:
    rows = [{"image": {"bytes": png(300, 600), "path": f"{i}.png"}, "instruction": f"step {i}", "history": "None",
             "gt_action": "click", "gt_bbox": [40.0 + i, 80.0], "gt_input_text": "no input text",
             "group": "android"} for i in range(n)]
    for r in rows:
        r.update(over)
    return rows


@pytest.mark.parametrize("extra", [{}, {"task_type": "high"}], ids=["plain", "with-task_type"])
def test_an_action_benchmark_file_without_ui_type_loads_every_row(tmp_path, extra):
    path = tmp_path / "androidcontrol_high_test.parquet"
    pq.write_table(pa.Table.from_pylist(_benchmark_rows(**extra)), path)
    ds = D.load_gui_r1(path)
    assert len(ds) == 3 and ds.report.errors == []
    s = ds[0]
    assert s.schema == "benchmark" and s.space == "androidcontrol" and s.ui_type is None
    assert s.gt_bbox == (40.0, 80.0)  # pixels, as the benchmark schema stores them


def test_screenspot_without_ui_type_is_a_whole_file_error(tmp_path):
    rows = _benchmark_rows(gt_bbox=[10.0, 20.0, 50.0, 60.0], group="web")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "screenspot_test.parquet")
    ds = D.load_gui_r1(tmp_path / "screenspot_test.parquet")
    assert len(ds) == 0 and ds.report.rows_skipped == 3
    assert "missing column(s) ['ui_type']" in str(ds.report.errors[0])


def test_the_report_names_files_without_a_usable_row_and_counts_what_was_skipped(tmp_path, mixed_file):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "mixed.parquet").write_bytes(mixed_file.read_bytes())
    (folder / "zz_broken.parquet").write_bytes(b"not parquet")
    rep = D.load_gui_r1(folder).report
    assert rep.empty_files() == [str(folder / "zz_broken.parquet")]
    skipped = rep.skipped()
    assert skipped["rows"] == len(BAD) and skipped["by_file"] == {str(folder / "mixed.parquet"): len(BAD)}
    assert skipped["by_column"]["gt_bbox"] == 5 and sum(skipped["by_column"].values()) == len(BAD)
