"""Action space and categories, completion reading, and the geometry of points, boxes and pixel frames."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_r1_lite import actions as A
from gui_r1_lite import geometry
from gui_r1_lite.actions import Action, format_answer, parse_completion

# The original's patterns, used here only as the reference the linear-time readers must agree with.
ORIG_LAYOUT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)
ORIG_POINT = re.compile(r"\{.*\[(\d+),\s*(\d+)]\s*.*\}")


def orig_point(content: str):
    m = ORIG_POINT.search(content)
    return (int(m.group(1)), int(m.group(2))) if m else None


def test_action_spaces_match_the_original():
    assert A.action_space("high") == ("complete", "close/delete", "press_home", "click", "press_back",
                                      "type", "select", "scroll", "enter")
    assert A.action_space("low") == ("click",)
    assert A.action_space("screenspot_pro_test") == ("click",)
    assert A.action_space("androidcontrol_high_test") == ("wait", "long_press", "click", "press_back",
                                                           "type", "open_app", "scroll")
    assert "impossible" in A.action_space("guiodyssey")
    assert A.action_space("omniact_desktop") == ("click", "moveto", "press_pgdn")
    with pytest.raises(KeyError, match="unknown action space 'nope'"):
        A.action_space("nope")


def test_action_record():
    a = Action("click", [3, 4])
    assert a.point == (3, 4) and a.input_text == "no input text" and a.has_point
    assert not Action("press_back").has_point
    with pytest.raises(ValueError):
        Action("")
    with pytest.raises(ValueError):
        Action("click", (1, 2, 3))


def test_format_answer_is_the_original_literal():
    s = format_answer([Action("click", (12, 30))], thinking="the button")
    assert s == "<think>the button</think> <answer>[{'action': 'click', 'point': [12, 30], 'input_text': 'no input text'}]</answer>"
    r = parse_completion(s)
    assert r.format_ok and r.error is None and r.actions == (Action("click", (12, 30)),)
    assert r.prediction == Action("click", (12, 30))


names = st.sampled_from(sorted({a for space in A.ACTION_SPACES.values() for a in space}))
texts = st.text(min_size=1, max_size=30)
coords = st.integers(min_value=-100, max_value=5000)


@st.composite
def valid_actions(draw):
    name = draw(names)
    if name == "scroll":
        text = draw(st.sampled_from(A.SCROLL_DIRECTIONS))
    elif name in ("type", "select", "open_app"):
        text = draw(texts.filter(lambda t: t.strip().lower() not in ("", A.NO_TEXT)))
    else:
        text = draw(st.one_of(st.just(A.NO_TEXT), texts))
    return Action(name, (draw(coords), draw(coords)), text)


@settings(max_examples=400, deadline=None)
@given(st.lists(valid_actions(), min_size=1, max_size=4), st.text(max_size=40).filter(lambda t: "</think>" not in t))
def test_roundtrip_format_then_parse(actions, thinking):
    completion = format_answer(actions, thinking)
    for compat in ("official", "strict"):
        r = parse_completion(completion, compat)
        assert r.actions == tuple(actions), (compat, r.error)
        assert r.format_ok, (compat, r.error)


@pytest.mark.parametrize("content", [
    "[{'action': 'click', 'point': [1, 2], 'input_text': 'x'}]" + " " * 100_000 + "x",
    "[" * 10_000 + "]" * 10_000,
    "9**9**9",
    "[9**9**9]",
    "[" + "1," * 50_000 + "]",
    "'" + "a" * 100_000 + "'",
    "[{'action': 'click', 'point': [" + "9" * 5000 + ", 1], 'input_text': 'x'}]",
    "{" + "[1, 2]" * 16_000,
    "\x00\udcff" * 1000,
])
@pytest.mark.parametrize("compat", ["official", "strict"])
def test_adversarial_completions_are_invalid_not_errors(content, compat):
    r = parse_completion(f"<think>x</think><answer>{content}</answer>", compat)
    assert not r.format_ok and r.error


def test_whitespace_padding_is_stripped_not_refused():
    pad = " " * 100_000
    r = parse_completion(f"<think>x</think><answer>{pad}[]{pad}</answer>")
    assert r.format_ok and r.actions == ()


def test_parse_never_raises_on_non_strings():
    assert parse_completion(None).error.startswith("completion is a NoneType")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compat must be one of"):
        parse_completion("x", "loose")  # type: ignore[arg-type]


def test_check_compat_returns_the_value_or_names_the_allowed_ones():
    assert A.COMPATS == ("official", "strict")
    assert A.check_compat("strict") == "strict"
    with pytest.raises(ValueError, match=r"compat must be one of \('official', 'strict'\), got 'loose'"):
        A.check_compat("loose")


def test_action_categories_as_the_rules_name_them():
    assert sorted(A.POINT_ACTIONS) == ["click", "doubleclick", "long_press", "moveto", "rightclick"]  # GR's list
    assert sorted(A.TEXT_ACTIONS) == ["open_app", "scroll", "select", "type"]  # the Text metric's list
    assert sorted(A.FREE_TEXT_ACTIONS) == ["open_app", "select", "type"]  # format rule 5
    # The original's accuracy reward: the point of a click only, and no open_app text.
    assert sorted(A.OFFICIAL_REWARD_POINT_ACTIONS) == ["click"]
    assert sorted(A.OFFICIAL_REWARD_TEXT_ACTIONS) == ["scroll", "select", "type"]


def test_target_action_aims_at_the_centre_or_the_point():
    assert A.target_action("click", [10, 20, 31, 40]).point == (20, 30)  # 20.5 rounds to even
    assert A.target_action("long_press", [7.6, 9.2]).point == (8, 9)
    assert A.target_action("type", [-100.0, -100.0], "hi") == Action("type", (-100, -100), "hi")


@pytest.mark.parametrize("text, ok, why", [
    ("<think>a</think> <answer>[]</answer>", True, None),
    ("<think>a</think> <answer>{'action': 'click', 'point': [1, 2], 'input_text': 'x'}</answer>", False, "dict"),
    (" <think>a</think> <answer>[]</answer>", False, "not exactly"),
    ("<think>a</think> <answer>[1+2]</answer>", False, "not a literal"),
    ("<think>a</think> <answer>[{'action': 'click', 'point': [1.5, 2], 'input_text': 'x'}]</answer>", False, "integers"),
    ("<think>a</think> <answer>[{'action': 'click', 'point': [1], 'input_text': 'x'}]</answer>", False, "integers"),
    ("<think>a</think> <answer>[{'action': 'type', 'point': [1, 2], 'input_text': 'no input text'}]</answer>", False, "needs an input text"),
    ("<think>a</think> <answer>[{'action': 'scroll', 'point': [1, 2], 'input_text': 'UP'}]</answer>", False, "scroll"),
    ("<think>a</think> <answer>[{'action': 'click', 'point': [1, 2]}]</answer>", False, "input_text"),
])
def test_official_format_rules(text, ok, why):
    r = parse_completion(text, "official")
    assert r.format_ok is ok
    if why:
        assert why in r.error


def test_official_prediction_is_the_pattern_reading():
    # JSON quotes are a valid literal (format 1) but the original's patterns do not match them.
    text = '<think></think> <answer>[{"action": "click", "point": [5, 6], "input_text": "no input text"}]</answer>'
    r = parse_completion(text, "official")
    assert r.format_ok and r.prediction == Action("no action", (5, 6), "no input text")
    assert A.official_prediction("no tags") == Action("no action", (0, 0), "no input text")
    assert A.official_prediction("<answer>[{'action': 'close/delete'}]</answer>").action == "no action"
    assert A.official_prediction("<answer>[{'action': 'click', 'point': [-5, 6]}]</answer>").point == (0, 0)


def test_strict_reads_what_official_misses():
    text = '<think></think> <answer>[{"action": "Close/Delete", "point": [-5.5, 6], "input_text": "x"}, {"action": "click"}]</answer>'
    r = parse_completion(text, "strict")
    assert r.format_ok and r.prediction == Action("close/delete", (-5.5, 6), "x") and len(r.actions) == 2
    r = parse_completion('<think></think><answer>[{"action": "enter", "point": null, "input_text": true}]</answer>', "strict")
    assert not r.format_ok and "point" in r.error
    r = parse_completion("<answer>[{'action': 'click', 'point': [1, 2]}]</answer>", "strict")
    assert not r.format_ok and r.prediction == Action("click", (1, 2))  # read, but layout is off


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="{}[], 0123456789\n\tx", max_size=60))
def test_linear_point_reader_agrees_with_the_original_regex(content):
    assert A._official_point(content) == orig_point(content)


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", " ", "\n", "x"]), max_size=12))
def test_linear_layout_check_agrees_with_the_original_regex(parts):
    text = "".join(parts)
    assert A._official_layout_ok(text) == bool(ORIG_LAYOUT.fullmatch(text))


# --- points and boxes ----------------------------------------------------------------------------

@pytest.mark.parametrize("box, target", [
    ([10, 20, 30, 40], True), ([5, 6], True), ([-100, -100], False), ([-100.0, -100.0], False),
    ([], False), ([1, 2, 3], False), ([-100, 5], True),
])
def test_has_target(box, target):
    assert geometry.has_target(box) is target
    assert geometry.is_no_target(box) is (box in ([-100, -100], [-100.0, -100.0]))


def test_target_point_is_the_box_centre_or_the_point():
    assert geometry.target_point((100, 100, 200, 201)) == (150.0, 150.5)
    assert geometry.target_point((7, 9)) == (7.0, 9.0)
    assert geometry.target_point((-100, -100)) is None and geometry.target_point((1, 2, 3)) is None
    assert geometry.box_center((0, 0, 5, 4)) == (2.5, 2.0)


@pytest.mark.parametrize("point, strict, inclusive", [
    ((15, 15), True, True), ((10, 15), False, True), ((20, 20), False, True), ((15, 9.99), False, False),
])
def test_point_in_box_edges(point, strict, inclusive):
    box = (10, 10, 20, 20)
    assert geometry.point_in_box(point, box, inclusive=False) is strict
    assert geometry.point_in_box(point, box, inclusive=True) is inclusive


def test_distances_are_strict():
    assert geometry.within_distance((3, 4), (0, 0), 5.01) and not geometry.within_distance((3, 4), (0, 0), 5)
    # 0.1 of the width and 0.1 of the height away: 0.1² + 0.1² = 0.02 against 0.14² = 0.0196
    assert not geometry.within_normalised_distance((100, 50), (0, 0), (1000, 500), 0.14)
    assert geometry.within_normalised_distance((90, 50), (0, 0), (1000, 500), 0.14)


# --- pixel frames -------------------------------------------------------------------------------

@pytest.mark.parametrize("w, h", [(1080, 2400), (1920, 1080), (811, 1623), (160, 210), (3840, 2160), (28, 28)])
def test_model_image_size_follows_qwen_smart_resize(w, h):
    mw, mh = geometry.model_image_size(w, h)
    assert mw % 28 == 0 and mh % 28 == 0
    assert geometry.GUI_R1_MIN_PIXELS <= mw * mh <= geometry.GUI_R1_MAX_PIXELS
    assert abs(mw / mh - w / h) / (w / h) < 0.1  # aspect kept within rounding


def test_known_sizes():
    assert geometry.model_image_size(1080, 2400) == (728, 1652)
    assert geometry.model_image_size(1920, 1080) == (1484, 840)


@pytest.mark.parametrize("size", [(1080, 2400), (1920, 1080), (811, 1623)])
def test_frames_round_trip(size):
    model = geometry.model_image_size(*size)
    box = [0.1, 0.25, 0.5, 0.75]
    in_model = geometry.normalized_to_pixels(box, model)
    in_orig = geometry.rescale_pixels(in_model, model, size)
    assert in_orig == pytest.approx(geometry.normalized_to_pixels(box, size))
    assert geometry.pixels_to_normalized(in_orig, size) == pytest.approx(box)
    back = geometry.rescale_pixels(geometry.rescale_pixels([5, 7], size, model), model, size)
    assert back == pytest.approx([5, 7])


def test_frame_errors():
    with pytest.raises(ValueError, match="point"):
        geometry.normalized_to_pixels([1, 2, 3], (10, 10))
    with pytest.raises(ValueError, match="positive"):
        geometry.rescale_pixels([1, 2], (0, 10), (10, 10))
