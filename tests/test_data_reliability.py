"""Rewards that cannot be gamed, sources and files whose errors say what is wrong: the dense point
rewards on unreadable points, rewards on odd completion shapes, mistyped paths, normalised boxes in
pixel files, and the grouped validation summary."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_r1_lite import data as D
from gui_r1_lite.actions import Action, format_answer
from gui_r1_lite.errors import UsageError
from gui_r1_lite.rewards import REWARDS, completion_text, make_reward, point_distance_score, point_gaussian_score
from tests.helpers import BAD, png, train_row, write_benchmark_files

DENSE = (point_distance_score, point_gaussian_score)
TOP_LEFT_BOX = [0.0, 0.0, 30.0, 20.0]  # a back button or menu in the corner

# Completions with no readable point (or, first two, no format), and the compats where that holds:
# strict reads negative and float coordinates. Official compat defaults an unread point to (0, 0),
# which sits on a top-left box; each one must earn nothing from a dense reward.
BOTH, OFFICIAL = ("official", "strict"), ("official",)
UNREADABLE = [
    ("garbage", BOTH),
    ("<answer>[{'action': 'click', 'input_text': 'no input text'}]</answer>", BOTH),  # no think, no point
    ("<think></think> <answer>[{'action': 'click', 'point': 'here', 'input_text': 'no input text'}]</answer>", BOTH),
    ("<think></think> <answer>[{'action': 'click', 'point': [-3, 5], 'input_text': 'no input text'}]</answer>",
     OFFICIAL),
    ("<think></think> <answer>[{'action': 'click', 'point': [1.5, 2], 'input_text': 'no input text'}]</answer>",
     OFFICIAL),
    ("<think></think> <answer>[{'action': 'click',\n 'point': [5, 5],\n 'input_text': 'x'}]</answer>", OFFICIAL),
    ('<think></think> <answer>[{"action": "click", "input_text": "no input text"}]</answer>', BOTH),
    ("<think></think> <answer>[{'action': 'click', 'point': [-100, -100], 'input_text': 'x'}]</answer>", BOTH),
]
CASES = [(c, compat) for c, compats in UNREADABLE for compat in compats]


# --- item 3: dense rewards give 0 without a well-formed answer and a read point ----------------------

@pytest.mark.parametrize("completion, compat", CASES)
@pytest.mark.parametrize("gt_bbox", [TOP_LEFT_BOX, [0.0, 0.0], [10.0, 10.0]])
def test_dense_rewards_give_nothing_to_an_unreadable_point(completion, compat, gt_bbox):
    for score in DENSE:
        assert score(completion, "click", gt_bbox, compat=compat) == 0.0, (score.__name__, completion)


@pytest.mark.parametrize("compat", ["official", "strict"])
def test_dense_rewards_need_the_format(compat):
    body = "<answer>[{'action': 'click', 'point': [15, 10], 'input_text': 'no input text'}]</answer>"
    assert point_distance_score("<think>x</think> " + body, "click", TOP_LEFT_BOX, compat=compat) == 1.0
    for broken in (body, "<think>x</think> " + body + " trailing"):
        for score in DENSE:
            assert score(broken, "click", TOP_LEFT_BOX, compat=compat) == 0.0, (score.__name__, broken)


@pytest.mark.parametrize("compat", ["official", "strict"])
def test_a_real_corner_answer_still_scores(compat):
    # (0, 0) written out is a point that was read, unlike the official default for no match.
    corner = format_answer(Action("click", (0, 0)))
    assert point_distance_score(corner, "click", TOP_LEFT_BOX, compat=compat) == 1.0
    assert point_gaussian_score(corner, "click", TOP_LEFT_BOX, compat=compat) == pytest.approx(math.exp(-1))


# --- item 3: every reward returns a float for any completion shape ---------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8), st.binary(max_size=4))
json_like = st.recursive(
    scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["role", "content", "type", "text", "x"]), inner, max_size=4)),
    max_leaves=12)
odd_text = st.one_of(st.just(format_answer(Action("click", (5, 5)))), st.text(max_size=20), scalars, json_like)
parts = st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": odd_text}), json_like), max_size=3)
messages = st.lists(st.one_of(
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(odd_text, parts)}), json_like), max_size=3)
completion_shapes = st.one_of(odd_text, messages, json_like, st.fixed_dictionaries({"content": odd_text}))
odd_boxes = st.one_of(st.just([0, 0, 10, 10]), st.just([5, 5]), st.just([]), st.just(None), st.just("0,0,1,1"),
                      st.just([float("nan")] * 4), st.just([0, 0, float("inf"), 9]), st.just(["a", 1, 2, 3]),
                      st.lists(st.floats(-50, 50), max_size=5))
ground_truths = st.tuples(st.one_of(st.sampled_from(["click", "type", "press_back", "long_press"]), scalars),
                          odd_boxes, st.one_of(st.just("no input text"), scalars))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(completion_shapes, ground_truths)
def test_every_reward_returns_a_float_for_any_input(completion, gt):
    assert isinstance(completion_text(completion), str)
    action, box, text = gt
    for compat in ("official", "strict"):
        for name in REWARDS:
            got = make_reward(name, compat)([completion], gt_action=[action], gt_bbox=[box], gt_input_text=[text])
            assert len(got) == 1
            value = got[0]
            if value is None:  # dense rewards skip rows whose ground truth has no target point
                assert name in ("point_distance", "point_gaussian")
                continue
            assert isinstance(value, float) and 0.0 <= value <= 1.0, (name, compat, completion, gt, value)


def test_a_text_part_that_is_not_a_string_is_read_not_raised():
    chat = [{"role": "assistant", "content": [{"type": "text", "text": 5}]}]
    assert completion_text(chat) == ""
    cols = dict(gt_action=["click"], gt_bbox=[[0, 0, 10, 10]], gt_input_text=["no input text"])
    assert REWARDS["gui_r1"]([chat], **cols) == [0.0]


# --- item 5: a mistyped path says the path does not exist, then that the hub id failed too -------

def test_mistyped_data_path_names_the_absolute_path_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(D.DataError) as err:
        D.load_gui_r1("data_samples/test")
    msg = str(err.value)
    looked_at = str(tmp_path / "data_samples" / "test")
    assert looked_at in msg and "does not exist" in msg
    assert msg.index("does not exist") < msg.index("hub"), msg
    assert "ritzzai/GUI-R1" not in msg.split("hub")[0]


def test_data_error_is_a_usage_error():
    assert issubclass(D.DataError, UsageError) and issubclass(D.DataError, ValueError)


def test_mistyped_model_path_names_the_absolute_path_first(tmp_path, monkeypatch):
    import huggingface_hub.constants

    from gui_r1_lite.modeling import load_policy

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # never touch the network
    with pytest.raises(OSError) as err:
        load_policy("models/tiny", lora=None, device="cpu")
    msg = str(err.value)
    looked_at = str(tmp_path / "models" / "tiny")
    assert looked_at in msg and "does not exist" in msg
    assert msg.index("does not exist") < msg.index("hub"), msg
    with pytest.raises(FileNotFoundError) as err:  # not of the hub id's shape: the path alone
        load_policy("models/tiny/v2", lora=None, device="cpu")
    assert str(tmp_path / "models" / "tiny" / "v2") in str(err.value)


# --- item 4: normalised boxes in a pixel file; a summary grouped by file and column -----------------

def _normalised_benchmark(path: Path) -> Path:
    rows = []
    for i in range(4):
        rows.append({"image": {"bytes": png(400, 300), "path": f"{i}.png"}, "instruction": f"item {i}",
                     "history": "None", "gt_action": "click", "gt_bbox": [0.1 * i, 0.1, 0.1 * i + 0.05, 0.2],
                     "gt_input_text": "no input text", "group": "web", "ui_type": "icon"})
    rows.append({**rows[0], "gt_action": "press_back", "gt_bbox": [-100.0, -100.0]})
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_benchmark_boxes_all_within_one_are_refused_with_the_fix(tmp_path):
    f = _normalised_benchmark(tmp_path / "androidcontrol_low_test.parquet")
    ds = D.load_gui_r1(f)
    assert len(ds) == 0 and ds.report.rows_skipped == 5
    (e,) = ds.report.errors
    assert e.file == str(f) and e.row is None and e.column == "gt_bbox"
    assert "normalised" in e.message and "multiply" in e.message.lower() and "width" in e.message
    assert "gt_bbox" in ds.report.summary() and "normalised" in ds.report.summary()
    with pytest.raises(D.DataError, match="normalised"):
        D.load_gui_r1(f, strict=True)


def test_pixel_benchmarks_and_small_real_boxes_still_load(tmp_path):
    for f in write_benchmark_files(tmp_path / "bench"):
        assert D.load_gui_r1(f, strict=True).report.rows_skipped == 0
    rows = [{"image": {"bytes": png(400, 300), "path": "a.png"}, "instruction": "x", "history": "None",
             "gt_action": "click", "gt_bbox": [0.2, 0.3, 0.9, 0.9], "gt_input_text": "no input text",
             "group": "web", "ui_type": "icon"},
            {"image": {"bytes": png(400, 300), "path": "b.png"}, "instruction": "y", "history": "None",
             "gt_action": "click", "gt_bbox": [20.0, 30.0, 90.0, 90.0], "gt_input_text": "no input text",
             "group": "web", "ui_type": "icon"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "mixed_test.parquet")
    assert len(D.load_gui_r1(tmp_path / "mixed_test.parquet", strict=True)) == 2  # one pixel box: not all <= 1


def _broken_folder(folder: Path) -> dict[str, Path]:
    folder.mkdir()
    files = {"rows": folder / "a_rows.parquet", "unreadable": folder / "b_unreadable.parquet",
             "missing": folder / "c_missing.parquet"}
    rows = [train_row(0)] + [train_row(10 + j, **over) for j, (over, _, _) in enumerate(BAD.values())]
    rows += [train_row(50, gt_bbox=[0.5, 0.5, 1.5, 0.9]), train_row(51, gt_bbox=[0.7, 0.5, 1.5, 0.9])]
    pq.write_table(pa.Table.from_pylist(rows), files["rows"])
    files["unreadable"].write_bytes(b"PAR1 this is not parquet")
    missing = [train_row(1)]
    del missing[0]["gt_input_text"]
    pq.write_table(pa.Table.from_pylist(missing), files["missing"])
    return files


def test_summary_groups_by_file_and_column_with_example_rows(tmp_path):
    files = _broken_folder(tmp_path / "data")
    ds = D.load_gui_r1(tmp_path / "data")
    rep = ds.report
    assert rep.files == [str(f) for f in files.values()] and rep.rows_kept == 1
    text = rep.summary()
    blocks = {f: text.index(str(p)) for f, p in files.items()}
    assert blocks["rows"] < blocks["unreadable"] < blocks["missing"], text
    rows_block = text[blocks["rows"]:blocks["unreadable"]]
    assert "read 15" in rows_block and "kept 1" in rows_block
    # one line per column with its count and example rows (rows 2-5, 10, 13 and 14 fail on gt_bbox)
    bbox_line = next(line for line in rows_block.splitlines() if "'gt_bbox'" in line)
    assert "7 rows" in bbox_line and "rows 2, 3, 4" in bbox_line, bbox_line
    assert "outside" in bbox_line
    assert "not a readable parquet file" in text[blocks["unreadable"]:blocks["missing"]]
    assert "missing column(s) ['gt_input_text']" in text[blocks["missing"]:]
    by_file = rep.to_dict()["by_file"]
    assert by_file[str(files["rows"])]["skipped_by_column"]["gt_bbox"] == 7
    assert by_file[str(files["unreadable"])]["errors"] and by_file[str(files["missing"])]["rows_read"] == 1


def test_unreadable_file_raises_in_strict_mode(tmp_path):
    files = _broken_folder(tmp_path / "data")
    with pytest.raises(D.DataError, match="not a readable parquet file"):
        D.load_gui_r1(files["unreadable"], strict=True)


def test_reports_of_several_loads_combine(tmp_path):
    files = _broken_folder(tmp_path / "data")
    reports = [D.load_gui_r1(f).report for f in files.values()]
    merged = D.ValidationReport.combine(reports)
    whole = D.load_gui_r1(tmp_path / "data").report
    assert merged.to_dict() == whole.to_dict() and merged.summary() == whole.summary()
