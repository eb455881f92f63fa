"""Web and mobile samples: Debian's Python documentation (`python3-doc` HTML) served on
127.0.0.1 and rendered by headless Chromium, as a 1280x800 desktop page (DPR 1) or a 412x915
phone page (DPR 2.625, `is_mobile`). Single clicks on visible links, buttons and fields
(task_type "low") and multi-step tasks (search the docs, follow links, scroll, go back;
task_type "high") whose steps are performed in the browser as they are recorded.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import http.server
import os
import random
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gui_r1_lite.geometry import box_center

from .common import CaptureDependencyError, Step, quote, write_steps

DOC_GLOBS = ("/usr/share/doc/python3-doc/html", "/usr/share/doc/python3*/html")

# Pages for single-click rows: training pages and held-out (realgui test) pages are disjoint.
DESKTOP_PAGES = {
    "train": ("index.html", "tutorial/index.html", "library/index.html", "reference/index.html",
              "glossary.html", "library/json.html", "library/os.path.html", "howto/index.html",
              "tutorial/introduction.html", "using/index.html"),
    "test": ("faq/index.html", "library/functions.html", "tutorial/controlflow.html", "library/re.html",
             "installing/index.html", "library/pathlib.html", "whatsnew/index.html"),
}
MOBILE_PAGES = {
    "train": ("index.html", "tutorial/index.html"),
    "test": ("library/index.html",),
}
TEXT_PER_PAGE = {"web": 6, "mobile": 4}
ICONS_PER_PAGE = 2
ICON_REPEATS = 2
MAX_NAME = 50

# Multi-step tasks. search: (query,); navigate: (start page, first link, second link);
# back: (start page, link).
DESKTOP_TASKS = {
    "train": (("search", "json"), ("search", "decorator"), ("search", "list comprehension"),
              ("navigate", "index.html", "Tutorial", "4. More Control Flow Tools"),
              ("navigate", "index.html", "Library Reference", "Built-in Functions"),
              ("navigate", "index.html", "Python HOWTOs", "Logging HOWTO"),
              ("back", "index.html", "Python Setup and Usage"),
              ("back", "tutorial/index.html", "Python/C API Reference Manual")),
    "test": (("search", "pathlib"), ("search", "generator expression"),
             ("navigate", "index.html", "Language Reference", "6. Expressions"),
             ("navigate", "index.html", "FAQs", "Programming FAQ"),
             ("back", "index.html", "FAQs")),
}
MOBILE_TASKS = {
    "train": (("search", "asyncio"), ("menu", "index.html", "Download these documents")),
    "test": (("search", "sqlite3"),),
}


def docs_root() -> Path:
    """The HTML folder of Debian's `python3-doc`."""
    for pattern in DOC_GLOBS:
        for d in sorted(glob.glob(pattern)):
            if os.path.isfile(os.path.join(d, "index.html")):
                return Path(d).resolve()
    raise CaptureDependencyError("Python documentation HTML not found under /usr/share/doc/python3*/html; "
                                 "install it with `apt-get install -y python3-doc`")


def docs_version() -> str:
    """Debian package version of the docs, e.g. `python3.11-doc 3.11.2-6+deb12u9`."""
    root = docs_root()
    pkg = root.parent.name  # e.g. python3.11-doc
    try:
        v = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True,
                           check=True).stdout.strip()
        return f"{pkg} {v}"
    except (OSError, subprocess.CalledProcessError):
        return pkg


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve `root` over HTTP on 127.0.0.1 (a free port) so the docs' search page can load its
    index; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: D102
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Session:
    """One browser page on the docs, recording steps as they are performed."""

    page: object
    base: str
    platform: str  # "web" or "mobile"

    @property
    def dpr(self) -> float:
        return float(self.page.evaluate("devicePixelRatio"))

    def open(self, path: str) -> None:
        self.page.goto(self.base + path, wait_until="load")
        self.settle()

    def settle(self) -> None:
        self.page.wait_for_load_state("load")
        self.page.evaluate("document.fonts.ready.then(() => true)")
        self.page.wait_for_timeout(150)
        # CSS transitions (the phone menu slides in) must finish before the screenshot
        self.page.wait_for_function(
            "() => document.getAnimations().every(a => a.playState !== 'running')", timeout=10_000)

    def shot(self):
        from .browser import screenshot

        return screenshot(self.page)

    def targets(self):
        from .browser import targets

        return [t for t in targets(self.page) if t.kind in ("link", "button", "field")]

    def find(self, name: str, kind: str | None = None):
        """The visible target called `name` (exact, then case-insensitive); None if absent."""
        ts = [t for t in self.targets() if kind is None or t.kind == kind]
        for t in ts:
            if t.name == name:
                return t
        for t in ts:
            if t.name.lower() == name.lower():
                return t
        return None

    def click(self, target) -> None:
        cx, cy = box_center(target.box)
        dpr = self.dpr
        press = self.page.touchscreen.tap if self.platform == "mobile" else self.page.mouse.click
        if target.kind == "link" and target.href and not target.href.startswith("#"):
            with self.page.expect_navigation(wait_until="load"):
                press(cx / dpr, cy / dpr)
        else:
            press(cx / dpr, cy / dpr)
        self.settle()


def instruction_for(t) -> str:
    """Low-level instruction of a target: "Click on 'Tutorial'" and the like."""
    if t.ui_type == "icon":
        return f"Click on the {quote(t.label)} icon"
    if t.kind == "field":
        return f"Click on the {quote(t.label or t.text)} field"
    if t.kind == "button":
        return f"Click on the {quote(t.text)} button"
    return f"Click on {quote(t.text)}"


def low_level_steps(s: Session, pages: Sequence[str], split: str) -> list[Step]:
    """Single-click rows: per page, a fixed sample of uniquely named text targets plus icons."""
    steps = []
    icon_uses: dict[str, int] = {}
    for path in pages:
        s.open(path)
        shot = s.shot()
        ts = [t for t in s.targets() if t.name and 2 <= len(t.name) <= MAX_NAME]
        names = [t.name.lower() for t in ts]
        # a name that two visible targets share would make the instruction ambiguous
        unique = [t for t in ts if names.count(t.name.lower()) == 1]
        texts = [t for t in unique if t.ui_type == "text"]
        # the same icon (e.g. the sidebar toggle) recurs on every page: use each at most twice a split
        icons = [t for t in unique if t.ui_type == "icon" and icon_uses.get(t.label, 0) < ICON_REPEATS]
        icons = icons[:ICONS_PER_PAGE]
        for t in icons:
            icon_uses[t.label] = icon_uses.get(t.label, 0) + 1
        rng = random.Random(f"{s.platform}/{path}")
        chosen = rng.sample(texts, min(TEXT_PER_PAGE[s.platform], len(texts))) + icons
        slug = path.removesuffix(".html").replace("/", "-")
        for k, t in enumerate(sorted(chosen, key=lambda t: (t.box[1], t.box[0]))):
            steps.append(Step(id=f"{s.platform}/{slug}/click{k}", platform=s.platform, split=split,
                              instruction=instruction_for(t), task_type="low", action="click", shot=shot,
                              box=t.box, ui_type=t.ui_type))
    return steps


class _Task:
    """Collects the steps of one multi-step task (shared instruction, growing history)."""

    def __init__(self, s: Session, task_id: str, split: str, instruction: str):
        self.s, self.id, self.split, self.instruction = s, task_id, split, instruction
        self.history: list[str] = []
        self.steps: list[Step] = []

    def _add(self, action: str, describe: str, **kw) -> None:
        self.steps.append(Step(id=f"{self.id}/step{len(self.steps)}", platform=self.s.platform, split=self.split,
                               instruction=self.instruction, task_type="high", action=action, shot=self.s.shot(),
                               history=list(self.history), **kw))
        self.history.append(describe)

    def click(self, name: str, kind: str | None = None, describe: str | None = None) -> None:
        t = self.s.find(name, kind)
        if t is None:
            raise RuntimeError(f"{self.id}: no visible target named {name!r} on {self.s.page.url}")
        self._add("click", describe or f"click {quote(t.name)}", box=t.box, ui_type=t.ui_type)
        self.s.click(t)

    def click_search_field(self) -> None:
        t = next((t for t in self.s.targets() if t.kind == "field" and t.label == "Quick search"), None)
        if t is None:
            raise RuntimeError(f"{self.id}: no search field on {self.s.page.url}")
        self._add("click", "click the search box", box=t.box, ui_type=t.ui_type)
        self.s.click(t)

    def type(self, text: str) -> None:
        self._add("type", f"type {quote(text)}", input_text=text, ui_type="text")
        self.s.page.keyboard.type(text)

    def enter(self) -> None:
        self._add("enter", "press enter")
        with self.s.page.expect_navigation(wait_until="load"):
            self.s.page.keyboard.press("Enter")
        self.s.settle()

    def scroll_down(self) -> None:
        self._add("scroll", "scroll down", input_text="down")
        # 60 % of a screen, instantly (a wheel event would scroll smoothly over several frames)
        self.s.page.evaluate("window.scrollBy({top: Math.round(innerHeight * 0.6), behavior: 'instant'})")
        self.s.settle()

    def back(self) -> None:
        self._add("press_back", "go back")
        self.s.page.go_back(wait_until="load")
        self.s.settle()

    def complete(self) -> None:
        self._add("complete", "complete")


def _wait_search(s: Session) -> None:
    s.page.wait_for_function(
        "() => { const e = document.querySelector('#search-results .search-summary');"
        " return e && /found/.test(e.textContent); }", timeout=60_000)
    s.settle()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def task_steps(s: Session, spec: tuple, split: str, index: int) -> list[Step]:
    kind = spec[0]
    if kind == "search":
        query = spec[1]
        t = _Task(s, f"{s.platform}/task/search-{_slug(query)}", split,
                  f"Search the Python documentation for {quote(query)}")
        s.open("index.html")
        t.click_search_field()
        t.type(query)
        t.enter()
        _wait_search(s)
        t.complete()
    elif kind == "navigate":
        start, first, second = spec[1:]
        t = _Task(s, f"{s.platform}/task/open-{_slug(second)}", split,
                  f"Go to {quote(first)} and open {quote(second)}")
        s.open(start)
        t.click(first)
        for _ in range(4):
            if s.find(second) is not None:
                break
            t.scroll_down()
        t.click(second)
        t.complete()
    elif kind == "back":
        start, link = spec[1:]
        t = _Task(s, f"{s.platform}/task/back-from-{_slug(link)}", split,
                  f"Open {quote(link)}, then go back to the previous page")
        s.open(start)
        t.click(link)
        t.back()
        t.complete()
    elif kind == "menu":
        start, link = spec[1:]
        t = _Task(s, f"{s.platform}/task/menu-{_slug(link)}", split,
                  f"Open the menu and go to {quote(link)}")
        s.open(start)
        t.click("Menu", describe="open the menu")
        t.click(link)
        t.complete()
    else:
        raise ValueError(f"unknown task kind {kind!r}")
    return t.steps


def capture(platform: str = "web") -> list[Step]:
    """Every low-level and multi-step row of one platform ("web" or "mobile"), both splits."""
    from .browser import chromium, new_page

    if platform not in ("web", "mobile"):
        raise ValueError(f"platform must be 'web' or 'mobile', got {platform!r}")
    pages = DESKTOP_PAGES if platform == "web" else MOBILE_PAGES
    tasks = DESKTOP_TASKS if platform == "web" else MOBILE_TASKS
    root = docs_root()
    steps: list[Step] = []
    with serve(root) as base, chromium() as browser:
        for split in ("train", "test"):
            s = Session(new_page(browser, mobile=platform == "mobile"), base, platform)
            steps += low_level_steps(s, pages[split], split)
            for i, spec in enumerate(tasks[split]):
                s = Session(new_page(browser, mobile=platform == "mobile"), base, platform)
                steps += task_steps(s, spec, split, i)
    return steps


def write(out_dir: str | os.PathLike, platform: str = "web") -> dict:
    """Capture and write `out/train/<platform>.parquet` and this platform's rows of
    `out/test/realgui_test.parquet`."""
    steps = capture(platform)
    return {"docs": docs_version(), "files": write_steps(steps, out_dir, platform, "realgui_test", group=platform)}
