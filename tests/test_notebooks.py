"""Every notebook runs headless under papermill, as the pipeline runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import papermill
import pytest

from harness import pipeline

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data_samples"


def params(out: Path) -> dict:
    return {"profile": "cpu-mini", "output_dir": str(out), "data_dir": str(DATA), "run_dir": str(out.parent)}


def test_notebooks_have_a_parameters_cell_and_no_outputs():
    for nb_path in pipeline.notebook_paths():
        nb = nbformat.read(nb_path, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{nb_path.name}: needs exactly one cell tagged 'parameters'"
        assert "profile" in tagged[0].source and "output_dir" in tagged[0].source
        assert not any(c.get("outputs") or c.get("execution_count") for c in nb.cells if c.cell_type == "code")
        assert "show_environment" in nb.cells[1].source or "show_environment" in nb.cells[2].source


def test_parameter_cells_hold_at_most_six_knobs():
    """The rest are fields of the profile, changed after its name (`profiles.get_profile`)."""
    for nb_path in pipeline.notebook_paths():
        cell = next(c for c in nbformat.read(nb_path, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
        knobs = re.findall(r"^(\w+)\s*=", cell.source, re.M)
        assert len(knobs) <= 6, f"{nb_path.name}: {len(knobs)} parameters {knobs}"
        assert list(papermill.inspect_notebook(str(nb_path))) == knobs, f"{nb_path.name}: papermill misreads a line"


def test_a_profile_parameter_changes_fields_after_its_name():
    from gui_r1_lite.profiles import get_profile

    changed = get_profile("cpu-mini eval_limit=4 difficulty_band=(0.0, 0.5) eval_benchmark_dir=/data/gui r1")
    assert (changed.name, changed.eval_limit, changed.difficulty_band) == ("cpu-mini", 4, (0.0, 0.5))
    assert changed.eval_benchmark_dir == "/data/gui r1" and get_profile("cpu-mini").eval_limit == 8
    with pytest.raises(KeyError, match="no field 'eval_limits'"):
        get_profile("cpu-mini eval_limits=4")
    with pytest.raises(ValueError, match="eval_limit must be int like 8, got 'all'"):
        get_profile("cpu-mini eval_limit=all")


def test_notebooks_import_modules_under_their_own_names():
    short = re.compile(r"^\s*(?:from \S+ )?import \S+ as [A-Z]{1,2}$", re.MULTILINE)
    for nb_path in pipeline.notebook_paths():
        for cell in nbformat.read(nb_path, as_version=4).cells:
            if cell.cell_type == "code":
                assert not short.search(cell.source), f"{nb_path.name}: {short.search(cell.source)[0]!r}"


def test_a_notebook_s_results_are_found_by_its_number(tmp_path):
    out = pipeline.artifacts_dir(tmp_path, "04")
    assert out == tmp_path / "artifacts" / "04_grpo_training"
    assert pipeline.read_result(tmp_path, "04") is None
    pipeline.write_result(out, {"experiment": "miniature", "miniature": {"sft": 1}, "other": 2})
    assert pipeline.result_path(tmp_path, "04_grpo_training") == out / "result.json"
    assert pipeline.read_result(tmp_path, "04") == {"experiment": "miniature", "miniature": {"sft": 1}, "other": 2}
    with pytest.raises(ValueError, match="no single notebook"):
        pipeline.artifacts_dir(tmp_path, "09")


def test_the_summary_lifts_each_notebook_s_fields_to_its_top():
    results = {"01_data_curation": {"rows": 3, "source": "x"},
               "04_grpo_training": {"experiment": "recipe", "global_step": 2, "grpo_run": "r"}}
    assert pipeline.top_level_summary(results) == {"curation": {"rows": 3},
                                                   "training": {"experiment": "recipe", "global_step": 2}}


def test_02_action_space(tmp_path):
    pipeline.run_notebook(ROOT / "notebooks" / "02_action_space.ipynb", tmp_path / "02.ipynb", params(tmp_path / "02"))
    assert (tmp_path / "02" / "frames.png").stat().st_size > 10_000
    from gui_r1_lite.actions import ACTION_SPACES

    nb = json.loads((tmp_path / "02.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert "You are GUI-R1, a reasoning GUI Agent Assistant." in text and "with the action history being '" in text
    for name, space in ACTION_SPACES.items():  # every space printed whole, and every action with its fields
        assert f"{name:<16}{len(space):>3}  {', '.join(space)}" in text, name
        assert all(re.search(rf"^{re.escape(a)} +point ", text, re.M) for a in space), name
    assert "…" not in text


def test_03_reward_functions(tmp_path):
    pipeline.run_notebook(ROOT / "notebooks" / "03_reward_functions.ipynb", tmp_path / "03.ipynb", params(tmp_path / "03"))
    assert (tmp_path / "03" / "dense_rewards.png").exists()
    nb = json.loads((tmp_path / "03.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert "240/240 cases identical" in text and "file created: False" in text


def test_pipeline_names_the_failing_notebook_and_cell(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name, code in [("01_ok.ipynb", "x = 1"), ("02_bad.ipynb", "raise ValueError('boom')")]:
        nb = nbformat.v4.new_notebook()
        p = nbformat.v4.new_code_cell('profile = "cpu-mini"\noutput_dir = ""\ndata_dir = ""\nrun_dir = ""')
        p.metadata["tags"] = ["parameters"]
        nb.cells = [p, nbformat.v4.new_code_cell(code)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, nbs / name)
    with pytest.raises(pipeline.NotebookFailed, match=r"02_bad.ipynb failed in cell \d+ .*ValueError: boom"):
        pipeline.run_pipeline("cpu-mini", tmp_path / "run", notebooks_dir=nbs)
    assert (tmp_path / "run" / "notebooks" / "01_ok.ipynb").exists()
    assert (tmp_path / "run" / "notebooks" / "02_bad.ipynb").exists()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "01_ok" in summary["seconds"] and "02_bad" not in summary["seconds"]
    failed = summary["failed"]
    assert summary["status"] == "failed" and failed["notebook"] == "02_bad" and failed["error"] == "ValueError: boom"
    assert isinstance(failed["cell"], int) and Path(failed["executed_notebook"]).exists()


@pytest.mark.slow
def test_01_data_curation(tmp_path):
    out = tmp_path / "01"
    pipeline.run_notebook(ROOT / "notebooks" / "01_data_curation.ipynb", tmp_path / "01.ipynb",
                          {**params(out), "profile": "cpu-mini difficulty_max_new_tokens=8", "difficulty_rows": 24})
    result = json.loads((out / "result.json").read_text())
    assert [s["name"] for s in result["steps"]] == ["validity", "deduplicate", "balance", "difficulty"]
    assert result["validation"]["rows_read"] == 815 and result["validation"]["rows_skipped"] == 0
    assert result["steps"][-1]["rows_in"] == 24 and result["rows"] == result["steps"][-1]["kept"]
    from gui_r1_lite.data import load_gui_r1

    curated = load_gui_r1(result["curated"], strict=True)
    assert len(curated) == result["rows"] and all("success_rate" in s.extras for s in curated)
    for name in ("raw_samples.png", "distribution.png"):
        assert (out / name).stat().st_size > 10_000


@pytest.mark.slow
def test_04_grpo_training_miniature(tmp_path):
    """cpu-mini's default: the miniature (warm start, GRPO, SFT arm, held-out evaluation) on a tiny budget."""
    out = tmp_path / "04"
    settings = "{tiny: {}, warm_steps: 2, sft_batch: 2, extra_prompts: 2, grpo_prompts_per_step: 1, num_generations: 2, " \
               "max_completion_length: 8, max_new_tokens: 8, eval_limit: 4, eval_batch_size: 4}"
    pipeline.run_notebook(ROOT / "notebooks" / "04_grpo_training.ipynb", tmp_path / "04.ipynb",
                          {**params(out), "profile": "cpu-mini train_seeds=(0,) train_samples_shown=2",
                           "miniature_settings": settings})
    result = json.loads((out / "result.json").read_text())
    assert result["experiment"] == "miniature" and result["global_step"] == 2
    assert set(result["miniature"]) == {"random", "sft", "sft_grpo", "warm_start", "looks"}  # looks: the blind check
    assert result["miniature"]["sft_grpo"]["click_accuracy"]["per_seed"] and "reward" in result["end"]
    assert (Path(result["trained_model"]) / "config.json").exists() and result["adapter_dir"] is None
    for name in ("grpo_curves.png", "before_after.png", "live_curves.png", "miniature.png", "blind_check.png"):
        assert (out / name).stat().st_size > 5_000, name
    # the GRPO step by hand ran before the run: LoRA and 4-bit printed, weights moved, the departures shown
    cells = json.loads((tmp_path / "04.ipynb").read_text())["cells"]
    text = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                   for c in cells for o in c.get("outputs", []))
    for shown in ("LoraConfig(", "trainable params", "LoRA matrices moved", "dapo: ", "| loss_type | grpo | dapo |",
                  "white screen: ", "the same completion with and without the screen on "):
        assert shown in text, shown


@pytest.mark.slow
def test_04_grpo_training_recipe(tmp_path):
    """The recipe path (gpu-3b's, here with cpu-mini's tiny recipe): LoRA GRPO, completions before and after."""
    out = tmp_path / "04"
    pipeline.run_notebook(ROOT / "notebooks" / "04_grpo_training.ipynb", tmp_path / "04.ipynb",
                          {**params(out), "profile": "cpu-mini train_max_steps=2 train_samples_shown=2",
                           "experiment": "recipe"})
    result = json.loads((out / "result.json").read_text())
    assert result["experiment"] == "recipe" and result["global_step"] == 2 and "miniature" not in result
    assert (Path(result["adapter_dir"]) / "adapter_config.json").exists()
    assert (Path(result["base_model"]) / "config.json").exists()
    files = len(list((DATA / "test").glob("*.parquet")))  # samples_shown rows of each benchmark file
    assert len((out / "samples_end" / "predictions.jsonl").read_text().splitlines()) == 2 * files


def test_run_interactively_each_notebook_writes_where_the_later_ones_look():
    """Stepped through by hand (no papermill parameters), 01..05 share one run folder laid out as the
    pipeline lays it out: notebook 04 finds 01's curated file and 05 finds 04's result there."""
    here = ROOT / "notebooks"
    run_dir = (here / "../runs/notebooks").resolve()
    for nb_path in pipeline.notebook_paths():
        defaults = papermill.inspect_notebook(str(nb_path))
        folder = {name: (here / defaults[name]["default"].strip("\"'")).resolve()
                  for name in ("output_dir", "run_dir") if name in defaults}
        assert folder.get("run_dir", run_dir) == run_dir, nb_path.name
        assert folder["output_dir"] == pipeline.artifacts_dir(run_dir, nb_path.stem), nb_path.name
