"""GUI-R1 rewards: the original's 240 scored cases, fuzzing, safety, strict mode, TRL wrappers."""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_r1_lite.actions import Action, format_answer
from gui_r1_lite.reference import reward_cases
from gui_r1_lite.rewards import (
    REWARDS,
    build_rewards,
    completion_text,
    gui_r1_score,
    make_reward,
    point_distance_score,
    point_gaussian_score,
    text_f1,
)

CASES = reward_cases()


def test_fixture_file_is_complete():
    assert len(CASES) == 240


@pytest.mark.parametrize("i", range(len(CASES)))
def test_official_reproduces_every_scored_case(i):
    c = CASES[i]
    got = gui_r1_score(c["completion"], c["gt_action"], c["gt_bbox"], c["gt_input_text"], compat="official")
    assert got == {"format": c["format"], "accuracy": c["accuracy"], "overall": c["overall"]}


# --- an independent reference: the original's code path, with literal_eval in place of eval ---------

def reference_official(completion, gt_action, gt_bbox, gt_input_text):
    fmt = 0.0
    if re.fullmatch(r"<think>.*?</think>\s*<answer>.*?</answer>", completion, re.DOTALL):
        try:
            items = ast.literal_eval(re.search(r"<answer>(.*?)</answer>", completion, re.DOTALL).group(1).strip())
            ok = isinstance(items, list)
            for it in items if ok else []:
                if not (isinstance(it, dict) and {"action", "point", "input_text"} <= it.keys()
                        and isinstance(it["action"], str) and isinstance(it["input_text"], str)
                        and isinstance(it["point"][0], int) and isinstance(it["point"][1], int)) or it["action"] in ("type", "select", "open_app") and it["input_text"] == "no input text" or it["action"] == "scroll" and it["input_text"] not in ("left", "right", "up", "down"):
                    ok = False
            fmt = 1.0 if ok else 0.0
        except Exception:
            fmt = 0.0
    acc = 0.0
    try:
        m = re.search(r"<answer>(.*?)</answer>", completion, re.DOTALL)
        content = m.group(1).strip() if m else None
        act = re.search(r"'action':\s*'(\w+)'", content) if content is not None else None
        act = act.group(1) if act else "no action"
        txt = re.search(r"'input_text':\s*'(.*?)'", content) if content is not None else None
        txt = txt.group(1) if txt else "no input text"
        pt = re.search(r"\{.*\[(\d+),\s*(\d+)]\s*.*\}", content) if content is not None else None
        x, y = (int(pt.group(1)), int(pt.group(2))) if pt else (0, 0)
        if act.lower() == gt_action.lower():
            if gt_action == "click":
                if len(gt_bbox) == 4:
                    acc = float(gt_bbox[0] < x < gt_bbox[2] and gt_bbox[1] < y < gt_bbox[3])
                elif len(gt_bbox) == 2:
                    acc = float((x - gt_bbox[0]) ** 2 + (y - gt_bbox[1]) ** 2 < 140**2)
            elif gt_action in ("type", "select", "scroll"):
                acc = float(text_f1(txt, gt_input_text) >= 0.5)
            else:
                acc = 1.0
    except Exception:
        acc = 0.0
    return {"format": fmt, "accuracy": acc, "overall": 0.8 * acc + 0.2 * fmt}


actions = st.sampled_from(["click", "type", "scroll", "select", "open_app", "press_back", "Click", "close/delete", "long_press"])
pieces = st.one_of(
    st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "[", "]", "{", "}", ",", " ", "\n", "'", '"',
                     "'action': ", "'point': ", "'input_text': ", "no input text", "up", "UP", "search pizza",
                     "1.5", "-3", "True", "None", "__import__('os')", "1+2", "9**9", "()", ":", "\\"]),
    st.integers(-50, 3000).map(str),
    st.text(max_size=4),
)
completions = st.lists(pieces, max_size=40).map("".join)


@st.composite
def structured(draw):
    """Completions near the valid format, where the rules actually discriminate."""
    name = draw(actions)
    point = draw(st.one_of(st.tuples(st.integers(-20, 400), st.integers(-20, 400)).map(list),
                           st.just([1.5, 2]), st.just([3]), st.just("12")))
    text = draw(st.sampled_from(["no input text", "up", "down", "UP", "search pizza", "pizza", ""]))
    item = {"action": name, "point": point, "input_text": text}
    if draw(st.booleans()):
        del item[draw(st.sampled_from(["action", "point", "input_text"]))]
    literal = repr([item]) if draw(st.booleans()) else json.dumps([item])
    sep = draw(st.sampled_from([" ", "", "\n", " x "]))
    tail = draw(st.sampled_from(["", " ", "junk"]))
    return f"<think>{draw(st.text(max_size=10))}</think>{sep}<answer>{literal}</answer>{tail}"


gts = st.tuples(
    st.sampled_from(["click", "type", "scroll", "select", "open_app", "press_back", "long_press", "wait"]),
    st.one_of(st.tuples(*[st.floats(0, 400, allow_nan=False)] * 4).map(list),
              st.tuples(*[st.floats(0, 400, allow_nan=False)] * 2).map(list), st.just([])),
    st.sampled_from(["no input text", "up", "search pizza", "pizza hut near me"]),
)


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(completions, structured()), gts)
def test_fuzz_official_equals_reference_and_never_raises(completion, gt):
    for compat in ("official", "strict"):
        got = gui_r1_score(completion, *gt, compat=compat)
        assert set(got) == {"format", "accuracy", "overall"}
    assert gui_r1_score(completion, *gt) == reference_official(completion, *gt)


# --- safety: nothing the policy writes is run ---------------------------------------------------

ATTACKS = [
    "<think>x</think> <answer>[__import__('os').system('touch pwned')]</answer>",
    "<think>x</think> <answer>[{'action': __import__('os').system('touch pwned'), 'point': [1, 2], 'input_text': 'x'}]</answer>",
    "<think>x</think> <answer>[open('pwned', 'w').write('x')]</answer>",
    "<think>x</think> <answer>[(lambda: __import__('pathlib').Path('pwned').touch())()]</answer>",
    "<think>x</think> <answer>[[c for c in ().__class__.__base__.__subclasses__()]]</answer>",
    "<think>x</think> <answer>[exec(\"open('pwned','w')\")]</answer>",
    "<think>x</think> <answer>[f\"{__import__('os').system('touch pwned')}\"]</answer>",
]


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("compat", ["official", "strict"])
def test_code_in_answers_scores_zero_and_never_runs(attack, compat, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    got = gui_r1_score(attack, "click", [0, 0, 10, 10], "no input text", compat=compat)
    assert got["format"] == 0.0 and got["accuracy"] == 0.0
    assert not (tmp_path / "pwned").exists()
    assert list(tmp_path.iterdir()) == []


# --- text F1 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("pred, gt, f1", [
    ("pizza", "Pizza", 1.0),
    ("piz", "[pizza]", 1.0),              # one token each, substring
    ("up", "down", 0.0),
    ("search pizza", "pizza", 2 * 0.5 * 1 / 1.5),
    ("a b c d", "a b", 2 * 0.5 * 1 / 1.5),
    ("", "x", 0.0),
    ("", "", 0.0),
])
def test_text_f1(pred, gt, f1):
    assert text_f1(pred, gt) == pytest.approx(f1)


# --- strict --------------------------------------------------------------------------------------

def ans(name, point=(-100, -100), text="no input text"):
    return format_answer([Action(name, point, text)])


@pytest.mark.parametrize("completion, gt, official, strict", [
    ('<think></think> <answer>[{"action": "click", "point": [5, 5], "input_text": "no input text"}]</answer>',
     ("click", [0, 0, 10, 10], "no input text"), 0.2, 1.0),                        # JSON quotes
    (ans("close/delete"), ("close/delete", [-100, -100], "no input text"), 0.2, 1.0),  # '/' in the name
    (ans("Click", (5, 5)), ("click", [0, 0, 10, 10], "no input text"), 1.0, 1.0),
    (ans("click", (10, 10)), ("click", [0, 0, 10, 10], "no input text"), 0.2, 1.0),    # on the edge
    (ans("long_press", (500, 500)), ("long_press", [0, 0, 10, 10], "no input text"), 1.0, 0.2),  # point checked
    (ans("open_app", text="Maps"), ("open_app", [-100, -100], "Clock"), 1.0, 0.2),     # text checked
    ("<think></think> <answer>[{'action': 'click', 'point': [5.5, 5.5]}]</answer>",
     ("click", [0, 0, 10, 10], "no input text"), 0.0, 1.0),                          # float point
])
def test_strict_corrects_the_original(completion, gt, official, strict):
    assert gui_r1_score(completion, *gt)["overall"] == pytest.approx(official)
    assert gui_r1_score(completion, *gt, compat="strict")["overall"] == pytest.approx(strict)


def test_strict_scores_the_first_of_several_actions():
    c = format_answer([Action("click", (5, 5)), Action("type", input_text="hi")])
    assert gui_r1_score(c, "click", [0, 0, 10, 10], "no input text", compat="strict")["accuracy"] == 1.0
    assert gui_r1_score(c, "type", [-100, -100], "hi", compat="strict")["accuracy"] == 0.0


# --- dense point rewards --------------------------------------------------------------------------

def test_point_distance_reward():
    box = [100, 100, 200, 150]
    assert point_distance_score(ans("click", (150, 120)), "click", box) == 1.0
    assert point_distance_score(ans("click", (270, 120)), "click", box) == pytest.approx(0.5)
    assert point_distance_score(ans("click", (900, 900)), "click", box) == 0.0
    assert point_distance_score(ans("type", text="x"), "click", box) == 0.0
    assert point_distance_score(ans("type", text="x"), "type", [-100, -100]) is None


def test_point_gaussian_reward():
    box = [100, 100, 200, 150]
    centre = point_gaussian_score(ans("click", (150, 125)), "click", box)
    edge = point_gaussian_score(ans("click", (200, 125)), "click", box)
    far = point_gaussian_score(ans("click", (400, 125)), "click", box)
    assert centre == 1.0 and edge == pytest.approx(2.718281828 ** -0.5) and far < 1e-5
    assert point_gaussian_score(ans("press_back"), "press_back", [-100, -100]) is None


# --- float extremes: a reward never raises and always returns a finite float -------------------------

#: Number-like things a policy can write as a coordinate: float extremes, overflow to inf (1e999),
#: JSON's NaN/Infinity, integers beyond float range, negative zero, subnormals, nested points,
#: strings that look like numbers, booleans and None.
EXTREME_NUMBERS = ["1e308", "-1e308", "1.7976931348623157e308", "1e999", "-1e999", "NaN", "Infinity",
                   "-Infinity", "1" + "0" * 400, "-1" + "0" * 400, "1" + "0" * 5000, "-0.0", "0", "5e-324",
                   "[1, 2]", "[[1e308]]", "'12'", '"1e308"', "True", "None", "{}"]
EXTREME_TARGETS = [[10.0, 20.0], [0.0, 0.0, 100.0, 100.0], [1e308, -1e308], [-1e308, -1e308, 1e308, 1e308],
                   [1.7e308, 1.7e308, 1.7976931348623157e308, 1.7976931348623157e308], [float("nan")] * 4,
                   [10**400, 2], [float("inf"), 0, 0, 0], [[1, 2], [3, 4]], ["1", "2"], [-0.0, -0.0]]


def extreme_completion(x: str, y: str, quote: str = "'", action: str = "click") -> str:
    q = quote
    return (f"<think>x</think> <answer>[{{{q}action{q}: {q}{action}{q}, {q}point{q}: [{x}, {y}], "
            f"{q}input_text{q}: {q}no input text{q}}}]</answer>")


def assert_finite_rewards(completion: str, gt_action: str, gt_bbox) -> None:
    for compat in ("official", "strict"):
        for name in REWARDS:
            got = make_reward(name, compat)([completion], gt_action=[gt_action], gt_bbox=[gt_bbox],
                                            gt_input_text=["no input text"])[0]
            if got is None:  # only the dense point rewards, only on rows without a target point
                assert name.startswith("point_") and gt_action not in ("click", "long_press"), (name, compat)
                continue
            assert type(got) is float and math.isfinite(got) and 0.0 <= got <= 1.0, (name, compat, got)


@pytest.mark.parametrize("x", EXTREME_NUMBERS)
@pytest.mark.parametrize("quote", ["'", '"'])
def test_float_extremes_never_raise(x, quote):
    # Under strict, a point near 1e308 made the dense and the 2-value-target rewards raise
    # OverflowError (`** 2`), and an integer beyond float range made every strict reward raise.
    for y in ("7", "1e308", "1" + "0" * 400, "NaN"):
        for gt in EXTREME_TARGETS:
            assert_finite_rewards(extreme_completion(x, y, quote), "click", gt)


def test_far_points_score_zero_and_near_ones_still_hit():
    far = extreme_completion("1e308", "1e308")
    huge = extreme_completion("1" + "0" * 400, "5")
    for compat in ("official", "strict"):
        for c in (far, huge):
            # (500, 500): official reads no point from "1e308" and defaults to (0, 0), as the original does
            assert gui_r1_score(c, "click", [500.0, 500.0], "no input text", compat=compat)["accuracy"] == 0.0
            assert point_distance_score(c, "click", [0, 0, 100, 100], compat) == 0.0
            assert point_gaussian_score(c, "click", [0, 0, 100, 100], compat) == 0.0
    near = extreme_completion("-0.0", "5", action="click")
    assert gui_r1_score(near, "click", [0.0, 0.0], "no input text", compat="strict")["accuracy"] == 1.0
    # An integer beyond float range is no pixel coordinate: strict refuses it as format.
    assert gui_r1_score(huge, "click", [0, 0, 10, 10], "no input text", compat="strict")["format"] == 0.0


extreme_floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, -1e308, -0.0]))
extreme_coords = st.one_of(
    extreme_floats.map(lambda v: json.dumps(v)),  # NaN, Infinity, -Infinity, 1e+308 (JSON spellings)
    extreme_floats.map(repr),  # nan / inf are names, not literals: the answer is unreadable
    st.integers(-10**420, 10**420).map(str),
    st.just("1" + "0" * 5000),
    st.lists(st.integers(-5, 5), max_size=3).map(str),  # nested points
    st.floats(-1e308, 1e308).map(lambda v: json.dumps(repr(v))),  # a string that looks like a number
)
extreme_gts = st.one_of(
    st.lists(extreme_floats, min_size=2, max_size=2), st.lists(extreme_floats, min_size=4, max_size=4),
    st.lists(st.integers(-10**400, 10**400), min_size=4, max_size=4), st.sampled_from(EXTREME_TARGETS),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extreme_coords, extreme_coords, st.sampled_from(["'", '"']),
       st.sampled_from(["click", "long_press", "type", "press_back"]), extreme_gts)
def test_property_every_reward_is_a_finite_float_on_float_extremes(x, y, quote, action, gt):
    assert_finite_rewards(extreme_completion(x, y, quote, action), action, gt)


# --- TRL contract -------------------------------------------------------------------------------

def test_registry_names_are_stable():
    assert set(REWARDS) == {"format", "accuracy", "gui_r1", "point_distance", "point_gaussian"}
    for name, fn in REWARDS.items():
        assert fn.__name__ == name


def test_trl_contract_with_chat_and_string_completions():
    good = ans("click", (5, 5))
    chat = [[{"role": "assistant", "content": good}],
            [{"role": "assistant", "content": [{"type": "text", "text": good}]}],
            good, "nonsense"]
    cols = dict(gt_action=["click"] * 4, gt_bbox=[[0, 0, 10, 10]] * 4, gt_input_text=["no input text"] * 4,
                prompts=[None] * 4, completion_ids=[[1]] * 4, trainer_state=None)
    assert REWARDS["gui_r1"](chat, **cols) == [1.0, 1.0, 1.0, 0.0]
    assert REWARDS["format"](chat, **cols) == [1.0, 1.0, 1.0, 0.0]
    assert completion_text([{"role": "assistant", "content": None}]) == ""


def test_reward_errors_name_the_missing_column():
    with pytest.raises(KeyError, match="gt_bbox"):
        REWARDS["accuracy"](["x"], gt_action=["click"], gt_input_text=["x"])
    with pytest.raises(ValueError, match="2 values for 1"):
        REWARDS["accuracy"](["x"], gt_action=["click", "click"], gt_bbox=[[1, 2]], gt_input_text=["x"])
    with pytest.raises(KeyError, match="unknown reward"):
        make_reward("nope")


def test_build_rewards_from_recipe_weights():
    funcs, weights = build_rewards({"gui_r1": 1.0, "point_gaussian": 0.5}, compat="strict")
    assert [f.__name__ for f in funcs] == ["gui_r1", "point_gaussian"] and weights == [1.0, 0.5]
    with pytest.raises(ValueError):
        build_rewards({})


def test_no_eval_anywhere_in_the_package():
    root = Path(__file__).resolve().parents[1]
    for f in [*(root / "gui_r1_lite").rglob("*.py"), *(root / "harness").rglob("*.py")]:
        src = f.read_text()
        assert not re.search(r"(^|[^_.\w])(eval|exec)\(", src), f"{f} calls eval/exec"


def test_group_advantages_match_trl_and_vanish_on_equal_groups():
    import torch
    from trl.trainer.utils import nanstd

    from gui_r1_lite.rewards import group_advantages

    rewards = [1.0, 0.0, 0.0, 1.0, 0.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    adv = group_advantages(rewards, 5)
    t = torch.tensor(rewards).view(-1, 5)
    expected = ((t - t.mean(1, keepdim=True)) / (nanstd(t, dim=1).unsqueeze(1) + 1e-4)).flatten().tolist()
    assert adv == pytest.approx(expected, abs=1e-6)
    assert adv[5:] == [0.0] * 5  # all-equal group: nothing to learn
    assert adv[0] == pytest.approx(0.6 / (0.5477226 + 1e-4), rel=1e-5)  # mean 0.4, std sqrt(0.3)
    assert group_advantages([1, 0], 2, scale=False) == [0.5, -0.5]
    with pytest.raises(ValueError, match="divisible"):
        group_advantages([1, 0, 1], 2)
