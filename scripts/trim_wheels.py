"""Trim the wheels that travel to the GPU machine (scripts/fetch_gpu_wheels.sh) so that they and the working tree
fit the 64 MiB a run may carry: drop the parts of a wheel the GPU path never loads (bitsandbytes' libraries for
other CUDA/ROCm versions, pyarrow's Flight and S3 libraries, test suites, C headers, torchvision's image codecs),
strip the symbol tables of the shared libraries, and rebuild each wheel with its RECORD rewritten (every hash
and size of the files kept), so that `pip install --no-index` takes it as it would the original. Writes a
manifest (name, version, size, sha256, requirements, what was dropped) beside the wheels.

    python scripts/trim_wheels.py WHEELS_DIR [MANIFEST_JSON]
"""

from __future__ import annotations

import argparse
import base64
import csv
import email.parser
import fnmatch
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: per distribution: glob patterns (on the path inside the wheel) of what the GPU path never loads
DROP: dict[str, tuple[str, ...]] = {
    # the image has CUDA 13.0 (torch 2.11+cu130): libbitsandbytes_cuda130.so; the CPU library is bitsandbytes'
    # fallback where no CUDA library loads
    "bitsandbytes": ("bitsandbytes/libbitsandbytes_cuda1[12]*.so", "bitsandbytes/libbitsandbytes_cuda132.so",
                     "bitsandbytes/libbitsandbytes_rocm*.so", "bitsandbytes/libbitsandbytes_xpu*.so"),
    # Flight, S3, the C++ test module, headers and Cython sources; the unversioned and the .2600.1.0 copies of
    # libarrow_python* (zip has no symlinks: the loader asks for the .so.2600 name only)
    "pyarrow": ("pyarrow/*flight*", "pyarrow/libarrow_s3.so*", "pyarrow/_s3fs.*", "pyarrow/_pyarrow_cpp_tests.*",
                "pyarrow/include/*", "pyarrow/src/*", "pyarrow/tests/*", "pyarrow/*.pyx", "pyarrow/*.pxd",
                "pyarrow/*.pxi", "pyarrow/includes/*", "pyarrow/libarrow_python*.so",
                "pyarrow/libarrow_python*.so.*.*.*"),
    "pandas": ("pandas/tests/*",),
    # AVIF: not a format of any screenshot here
    "pillow": ("pillow.libs/libavif-*", "PIL/_avif.*"),
    # image.so (torchvision.io's JPEG/PNG/WebP codecs, nvJPEG) and its libraries: images are decoded by PIL
    "torchvision": ("torchvision/image.so", "torchvision.libs/*"),
}


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _strip(data: bytes) -> bytes:
    """`data` (an ELF shared library) without its static symbol table and debug sections; unchanged where
    `strip` is missing or fails."""
    if not shutil.which("strip") or not data.startswith(b"\x7fELF"):
        return data
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(data)
        f.flush()
        if subprocess.run(["strip", "--strip-unneeded", f.name], capture_output=True).returncode != 0:
            return data
        stripped = Path(f.name).read_bytes()
    return stripped if len(stripped) < len(data) else data


def dist_name(wheel: Path) -> str:
    """The normalised distribution name of a wheel file name (`Pillow-…` and `pillow-…` alike)."""
    return wheel.name.split("-")[0].lower().replace("_", "-")


def trim_wheel(wheel: Path, drop: tuple[str, ...], strip: bool = True, compression: int = zipfile.ZIP_LZMA) -> dict:
    """Rewrite `wheel` in place without the files matching `drop`, ELF libraries stripped when `strip`, and its
    RECORD rewritten for what is left. Returns what was dropped and the sizes before and after."""
    before = wheel.stat().st_size
    dropped: list[str] = []
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        kept: dict[str, bytes] = {}
        for info in src.infolist():
            name = info.filename
            if name == record_name or name.endswith("/"):
                continue
            if any(fnmatch.fnmatch(name, pattern) for pattern in drop):
                dropped.append(name)
                continue
            data = src.read(info)
            if strip and (name.endswith(".so") or ".so." in name):
                data = _strip(data)
            kept[name] = data
    rows = [[name, _hash(data), str(len(data))] for name, data in kept.items()] + [[record_name, "", ""]]
    record = io.StringIO()
    csv.writer(record, lineterminator="\n").writerows(rows)
    with zipfile.ZipFile(tmp, "w") as out:
        for name, data in [*kept.items(), (record_name, record.getvalue().encode())]:
            out.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, compress_type=compression)
    os.replace(tmp, wheel)
    return {"dropped": dropped, "bytes_before": before, "bytes": wheel.stat().st_size}


def metadata(wheel: Path) -> dict:
    """Name, version and Requires-Dist of a wheel (its METADATA)."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(name).decode())
    return {"name": meta["Name"], "version": meta["Version"], "requires": meta.get_all("Requires-Dist") or []}


def check_record(wheel: Path) -> list[str]:
    """Files whose hash or size differs from RECORD's, and files RECORD leaves out (empty for a valid wheel)."""
    with zipfile.ZipFile(wheel) as z:
        record_name = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        rows = {r[0]: r[1:] for r in csv.reader(io.StringIO(z.read(record_name).decode())) if r}
        bad = [n for n in z.namelist() if not n.endswith("/") and n not in rows]
        for name, (digest, size) in rows.items():
            if name == record_name:
                continue
            data = z.read(name) if name in z.namelist() else None
            if data is None or digest != _hash(data) or size != str(len(data)):
                bad.append(name)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, metavar="WHEELS_DIR", help="the wheels, trimmed in place")
    ap.add_argument("manifest", type=Path, nargs="?", metavar="MANIFEST_JSON",
                    help="where the manifest goes (default: WHEELS_DIR/manifest.json)")
    args = ap.parse_args(argv)
    folder = args.folder
    manifest_path = args.manifest or folder / "manifest.json"
    # checked before any wheel is rewritten in place
    if not folder.is_dir():
        ap.error(f"{folder}: no such folder")
    if not manifest_path.parent.is_dir():
        ap.error(f"{manifest_path}: its folder {manifest_path.parent} does not exist")
    if not any(folder.glob("*.whl")):
        ap.error(f"{folder}: no .whl files to trim")
    wheels = {}
    for wheel in sorted(folder.glob("*.whl")):
        entry = {"file": wheel.name, **metadata(wheel)}
        drop = DROP.get(dist_name(wheel))
        if drop:
            trimmed = trim_wheel(wheel, drop)
            bad = check_record(wheel)
            if bad:
                sys.exit(f"{wheel}: RECORD does not match {bad[:5]}")
            entry["trimmed"] = {"dropped_files": len(trimmed["dropped"]), "patterns": list(drop),
                                "bytes_before": trimmed["bytes_before"]}
            print(f"{wheel.name}: {trimmed['bytes_before'] / 2**20:.2f} -> {trimmed['bytes'] / 2**20:.2f} MiB "
                  f"({len(trimmed['dropped'])} files dropped, libraries stripped)")
        data = wheel.read_bytes()
        entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        wheels[entry["name"].lower().replace("_", "-")] = entry
    total = sum(w["bytes"] for w in wheels.values())
    manifest = {"python": "3.12", "platform": "manylinux x86_64", "total_bytes": total, "wheels": wheels}
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{len(wheels)} wheels, {total / 2**20:.1f} MiB; manifest {manifest_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
