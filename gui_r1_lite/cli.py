"""`gui-r1-lite <command> ...`: one entry point for the package's jobs."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "pipeline": "gui_r1_lite.pipeline",
    "capture": "gui_r1_lite.capture.__main__",
    "train": "gui_r1_lite.train",
    "evaluate": "gui_r1_lite.evaluate",
    "miniature": "gui_r1_lite.miniature.__main__",
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch `argv[0]` to its module's `main` with the rest; 2 (and the usage) for an unknown command."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: gui-r1-lite {" + ",".join(COMMANDS) + "} [options]   (each takes --help)")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(COMMANDS[argv[0]])
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
