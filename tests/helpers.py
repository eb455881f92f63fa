"""Row and file builders shared by several test modules: GUI-R1 training rows (good and bad) and
small benchmark-schema parquet files; and the faults a run folder meets (another process holding it,
a full disk). Test modules import these from here, never from each other."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

#: The cpu-mini profile's processor bounds: the smallest model frame, the hardest round trip.
MINI = {"min_pixels": 28 * 28 * 16, "max_pixels": 28 * 28 * 64}
#: The "no target" point of actions without coordinates.
NO_TARGET = [-100.0, -100.0]


def png(w: int = 200, h: int = 100, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A plain one-colour PNG."""
    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format="PNG")
    return buf.getvalue()


def screenshot_png(w: int, h: int, seed: int) -> bytes:
    """A PNG with six coloured boxes on grey, different for each seed (a stand-in screenshot)."""
    im = Image.new("RGB", (w, h), (235, 235, 235))
    d = ImageDraw.Draw(im)
    rng = random.Random(seed)
    for _ in range(6):
        x, y = rng.randrange(w - 60), rng.randrange(h - 40)
        d.rectangle([x, y, x + 60, y + 30], fill=(rng.randrange(256), 90, 160))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def train_row(i: int, **over) -> dict:
    """A valid low-level click row of the GUI-R1 training schema; `over` replaces columns."""
    row = {"image": {"bytes": png(), "path": f"{i}.png"}, "instruction": f"click button {i}", "history": "None",
           "task_type": "low", "gt_action": "click", "gt_bbox": [0.1, 0.2, 0.3, 0.4],
           "gt_input_text": "no input text", "id": f"r{i}"}
    row.update(over)
    return row


BAD = {  # name -> (overrides, column that must be named, words in the message)
    "undecodable": ({"image": {"bytes": b"not a png", "path": "x.png"}}, "image", "do not decode"),
    "outside": ({"gt_bbox": [0.5, 0.5, 1.2, 0.9]}, "gt_bbox", "outside"),
    "nan": ({"gt_bbox": [float("nan"), 0.1, 0.2, 0.3]}, "gt_bbox", "NaN"),
    "zero_area": ({"gt_bbox": [0.2, 0.2, 0.2, 0.4]}, "gt_bbox", "zero area"),
    "reversed": ({"gt_bbox": [0.5, 0.2, 0.3, 0.4]}, "gt_bbox", "x2 < x1"),
    "not_in_space": ({"gt_action": "teleport", "task_type": "high"}, "gt_action", "not in the 'high' action space"),
    "low_not_click": ({"gt_action": "type", "gt_input_text": "x"}, "gt_action", "not in the 'low' action space"),
    "type_no_text": ({"gt_action": "type", "task_type": "high", "gt_bbox": NO_TARGET}, "gt_input_text",
                     "needs an input text"),
    "scroll_no_text": ({"gt_action": "scroll", "task_type": "high", "gt_bbox": NO_TARGET}, "gt_input_text",
                       "needs an input text"),
    "click_no_box": ({"gt_bbox": NO_TARGET}, "gt_bbox", "needs a target"),
    "empty_instruction": ({"instruction": "  "}, "instruction", "non-empty"),
    "bad_task_type": ({"task_type": "medium"}, "task_type", "'high' or 'low'"),
}


def _screenspot_rows() -> list[dict]:
    rows = []
    for i in range(8):
        w, h = (540, 1170) if i % 2 else (1280, 720)
        x, y = 40 + 37 * i, 50 + 23 * i
        rows.append({"image": {"bytes": screenshot_png(w, h, i), "path": f"{i}.png"},
                     "instruction": f"click the item {i}", "history": "None", "gt_action": "click",
                     "gt_bbox": [x, y, x + 30.0 + i, y + 14.0], "gt_input_text": "no input text",
                     "group": ["mobile", "web"][i % 2], "ui_type": ["text", "icon"][(i // 2) % 2]})
    return rows


def _androidcontrol_rows() -> list[dict]:
    steps = [("click", [30.0, 40.0, 110.0, 72.0], "no input text"), ("type", NO_TARGET, "hello world"),
             ("scroll", NO_TARGET, "down"), ("press_back", NO_TARGET, "no input text"),
             ("long_press", [300.0, 500.0], "no input text"), ("open_app", NO_TARGET, "Gmail"),
             ("wait", NO_TARGET, "no input text"), ("click", [200.0, 900.0, 260.0, 930.0], "no input text")]
    return [{"image": {"bytes": screenshot_png(540, 1170, 100 + i), "path": f"a{i}.png"},
             "instruction": f"do the {a} step", "history": "Step 1: open the app.", "gt_action": a, "gt_bbox": b,
             "gt_input_text": t, "group": "android", "ui_type": ""} for i, (a, b, t) in enumerate(steps)]


def write_benchmark_files(folder: Path) -> list[Path]:
    """Two small benchmark-schema files: a ScreenSpot-like grounding file (4-value pixel boxes,
    two groups and ui_types, two image sizes) and an AndroidControl-like file (every kind of step)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "screenspot_test.parquet", folder / "androidcontrol_low_test.parquet"]
    pq.write_table(pa.Table.from_pylist(_screenspot_rows()), paths[0])
    pq.write_table(pa.Table.from_pylist(_androidcontrol_rows()), paths[1])
    return paths


_HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, f"{os.getpid()}\\n".encode())
print("held", flush=True)
sys.stdin.read()
"""


def hold_lock(folder: Path) -> subprocess.Popen:
    """Another process holding `folder`'s run lock (`folder/.lock`, `fcntl.flock`), as a run writing
    the folder does; stop it with `.kill()` (its pid stays in the file, its lock goes)."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(folder / ".lock")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def full_disk_for(monkeypatch, name: str, after: int = 0) -> None:
    """From the `after`+1-th time on, a file called `name` opened for writing (through `Path.open`) is
    /dev/full: every write to it fails as on a full disk (ENOSPC, from the kernel)."""
    real = Path.open
    seen = []

    def opening(self, mode="r", *args, **kwargs):
        if self.name == name and "r" not in mode:
            seen.append(self)
            if len(seen) > after:
                return real(Path("/dev/full"), mode.replace("a", "w"), *args, **kwargs)
        return real(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", opening)


#: tests/train_probe: a sitecustomize that slows or records a training child (GUI_R1_PROBE_* variables).
PROBE = Path(__file__).resolve().parent / "train_probe"


def probe_env(**probe: str) -> dict[str, str]:
    """A training child's environment, with `tests/train_probe` on its path and the given probe settings."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONUNBUFFERED": "1", **probe}
    for name in ("GUI_R1_PROBE_STEP_SLEEP", "GUI_R1_PROBE_DIR"):
        if name not in probe:
            env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROBE), os.environ.get("PYTHONPATH")) if p)
    return env
