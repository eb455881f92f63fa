"""The main job's progress: records folded into status lines, lines throttled, and a notebook run
headless reporting its stage through the pipeline."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import time

import nbformat
import pytest

from gui_r1_lite import progress
from harness import pipeline


def test_durations_read_as_a_clock():
    assert [progress.clock(s) for s in (0, 12.4, 65, 3600 + 125)] == ["0s", "12s", "1m05s", "1h02m"]


def test_the_line_names_stage_and_step_and_estimates_what_is_left():
    view = progress.ProgressView("04_grpo_training", started=0.0)
    assert view.add({"t": 10.0, "stage": "seed 0 · random_eval", "event": "start", "index": 1, "total": 7})
    assert not view.add({"t": 30.0, "stage": "seed 0 · random_eval", "event": "end", "seconds": 20.0})
    assert view.add({"t": 40.0, "stage": "seed 0 · warm_train", "event": "start", "index": 2, "total": 7,
                     "steps": 10})
    # the first step record comes after loading the model: the rate is measured from it, 2 s a step
    assert not view.add({"t": 50.0, "stage": "seed 0 · warm_train", "step": 0, "steps": 10})
    assert not view.add({"t": 60.0, "stage": "seed 0 · warm_train", "step": 5, "steps": 10})
    line = view.line(now=61.0, cell="9/13")
    assert line.startswith("[pipeline] 04_grpo_training 1m01s · cell 9/13 · stage 2/7 seed 0 · warm_train: ")
    assert "step 5/10, 21s in stage, ~10s left" in line
    # 5 more stages at the 20 s the finished one took, plus this stage's 10 s
    assert line.endswith("~1m50s left in 5 more stages")


def test_a_stage_known_only_from_its_steps_still_gets_a_line():
    view = progress.ProgressView("04_grpo_training", started=0.0)
    assert view.add({"t": 5.0, "stage": "GRPO training", "step": 0, "steps": 4})
    assert not view.add({"t": 9.0, "stage": "GRPO training", "step": 2, "steps": 4})
    assert view.line(now=9.0) == "[pipeline] 04_grpo_training 9s · GRPO training: step 2/4, 4s in stage, ~4s left"


def test_an_evaluation_counts_the_lines_of_its_predictions(tmp_path):
    preds = tmp_path / "predictions.jsonl"
    view = progress.ProgressView("05_evaluation", started=time.time())
    view.add({"t": time.time(), "stage": "scoring", "event": "start", "steps": 8, "count_lines": str(preds)})
    assert "step" not in view.line()  # no file yet: nothing to count
    preds.write_text("{}\n" * 3)
    assert "scoring: step 3/8" in view.line()


def test_report_writes_only_inside_the_main_job(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    progress.report("nothing to write to")  # outside the main job: no file, no error
    path = tmp_path / "p.jsonl"
    monkeypatch.setenv(progress.PROGRESS_ENV, str(path))
    progress.report("seed 0 · warm_train", step=3, steps=8)
    monkeypatch.setenv("RANK", "1")
    progress.report("seed 0 · warm_train", step=4, steps=8)  # other processes of a multi-process run stay quiet
    [rec] = [json.loads(line) for line in path.read_text().splitlines()]
    assert rec["stage"] == "seed 0 · warm_train" and rec["step"] == 3 and rec["steps"] == 8 and rec["event"] == "step"


def test_the_running_cell_is_read_from_the_notebook_papermill_saves(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("x"), nbformat.v4.new_code_cell("1"), nbformat.v4.new_code_cell("2")]
    nb.cells[2].metadata["papermill"] = {"status": "running"}
    nbformat.write(nb, tmp_path / "run.ipynb")
    assert progress.running_cell(tmp_path / "run.ipynb") == "2/2"
    (tmp_path / "torn.ipynb").write_text('{"cells": [')
    assert progress.running_cell(tmp_path / "torn.ipynb") is None


def test_watch_prints_each_stage_start_and_otherwise_at_most_every_few_seconds(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    lines: list[str] = []
    t0 = time.perf_counter()
    with progress.watch(tmp_path / "p.jsonl", "04_x", every=0.5, poll=0.05, write=lines.append):
        assert os.environ[progress.PROGRESS_ENV] == str(tmp_path / "p.jsonl")
        progress.report("stage A", "start", index=1, total=2)
        for k in range(20):  # 20 step records in ~1 s: they do not add lines of their own
            progress.report("stage A", step=k, steps=20)
            time.sleep(0.05)
        progress.report("stage A", "end", seconds=1.0)
        progress.report("stage B", "start", index=2, total=2)
        time.sleep(0.3)
    seconds = time.perf_counter() - t0
    assert progress.PROGRESS_ENV not in os.environ
    starts = [i for i, line in enumerate(lines) if "stage 1/2 stage A" in line and "0s in stage" in line]
    assert starts and "stage 2/2 stage B" in lines[-1]
    assert 3 <= len(lines) <= 2 + seconds / 0.5 + 1, lines  # two stage starts and one line per 0.5 s between
    assert any("step 1" in line and "/20" in line for line in lines[1:-1]), lines


def test_watch_writes_to_the_terminal_even_while_a_stage_redirects_its_output(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    stage_log = io.StringIO()
    with progress.watch(tmp_path / "p.jsonl", "04_x", every=60, poll=0.05), contextlib.redirect_stdout(stage_log):
        progress.report("stage A", "start")  # as a miniature stage does, with its chatter sent to log.txt
        time.sleep(0.4)
    assert "stage A" in capsys.readouterr().out and "stage A" not in stage_log.getvalue()


def _notebook(path, code: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "cpu-mini"\noutput_dir = ""\ndata_dir = ""')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_a_notebook_run_by_the_pipeline_reports_its_stage(tmp_path, capfd, caplog):
    src = tmp_path / "07_demo.ipynb"
    _notebook(src, "import time\nfrom gui_r1_lite import progress\n"
                   "progress.report('seed 0 · demo_train', 'start', index=1, total=1, steps=3)\n"
                   "for k in range(4):\n"
                   "    progress.report('seed 0 · demo_train', step=k, steps=3)\n"
                   "    time.sleep(0.6)\n")
    dest = tmp_path / "run" / "notebooks" / src.name
    with caplog.at_level(logging.WARNING, logger="papermill"):
        pipeline.run_notebook(src, dest, {"profile": "cpu-mini", "output_dir": "", "data_dir": "", "run_dir": "x"},
                              progress_every=0.8)
    out, err = capfd.readouterr()
    lines = [line for line in out.splitlines() if line.startswith("[pipeline] 07_demo")]
    # cell 3 of 3: papermill adds the cell of injected parameters
    assert any("cell 3/3 · stage 1/1 seed 0 · demo_train" in line for line in lines), lines
    assert any("step 1/3" in line or "step 2/3" in line for line in lines), lines
    # the notebook declares no run_dir: it is not passed, so papermill has nothing to warn of
    assert "run_dir" not in caplog.text and "Passed unknown parameter" not in err
    assert "without encryption" not in err  # the kernel's channels are encrypted where jupyter_client can
    records = [json.loads(line) for line in dest.with_suffix(pipeline.PROGRESS_SUFFIX).read_text().splitlines()]
    assert [r["step"] for r in records if "step" in r] == [0, 1, 2, 3]


@pytest.mark.parametrize("given, kept", [({"profile": "x", "run_dir": "y"}, {"profile": "x"}), ({}, {})])
def test_a_notebook_gets_only_the_parameters_it_declares(tmp_path, given, kept):
    _notebook(tmp_path / "n.ipynb", "pass")
    assert pipeline.declared_parameters(tmp_path / "n.ipynb", given) == kept


def test_a_notebook_without_a_parameters_cell_gets_them_all(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, tmp_path / "n.ipynb")
    (tmp_path / "unreadable.ipynb").write_text("{}")
    for name in ("n.ipynb", "unreadable.ipynb"):  # papermill then injects (or refuses) them itself
        assert pipeline.declared_parameters(tmp_path / name, {"run_dir": "y"}) == {"run_dir": "y"}


def test_seeds_side_by_side_interleave_without_a_line_per_step():
    view = progress.ProgressView("04_grpo_training", started=0.0)
    assert view.add({"t": 0.0, "stage": "seed 0 · warm_train", "event": "start", "index": 2, "total": 14, "steps": 10})
    assert view.add({"t": 1.0, "stage": "seed 1 · warm_train", "event": "start", "index": 9, "total": 14, "steps": 10})
    # the two seeds' step records alternate: no new line for either
    assert not any(view.add({"t": 2.0 + k, "stage": f"seed {k % 2} · warm_train", "step": k, "steps": 10})
                   for k in range(6))
    line = view.line(now=8.0)
    assert "stage 9/14 seed 1 · warm_train: step 5/10" in line and "beside it: seed 0 · warm_train step 4/10" in line
    assert not view.add({"t": 9.0, "stage": "seed 1 · warm_train", "event": "end", "seconds": 8.0})
    assert view.stage.name == "seed 0 · warm_train" and view.durations == [8.0]
    assert "beside it" not in view.line(now=9.0)


def test_a_stage_without_a_number_ends_when_the_next_begins():
    view = progress.ProgressView("04_grpo_training", started=0.0)
    assert view.add({"t": 0.0, "stage": "scoring the start policy", "event": "start", "steps": 4})
    assert view.add({"t": 5.0, "stage": "GRPO training", "step": 0, "steps": 4})
    assert "beside it" not in view.line(now=6.0) and list(view.running) == ["GRPO training"]


def test_the_stages_left_count_those_not_started_when_seeds_run_side_by_side():
    view = progress.ProgressView("04", started=0.0)
    view.add({"t": 0.0, "stage": "seed 0 · a", "event": "start", "index": 1, "total": 4})
    view.add({"t": 1.0, "stage": "seed 1 · a", "event": "start", "index": 3, "total": 4})
    view.add({"t": 2.0, "stage": "seed 1 · a", "event": "end", "seconds": 1.0})
    view.add({"t": 3.0, "stage": "seed 1 · b", "event": "start", "index": 4, "total": 4})
    view.add({"t": 4.0, "stage": "seed 1 · b", "event": "end", "seconds": 1.0})
    assert view.stage.name == "seed 0 · a" and view.line(now=5.0).endswith("~1s left in 1 more stage")


def test_a_loop_bar_is_drawn_only_when_asked(capsys):
    with progress.bar(5, "predict oracle", show=False, done=2) as advance:
        advance(3)
    assert capsys.readouterr().err == ""  # the default in notebooks' own loops: nothing drawn
    with progress.bar(5, "predict oracle", show=True, done=2) as advance:
        advance(3)
    err = capsys.readouterr().err
    assert "predict oracle" in err and "2/5" in err  # a resumed loop starts at what was done


def test_progress_bars_come_from_this_module_only():
    """One way of reporting progress: no module of the package but progress.py imports tqdm itself."""
    import ast
    from pathlib import Path

    package = Path(progress.__file__).parent
    importers = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "tqdm" for n in names):
                importers.add(path.relative_to(package).as_posix())
    assert importers == {"progress.py"}
