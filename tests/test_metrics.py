"""Benchmark metrics, each rule checked on cases computed by hand."""

from __future__ import annotations

import pytest

from gui_r1_lite import metrics as M

NO = [-100.0, -100.0]


def rec(gt_action="click", gt_bbox=(10, 10, 20, 20), pred_action="click", pred_coord=(15, 15),
        pred_input_text="no input text", gt_input_text="no input text", image_size=(1000, 1000),
        group="mobile", ui_type="text", parse_error=None):
    return {"group": group, "ui_type": ui_type, "gt_action": gt_action, "gt_bbox": list(gt_bbox),
            "image_size": list(image_size), "gt_input_text": gt_input_text, "pred_action": pred_action,
            "pred_coord": None if pred_coord is None else list(pred_coord), "pred_input_text": pred_input_text,
            "parse_error": parse_error}


# --- ScreenSpot grounding -------------------------------------------------------------------------

@pytest.mark.parametrize("point, hit", [
    ((15, 15), True), ((10.5, 19.9), True),
    ((10, 15), False), ((20, 15), False), ((15, 10), False), ((15, 20), False),  # edges are outside
    ((9, 15), False), ((25, 25), False), (None, False),
])
def test_grounding_is_strictly_inside_the_box(point, hit):
    assert M.grounding_hit(rec(pred_coord=point)) is hit


def test_grounding_ignores_the_predicted_action_and_skips_other_records():
    assert M.grounding_hit(rec(pred_action="type")) is True
    assert M.grounding_hit(rec(gt_action="type", gt_bbox=NO)) is None
    assert M.grounding_hit(rec(gt_bbox=(15, 15))) is None  # 2-value target: not a ScreenSpot row
    assert M.grounding_metrics([rec(gt_action="type", gt_bbox=NO), rec(gt_bbox=(15, 15))]) is None
    assert M.grounding_metrics([]) is None


def test_grounding_per_group_and_pooled():
    records = [rec(), rec(), rec(pred_coord=(0, 0)),                       # mobile-text: 2 of 3
               rec(group="web", ui_type="icon", pred_coord=(30, 30)),      # web-icon: 0 of 1
               rec(gt_action="press_back", gt_bbox=NO)]                    # not counted
    g = M.grounding_metrics(records)
    assert g["groups"] == {"mobile-text": pytest.approx(2 / 3), "web-icon": 0.0}
    assert g["overall"] == 0.5 and g["n"] == 4
    assert g["counts"]["mobile-text"] == {"hits": 2, "n": 3}


def test_grounding_group_without_ui_type():
    assert M.grounding_group(rec(group="android", ui_type="")) == "android"
    assert M.grounding_group(rec(group="web", ui_type="icon")) == "web-icon"


# --- GR: 0.14 normalised radius -----------------------------------------------------------------------

@pytest.mark.parametrize("point, hit", [
    ((500, 250), True),
    ((639, 250), True),     # dx = 0.139
    ((640, 250), False),    # dx = 0.14 exactly: strict
    ((500, 319), True),     # dy = 69/500 = 0.138
    ((500, 320), False),    # dy = 0.14
    ((590, 300), True),     # 0.09² + 0.1² = 0.0181 < 0.0196
    ((600, 300), False),    # 0.1² + 0.1² = 0.02
    (None, False),
])
def test_gr_radius_is_normalised_per_axis(point, hit):
    r = rec(gt_action="long_press", gt_bbox=(500, 250), pred_coord=point, image_size=(1000, 500))
    assert M.gr_hit(r) is hit


def test_strict_gr_uses_the_box_centre_for_four_value_boxes():
    box = (100, 100, 200, 200)  # centre (150, 150) in a 1000 x 1000 image
    assert M.gr_hit({**rec(gt_bbox=box, pred_coord=(289, 150)), "compat": "strict"}) is True   # 0.139 away
    assert M.gr_hit({**rec(gt_bbox=box, pred_coord=(290, 150)), "compat": "strict"}) is False  # 0.14 away
    assert M.gr_hit({**rec(gt_bbox=box, pred_coord=(101, 101)), "compat": "strict"}) is True


@pytest.mark.parametrize("point, official, strict", [
    # a wide box (100, 100)-(500, 140) in a 1000 x 1000 image: official target (100, 100), strict (300, 120)
    ((300, 120), False, True),    # the centre: dx 0.2 from the corner (0.04 > 0.0196); 0 from the centre
    ((95, 110), True, False),     # outside the box near its corner: 0.005² + 0.01²; 0.205 from the centre
    ((200, 110), True, True),     # 0.1² + 0.01² = 0.0101 from the corner; 0.1² + 0.01² from the centre
    ((239, 100), True, True),     # dx 0.139 from the corner; 0.061² + 0.02² = 0.0041 from the centre
    ((439, 120), False, True),    # 0.339² + 0.02² from the corner; dx 0.139 from the centre
    ((700, 500), False, False),
])
def test_official_gr_measures_from_the_first_two_values_strict_from_the_centre(point, official, strict):
    r = rec(gt_bbox=(100, 100, 500, 140), pred_coord=point)
    assert M.gr_target(r) == (100.0, 100.0) and M.gr_target({**r, "compat": "strict"}) == (300.0, 120.0)
    assert M.gr_hit({**r, "compat": "official"}) is official
    assert M.gr_hit(r) is official  # a record without compat is read as evaluate's default, official
    assert M.gr_hit({**r, "compat": "strict"}) is strict


def test_the_two_gr_rules_agree_on_a_two_value_point():
    for point in ((500, 250), (600, 300), (639, 250)):
        r = rec(gt_action="long_press", gt_bbox=(500, 250), pred_coord=point, image_size=(1000, 500))
        assert M.gr_hit({**r, "compat": "official"}) is M.gr_hit({**r, "compat": "strict"})


def test_gr_does_not_need_the_action_and_applies_to_point_actions_only():
    assert M.gr_hit(rec(gt_bbox=(15, 15), pred_action="type")) is True
    for name in ("click", "long_press", "moveto", "doubleclick", "rightclick"):
        assert M.gr_hit(rec(gt_action=name, gt_bbox=(15, 15))) is True
    assert M.gr_hit(rec(gt_action="press_back", gt_bbox=NO)) is None
    assert M.gr_hit(rec(gt_action="type", gt_bbox=(15, 15))) is None


# --- Text: F1 >= 0.5 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("pred, gt, hit", [
    ("setting", "settings", True),             # one token each, substring: F1 = 1
    ("Settings", "set", True),                 # substring either way, case-insensitive
    ("gmail app", "Gmail", True),              # P 1/2, R 1: F1 2/3
    ("hello", "hello world", True),            # P 1, R 1/2: F1 2/3
    ("hello", "hello big world", True),        # P 1, R 1/3: F1 = 0.5 exactly, >= passes
    ("a", "a b c d", False),                   # P 1, R 1/4: F1 0.4
    ("[down]", "down", True),                  # brackets removed
    ("up", "down", False),
    (None, "down", False),                     # nothing read
])
def test_text_hit(pred, gt, hit):
    r = rec(gt_action="type", gt_bbox=NO, gt_input_text=gt, pred_action="click", pred_input_text=pred)
    assert M.text_hit(r) is hit  # the predicted action is not checked


def test_text_applies_to_open_app_type_scroll_select_only():
    for name in ("open_app", "type", "scroll", "select"):
        assert M.text_hit(rec(gt_action=name, gt_bbox=NO, gt_input_text="x", pred_input_text="x")) is True
    assert M.text_hit(rec(gt_action="press_back", gt_bbox=NO)) is None
    assert M.text_hit(rec()) is None


# --- official Type / GR / SR -------------------------------------------------------------------------

def android_records():
    return [
        rec(group="android", gt_action="click", gt_bbox=(100, 100), pred_coord=(110, 110)),      # type ✓ GR ✓
        rec(group="android", gt_action="click", gt_bbox=(100, 100), pred_action="long_press",
            pred_coord=(900, 900)),                                                               # type ✗ GR ✗
        rec(group="android", gt_action="type", gt_bbox=NO, gt_input_text="hello world",
            pred_action="type", pred_coord=None, pred_input_text="hello"),                        # type ✓ text ✓
        rec(group="android", gt_action="scroll", gt_bbox=NO, gt_input_text="down",
            pred_action="scroll", pred_coord=None, pred_input_text="up"),                         # type ✓ text ✗
        rec(group="android", gt_action="press_back", gt_bbox=NO, pred_action="press_back"),       # type ✓ (not in SR)
        rec(group="android", gt_action="wait", gt_bbox=NO, pred_action="click"),                  # type ✗ (not in SR)
    ]


def test_official_type_gr_sr_by_hand():
    a = M.action_metrics(android_records())
    assert a["type"] == pytest.approx(4 / 6)
    assert a["grounding"] == 0.5 and a["n_grounding"] == 2
    # SR = (GR hits 1 + text hits 1) / (2 GR + 2 text records); press_back and wait are left out
    assert a["step_success"] == 0.5 and a["n_text"] == 2
    assert a["n"] == 6
    c = a["categories"]
    assert c["android-click"] == 0.5 and c["android-click-grounding"] == 0.5
    assert c["android-type"] == 1.0 and c["android-type-text"] == 1.0
    assert c["android-scroll-text"] == 0.0 and c["android-press_back"] == 1.0 and c["android-wait"] == 0.0
    assert "android-press_back-text" not in c and "android-wait-grounding" not in c
    assert a["counts"]["android-click"] == {"hits": 1, "n": 2}


def test_sr_leaves_out_no_argument_actions():
    only_plain = [rec(group="android", gt_action="press_back", gt_bbox=NO, pred_action="press_back"),
                  rec(group="android", gt_action="complete", gt_bbox=NO, pred_action="wait")]
    a = M.action_metrics(only_plain)
    assert a["step_success"] is None and a["grounding"] is None
    assert a["type"] == 0.5 and a["strict_step_success"] == 0.5
    # adding plain records to a set does not change its SR
    base = android_records()[:4]
    assert M.action_metrics(base)["step_success"] == M.action_metrics(base + only_plain)["step_success"]


def test_type_is_exact():
    assert M.type_hit(rec(pred_action="Click")) is False
    assert M.type_hit(rec(pred_action=None)) is False


# --- strict step success ----------------------------------------------------------------------------

def test_strict_step_success_by_hand():
    a = M.action_metrics(android_records())
    # click ✓ (radius), click ✗ (wrong action), type ✓, scroll ✗ (text), press_back ✓, wait ✗
    assert a["strict_step_success"] == 0.5


@pytest.mark.parametrize("r, hit", [
    (rec(pred_coord=(10, 20)), True),                              # box edges count (inclusive)
    (rec(pred_coord=(9.9, 15)), False),
    (rec(pred_action="long_press"), False),                        # inside, but the wrong action
    (rec(pred_action="CLICK "), True),                             # names compared case-insensitively
    (rec(pred_coord=None), False),
    (rec(gt_bbox=(500, 500), pred_coord=(639, 500)), True),        # 2-value point: 0.14 radius
    (rec(gt_bbox=(500, 500), pred_coord=(640, 500)), False),
    (rec(gt_action="type", gt_bbox=NO, gt_input_text="hello world", pred_action="type",
         pred_input_text="hello"), True),
    (rec(gt_action="type", gt_bbox=NO, gt_input_text="a b c d", pred_action="type", pred_input_text="a"), False),
    (rec(gt_action="open_app", gt_bbox=NO, gt_input_text="Gmail", pred_action="open_app",
         pred_input_text="Maps"), False),                          # open_app text is checked
    (rec(gt_action="press_back", gt_bbox=NO, pred_action="press_back", pred_coord=None), True),
    (rec(pred_action=None, pred_coord=None, pred_input_text=None, parse_error="no answer"), False),
])
def test_strict_step_hit(r, hit):
    assert M.strict_step_hit(r) is hit


def test_strict_differs_from_screenspot_on_box_edges():
    r = rec(pred_coord=(20, 15))
    assert M.grounding_hit(r) is False and M.strict_step_hit(r) is True


# --- unreadable outputs, summary ----------------------------------------------------------------------

def test_unreadable_outputs_miss_everything_and_are_counted():
    bad = dict(pred_action=None, pred_coord=None, pred_input_text=None, parse_error="not exactly <think>…")
    records = [rec(**bad), rec(gt_action="type", gt_bbox=NO, gt_input_text="x", **bad), rec()]
    for r in records[:2]:
        o = M.record_outcome(r)
        assert not o["type"] and not o["strict"] and not o["hit"]
        assert o["grounding"] in (False, None) and o["gr"] in (False, None) and o["text"] in (False, None)
    s = M.summarize(records, "x")
    assert s["parse_failures"] == 2 and s["n"] == 3
    assert s["grounding"]["overall"] == 0.5
    assert s["action"]["type"] == pytest.approx(1 / 3)


def test_summary_and_markdown():
    s = M.summarize(android_records() + [rec(group="web", ui_type="icon")], "androidcontrol_low_test")
    assert set(s) == {"benchmark", "n", "parse_failures", "grounding", "action"}
    md = M.to_markdown(s)
    assert md.startswith("# androidcontrol_low_test")
    assert "| SR (official) | 5 |" in md and "| android-type-text | 1 / 1 | 100.0 |" in md
    assert "GR measured from gt_bbox[0:2], the original's rule" in md  # which rule produced the figures
    strict = M.to_markdown(M.summarize([{**r, "compat": "strict"} for r in android_records()]))
    assert "GR measured from the target's centre" in strict
    assert M.summarize([], "empty") == {"benchmark": "empty", "n": 0, "parse_failures": 0,
                                        "grounding": None, "action": None}
    assert "rows: 0" in M.to_markdown(M.summarize([], "empty"))


# --- the paper's figures ----------------------------------------------------------------------------

def test_the_papers_figures_cover_all_eight_benchmarks():
    from gui_r1_lite.actions import BENCHMARK_SPACES

    assert set(M.PAPER_GUI_R1_3B) == set(BENCHMARK_SPACES)
    for stem, figures in M.PAPER_GUI_R1_3B.items():
        assert set(figures) in ({"grounding"}, {"type", "gr", "sr"}), stem
        assert all(0 < v < 1 for v in figures.values()), stem
    # the ScreenSpot figures are the means of the paper's columns: 80.1 (web and desktop) and 25.2 (12 columns)
    assert M.PAPER_GUI_R1_3B["screenspot_test"]["grounding"] == pytest.approx(0.80075)
    assert M.PAPER_GUI_R1_3B["screenspot_pro_test"]["grounding"] == pytest.approx(0.25225)
    assert len(M.PAPER_GUI_R1_3B_COLUMNS["screenspot_pro_test"]) == 12


def test_paper_grounding_averages_the_papers_columns_the_run_has():
    g = M.grounding_metrics([rec(group="web", ui_type="text"), rec(group="web", ui_type="text"),
                             rec(group="web", ui_type="icon", pred_coord=(0, 0)),
                             rec(group="mobile", ui_type="text")])  # mobile: not a column of the paper's table
    assert g["overall"] == 0.75
    value, used = M.paper_grounding(g, "screenspot_test")
    assert used == ["web-text", "web-icon"] and value == 0.5  # (1.0 + 0.0) / 2, not pooled
    pro = M.grounding_metrics([rec(group="cad", ui_type="icon")])
    assert M.paper_grounding(pro, "screenspot_pro_test") == (1.0, ["CAD-icon"])  # names compared case-insensitively
    assert M.paper_grounding(g, "guiodyssey_test") == (None, []) and M.paper_grounding(None, "screenspot_test") == (
        None, [])


def test_docstring_examples():
    import doctest

    assert doctest.testmod(M).failed == 0
