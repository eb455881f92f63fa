"""Notebook 05 runs headless under papermill on cpu-mini and reports every policy it evaluated; after a
miniature it shows the trained policy on its own tasks' held-out rows, the gain and the transfer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import pipeline
from tests.helpers import MINI, write_benchmark_files

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "05_evaluation.ipynb"
TASKS = ["click-option", "click-tab"]

pytestmark = pytest.mark.slow  # each test runs the notebook in a kernel of its own


def test_05_evaluation(tmp_path, tiny_model_dir):
    data = ROOT / "data_samples"
    if not list((data / "test").glob("*.parquet")):
        data = tmp_path / "data"
        write_benchmark_files(data / "test")
    out = tmp_path / "05"
    pipeline.run_notebook(NOTEBOOK, tmp_path / "05.ipynb", {
        "profile": "cpu-mini eval_limit=4 eval_max_new_tokens=16", "output_dir": str(out), "data_dir": str(data),
        "run_dir": str(tmp_path), "model_dir": str(tiny_model_dir)})
    result = json.loads((out / "result.json").read_text())
    # base_blind: the blind check, the same rows with white screenshots
    assert set(result["policies"]) == {"oracle", "random", "base", "base_blind"} and result["transfer"] == {}
    files = [p.stem for p in sorted((data / "test").glob("*.parquet"))]
    assert result["files"] == files
    for stem in files:
        oracle = result["policies"]["oracle"][stem]
        assert oracle["action"]["strict_step_success"] == 1.0
        assert oracle["grounding"] is None or oracle["grounding"]["overall"] == 1.0
        base = result["policies"]["base"][stem]
        assert base["n"] == 4 and 0 <= base["parse_failures"] <= 4
        assert result["policies"]["base_blind"][stem]["n"] == 4 and result["policies"]["base_blind"][stem]["blind"]
    for name in ("gallery.png", "before_after.png", "metrics_table.csv"):
        assert (out / name).stat().st_size > 0


def fake_miniature(run_dir: Path, model_dir: Path) -> dict:
    """A miniature as notebook 04 leaves it in `run_dir`, one seed, scored by baselines: `sft_grpo` is the
    oracle (every step right), the other arms random; every arm's model is `model_dir`."""
    from gui_r1_lite import evaluate
    from gui_r1_lite.data import load_gui_r1, write_gui_r1
    from harness.miniature import DEFAULT_HELDOUT, select_rows

    folder = run_dir / "artifacts" / "04_grpo_training" / "miniature"
    heldout = write_gui_r1(select_rows(load_gui_r1(DEFAULT_HELDOUT).samples, TASKS, (1000, 1002)),
                           folder / "data" / "heldout.parquet", schema="benchmark")
    predictions = {}
    for arm in ("random", "warm", "sft", "sft_grpo"):
        predictions[arm] = str(folder / "seed0" / f"{arm}_eval")
        evaluate.evaluate(heldout, "oracle" if arm == "sft_grpo" else "random", predictions[arm], progress=False,
                          **MINI)
        # and blind, as every miniature scores each arm (random: the white screen's answers differ from the oracle's)
        predictions[f"{arm}_blind"] = str(folder / "seed0" / f"{arm}_blind_eval")
        evaluate.evaluate(heldout, "random", predictions[f"{arm}_blind"], progress=False, blind=True, **MINI)
    study = {"seeds": [0], "n_heldout": len(load_gui_r1(heldout).samples), "predictions": {"0": predictions},
             "models": {"0": {arm: [str(model_dir), None] for arm in ("warm", "sft", "sft_grpo")}},
             "data": {"heldout": str(heldout), "heldout_source": str(DEFAULT_HELDOUT)},
             "settings": {"tasks": TASKS, "max_new_tokens": 8, "warm_steps": 0}}
    for arm in ("random", "sft", "sft_grpo"):
        study[arm] = {m: {"mean": 0.5, "std": 0.0, "per_seed": [0.5]}
                      for m in ("format_rate", "click_accuracy", "strict_step_success")}
    (folder / "miniature.json").write_text(json.dumps(study))
    return study


def test_05_after_a_miniature_shows_its_tasks_the_gain_and_the_transfer(tmp_path, tiny_model_dir):
    fake_miniature(tmp_path, tiny_model_dir)
    out = tmp_path / "05"
    pipeline.run_notebook(NOTEBOOK, tmp_path / "05.ipynb", {
        "profile": "cpu-mini eval_limit=1 eval_max_new_tokens=8 eval_transfer_rows=1", "output_dir": str(out),
        "data_dir": str(ROOT / "data_samples"), "run_dir": str(tmp_path), "model_dir": str(tiny_model_dir)})
    result = json.loads((out / "result.json").read_text())
    assert set(result["transfer"]) == {"warm", "sft", "sft_grpo"}
    assert all(m["n"] == 14 - len(TASKS) for m in result["transfer"].values())  # one row of each task never trained
    nb = json.loads((tmp_path / "05.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert "gain of sft_grpo over sft, click accuracy: +" in text and "| click-tab |" in text
    shown = re.search(r"GRPO from the base \(sft_grpo\) on held-out rows of its tasks \['click-option', 'click-tab'\] \(seed 0\): "
                      r"(\d+) of (\d+) steps hit", text)
    assert shown and shown[1] == shown[2] == "9"  # the oracle's rows: every one a hit
    for name in ("miniature.png", "gallery.png", "gallery_random.png", "before_after.png", "transfer.png", "seeing_vs_white.png"):
        assert (out / name).stat().st_size > 5_000, name
