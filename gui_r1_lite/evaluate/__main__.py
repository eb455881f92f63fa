"""`python -m gui_r1_lite.evaluate ...`: hands over to the command, `evaluate_cli` (`--suite` included)."""

import sys

if __name__ == "__main__":
    from ..errors import run_cli
    from ..evaluate_cli import main

    sys.exit(run_cli(main, prog="gui-r1-lite evaluate"))
