"""The ipywidgets prediction browser: step through prediction records, filter them, and see each
one's screenshot with its marks, parsed answer, thinking text and raw completion."""

from __future__ import annotations

import html
import io
from collections.abc import Sequence

from .draw import describe, image_for, outcome, prediction_image, thinking_text

_KEY_HTML = ("<div style='color:#555'>in the picture (original screenshot pixels): blue box = target, "
             "filled green circle = click that hit, orange cross = click that missed</div>")


class PredictionBrowser:
    """Filter prediction records by group, ui_type and outcome (hit / miss / format error) and step
    through them. `display(browser.widget)`."""

    OUTCOMES = ("all", "hit", "miss", "format error")

    def __init__(self, records: Sequence[dict], images, max_side: int = 520):
        import ipywidgets as w

        self.records = list(records)
        self.images = images
        self.max_side = max_side
        self._hits = [bool(outcome(r)["hit"]) for r in self.records]
        groups = sorted({str(r.get("group") or "") for r in self.records})
        ui_types = sorted({str(r.get("ui_type") or "") for r in self.records})
        self.group = w.Dropdown(options=["all"] + groups, value="all", description="group")
        self.ui_type = w.Dropdown(options=["all"] + ui_types, value="all", description="ui_type")
        self.outcome = w.ToggleButtons(options=list(self.OUTCOMES), value="all")
        self.index = w.IntSlider(min=0, max=0, value=0, description="#", continuous_update=False)
        self.prev = w.Button(description="◀ prev")
        self.next = w.Button(description="next ▶")
        self.image = w.Image(format="png")
        self.info = w.HTML()
        self.count = w.HTML()
        for control in (self.group, self.ui_type, self.outcome):
            control.observe(lambda _: self._refilter(), names="value")
        self.index.observe(lambda _: self._render(), names="value")
        self.prev.on_click(lambda _: self.step(-1))
        self.next.on_click(lambda _: self.step(1))
        self.widget = w.VBox([w.HBox([self.group, self.ui_type]), self.outcome,
                              w.HBox([self.prev, self.index, self.next, self.count]),
                              w.HBox([self.image, self.info])])
        self.filtered: list[int] = []
        self._refilter()

    def _keep(self, i: int) -> bool:
        r = self.records[i]
        if self.group.value not in ("all", str(r.get("group") or "")):
            return False
        if self.ui_type.value not in ("all", str(r.get("ui_type") or "")):
            return False
        wanted = {"hit": self._hits[i], "miss": not self._hits[i], "format error": bool(r.get("parse_error"))}
        return wanted.get(self.outcome.value, True)

    def _refilter(self) -> None:
        self.filtered = [i for i in range(len(self.records)) if self._keep(i)]
        self.index.max = max(0, len(self.filtered) - 1)
        self.index.value = 0
        self._render()

    def step(self, delta: int) -> None:
        """Move `delta` records through the filtered ones (wrapping around)."""
        if self.filtered:
            self.index.value = (self.index.value + delta) % len(self.filtered)

    @property
    def current(self) -> dict | None:
        """The record shown, or None when no record matches the filters."""
        return self.records[self.filtered[self.index.value]] if self.filtered else None

    def _render(self) -> None:
        rec = self.current
        count = f"{len(self.filtered)} of {len(self.records)} shown"
        if rec is None:
            self.image.value = b""
            self.info.value = "<i>no prediction matches the filters</i>"
            self.count.value = count
            return
        im = prediction_image(rec, image_for(self.images, rec))
        im.thumbnail((self.max_side, self.max_side))
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        self.image.value = buf.getvalue()
        lines = "".join(f"<div>{html.escape(s)}</div>" for s in describe(rec))
        think = html.escape(thinking_text(rec.get("completion", ""))) or "<i>(none)</i>"
        raw = html.escape(rec.get("completion", ""))
        self.info.value = (f"<div style='max-width:480px;font-size:12px'><b>{html.escape(str(rec['id']))}</b> "
                           f"({html.escape(str(rec.get('group', '')))} {html.escape(str(rec.get('ui_type', '')))})"
                           f"{lines}<div><b>thinking:</b> {think}</div>{_KEY_HTML}"
                           f"<details><summary>raw completion</summary><pre style='white-space:pre-wrap'>{raw}</pre>"
                           "</details></div>")
        self.count.value = count  # last: once the count reads right, the picture and the text are this row's


def browse(records: Sequence[dict], images, max_side: int = 520):
    """The widget of a `PredictionBrowser` over `records` (display it in a notebook)."""
    return PredictionBrowser(records, images, max_side).widget
