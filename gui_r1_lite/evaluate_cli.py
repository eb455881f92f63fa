"""The evaluation command, `gui-r1-lite evaluate`: one benchmark (`--data`, `evaluate.main`) or every
GUI-R1 benchmark file of a folder (`--suite`, `suite.suite_main`), with the same flags. It sits beside
both because the suite is built on `evaluate` and a module that both dispatches to it and is imported
by it would make the two one knot.

    python -m gui_r1_lite.evaluate (--data FILE_OR_DIR | --suite DIR) (--model ID_OR_DIR | --baseline NAME) ...
    gui-r1-lite evaluate ...   (the same; `python -m gui_r1_lite.evaluate` hands over to this module)
"""

from __future__ import annotations

import sys

from . import evaluate
from .errors import run_cli
from .suite import suite_main


def main(argv: list[str] | None = None) -> int:
    """Parse `evaluate`'s flags; `--suite` runs the suite, anything else `evaluate.main`."""
    args = evaluate.parse_args(argv)
    return evaluate.main(argv) if args.suite is None else suite_main(args)


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="gui-r1-lite evaluate"))
