"""`gui-r1-lite <command> ...`: one entry point for the jobs of `gui_r1_lite` and `harness`, each reporting
errors one way (`errors.run_cli`)."""

from __future__ import annotations

import importlib
import os
import sys

from gui_r1_lite.errors import DEBUG_ENV, run_cli

COMMANDS = {
    "pipeline": "harness.pipeline",
    "train": "gui_r1_lite.train",
    "evaluate": "gui_r1_lite.evaluate_cli",
    "online": "harness.online.__main__",
    "miniature": "harness.miniature.__main__",
}


def main(argv: list[str] | None = None) -> int:
    """Run command `argv[0]`'s `main` on the rest; exit code 2 (and the usage) for an unknown one."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        asked = bool(argv) and argv[0] in ("-h", "--help")
        print("usage: gui-r1-lite {" + ",".join(COMMANDS) + "} [options]   (each takes --help, and --debug "
              "for a traceback)", file=sys.stdout if asked else sys.stderr)
        if argv and not asked:
            print(f"gui-r1-lite: error: unknown command {argv[0]!r} (choose from {', '.join(COMMANDS)})",
                  file=sys.stderr)
        return 0 if asked else 2
    if "--debug" in argv:
        os.environ[DEBUG_ENV] = "1"  # also for a command whose main reports its own errors
    module = importlib.import_module(COMMANDS[argv[0]])
    return run_cli(module.main, argv[1:], prog=f"gui-r1-lite {argv[0]}")


if __name__ == "__main__":
    sys.exit(main())
