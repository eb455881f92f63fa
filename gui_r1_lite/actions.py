"""The GUI action space: the `Action` record, the action spaces of GUI-R1's tasks and benchmarks,
the categories the rules check, reading a completion (literals only, never `eval`) and writing the
canonical answer. The only module that knows what an action looks like; points and frames are in `geometry`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from .geometry import NO_POINT, has_target, is_finite_number, target_point

#: `official` reproduces the original GUI-R1 exactly; `strict` is the corrected reading and scoring.
Compat = Literal["official", "strict"]
COMPATS: tuple[str, ...] = get_args(Compat)

NO_TEXT = "no input text"
SCROLL_DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")

ACTION_SPACES: dict[str, tuple[str, ...]] = {
    "high": ("complete", "close/delete", "press_home", "click", "press_back", "type", "select", "scroll", "enter"),
    "low": ("click",),
    "screenspot": ("click",),
    "screenspot_pro": ("click",),
    "androidcontrol": ("wait", "long_press", "click", "press_back", "type", "open_app", "scroll"),
    "guiodyssey": ("press_back", "press_recent", "press_home", "complete", "long_press", "scroll", "click",
                   "impossible", "type"),
    "guiact_web": ("scroll", "click", "complete"),
    "omniact_web": ("press_tab", "moveto", "rightclick", "press_enter", "scroll", "click", "press_down", "hotkey",
                    "press_space", "doubleclick"),
    "omniact_desktop": ("click", "moveto", "press_pgdn"),
}

# Benchmark file stems (as published) -> action space name.
BENCHMARK_SPACES: dict[str, str] = {
    "screenspot_test": "screenspot",
    "screenspot_pro_test": "screenspot_pro",
    "androidcontrol_low_test": "androidcontrol",
    "androidcontrol_high_test": "androidcontrol",
    "guiodyssey_test": "guiodyssey",
    "guiact_web_test": "guiact_web",
    "omniact_web_test": "omniact_web",
    "omniact_desktop_test": "omniact_desktop",
}

#: Actions whose target is a point on the screen (the strict reward, the GR metric and step success check it).
POINT_ACTIONS: frozenset[str] = frozenset({"click", "long_press", "doubleclick", "rightclick", "moveto"})
#: Actions that need an input text (the strict reward and the Text metric check it).
TEXT_ACTIONS: frozenset[str] = frozenset({"type", "select", "open_app", "scroll"})
#: Text actions whose text is free: "no input text" is not an answer for them (format rule 5);
#: scroll's text is one of `SCROLL_DIRECTIONS` instead.
FREE_TEXT_ACTIONS: frozenset[str] = TEXT_ACTIONS - {"scroll"}
#: The original's accuracy reward checks the point of a click only, and the text of these three
#: only (never open_app's): narrower than `POINT_ACTIONS` / `TEXT_ACTIONS` on purpose, to match it.
OFFICIAL_REWARD_POINT_ACTIONS: frozenset[str] = frozenset({"click"})
OFFICIAL_REWARD_TEXT_ACTIONS: frozenset[str] = frozenset({"type", "select", "scroll"})


def check_compat(compat: str) -> Compat:
    if compat not in COMPATS:
        raise ValueError(f"compat must be one of {COMPATS}, got {compat!r}")
    return compat  # type: ignore[return-value]


def action_space(name: str) -> tuple[str, ...]:
    """The action space of a task type (`high`/`low`) or benchmark (`androidcontrol`, a file stem, ...)."""
    key = BENCHMARK_SPACES.get(name, name)
    try:
        return ACTION_SPACES[key]
    except KeyError:
        known = sorted(set(ACTION_SPACES) | set(BENCHMARK_SPACES))
        raise KeyError(f"unknown action space {name!r}; expected one of {known}") from None


@dataclass(frozen=True)
class Action:
    """One GUI action. `point` is in whatever pixel frame the caller uses; (-100, -100) means none."""

    action: str
    point: tuple[float, float] = NO_POINT
    input_text: str = NO_TEXT

    def __post_init__(self) -> None:
        if not isinstance(self.action, str) or not self.action:
            raise ValueError(f"Action.action must be a non-empty string, got {self.action!r}")
        if len(self.point) != 2:
            raise ValueError(f"Action.point must have 2 values, got {self.point!r}")
        object.__setattr__(self, "point", (self.point[0], self.point[1]))

    @property
    def has_point(self) -> bool:
        return has_target(self.point)

    def to_dict(self) -> dict:
        return {"action": self.action, "point": [self.point[0], self.point[1]], "input_text": self.input_text}


def target_action(gt_action: str, gt_bbox: Sequence[float], gt_input_text: str = NO_TEXT) -> Action:
    """A perfect policy's answer: the box centre (or the point) rounded to integer pixels of `gt_bbox`'s frame."""
    target = target_point(gt_bbox)
    point = NO_POINT if target is None else (int(round(target[0])), int(round(target[1])))
    return Action(gt_action, point, gt_input_text)


def answer_literal(actions: Iterable[Action]) -> str:
    """The answer list as GUI-R1 writes it: `[{'action': 'click', 'point': [x, y], 'input_text': '...'}]`."""
    return "[" + ", ".join(f"{{'action': {a.action!r}, 'point': [{a.point[0]!r}, {a.point[1]!r}], "
                           f"'input_text': {a.input_text!r}}}" for a in actions) + "]"


def format_answer(actions: Action | Iterable[Action], thinking: str = "") -> str:
    """The canonical completion: `<think>…</think> <answer>[…]</answer>` (what a policy should emit)."""
    if isinstance(actions, Action):
        actions = [actions]
    return f"<think>{thinking}</think> <answer>{answer_literal(actions)}</answer>"


# --- reading ----------------------------------------------------------------------------------

# Longer answers are refused unread: a completion is ~1,024 tokens (a few KB), and a 100 KB
# adversarial answer would cost the parser tens of milliseconds.
MAX_LITERAL_CHARS = 16_384

_FORMAT_HEAD = re.compile(r"</think>\s*<answer>", re.DOTALL)
_ACTION_RE = re.compile(r"'action':\s*'(\w+)'")
_TEXT_RE = re.compile(r"'input_text':\s*'(.*?)'")
_PAIR_RE = re.compile(r"\[(\d+),\s*(\d+)\]")
_WS_RE = re.compile(r"\s*")


@dataclass(frozen=True)
class ParseResult:
    """What a completion says. `actions`: the answer read as a literal (empty when unreadable);
    `prediction`: the action a metric scores (official: the original's pattern reading, which can
    disagree with the literal; strict: the first action); `point_read`: whether its point came from
    the completion, not official's (0, 0) default or strict's "no point"."""

    compat: str
    format_ok: bool
    error: str | None
    answer: str | None
    actions: tuple[Action, ...] = ()
    prediction: Action | None = None
    point_read: bool = False


def answer_content(text: str) -> str | None:
    """Text between the first `<answer>` and the next `</answer>`, stripped; None without both."""
    start = text.find("<answer>")
    if start < 0:
        return None
    end = text.find("</answer>", start + 8)
    if end < 0:
        return None
    return text[start + 8 : end].strip()


def _official_layout_ok(text: str) -> bool:
    """Same result as `re.fullmatch(r"<think>.*?</think>\\s*<answer>.*?</answer>", text, re.DOTALL)`
    in linear time (the backtracking regex is quadratic on adversarial input)."""
    if not (text.startswith("<think>") and text.endswith("</answer>")):
        return False
    m = _FORMAT_HEAD.search(text, 7)
    # The earliest `</think>\s*<answer>` leaves the most room; the answer's `.*?` may be empty.
    return m is not None and m.end() <= len(text) - 9


def read_literal(content: str) -> tuple[object | None, str | None]:
    """(value, None) for a Python literal (JSON strings are too), else (None, reason). Never evaluates code."""
    if len(content) > MAX_LITERAL_CHARS:
        return None, f"answer is {len(content)} characters; more than {MAX_LITERAL_CHARS} are not read"
    try:
        return ast.literal_eval(content), None
    except Exception as exc:  # noqa: BLE001 - a completion must never crash a training run
        return None, f"answer is not a literal ({type(exc).__name__})"


def _official_items(value: object) -> tuple[tuple[Action, ...], str | None]:
    """Spec §3 format rules 3-5 on an already-read literal."""
    if not isinstance(value, list):
        return (), f"answer is a {type(value).__name__}, expected a list"
    out = []
    for i, item in enumerate(value):
        try:
            if not isinstance(item, dict):
                return (), f"item {i} is a {type(item).__name__}, expected a dict"
            for key in ("action", "point", "input_text"):
                if key not in item:
                    return (), f"item {i} has no {key!r}"
            name, point, text = item["action"], item["point"], item["input_text"]
            if not isinstance(name, str) or not isinstance(text, str):
                return (), f"item {i}: 'action' and 'input_text' must be strings"
            if not (isinstance(point[0], int) and isinstance(point[1], int)):
                return (), f"item {i}: point must hold two integers, got {point!r}"
            if name in FREE_TEXT_ACTIONS and text == NO_TEXT:
                return (), f"item {i}: {name!r} needs an input text"
            if name == "scroll" and text not in SCROLL_DIRECTIONS:
                return (), f"item {i}: scroll needs one of {list(SCROLL_DIRECTIONS)}, got {text!r}"
            out.append(Action(name, (point[0], point[1]), text))
        except (IndexError, KeyError, TypeError, ValueError):
            return (), f"item {i}: point must hold two integers, got {item.get('point')!r}"
    return tuple(out), None


def _official_point(content: str) -> tuple[int, int] | None:
    """Same match as the original's `re.search(r'\\{.*\\[(\\d+),\\s*(\\d+)]\\s*.*\\}', content)`,
    in linear time (the regex is cubic on adversarial input): the first line holding a `{`
    followed on that line by an `[x, y]` pair that a `}` follows (after whitespace, on one
    line); of that line's pairs, the last one."""
    n = len(content)
    last_close = content.rfind("}")
    if last_close < 0 or "{" not in content:
        return None
    line_end = -1
    first_brace = -1
    best: tuple[int, int] | None = None
    # First '}' / newline at or after the last position asked; positions only grow, so a cached
    # answer stays right until the position passes it (-1: none left; -2: not asked yet).
    next_close = next_nl = -2
    for m in _PAIR_RE.finditer(content, 0, last_close):  # a pair after the last '}' cannot match
        c = m.start()
        if c >= line_end:  # the pair opens a new line
            if best is not None:
                break  # an earlier line matched: the leftmost '{' wins
            line_start = content.rfind("\n", 0, c) + 1
            line_end = content.find("\n", c)
            line_end = n if line_end < 0 else line_end
            first_brace = content.find("{", line_start, line_end)
        if first_brace < 0 or first_brace > c:
            continue
        w = _WS_RE.match(content, m.end()).end()
        if next_close != -1 and next_close < w:
            next_close = content.find("}", w)
        if next_nl != -1 and next_nl < w:
            next_nl = content.find("\n", w)
        if next_close != -1 and next_close < (n if next_nl == -1 else next_nl):
            try:
                best = (int(m.group(1)), int(m.group(2)))
            except ValueError:  # more digits than int() reads
                return None
    return best


def official_prediction(text: str) -> Action:
    """The original's pattern reading (spec §3, "Accuracy"): first `'action': '…'`, first `'input_text': '…'`,
    the `{…[x, y]…}` point; defaults `no action`, `no input text`, (0, 0)."""
    return _official_reading(text)[0]


def _official_reading(text: str) -> tuple[Action, bool]:
    """`official_prediction` and whether its point was matched."""
    content = answer_content(text)
    if content is None:
        return Action("no action", (0, 0), NO_TEXT), False
    m = _ACTION_RE.search(content)
    name = m.group(1) if m else "no action"
    m = _TEXT_RE.search(content)
    input_text = m.group(1) if m else NO_TEXT
    point = _official_point(content)
    return Action(name, point if point is not None else (0, 0), input_text), point is not None


_STRICT_LAYOUT = re.compile(r"\s*<think>.*?</think>\s*<answer>.*?</answer>\s*", re.DOTALL)


def _strict_items(value: object) -> tuple[tuple[Action, ...], str | None]:
    if not isinstance(value, list):
        return (), f"answer is a {type(value).__name__}, expected a list"
    if not value:
        return (), "answer list is empty"
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            return (), f"item {i} is a {type(item).__name__}, expected a dict"
        name = item.get("action")
        if not isinstance(name, str) or not name.strip():
            return (), f"item {i}: 'action' must be a non-empty string"
        name = name.strip().lower()
        point = item.get("point", list(NO_POINT))
        if not (isinstance(point, (list, tuple)) and len(point) == 2 and all(is_finite_number(v) for v in point)):
            return (), f"item {i}: point must be two numbers, got {point!r}"
        text = item.get("input_text", NO_TEXT)
        if not isinstance(text, str):
            return (), f"item {i}: 'input_text' must be a string"
        if name in FREE_TEXT_ACTIONS and text.strip().lower() in ("", NO_TEXT):
            return (), f"item {i}: {name!r} needs an input text"
        if name == "scroll" and text.strip().lower() not in SCROLL_DIRECTIONS:
            return (), f"item {i}: scroll needs one of {list(SCROLL_DIRECTIONS)}, got {text!r}"
        out.append(Action(name, (point[0], point[1]), text))
    return tuple(out), None


def _read_strict(content: str) -> tuple[object | None, str | None]:
    value, err = read_literal(content)
    if err is None:
        return value, None
    if len(content) <= MAX_LITERAL_CHARS:
        try:  # JSON's true/false/null are not Python literals
            return json.loads(content), None
        except (ValueError, RecursionError):
            pass
    return None, err


def parse_completion(text: str, compat: Compat = "official") -> ParseResult:
    """Read a completion; never raises on any string and never runs code in it.

    official: the original's format rules (spec §3) with `ast.literal_eval` in place of `eval`;
    `prediction` is its pattern reading. strict (spec §4): JSON or Python literals, case-insensitive
    names, float/negative points; one reading serves format and accuracy.
    """
    check_compat(compat)
    if not isinstance(text, str):
        return ParseResult(compat, False, f"completion is a {type(text).__name__}, expected str", None)
    content = answer_content(text)
    if compat == "official":
        prediction, point_read = _official_reading(text)
        if not _official_layout_ok(text):
            error = "not exactly <think>…</think> <answer>…</answer>"
            return ParseResult(compat, False, error, content, (), prediction, point_read)
        value, err = read_literal(content)  # layout ok implies an answer block exists
        if err is not None:
            return ParseResult(compat, False, err, content, (), prediction, point_read)
        actions, err = _official_items(value)
        return ParseResult(compat, err is None, err, content, actions, prediction, point_read)

    if content is None:
        return ParseResult(compat, False, "no <answer>…</answer> block", None)
    value, err = _read_strict(content)
    actions: tuple[Action, ...] = ()
    if err is None:
        actions, err = _strict_items(value)
    prediction = actions[0] if actions else None
    if err is None and not _STRICT_LAYOUT.fullmatch(text):
        err = "answer read, but the completion is not <think>…</think> <answer>…</answer>"
    point_read = prediction is not None and prediction.has_point
    return ParseResult(compat, err is None, err, content, actions, prediction, point_read)
