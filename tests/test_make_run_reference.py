"""`make run`'s per-seed figures against the shipped reference (`miniature.reference`)."""

import copy

from gui_r1_lite.runio import write_json_atomic
from harness.miniature import reference

SUMMARY = {
    "profile": {"name": "cpu-mini"}, "status": "ok",
    "miniature": {"sft": {"click_accuracy": {"mean": 0.6, "per_seed": [0.6, 0.6]}},
                  "sft_grpo": {"click_accuracy": {"mean": 0.55, "per_seed": [0.5091, 0.6]}}},
    "gain": {"click_accuracy": {"mean": -0.05, "ci95": [-0.1, 0.0], "per_seed": [-0.0909, 0.0]}},
}


def test_figures_are_every_per_seed_value_in_percent():
    got = dict(reference.figures(SUMMARY))
    assert got == {"miniature/sft/click_accuracy[0]": 60.0, "miniature/sft/click_accuracy[1]": 60.0,
                   "miniature/sft_grpo/click_accuracy[0]": 50.9, "miniature/sft_grpo/click_accuracy[1]": 60.0,
                   "gain/click_accuracy[0]": -9.1, "gain/click_accuracy[1]": 0.0}


def test_verdict_matches_and_names_what_moved(tmp_path):
    path = tmp_path / "ref.json"
    write_json_atomic(path, reference.reference_of(SUMMARY))
    assert reference.verdict(SUMMARY, path).startswith("matches ref.json to the digit (6 per-seed figures)")
    # below the reported digit: still a match
    close = copy.deepcopy(SUMMARY)
    close["miniature"]["sft_grpo"]["click_accuracy"]["per_seed"][0] = 0.50912
    assert reference.verdict(close, path).startswith("matches")
    moved = copy.deepcopy(SUMMARY)
    moved["miniature"]["sft_grpo"]["click_accuracy"]["per_seed"][0] = 0.436
    line = reference.verdict(moved, path)
    assert line.startswith("differs from ref.json in 1 of 6")
    assert "miniature/sft_grpo/click_accuracy[0]: 43.6 here, 50.9 in the reference" in line


def test_verdict_refuses_other_profiles_and_missing_files(tmp_path):
    path = tmp_path / "ref.json"
    assert "nothing to compare" in reference.verdict(SUMMARY, path)
    write_json_atomic(path, {**reference.reference_of(SUMMARY), "profile": "gpu-3b"})
    assert "another profile" in reference.verdict(SUMMARY, path)


def test_each_processor_has_its_own_reference_and_an_unknown_one_is_said_to_be(tmp_path, monkeypatch):
    main = tmp_path / "make_run_reference.json"
    assert reference.reference_path_to_write("Intel Xeon", main) == main          # the first one made
    write_json_atomic(main, {**reference.reference_of(SUMMARY), "machine": {"cpu": "Intel Xeon", "cores": 2}})
    amd = reference.reference_path_to_write("AMD EPYC", main)
    assert amd == tmp_path / "make_run_reference.amd-epyc.json"
    moved = copy.deepcopy(SUMMARY)
    moved["miniature"]["sft_grpo"]["click_accuracy"]["per_seed"][0] = 0.436
    write_json_atomic(amd, {**reference.reference_of(moved), "machine": {"cpu": "AMD EPYC", "cores": 2}})
    assert reference.reference_for("Intel Xeon", main) == main and reference.reference_for("AMD EPYC", main) == amd
    assert reference.reference_path_to_write("AMD EPYC", main) == amd           # rewritten in place
    assert reference.reference_for("ARM Neoverse", main) is None
    monkeypatch.setattr(reference, "REFERENCE", main)
    for cpu, start in [("Intel Xeon", "matches make_run_reference.json to the digit"),
                       ("AMD EPYC", "differs from make_run_reference.amd-epyc.json in 1 of 6"),
                       ("ARM Neoverse", "no reference made on this processor (ARM Neoverse)")]:
        monkeypatch.setattr(reference, "machine", lambda cpu=cpu: {"cpu": cpu, "cores": 2})
        assert reference.verdict(SUMMARY).startswith(start), (cpu, reference.verdict(SUMMARY))
