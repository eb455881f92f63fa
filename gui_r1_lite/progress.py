"""Progress. Package code appends records (stage, step k of n) to the file named by
`$GUI_R1_LITE_PROGRESS` (`report`), and the main job turns them into a terminal line per stage change
and every ~30 s, with the time spent and an estimate of what is left (`watch`). A loop a person
watches shows a bar on request (`bar`)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .runio import append_jsonl, is_main_process

#: Names the progress file; the notebook's kernel inherits it from the main job.
PROGRESS_ENV = "GUI_R1_LITE_PROGRESS"


def progress_file() -> Path | None:
    """None outside a job (a notebook run by hand)."""
    value = os.environ.get(PROGRESS_ENV)
    return Path(value) if value else None


def report(stage: str, event: str = "step", **fields: object) -> None:
    """Append a record for `stage` (e.g. "seed 0 · warm_train") to the progress file, from the main
    process of a job only. `event` is "start" (fields: `index`/`total` among its run's stages, `steps`,
    `count_lines`: a file whose line count is the step), "step" (`step` of `steps`) or "end" (`seconds`)."""
    path = progress_file()
    if path is None or not is_main_process():
        return
    with contextlib.suppress(OSError):  # progress is a courtesy: it never stops the work it reports
        append_jsonl(path, {"t": time.time(), "stage": stage, "event": event, **fields})


@contextlib.contextmanager
def bar(total: int, desc: str, show: bool, done: int = 0) -> Iterator[Callable[[int], object]]:
    """A tqdm bar drawn only when `show`, `done` items finished before (a resumed run); yields
    `advance(n)`. It goes away when the loop ends: the loop's own results say what it did."""
    from tqdm.auto import tqdm

    with tqdm(total=total, initial=done, desc=desc, disable=not show, leave=False) as shown:
        yield shown.update


def clock(seconds: float) -> str:
    """A duration as `1h02m`, `4m05s` or `12s`."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _count_lines(path: str) -> int | None:
    try:
        with open(path, "rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return None


@dataclass
class Stage:
    name: str
    started: float
    index: int = 0
    total: int = 0
    steps: int | None = None
    count_lines: str | None = None
    first: tuple[float, int] | None = None  # (time, step) of the first step seen: the rate excludes loading
    last: tuple[float, int] | None = None

    def step(self) -> tuple[float, int] | None:
        """The latest (time, step): from the step records or, for a counted file, its lines now."""
        if self.count_lines:
            n = _count_lines(self.count_lines)
            return None if n is None else (time.time(), n)
        return self.last

    def left(self) -> float | None:
        """Seconds left in this stage at the rate of its steps so far, None while unknown."""
        now = self.step()
        if now is None or not self.steps:
            return None
        t0, k0 = self.first if self.first and not self.count_lines else (self.started, 0)
        t, k = now
        if k <= k0 or t <= t0:
            return None
        return (t - t0) / (k - k0) * max(0, self.steps - k)

    def brief(self) -> str:
        """`seed 1 · warm_train step 12/200` (the name alone while no step is known)."""
        got = self.step()
        return f"{self.name} step {min(got[1], self.steps)}/{self.steps}" if got and self.steps else self.name


@dataclass
class ProgressView:
    """Progress records folded into a status line for the notebook `label`. Numbered stages
    (`index`/`total`, e.g. seeds) may run side by side: the line follows the one started last and
    names the others."""

    label: str
    started: float = field(default_factory=time.time)
    stage: Stage | None = None
    durations: list[float] = field(default_factory=list)  # of the finished stages that ran (not cached)
    running: dict[str, Stage] = field(default_factory=dict)  # started and not yet ended, by name
    numbers: set[int] = field(default_factory=set)  # the numbers (`index`) of the stages started
    side_by_side: bool = False  # whether numbered stages have run at the same time

    def add(self, rec: dict) -> bool:
        """Take one record; True when it starts a new stage (a line is due)."""
        name, t, event = str(rec.get("stage", "")), float(rec.get("t", time.time())), rec.get("event", "step")
        if event == "end":
            ended = self.running.pop(name, None)
            if ended is not None:
                self.durations.append(float(rec.get("seconds", t - ended.started)))
            if self.stage is not None and self.stage.name == name and self.running:
                self.stage = max(self.running.values(), key=lambda s: s.started)
            return False
        st = self.running.get(name)
        new = st is None or event == "start"
        if new:
            st = Stage(name, t, int(rec.get("index") or 0), int(rec.get("total") or 0), rec.get("steps"),
                       rec.get("count_lines"))
            # only stages numbered among a run's stages run side by side; any other ends when the next begins
            self.running = {k: v for k, v in self.running.items() if v.total and k != name}
            self.running[name] = self.stage = st
            self.numbers |= {st.index} if st.total else set()
            self.side_by_side |= sum(1 for v in self.running.values() if v.total) > 1
        if "step" in rec:
            st.steps = rec.get("steps", st.steps)
            point = (t, int(rec["step"]))
            st.first = st.first or point
            st.last = point
        return new

    def line(self, now: float | None = None, cell: str | None = None) -> str:
        """`[pipeline] <notebook> 6m12s · cell 9/13 · stage 5/7 seed 0 · sft_grpo_train: step 30/60,
        1m02s in stage, ~40s left · ~3m10s left in 2 more stages`; with stages side by side, also
        `· beside it: seed 1 · warm_train step 12/200`."""
        now = time.time() if now is None else now
        parts = [f"[pipeline] {self.label} {clock(now - self.started)}"] + ([f"cell {cell}"] if cell else [])
        st = self.stage
        if st is None:
            return " · ".join(parts)
        where = f"stage {st.index}/{st.total} " if st.total else ""
        detail = [f"{clock(now - st.started)} in stage"]
        got = st.step()
        if got is not None:
            detail.insert(0, f"step {min(got[1], st.steps)}/{st.steps}" if st.steps else f"step {got[1]}")
        left = st.left()
        if left is not None:
            detail.append(f"~{clock(left)} left")
        parts.append(f"{where}{st.name}: {', '.join(detail)}")
        beside = [s for s in self.running.values() if s is not st]
        if beside:
            parts.append("beside it: " + ", ".join(s.brief() for s in beside))
        # one after the other, a stage's number says how many came before it (cached ones too)
        more = st.total - (len(self.numbers) if self.side_by_side else st.index)
        if more > 0 and self.durations:
            rest = sum(self.durations) / len(self.durations) * more / (1 + len(beside)) + (left or 0.0)
            parts.append(f"~{clock(rest)} left in {more} more stage{'s' if more > 1 else ''}")
        return " · ".join(parts)


class _Tail:
    """The complete lines appended to a file since the last read (a half-written one waits)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def records(self) -> list[dict]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for raw in data[:end].splitlines():
            with contextlib.suppress(ValueError):
                rec = json.loads(raw)
                if isinstance(rec, dict):
                    out.append(rec)
        return out


def running_cell(executed: Path) -> str | None:
    """"k/n" for the code cell papermill is running in `executed` (it saves the notebook at each
    cell's start), or None when that file is not there or is being rewritten."""
    try:
        cells = [c for c in json.loads(executed.read_text())["cells"] if c.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for i, c in enumerate(cells, 1):
        if c.get("metadata", {}).get("papermill", {}).get("status") == "running":
            return f"{i}/{len(cells)}"
    return None


@contextlib.contextmanager
def watch(path: Path, label: str, executed: Path | None = None, every: float = 30.0, poll: float = 1.0,
          write: Callable[[str], None] | None = None) -> Iterator[ProgressView]:
    """While the block runs, name `path` in `$GUI_R1_LITE_PROGRESS` and write a status line (default:
    to stdout) at each stage start and every `every` seconds; `executed` is the notebook papermill
    writes, read for the running cell."""
    stream = sys.stdout  # this one, not what a stage redirects sys.stdout to meanwhile
    write = write or (lambda s: print(s, file=stream, flush=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")  # a rerun into the same folder starts its own record
    view, tail, stop = ProgressView(label), _Tail(path), threading.Event()

    def loop() -> None:
        last = time.time()
        while not stop.wait(poll):
            started = [view.add(r) for r in tail.records()]
            now = time.time()
            if any(started) or now - last >= every:
                write(view.line(now, running_cell(executed) if executed else None))
                last = now

    before = os.environ.get(PROGRESS_ENV)
    os.environ[PROGRESS_ENV] = str(path)
    thread = threading.Thread(target=loop, name=f"progress {label}", daemon=True)
    thread.start()
    try:
        yield view
    finally:
        stop.set()
        thread.join()
        if before is None:
            os.environ.pop(PROGRESS_ENV, None)
        else:
            os.environ[PROGRESS_ENV] = before
