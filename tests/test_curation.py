"""Curation filters: each keeps what it should and says why it dropped the rest."""

from __future__ import annotations

import functools

import pytest

from gui_r1_lite import curation as C
from gui_r1_lite import data as D
from gui_r1_lite.actions import Action, format_answer, target_action
from tests.helpers import BAD, png, train_row


def sample(i, platform="web", action="click", img=None, instruction=None, text="no input text"):
    box = (10.0, 10.0, 50.0, 30.0) if action == "click" else (-100.0, -100.0)
    return D.Sample(id=f"s{i}", image_bytes=img or png(200, 100, (i % 250, 0, 0)), image_size=(200, 100),
                    instruction=instruction or f"do {i}", history="None", gt_action=action, gt_bbox=box,
                    gt_input_text=text, task_type="high", platform=platform)


def test_deduplicate_same_image_and_instruction():
    img = png()
    rows = [sample(0, img=img, instruction="Click OK"), sample(1, img=img, instruction="click  ok"),
            sample(2, img=img, instruction="Click Cancel"), sample(3, instruction="Click OK")]
    kept, rep = C.deduplicate(rows)
    assert [s.id for s in kept] == ["s0", "s2", "s3"]
    assert rep.kept == 3 and rep.dropped == {"duplicate image + instruction": 1}


def test_balance_caps_each_group_deterministically():
    rows = [sample(i, platform="web") for i in range(10)] + [sample(10 + i, platform="mobile") for i in range(3)]
    kept, rep = C.balance(rows, per_group=4, seed=1)
    assert sum(s.platform == "web" for s in kept) == 4 and sum(s.platform == "mobile" for s in kept) == 3
    assert rep.dropped == {"over target 4 for web/click": 6}
    assert [s.id for s in C.balance(rows, per_group=4, seed=1)[0]] == [s.id for s in kept]
    kept2, _ = C.balance(rows, per_group={("web", "click"): 2}, seed=0)
    assert len(kept2) == 2 + 3


def scripted_policy(rows, k, right_counts):
    """Answers right for the first `right_counts[id]` of k samples, wrong for the rest."""
    out = []
    for r in rows:
        good = format_answer(target_action(r["gt_action"], r["gt_bbox"], r["gt_input_text"]))
        bad = format_answer(Action("press_back"))
        n = right_counts[r["id"]]
        out.append([good] * n + [bad] * (k - n))
    return out


def test_difficulty_writes_success_rate_and_keeps_the_band():
    rows = [sample(i) for i in range(4)] + [sample(4, action="type", text="pizza")]
    counts = {"s0": 0, "s1": 1, "s2": 4, "s3": 5, "s4": 3}
    policy = functools.partial(scripted_policy, right_counts=counts)
    kept, rep = C.difficulty(rows, policy, k=5, band=(0.1, 0.9), min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64,
                             batch_size=2)
    assert [s.id for s in kept] == ["s1", "s2", "s4"]
    assert [s.extras["success_rate"] for s in kept] == [0.2, 0.8, 0.6]
    assert rep.dropped == {"never solved (rate 0)": 1, "always solved (rate 1)": 1}
    assert rep.params["rate_histogram"] == {0.0: 1, 0.2: 1, 0.6: 1, 0.8: 1, 1.0: 1}


def test_difficulty_checks_the_policy_output():
    with pytest.raises(ValueError, match="expected 5"):
        C.difficulty([sample(0)], lambda rows, k: [["x"]], k=5, min_pixels=3136, max_pixels=50176)
    with pytest.raises(ValueError, match="band"):
        C.difficulty([sample(0)], lambda rows, k: [["x"] * k], band=(0.9, 0.1))


def test_curate_chains_filters_and_writes_a_loadable_file(tmp_path):
    rows = [train_row(0), train_row(1), train_row(1), train_row(2, **BAD["nan"][0])]
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "raw.parquet")
    ds = D.load_gui_r1(tmp_path / "raw.parquet")
    policy = lambda rows, k: [[format_answer(target_action(r["gt_action"], r["gt_bbox"]))] * k for r in rows]  # noqa: E731
    res = C.curate(ds, [C.deduplicate, functools.partial(C.balance, per_group=10),
                        functools.partial(C.difficulty, policy=policy, k=2, band=(0.0, 1.0),
                                          min_pixels=3136, max_pixels=50176)])
    assert [r.name for r in res.reports] == ["validity", "deduplicate", "balance", "difficulty"]
    assert [r.kept for r in res.reports] == [3, 2, 2, 2]
    assert res.reports[0].dropped == {"invalid gt_bbox": 1}
    out = D.write_gui_r1(res.samples, tmp_path / "curated.parquet")
    back = D.load_gui_r1(out, strict=True)
    assert [s.extras["success_rate"] for s in back] == [1.0, 1.0]
    assert res.to_dict()["rows"] == 2 and "deduplicate: kept 2/3" in res.summary()


def test_model_sampler_draws_k_answers_per_row_reproducibly(tiny_model_dir):
    from gui_r1_lite.evaluate import ModelCompleter
    from gui_r1_lite.modeling import load_policy

    policy = load_policy(tiny_model_dir, lora=None, min_pixels=3136, max_pixels=50176, device="cpu")
    rows = [sample(i) for i in range(3)]

    def rates(seed):
        outs = []

        def spy(train_rows, k):
            got = C.model_sampler(policy, max_new_tokens=6, seed=seed)(train_rows, k)
            outs.append(got)
            return got

        kept, rep = C.difficulty(rows, spy, k=3, band=(0.0, 1.0), min_pixels=3136, max_pixels=50176)
        return outs, [s.extras["success_rate"] for s in kept]

    outs, got = rates(7)
    assert [len(o) for o in outs[0]] == [3, 3, 3] and got == [0.0, 0.0, 0.0]  # random weights solve nothing
    assert len({a for o in outs[0] for a in o}) > 3  # sampled, not greedy: answers differ
    assert rates(7)[0] == outs  # same seed, same answers
    with pytest.raises(ValueError, match="do_sample"):
        ModelCompleter(policy, num_return_sequences=2)
