"""The grounding pages and the pretraining rows: valid GUI-R1 rows that vary and cannot be answered
from the instruction alone, SFT rows whose loss falls on the answer only, and the paired interval."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import pytest

from grounding.check import paired_interval
from grounding.pages import KINDS, PageSettings, generate, header_height, kind_counts
from grounding.pretrain import parse_stage, pixels_for
from gui_r1_lite.actions import parse_completion
from gui_r1_lite.data import load_gui_r1, write_gui_r1
from gui_r1_lite.geometry import point_in_box, target_point

ALL = PageSettings(width=168, height=224, kinds=KINDS, min_elements=2, max_elements=4)


def test_pages_are_valid_gui_r1_rows(tmp_path):
    # Written as GUI-R1 parquet and read back by the package's loader: no row refused.
    pages = list(generate(ALL, 40, seed=3))
    path = write_gui_r1(pages, tmp_path / "pages.parquet")
    loaded = load_gui_r1(path, strict=True)
    assert len(loaded) == 40
    for s in loaded:
        x1, y1, x2, y2 = s.gt_bbox
        assert 0 <= x1 < x2 <= s.image_size[0] and 0 <= y1 < y2 <= s.image_size[1], s.id
        assert s.image_size == (168, 224) and s.gt_action == "click"


def test_pages_vary_and_repeat_by_seed():
    a, b, c = (list(generate(ALL, 30, seed)) for seed in (1, 1, 2))
    assert [s.image_bytes for s in a] == [s.image_bytes for s in b]  # same seed: same pages
    assert all(x.image_bytes != y.image_bytes for x, y in zip(a, c, strict=True))  # another seed: others
    assert len({s.gt_bbox for s in a}) == 30  # every target somewhere else
    assert set(kind_counts(a)) == set(KINDS) and len(set(kind_counts(a).values())) == 1


def test_the_instruction_alone_does_not_say_where():
    # The same instruction names targets far apart: a blind policy cannot know where to click.
    by_text = defaultdict(list)
    for s in generate(replace(ALL, kinds=("colour", "shape")), 400, seed=0):
        by_text[s.instruction].append(target_point(s.gt_bbox))
    spreads = [max(p[0] for p in pts) - min(p[0] for p in pts) for pts in by_text.values() if len(pts) > 5]
    assert spreads and min(spreads) > 60


def test_header_keeps_elements_below_it():
    st = replace(ALL, header=True)
    for s in generate(st, 30, seed=4):
        assert s.gt_bbox[1] >= header_height(st), s.id


def test_grid_puts_centres_on_cells():
    st = PageSettings(width=112, height=112, grid=4, min_elements=1, max_elements=1)
    centres = {target_point(s.gt_bbox) for s in generate(st, 60, seed=0)}
    assert centres <= {(14 + 28 * i, 14 + 28 * j) for i in range(4) for j in range(4)}


def test_high_pages_ask_for_the_same_click_in_the_full_action_space(tmp_path):
    # MiniWoB++'s multi-step tasks are posed with the whole action space and, after the first step,
    # a history: a share `high` of the pages is posed so, the answer the same click.
    from gui_r1_lite.data import to_eval_rows

    pages = list(generate(replace(ALL, high=0.5), 80, seed=5))
    high = [s for s in pages if s.task_type == "high"]
    assert 20 < len(high) < 60 and {s.space for s in high} == {"high"}
    assert 0 < sum(bool(s.history) for s in high) < len(high)
    assert all(s.history == "" and s.space == "low" for s in pages if s.task_type == "low")
    loaded = load_gui_r1(write_gui_r1(pages, tmp_path / "p.parquet"), strict=True).samples
    assert [(s.task_type, s.history) for s in loaded] == [(s.task_type, s.history) for s in pages]
    for s, row in zip(pages, to_eval_rows(pages, 37632, 37632), strict=True):
        text = row.messages[0]["content"][1]["text"]
        assert ("enumerate from ['complete'" in text) == (s.task_type == "high"), text
        assert (s.history or "'None'") in text
    assert all(s.task_type == "low" for s in generate(ALL, 40, seed=5))  # high 0: low-level pages only
    with pytest.raises(ValueError, match="high"):
        PageSettings(high=1.5)


def test_stage_and_pixels_parse():
    st = parse_stage("300:4:1:3:colour,shape:0.5", PageSettings())
    assert st.steps == 300 and st.settings.grid == 4 and st.settings.kinds == ("colour", "shape")
    assert st.settings.gradient == 0.5
    with pytest.raises(Exception, match="expected STEPS"):
        parse_stage("300:4", PageSettings())
    assert pixels_for(112, 84) == (9408, 9408)
    with pytest.raises(ValueError, match="multiples of 28"):
        pixels_for(100, 112)


def test_paired_interval():
    seeing, blind = [1] * 30 + [0] * 10, [0] * 40
    got = paired_interval(seeing, blind)
    assert got["mean"] == pytest.approx(0.75) and 0.6 < got["ci95"][0] < 0.75 < got["ci95"][1] <= 0.9
    same = paired_interval([1, 0] * 20, [1, 0] * 20)
    assert same["ci95"] == [0.0, 0.0]
    with pytest.raises(ValueError, match="paired"):
        paired_interval([1], [1, 0])


def test_training_rows_label_the_answer_only(tiny_model_dir):
    # The loss falls on the SFT answer (the package's format) and nothing of the prompt or padding.
    from grounding.loop import encode_batch
    from gui_r1_lite.modeling import load_policy

    pixels = pixels_for(112, 112)
    policy = load_policy(tiny_model_dir, lora=None, min_pixels=pixels[0], max_pixels=pixels[1], device="cpu")
    pages = list(generate(PageSettings(kinds=("colour", "button")), 3, seed=0))
    batch = encode_batch(policy.processor, pages, pixels)
    tok = policy.processor.tokenizer
    for row, page in zip(batch["labels"], pages, strict=True):
        text = tok.decode(row[row != -100], skip_special_tokens=True)
        answer = parse_completion(text).prediction
        assert answer.action == "click" and point_in_box(answer.point, page.gt_bbox, inclusive=True), text


def test_tint_makes_the_target_say_where_it_is():
    # A diagnostic page: the same red square comes out in another colour at the other side of the page.
    from PIL import Image, ImageDraw

    from grounding.pages import _tinted

    image = Image.new("RGB", (112, 112), "white")
    draw = ImageDraw.Draw(image)
    for box in ((2, 2, 12, 12), (98, 98, 108, 108)):
        draw.rectangle(box, fill=(220, 30, 30))
    tinted = _tinted(image, 1.0)
    assert tinted.getpixel((7, 7))[0] > tinted.getpixel((103, 103))[0] + 100


def test_loop_trains_and_can_freeze_the_vision_blocks(tiny_model_dir):
    import torch

    from grounding.loop import _is_vision_block, train_loop
    from gui_r1_lite.modeling import load_policy

    pixels = pixels_for(56, 56)
    policy = load_policy(tiny_model_dir, lora=None, train_vision=True, min_pixels=pixels[0], max_pixels=pixels[1],
                         device="cpu")
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    st = PageSettings(width=56, height=56, size=14, min_elements=1, max_elements=1)
    logged = []
    train_loop(policy.model, policy.processor, lambda step, rng: list(generate(st, 2, rng.randrange(99))), steps=2,
               lr=1e-3, warmup=1, weight_decay=0.1, pixels=pixels, seed=0, log=logged.append, log_every=1,
               vision_lr_scale=0.0)
    assert [r["step"] for r in logged] == [1, 2] and all(r["loss"] > 0 for r in logged)
    after = dict(policy.model.named_parameters())
    moved = {n for n, p in after.items() if not torch.equal(p.detach(), before[n])}
    assert not any(_is_vision_block(n) for n in moved)  # frozen: not even weight decay moves them
    assert any(".merger." in n for n in moved) and any("language_model" in n for n in moved)


def test_shipped_base_loads_and_its_answers_move_with_the_target():
    # The base loads through the same call as the 3B (modeling.load_policy -> from_pretrained) and
    # clicks where the shape is: one page per place of its last training stage (a grid), answers
    # that differ from page to page and often land inside their own target.
    from pathlib import Path

    from grounding.accept import _settings
    from grounding.check import answer_records
    from gui_r1_lite.data import to_eval_rows
    from gui_r1_lite.metrics import grounding_hit
    from gui_r1_lite.modeling import load_policy

    base = Path(__file__).resolve().parents[1] / "grounding" / "base"
    st = replace(_settings(base), kinds=("colour",), min_elements=1, max_elements=1)
    assert st.grid >= 2
    pixels = pixels_for(st.width, st.height)
    policy = load_policy(base, lora=None, min_pixels=pixels[0], max_pixels=pixels[1], device="cpu")
    by_place = {}
    for s in generate(st, 40 * st.grid**2, seed=7):
        by_place.setdefault(s.gt_bbox, s)
    def fits(extent: int, low: int) -> int:   # the grid's centres along one axis whose shape fits the page
        centres = (int((k + 0.5) * extent / st.grid) for k in range(st.grid))
        return sum(1 for c in centres if c - st.size // 2 >= low and c - st.size // 2 + st.size <= extent)

    assert len(by_place) == fits(st.width, 0) * fits(st.height, header_height(st))
    records = answer_records(policy, to_eval_rows(list(by_place.values()), *pixels), pixels)
    answers = [r["completion"] for r in records]
    # A blind policy gives one answer and hits one place of 36; the base hit ~44 % of fresh pages with
    # 1-3 shapes (docs/results/study_generated: the base's row).
    assert len({tuple(r["pred_coord_model"] or ()) for r in records}) >= len(records) / 2, answers
    assert sum(bool(grounding_hit(r)) for r in records) >= len(records) / 4, answers


def test_generated_task_files_split_like_the_miniwob_captures(tmp_path):
    from grounding.tasks import main as write_tasks
    from harness import miniature

    args = ["--pages", "4:2:3:colour,shape", "--header", "--train-per-seed", "2", "--heldout-seeds", "2",
            "--heldout-per-seed", "3"]
    assert write_tasks(["--out", str(tmp_path / "a"), *args]) == 0
    assert write_tasks(["--out", str(tmp_path / "b"), *args]) == 0
    a, b = (load_gui_r1(tmp_path / d / "heldout.parquet").samples for d in "ab")
    assert [s.image_bytes for s in a] == [s.image_bytes for s in b]  # the same command, the same pages
    settings = miniature.MiniatureSettings(tasks=("colour", "shape"), min_heldout_rows=1)
    data = miniature.prepare_data(tmp_path / "run", tmp_path / "a" / "train.parquet",
                                  tmp_path / "a" / "heldout.parquet", settings)
    assert data["train_tasks"] == {"colour": 50, "shape": 50}   # seeds 0-24, 2 pages each
    assert data["heldout_tasks"] == {"colour": 6, "shape": 6}
    val = miniature.prepare_data(tmp_path / "val", tmp_path / "a" / "train.parquet",
                                 tmp_path / "a" / "heldout.parquet", settings, validate=True)
    assert val["heldout_tasks"] == {"colour": 10, "shape": 10}  # seeds 25-29
    report = __import__("json").loads((tmp_path / "a" / "data_report.json").read_text())
    assert set(report["best_blind_heldout"]) == {"colour", "shape"}
    assert all(0 < v < 1 for v in report["best_blind_heldout"].values())


def test_best_blind_is_the_most_common_box_s_share():
    from grounding.tasks import best_blind

    rows = list(generate(PageSettings(width=112, height=112, size=28, grid=2, min_elements=1, max_elements=1), 40, 0))
    rows = [replace(s, group="colour") for s in rows]
    boxes = [s.gt_bbox for s in rows]
    top = max(set(boxes), key=boxes.count)
    assert best_blind(rows)["colour"] == pytest.approx(boxes.count(top) / len(rows))
