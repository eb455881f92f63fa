"""Pictures render headless and save: steps, prediction cards, galleries, before/after, training
curves, and the widget browser's filtering and stepping."""

from __future__ import annotations

import json

import matplotlib
import pytest
from PIL import Image

from gui_r1_lite import evaluate as E
from gui_r1_lite import viz
from tests.helpers import MINI, write_benchmark_files


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """(oracle records, random records, id -> sample) on the small benchmark files."""
    folder = tmp_path_factory.mktemp("viz")
    write_benchmark_files(folder / "data")
    for name in ("oracle", "random"):
        E.evaluate(folder / "data", name, folder / name, progress=False, **MINI)
    return (E.read_records(folder / "oracle" / "predictions.jsonl"),
            E.read_records(folder / "random" / "predictions.jsonl"),
            E.samples_by_id(folder / "data"))


def _saved(fig, path, min_bytes=5_000):
    fig.savefig(path, dpi=60)
    matplotlib.pyplot.close(fig)
    assert path.stat().st_size > min_bytes
    with Image.open(path) as im:
        assert im.format == "PNG"


def test_backend_is_headless():
    assert matplotlib.get_backend().lower() in ("agg", "module://matplotlib_inline.backend_inline")


def test_draw_step_and_grid_keep_their_behaviour(tmp_path):
    im = Image.new("RGB", (200, 100), "white")
    out = viz.draw_step(im, [10, 10, 50, 40], (30, 25), hit=True, label="x")
    assert out.size == im.size and out is not im and im.getpixel((10, 10)) == (255, 255, 255)
    assert out.getpixel((30, 25)) == viz.HIT_COLOR
    _saved(viz.grid([out, im], titles=["a", "b"]), tmp_path / "grid.png", 1_000)


def test_prediction_card(evaluated, tmp_path):
    oracle, rand, samples = evaluated
    rec = oracle[0]
    _saved(viz.prediction_card(rec, samples[rec["id"]].image()), tmp_path / "card.png")
    lines = viz.describe(rand[0])
    assert lines[0].startswith(("HIT", "MISS")) and lines[1].startswith("gt: ") and lines[2].startswith("pred: ")
    unread = {**rec, "pred_action": None, "pred_coord": None, "pred_input_text": None, "parse_error": "no answer"}
    assert viz.describe(unread)[2] == "pred: (nothing read)" and viz.describe(unread)[0].startswith("MISS")
    assert viz.prediction_image(rec, samples[rec["id"]].image()).size == tuple(rec["image_size"])


def test_gallery_and_before_after(evaluated, tmp_path):
    oracle, rand, samples = evaluated
    _saved(viz.gallery(oracle, samples, cols=4, limit=8), tmp_path / "gallery.png")
    _saved(viz.gallery(rand, lambda r: samples[r["id"]].image(), limit=3), tmp_path / "gallery3.png")
    _saved(viz.before_after(rand, oracle, samples, labels=("random", "oracle"), limit=3), tmp_path / "ba.png")
    _saved(viz.gallery([], samples), tmp_path / "empty.png", 500)


def test_training_curves_from_a_metrics_log(tmp_path):
    log = tmp_path / "metrics.jsonl"
    lines = [{"step": s, "reward": 0.1 * s, "rewards/gui_r1/mean": 0.1 * s, "rewards/format/mean": 0.2,
              "rewards/accuracy/mean": 0.05 * s, "kl": 0.01 * s, "loss": 1 / s, "note": "text"} for s in range(1, 9)]
    lines.append({"step": 9, "eval_loss": 0.5})
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n")
    assert viz.numeric_keys(viz.read_log(log))[:3] == ["reward", "rewards/gui_r1/mean", "rewards/accuracy/mean"]
    assert "note" not in viz.numeric_keys(viz.read_log(log)) and "step" not in viz.numeric_keys(viz.read_log(log))
    _saved(viz.training_curves(log, smooth=3), tmp_path / "curves.png")
    _saved(viz.training_curves([{"a": 1}, {"a": 2}]), tmp_path / "curves_nostep.png", 2_000)


def test_thinking_text():
    assert viz.thinking_text("<think> look left </think> <answer>[]</answer>") == "look left"
    assert viz.thinking_text("no tags") == "" and viz.thinking_text("<think>open") == ""


def test_browser_filters_and_steps(evaluated):
    oracle, rand, samples = evaluated
    b = viz.PredictionBrowser(rand, samples)
    assert len(b.filtered) == len(rand) and b.image.value[:4] == b"\x89PNG"
    first = b.current["id"]
    b.next.click()
    assert b.current["id"] != first
    b.prev.click()
    assert b.current["id"] == first
    b.group.value = "android"
    assert b.filtered and all(rand[i]["group"] == "android" for i in b.filtered)
    b.group.value = "all"
    b.outcome.value = "hit"
    hits = list(b.filtered)
    b.outcome.value = "miss"
    assert set(hits).isdisjoint(b.filtered) and len(hits) + len(b.filtered) == len(rand)
    b.outcome.value = "format error"
    assert b.filtered == [] and b.current is None and "no prediction" in b.info.value
    b.outcome.value = "all"
    assert "thinking:" in b.info.value and "random" in b.info.value
    assert viz.browse(oracle, samples) is not None


def test_stage_counts_draws_every_stage_and_the_rate_histogram():
    from types import SimpleNamespace

    rows = [SimpleNamespace(platform=p, gt_action=a) for p, a in [("web", "click")] * 30 + [("mobile", "type")]]
    fig = viz.stage_counts({"loaded": rows, "kept": rows[:5]}, rates=[0.0, 0.5, 1.0])
    bars, hist = fig.axes
    assert [t.get_text() for t in bars.get_xticklabels()] == ["mobile/type", "web/click"]
    assert sorted(p.get_height() for p in bars.patches) == [0, 1, 5, 30]
    assert bars.get_yscale() == "log" and sum(p.get_height() for p in hist.patches) == 3


def test_live_curves_redraw_from_metrics_jsonl_throttled(tmp_path):
    from types import SimpleNamespace

    live = viz.LiveCurves(every=3600, save_to=str(tmp_path / "live.png"))
    cb = live.callback()
    args, state = SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(is_world_process_zero=True)
    cb.on_log(args, state, None, logs={"loss": 1.0})  # no metrics.jsonl yet: nothing to draw
    assert live.draws == 0
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward": 0.1}) + "\n")
    cb.on_log(args, state, None)
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 2, "reward": 0.5}) + "\n")
    cb.on_log(args, state, None)  # within `every` seconds of the last draw: skipped
    assert live.draws == 1
    cb.on_train_end(args, state, None)
    assert live.draws == 2 and "step 2" in live.figure._suptitle.get_text()
    assert (tmp_path / "live.png").stat().st_size > 1000
    cb.on_train_end(args, SimpleNamespace(is_world_process_zero=False), None)  # other ranks never draw
    assert live.draws == 2
