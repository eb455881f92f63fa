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


def test_default_curves_show_what_watches_a_grpo_run(tmp_path):
    # a metrics.jsonl as a GRPO run writes it: TRL's many keys per step, a validation record every 2 steps
    trl = {"grad_norm": 0.1, "learning_rate": 1e-5, "num_tokens": 100, "completions/min_length": 3.0,
           "completions/max_length": 9.0, "completions/clipped_ratio": 0.0, "rewards/gui_r1/std": 0.1,
           "rewards/point_gaussian/std": 0.1, "reward_std": 0.1, "entropy": 2.0, "clip_ratio/low_mean": 0.0}
    log = []
    for s in range(1, 5):
        log.append({"step": s, "step_seconds": 1.0, "loss": 1 / s, **trl, "completions/mean_length": 5.0 + s,
                    "rewards/gui_r1/mean": 0.1 * s, "rewards/point_gaussian/mean": 0.2, "rewards/format/mean": 0.5,
                    "rewards/accuracy/mean": 0.1, "reward": 0.3, "frac_reward_zero_std": 0.5, "kl": 0.01})
        if s % 2 == 0:
            log.append({"step": s, "validation/click_accuracy": 0.25 * s, "validation/format_rate": 0.5,
                        "validation/reward": 0.2, "validation/rows": 8, "validation/seconds": 3.0})
    keys = viz.numeric_keys(log)
    assert keys[:5] == ["reward", "rewards/gui_r1/mean", "rewards/accuracy/mean", "rewards/format/mean",
                        "rewards/point_gaussian/mean"]
    assert keys[5:12] == ["validation/click_accuracy", "validation/format_rate", "validation/reward",
                          "frac_reward_zero_std", "completions/mean_length", "kl", "loss"]
    fig = viz.training_curves(log)
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert titles == keys[:12]
    # validation is drawn at the steps it ran, against the same axis as training
    ax = fig.axes[titles.index("validation/click_accuracy")]
    assert list(ax.lines[0].get_xdata()) == [2, 4] and list(ax.lines[0].get_ydata()) == [0.5, 1.0]
    assert ax.get_xlabel() == "training step"
    _saved(fig, tmp_path / "watch.png")


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
    assert "thinking:" in b.info.value and "random" in b.info.value and "orange cross = click that missed" in b.info.value
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


def _shown_px(fig, text) -> float:
    """How tall (px, one em) `text` is when a notebook shows `fig`: at 100 dpi, shrunk to 900 px wide."""
    return text.get_fontsize() / 72 * min(100.0, 900.0 / fig.get_figwidth())


def _texts(fig) -> list:
    """The texts a reader sees: not the tick labels of axes drawn without axes (pictures)."""
    def shown(t) -> bool:
        ax = t.axes
        return ax is None or ax.axison or t in (ax.title, ax._left_title, ax._right_title)

    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip() and shown(t)]


def test_every_text_is_readable_at_a_notebook_s_width(evaluated):
    from types import SimpleNamespace

    oracle, rand, samples = evaluated
    arm = {m: {"mean": 0.5, "std": 0.1, "per_seed": [0.4, 0.6]}
           for m in ("format_rate", "click_accuracy", "strict_step_success")}
    rows = [SimpleNamespace(platform="web", gt_action="click")] * 3
    figures = {
        "gallery": viz.gallery(rand, samples, cols=4, limit=8),
        "before_after": viz.before_after(rand, oracle, samples, labels=("random", "oracle"), limit=2),
        "card": viz.prediction_card(rand[0], samples[rand[0]["id"]].image()),
        "curves": viz.training_curves([{"step": s, "reward": s / 10, "kl": 0.1} for s in range(1, 9)], smooth=3),
        "stages": viz.stage_counts({"loaded": rows, "kept": rows[:1]}, rates=[0.5]),
        "miniature": viz.miniature_bars({"seeds": [0, 1], "random": arm, "sft": arm, "sft_grpo": arm}),
        "grid": viz.grid([Image.new("RGB", (1280, 800))] * 4, ["a long instruction to wrap " * 3] * 4),
        "reward_map": viz.reward_map(lambda x, y: x / 400, (400, 260), step=20, gt_bbox=[10, 10, 50, 50]).figure,
    }
    for name, fig in figures.items():
        fig.canvas.draw()
        texts = _texts(fig)
        assert texts, name
        small = [(t.get_text()[:30], round(_shown_px(fig, t), 1)) for t in texts if _shown_px(fig, t) < 11.9]
        assert not small, (name, small)  # each was about 6 px in a 14-inch gallery before
        matplotlib.pyplot.close(fig)


def _marks(fig) -> dict[str, str]:
    """Colour (hex) -> marker of the point marks drawn on a figure's axes."""
    from matplotlib.colors import to_hex

    return {to_hex(line.get_markerfacecolor()): line.get_marker() for ax in fig.axes for line in ax.get_lines()
            if line.get_marker() not in (None, "None", "")}


def test_hit_and_miss_differ_in_shape_and_a_legend_names_them(evaluated):
    from matplotlib.colors import to_hex

    oracle, rand, samples = evaluated
    hit = next(r for r in oracle if viz.describe(r)[0].startswith("HIT") and r["pred_coord"] is not None)
    miss = next(r for r in rand if viz.describe(r)[0].startswith("MISS") and r["pred_coord"] is not None)
    fig = viz.gallery([hit, miss], samples, cols=2)
    hit_hex, miss_hex = (to_hex([c / 255 for c in color]) for color in (viz.HIT_COLOR, viz.MISS_COLOR))
    marks = _marks(fig)
    assert set(marks) == {hit_hex, miss_hex} and marks[hit_hex] != marks[miss_hex]
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert any("target box" in x for x in labels) and any("hit" in x for x in labels) and any("miss" in x for x in labels)
    assert "original screenshot pixels" in legend.get_title().get_text()
    shapes = {h.get_label(): h.get_marker() for h in legend.legend_handles if hasattr(h, "get_marker")}
    assert shapes == {"predicted click: hit": marks[hit_hex], "predicted click: miss": marks[miss_hex]}
    titles = [ax._left_title.get_text() for ax in fig.axes]
    assert titles[0].startswith("✓ HIT") and titles[1].startswith("✗ MISS")
    matplotlib.pyplot.close(fig)


def test_draw_step_marks_a_hit_with_a_disc_and_a_miss_with_a_cross():
    im = Image.new("RGB", (300, 300), "white")
    r = 6  # the marker's half size at this image size
    hit = viz.draw_step(im, None, (150, 150), hit=True)
    miss = viz.draw_step(im, None, (150, 150), hit=False)
    assert hit.getpixel((150, 150)) == viz.HIT_COLOR and miss.getpixel((150, 150)) == viz.MISS_COLOR
    side, corner = (150 + r - 1, 150), (150 + r - 1, 150 + r - 1)
    assert hit.getpixel(side) == viz.HIT_COLOR and miss.getpixel(side) != viz.MISS_COLOR  # a disc is full there
    assert miss.getpixel(corner) == viz.MISS_COLOR and hit.getpixel(corner) != viz.HIT_COLOR  # the X's arm


def test_axes_say_what_is_plotted_and_in_which_frame():
    ax = viz.reward_map(lambda x, y: 1.0, (100, 60), step=10, title="gui_r1")
    assert ax.get_xlabel() == "x (model-frame px)" and ax.get_ylabel() == "y (model-frame px)"
    assert "reward" in ax.figure.axes[-1].get_ylabel()
    matplotlib.pyplot.close(ax.figure)
    fig = viz.training_curves([{"step": 1, "reward": 0.1}, {"step": 2, "reward": 0.3}])
    assert fig.axes[0].get_xlabel() == "training step" and fig.axes[0].get_title() == "reward"
    matplotlib.pyplot.close(fig)


def test_card_title_is_short_and_says_what_the_picture_cannot(evaluated):
    _, rand, _ = evaluated
    typed = next(r for r in rand if r["gt_action"] == "type")
    lines = viz.card_title(typed, prefix="[random] ")
    assert lines[0].startswith("[random] ✗ MISS · ") and lines[1] == f"want: type {typed['gt_input_text']!r}"
    click = next(r for r in rand if r["gt_action"] == "click" and r["pred_action"] == "click")
    assert not any(x.startswith("want:") for x in viz.card_title(click))  # the box shows it
    assert viz.card_title(click)[-1].startswith("answer: click at (")


# --- the screenshot keeps its size; captions wrap; tasks are named; blind scores shown ----------------

def _click_record(point, instruction="Click on the yes button.", rid="miniwob/click-dialog/seed1000/step0", **over):
    """A prediction record (as `evaluate.predict` writes it) of a click on a 160x210 page."""
    rec = {"id": rid, "instruction": instruction, "gt_action": "click", "gt_bbox": [20.0, 30.0, 60.0, 50.0],
           "gt_input_text": "no input text", "pred_action": "click", "pred_coord": list(point),
           "pred_input_text": "no input text", "parse_error": None, "image_size": [160, 210], "group": "miniwob",
           "ui_type": "text", "task_type": "low", "completion": ""}
    rec.update(over)
    return rec


PAGE = Image.new("RGB", (160, 210), "white")


def _panels(fig) -> list:
    return [ax for ax in fig.axes if ax.images]


def test_a_click_far_off_the_screenshot_leaves_the_picture_at_its_size():
    # the gallery used to widen its axes to take in the click: at (1e5, -1e5) the page became a dot
    miss = _click_record((1e5, -1e5))
    hit = _click_record((40, 40), rid="miniwob/click-tab/seed1001/step0", instruction="Click on Tab #2.")
    fig = viz.gallery([miss, hit], lambda r: PAGE, cols=2)
    fig.canvas.draw()
    for ax in _panels(fig):
        assert ax.get_xlim() == (-0.5, 159.5) and ax.get_ylim() == (209.5, -0.5)
    off, on = _panels(fig)
    (arrow,) = [c for c in off.get_children() if type(c).__name__ == "Annotation"]  # an arrow toward the click
    (tail_x, tail_y), (head_x, head_y) = arrow.xyann, arrow.xy
    assert head_x > tail_x and head_y < tail_y  # up and to the right, where (1e5, -1e5) lies
    assert 0 <= head_x <= 160 and 0 <= head_y <= 210
    assert "answer: click at (100000, -100000), off the screenshot" in " ".join(off.get_title(loc="left").split())
    assert not [c for c in on.get_children() if type(c).__name__ == "Annotation"]
    assert "off the screenshot" not in on.get_title(loc="left")
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("point", [(1e308, 5.0), (float("nan"), 3.0), (-1e308, -1e308), (-0.0, float("inf"))])
def test_extreme_clicks_draw_without_error_and_keep_the_frame(point, tmp_path):
    rec = _click_record(point)
    for fig in (viz.gallery([rec], lambda r: PAGE), viz.before_after([rec], [rec], lambda r: PAGE),
                viz.prediction_card(rec, PAGE)):
        fig.savefig(tmp_path / "x.png", dpi=40)
        assert all(ax.get_xlim() == (-0.5, 159.5) for ax in _panels(fig))
        matplotlib.pyplot.close(fig)
    assert viz.prediction_image(rec, PAGE).size == (160, 210)


def test_a_long_caption_is_wrapped_with_all_its_text():
    words = " ".join(f"word{i}" for i in range(60))  # ~420 characters: cut to two lines before
    rec = _click_record((40, 40), instruction=words, pred_input_text="typed " + "x" * 90)
    for fig in (viz.gallery([rec, rec], lambda r: PAGE, cols=2), viz.prediction_card(rec, PAGE)):
        title = _panels(fig)[0].get_title(loc="left")
        assert len(title.splitlines()) > 5 and "…" not in title
        assert "".join(words.split()) in "".join(title.split())  # every word, in order
        assert "x" * 90 in "".join(title.split())
        matplotlib.pyplot.close(fig)


def test_an_episode_step_off_the_screenshot_keeps_the_frame(tmp_path):
    steps = [{"id": "miniwob/click-dialog/seed1000/step0", "task": "click-dialog", "seed": 1000, "step": 0,
              "instruction": "Close the dialog.", "gt_action": None, "gt_bbox": None, "pred_action": "click",
              "pred_coord": [-5e4, 100.0], "pred_input_text": "no input text", "done": True, "raw_reward": -1.0}]
    fig = viz.episode_strip(steps, lambda r: PAGE)
    (ax,) = _panels(fig)
    assert ax.get_xlim() == (-0.5, 159.5) and ax.get_ylim() == (209.5, -0.5)
    assert "(-50000, 100), off the screenshot" in " ".join(ax.get_title(loc="left").split())
    matplotlib.pyplot.close(fig)


def test_gallery_and_before_after_name_each_row_s_task():
    dialog = _click_record((40, 40))
    tab = _click_record((100, 100), rid="miniwob/click-tab/seed1004/step1", instruction="Click on Tab #2.")
    other = _click_record((100, 100), rid="web/faq-index/click0", instruction="Click on 'FAQ'", group="web")
    assert [viz.record_task(r) for r in (dialog, tab, other)] == ["click-dialog", "click-tab", None]
    assert viz.record_task({"id": "x", "task": "enter-text"}) == "enter-text"  # an online step's field
    fig = viz.gallery([dialog, tab, other], lambda r: PAGE, cols=3)
    titles = [ax.get_title(loc="left").splitlines()[0] for ax in _panels(fig)]
    assert titles[0].startswith("✓ HIT · click-dialog: Click on the yes")
    assert titles[1].startswith("✗ MISS · click-tab: Click on Tab")
    assert titles[2].startswith("✗ MISS · Click on 'FAQ'")
    matplotlib.pyplot.close(fig)
    after = [dialog | {"pred_coord": [150.0, 200.0]}, tab | {"pred_coord": [40.0, 40.0]}]  # one broken, one fixed
    fig = viz.before_after([dialog, tab], after, lambda r: PAGE)
    titles = [ax.get_title(loc="left").splitlines()[0] for ax in _panels(fig)]
    assert titles[0].startswith("[before] ✗ MISS · click-tab:") and titles[1].startswith("[after] ✓ HIT · click-tab:")
    assert titles[2].startswith("[before] ✓ HIT · click-dialog:") and titles[3].startswith("[after] ✗ MISS · click-dialog:")
    matplotlib.pyplot.close(fig)


def test_miniature_bars_show_each_arm_s_blind_score_beside_it():
    def figures(mean, seeds):
        return {"mean": mean, "std": 0.0, "per_seed": seeds}

    metrics = ("format_rate", "click_accuracy", "strict_step_success")
    result = {"seeds": [0, 1], "random": {m: figures(0.1, [0.1, 0.1]) for m in metrics}}
    for arm, seeing, blind in (("sft", 0.6, 0.55), ("sft_grpo", 0.5, 0.5)):
        result[arm] = {m: figures(seeing, [seeing, seeing]) for m in metrics}
        result[arm]["blind"] = {"click_accuracy": figures(blind, [blind - 0.05, blind + 0.05])}
    fig = viz.miniature_bars(result)
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert sorted(round(p.get_height(), 6) for p in hatched) == [50.0, 55.0]  # sft's and sft_grpo's, none for random
    # the click-accuracy group sits at x = 1 (format rate 0, strict step success 2)
    solid = {round(p.get_height(), 6): p for p in ax.patches if not p.get_hatch() and 0.5 < p.get_x() < 1.5}
    for p in hatched:  # right beside its arm's click-accuracy bar, the same colour, not overlapping it
        arm_bar = solid[60.0] if round(p.get_height()) == 55 else solid[50.0]
        assert p.get_x() == pytest.approx(arm_bar.get_x() + arm_bar.get_width())
        assert p.get_edgecolor() == arm_bar.get_facecolor()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["random", "sft", "sft_grpo", "one seed", "blind (white screens)"]
    matplotlib.pyplot.close(fig)
    for arm in ("sft", "sft_grpo"):
        del result[arm]["blind"]
    fig = viz.miniature_bars(result)  # without blind scores: the bars as before
    assert not [p for p in fig.axes[0].patches if p.get_hatch()] and len(fig.axes[0].patches) == 9
    matplotlib.pyplot.close(fig)


def test_before_after_shows_different_tasks_and_marks_a_point_given_on_every_page():
    """Three click-dialog pages answered with one point, and one click-tab page: the figure's two rows
    are the two tasks (not two dialog pages), and the dialog's caption says its point is the same on
    every dialog page, whatever the target."""
    dialogs = [_click_record((40, 40), rid=f"miniwob/click-dialog/seed100{i}/step0") for i in range(3)]
    tab = _click_record((100, 100), rid="miniwob/click-tab/seed1004/step1", instruction="Click on Tab #2.")
    assert viz.answer_repeats(dialogs + [tab]) == {**{d["id"]: (3, 3) for d in dialogs}, tab["id"]: (1, 1)}
    fig = viz.before_after(dialogs + [tab], dialogs + [tab], lambda r: PAGE, limit=2)
    titles = [" ".join(ax.get_title(loc="left").split()) for ax in _panels(fig)]
    assert len(titles) == 4
    assert sum("click-tab" in t for t in titles) == 2 and sum("click-dialog" in t for t in titles) == 2
    dialog_titles = [t for t in titles if "click-dialog" in t]
    assert all("same point on 3 of 3 click-dialog pages" in t for t in dialog_titles)
    assert not any("same point" in t for t in titles if "click-tab" in t)
    matplotlib.pyplot.close(fig)
