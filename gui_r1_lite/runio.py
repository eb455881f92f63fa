"""Run files, read and written one way: JSONL logs that tolerate the half-written last line a
killed process leaves (every reader takes "all complete lines so far", so a resumed run continues
from them; a resuming writer names every line it could not trust), atomic JSON/text writes (the old
file or the new one, never a torn one), and which process of a multi-process run this is. A write
that finds the disk full fails naming its file and leaves what was there intact.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

#: How many bad line numbers a warning lists before it only counts the rest.
SHOWN_LINES = 10


def rank() -> int:
    """This process's global rank (0 when not launched by torchrun/accelerate)."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    """How many processes the launcher started (1 when not launched by torchrun/accelerate)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    """True on the process that writes run files (rank 0)."""
    return rank() == 0


def _record(raw: bytes) -> dict | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:  # not UTF-8, or not JSON: cut short by a crash, or garbage
        return None
    return value if isinstance(value, dict) else None


def _numbered(path: Path) -> Iterator[tuple[int, dict | None]]:
    """(line number from 1, its record or None when it is not a JSON object) for each non-blank line."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if raw.strip():
                yield number, _record(raw)


def iter_jsonl(path: str | os.PathLike, bad: list[int] | None = None) -> Iterator[dict]:
    """The JSON objects of a JSONL file, in order; a missing file yields nothing. Blank lines are
    skipped, and so are lines that are not a JSON object (cut short by a crash, garbage, bytes that
    are not UTF-8): their numbers (from 1) go to `bad` when it is given."""
    p = Path(path)
    if not p.exists():
        return
    for number, rec in _numbered(p):
        if rec is not None:
            yield rec
        elif bad is not None:
            bad.append(number)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """All complete JSON objects of a JSONL file (see `iter_jsonl`)."""
    return list(iter_jsonl(path))


def warn_untrusted(path: str | os.PathLike, bad: list[int], then: str) -> None:
    """One line on stderr naming `path` and its `bad` line numbers, and what becomes of what they held."""
    if not bad:
        return
    shown = ", ".join(map(str, bad[:SHOWN_LINES])) + (f" and {len(bad) - SHOWN_LINES} more"
                                                      if len(bad) > SHOWN_LINES else "")
    print(f"[gui_r1_lite] warning: {path}: {len(bad)} line(s) not a complete record (line {shown}), "
          f"not trusted and dropped; {then}", file=sys.stderr, flush=True)


def clean_jsonl(path: str | os.PathLike, keep: Callable[[dict], bool], *,
                valid: Callable[[dict], bool] | None = None,
                then: str = "what they held is computed again") -> list[dict]:
    """The records of a JSONL file that `keep` accepts; the file is rewritten without the other
    lines so that appending to it stays valid. A resuming writer never trusts a line that is not a
    JSON object, or a record `valid` refuses, wherever it stands (a torn last line, garbage inside):
    those are counted and named on stderr (`warn_untrusted`, `then` saying what becomes of them)."""
    p = Path(path)
    if not p.exists():
        return []
    bad: list[int] = []
    records = []
    for number, rec in _numbered(p):
        if rec is None or (valid is not None and not valid(rec)):
            bad.append(number)
        elif keep(rec):
            records.append(rec)
    warn_untrusted(p, bad, then)
    text = "".join(_dumps(r) + "\n" for r in records)
    if text.encode("utf-8") != p.read_bytes():
        write_text_atomic(p, text)
    return records


def _dumps(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, default=float)


@contextmanager
def _naming(path: Path, tmp: Path | None = None) -> Iterator[None]:
    """An `OSError` raised while writing `path` (or its temporary file `tmp`) names `path`: a full
    disk's write and flush name no file, and the temporary one is not what a person looks for."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None or (tmp is not None and exc.filename == str(tmp)):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def append_jsonl(path: str | os.PathLike, records: dict | Iterable[dict]) -> None:
    """Append one record (a dict) or several as JSON lines, flushed before returning. A write that
    fails (a full disk) is undone to the file's last complete line and raises
    naming the file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    items = [records] if isinstance(records, dict) else list(records)
    size = p.stat().st_size if p.exists() else 0
    with _naming(p):
        try:
            with p.open("a", encoding="utf-8") as fh:
                fh.write("".join(_dumps(r) + "\n" for r in items))
                fh.flush()
        except OSError:
            with suppress(OSError):  # a batch written in part would leave half a line; shrinking needs no room
                if p.stat().st_size > size:
                    os.truncate(p, size)
            raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder and a rename: when the
    write fails (a full disk) the old file stays, the temporary one is removed, and the error names
    `path`."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        with _naming(p, tmp), tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
    return p


def write_json_atomic(path: str | os.PathLike, value: Any, indent: int | None = 2) -> Path:
    """Write `value` as JSON (numpy/torch scalars as floats) atomically."""
    return write_text_atomic(path, json.dumps(value, indent=indent, ensure_ascii=False, default=float) + "\n")


def write_jsonl_atomic(path: str | os.PathLike, records: Iterable[dict]) -> Path:
    """Replace a JSONL file with `records` atomically."""
    return write_text_atomic(path, "".join(_dumps(r) + "\n" for r in records))


def read_json(path: str | os.PathLike) -> Any:
    """A JSON file's value; the error names the file when it is missing or not JSON."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such file") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
