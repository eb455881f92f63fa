"""A headless Chromium driven by Python Playwright, launched with flags that work on machines
without a GPU or network, and screenshots kept as PNG `Shot`s. The closed loop plays MiniWoB++
pages in it; the sample capture (capture/) drives it the same way."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--font-render-hinting=none",
)


class CaptureDependencyError(RuntimeError):
    """A program or package that driving a browser (or capturing samples) needs is missing; the
    message says how to install it."""


def find_chromium() -> str | None:
    """The Chromium to drive: Debian's (`CHROMIUM`), else the newest one Playwright downloaded itself
    (`playwright install chromium`), else None. Read from disk: asking Playwright's driver would
    start a process."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    root = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache" / "ms-playwright")
    found = [p for p in root.glob("chromium-*/chrome-linux*/chrome") if os.access(p, os.X_OK)]
    return str(max(found, key=_playwright_build)) if found else None


def _playwright_build(chrome: Path) -> int:
    """`chromium-1187/...` -> 1187; -1 without a build number."""
    suffix = chrome.parent.parent.name.removeprefix("chromium-")
    return int(suffix) if suffix.isdigit() else -1


def require_playwright() -> str:
    """The Chromium to launch (`find_chromium`); a `CaptureDependencyError` unless Python
    Playwright and a Chromium are present."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        raise CaptureDependencyError(
            "Python package `playwright` is missing; install it with `pip install -r requirements.txt` "
            "(the browser itself comes from Debian: `sudo bash scripts/install_capture_deps.sh`)"
        ) from None
    found = find_chromium()
    if found is None:
        raise CaptureDependencyError(
            f"Chromium not found ({CHROMIUM}, nor Playwright's own download); install it with "
            "`sudo bash scripts/install_capture_deps.sh` (or `apt-get install -y chromium`)")
    return found


@dataclass(frozen=True)
class Shot:
    """One screenshot as stored: PNG bytes and their pixel size."""

    png: bytes
    width: int
    height: int


def encode_png(image) -> Shot:
    """A `Shot` from PNG bytes or a PIL image, re-saved as an optimised (lossless) PNG."""
    from PIL import Image

    raw = bytes(image) if isinstance(image, (bytes, bytearray)) else None
    im = Image.open(io.BytesIO(raw)) if raw is not None else image
    if im.mode not in ("RGB", "L", "P"):
        im = im.convert("RGB")  # drop the alpha channel of an opaque screenshot
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=True)
    data = buf.getvalue()
    if raw is not None and len(raw) < len(data) and Image.open(io.BytesIO(raw)).mode == im.mode:
        data = raw  # the browser's own PNG is sometimes the smaller one
    return Shot(data, im.width, im.height)


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (`find_chromium`)."""
    executable = require_playwright()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=list(CHROMIUM_FLAGS))
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page, clip: dict | None = None) -> Shot:
    """The viewport (or a CSS-px `clip` of it) as an optimised PNG; no caret, no animations."""
    return encode_png(page.screenshot(type="png", clip=clip, animations="disabled", caret="hide", scale="device"))
