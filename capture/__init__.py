"""Real GUI samples from real software: Chromium pages (Debian's Python docs, desktop and phone
viewports), MiniWoB++ task pages, and the Mousepad editor under Xvfb with AT-SPI boxes, written
as GUI-R1 training and benchmark parquet files. Browser and desktop tools are optional extras
and are imported only when a capture runs (`python -m capture --help`, from the repository root).

It made the shipped data_samples/ and lives beside the package: it imports `gui_r1_lite`, which
never imports it, and the wheel does not hold it.
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
