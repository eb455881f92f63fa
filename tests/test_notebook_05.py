"""Notebook 05 runs headless under papermill on cpu-mini and reports every policy it evaluated."""

from __future__ import annotations

import json
from pathlib import Path

from gui_r1_lite import pipeline
from tests.helpers import write_benchmark_files

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "05_evaluation.ipynb"


def test_05_evaluation(tmp_path, tiny_model_dir):
    data = ROOT / "data_samples"
    if not list((data / "test").glob("*.parquet")):
        data = tmp_path / "data"
        write_benchmark_files(data / "test")
    out = tmp_path / "05"
    pipeline.run_notebook(NOTEBOOK, tmp_path / "05.ipynb", {
        "profile": "cpu-mini", "output_dir": str(out), "data_dir": str(data), "run_dir": str(tmp_path),
        "model_dir": str(tiny_model_dir), "limit": 4, "max_new_tokens": 16})
    result = json.loads((out / "result.json").read_text())
    assert set(result["policies"]) == {"oracle", "random", "base"}
    files = [p.stem for p in sorted((data / "test").glob("*.parquet"))]
    assert result["files"] == files
    for stem in files:
        oracle = result["policies"]["oracle"][stem]
        assert oracle["action"]["strict_step_success"] == 1.0
        assert oracle["grounding"] is None or oracle["grounding"]["overall"] == 1.0
        base = result["policies"]["base"][stem]
        assert base["n"] == 4 and 0 <= base["parse_failures"] <= 4
    for name in ("gallery.png", "before_after.png", "metrics_table.csv"):
        assert (out / name).stat().st_size > 0
