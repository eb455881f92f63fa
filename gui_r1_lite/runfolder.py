"""What made a run folder, and whether a new run may use it: files hashed by content, the folder's
record (`run.json`, with a short fingerprint), the differences between two records in words, and the
refusal of a folder that holds another run's results or cannot be written. Training and evaluation
decide what their records hold; this module is what they share."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .errors import UsageError
from .runio import read_json

RUN_FILE = "run.json"
#: With `cheap`, files above this size are hashed by size, first and last MiB: retraining changes
#: weights everywhere, and reading a 7 GB checkpoint to resume an evaluation would cost minutes.
WHOLE_HASH_LIMIT = 64 * 2**20
_CHUNK = 2**20
#: Differences a refusal lists; the rest are counted.
SHOWN = 6


class RunFolderMismatch(UsageError):
    """The folder holds results made by another run (other policy, data or settings); the message
    says what differs, how to start fresh and how to resume."""


def _file_digest(path: Path, cheap: bool) -> str:
    size = path.stat().st_size
    h = hashlib.sha256()
    with path.open("rb") as fh:
        if cheap and size > WHOLE_HASH_LIMIT:
            h.update(f"{size}:".encode())
            h.update(fh.read(_CHUNK))
            fh.seek(size - _CHUNK)
            h.update(fh.read(_CHUNK))
        else:
            for block in iter(lambda: fh.read(_CHUNK), b""):
                h.update(block)
    return h.hexdigest()


def digest(paths: str | os.PathLike | Iterable[str | os.PathLike], cheap: bool = False) -> str:
    """SHA-256 of one file's content (what `sha256sum` prints); of several files, or of a folder's
    files in name order, one hash of each file's name and digest. With `cheap`, a file over
    `WHOLE_HASH_LIMIT` bytes is hashed by its size, first and last MiB."""
    if isinstance(paths, (str, os.PathLike)):
        path = Path(paths)
        if path.is_file():
            return _file_digest(path, cheap)
        files = sorted(p for p in path.iterdir() if p.is_file())
    else:
        files = [Path(p) for p in paths]
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\0{_file_digest(f, cheap)}\0".encode())
    return h.hexdigest()


def as_stored(value: Any) -> Any:
    """`value` as a JSON file gives it back (tuples as lists; paths, enums and other objects as
    text), so that a record made now compares equal to the one read from `run.json`."""
    return json.loads(json.dumps(value, default=str))


def fingerprint(record: dict) -> str:
    """A short hash of `record` (its `fingerprint` left out): a quick way to see two runs are one."""
    rest = {k: v for k, v in record.items() if k != "fingerprint"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode()).hexdigest()[:16]


def with_fingerprint(record: dict) -> dict:
    """`record` with its `fingerprint`."""
    return {**{k: v for k, v in record.items() if k != "fingerprint"}, "fingerprint": fingerprint(record)}


def read_record(folder: str | os.PathLike) -> dict | None:
    """The record in `folder`'s `run.json`; None when it is missing, torn or not a JSON object."""
    try:
        value = read_json(Path(folder) / RUN_FILE)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def phrase(name: str, old: Any, new: Any) -> str:
    """One difference in words: "compat: 'official' there, 'strict' now"."""
    return f"{name}: {_show(old)} there, {_show(new)} now"


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """One `phrase` per key whose value differs (keys of `new` in order, then those only in
    `old`), each name led by `prefix`."""
    keys = [k for k in new if old.get(k) != new[k]] + [k for k in old if k not in new]
    return [phrase(f"{prefix}{k}", old.get(k), new.get(k)) for k in keys]


def refuse(folder: str | os.PathLike, holds: str, diffs: Sequence[str] | None, *, fresh: str, resume: str,
           error: type[UsageError] = RunFolderMismatch) -> NoReturn:
    """Raise `error`: `folder` holds `holds` (e.g. "predictions") made otherwise, as `diffs` list
    (the first `SHOWN`), or, with `diffs` None, by a run its `run.json` cannot name. `fresh` says
    how to start fresh and `resume` how to resume, in the caller's own flags."""
    if diffs is None:
        why = f"{holds} but no readable {RUN_FILE} saying what made them, so nothing tells whether they are this run's"
    else:
        more = f"; and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else ""
        why = f"{holds} made otherwise: {'; '.join(diffs[:SHOWN])}{more}"
    raise error(f"{folder} holds {why}. {fresh}; {resume}")


def writable_folder(folder: str | os.PathLike, flag: str = "--out", error: type[UsageError] = UsageError) -> Path:
    """`folder`, made if missing, once a file could be written in it; else `error` naming `flag`
    (the flag or setting that chose the folder). Checked before any model loads, so a bad path
    costs nothing."""
    path = Path(folder).expanduser()
    probe = path / f".write-check-{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise error(f"{flag} {folder}: cannot be written ({exc.strerror or exc}); "
                    "pass a folder you can write to") from None
    return path
