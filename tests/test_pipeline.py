"""The main job: every notebook headless with the cpu-mini profile, as `make run` runs it."""

from __future__ import annotations

import json
import re

import pytest

from gui_r1_lite import miniature, pipeline
from gui_r1_lite.runio import read_jsonl


@pytest.mark.slow
def test_whole_cpu_mini_pipeline(tmp_path, capfd):
    run = tmp_path / "run"
    assert pipeline.main(["--out", str(run)]) == 0
    check_summary(run)
    check_progress(run, capfd.readouterr())


def check_progress(run, captured) -> None:
    """Notebook 04's long run told the terminal where it was, and the terminal held none of the known noise."""
    records = read_jsonl(run / "notebooks" / f"04_grpo_training{pipeline.PROGRESS_SUFFIX}")
    assert {r["stage"] for r in records if r["event"] == "start"} >= {"seed 1 · sft_grpo_train", "seed 0 · warm_train"}
    lines = [line for line in captured.out.splitlines() if line.startswith("[pipeline] 04_grpo_training ")]
    assert any(re.search(r"stage \d+/\d+ seed \d · \w+_train: step \d+/\d+, .* left", line) for line in lines), lines
    for noise in ("Passed unknown parameter", "without encryption"):
        assert noise not in captured.err


def check_summary(run) -> None:
    """What a finished cpu-mini run must hold (also usable on any run folder)."""
    summary = json.loads((run / "summary.json").read_text())
    stems = [p.stem for p in pipeline.notebook_paths()]
    assert list(summary["seconds"]) == stems and all((run / "notebooks" / f"{s}.ipynb").exists() for s in stems)
    assert summary["profile"]["name"] == "cpu-mini" and summary["versions"]["trl"] == "1.16.0"
    assert summary["curation"]["rows"] > 0 and summary["curation"]["validation"]["rows_skipped"] == 0
    training = summary["training"]
    assert training["experiment"] == "miniature" and training["global_step"] > 0
    assert {"reward", "loss"} <= set(training["start"]) and {"reward", "loss"} <= set(training["end"])
    mini = summary["miniature"]
    assert set(mini) == set(miniature.ARMS)
    for arm in miniature.ARMS:
        for metric in miniature.METRICS:
            v = mini[arm][metric]
            assert len(v["per_seed"]) == 2 and all(0.0 <= x <= 1.0 for x in v["per_seed"]), (arm, metric)
    details = summary["results"]["04_grpo_training"]["miniature_details"]
    assert details["n_heldout"] >= 200
    check_gain_and_online(summary, details)
    if details["settings"]["tasks"]:  # notebook 05 scored the trained arms on the tasks outside the mix
        assert set(summary["transfer"]) == {"warm", "sft", "sft_grpo"}
    policies = summary["evaluation"]  # policy -> benchmark file -> metrics
    assert {"oracle", "random", "base", "trained"} <= set(policies)
    for per_file in policies["oracle"].values():
        assert per_file["action"]["strict_step_success"] == 1.0


def check_gain_and_online(summary: dict, details: dict) -> None:
    """The gain of SFT → GRPO over SFT with its interval, consistent with the arms' per-seed figures;
    online success per arm (fractions, with intervals) exactly when the run had online stages."""
    mini, gain = summary["miniature"], summary["gain"]
    assert gain["vs"] == "sft" and gain["arm"] == "sft_grpo"
    for key in ("click_accuracy", "click_accuracy_parsed"):
        lo, hi = gain[key]["ci95"]
        assert -1.0 <= lo <= gain[key]["mean"] <= hi <= 1.0, (key, gain[key])
    paired = [b - a for a, b in zip(mini["sft"]["click_accuracy"]["per_seed"],
                                    mini["sft_grpo"]["click_accuracy"]["per_seed"], strict=True)]
    assert gain["click_accuracy"]["per_seed"] == pytest.approx(paired)
    assert set(gain["mcnemar_p"]) == {str(s) for s in details["seeds"]}
    assert ("online" in summary) == bool(details["settings"].get("online_episodes"))
    for arm, value in summary.get("online", {}).items():
        lo, hi = value["success"]["ci95"]
        assert 0.0 <= lo <= value["success"]["mean"] <= hi <= 1.0, (arm, value)
    if "online" in summary:  # the closed-loop gain, paired on the pages both arms played
        online_gain = gain["online_success"]
        lo, hi = online_gain["ci95"]
        assert -1.0 <= lo <= online_gain["mean"] <= hi <= 1.0, online_gain
        per_arm = [b - a for a, b in zip(summary["online"]["sft"]["success"]["per_seed"],
                                         summary["online"]["sft_grpo"]["success"]["per_seed"], strict=True)]
        assert online_gain["per_seed"] == pytest.approx(per_arm)
