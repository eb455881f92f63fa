"""Desktop samples: the GTK3 text editor Mousepad (Debian `mousepad`) on a virtual X server
(Xvfb, 1280x800), with element boxes read from the AT-SPI accessibility tree (menus, menu
items, toolbar buttons, tabs, dialog buttons). Steps are performed with xdotool as they are
recorded, so each screenshot shows the state the previous step produced.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gui_r1_lite.geometry import box_center

from .common import (
    SYSTEM_PYTHON,
    CaptureDependencyError,
    Shot,
    Step,
    encode_png,
    quote,
    require_executable,
    write_steps,
)

APP = "mousepad"
SCREEN = (1280, 800)
DUMP_SCRIPT = Path(__file__).with_name("_atspi_dump.py")
AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
CLICK_ROLES = frozenset({"menu", "menu item", "check menu item", "radio menu item", "push button", "toggle button",
                         "page tab", "check box", "radio button", "combo box", "spin button", "text"})
GTK_SETTINGS = """[Settings]
gtk-cursor-blink=false
gtk-enable-animations=false
gtk-font-name=DejaVu Sans 10
gtk-theme-name=Adwaita
gtk-icon-theme-name=Adwaita
"""


def check_dependencies() -> None:
    """Raise a `CaptureDependencyError` naming the Debian package of the first missing piece."""
    require_executable("Xvfb", "xvfb", "Xvfb (virtual X server)")
    require_executable(APP, "mousepad", "Mousepad")
    require_executable("dbus-daemon", "dbus", "dbus-daemon")
    require_executable("xdotool", "xdotool", "xdotool")
    require_executable(AT_SPI_LAUNCHER, "at-spi2-core", "at-spi-bus-launcher")
    require_executable(SYSTEM_PYTHON, "python3", "Debian's python3")
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import pyatspi"], capture_output=True, text=True)
    if r.returncode != 0:
        raise CaptureDependencyError("pyatspi is not importable by /usr/bin/python3; install it with "
                                     "`apt-get install -y python3-pyatspi`")
    try:
        from PIL import ImageGrab

        ImageGrab.grab  # noqa: B018
    except ImportError:  # pragma: no cover
        raise CaptureDependencyError("Pillow with X11 support is needed for screenshots "
                                     "(`pip install pillow`)") from None


def mousepad_version() -> str:
    try:
        return "mousepad " + subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "mousepad"], capture_output=True,
                                            text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "mousepad"


def _free_display() -> int:
    for n in range(90, 200):
        if not os.path.exists(f"/tmp/.X{n}-lock") and not os.path.exists(f"/tmp/.X11-unix/X{n}"):
            return n
    raise RuntimeError("no free X display number between :90 and :199")


@dataclass
class Node:
    role: str
    name: str
    box: tuple[float, float, float, float]  # x1, y1, x2, y2 screen pixels
    states: tuple[str, ...]
    description: str = ""
    ancestors: tuple[str, ...] = ()  # roles of the enclosing elements, outermost first

    @property
    def label(self) -> str:
        return " ".join(self.name.split())


class XSession:
    """Xvfb + a private D-Bus session bus + the AT-SPI bus + Mousepad, torn down on exit."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.tmp = tempfile.TemporaryDirectory(prefix="gui_r1_capture_")
        self.display = f":{_free_display()}"
        home = Path(self.tmp.name)
        (home / "runtime").mkdir(mode=0o700)
        (home / "config" / "gtk-3.0").mkdir(parents=True)
        (home / "config" / "gtk-3.0" / "settings.ini").write_text(GTK_SETTINGS)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "DISPLAY": self.display, "XDG_RUNTIME_DIR": str(home / "runtime"),
            "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
            "XDG_CACHE_HOME": str(home / "cache"), "GSETTINGS_BACKEND": "memory",
            "GTK_A11Y": "atspi", "QT_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            "GDK_BACKEND": "x11", "GDK_SCALE": "1", "NO_AT_BRIDGE": "0", "GTK_OVERLAY_SCROLLING": "0",
        }

    def _start(self, args: Sequence[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(list(args), env=self.env, stdout=kw.pop("stdout", subprocess.DEVNULL),
                             stderr=subprocess.DEVNULL, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def __enter__(self) -> XSession:
        try:
            w, h = SCREEN
            self._start(["Xvfb", self.display, "-screen", "0", f"{w}x{h}x24", "-nolisten", "tcp", "-dpi", "96"])
            self._wait(lambda: subprocess.run(["xdotool", "getmouselocation"], env=self.env,
                                              capture_output=True).returncode == 0, "Xvfb")
            bus = self._start(["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE,
                              text=True)
            self.env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
            self._start([AT_SPI_LAUNCHER, "--launch-immediately"])
            time.sleep(1.0)
            self._start([APP])
            self._wait(lambda: self.dump()["found"] and any(n.role == "frame" for n in self.nodes()), "Mousepad")
            self.xdotool("search", "--sync", "--onlyvisible", "--class", "Mousepad", "windowsize", "--sync",
                         str(w), str(h))
            self.xdotool("mousemove", str(w - 1), str(h - 1))
            self.wait_idle()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        self.tmp.cleanup()

    def _wait(self, ok, what: str, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if ok():
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{what} did not come up within {timeout:.0f} s on display {self.display}")

    # --- reading ---------------------------------------------------------------------------

    def dump(self) -> dict:
        r = subprocess.run([SYSTEM_PYTHON, str(DUMP_SCRIPT), APP], env=self.env, capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"AT-SPI dump failed: {r.stderr[-2000:]}")
        return json.loads(r.stdout)

    def nodes(self) -> list[Node]:
        out = []
        raw = self.dump()["nodes"]
        roles = {n["path"]: n["role"] for n in raw}
        for n in raw:
            parts = n["path"].split("/")
            ancestors = tuple(roles.get("/".join(parts[:i]), "") for i in range(1, len(parts)))
            if not n["box"]:
                continue
            x, y, w, h = n["box"]
            if w <= 0 or h <= 0 or x < -1000 or y < -1000:
                continue
            out.append(Node(n["role"], n["name"], (float(x), float(y), float(x + w), float(y + h)),
                            tuple(n["states"]), n.get("description", ""), ancestors))
        return out

    def targets(self) -> list[Node]:
        """Showing, sensitive, named elements a user can click, inside the screen."""
        w, h = SCREEN
        out = []
        for n in self.nodes():
            if n.role not in CLICK_ROLES or "showing" not in n.states or "visible" not in n.states:
                continue
            if n.role != "text" and "sensitive" not in n.states:
                continue
            x1, y1, x2, y2 = n.box
            if x1 < 0 or y1 < 0 or x2 > w or y2 > h or x2 - x1 < 4 or y2 - y1 < 4:
                continue
            out.append(n)
        return out

    def find(self, name: str, roles: Sequence[str] | None = None) -> Node:
        for n in self.targets():
            if n.label == name and (roles is None or n.role in roles):
                return n
        names = sorted({(n.role, n.label) for n in self.targets()})
        raise RuntimeError(f"no showing element named {name!r} (roles {roles}); showing: {names}")

    def shot(self) -> Shot:
        from PIL import ImageGrab

        self.wait_idle()
        return encode_png(ImageGrab.grab(xdisplay=self.display))

    # --- acting ----------------------------------------------------------------------------

    def xdotool(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], env=self.env, check=True, capture_output=True, timeout=30)

    def click(self, node: Node) -> None:
        x, y = box_center(node.box)
        self.xdotool("mousemove", "--sync", str(round(x)), str(round(y)), "click", "1")
        # park the pointer in a corner where it neither hovers a widget nor shows in the next shot
        self.xdotool("mousemove", str(SCREEN[0] - 1), str(SCREEN[1] - 1))
        self.wait_idle()

    def type(self, text: str) -> None:
        self.xdotool("type", "--delay", "30", text)
        self.wait_idle()

    def key(self, *keys: str) -> None:
        self.xdotool("key", *keys)
        self.wait_idle()

    def wait_idle(self, pause: float = 0.6) -> None:
        time.sleep(pause)


@contextlib.contextmanager
def session() -> Iterator[XSession]:
    check_dependencies()
    with XSession() as s:
        yield s


# --- what is recorded ------------------------------------------------------------------------

ICON_ROLES = frozenset({"push button", "toggle button"})
ROLE_WORDS = {"menu": "menu", "check box": "checkbox", "page tab": "tab", "radio button": "option",
              "push button": "button", "toggle button": "button"}
EDITOR = "the text editing area"


def _clean(name: str) -> str:
    name = " ".join(name.split())
    return name[:-3] if name.endswith("...") else name.rstrip("…")


def ui_type_of(n: Node) -> str:
    """Toolbar buttons show only an icon; the editor shows no text until typed into."""
    if n.role == "text" or (n.role in ICON_ROLES and "tool bar" in n.ancestors):
        return "icon"
    return "text"


def instruction_for(n: Node) -> str:
    if n.role == "text":
        return f"Click on {EDITOR}"
    name = quote(_clean(n.label))
    if ui_type_of(n) == "icon":
        return f"Click on the {name} icon"
    word = ROLE_WORDS.get(n.role)
    if n.role in ("menu item", "check menu item", "radio menu item") or word is None:
        return f"Click on {name}"
    return f"Click on the {name} {word}"


def describe(n: Node) -> str:
    return f"click {EDITOR}" if n.role == "text" else f"click {quote(_clean(n.label))}"


class Recorder:
    """Records steps on a live session; ids are `desktop/<scenario>/<part>`."""

    def __init__(self, s: XSession, scenario: str, split: str):
        self.s, self.scenario, self.split = s, scenario, split
        self.steps: list[Step] = []

    def clickable(self, roles: Sequence[str] | None = None, exclude: Sequence[str] = ()) -> list[Node]:
        ts = [n for n in self.s.targets() if (roles is None or n.role in roles)]
        ts = [n for n in ts if (n.label or n.role == "text") and n.label not in exclude]
        labels = [(n.role == "text", n.label) for n in ts]
        return [n for n in ts if labels.count((n.role == "text", n.label)) == 1]

    def low(self, part: str, nodes: Sequence[Node], k: int | None = None) -> None:
        """Single-click rows for a sample of `nodes` on the current screen (nothing is clicked)."""
        nodes = list(nodes)
        if k is not None and len(nodes) > k:
            nodes = random.Random(f"desktop/{self.scenario}/{part}").sample(nodes, k)
        shot = self.s.shot()
        for i, n in enumerate(sorted(nodes, key=lambda n: (n.box[1], n.box[0]))):
            self.steps.append(Step(id=f"desktop/{self.scenario}/{part}/click{i}", platform="desktop",
                                   split=self.split, instruction=instruction_for(n), task_type="low",
                                   action="click", shot=shot, box=n.box, ui_type=ui_type_of(n)))

    def task(self, part: str, instruction: str) -> DesktopTask:
        return DesktopTask(self, part, instruction)


class DesktopTask:
    def __init__(self, rec: Recorder, part: str, instruction: str):
        self.rec, self.part, self.instruction = rec, part, instruction
        self.history: list[str] = []

    def _add(self, action: str, text: str, **kw) -> None:
        rec = self.rec
        k = sum(1 for st in rec.steps if st.id.startswith(f"desktop/{rec.scenario}/{self.part}/"))
        rec.steps.append(Step(id=f"desktop/{rec.scenario}/{self.part}/step{k}", platform="desktop", split=rec.split,
                              instruction=self.instruction, task_type="high", action=action, shot=rec.s.shot(),
                              history=list(self.history), **kw))
        self.history.append(text)

    def click(self, name: str, roles: Sequence[str] | None = None) -> None:
        n = self.rec.s.find(name, roles)
        self._add("click", describe(n), box=n.box, ui_type=ui_type_of(n))
        self.rec.s.click(n)

    def click_editor(self) -> None:
        n = next(n for n in self.rec.s.targets() if n.role == "text" and "page tab" in n.ancestors)
        self._add("click", describe(n), box=n.box, ui_type="icon")
        self.rec.s.click(n)

    def type(self, text: str) -> None:
        self._add("type", f"type {quote(text)}", input_text=text)
        self.rec.s.type(text)

    def enter(self) -> None:
        self._add("enter", "press enter")
        self.rec.s.key("Return")

    def complete(self) -> None:
        self._add("complete", "complete")


MENU_ITEMS = ("menu item", "check menu item", "radio menu item", "menu")
MENUBAR = ("File", "Edit", "Search", "View", "Document", "Help")


def _menu_items(rec: Recorder) -> list[Node]:
    return [n for n in rec.clickable(MENU_ITEMS) if n.label not in MENUBAR]


def scenario_main(s: XSession) -> list[Step]:
    """Training: the main window, the toolbar, the File and Search menus; show the toolbar,
    type into the document, find a word."""
    rec = Recorder(s, "main", "train")
    rec.low("window", [n for n in rec.clickable(["menu"]) if n.label in ("File", "Search", "View", "Help")])
    t = rec.task("show-toolbar", "Show the toolbar")
    t.click("View", ["menu"])
    t.click("Toolbar", MENU_ITEMS)
    t.complete()
    rec.low("toolbar", [n for n in rec.clickable(ICON_ROLES) if "tool bar" in n.ancestors], k=6)
    s.click(s.find("File", ["menu"]))
    rec.low("file-menu", _menu_items(rec), k=6)
    s.key("Escape")
    t = rec.task("type-text", "Type 'Hello from Mousepad' into the document")
    t.click_editor()
    t.type("Hello from Mousepad")
    t.complete()
    s.click(s.find("Search", ["menu"]))
    rec.low("search-menu", _menu_items(rec), k=6)
    s.key("Escape")
    t = rec.task("find-word", "Find the word 'Mousepad' in the document")
    t.click("Search", ["menu"])
    t.click("Find", MENU_ITEMS)
    t.type("Mousepad")
    t.enter()
    t.complete()
    return rec.steps


def scenario_edit(s: XSession) -> list[Step]:
    """Held out: type into a fresh document, the Edit, Document and Help menus, line numbers,
    the Go to dialog."""
    rec = Recorder(s, "edit", "test")
    t = rec.task("type-text", "Type 'Meeting notes' into the document")
    t.click_editor()
    t.type("Meeting notes")
    t.complete()
    for menu in ("Edit", "Document", "Help"):
        s.click(s.find(menu, ["menu"]))
        rec.low(f"{menu.lower()}-menu", _menu_items(rec), k=5)
        s.key("Escape")
    t = rec.task("line-numbers", "Turn on line numbers")
    t.click("View", ["menu"])
    t.click("Line Numbers", MENU_ITEMS)
    t.complete()
    t = rec.task("goto-cancel", "Open the 'Go to' dialog, then cancel it")
    t.click("Search", ["menu"])
    t.click("Go to...", MENU_ITEMS)
    t.click("Cancel", ["push button"])
    t.complete()
    return rec.steps


def scenario_preferences(s: XSession) -> list[Step]:
    """Held out: with the toolbar shown, open Preferences and tick a checkbox; toolbar icons,
    preference tabs and checkboxes on that screen."""
    rec = Recorder(s, "preferences", "test")
    s.click(s.find("View", ["menu"]))  # set-up, not recorded
    s.click(s.find("Toolbar", MENU_ITEMS))
    t = rec.task("highlight-line", "Turn on 'Highlight current line' in the preferences")
    t.click("Edit", ["menu"])
    t.click("Preferences...", MENU_ITEMS)
    t.click("Highlight current line", ["check box"])
    t.complete()
    rec.low("dialog", rec.clickable(["page tab", "check box"]), k=6)
    rec.low("toolbar", [n for n in rec.clickable(ICON_ROLES) if "tool bar" in n.ancestors], k=4)
    return rec.steps


SCENARIOS = (scenario_main, scenario_edit, scenario_preferences)


def capture(scenarios=SCENARIOS) -> list[Step]:
    """Every desktop row: each scenario in a fresh Xvfb + Mousepad session."""
    steps: list[Step] = []
    for sc in scenarios:
        with session() as s:
            steps += sc(s)
    return steps


def write(out_dir: str | os.PathLike) -> dict:
    """Capture and write `out/train/desktop.parquet` and the desktop rows of `out/test/realgui_test.parquet`."""
    steps = capture()
    files = write_steps(steps, out_dir, "desktop", "realgui_test", group="desktop")
    return {"app": mousepad_version(), "files": files}
