"""The blind check: "does my agent look at the screen?" The same evaluation rows with every
screenshot replaced by a white image of the same size and mode, nothing else changed, so a policy
scored on both can be compared row by row: a policy that scores as well blind answers from the
text and the page's usual layout, not from the pixels (`evaluate --blind`)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

from PIL import Image

from .data import EvalRow, Sample

#: The key a run record carries when its screenshots were blanked (absent for a seeing run, so the
#: records of seeing runs made before the blind check existed still match their folders).
BLIND_KEY = "blind"


def _white(mode: str, bands: int) -> int | float | tuple[int, ...]:
    """White in an image `mode` of `bands` bands."""
    if mode == "1":
        return 1
    if mode.startswith("I;16"):
        return 65535
    if mode in ("I", "F"):
        return 255
    if mode in ("CMYK", "YCbCr", "LAB", "HSV"):  # white is not all bands at the top in these
        return tuple(Image.new("RGB", (1, 1), (255, 255, 255)).convert(mode).getpixel((0, 0)))
    return 255 if bands == 1 else (255,) * bands


@lru_cache(maxsize=64)
def _blank_bytes(size: tuple[int, int], mode: str, fmt: str) -> bytes:
    """Cached: screenshots of a benchmark share a few sizes, so each blank is encoded once."""
    if mode == "P":  # a one-colour palette image: index 0 is white
        image = Image.new("P", size, 0)
        image.putpalette([255, 255, 255] * 256)
    else:
        image = Image.new(mode, size, _white(mode, len(Image.new(mode, (1, 1)).getbands())))
    # a format PIL reads but cannot write (XPM, PSD, ...), or a mode PNG cannot hold: a PNG, in RGB if need be
    for how, blank in ((fmt, lambda: image), ("PNG", lambda: image), ("PNG", lambda: image.convert("RGB"))):
        buf = io.BytesIO()
        try:
            blank().save(buf, format=how)
            return buf.getvalue()
        except (KeyError, OSError, ValueError):
            continue
    raise ValueError(f"a white {mode} image of {size[0]}x{size[1]} cannot be encoded")


def blank_image_bytes(image_bytes: bytes) -> bytes:
    """`image_bytes` (an encoded image) as a white image of the same size, mode and format (a PNG where PIL
    cannot write that format or mode).

    >>> buf = io.BytesIO(); Image.new("RGB", (7, 5), (10, 20, 30)).save(buf, format="PNG")
    >>> blank = Image.open(io.BytesIO(blank_image_bytes(buf.getvalue())))
    >>> blank.size, blank.mode, blank.getextrema()
    ((7, 5), 'RGB', ((255, 255), (255, 255), (255, 255)))
    """
    with Image.open(io.BytesIO(image_bytes)) as image:
        size, mode, fmt = image.size, image.mode, image.format or "PNG"
    return _blank_bytes(size, mode, fmt)


def blind_sample(sample: Sample) -> Sample:
    """`sample` with its screenshot blanked; every other field as it was."""
    try:
        blank = blank_image_bytes(sample.image_bytes)
    except (OSError, ValueError) as exc:
        raise ValueError(f"row {sample.id} ({sample.source or 'in memory'}, row {sample.row}): its image cannot be "
                         f"read to blank it: {exc}") from exc
    return replace(sample, image_bytes=blank)


def blind_samples(samples: Iterable[Sample]) -> list[Sample]:
    """Every sample with its screenshot blanked, in order."""
    return [blind_sample(s) for s in samples]


def blind_rows(rows: Sequence[EvalRow]) -> list[EvalRow]:
    """Evaluation rows (`data.to_eval_rows`) with their screenshots blanked, only the pixels differ."""
    return [replace(r, sample=blind_sample(r.sample)) for r in rows]


def blind_record(made_by: Mapping, blind: bool) -> dict:
    """A run record marked blind when `blind`: a blind run and a seeing run of the same policy and
    data then never share a folder."""
    return {**made_by, BLIND_KEY: True} if blind else dict(made_by)
