"""The evaluation command, `gui-r1-lite evaluate` (also `python -m gui_r1_lite.evaluate`): one
benchmark (`--data`, `evaluate.main`) or a folder of them (`--suite`, `suite.suite_main`). It sits
outside both because the suite is built on `evaluate`: one module dispatching to the suite and
imported by it would tie the two in a knot."""

from __future__ import annotations

import sys

from . import evaluate
from .errors import run_cli
from .suite import suite_main


def main(argv: list[str] | None = None) -> int:
    args = evaluate.parse_args(argv)
    return evaluate.main(argv) if args.suite is None else suite_main(args)


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="gui-r1-lite evaluate"))
