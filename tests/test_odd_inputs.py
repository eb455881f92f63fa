"""Odd but honest inputs: output folders with spaces, accents or a leading dash, a folder that cannot be
written, screenshots far larger than any screen, and `--blind` on rows without an image or with a box of
no area. Each is either handled as usual or counted and reported with its reason, never a crash and
never a silent drop."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from gui_r1_lite.blind import blank_image_bytes
from gui_r1_lite.data import DataError, load_gui_r1, model_view
from gui_r1_lite.geometry import model_image_size
from gui_r1_lite.samples import to_model_frame
from harness import cli

ROOT = Path(__file__).resolve().parents[1]
MINIWOB_TEST = ROOT / "data_samples" / "test" / "miniwob_test.parquet"


def _rows(n: int) -> list[dict]:
    """The first `n` rows of the shipped MiniWoB++ benchmark file, as dicts (the GUI-R1 benchmark schema)."""
    return pq.read_table(MINIWOB_TEST).slice(0, n).to_pylist()


def _write(rows: list[dict], path: Path) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _evaluate(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GUI_R1_LITE_DEBUG"}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return subprocess.run([sys.executable, "-m", "gui_r1_lite.evaluate", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


# --- odd output paths -------------------------------------------------------------------------------

@pytest.mark.slow  # each case starts a fresh interpreter that imports the image processor (~10 s)
@pytest.mark.parametrize(("flag", "folder"), [
    (["--out", "{tmp}/runs with spaces/out 1"], "runs with spaces/out 1"),
    (["--out", "{tmp}/rüns/ünï code"], "rüns/ünï code"),
    (["--out=-out"], "-out"),  # relative to the working folder, which is the test's own
    (["--out", "./-out"], "-out"),
], ids=["spaces", "unicode", "equals-dash", "dot-slash-dash"])
def test_evaluate_writes_into_an_odd_output_folder(tmp_path, flag, folder):
    """Already right before this test: the paths go through argparse and pathlib untouched."""
    result = _evaluate(["--baseline", "random", "--data", str(MINIWOB_TEST), "--limit", "3",
                        *[a.replace("{tmp}", str(tmp_path)) for a in flag]], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / folder
    assert len((out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()) == 3
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["n"] == 3
    assert folder in result.stdout  # "wrote <out>/predictions.jsonl, ..."


@contextlib.contextmanager
def _read_only(folder: Path):
    """`folder` made unwritable even for root (who ignores the mode bits): mode 0o555 and, where this
    process can still write there, the immutable attribute; skipped where neither holds."""
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    immutable = False
    try:
        if _writable(folder) and shutil.which("chattr"):
            immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
        if _writable(folder):
            pytest.skip("no way to make a folder read-only for this user here")
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def _writable(folder: Path) -> bool:
    try:
        (folder / ".probe").write_bytes(b"")
    except OSError:
        return False
    (folder / ".probe").unlink()
    return True


def test_a_read_only_out_is_refused_naming_it_before_anything_is_computed(tmp_path):
    """Already right: one line naming the folder, exit 2. The data file holds only rows that fail
    validation, which would end the run with exit 1 had it been read: the folder is checked first."""
    bad = _write([{**r, "gt_bbox": [5.0, 5.0, 5.0, 5.0]} for r in _rows(2)], tmp_path / "bad.parquet")
    with _read_only(tmp_path / "read only ü") as out:
        result = _evaluate(["--baseline", "random", "--data", str(bad), "--out", str(out)], cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 2, result.stderr
        first = result.stderr.splitlines()[0]
        assert "error: --out" in first and str(out) in first and "cannot be written" in first
        assert result.stdout == "" and list(out.iterdir()) == []


# --- screenshots far larger than a screen -----------------------------------------------------------

def _blank_png(width: int, height: int) -> bytes:
    """A valid one-bit white PNG of any size, written row by row: 20000 x 20000 is ~75 KB on disk, and
    making it never holds the decoded image in memory (PIL would need 50 MB for it, and refuses to)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pack, row = zlib.compressobj(9), b"\0" + b"\xff" * ((width + 7) // 8)  # filter 0, then white pixels
    body = b"".join(pack.compress(row) for _ in range(height)) + pack.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # bit depth 1, greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def test_an_image_beyond_the_decompression_bomb_limit_is_a_counted_row(tmp_path):
    """20000 x 20000 (past twice PIL's `MAX_IMAGE_PIXELS`, where PIL raises) and 10000 x 10000 (past it,
    where PIL only warns and then decodes): each a skipped row naming file, row, `image` and the pixel
    count against the limit. Before, the first read "bytes do not decode as an image
    (DecompressionBombError)" and the second was kept, decoded at 100 million pixels."""
    good, = _rows(1)
    rows = [good, {**good, "image": {"bytes": _blank_png(20_000, 20_000), "path": None}},
            {**good, "image": {"bytes": _blank_png(10_000, 10_000), "path": None}}]
    path = _write(rows, tmp_path / "huge.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)  # nothing decoded past the limit
        ds = load_gui_r1(path)
    report = ds.report
    assert (report.rows_read, report.rows_kept, report.rows_skipped) == (3, 1, 2)
    assert [(e.file, e.row, e.column) for e in report.errors] == [(str(path), 1, "image"), (str(path), 2, "image")]
    assert "400,000,000 pixels" in report.errors[0].message and "100,000,000 pixels" in report.errors[1].message
    assert all(f"{Image.MAX_IMAGE_PIXELS:,}" in e.message and "downscale" in e.message for e in report.errors)
    assert "column 'image': 2 rows (rows 1, 2)" in report.summary()
    with pytest.raises(DataError, match=r"row 1, column 'image': 400,000,000 pixels"):
        load_gui_r1(path, strict=True)


def test_a_large_but_legal_image_is_resized_by_the_processor_settings(tmp_path):
    """Already right: a 6000 x 5000 screenshot (30 million pixels, under the limit) is kept at its
    stored size, and the model sees it resized within the run's pixel bounds, its box scaled alike."""
    buf = io.BytesIO()
    Image.new("L", (6000, 5000), 200).save(buf, format="PNG")
    good, = _rows(1)
    box = [600.0, 500.0, 1200.0, 1000.0]
    ds = load_gui_r1(_write([{**good, "image": {"bytes": buf.getvalue(), "path": None}, "gt_bbox": box}],
                            tmp_path / "large.parquet"))
    sample, = ds.samples
    assert ds.report.rows_skipped == 0 and sample.image_size == (6000, 5000)
    min_pixels, max_pixels = 3136, 1_258_291  # the fast preset's bounds
    image, size = model_view(sample, min_pixels, max_pixels)
    assert image.size == size == model_image_size(6000, 5000, min_pixels=min_pixels, max_pixels=max_pixels)
    assert size[0] * size[1] <= max_pixels and size[0] % 28 == 0 and size[1] % 28 == 0
    scale = size[0] / 6000, size[1] / 5000
    assert to_model_frame(sample, size) == pytest.approx([600 * scale[0], 500 * scale[1], 1200 * scale[0],
                                                          1000 * scale[1]])


# --- the blind check on rows that cannot be scored ------------------------------------------------------

def _xpm(width: int, height: int) -> bytes:
    """A red XPM screenshot: a format PIL reads but cannot write."""
    lines = [f'"{width} {height} 1 1"', '"a c #FF0000"'] + [f'"{"a" * width}"'] * height
    return ("/* XPM */\nstatic char *page[] = {\n" + ",\n".join(lines) + "\n};\n").encode()


def test_a_screenshot_in_a_format_pil_cannot_write_is_blanked_as_png():
    """Before, `blank_image_bytes` raised KeyError('XPM') (PIL cannot save XPM), so `--blind` crashed on a
    row the seeing run scored."""
    blank = Image.open(io.BytesIO(blank_image_bytes(_xpm(16, 9))))
    assert blank.format == "PNG" and blank.size == (16, 9)
    assert blank.convert("RGB").getextrema() == ((255, 255),) * 3


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_blind_scores_the_rows_the_seeing_run_scores_and_reports_the_rest(tmp_path, capsys):
    """Rows without an image and with boxes of no area, inverted or NaN are skipped by validation in both
    runs, each with its reason in metrics.json (`validation.errors`) and counted in metrics.md; the blind
    run predicts exactly the seeing run's rows (an XPM screenshot among them)."""
    rows = _rows(4)
    row = rows[0]
    odd = [
        ({**row, "image": None}, "image", "expected {'bytes'"),
        ({**row, "image": {"bytes": None, "path": "gone.png"}}, "image", "expected {'bytes'"),
        ({**row, "gt_bbox": [10.0, 10.0, 10.0, 40.0]}, "gt_bbox", "zero area"),
        ({**row, "gt_bbox": [10.0, 10.0, 40.0, 10.0]}, "gt_bbox", "zero area"),
        ({**row, "gt_bbox": [40.0, 10.0, 10.0, 30.0]}, "gt_bbox", "x2 < x1"),
        ({**row, "gt_bbox": [float("nan"), 10.0, 40.0, 30.0]}, "gt_bbox", "NaN"),
    ]
    xpm_row = {**rows[1], "id": "xpm-row", "image": {"bytes": _xpm(160, 210), "path": None}}
    data = _write(rows + [r for r, _, _ in odd] + [xpm_row], tmp_path / "odd.parquet")
    runs = {}
    for name, blind in (("seeing", []), ("blind", ["--blind"])):
        out = tmp_path / name
        code, stdout, err = _cli(["evaluate", "--baseline", "oracle", "--data", str(data), "--out", str(out),
                                  *blind], capsys)
        assert code == 0, err
        assert "6 row(s) skipped by validation" in err
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["n"] == 5 and metrics["skipped_rows"] == 6 and metrics["blind"] == bool(blind)
        assert metrics["skipped"]["by_column"] == {"image": 2, "gt_bbox": 4}
        errors = metrics["validation"]["errors"]
        assert len(errors) == 6
        for i, ((_, column, why), line) in enumerate(zip(odd, errors, strict=True)):
            assert f"row {len(rows) + i}, column {column!r}: " in line and why in line, line
        assert "rows: 5 (6 more left out by validation" in (out / "metrics.md").read_text()
        runs[name] = [json.loads(line)["id"] for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert sorted(runs["blind"]) == sorted(runs["seeing"]) and "xpm-row" in runs["blind"]
