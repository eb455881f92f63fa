"""Errors a person can act on, and how every command line reports them: the message alone (the fix is
in it), exit code 2 for a usage error and 1 for a failed run (a full disk included), 143 when stopped
by SIGTERM and 130 by Ctrl-C, saying where the results so far are and how to go on; the traceback
only with `--debug` or `GUI_R1_LITE_DEBUG=1` (for bug reports)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

DEBUG_ENV = "GUI_R1_LITE_DEBUG"
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT   # 130, as a shell reports Ctrl-C
EXIT_TERMINATED = 128 + signal.SIGTERM   # 143, as a shell reports SIGTERM
#: The errno values of a write that found no room: the device is full, or the user's quota is.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
#: How the libraries that write weights say so without an `OSError`: safetensors' `SafetensorError`
#: carries the I/O error's text ("No space left on device (os error 28)", or its kind, `StorageFull`).
_DISK_FULL_WORDS = {
    errno.ENOSPC: re.compile(rf"{re.escape(os.strerror(errno.ENOSPC))}|\bos error {errno.ENOSPC}\b|\bStorageFull\b"),
    errno.EDQUOT: re.compile(rf"{re.escape(os.strerror(errno.EDQUOT))}|\bos error {errno.EDQUOT}\b|QuotaExceeded\b"),
}
#: How `torch.save` says that a write failed, without saying why.
_WRITE_FAILED = re.compile(r"PytorchStreamWriter failed writing|file write failed|unexpected pos \d+ vs \d+"
                           r"|iostream error")
#: Free bytes left on a filesystem below which a write that failed there found it full.
LOW_SPACE = 1 << 20


class UsageError(ValueError):
    """A bad flag, recipe, path or value; the message says what to change. Exit code 2."""


class RunFailed(RuntimeError):
    """The run started but produced nothing usable; the message says why. Exit code 1."""


class Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread by `run_cli`'s handler, or by work that stopped at a
    safe point after one). A `BaseException`, as `KeyboardInterrupt` is: `except Exception` blocks
    must not swallow it, `finally` blocks and context managers still run."""


@contextmanager
def on_stop(note: str) -> Iterator[None]:
    """While inside, a stop (SIGTERM, Ctrl-C, a full disk) leaving the block carries `note` to the
    command line's one line: where the results so far are and how to go on. The outermost block's
    note wins (a suite's folder, not one benchmark's)."""
    try:
        yield
    except (Terminated, KeyboardInterrupt, OSError) as exc:
        exc.stop_note = note  # type: ignore[union-attr]
        raise


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def disk_full_errno(exc: BaseException, folder: str | os.PathLike | None = None) -> int | None:
    """The errno (`DISK_FULL`) of `exc` when it says a write found no room, else None: an `OSError`
    of such an errno anywhere in its chain, the text a library puts in its own error (safetensors),
    or, for a write that failed without saying why (`torch.save`), under `LOW_SPACE` bytes left on
    the filesystem of `folder`."""
    chain = list(_chain(exc))
    for e in chain:
        if isinstance(e, OSError) and e.errno in DISK_FULL:
            return e.errno
        for code, words in _DISK_FULL_WORDS.items():
            if words.search(str(e)):
                return code
    if folder is None or not any(isinstance(e, OSError) or _WRITE_FAILED.search(str(e)) for e in chain):
        return None
    where = Path(folder)
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        return errno.ENOSPC if shutil.disk_usage(where).free < LOW_SPACE else None
    except OSError:
        return None


def _stop_note(exc: BaseException) -> str:
    note = getattr(exc, "stop_note", None)
    return f"; {note}" if note else ""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


@contextmanager
def _on_sigterm(handler: Callable) -> Iterator[None]:
    """`handler` answers SIGTERM while inside; outside the main thread, where no handler can be set,
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)  # None: set outside Python


# A SIGTERM this soon after the first is the same request arriving twice, not a second one: a
# scheduler that signals every process of a job (SLURM's scancel, a Kubernetes pod's end) reaches
# each worker directly and again through torchrun, which passes its own SIGTERM on.
SAME_STOP_SECONDS = 5.0


@contextmanager
def deferred_sigterm() -> Iterator[Callable[[], bool]]:
    """Inside, a first SIGTERM is only noted (the function yielded says whether one came), so the
    work can stop at its next safe point (training: the end of a step, with a checkpoint); another
    one more than `SAME_STOP_SECONDS` later stops at once (`Terminated`), while one sooner is the
    same request and is only noted. Outside the main thread the function always says no."""
    came = threading.Event()
    first = [0.0]

    def note(signum, frame) -> None:
        if not came.is_set():
            first[0] = time.monotonic()
            came.set()
        elif time.monotonic() - first[0] > SAME_STOP_SECONDS:
            raise Terminated()

    with _on_sigterm(note):
        yield came.is_set


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None, *,
            prog: str = "gui_r1_lite", usage_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Call `main(argv)` (without `--debug`) and turn `UsageError` (and `usage_errors`, e.g. a module's
    config error) into exit code 2, `RunFailed` and a full disk into 1, SIGTERM into 143 and Ctrl-C
    into 130, with one line on stderr. Anything else is a bug and propagates with its traceback.
    A full disk's line says what was kept: the `kept` of its `OSError` when it has one (a
    checkpoint cut short), else that what was written before is intact."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if argv is not None:
        argv = [a for a in argv if a != "--debug"]
    elif "--debug" in sys.argv:
        sys.argv = [a for a in sys.argv if a != "--debug"]
    try:
        with _on_sigterm(_raise_terminated):  # ends through `finally` blocks, saying so, not silently mid-write
            code = main(argv)
    except (UsageError, *usage_errors) as exc:
        return _report(prog, exc, EXIT_USAGE, debug)
    except RunFailed as exc:
        return _report(prog, exc, EXIT_FAILED, debug)
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        return _report(prog, exc, EXIT_FAILED, debug,
                       f"disk full: could not write {exc.filename or 'a file (the library did not name it)'} "
                       f"({exc.strerror}); {getattr(exc, 'kept', 'what was written before is intact')}, "
                       f"free some space{_stop_note(exc)}")
    except Terminated as exc:
        return _report(prog, exc, EXIT_TERMINATED, debug,
                       f"stopped by SIGTERM{' ' + str(exc) if str(exc) else ''}{_stop_note(exc)}", prefix="")
    except KeyboardInterrupt as exc:
        return _report(prog, exc, EXIT_INTERRUPTED, debug, f"interrupted{_stop_note(exc)}", prefix="")
    return int(code or 0)


def _report(prog: str, exc: BaseException, code: int, debug: bool, message: str | None = None,
            prefix: str = "error: ") -> int:
    if debug:
        traceback.print_exception(exc)
    print(f"[{prog}] {prefix}{exc if message is None else message}", file=sys.stderr)
    if not debug and prefix:
        print(f"[{prog}] (run with --debug or {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
    return code
