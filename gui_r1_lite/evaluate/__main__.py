"""`python -m gui_r1_lite.evaluate ...`: the evaluation command, `--suite` included. It is
`evaluate_cli`'s (the suite is built on this package, so the command that dispatches to both sits
beside them); this file only hands over to it."""

import sys

if __name__ == "__main__":
    from ..errors import run_cli
    from ..evaluate_cli import main

    sys.exit(run_cli(main, prog="gui-r1-lite evaluate"))
