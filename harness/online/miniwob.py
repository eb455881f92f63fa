"""MiniWoB++ episodes (task pages of the PyPI package `miniwob`) in a live page: the scripted steps
of each supported task, starting an episode with a seed, the page's own state and reward, and the
ground truth of a scripted step as a `Step`. The closed loop asks and scores with it; capture/
wrote data_samples/ with it."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gui_r1_lite.actions import ACTION_SPACES, FREE_TEXT_ACTIONS, NO_TEXT, POINT_ACTIONS, SCROLL_DIRECTIONS
from gui_r1_lite.geometry import box_center

from .browser import CaptureDependencyError, Shot

PLATFORMS: tuple[str, ...] = ("web", "mobile", "desktop", "miniwob")
UI_TYPES: tuple[str, ...] = ("text", "icon")


# --- the step record ---------------------------------------------------------------------------


@dataclass
class Step:
    """One step of one task on one screenshot: `box` (x1, y1, x2, y2) in image pixels for point
    actions, None otherwise; `history` the earlier steps' lines ("click 'Search'", "type 'pizza'")."""

    id: str
    platform: str
    split: str  # "train" or "test"
    instruction: str
    task_type: str  # "low" or "high"
    action: str
    shot: Shot
    box: tuple[float, float, float, float] | None = None
    input_text: str = NO_TEXT
    ui_type: str = "text"
    history: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.platform not in PLATFORMS:
            raise ValueError(f"step {self.id}: platform {self.platform!r} not in {PLATFORMS}")
        if self.split not in ("train", "test"):
            raise ValueError(f"step {self.id}: split must be 'train' or 'test', got {self.split!r}")
        if self.task_type not in ("low", "high"):
            raise ValueError(f"step {self.id}: task_type must be 'low' or 'high', got {self.task_type!r}")
        if self.action not in ACTION_SPACES["high"]:
            raise ValueError(f"step {self.id}: action {self.action!r} not in {ACTION_SPACES['high']}")
        if self.ui_type not in UI_TYPES:
            raise ValueError(f"step {self.id}: ui_type {self.ui_type!r} not in {UI_TYPES}")
        if self.action in POINT_ACTIONS:
            if self.box is None:
                raise ValueError(f"step {self.id}: a {self.action} step needs a box")
            self.box = clip_box(self.box, self.shot.width, self.shot.height, what=f"step {self.id}")
        elif self.box is not None:
            raise ValueError(f"step {self.id}: a {self.action} step has no target box")
        if self.action in FREE_TEXT_ACTIONS and self.input_text.strip().lower() in ("", NO_TEXT):
            raise ValueError(f"step {self.id}: a {self.action} step needs an input text")
        if self.action == "scroll" and self.input_text not in SCROLL_DIRECTIONS:
            raise ValueError(f"step {self.id}: scroll needs up/down/left/right, got {self.input_text!r}")


def clip_box(box: Sequence[float], width: int, height: int, what: str = "box") -> tuple[float, float, float, float]:
    """The part of `box` inside a `width` x `height` image, rounded to 1/100 px; raises when empty."""
    x1, y1, x2, y2 = (float(v) for v in box)
    c = (max(0.0, x1), max(0.0, y1), min(float(width), x2), min(float(height), y2))
    c = tuple(round(v, 2) for v in c)
    if not (c[2] > c[0] and c[3] > c[1]):
        raise ValueError(f"{what}: box {list(box)} has no area inside the {width}x{height} image")
    return c  # type: ignore[return-value]


def history_text(steps: Sequence[str]) -> str:
    """GUI-R1's history column: "None" when empty, else "Step 1: click 'Search'. Step 2: ..."."""
    if not steps:
        return "None"
    return " ".join(f"Step {i}: {s.rstrip('.')}." for i, s in enumerate(steps, 1))


def quote(text: str, limit: int = 60) -> str:
    """`text` in single quotes, shortened to `limit` characters."""
    t = re.sub(r"\s+", " ", text).strip()
    if len(t) > limit:
        t = t[: limit - 1].rstrip() + "…"
    return f"'{t}'"


# --- task pages ----------------------------------------------------------------------------------

# Task-area clip: the page's #wrap element (160 x 210 CSS px). DPR 1 keeps images tiny.
DPR = 1
TRAIN_SEEDS = range(0, 30)
TEST_SEEDS = range(1000, 1015)


@dataclass(frozen=True)
class MStep:
    """One step of a task: a click on the element the JS expression `target` returns, or typing
    the text the JS expression `text` returns. `describe` is the history line ({name}: the target's
    visible text); `ui_type` overrides the visible-text test (e.g. an icon-only button)."""

    action: str
    target: str = ""
    text: str = ""
    describe: str = "click {name}"
    ui_type: str | None = None


_QUOTED = "core.getUtterance().match(/\"(.*?)\"/)[1]"


def _find(selector: str, pred: str = "true") -> str:
    """JS: the first element in document order matching `selector` for which `pred` (over `e`) holds."""
    return f"Array.from(document.querySelectorAll({selector!r})).find(e => {pred})"


TASKS: dict[str, tuple[MStep, ...]] = {
    "click-button": (MStep("click", _find("#area button", f"e.innerHTML === {_QUOTED}")),),
    "click-link": (MStep("click", _find("#area .alink", f"e.innerHTML === {_QUOTED}")),),
    "click-tab": (MStep("click", "document.querySelector('#area ul a[href=\"#tabs-' + "
                                 "core.getUtterance().match(/Tab #(\\d)/)[1] + '\"]')"),),
    "click-test": (MStep("click", "document.getElementById('subbtn')"),),
    "click-test-2": (MStep("click", "document.getElementById('subbtn')"),),
    "focus-text": (MStep("click", "document.getElementById('tt')", describe="click the text field"),),
    "click-color": (MStep("click", _find("#area .color", "e.getAttribute('data-color') === "
                                         "core.getUtterance().match(/the (\\S+) colored/)[1]"),
                          describe="click the colored box", ui_type="icon"),),
    "click-dialog": (MStep("click", "document.querySelector('.ui-dialog-titlebar-close')",
                           describe="click the close button", ui_type="icon"),),
    "click-dialog-2": (MStep("click", f"({_QUOTED} === 'x') ? document.querySelector('.ui-dialog-titlebar-close') : "
                                      + _find(".ui-dialog-buttonpane button", f"e.textContent === {_QUOTED}")),),
    # multi-step episodes (task_type "high", with history)
    "click-option": (
        MStep("click", _find("#boxes label",
                             "e.textContent === core.getUtterance().match(/^Select (.*) and click Submit/)[1]")),
        MStep("click", "document.getElementById('subbtn')"),
    ),
    "click-button-sequence": (
        MStep("click", "document.getElementById('subbtn')"),
        MStep("click", "document.getElementById('subbtn2')"),
    ),
    "click-collapsible": (
        MStep("click", "document.querySelector('#area h3')"),
        MStep("click", "document.getElementById('subbtn')"),
    ),
    "enter-text": (
        MStep("click", "document.getElementById('tt')", describe="click the text field"),
        MStep("type", text="document.querySelector('#query .bold').textContent"),
        MStep("click", "document.getElementById('subbtn')"),
    ),
    "login-user": (
        MStep("click", "document.getElementById('username')", describe="click the username field"),
        MStep("type", text="core.getUtterance().match(/username \"(.*?)\"/)[1]"),
        MStep("click", "document.getElementById('password')", describe="click the password field"),
        MStep("type", text="core.getUtterance().match(/password \"(.*?)\"/)[1]"),
        MStep("click", "document.getElementById('subbtn')"),
    ),
}

# Box of an element relative to the task area, in CSS px: the largest of its client boxes (a
# link broken over two lines has two), cut to the area; plus its visible text.
_BOX_JS = """(el) => {
  const wrap = document.getElementById('wrap').getBoundingClientRect();
  let best = null;
  for (const r of el.getClientRects()) {
    if (!best || r.width * r.height > best.width * best.height) best = r;
  }
  if (!best) return null;
  // covered when another element (e.g. an overlapping button) is on top at the centre or at
  // the quarter points: a click there would not reach the target
  const covered = [[0.5, 0.5], [0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]].some(([fx, fy]) => {
    const hit = document.elementFromPoint(best.left + fx * best.width, best.top + fy * best.height);
    return !(hit && (hit === el || el.contains(hit)));
  });
  const tag = el.tagName.toLowerCase();
  let text = (tag === 'input' || tag === 'textarea') ? (el.value || el.placeholder || '') : el.innerText;
  return {x1: best.left - wrap.left, y1: best.top - wrap.top, x2: best.right - wrap.left,
          y2: best.bottom - wrap.top, text: (text || '').replace(/\\s+/g, ' ').trim(), covered,
          wx: wrap.left, wy: wrap.top, ww: wrap.width, wh: wrap.height};
}"""


def html_dir() -> Path:
    """The MiniWoB++ task pages inside the installed `miniwob` package."""
    try:
        import miniwob
    except ImportError:
        raise CaptureDependencyError("Python package `miniwob` is missing; "
                                     "install it with `pip install miniwob`") from None
    path = Path(os.path.dirname(miniwob.__file__)) / "html" / "miniwob"
    if not path.is_dir():
        raise CaptureDependencyError(f"`miniwob` is installed but has no task pages at {path}")
    return path


def miniwob_version() -> str:
    from importlib.metadata import version

    return version("miniwob")


def step_id(task: str, seed: int, k: int) -> str:
    """The id of step `k` of episode `seed` of `task` (data_samples/ and the closed loop's records)."""
    return f"miniwob/{task}/seed{seed}/step{k}"


def seed_of(step_id: str) -> int:
    """The seed stored in a MiniWoB step id ("miniwob/<task>/seed<N>/step<k>")."""
    m = re.search(r"/seed(\d+)/", step_id)
    if not m:
        raise ValueError(f"not a MiniWoB step id: {step_id!r}")
    return int(m.group(1))


def start_episode(page, task: str, seed: int, max_time_ms: int | None = None) -> str:
    """Open `task`'s page, start episode `seed` and return its instruction. `max_time_ms` replaces
    the page's own time limit (10 s for most tasks), after which the page ends the episode as failed."""
    page.goto((html_dir() / f"{task}.html").as_uri())
    page.wait_for_selector("#sync-task-cover", state="attached")
    # jQuery UI widgets (accordion, tabs) animate; switch jQuery's effects off so each screenshot
    # shows the settled state. The seed is set the way the `miniwob` package's own env does.
    page.evaluate("() => { if (window.jQuery) { jQuery.fx.off = true; } }")
    page.evaluate(f"Math.seedrandom({seed!r})")
    if max_time_ms is not None:
        page.evaluate(f"core.EPISODE_MAX_TIME = {int(max_time_ms)}")
    page.evaluate("core.startEpisodeReal()")
    page.wait_for_function("() => window.WOB_TASK_READY !== false")
    return page.evaluate("core.getUtterance()")


def episode_state(page) -> tuple[bool, float]:
    """(done, raw reward) as the page keeps them (WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL: 1.0 = solved)."""
    state = page.evaluate("() => ({done: WOB_DONE_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL})")
    return bool(state["done"]), float(state["raw"])


@dataclass
class Expected:
    """What scripted step `k` of a task asks on the page as it is now: the screenshot, the `Step`,
    the line it adds to the history, and where a click on the target lands (CSS px of the
    viewport). `skipped` says why the step is not a clean one-click step (then `step` is None, or
    the target's step when it is covered or off the task area)."""

    shot: Shot
    step: Step | None = None
    history: str = ""
    click_at: tuple[float, float] | None = None
    skipped: str | None = None


def expected_step(page, task: str, seed: int, k: int, instruction: str, history: Sequence[str],
                  split: str) -> Expected:
    """The screenshot of the task area and the ground truth of scripted step `k` of `task`."""
    from .browser import screenshot

    spec = TASKS[task]
    ms = spec[k]
    shot = screenshot(page, clip=wrap_clip(page))
    common = dict(id=step_id(task, seed, k), platform="miniwob", split=split, instruction=instruction,
                  task_type="high" if len(spec) > 1 else "low", shot=shot, history=list(history))
    if ms.action == "type":
        text = page.evaluate(f"() => {ms.text}")
        return Expected(shot, Step(action="type", input_text=text, ui_type="text", **common), f"type {quote(text)}")
    el = page.evaluate_handle(f"() => {ms.target}").as_element()
    b = el.evaluate(_BOX_JS) if el is not None else None
    if b is None:
        return Expected(shot, skipped=f"step {k}: target {'has no box' if el is not None else 'not found'}")
    box_css = (b["x1"], b["y1"], b["x2"], b["y2"])
    cx, cy = box_center(box_css)
    skipped = None
    if b["covered"]:
        skipped = f"step {k}: target partly covered by another element"
    elif not (0 < cx < b["ww"] and 0 < cy < b["wh"]):
        skipped = f"step {k}: target centre outside the task area"
    ui_type = ms.ui_type or ("text" if any(ch.isalnum() for ch in b["text"]) else "icon")
    try:
        step = Step(action="click", box=tuple(v * DPR for v in box_css), ui_type=ui_type, **common)
    except ValueError as exc:
        return Expected(shot, skipped=skipped or f"step {k}: {exc}")
    name = quote(b["text"]) if b["text"] else "the element"
    return Expected(shot, step, ms.describe.format(name=name), (b["wx"] + cx, b["wy"] + cy), skipped)


def wrap_clip(page) -> dict:
    """The task area (the page's #wrap element) in CSS px of the viewport."""
    return page.evaluate("() => { const r = document.getElementById('wrap').getBoundingClientRect();"
                         " return {x: r.left, y: r.top, width: r.width, height: r.height}; }")


def new_task_page(browser):
    """A page in a fresh context that holds a task page: 400x300 CSS px at `DPR`, English, UTC."""
    ctx = browser.new_context(viewport={"width": 400, "height": 300}, device_scale_factor=DPR,
                              locale="en-US", timezone_id="UTC", reduced_motion="reduce")
    return ctx.new_page()
