"""`evaluate --suite`: GUI-R1's eight benchmark files, each in its published schema, evaluated in one
command into one table beside the paper's figures; bad folders and files refused before anything
is predicted; a rerun resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_r1_lite import evaluate as E
from gui_r1_lite import evaluate_cli as EC
from gui_r1_lite import suite as S
from gui_r1_lite.data import load_gui_r1
from gui_r1_lite.errors import run_cli
from gui_r1_lite.metrics import PAPER_GUI_R1_3B
from tests.helpers import MINI

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "data_samples" / "test"
PIXELS = ["--min-pixels", str(MINI["min_pixels"]), "--max-pixels", str(MINI["max_pixels"])]
ROWS_PER_FILE = 6

#: stem -> (actions taken from the samples, targets as 2-value points, has ui_type, group names).
#: The action benchmarks store a point per step; androidcontrol_high_test is published without ui_type.
SCHEMAS = {
    "screenspot_test": ({"click"}, False, True, {}),
    "screenspot_pro_test": ({"click"}, False, True, {"web": "Dev", "desktop": "OS", "mobile": "Office"}),
    "androidcontrol_low_test": ({"click", "type", "scroll", "press_back"}, True, True, "android"),
    "androidcontrol_high_test": ({"click", "type", "scroll", "press_back"}, True, False, "android"),
    "guiact_web_test": ({"click", "scroll", "complete"}, True, True, "web"),
    "guiodyssey_test": ({"click", "press_back", "type", "complete"}, True, True, "android"),
    "omniact_web_test": ({"click"}, True, True, "web"),
    "omniact_desktop_test": ({"click"}, True, True, "desktop"),
}


def _published_row(s, as_point: bool, ui_type: bool, group) -> dict:
    box = list(s.gt_bbox)
    if as_point and len(box) == 4:
        box = [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]
    row = {"image": {"bytes": s.image_bytes, "path": f"{s.row}.png"}, "instruction": s.instruction,
           "history": s.history, "gt_action": s.gt_action, "gt_bbox": box, "gt_input_text": s.gt_input_text,
           "group": group if isinstance(group, str) else group.get(s.group, s.group)}
    if ui_type:
        row["ui_type"] = s.ui_type or "text"
    return row


def _take(samples, actions: set[str], n: int) -> list:
    """Up to `n` samples whose action is in `actions`, taking each action in turn (every kind shows)."""
    by_action = defaultdict(list)
    for s in samples:
        if s.gt_action in actions:
            by_action[s.gt_action].append(s)
    out, queues = [], [q for _, q in sorted(by_action.items())]
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def write_suite_folder(folder: Path, samples, stems=tuple(SCHEMAS)) -> Path:
    """One small file per benchmark stem, in its published schema, from real screenshots."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        actions, as_point, ui_type, group = SCHEMAS[stem]
        rows = [_published_row(s, as_point, ui_type, group) for s in _take(samples, actions, ROWS_PER_FILE)]
        pq.write_table(pa.Table.from_pylist(rows), folder / f"{stem}.parquet")
    return folder


@pytest.fixture(scope="module")
def samples():
    return [s for f in sorted(SAMPLES.glob("*.parquet")) for s in load_gui_r1(f, strict=True)]


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory, samples) -> Path:
    folder = write_suite_folder(tmp_path_factory.mktemp("suite") / "GUI-R1", samples)
    pq.write_table(pa.table({"x": [1]}), folder / "train.parquet")  # not a benchmark file: left out
    return folder


@pytest.fixture(scope="module")
def oracle_run(suite_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("oracle")
    assert EC.main(["--suite", str(suite_dir), "--baseline", "oracle", "--out", str(out), *PIXELS]) == 0
    return out


def headline(stem: str, m: dict) -> float:
    """The figure the paper reports first: grounding for ScreenSpot, step success for the rest."""
    return m["grounding"]["overall"] if "grounding" in PAPER_GUI_R1_3B[stem] else m["action"]["step_success"]


def test_the_files_are_in_their_published_schemas(suite_dir):
    for stem, (_, as_point, ui_type, _) in SCHEMAS.items():
        table = pq.read_table(suite_dir / f"{stem}.parquet")
        assert ("ui_type" in table.column_names) is ui_type
        assert {len(b) for b in table.column("gt_bbox").to_pylist()} <= ({2} if as_point else {4})
        assert table.num_rows == ROWS_PER_FILE and len(load_gui_r1(suite_dir / f"{stem}.parquet")) == ROWS_PER_FILE


def test_oracle_scores_1_on_every_file(oracle_run):
    suite = json.loads((oracle_run / S.SUITE_JSON).read_text())
    assert list(suite["benchmarks"]) == list(S.SUITE_STEMS) and suite["missing"] == []
    for stem, m in suite["benchmarks"].items():
        assert m["n"] == ROWS_PER_FILE and m["parse_failures"] == 0, stem
        if "grounding" in PAPER_GUI_R1_3B[stem]:
            assert m["grounding"]["overall"] == 1.0, stem
        else:
            a = m["action"]
            assert (a["type"], a["grounding"], a["step_success"]) == (1.0, 1.0, 1.0), stem
        # each benchmark has its own resumable run folder, and suite.json holds its metrics.json
        assert json.loads((oracle_run / stem / E.METRICS_JSON).read_text()) == m
        assert (oracle_run / stem / E.RUN_FILE).is_file()
    assert suite["preset"] == "fast" and suite["settings"]["min_pixels"] == MINI["min_pixels"]


def test_random_is_far_lower(suite_dir, tmp_path):
    assert EC.main(["--suite", str(suite_dir), "--baseline", "random", "--out", str(tmp_path), *PIXELS]) == 0
    suite = json.loads((tmp_path / S.SUITE_JSON).read_text())
    figures = {stem: headline(stem, m) for stem, m in suite["benchmarks"].items()}
    assert all(v < 1.0 for v in figures.values()), figures
    assert sum(figures.values()) / len(figures) <= 0.25, figures


def test_the_table_has_every_benchmark_beside_the_papers_figures(oracle_run, capsys):
    md = (oracle_run / S.SUITE_MD).read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| benchmark")]
    assert [r.split(" | ")[0][2:] for r in rows] == list(S.SUITE_STEMS)
    assert "100.0 (80.1)" in rows[0] and "100.0 (25.2)" in rows[1]  # ScreenSpot: mean of the paper's columns
    assert "100.0 (83.7) | 100.0 (81.6) | 100.0 (64.4)" in rows[2]
    assert "100.0 (54.8) | 100.0 (41.5) | 100.0 (41.3)" in rows[5]
    # AndroidControl's step count is stated against the paper's question (7,708 or 8,444)
    assert "file has 6 steps: neither OS-Atlas's 7,708-step test set nor the full 8,444-step split" in rows[2]
    assert "GR measured from gt_bbox[0:2]" in md and "Preset `fast`" in md


def test_the_step_note_names_the_split_the_file_has():
    assert "the 7,708 steps OS-Atlas evaluated" in S.steps_note("androidcontrol_low_test", 7708)
    assert "the full 8,444-step AndroidControl test split" in S.steps_note("androidcontrol_high_test", 8444)
    assert S.steps_note("guiodyssey_test", 7708) == ""


def test_a_rerun_resumes_without_predicting_again(oracle_run, suite_dir):
    before = {stem: (oracle_run / stem / E.PREDICTIONS).read_bytes() for stem in S.SUITE_STEMS}
    calls = []

    class Counting(E.OracleBaseline):
        def complete(self, rows, *a):
            calls.append(len(rows))
            return super().complete(rows, *a)

    suite = S.run_suite(suite_dir, Counting(), oracle_run, progress=False, **MINI)
    assert calls == [] and all(headline(s, m) == 1.0 for s, m in suite["benchmarks"].items())
    assert {stem: (oracle_run / stem / E.PREDICTIONS).read_bytes() for stem in S.SUITE_STEMS} == before


def test_only_the_files_present_are_run_and_the_rest_listed(samples, tmp_path):
    folder = write_suite_folder(tmp_path / "two", samples, stems=("guiodyssey_test", "screenspot_test"))
    suite = S.run_suite(folder, "oracle", tmp_path / "out", progress=False, **MINI)
    assert list(suite["benchmarks"]) == ["screenspot_test", "guiodyssey_test"]  # the paper's order
    assert len(suite["missing"]) == 6
    assert "| omniact_web_test | not in the folder |" in (tmp_path / "out" / S.SUITE_MD).read_text()


@pytest.mark.parametrize("make", ["missing", "empty", "other_parquet"])
def test_a_folder_without_benchmark_files_exits_2_naming_it_and_the_names(tmp_path, capsys, make):
    folder = tmp_path / "data"
    if make != "missing":
        folder.mkdir()
    if make == "other_parquet":
        pq.write_table(pa.table({"x": [1]}), folder / "train.parquet")
    code = run_cli(EC.main, ["--suite", str(folder), "--baseline", "oracle", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and str(folder) in err and "screenspot_test.parquet" in err
    assert "omniact_desktop_test.parquet" in err and "Traceback" not in err


def test_the_suite_is_the_evaluate_commands_not_evaluate_mains(tmp_path, capsys):
    # evaluate does not import suite (suite is built on it): `gui-r1-lite evaluate` (evaluate_cli) dispatches
    from harness import cli

    assert cli.COMMANDS["evaluate"] == "gui_r1_lite.evaluate_cli"
    code = run_cli(E.main, ["--suite", str(tmp_path), "--baseline", "oracle", "--out", str(tmp_path / "o")])
    assert code == 2 and "python -m gui_r1_lite.evaluate --suite DIR" in capsys.readouterr().err
    assert cli.main(["evaluate", "--suite", str(tmp_path), "--baseline", "oracle", "--out", str(tmp_path / "o")]) == 2
    assert "holds none of GUI-R1's benchmark files" in capsys.readouterr().err
    done = subprocess.run([sys.executable, "-m", "gui_r1_lite.evaluate", "--suite", str(tmp_path), "--baseline",
                           "oracle", "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "holds none of GUI-R1's benchmark files" in done.stderr, done.stderr


def test_a_file_without_a_usable_row_fails_naming_the_cause_before_anything_is_predicted(suite_dir, tmp_path,
                                                                                           capsys):
    folder = tmp_path / "bad"
    folder.mkdir()
    for f in suite_dir.glob("*_test.parquet"):
        table = pq.read_table(f)
        if f.stem == "screenspot_test":  # ScreenSpot's table is per ui_type: the column is required there
            table = table.drop_columns(["ui_type"])
        pq.write_table(table, folder / f.name)
    out = tmp_path / "out"
    code = run_cli(EC.main, ["--suite", str(folder), "--baseline", "oracle", "--out", str(out), *PIXELS])
    err = capsys.readouterr().err
    assert code == 1 and "screenspot_test.parquet" in err and "missing column(s) ['ui_type']" in err
    assert not list(out.rglob(E.PREDICTIONS))


def test_the_paper_preset_is_recorded_with_what_a_flag_overrode(samples, tmp_path, capsys):
    folder = write_suite_folder(tmp_path / "one", samples, stems=("omniact_desktop_test",))
    out = tmp_path / "out"
    assert EC.main(["--suite", str(folder), "--baseline", "oracle", "--out", str(out), "--preset", "paper",
                   "--max-new-tokens", "48"]) == 0
    run = json.loads((out / "omniact_desktop_test" / E.RUN_FILE).read_text())
    assert run["made_by"]["max_new_tokens"] == 48
    assert (run["made_by"]["min_pixels"], run["made_by"]["max_pixels"]) == (3136, 12_845_056)
    settings = run["settings"]
    assert settings["preset"] == "paper" and settings["overridden"] == ["max_new_tokens"]
    assert settings["repetition_penalty"] is settings["temperature"] is None  # decoding: not for a baseline
    assert "Preset `paper` (overridden: max_new_tokens)" in capsys.readouterr().out


def test_a_model_is_loaded_once_for_the_whole_suite(tiny_model_dir, samples, tmp_path, monkeypatch):
    from gui_r1_lite import modeling
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    folder = write_suite_folder(tmp_path / "two", samples, stems=("screenspot_test", "androidcontrol_low_test"))
    loads = []
    real = modeling.load_policy

    def counting(*a, **k):
        loads.append(k)
        return real(*a, **k)

    monkeypatch.setattr(modeling, "load_policy", counting)
    out = tmp_path / "out"
    assert EC.main(["--suite", str(folder), "--model", str(tiny_model_dir), "--out", str(out), "--preset", "paper",
                   "--limit", "1", "--max-new-tokens", "4", "--min-pixels", str(TINY_MIN_PIXELS),
                   "--max-pixels", str(TINY_MAX_PIXELS), "--device", "cpu"]) == 0
    assert len(loads) == 1 and loads[0]["max_pixels"] == TINY_MAX_PIXELS
    suite = json.loads((out / S.SUITE_JSON).read_text())
    assert {m["n"] for m in suite["benchmarks"].values()} == {1}
    assert suite["file_rows"] == {"screenspot_test": ROWS_PER_FILE, "androidcontrol_low_test": ROWS_PER_FILE}
    settings = suite["settings"]
    assert settings["repetition_penalty"] == 1.05  # the paper's, given to the model explicitly
    assert (settings["temperature"], settings["top_p"]) == (0.0, 0.001)
    run = json.loads((out / "screenspot_test" / E.RUN_FILE).read_text())
    assert run["made_by"]["policy"]["generation"]["repetition_penalty"] == 1.05
