"""One closed-loop MiniWoB++ episode in a live page: screenshot of the task area -> the training
rows' prompt and history -> the policy -> `actions.parse_completion` -> the point mapped from the
model's frame to the page -> the action done -> until the page reports done, `max_steps` steps,
or an answer that cannot be acted on. The page's own raw reward says whether it was solved."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gui_r1_lite.actions import (
    FREE_TEXT_ACTIONS,
    NO_TEXT,
    POINT_ACTIONS,
    SCROLL_DIRECTIONS,
    Action,
    action_space,
    parse_completion,
)
from gui_r1_lite.data import EvalRow, Sample, model_view, to_eval_rows
from gui_r1_lite.evaluate import Completer, make_record
from gui_r1_lite.geometry import NO_POINT, point_in_box
from gui_r1_lite.runio import append_jsonl

from .browser import Shot, screenshot
from .miniwob import (
    DPR,
    TASKS,
    Expected,
    episode_state,
    expected_step,
    history_text,
    quote,
    start_episode,
    step_id,
    wrap_clip,
)
from .results import UNPARSABLE_END

#: The page's own time limit (10 s for most tasks) would end an episode while a slow policy is
#: still thinking; the loop bounds an episode by its steps instead, so the page gets an hour.
PAGE_MAX_TIME_MS = 3_600_000
#: No single browser operation (load, script, screenshot, wait) may take longer than this.
PAGE_TIMEOUT_MS = 15_000
#: Steps allowed beyond a task's scripted ones (room for a harmless wrong move), and for a task
#: without a script.
EXTRA_STEPS = 2
UNSCRIPTED_MAX_STEPS = 10
# Mouse-wheel pixels (dx, dy) per scroll direction ("down" brings what lies below into view).
_WHEEL = {"up": (0, -100), "down": (0, 100), "left": (-100, 0), "right": (100, 0)}
#: One record per step, appended as it happens, and the steps' screenshots (in the run folder).
STEPS_FILE = "steps.jsonl"
SHOTS_DIR = "shots"

# What a policy's click hit, named as a history line names it: the text of the control (button,
# link, field, ...) at a point of the viewport; '' for a bare container (its text is the whole page).
_TEXT_AT_JS = """([x, y]) => {
  const hit = document.elementFromPoint(x, y);
  if (!hit) return '';
  const e = hit.closest('button, a, label, input, textarea, select, h3, [role]') ||
            (hit.children.length === 0 ? hit : null);
  if (!e) return '';
  const tag = e.tagName.toLowerCase();
  const t = (tag === 'input' || tag === 'textarea') ? (e.value || e.placeholder || '') : (e.innerText || '');
  return t.replace(/\\s+/g, ' ').trim();
}"""
# Choose the option whose text is `t` in the focused list, as a person picking it would.
_SELECT_JS = """(t) => {
  const e = document.activeElement;
  if (!e || e.tagName !== 'SELECT') return false;
  const o = Array.from(e.options).find(o => o.text.trim() === t.trim());
  if (!o) return false;
  e.value = o.value;
  e.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
}"""


@dataclass(frozen=True)
class Settings:
    """How each step is asked and read, and the run folder the steps go to."""

    min_pixels: int
    max_pixels: int
    max_new_tokens: int
    compat: str
    out: Path


def task_type(task: str) -> str:
    """The prompt's task type, as the training rows have it: "low" for a one-click task, else "high"."""
    return "low" if task in TASKS and len(TASKS[task]) == 1 else "high"


def max_steps_for(task: str, max_steps: int | None) -> int:
    """`max_steps`, or by default the task's scripted steps plus `EXTRA_STEPS`."""
    if max_steps is not None:
        return max_steps
    return len(TASKS[task]) + EXTRA_STEPS if task in TASKS else UNSCRIPTED_MAX_STEPS


def shot_path(task: str, seed: int, k: int) -> str:
    """Step `k`'s screenshot, relative to the run folder."""
    return f"{SHOTS_DIR}/{task}/seed{seed}_step{k}.png"


def run_episode(page, completer: Completer, task: str, seed: int, limit: int, settings: Settings) -> dict:
    """Play episode `seed` of `task` with `completer`, each step's record appended to the steps file
    as it happens; return the episode's record, with how it ended (`end`) and why (`why`)."""
    from playwright.sync_api import TimeoutError as PageTimeout

    steps, start = 0, time.perf_counter()
    end, why = "step limit", f"not done after {limit} steps"
    try:
        instruction = start_episode(page, task, seed, PAGE_MAX_TIME_MS)
        history: list[str] = []
        for k in range(limit):
            record, line = play_step(page, completer, task, seed, k, instruction, history, settings)
            append_jsonl(settings.out / STEPS_FILE, record)
            steps += 1
            if record["failed"]:
                end, why = UNPARSABLE_END, record["failed"]
                break
            if record["done"] or record["pred_action"] == "complete":
                end, why = ("done", None) if record["done"] else ("policy said complete", "the page is not done")
                break
            history.append(line)
        done, raw = episode_state(page)
    except PageTimeout as exc:
        done, raw = False, 0.0
        end, why = "page timeout", f"no answer within {PAGE_TIMEOUT_MS // 1000} s: {str(exc).splitlines()[0]}"
    return {"task": task, "seed": seed, "steps": steps, "done": done, "raw_reward": raw,
            "success": bool(done and raw >= 1.0), "end": end, "why": why,
            "seconds": round(time.perf_counter() - start, 3)}


def play_step(page, completer: Completer, task: str, seed: int, k: int, instruction: str, history: Sequence[str],
              settings: Settings) -> tuple[dict, str]:
    """One step: ask, read, act. Returns the step's record and the line it adds to the history."""
    start = time.perf_counter()
    expected = expected_step(page, task, seed, k, instruction, history, "test") \
        if task in TASKS and k < len(TASKS[task]) else None
    shot = expected.shot if expected is not None else screenshot(page, clip=wrap_clip(page))
    sample = step_sample(task, seed, k, instruction, history, shot, expected)
    row, completion, policy_seconds = ask(completer, sample, settings)
    record = make_record(row, sample.id, completion, settings.compat)
    action, failed = readable_action(completion, settings.compat, sample.space)
    page_point, performed, line = None, None, ""
    if action is not None:
        # act where the record says the answer points: the model frame mapped to the screenshot
        point = tuple(record["pred_coord"]) if action.action in POINT_ACTIONS else NO_POINT
        page_point, performed, line = act(page, Action(action.action, point, action.input_text), expected)
    done, raw = episode_state(page)
    path = settings.out / shot_path(task, seed, k)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(shot.png)
    record.update({"task": task, "seed": seed, "step": k, "screenshot": shot_path(task, seed, k),
                   "page_point": page_point, "performed": performed, "failed": failed, "done": done,
                   "raw_reward": raw, "seconds": round(time.perf_counter() - start, 4),
                   "policy_seconds": round(policy_seconds, 4)})
    # why the ground truth is missing or not a clean step (a target under another element)
    record["gt_note"] = "no scripted step here" if expected is None else expected.skipped
    if expected is None or expected.step is None:
        record.update(gt_action=None, gt_bbox=None, gt_input_text=None)
    return record, line


def ask(completer: Completer, sample: Sample, settings: Settings) -> tuple[EvalRow, str, float]:
    """The step's evaluation row, the policy's completion for it and the seconds the policy took."""
    row = to_eval_rows([sample], settings.min_pixels, settings.max_pixels)[0]
    image, _ = model_view(sample, settings.min_pixels, settings.max_pixels)
    asked = time.perf_counter()
    completion = completer.complete([row], [image], [sample.id], settings.max_new_tokens)
    seconds = time.perf_counter() - asked
    if len(completion) != 1:
        raise RuntimeError(f"{completer.name} returned {len(completion)} completions for one step")
    return row, completion[0], seconds


def step_sample(task: str, seed: int, k: int, instruction: str, history: Sequence[str], shot: Shot,
                expected: Expected | None) -> Sample:
    """The step as a benchmark row would hold it, with the scripted ground truth where there is one
    (else a no-target "complete" placeholder; the record then says the ground truth is unknown)."""
    step = expected.step if expected is not None else None
    kind = task_type(task)
    no_target = tuple(float(v) for v in NO_POINT)
    if step is None:
        gt_action, gt_bbox, gt_text = "complete", no_target, NO_TEXT
    else:
        gt_action, gt_bbox, gt_text = step.action, tuple(step.box) if step.box else no_target, step.input_text
    return Sample(id=step_id(task, seed, k), image_bytes=shot.png, image_size=(shot.width, shot.height),
                  instruction=instruction, history=history_text(history), gt_action=gt_action, gt_bbox=gt_bbox,
                  gt_input_text=gt_text, task_type=kind, group="miniwob",
                  ui_type=step.ui_type if step is not None else None, platform="miniwob", space=kind,
                  schema="benchmark")


def readable_action(completion: str, compat: str, space: str) -> tuple[Action | None, str | None]:
    """The action a completion asks for (its point in the model's frame), or None and why it cannot
    be done."""
    parsed = parse_completion(completion, compat)
    pred = parsed.prediction if parsed.answer is not None else None
    if pred is None:
        return None, parsed.error or "no <answer> block"
    if pred.action not in action_space(space):
        return None, f"action {pred.action!r} is not one of {list(action_space(space))}"
    if pred.action in POINT_ACTIONS and not parsed.point_read:
        return None, f"a {pred.action} without a point"
    text = pred.input_text.strip().lower()
    if pred.action in FREE_TEXT_ACTIONS and text in ("", NO_TEXT):
        return None, f"a {pred.action} without an input text"
    if pred.action == "scroll" and text not in SCROLL_DIRECTIONS:
        return None, f"scroll needs one of {list(SCROLL_DIRECTIONS)}, got {pred.input_text!r}"
    return pred, None


def act(page, action: Action, expected: Expected | None) -> tuple[list[float] | None, str, str]:
    """Do `action` (its point already in screenshot pixels) on the page. Returns the point clicked
    (CSS px of the viewport), what was done, and the line it adds to the history."""
    if action.action == "click":
        return _click(page, action, expected)
    text = action.input_text
    if action.action == "type":
        page.keyboard.type(text)
        same = expected is not None and expected.step is not None and expected.step.action == "type" \
            and expected.step.input_text == text
        return None, "typed", expected.history if same else f"type {quote(text)}"
    if action.action == "enter":
        page.keyboard.press("Enter")
        return None, "pressed Enter", "press enter"
    if action.action == "scroll":
        clip = wrap_clip(page)
        page.mouse.move(clip["x"] + clip["width"] / 2, clip["y"] + clip["height"] / 2)
        dx, dy = _WHEEL[text.strip().lower()]
        page.mouse.wheel(dx, dy)
        return None, f"scrolled {text}", f"scroll {text}"
    if action.action == "select":
        chosen = page.evaluate(_SELECT_JS, text)
        return None, "selected" if chosen else "nothing: no focused list holds that option", f"select {quote(text)}"
    # complete ends the episode; press_back, press_home and close/delete have no control on a task page
    return None, "nothing: the episode ends" if action.action == "complete" else "nothing: no such control", \
        action.action


def _click(page, action: Action, expected: Expected | None) -> tuple[list[float] | None, str, str]:
    clip = wrap_clip(page)
    x, y = float(action.point[0]), float(action.point[1])
    if not (0 <= x < clip["width"] * DPR and 0 <= y < clip["height"] * DPR):
        return None, "nothing: the point is off the screenshot", f"click at ({x:.0f}, {y:.0f})"
    px, py = clip["x"] + x / DPR, clip["y"] + y / DPR
    target = expected.step if expected is not None else None
    on_target = target is not None and target.box is not None and point_in_box((x, y), target.box, inclusive=True)
    line = expected.history if on_target else _describe_click(page, px, py)
    page.mouse.click(px, py)
    return [px, py], "click", line


def _describe_click(page, px: float, py: float) -> str:
    text = page.evaluate(_TEXT_AT_JS, [px, py])
    return f"click {quote(text)}" if text else "click the element"
