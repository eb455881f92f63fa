"""Real GUI samples from real software: Chromium pages (Debian's Python docs, desktop and phone
viewports), MiniWoB++ task pages, and the Mousepad editor under Xvfb with AT-SPI boxes, written
as GUI-R1 training and benchmark parquet files. Browser and desktop tools are optional extras
and are imported only when a capture runs (`python -m gui_r1_lite.capture --help`).
"""

from .common import (
    PLATFORMS,
    TEST_COLUMNS,
    TRAIN_COLUMNS,
    CaptureDependencyError,
    Shot,
    Step,
    benchmark_row,
    check_file,
    draw_box,
    history_text,
    train_row,
    write_steps,
)

SOURCES: tuple[str, ...] = ("web", "mobile", "desktop", "miniwob")

__all__ = [
    "PLATFORMS", "SOURCES", "TEST_COLUMNS", "TRAIN_COLUMNS", "CaptureDependencyError", "Shot", "Step",
    "benchmark_row", "check_file", "draw_box", "history_text", "train_row", "write_steps",
]
