"""The shipped result files: what the study and the sweep leave in `docs/results/` (`RESULTS`), the
one place the README's and the docs' figures about them are read from (a test holds every quoted
figure to these files). A run folder holds models and predictions and is git-ignored; its result
files are copied out of it byte for byte (`--results DIR` of `python -m study`), never rewritten.

    python -m study --sweep runs/sweep --seeds 0,1 --results docs/results         # sweep_evidence.json
    python -m study --study runs/study --results docs/results/study               # study.json, study.md, parts
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from harness.miniature.runner import RESULT_FILE

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
#: The folder `make study` ships its result files to.
STUDY_RESULTS = RESULTS / "study"


def study_result_files(study: dict) -> list[str]:
    """A finished study's result files, relative to its folder: `study.json`, `study.md` and each
    part's result file (`visits/miniature.json`, ...): tables, per-seed figures, compute and wall time."""
    return ["study.json", "study.md", *(f"{name}/{RESULT_FILE}" for name in study["parts"])]


#: The repository's folder, which shipped result files name relative to it.
REPO_ROOT = Path(__file__).resolve().parents[1]


def ship_results(out: str | os.PathLike, names: Iterable[str], dest: str | os.PathLike) -> list[Path]:
    """Copy the result files `names` (relative to the run folder `out`) into `dest`, byte for byte but for the
    repository's own absolute path, written relative to it (`<repository>/data_samples/...` ->
    `data_samples/...`: no shipped file names a place outside the repository), under the same relative paths;
    FileNotFoundError naming the first that `out` lacks. Returns the copies."""
    out, dest, names = Path(out), Path(dest), list(names)
    if missing := [n for n in names if not (out / n).is_file()]:
        raise FileNotFoundError(f"{out / missing[0]}: no such result file to ship to {dest}")
    copies = []
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        data = (out / name).read_bytes().replace(f"{REPO_ROOT}{os.sep}".encode(), b"")
        (dest / name).write_bytes(data)
        copies.append(dest / name)
    return copies
