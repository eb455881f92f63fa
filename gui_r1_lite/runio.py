"""Run files, read and written one way: JSONL logs that tolerate the half-written last line a
killed process leaves (every reader takes "all complete lines so far", so a resumed run continues
from them), atomic JSON/text writes (the old file or the new one, never a torn one), and which
process of a multi-process run this is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any


def rank() -> int:
    """This process's global rank (0 when not launched by torchrun/accelerate)."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    """How many processes the launcher started (1 when not launched by torchrun/accelerate)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    """True on the process that writes run files (rank 0)."""
    return rank() == 0


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """The JSON objects of a JSONL file, in order. Blank lines, lines cut short by a crash and
    lines that are not objects are skipped; a missing file yields nothing."""
    p = Path(path)
    if not p.exists():
        return
    with p.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                yield rec


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """All complete JSON objects of a JSONL file (see `iter_jsonl`)."""
    return list(iter_jsonl(path))


def clean_jsonl(path: str | os.PathLike, keep: Callable[[dict], bool]) -> list[dict]:
    """The records of a JSONL file that `keep` accepts; the file is rewritten without the other
    lines (a torn last line included) so that appending to it stays valid."""
    p = Path(path)
    if not p.exists():
        return []
    text = p.read_text(encoding="utf-8")
    records = [r for r in iter_jsonl(p) if keep(r)]
    if len(text.splitlines()) != len(records) or (text and not text.endswith("\n")):
        write_jsonl_atomic(p, records)
    return records


def _dumps(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, default=float)


def append_jsonl(path: str | os.PathLike, records: dict | Iterable[dict]) -> None:
    """Append one record (a dict) or several as JSON lines, flushed before returning."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    items = [records] if isinstance(records, dict) else list(records)
    with p.open("a", encoding="utf-8") as fh:
        fh.write("".join(_dumps(r) + "\n" for r in items))
        fh.flush()


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder and a rename."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        if tmp.exists():
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
