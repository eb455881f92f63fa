"""Evaluation: baselines through the full resize -> answer -> parse -> map-back path, resume
after a crash, the tiny model through `predict`, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_r1_lite import evaluate as E
from gui_r1_lite.data import load_gui_r1, to_eval_rows
from tests.helpers import MINI, write_benchmark_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_TESTS = sorted((ROOT / "data_samples" / "test").glob("*.parquet"))
@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bench")
    write_benchmark_files(folder)
    return folder


def _check_perfect(summary: dict) -> None:
    assert summary["parse_failures"] == 0
    if summary["grounding"] is not None:
        assert summary["grounding"]["overall"] == 1.0
    assert summary["action"]["strict_step_success"] == 1.0
    assert summary["action"]["type"] == 1.0


# --- baselines --------------------------------------------------------------------------------------

@pytest.mark.parametrize("bounds", [MINI, {}], ids=["cpu-mini-frame", "gui-r1-frame"])
def test_oracle_is_perfect_on_a_tmp_parquet(bench_dir, tmp_path, bounds):
    s = E.evaluate(bench_dir, "oracle", tmp_path / "oracle", progress=False, **bounds)
    _check_perfect(s)
    assert s["n"] == 16 and s["grounding"]["n"] == 10
    assert set(s["per_file"]) == {"screenspot_test", "androidcontrol_low_test"}
    for per in s["per_file"].values():
        _check_perfect(per)
    assert s["action"]["grounding"] == 1.0 and s["action"]["step_success"] == 1.0


@pytest.mark.parametrize("bounds", [MINI, {}], ids=["cpu-mini-frame", "gui-r1-frame"])
@pytest.mark.parametrize("path", SAMPLE_TESTS, ids=[p.name for p in SAMPLE_TESTS])
def test_oracle_is_perfect_and_random_far_lower_on_every_sample_file(path, bounds, tmp_path):
    s = E.evaluate(path, "oracle", tmp_path / "o", progress=False, **bounds)
    _check_perfect(s)
    assert s["n"] == len(load_gui_r1(path))
    r = E.evaluate(path, "random", tmp_path / "r", progress=False, **bounds)
    assert r["n"] == s["n"] and r["parse_failures"] == 0
    assert r["grounding"]["overall"] <= 0.1 and r["action"]["strict_step_success"] <= 0.1


def test_every_sample_file_is_checked():
    assert {p.name for p in SAMPLE_TESTS} == {"miniwob_test.parquet", "realgui_test.parquet"}


def test_random_is_far_lower_and_seeded(bench_dir, tmp_path):
    s = E.evaluate(bench_dir, "random", tmp_path / "r", progress=False, **MINI)
    assert s["parse_failures"] == 0
    assert s["grounding"]["overall"] <= 0.2
    assert s["action"]["strict_step_success"] <= 0.3
    again = E.evaluate(bench_dir, E.RandomBaseline(seed=0), tmp_path / "r2", progress=False, batch_size=3, **MINI)
    assert (tmp_path / "r" / "predictions.jsonl").read_bytes() == (tmp_path / "r2" / "predictions.jsonl").read_bytes()
    assert again == s


def test_oracle_records_map_model_points_back_to_the_stored_image(bench_dir, tmp_path):
    E.evaluate(bench_dir / "screenspot_test.parquet", "oracle", tmp_path / "o", progress=False, **MINI)
    records = E.read_records(tmp_path / "o" / "predictions.jsonl")
    assert len(records) == 8
    for r in records:
        (mw, mh), (w, h) = r["model_size"], r["image_size"]
        assert (mw, mh) != (w, h) and mw % 28 == 0 and mh % 28 == 0
        x1, y1, x2, y2 = r["gt_bbox"]
        px, py = r["pred_coord"]
        assert x1 < px < x2 and y1 < py < y2
        assert r["pred_coord_model"] == [round(px * mw / w), round(py * mh / h)]
        assert r["format_ok"] and r["parse_error"] is None and r["completion"].startswith("<think>")
    required = {"id", "group", "ui_type", "gt_action", "gt_bbox", "gt_input_text", "image_size", "model_size",
                "completion", "pred_action", "pred_coord", "pred_input_text", "format_ok", "parse_error"}
    assert required <= set(records[0])


def test_completion_without_an_answer_reads_nothing(bench_dir):
    row = to_eval_rows(load_gui_r1(bench_dir / "screenspot_test.parquet", limit=1).samples, **MINI)[0]
    r = E.make_record(row, "x", "I think I will click somewhere")
    assert r["pred_action"] is r["pred_coord"] is r["pred_input_text"] is None
    assert r["format_ok"] is False and r["parse_error"]
    r = E.make_record(row, "x", "<think>no</think> <answer>[{'action': 'click', 'point': [3.5, 4], "
                                "'input_text': 'no input text'}]</answer>", compat="strict")
    assert r["pred_action"] == "click" and r["pred_coord_model"] == [3.5, 4]


# --- resume ---------------------------------------------------------------------------------------

class CrashAfter:
    """The oracle, but the call after `batches` batches raises (a crash mid-run)."""

    name = "oracle"

    def __init__(self, batches: int):
        self.left = batches
        self.inner = E.OracleBaseline()

    def complete(self, rows, images, keys, max_new_tokens):
        if self.left == 0:
            raise RuntimeError("simulated crash")
        self.left -= 1
        return self.inner.complete(rows, images, keys, max_new_tokens)


def test_resume_after_a_crash_gives_the_uninterrupted_file(bench_dir, tmp_path):
    rows = to_eval_rows(load_gui_r1(bench_dir).samples, **MINI)
    full = tmp_path / "full.jsonl"
    E.predict("oracle", rows, full, batch_size=3, progress=False, **MINI)

    part = tmp_path / "part.jsonl"
    with pytest.raises(RuntimeError, match="simulated crash"):
        E.predict(CrashAfter(2), rows, part, batch_size=3, progress=False, **MINI)
    assert len(E.read_records(part)) == 6  # two flushed batches survive
    with part.open("a") as fh:
        fh.write('{"id": "androidcontrol_low_test/6", "gt_act')  # a line cut short by the crash
    calls = []

    class Counting(E.OracleBaseline):
        def complete(self, rows, *a):
            calls.append(len(rows))
            return super().complete(rows, *a)

    records = E.predict(Counting(), rows, part, batch_size=3, progress=False, **MINI)
    assert sum(calls) == len(rows) - 6  # finished rows were not recomputed
    assert part.read_bytes() == full.read_bytes()
    assert [r["id"] for r in records] == E.row_keys(r.sample for r in rows)
    # a finished file is not touched again
    E.predict(CrashAfter(0), rows, part, batch_size=3, progress=False, **MINI)
    assert part.read_bytes() == full.read_bytes()
    with pytest.raises(ValueError, match="compat"):
        E.predict("oracle", rows, part, compat="strict", progress=False, **MINI)


def test_duplicate_ids_get_unique_keys():
    class S:
        def __init__(self, i):
            self.id = i

    assert E.row_keys([S("a"), S("b"), S("a"), S("a")]) == ["a", "b", "a#2", "a#3"]


# --- the tiny model ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_inference_policy(tiny_model_dir):
    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    return load_policy(tiny_model_dir, lora=None, min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS, device="cpu")


def test_tiny_model_through_predict_counts_parse_errors(tiny_inference_policy, bench_dir, tmp_path):
    s = E.evaluate(bench_dir, tiny_inference_policy, tmp_path / "tiny", batch_size=4, max_new_tokens=12,
                   limit=3, progress=False)
    records = E.read_records(tmp_path / "tiny" / "predictions.jsonl")
    assert len(records) == s["n"] == 6
    assert s["parse_failures"] == sum(1 for r in records if r["parse_error"]) > 0
    for r in records:
        assert isinstance(r["completion"], str)
        assert r["format_ok"] is (r["parse_error"] is None)
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    assert (s["min_pixels"], s["max_pixels"]) == (TINY_MIN_PIXELS, TINY_MAX_PIXELS)  # the processor's bounds
    assert json.loads((tmp_path / "tiny" / "metrics.json").read_text()) == json.loads(json.dumps(s))


def test_rows_made_for_another_frame_are_refused(tiny_inference_policy, bench_dir, tmp_path):
    # GUI-R1's frame holds more pixels than the tiny processor's max_pixels: it would resize again
    big = {"min_pixels": 262_144, "max_pixels": 1_258_291}
    rows = to_eval_rows(load_gui_r1(bench_dir / "screenspot_test.parquet", limit=2).samples, **big)
    with pytest.raises(ValueError, match="processor resized the image"):
        E.predict(E.ModelCompleter(tiny_inference_policy), rows, tmp_path / "p.jsonl", max_new_tokens=2,
                  progress=False, **big)
    # a frame inside the processor's bounds is kept as it is
    rows = to_eval_rows(load_gui_r1(bench_dir / "screenspot_test.parquet", limit=2).samples, **MINI)
    assert len(E.predict(tiny_inference_policy, rows, tmp_path / "q.jsonl", max_new_tokens=2, progress=False,
                         **MINI)) == 2


# --- command line ---------------------------------------------------------------------------------

def test_cli_writes_the_three_files(bench_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    assert E.main(["--data", str(bench_dir / "screenspot_test.parquet"), "--baseline", "oracle", "--out", str(out),
                   "--min-pixels", str(MINI["min_pixels"]), "--max-pixels", str(MINI["max_pixels"])]) == 0
    for name in ("predictions.jsonl", "metrics.json", "metrics.md"):
        assert (out / name).stat().st_size > 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["benchmark"] == "screenspot_test" and m["n"] == 8 and m["grounding"]["overall"] == 1.0
    assert {"benchmark", "n", "parse_failures", "grounding", "action"} <= set(m)
    assert "| **overall** | 8 | **100.0** |" in (out / "metrics.md").read_text()
    assert "overall" in capsys.readouterr().out


def test_cli_with_the_tiny_model(tiny_model_dir, bench_dir, tmp_path):
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    out = tmp_path / "cli_model"
    assert E.main(["--data", str(bench_dir), "--model", str(tiny_model_dir), "--out", str(out), "--limit", "2",
                   "--max-new-tokens", "8", "--min-pixels", str(TINY_MIN_PIXELS), "--max-pixels",
                   str(TINY_MAX_PIXELS), "--device", "cpu"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["n"] == 4 and len(E.read_records(out / "predictions.jsonl")) == 4


def test_cli_refuses_adapter_without_model(tmp_path):
    with pytest.raises(SystemExit):
        E.main(["--data", "x", "--baseline", "oracle", "--adapter", "a", "--out", str(tmp_path)])


# --- presets ----------------------------------------------------------------------------------------

def test_the_paper_preset_is_the_original_inference_scripts():
    # guir1/inference/*.py: SamplingParams(temperature=0.0, top_p=0.001, repetition_penalty=1.05,
    # max_tokens=1024), the processor's default pixel range (3,136 to 12,845,056)
    p = E.PRESETS["paper"]
    assert (p.temperature, p.top_p, p.repetition_penalty, p.max_new_tokens) == (0.0, 0.001, 1.05, 1024)
    assert (p.min_pixels, p.max_pixels) == (3_136, 12_845_056)
    f = E.PRESETS["fast"]  # what evaluate did before presets existed
    assert (f.max_new_tokens, f.min_pixels, f.max_pixels, f.repetition_penalty) == (256, 262_144, 1_258_291, 1.0)


def test_explicit_values_override_a_preset_and_are_named():
    s = E.prediction_settings("paper", max_new_tokens=48, min_pixels=3_136)
    assert (s["max_new_tokens"], s["min_pixels"], s["max_pixels"]) == (48, 3_136, 12_845_056)
    assert s["overridden"] == ["max_new_tokens"]  # a value equal to the preset's overrides nothing
    none = E.prediction_settings(None)
    assert none["preset"] is None and none["max_new_tokens"] == E.DEFAULT_MAX_NEW_TOKENS
    assert none["min_pixels"] is none["max_pixels"] is none["repetition_penalty"] is None
    from gui_r1_lite.errors import UsageError

    with pytest.raises(UsageError, match="unknown preset 'papr'.*'fast', 'paper'"):
        E.prediction_settings("papr")
    import doctest

    assert doctest.testmod(E).failed == 0


def test_a_run_records_its_preset_and_every_resolved_value(bench_dir, tmp_path):
    s = E.evaluate(bench_dir / "screenspot_test.parquet", "oracle", tmp_path, progress=False, preset="paper",
                   max_new_tokens=32)
    assert s["grounding"]["overall"] == 1.0
    assert (s["preset"], s["max_new_tokens"], s["min_pixels"], s["max_pixels"]) == ("paper", 32, 3_136, 12_845_056)
    assert s["settings"]["overridden"] == ["max_new_tokens"]
    run = json.loads((tmp_path / E.RUN_FILE).read_text())
    assert run["settings"] == s["settings"] and run["made_by"]["max_new_tokens"] == 32
    assert json.loads((tmp_path / E.METRICS_JSON).read_text())["settings"] == s["settings"]


def test_without_a_preset_a_run_predicts_as_before(bench_dir, tmp_path):
    E.main(["--data", str(bench_dir / "screenspot_test.parquet"), "--baseline", "oracle", "--out", str(tmp_path)])
    run = json.loads((tmp_path / E.RUN_FILE).read_text())
    made = run["made_by"]
    assert (made["max_new_tokens"], made["min_pixels"], made["max_pixels"]) == (256, 262_144, 1_258_291)
    assert run["settings"]["preset"] == "fast" and run["settings"]["overridden"] == []


def test_a_model_gets_the_presets_repetition_penalty_explicitly(tiny_inference_policy, bench_dir, tmp_path):
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    tiny = {"min_pixels": TINY_MIN_PIXELS, "max_pixels": TINY_MAX_PIXELS}
    assert E.ModelCompleter(tiny_inference_policy).generation_config(8).repetition_penalty == 1.0
    paper = E.prediction_settings("paper", **tiny)
    completer, settings = E.resolve_completer(E.ModelCompleter(tiny_inference_policy), paper)
    got = completer.generation_config(8)
    assert (got.repetition_penalty, got.do_sample, got.num_beams) == (1.05, False, 1)
    assert completer.identity()["generation"]["repetition_penalty"] == 1.05 and settings["repetition_penalty"] == 1.05
    own, _ = E.resolve_completer(E.ModelCompleter(tiny_inference_policy, repetition_penalty=1.2), paper)
    assert own.generation_config(8).repetition_penalty == 1.2  # the completer's own value is explicit too
    s = E.evaluate(bench_dir / "screenspot_test.parquet", tiny_inference_policy, tmp_path, preset="paper",
                   max_new_tokens=4, limit=2, progress=False, **tiny)
    assert s["n"] == 2 and s["settings"]["repetition_penalty"] == 1.05
    run = json.loads((tmp_path / E.RUN_FILE).read_text())
    assert run["made_by"]["policy"]["generation"]["repetition_penalty"] == 1.05


def test_a_preset_the_policys_processor_does_not_resize_within_is_refused(tiny_inference_policy, bench_dir,
                                                                          tmp_path):
    from gui_r1_lite.errors import UsageError

    with pytest.raises(UsageError, match=r"min_pixels=3136, max_pixels=12845056 \(modeling.load_policy\)"):
        E.evaluate(bench_dir / "screenspot_test.parquet", tiny_inference_policy, tmp_path, preset="paper",
                   progress=False)
    assert not (tmp_path / E.PREDICTIONS).exists()


def test_the_gpu_profile_evaluates_as_the_paper_and_cpu_mini_stays_small():
    from gui_r1_lite.profiles import get_profile

    gpu = get_profile("gpu-3b")
    assert gpu.eval_limit == 0  # every row, as the paper
    s = gpu.eval_settings()
    assert (s["preset"], s["max_new_tokens"], s["min_pixels"], s["max_pixels"], s["repetition_penalty"]) == \
        ("paper", 1024, 3_136, 12_845_056, 1.05)
    mini = get_profile("cpu-mini")
    m = mini.eval_settings()
    assert mini.eval_limit == 8 and (m["preset"], m["max_new_tokens"]) == ("fast", 48)
    assert (m["min_pixels"], m["max_pixels"]) == (mini.min_pixels, mini.max_pixels)  # the tiny model's frame
    assert gpu.eval_settings("fast", 64)["max_new_tokens"] == 64  # a notebook parameter overrides


# --- the blind check --------------------------------------------------------------------------------

def test_blank_rows_keep_everything_but_pixels(bench_dir):
    import dataclasses
    import io

    from PIL import Image

    from gui_r1_lite.blind import blind_rows, blind_samples

    samples = load_gui_r1(bench_dir / "screenspot_test.parquet").samples + \
        load_gui_r1(bench_dir / "androidcontrol_low_test.parquet").samples
    blank = blind_samples(samples)
    assert len(blank) == len(samples) == 16
    for before, after in zip(samples, blank, strict=True):
        old, new = Image.open(io.BytesIO(before.image_bytes)), Image.open(io.BytesIO(after.image_bytes))
        assert (new.size, new.mode, new.format) == (old.size, old.mode, old.format)
        assert new.convert("RGB").getextrema() == ((255, 255),) * 3   # all white ...
        assert old.convert("RGB").getextrema() != ((255, 255),) * 3   # ... where the screenshot was not
        assert dataclasses.replace(after, image_bytes=before.image_bytes) == before  # nothing else changed
        assert after.extras == before.extras
    rows, blind = to_eval_rows(samples, **MINI), blind_rows(to_eval_rows(samples, **MINI))
    for r, b in zip(rows, blind, strict=True):
        assert (b.messages, b.model_size, b.sample.id, b.sample.gt_bbox) == (r.messages, r.model_size, r.sample.id,
                                                                            r.sample.gt_bbox)
        assert b.sample.image().getextrema() == ((255, 255),) * 3


def test_a_blind_run_says_so_and_never_shares_a_seeing_run_s_folder(bench_dir, tmp_path):
    seeing = E.evaluate(bench_dir, "random", tmp_path / "seeing", progress=False, **MINI)
    blind = E.evaluate(bench_dir, "random", tmp_path / "blind", progress=False, blind=True, **MINI)
    assert blind["blind"] is True and seeing["blind"] is False
    assert json.loads((tmp_path / "blind" / E.METRICS_JSON).read_text())["blind"] is True
    assert (tmp_path / "blind" / E.METRICS_MD).read_text().startswith("Blind check: every screenshot")
    assert "Blind check" not in (tmp_path / "seeing" / E.METRICS_MD).read_text()
    assert json.loads((tmp_path / "blind" / E.RUN_FILE).read_text())["made_by"]["blind"] is True
    assert "blind" not in json.loads((tmp_path / "seeing" / E.RUN_FILE).read_text())["made_by"]  # records as before
    # the random baseline does not look: the same answers on white screens
    assert [r["completion"] for r in E.read_records(tmp_path / "blind" / E.PREDICTIONS)] == \
        [r["completion"] for r in E.read_records(tmp_path / "seeing" / E.PREDICTIONS)]
    with pytest.raises(E.RunFolderMismatch, match="blind"):
        E.evaluate(bench_dir, "random", tmp_path / "seeing", progress=False, blind=True, **MINI)
    with pytest.raises(E.RunFolderMismatch, match="blind"):
        E.evaluate(bench_dir, "random", tmp_path / "blind", progress=False, **MINI)
    again = E.evaluate(bench_dir, "random", tmp_path / "blind", progress=False, blind=True, **MINI)  # resumes
    assert again["n"] == blind["n"]


def test_cli_blind_scores_the_tiny_model_on_white_screens(tiny_model_dir, bench_dir, tmp_path, monkeypatch):
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    seen = []
    generate = E.ModelCompleter.generate

    def spy(self, messages, images, *args, **kwargs):
        seen.extend(im.getextrema() for im in images)
        return generate(self, messages, images, *args, **kwargs)

    monkeypatch.setattr(E.ModelCompleter, "generate", spy)
    out = tmp_path / "blind"
    flags = ["--data", str(bench_dir / "screenspot_test.parquet"), "--model", str(tiny_model_dir), "--limit", "3",
             "--max-new-tokens", "6", "--min-pixels", str(TINY_MIN_PIXELS), "--max-pixels", str(TINY_MAX_PIXELS),
             "--device", "cpu"]
    assert E.main([*flags, "--out", str(out), "--blind"]) == 0
    assert seen == [((255, 255),) * 3] * 3   # the model was shown white screens only
    m = json.loads((out / E.METRICS_JSON).read_text())
    assert m["blind"] is True and m["n"] == 3 and len(E.read_records(out / E.PREDICTIONS)) == 3
    with pytest.raises(E.RunFolderMismatch, match="blind"):  # a seeing run never resumes it
        E.main([*flags, "--out", str(out)])
    seen.clear()
    assert E.main([*flags, "--out", str(tmp_path / "seeing")]) == 0
    assert len(seen) == 3 and all(e != ((255, 255),) * 3 for e in seen)


def test_cli_blind_goes_with_data_not_suite(tmp_path):
    with pytest.raises(SystemExit):
        E.main(["--suite", str(tmp_path), "--baseline", "random", "--out", str(tmp_path / "o"), "--blind"])
