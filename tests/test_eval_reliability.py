"""Evaluation, pipeline and miniature run folders and command lines under hostile but honest use: a run
folder that knows what made it, bad inputs answered with the fix, failures recorded, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_r1_lite import evaluate as E
from gui_r1_lite.errors import RunFailed, UsageError
from harness import cli
from harness import pipeline as P
from tests.helpers import MINI, full_disk_for, hold_lock, write_benchmark_files

ROOT = Path(__file__).resolve().parents[1]
PIXELS = ["--min-pixels", str(MINI["min_pixels"]), "--max-pixels", str(MINI["max_pixels"])]


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bench")
    write_benchmark_files(folder)
    return folder


@pytest.fixture(scope="module")
def screenspot(bench_dir) -> Path:
    return bench_dir / "screenspot_test.parquet"


def _with_boxes(src: Path, dest: Path, box: list[float], rows: int | None = None) -> Path:
    """A copy of benchmark file `src` whose first `rows` rows (None: all) get target `box`."""
    table = pq.read_table(src).to_pylist()
    for r in table[:rows]:
        r["gt_bbox"] = box
    dest.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(table), dest)
    return dest


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `gui-r1-lite ARGV` run in this process."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


# --- item 1: a run folder knows what made it --------------------------------------------------------

def test_random_into_a_folder_of_oracle_predictions_is_refused(screenspot, tmp_path):
    out = tmp_path / "run"
    assert E.evaluate(screenspot, "oracle", out, progress=False, **MINI)["grounding"]["overall"] == 1.0
    # before: random "scored" 100 % by reusing the oracle's records
    with pytest.raises(E.RunFolderMismatch) as err:
        E.evaluate(screenspot, "random", out, progress=False, **MINI)
    msg = str(err.value)
    assert "policy" in msg and "another --out" in msg and "same arguments" in msg and str(out) in msg
    assert isinstance(err.value, UsageError)


@pytest.mark.parametrize("change", [
    {"policy": E.RandomBaseline(seed=1)},
    {"compat": "strict"},
    {"min_pixels": MINI["min_pixels"] * 2},
    {"max_pixels": MINI["max_pixels"] * 2},
    {"max_new_tokens": 12},
    {"limit": 3},
], ids=["seed", "compat", "min_pixels", "max_pixels", "max_new_tokens", "limit"])
def test_each_argument_that_changes_the_predictions_is_checked(screenspot, tmp_path, change):
    first = {"max_new_tokens": 8, **MINI}
    E.evaluate(screenspot, E.RandomBaseline(seed=0), tmp_path, progress=False, **first)
    again = {"policy": E.RandomBaseline(seed=0), **first, **change}
    with pytest.raises(E.RunFolderMismatch, match=next(iter(change))):
        E.evaluate(screenspot, again.pop("policy"), tmp_path, progress=False, **again)


def test_other_data_under_the_same_name_is_refused(screenspot, tmp_path):
    data = _with_boxes(screenspot, tmp_path / "d" / "screenspot_test.parquet", [10.0, 10.0, 40.0, 30.0], rows=1)
    E.evaluate(screenspot, "oracle", tmp_path / "run", progress=False, **MINI)
    with pytest.raises(E.RunFolderMismatch, match="data"):
        E.evaluate(data, "oracle", tmp_path / "run", progress=False, **MINI)


def test_a_folder_of_predictions_without_a_run_record_is_refused(screenspot, tmp_path):
    (tmp_path / E.PREDICTIONS).write_text('{"id": "screenspot_test/0"}\n')
    with pytest.raises(E.RunFolderMismatch, match="run.json"):
        E.evaluate(screenspot, "oracle", tmp_path, progress=False, **MINI)


def test_overwrite_starts_fresh(screenspot, tmp_path):
    E.evaluate(screenspot, "oracle", tmp_path, progress=False, **MINI)
    s = E.evaluate(screenspot, "random", tmp_path, progress=False, overwrite=True, **MINI)
    assert s["policy"] == "random" and s["grounding"]["overall"] < 0.5
    assert json.loads((tmp_path / E.RUN_FILE).read_text())["made_by"]["policy"]["baseline"] == "random"


class Crashing(E.OracleBaseline):
    """The oracle, but the call after `batches` batches raises (None: never)."""

    def __init__(self, batches: int | None):
        self.left = batches

    def complete(self, rows, images, keys, max_new_tokens):
        if self.left == 0:
            raise RuntimeError("simulated crash")
        self.left = None if self.left is None else self.left - 1
        return super().complete(rows, images, keys, max_new_tokens)


def test_resuming_with_the_same_arguments_still_works(bench_dir, tmp_path):
    full = E.evaluate(bench_dir, Crashing(None), tmp_path / "full", batch_size=3, progress=False, **MINI)
    with pytest.raises(RuntimeError, match="simulated crash"):
        E.evaluate(bench_dir, Crashing(2), tmp_path / "part", batch_size=3, progress=False, **MINI)
    assert len(E.read_records(tmp_path / "part" / E.PREDICTIONS)) == 6
    again = E.evaluate(bench_dir, Crashing(None), tmp_path / "part", batch_size=3, progress=False, **MINI)
    assert again == full
    assert (tmp_path / "part" / E.PREDICTIONS).read_bytes() == (tmp_path / "full" / E.PREDICTIONS).read_bytes()


def _model_folder(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "log.txt").write_text("not part of the model")
    return folder


def test_a_model_is_known_by_its_weights_and_config_not_its_logs(tmp_path):
    folder = _model_folder(tmp_path / "m", b"weights one")

    def identity():
        policy = SimpleNamespace(source=str(folder), adapter=None, quantization=None)
        return E.ModelCompleter(policy, name="label").identity()

    first = identity()
    (folder / "log.txt").write_text("more log lines")
    assert identity() == first
    (folder / "model.safetensors").write_bytes(b"weights two")  # retrained into the same folder
    assert identity() != first
    hub = E.ModelCompleter(SimpleNamespace(source="Qwen/Qwen2.5-VL-3B-Instruct", adapter=None, quantization=None))
    assert hub.identity()["model"] == {"hub_id": "Qwen/Qwen2.5-VL-3B-Instruct"}


def test_a_new_adapter_in_the_same_folder_is_refused_before_the_model_loads(screenspot, tmp_path, capsys,
                                                                           monkeypatch):
    model = _model_folder(tmp_path / "m", b"weights")
    adapter = tmp_path / "a"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"adapter one")
    out = tmp_path / "run"
    made_by = E.run_record(E.load_benchmark(screenspot), E.model_identity(model, adapter), "official",
                           MINI["min_pixels"], MINI["max_pixels"], 8, None)
    E.open_run_folder(out, made_by)
    (out / E.PREDICTIONS).write_text('{"id": "screenspot_test/0"}\n')  # a run with the first adapter began
    (adapter / "adapter_model.safetensors").write_bytes(b"adapter two")

    def no_loading(*a, **k):
        raise AssertionError("the model was loaded before the run folder was checked")

    monkeypatch.setattr("gui_r1_lite.modeling.load_policy", no_loading)
    code, _, err = _cli(["evaluate", "--data", str(screenspot), "--model", str(model), "--adapter", str(adapter),
                         "--out", str(out), "--max-new-tokens", "8", *PIXELS], capsys)
    assert code == 2 and "adapter" in err and "Traceback" not in err


# --- item 4: nothing skipped silently, nonsense refused --------------------------------------------

def test_a_file_whose_every_row_fails_is_a_failed_run_with_the_summary(screenspot, tmp_path, capsys):
    bad = _with_boxes(screenspot, tmp_path / "bad.parquet", [5000.0, 5000.0, 6000.0, 6000.0])
    with pytest.raises(RunFailed, match="column 'gt_bbox': 8 rows"):
        E.evaluate(bad, "oracle", tmp_path / "run", progress=False, **MINI)
    code, _, err = _cli(["evaluate", "--data", str(bad), "--baseline", "oracle", "--out", str(tmp_path / "r2"),
                         *PIXELS], capsys)
    assert code == 1 and "kept 0" in err and "outside the 1280x720 image" in err and "Traceback" not in err


def test_skipped_rows_are_explained_on_stderr_and_in_metrics(screenspot, tmp_path, capsys):
    bad = _with_boxes(screenspot, tmp_path / "some_bad.parquet", [5000.0, 5000.0, 6000.0, 6000.0], rows=3)
    s = E.evaluate(bad, "oracle", tmp_path / "run", progress=False, **MINI)
    assert s["n"] == 5 and s["skipped_rows"] == 3
    err = capsys.readouterr().err
    assert "skipped 3" in err and "column 'gt_bbox': 3 rows (rows 0, 1, 2)" in err
    m = json.loads((tmp_path / "run" / E.METRICS_JSON).read_text())
    assert m["validation"]["skipped_by_column"] == {"gt_bbox": 3} and "outside" in m["validation"]["summary"]
    assert m["skipped"] == {"rows": 3, "by_column": {"gt_bbox": 3}, "by_file": {str(bad): 3}}


@pytest.mark.parametrize("broken, words", [
    (b"not parquet", "not a readable parquet file"),
    (None, "column 'gt_bbox': 8 rows"),
], ids=["unreadable", "every-row-bad"])
def test_a_file_of_a_folder_that_gives_no_row_fails_the_run_naming_it(screenspot, tmp_path, capsys, broken, words):
    # before: the other files were scored and the run exited 0, one benchmark file short
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / screenspot.name).write_bytes(screenspot.read_bytes())
    if broken is None:
        _with_boxes(screenspot, folder / "broken.parquet", [5000.0, 5000.0, 6000.0, 6000.0])
    else:
        (folder / "broken.parquet").write_bytes(broken)
    out = tmp_path / "run"
    code, _, err = _cli(["evaluate", "--data", str(folder), "--baseline", "oracle", "--out", str(out), *PIXELS],
                        capsys)
    assert code == 1 and "1 of 2 file(s)" in err and "broken.parquet" in err and words in err
    assert "Traceback" not in err and not (out / E.PREDICTIONS).exists()


@pytest.mark.parametrize("flags, named", [
    (["--limit", "0"], "--limit"),
    (["--limit", "-1"], "--limit"),
    (["--min-pixels", "200000", "--max-pixels", "100000"], "--min-pixels"),
    (["--max-pixels", "0"], "--max-pixels"),
    (["--batch-size", "0"], "--batch-size"),
    (["--max-new-tokens", "0"], "--max-new-tokens"),
])
def test_nonsense_flags_are_refused_naming_the_flag(screenspot, tmp_path, capsys, flags, named):
    code, _, err = _cli(["evaluate", "--data", str(screenspot), "--baseline", "oracle", "--out", str(tmp_path),
                         *flags], capsys)
    assert code == 2 and named in err and "Traceback" not in err
    assert not (tmp_path / E.PREDICTIONS).exists()


def test_api_refuses_nonsense_too(screenspot, tmp_path):
    with pytest.raises(UsageError, match="limit"):
        E.evaluate(screenspot, "oracle", tmp_path, limit=0, progress=False)
    with pytest.raises(UsageError, match="min_pixels"):
        E.evaluate(screenspot, "oracle", tmp_path, min_pixels=10**6, max_pixels=10**5, progress=False)


# --- item 7: pipeline summary.json survives failures -----------------------------------------------

def _notebooks(folder: Path) -> Path:
    """Three stand-in notebooks (their content is never executed: papermill is replaced)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem in ("01_curation", "02_prompts", "03_more"):
        (folder / f"{stem}.ipynb").write_text("{}")
    return folder


@pytest.fixture
def fake_papermill(monkeypatch):
    """papermill.execute_notebook replaced: writes the notebook's result.json, or fails in cell 3 for
    the stems listed in `failing`."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    state = SimpleNamespace(failing=set(), ran=[])

    def execute(src, dest, parameters, **kw):
        stem = Path(src).stem
        state.ran.append(stem)
        if stem in state.failing:
            raise PapermillExecutionError(cell_index=3, exec_count=2, source="boom()", ename="ValueError",
                                          evalue="boom", traceback=[])
        P.write_result(parameters["output_dir"], {"stem": stem})

    monkeypatch.setattr(pm, "execute_notebook", execute)
    monkeypatch.setattr(P, "versions", lambda: {"python": "x"})
    return state


def test_a_failure_in_the_first_notebook_leaves_a_summary_naming_it(tmp_path, fake_papermill):
    nbs = _notebooks(tmp_path / "nb")
    fake_papermill.failing = {"01_curation"}
    with pytest.raises(RunFailed, match="01_curation.ipynb failed in cell 3"):
        P.run_pipeline(out=tmp_path / "run", notebooks_dir=nbs)
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["status"] == "failed"
    assert s["failed"]["notebook"] == "01_curation" and s["failed"]["cell"] == 3 and "boom" in s["failed"]["error"]


def test_a_later_failure_is_recorded_and_from_resumes(tmp_path, fake_papermill):
    nbs = _notebooks(tmp_path / "nb")
    fake_papermill.failing = {"02_prompts"}
    with pytest.raises(P.NotebookFailed):
        P.run_pipeline(out=tmp_path / "run", notebooks_dir=nbs)
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["failed"]["notebook"] == "02_prompts" and s["results"] == {"01_curation": {"stem": "01_curation"}}
    fake_papermill.failing, fake_papermill.ran = set(), []
    s = P.run_pipeline(out=tmp_path / "run", start=2, notebooks_dir=nbs)
    assert fake_papermill.ran == ["02_prompts", "03_more"]
    assert s["status"] == "ok" and "failed" not in s and set(s["results"]) == {"01_curation", "02_prompts", "03_more"}


def test_from_resumes_even_when_summary_json_was_torn(tmp_path, fake_papermill, capsys):
    nbs = _notebooks(tmp_path / "nb")
    P.run_pipeline(out=tmp_path / "run", notebooks_dir=nbs)
    (tmp_path / "run" / "summary.json").write_text('{"profile": {"na')  # torn by a kill (an older version)
    s = P.run_pipeline(out=tmp_path / "run", start=3, notebooks_dir=nbs)
    assert set(s["results"]) == {"01_curation", "02_prompts", "03_more"}  # earlier results read from artifacts
    assert "summary.json" in capsys.readouterr().err


# --- item 8: command lines answer with the fix and an exit code --------------------------------------

def test_evaluate_data_error_is_one_line_exit_2(tmp_path, capsys):
    code, _, err = _cli(["evaluate", "--data", str(tmp_path / "nope"), "--baseline", "oracle",
                         "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "no such file or folder" in err and "Traceback" not in err


def test_unwritable_out_is_refused_before_the_model_loads(screenspot, tmp_path, capsys, monkeypatch):
    (tmp_path / "file").write_text("x")

    def no_loading(*a, **k):
        raise AssertionError("the model was loaded before --out was checked")

    monkeypatch.setattr("gui_r1_lite.modeling.load_policy", no_loading)
    model = _model_folder(tmp_path / "m", b"w")
    code, _, err = _cli(["evaluate", "--data", str(screenspot), "--model", str(model),
                         "--out", str(tmp_path / "file" / "run")], capsys)
    assert code == 2 and "--out" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["pipeline", "--profile", "cpu-maxi"], "cpu-maxi"),
    (["pipeline", "--from", "7", "--out", "{tmp}"], "--from 7"),
    (["pipeline", "--out", "{tmp}/file/run"], "--out"),
    (["miniature", "--out", "{tmp}/m", "--set", "warm_steps=abc"], "warm_steps"),
    (["miniature", "--out", "{tmp}/m", "--set", "sft_lr=fast"], "sft_lr"),
    (["miniature", "--out", "{tmp}/m", "--seeds", "0,one"], "--seeds"),
    (["miniature", "--out", "{tmp}/file/m"], "--out"),
], ids=["profile", "from", "pipeline-out", "warm_steps", "sft_lr", "seeds", "miniature-out"])
def test_usage_errors_are_one_line_exit_2(tmp_path, capsys, argv, words):
    (tmp_path / "file").write_text("x")
    code, _, err = _cli([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert code == 2 and words in err and "Traceback" not in err


def test_a_setting_of_the_wrong_type_names_it_and_the_type():
    from harness import miniature

    with pytest.raises(UsageError, match=r"warm_steps.*int.*'abc'"):
        miniature.MiniatureSettings.from_overrides(warm_steps="abc")
    assert miniature.MiniatureSettings.from_overrides(sft_lr=1).sft_lr == 1.0  # an int is a fine float


def test_debug_shows_the_traceback_and_a_module_run_exits_with_the_code(tmp_path):
    cmd = [sys.executable, "-m", "gui_r1_lite.evaluate", "--data", str(tmp_path / "nope"), "--baseline", "oracle",
           "--out", str(tmp_path / "o")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--debug" in done.stderr
    done = subprocess.run([*cmd, "--debug"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" in done.stderr


def test_an_unreadable_stage_record_reruns_the_stage(tmp_path):
    from harness.miniature.stages import STAGE_FILE, run_stage

    (tmp_path / "s").mkdir()
    (tmp_path / "s" / STAGE_FILE).write_text('{"steps": 3, "adap')  # torn by an older version's kill
    info = run_stage(tmp_path / "s", lambda: {"steps": 4})
    assert info["steps"] == 4 and info["skipped"] is False
    assert run_stage(tmp_path / "s", lambda: {"steps": 5})["steps"] == 4  # now read back


# --- faults: SIGTERM, a bad line inside predictions.jsonl, two writers of one folder, a full disk ---------

#: `python -m gui_r1_lite.evaluate ARGS` whose random baseline takes 0.3 s a batch, so that a test can
#: stop the run between two batches whatever the machine's speed.
_SLOW_EVALUATE = """
import runpy, time
from gui_r1_lite.evaluate import completers
real = completers.RandomBaseline.complete
def slow(self, *args):
    time.sleep(0.3)
    return real(self, *args)
completers.RandomBaseline.complete = slow
runpy.run_module("gui_r1_lite.evaluate", run_name="__main__", alter_sys=True)
"""


def _random_argv(data: Path, out: Path) -> list[str]:
    return ["--data", str(data), "--baseline", "random", "--out", str(out), "--batch-size", "1", *PIXELS]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_sigterm_mid_run_exits_143_naming_the_folder_and_a_rerun_gives_the_uninterrupted_file(
        screenspot, tmp_path, capsys):
    assert _cli(["evaluate", *_random_argv(screenspot, tmp_path / "full")], capsys)[0] == 0
    out = tmp_path / "part"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_EVALUATE, *_random_argv(screenspot, out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(E.read_records(out / E.PREDICTIONS)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=20)  # before: killed silently (-15), no word of what to do
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    said = stderr.replace("\r", "\n").strip().splitlines()  # the progress bar's lines, then one line of ours
    assert sum("SIGTERM" in line for line in said) == 1 and "Traceback" not in stderr
    assert "stopped by SIGTERM" in said[-1] and str(out) in said[-1] and "same arguments" in said[-1]
    kept = _lines(out / E.PREDICTIONS)
    assert 2 <= len(kept) < 8 and kept == _lines(tmp_path / "full" / E.PREDICTIONS)[:len(kept)]  # whole lines
    assert _cli(["evaluate", *_random_argv(screenspot, out)], capsys)[0] == 0
    for name in (E.PREDICTIONS, E.METRICS_JSON):
        assert (out / name).read_bytes() == (tmp_path / "full" / name).read_bytes()


def test_a_bad_line_inside_predictions_is_named_never_trusted_and_its_row_predicted_again(
        screenspot, tmp_path, capsys):
    full, out = tmp_path / "full", tmp_path / "part"
    assert _cli(["evaluate", *_random_argv(screenspot, full)], capsys)[0] == 0
    out.mkdir()
    (out / E.RUN_FILE).write_bytes((full / E.RUN_FILE).read_bytes())
    lines = (full / E.PREDICTIONS).read_bytes().splitlines(keepends=True)
    # line 3: bytes that are not UTF-8 (a disk's garbage); line 5: a record cut short, then the next one
    lines[2] = b"\xff\xfe\x00garbage\n"
    lines[4] = lines[4][:40] + b"\n"
    (out / E.PREDICTIONS).write_bytes(b"".join(lines[:6]))
    code, _, err = _cli(["evaluate", *_random_argv(screenspot, out)], capsys)  # before: UnicodeDecodeError
    assert code == 0, err
    warning = [line for line in err.splitlines() if "not trusted" in line]
    assert len(warning) == 1 and str(out / E.PREDICTIONS) in warning[0] and "line 3, 5" in warning[0]
    again = (out / E.PREDICTIONS).read_text(encoding="utf-8")
    assert all(json.loads(line) for line in again.splitlines())  # no garbage left
    assert sorted(again.splitlines()) == sorted(_lines(full / E.PREDICTIONS))  # rows 3 and 5 predicted again
    assert json.loads((out / E.METRICS_JSON).read_text()) == json.loads((full / E.METRICS_JSON).read_text())


def test_a_second_process_writing_the_same_out_is_refused_naming_its_pid(screenspot, tmp_path, capsys):
    out = tmp_path / "run"
    holder = hold_lock(out)
    try:
        code, _, err = _cli(["evaluate", *_random_argv(screenspot, out)], capsys)
        # before: both wrote predictions.jsonl, lines interleaved
        assert code == 2 and str(out) in err and f"pid {holder.pid}" in err and "Traceback" not in err
        assert not (out / E.PREDICTIONS).exists() and not (out / E.RUN_FILE).exists()
    finally:
        holder.kill()  # SIGKILL: the kernel drops its lock, its pid stays in the file
        holder.wait()
    assert (out / ".lock").read_text().strip() == str(holder.pid)
    assert _cli(["evaluate", *_random_argv(screenspot, out)], capsys)[0] == 0  # a dead holder does not block
    assert len(E.read_records(out / E.PREDICTIONS)) == 8


def test_a_full_disk_while_appending_predictions_exits_1_naming_the_file(screenspot, tmp_path, capsys,
                                                                         monkeypatch):
    assert _cli(["evaluate", *_random_argv(screenspot, tmp_path / "full")], capsys)[0] == 0
    out = tmp_path / "part"
    full_disk_for(monkeypatch, E.PREDICTIONS, after=3)
    code, _, err = _cli(["evaluate", *_random_argv(screenspot, out)], capsys)  # before: a traceback
    assert code == 1 and "Traceback" not in err, err
    assert "disk full" in err and str(out / E.PREDICTIONS) in err and "same arguments" in err
    assert _lines(out / E.PREDICTIONS) == _lines(tmp_path / "full" / E.PREDICTIONS)[:3]  # three whole batches
    monkeypatch.undo()
    assert _cli(["evaluate", *_random_argv(screenspot, out)], capsys)[0] == 0
    assert (out / E.PREDICTIONS).read_bytes() == (tmp_path / "full" / E.PREDICTIONS).read_bytes()


def test_a_full_disk_while_writing_metrics_keeps_the_old_file_and_no_temporary_one(screenspot, tmp_path, capsys,
                                                                                    monkeypatch):
    out = tmp_path / "run"
    assert _cli(["evaluate", *_random_argv(screenspot, out)], capsys)[0] == 0
    before = (out / E.METRICS_JSON).read_bytes()
    # the atomic writer's temporary file is a link to /dev/full: writing it fails with ENOSPC from the kernel
    (out / f".{E.METRICS_JSON}.tmp-{os.getpid()}").symlink_to("/dev/full")
    code, _, err = _cli(["evaluate", *_random_argv(screenspot, out)], capsys)
    assert code == 1 and "disk full" in err and str(out / E.METRICS_JSON) in err and "Traceback" not in err
    assert (out / E.METRICS_JSON).read_bytes() == before
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]
