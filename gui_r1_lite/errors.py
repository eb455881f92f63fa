"""Errors a person can act on, and how every command line reports them: the message alone (the
fix is in it), exit code 2 for a usage error and 1 for a run that failed, the traceback only with
`--debug` or `GUI_R1_LITE_DEBUG=1` (for bug reports)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence

DEBUG_ENV = "GUI_R1_LITE_DEBUG"

EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(ValueError):
    """The command was asked for something it cannot do (a bad flag, recipe, path or value); the
    message says what to change. Exit code 2."""


class RunFailed(RuntimeError):
    """The run started but produced nothing usable; the message says why. Exit code 1."""


def debug_requested(argv: Sequence[str] | None = None) -> bool:
    """True when the traceback should be shown: `--debug` among the arguments or the env variable."""
    args = sys.argv[1:] if argv is None else argv
    return "--debug" in args or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None, *,
            prog: str = "gui_r1_lite", usage_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Call `main(argv)` and turn the errors a person can act on into one line on stderr and an exit
    code: `UsageError` (and `usage_errors`, e.g. a module's config or data error) -> 2, `RunFailed`
    -> 1. Anything else is a bug and propagates (Python prints its traceback, exit code 1).
    `--debug` is removed from argv before `main` sees it."""
    debug = debug_requested(argv)
    if argv is not None:
        argv = [a for a in argv if a != "--debug"]
    elif "--debug" in sys.argv:
        sys.argv = [a for a in sys.argv if a != "--debug"]
    try:
        code = main(argv)
    except (UsageError, *usage_errors) as exc:
        return _report(prog, exc, EXIT_USAGE, debug)
    except RunFailed as exc:
        return _report(prog, exc, EXIT_FAILED, debug)
    except KeyboardInterrupt:
        print(f"[{prog}] interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


def _report(prog: str, exc: BaseException, code: int, debug: bool) -> int:
    if debug:
        traceback.print_exception(exc)
    print(f"[{prog}] error: {exc}", file=sys.stderr)
    if not debug:
        print(f"[{prog}] (run with --debug or {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
    return code
