"""GUI-R1's prompt (spec §2), one template for every task type and benchmark, as chat messages with
the screenshot first (the form TRL and the Qwen2.5-VL chat template take)."""

from __future__ import annotations

from .actions import FREE_TEXT_ACTIONS, NO_TEXT, POINT_ACTIONS, SCROLL_DIRECTIONS, TEXT_ACTIONS, action_space
from .geometry import NO_POINT

# The original puts the image where "<image>" stands in "In this UI screenshot <image>, ..."; here
# the image is the first part of the message, so the words stay and the placeholder goes.
TEMPLATE = (
    "You are GUI-R1, a reasoning GUI Agent Assistant. In this UI screenshot, I want you to continue "
    "executing the command '{instruction}', with the action history being '{history}'.\n"
    "Please provide the action to perform (enumerate from {actions}), the point where the cursor is "
    "moved to (integer) if a click is performed, and any input text required to complete the action.\n"
    "Output the thinking process in <think> </think> tags, and the final answer in <answer> </answer> "
    "tags as follows:\n"
    "<think> ... </think> <answer>[{{'action': enum{actions}, 'point': [x, y], "
    "'input_text': 'no input text [default]'}}]</answer>"
)
NOTE = "\nNote:\n specific input text (no default) is necessary for actions enum{text_actions} \n Example:"
EXAMPLE = "\n[{{'action': enum{names}, 'point': {point}, 'input_text': {text}}}]"
LOW_LEVEL_EXAMPLE = "\nExample:\n[{'action': 'click', 'point': [123, 300], 'input_text': 'no input text'}]"
EXAMPLE_POINT = [123, 300]
EXAMPLE_TEXT = "shanghai shopping mall"
NO_HISTORY = "None"


def _examples(space: tuple[str, ...]) -> str:
    """One example answer per kind of action in `space` (no target, point, text, scroll)."""
    plain = [a for a in space if a not in POINT_ACTIONS and a not in TEXT_ACTIONS]
    pointed = [a for a in space if a in POINT_ACTIONS]
    texted = [a for a in space if a in FREE_TEXT_ACTIONS]
    lines = []
    if plain:
        lines.append(EXAMPLE.format(names=plain, point=list(NO_POINT), text=repr(NO_TEXT)))
    if pointed:
        lines.append(EXAMPLE.format(names=pointed, point=EXAMPLE_POINT, text=repr(NO_TEXT)))
    if texted:
        lines.append(EXAMPLE.format(names=texted, point=list(NO_POINT), text=repr(EXAMPLE_TEXT)))
    if "scroll" in space:
        directions = ["up", "left", "right", "down"]
        assert set(directions) == set(SCROLL_DIRECTIONS)
        lines.append(EXAMPLE.format(names=["scroll"], point=list(NO_POINT), text=f"enum{directions}"))
    return "".join(lines)


def prompt_text(instruction: str, history: str | None = None, task_type: str = "high",
                space: str | None = None) -> str:
    """The GUI-R1 prompt for one step of a `high` (multi-step) or `low` (grounding) task; `space` names
    another action space (a benchmark's)."""
    if task_type not in ("high", "low"):
        raise ValueError(f"task_type must be 'high' or 'low', got {task_type!r}")
    actions = action_space(space or task_type)
    hist = history if history not in (None, "", []) else NO_HISTORY
    text = TEMPLATE.format(instruction=instruction, history=hist, actions=list(actions))
    if actions == ("click",):
        return text + LOW_LEVEL_EXAMPLE
    text_actions = [a for a in actions if a in TEXT_ACTIONS]
    if text_actions:
        text += NOTE.format(text_actions=text_actions)
    else:
        text += "\nExample:"
    return text + _examples(actions)


def build_messages(instruction: str, history: str | None = None, task_type: str = "high",
                   space: str | None = None) -> list[dict]:
    """The prompt as one user turn: the image, then the text."""
    return [{
        "role": "user",
        "content": [{"type": "image"}, {"type": "text", "text": prompt_text(instruction, history, task_type, space)}],
    }]
