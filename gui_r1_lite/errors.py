"""Errors a person can act on, and how every command line reports them: the message alone (the fix is
in it), exit code 2 for a usage error and 1 for a failed run, the traceback only with `--debug` or
`GUI_R1_LITE_DEBUG=1` (for bug reports)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

DEBUG_ENV = "GUI_R1_LITE_DEBUG"
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(ValueError):
    """A bad flag, recipe, path or value; the message says what to change. Exit code 2."""


class RunFailed(RuntimeError):
    """The run started but produced nothing usable; the message says why. Exit code 1."""


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None, *,
            prog: str = "gui_r1_lite", usage_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Call `main(argv)` (without `--debug`) and turn `UsageError` (and `usage_errors`, e.g. a module's
    config error) into exit code 2 and `RunFailed` into 1, with one line on stderr. Anything else is a
    bug and propagates with its traceback."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or os.environ.get(DEBUG_ENV, "") not in ("", "0")
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
