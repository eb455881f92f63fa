"""The main job: every notebook headless with the cpu-mini profile, as `make run` runs it."""

from __future__ import annotations

import json
import re

import pytest

from gui_r1_lite.runio import read_jsonl
from harness import miniature, pipeline


@pytest.mark.slow
def test_whole_cpu_mini_pipeline(tmp_path, capfd):
    run = tmp_path / "run"
    assert pipeline.main(["--out", str(run)]) == 0
    check_summary(run)
    # the same figures as the reference made on this processor, to the digit (threads and the math libraries'
    # dispatch pinned); a processor no reference was made on is said to be one (float kernels differ)
    summary = json.loads((run / "summary.json").read_text())
    known = miniature.reference.reference_for(miniature.reference.machine()["cpu"]) is not None
    expected = r"matches make_run_reference(\.[\w-]+)?\.json to the digit" if known else "no reference made on this"
    assert re.match(expected, summary["reference_check"]), summary["reference_check"]
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
    assert set(mini) == {*miniature.ARMS, "warm_start", "looks"}  # warm_start: the arms' start, the base itself
    for arm, looks in mini["looks"].items():  # click accuracy minus the blind score, with its interval
        assert -1.0 <= looks["ci95"][0] <= looks["mean"] <= looks["ci95"][1] <= 1.0, (arm, looks)
        assert len(mini.get(arm, {}).get("blind", {}).get("click_accuracy", {}).get("per_seed", [0, 0])) == 2
    for arm in miniature.ARMS:
        for metric in miniature.METRICS:
            v = mini[arm][metric]
            assert len(v["per_seed"]) == 2 and all(0.0 <= x <= 1.0 for x in v["per_seed"]), (arm, metric)
    details = summary["results"]["04_grpo_training"]["miniature_details"]
    assert details["n_heldout"] >= details["settings"]["min_heldout_rows"] >= 100
    check_gain_and_online(summary, details)
    if details["settings"]["tasks"]:  # notebook 05 scored the trained arms on the tasks outside the mix
        assert set(summary["transfer"]) == {"warm", "sft", "sft_grpo"}
    policies = summary["evaluation"]  # policy -> benchmark file -> metrics
    assert {"oracle", "random", "base", "trained", "trained_blind"} <= set(policies)
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
    online = summary["online"]  # the arms' closed-loop success, or why it did not run
    assert ("skipped" in online) == (not details["settings"].get("online_episodes"))
    if "skipped" in online:
        assert set(online) == {"skipped"} and online["skipped"]
        return
    for arm, value in online.items():
        lo, hi = value["success"]["ci95"]
        assert 0.0 <= lo <= value["success"]["mean"] <= hi <= 1.0, (arm, value)
    # the closed-loop gain, paired on the pages both arms played
    online_gain = gain["online_success"]
    lo, hi = online_gain["ci95"]
    assert -1.0 <= lo <= online_gain["mean"] <= hi <= 1.0, online_gain
    per_arm = [b - a for a, b in zip(online["sft"]["success"]["per_seed"], online["sft_grpo"]["success"]["per_seed"],
                                     strict=True)]
    assert online_gain["per_seed"] == pytest.approx(per_arm)


def test_a_run_without_a_browser_says_why_the_closed_loop_did_not_run(tmp_path, monkeypatch, capsys):
    # notebook 04 ran a miniature offline only (no Chromium): one line at the start names the fix, and
    # summary.json records why instead of leaving the online block out without a word
    why = "Chromium not found; install it with `sudo bash scripts/install_capture_deps.sh`"
    monkeypatch.setattr("harness.miniature.runner.online_missing", lambda: why)
    monkeypatch.setattr(pipeline, "miniature_result", lambda run_dir: {"stats": {}})
    monkeypatch.setattr(pipeline, "_run_one", lambda *a, **k: None)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for stem in ("04_grpo_training", "05_evaluation"):
        (notebooks / f"{stem}.ipynb").write_text("{}")
    run = tmp_path / "run"
    pipeline.write_result(pipeline.artifacts_dir(run, "04_grpo_training", notebooks), {"experiment": "miniature"})
    summary = pipeline.run_pipeline("cpu-mini", run, start=5, notebooks_dir=notebooks)
    lines = [line for line in capsys.readouterr().out.splitlines() if "closed loop" in line]
    assert lines == [f"[pipeline] the closed loop (online success per arm) will not run: {why}"]
    assert summary["online"] == {"skipped": why}
    assert json.loads((run / "summary.json").read_text())["online"] == {"skipped": why}
    # a reason that does not name the fix gets it
    monkeypatch.setattr("harness.miniature.runner.online_missing", lambda: "the Python package miniwob is missing")
    assert pipeline.online_skipped() == ("the Python package miniwob is missing; install it with "
                                         "`sudo bash scripts/install_capture_deps.sh`")
