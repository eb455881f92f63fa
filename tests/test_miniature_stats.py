"""The miniature's statistics on hand-made prediction records whose answers are known: paired gains,
the two-level bootstrap (seeds, then episodes), McNemar's exact test, parsed-row accuracy, per task,
online success; the report's tables, the summary's fields and the bars drawn from them."""

from __future__ import annotations

import doctest
import json
import shutil
from pathlib import Path

import matplotlib
import pytest

from gui_r1_lite import metrics, viz
from gui_r1_lite.runio import read_jsonl, write_jsonl_atomic
from harness import pipeline
from harness.miniature import report, stats
from harness.online import wilson
from study import tables

ROOT = Path(__file__).resolve().parents[1]


def record(task: str, episode: int, step: int, hit: bool, parsed: bool = True) -> dict:
    """A prediction record of a click row (box 10-20 px) whose point hits or misses; an answer that
    did not parse has no point, as `evaluate.make_record` writes it."""
    point = ([15.0, 15.0] if hit else [50.0, 50.0]) if parsed else None
    return {"id": f"miniwob/{task}/seed{episode}/step{step}", "gt_action": "click", "gt_bbox": [10, 10, 20, 20],
            "image_size": [100, 100], "pred_action": "click" if parsed else None, "pred_coord": point,
            "parse_error": None if parsed else "no <answer> block"}


def rows(hits: list[list[bool]], task: str = "click-tab") -> list[stats.ClickRow]:
    """Click rows of one seed: `hits[e][k]` is step k of episode 1000 + e."""
    return stats.click_rows([record(task, 1000 + e, k, h) for e, ep in enumerate(hits) for k, h in enumerate(ep)])


def test_the_docstring_examples_hold():
    for module in (stats, report):
        outcome = doctest.testmod(module)
        assert outcome.attempted > 0 and outcome.failed == 0, module.__name__


def test_click_rows_are_the_rows_click_accuracy_counts():
    recs = [record("click-tab", 1000, 0, True), record("click-tab", 1000, 1, False),
            record("click-tab", 1001, 0, False, parsed=False), {**record("login-user", 1002, 0, True), "gt_action": "type"}]
    got = stats.click_rows(recs)
    assert [(r.episode, r.hit, r.parsed) for r in got] == [
        ("click-tab/seed1000", True, True), ("click-tab/seed1000", False, True), ("click-tab/seed1001", False, False)]
    assert stats.accuracy(got) == metrics.grounding_metrics(recs)["overall"] == pytest.approx(1 / 3)
    assert stats.accuracy(got, parsed_only=True) == 0.5  # the row without an answer leaves the denominator


def test_identical_arms_gain_nothing_and_the_interval_is_zero():
    arm = {s: rows([[True, False], [False, False], [True, True]]) for s in (0, 1, 2)}
    gain = stats.bootstrap_gain(arm, arm)
    assert gain["mean"] == 0.0 and gain["ci95"] == [0.0, 0.0] and gain["per_seed"] == [0.0, 0.0, 0.0]
    assert stats.mcnemar(arm[0], arm[0]) == {"n": 6, "both": 3, "only_a": 0, "only_b": 0, "neither": 3,
                                             "p_value": 1.0}


def test_one_row_flipped_on_every_seed_gives_exact_figures():
    # 20 episodes of 2 rows; arm b hits row 0 of episode 0 too. Each draw's gain is k/40, k the times episode
    # 0 is drawn: k ~ Binomial(20, 1/20), P(k = 0) = 0.36 and P(k <= 2) = 0.92 < 0.975 < P(k <= 3) = 0.98.
    base = [[False, True]] * 20
    a = {s: rows(base) for s in (0, 1, 2)}
    b = {s: rows([[True, True]] + base[1:]) for s in (0, 1, 2)}
    gain = stats.bootstrap_gain(a, b)
    assert gain["mean"] == pytest.approx(1 / 40) and gain["per_seed"] == pytest.approx([1 / 40] * 3)
    assert gain["ci95"] == [0.0, pytest.approx(3 / 40)]
    assert stats.paired_differences(a, b) == pytest.approx({0: 1 / 40, 1: 1 / 40, 2: 1 / 40})
    assert stats.mcnemar(a[0], b[0])["only_b"] == 1 and stats.mcnemar(a[0], b[0])["p_value"] == 1.0


def test_seeds_are_drawn_with_replacement():
    # Seed 0: b hits every row a misses (gain 1); seed 1: the arms agree (gain 0). Draws of seeds give
    # 1 (both seed 0), 0.5 or 0 (both seed 1); the episodes drawn cannot move either seed's gain.
    miss, hit = [[False, False]] * 5, [[True, True]] * 5
    gain = stats.bootstrap_gain({0: rows(miss), 1: rows(miss)}, {0: rows(hit), 1: rows(miss)})
    assert gain["mean"] == 0.5 and gain["ci95"] == [0.0, 1.0]


def test_the_rows_of_an_episode_move_together():
    # The same 60 outcomes, once as 10 episodes of 6 rows that share their outcome, once as 60 episodes
    # of one row: the clustered interval is wider (about sqrt(6) times), as it must be.
    outcomes = [e % 2 == 0 for e in range(10)]
    clustered = rows([[h] * 6 for h in outcomes])
    spread = rows([[h] for h in outcomes for _ in range(6)])
    width = {name: (lambda ci: ci[1] - ci[0])(stats.bootstrap_accuracy({0: r})["ci95"])
             for name, r in (("clustered", clustered), ("spread", spread))}
    assert width["clustered"] > 2 * width["spread"]


def test_mcnemar_exact_on_known_tables():
    assert stats.mcnemar_exact(1, 9) == stats.mcnemar_exact(9, 1) == pytest.approx(0.021484375)  # 2 * 11 / 1024
    assert stats.mcnemar_exact(2, 8) == pytest.approx(0.109375)  # 2 * (1 + 10 + 45) / 1024
    assert stats.mcnemar_exact(5, 5) == 1.0 and stats.mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    a = rows([[True, True, False, False]])
    b = rows([[True, False, True, True]])
    assert stats.mcnemar(a, b) == {"n": 4, "both": 1, "only_a": 1, "only_b": 2, "neither": 0, "p_value": 1.0}


def test_only_rows_both_arms_scored_are_compared():
    a = {0: rows([[True, False, False]])}
    b = {0: rows([[True, True]])}  # scored one row fewer (a row limit): the third row of a is left out
    assert stats.paired_differences(a, b) == {0: 0.5}
    assert stats.bootstrap_gain(a, b)["mean"] == 0.5


def test_the_gain_on_parsed_rows_takes_out_the_format():
    # a answers in format on half the rows and hits every one of them; b parses all and hits half.
    a = {0: stats.click_rows([record("click-tab", 1000 + e, 0, e < 2, parsed=e < 2) for e in range(4)])}
    b = {0: stats.click_rows([record("click-tab", 1000 + e, 0, e % 2 == 0) for e in range(4)])}
    assert stats.bootstrap_gain(a, b)["mean"] == 0.0
    assert stats.bootstrap_gain(a, b, parsed_only=True)["mean"] == -0.5


def test_per_task_counts_rows_and_episodes():
    by_seed = {0: rows([[True, False]]) + rows([[True], [True]], task="login-user"),
               1: rows([[False, False]]) + rows([[True], [False]], task="login-user")}
    assert stats.per_task(by_seed) == {
        "click-tab": {"rows": 2, "episodes": 1, "accuracy": 0.25, "per_seed": [0.5, 0.0]},
        "login-user": {"rows": 2, "episodes": 2, "accuracy": 0.75, "per_seed": [1.0, 0.5]}}


def test_the_bootstrap_is_seeded():
    a = {s: rows([[e % 3 == 0, e % 2 == 0] for e in range(12)]) for s in (0, 1)}
    b = {s: rows([[e % 2 == 0, e % 5 == 0] for e in range(12)]) for s in (0, 1)}
    assert stats.bootstrap_gain(a, b) == stats.bootstrap_gain(a, b)
    assert stats.bootstrap_gain(a, b, n_boot=30, seed=1)["ci95"] != stats.bootstrap_gain(a, b, n_boot=30)["ci95"]


def test_online_success_over_seeds():
    solved = stats.bootstrap_success({0: {"a": (4, 4)}, 1: {"a": (4, 4), "b": (2, 2)}})
    assert solved["mean"] == 1.0 and solved["ci95"] == [1.0, 1.0] and solved["episodes"] == [4, 6]
    mixed = stats.bootstrap_success({0: {"a": (2, 4)}, 1: {"a": (2, 4)}})
    lo, hi = mixed["ci95"]
    assert mixed["mean"] == 0.5 and 0.0 <= lo < 0.5 < hi <= 1.0


ONLINE_TASKS, ONLINE_SEEDS = ("click-tab", "login-user"), (2000, 2001, 2002, 2003)


def online_result(success: float) -> dict:
    """An online.json object of one policy on two tasks, four pages each."""
    return {"success": success, "seeds": list(ONLINE_SEEDS),
            "tasks": {t: {"success": success, "episodes": len(ONLINE_SEEDS), "ci95": [0.0, 1.0], "mean_steps": 1.0}
                      for t in ONLINE_TASKS}}


def online_episodes(solved: set[int]) -> list[dict]:
    """`episodes.jsonl` of that policy: the pages of `solved` seeds solved on each task."""
    return [{"task": t, "seed": s, "steps": 1, "done": s in solved, "raw_reward": 1.0 if s in solved else -1.0,
             "success": s in solved, "end": "done", "why": None} for t in ONLINE_TASKS for s in ONLINE_SEEDS]


@pytest.fixture
def study_folder(tmp_path) -> Path:
    """A pipeline run folder whose notebook 04 ran a miniature of two seeds: each arm's predictions on 6
    episodes of 2 click rows, sft_grpo hitting 2 more rows than sft on each seed, and online results."""
    folder = tmp_path / "artifacts" / "04_grpo_training" / "miniature"
    hits = {"random": 1, "warm": 4, "sft": 5, "sft_grpo": 7}
    predictions = {}
    for seed in (0, 1):
        predictions[str(seed)] = {}
        for arm, n_hit in hits.items():
            eval_dir = folder / f"seed{seed}" / f"{arm}_eval"
            recs = [record("click-tab" if e < 3 else "login-user", 1000 + e, k, 2 * e + k < n_hit + seed,
                           parsed=arm != "sft" or e != 5) for e in range(6) for k in range(2)]
            write_jsonl_atomic(eval_dir / "predictions.jsonl", recs)
            predictions[str(seed)][arm] = str(eval_dir)
    played = {"random": set(), "sft": {2000}, "sft_grpo": {2000, 2001}}  # the pages each arm solves
    online = {str(s): {arm: online_result(len(won) / 4) for arm, won in played.items()} for s in (0, 1)}
    runs = {str(s): {arm: str(folder / f"seed{s}" / f"{arm}_online") for arm in played} for s in (0, 1)}
    for by_arm in runs.values():
        for arm, run in by_arm.items():
            write_jsonl_atomic(Path(run) / "episodes.jsonl", online_episodes(played[arm]))
    (folder / "miniature.json").write_text(json.dumps({"seeds": [0, 1], "predictions": predictions, "online": online,
                                                       "online_runs": runs}))
    return tmp_path


def test_the_summary_reports_the_gain_and_online_success(study_folder):
    study = pipeline.miniature_result(study_folder)
    summary = pipeline.miniature_summary(study)
    gain = summary["gain"]
    assert gain["vs"] == "sft" and gain["arm"] == "sft_grpo" and set(gain["mcnemar_p"]) == {"0", "1"}
    assert gain["click_accuracy"]["per_seed"] == pytest.approx([2 / 12, 2 / 12])
    for key in ("click_accuracy", "click_accuracy_parsed"):
        lo, hi = gain[key]["ci95"]
        assert -1.0 <= lo <= gain[key]["mean"] <= hi <= 1.0
    assert set(summary["online"]) == {"random", "sft", "sft_grpo"}
    for arm, value in summary["online"].items():
        lo, hi = value["success"]["ci95"]
        assert 0.0 <= lo <= value["success"]["mean"] <= hi <= 1.0, arm
    assert summary["online"]["sft_grpo"]["success"]["mean"] == 0.5
    # closed loop, paired on the pages both arms played: sft_grpo solves one page more per task and seed
    assert gain["online_success"]["per_seed"] == [0.25, 0.25] and gain["online_success"]["mean"] == 0.25
    lo, hi = gain["online_success"]["ci95"]
    assert 0.0 <= lo < 0.25 < hi <= 1.0  # never below 0: no page is solved by sft and not by sft_grpo
    assert pipeline.miniature_summary(None) == {} and pipeline.miniature_result(study_folder / "elsewhere") is None


def test_the_online_gain_pairs_the_pages_both_arms_played():
    same = {0: stats.episode_rows(online_episodes({2000, 2003}), ONLINE_TASKS, ONLINE_SEEDS)}
    assert stats.bootstrap_gain(same, same)["ci95"] == [0.0, 0.0]  # the same pages solved: no gain in any draw
    # the same success rate on other pages: unpaired figures would say 0, the paired interval is wide
    other = {0: stats.episode_rows(online_episodes({2001, 2002}), ONLINE_TASKS, ONLINE_SEEDS)}
    swapped = stats.bootstrap_gain(same, other)
    assert swapped["mean"] == 0.0 and swapped["ci95"][0] < 0.0 < swapped["ci95"][1]
    lost = [e for e in online_episodes({2000}) if (e["task"], e["seed"]) != ("login-user", 2002)]
    with pytest.raises(ValueError, match=r"no episode record for 1 of 8 episodes \(login-user/seed2002\)"):
        stats.episode_rows(lost, ONLINE_TASKS, ONLINE_SEEDS)
    retried = online_episodes(set()) + online_episodes({2001})  # the last record of an episode counts
    assert [r.hit for r in stats.episode_rows(retried, ["click-tab"], ONLINE_SEEDS)] == [False, True, False, False]


def test_a_missing_episodes_file_is_named(study_folder):
    run = study_folder / "artifacts" / "04_grpo_training" / "miniature" / "seed1" / "sft_online"
    (run / "episodes.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=f"{run / 'episodes.jsonl'}: the episodes of this online result"):
        pipeline.miniature_result(study_folder)


def test_statistics_are_restated_from_a_moved_run_s_own_folders(study_folder, tmp_path):
    here = study_folder / "artifacts" / "04_grpo_training" / "miniature"
    before = pipeline.miniature_result(study_folder)["stats"]
    moved = here.rename(tmp_path / "moved")
    stored = json.loads((moved / "miniature.json").read_text())  # its folders name the old place
    assert tables.restated(stored, moved)["stats"] == before
    assert tables.restated({**stored, "online_runs": None}, moved)["stats"] == before  # found by the stage names
    shutil.rmtree(moved / "seed0" / "warm_eval")
    assert tables.restated(stored, moved) == stored  # a stage folder gone: the result as it was stored


def test_the_statistics_agree_with_the_stage_metrics(study_folder):
    study = pipeline.miniature_result(study_folder)
    st = study["stats"]
    for seed in (0, 1):
        for arm in ("random", "warm", "sft", "sft_grpo"):
            recs = read_jsonl(Path(study["predictions"][str(seed)][arm], "predictions.jsonl"))
            overall = metrics.grounding_metrics(recs)["overall"]
            assert st["arms"][arm]["click_accuracy"]["per_seed"][seed] == pytest.approx(overall), (arm, seed)
    assert st["arms"]["sft"]["parsed_share"] == pytest.approx(10 / 12)  # episode 5 (2 rows) unparsed
    assert st["per_task"]["sft_grpo"]["login-user"]["rows"] == 6 and st["per_task"]["sft_grpo"]["login-user"][
        "episodes"] == 3


def test_the_tables_show_intervals_gain_and_counts(study_folder):
    study = pipeline.miniature_result(study_folder)
    for arm in report.ARMS:  # the arms' figures as combine_seeds keeps them
        study[arm] = {m: {"mean": 0.5, "std": 0.0, "per_seed": [0.5, 0.5]} for m in report.METRICS}
    study["n_heldout"] = 12
    table = report.miniature_table(study)
    assert table.count("\n| ") == 3 and "seeds 0, 1" in table  # one line per arm
    assert "online success % [95 % CI]" in table and "gain of sft_grpo over sft, click accuracy: +16.7 [" in table
    assert "McNemar" in table and "12 with a click target" in table
    assert ("gain of sft_grpo over sft, closed-loop success: +25.0 [" in table
            and "(paired on the same task pages, per seed: seed 0 +25.0, seed 1 +25.0;" in table)
    per_task = report.per_task_table(study)
    assert "| click-tab | 6 | 3 |" in per_task and "| login-user | 6 | 3 |" in per_task
    # the warm start both arms begin from: a reference row after random when the run scored it
    study["warm_start"] = {m: {"mean": 0.25, "std": 0.0, "per_seed": [0.25, 0.25]} for m in report.METRICS}
    rows = report.miniature_table(study).split("\n| ")[1:5]
    assert [r.split(" | ")[0] for r in rows] == ["random", "warm start (reference)", "sft", "sft_grpo"]
    assert rows[1].split(" | ")[2].startswith("37.5 [")   # the warm arm's click accuracy read from its rows


def test_the_online_table_pools_each_task_s_episodes_over_seeds(study_folder):
    study = pipeline.miniature_result(study_folder)
    table = tables.online_task_table(study).splitlines()
    assert table[0].startswith("| task | random: solved / episodes") and "warm" not in table[0]  # no warm online
    lo, hi = (f"{100 * v:.1f}" for v in wilson(4, 8))
    assert table[2] == f"| click-tab | 0 / 8, 0.0 [0.0, 32.4] | 2 / 8, 25.0 [7.1, 59.1] | 4 / 8, 50.0 [{lo}, {hi}] |"
    assert table[3].startswith("| login-user | 0 / 8")
    assert tables.online_task_table({"online": {}}) == "(no closed-loop episodes in this run)"


def test_the_bars_show_the_intervals_and_the_gain_readably(study_folder):
    study = pipeline.miniature_result(study_folder)
    for arm in report.ARMS:
        study[arm] = {m: {"mean": 0.5, "std": 0.0, "per_seed": [0.5, 0.5]} for m in report.METRICS}
    fig = viz.miniature_bars(study)
    fig.canvas.draw()
    assert len(fig.axes) == 2 and fig.axes[1].get_title() == "sft_grpo − sft"
    ticks = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert ticks == ["click,\nall rows", "click,\nparsed rows", "closed\nloop"]  # the paired online gain too
    assert fig.axes[1].patches[2].get_height() == pytest.approx(25.0)
    full = {**study, "random": {m: {"mean": 1.0, "std": 0.0, "per_seed": [1.0, 1.0]} for m in report.METRICS}}
    fig_full = viz.miniature_bars(full)  # bars at 100 %, as every arm's format rate often is
    fig_full.canvas.draw()
    legend = fig_full.axes[0].get_legend().get_window_extent()
    assert not any(legend.overlaps(bar.get_window_extent()) for bar in fig_full.axes[0].patches)  # hides no bar
    matplotlib.pyplot.close(fig_full)
    smallest = viz.readable_points(fig.get_figwidth())
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    assert texts and all(t.get_fontsize() >= smallest - 0.01 for t in texts)
    matplotlib.pyplot.close(fig)


def test_the_transfer_file_holds_only_tasks_never_trained_on(tmp_path):
    from gui_r1_lite.data import load_gui_r1
    from harness.miniature import DEFAULT_HELDOUT, LAYOUT_TASKS, task_of

    path = report.transfer_file(DEFAULT_HELDOUT, LAYOUT_TASKS, tmp_path / "transfer.parquet", per_task=2)
    tasks = [task_of(s.id) for s in load_gui_r1(path).samples]
    assert tasks and not set(tasks) & set(LAYOUT_TASKS) and all(tasks.count(t) == 2 for t in tasks)
    assert report.transfer_file(DEFAULT_HELDOUT, None, tmp_path / "none.parquet", per_task=2) is None


# --- the blind check: a policy that reads the screen against ones that do not ---------------------------


class DarkPatch:
    """A stand-in policy that reads the screen: it clicks the centre of the dark pixels of the image it
    is shown (the pages below draw the target black on white), the page's top-left corner when none is."""

    name = "dark-patch"

    def complete(self, rows, images, keys, max_new_tokens):
        import numpy as np

        from gui_r1_lite.actions import NO_TEXT, Action, format_answer

        out = []
        for image in images:
            ys, xs = np.nonzero(np.asarray(image.convert("L")) < 128)
            point = (round(float(xs.mean())), round(float(ys.mean()))) if xs.size else (0, 0)
            out.append(format_answer(Action("click", point, NO_TEXT)))
        return out


class FixedPoint(DarkPatch):
    """A stand-in policy that ignores the screen: the same point on every page."""

    name = "fixed-point"

    def complete(self, rows, images, keys, max_new_tokens):
        from gui_r1_lite.actions import NO_TEXT, Action, format_answer

        return [format_answer(Action("click", (80, 100), NO_TEXT)) for _ in rows]


def target_pages(tasks: tuple[str, ...] = ("click-tab", "click-dialog", "login-user")) -> list:
    """The held-out click rows of `tasks`, each page redrawn white with its target box black."""
    import dataclasses
    import io

    from PIL import Image, ImageDraw

    from gui_r1_lite.data import load_gui_r1
    from harness.miniature import DEFAULT_HELDOUT, task_of

    out = []
    for s in load_gui_r1(DEFAULT_HELDOUT).samples:
        if task_of(s.id) in tasks and s.gt_action == "click" and s.has_target:
            image = Image.new("RGB", s.image_size, "white")
            ImageDraw.Draw(image).rectangle([round(v) for v in s.gt_bbox], fill="black")
            buf = io.BytesIO()
            image.save(buf, format="PNG")
            out.append(dataclasses.replace(s, image_bytes=buf.getvalue()))
    return out


@pytest.fixture(scope="module")
def blind_check(tmp_path_factory) -> dict:
    """Three policies scored seeing and blind on the same pages, two seeds, laid out as a miniature run's
    stages: `dark` reads the screen, `fixed` (as `sft`) and the random baseline (as `random`) do not."""
    from gui_r1_lite.evaluate import evaluate

    folder, pages = tmp_path_factory.mktemp("blind"), target_pages()
    policies = {"sft_grpo": DarkPatch(), "sft": FixedPoint(), "random": "random"}
    predictions = {}
    for seed in (0, 1):
        predictions[str(seed)] = {}
        for arm, policy in policies.items():
            for name, blind in ((arm, False), (report.blind_arm(arm), True)):
                out = folder / f"seed{seed}" / f"{name}_eval"
                evaluate(pages, policy, out, seed=seed, progress=False, blind=blind, min_pixels=28 * 28 * 16,
                         max_pixels=28 * 28 * 64)
                predictions[str(seed)][name] = str(out)
    return {"predictions": predictions, "n_pages": len(pages), "stats": report.study_statistics(predictions)}


def test_a_policy_that_reads_the_screen_looks_and_one_that_does_not_looks_zero(blind_check):
    st = blind_check["stats"]
    assert set(st["looks"]) == {"random", "sft", "sft_grpo"}
    dark = st["looks"]["sft_grpo"]
    assert st["arms"]["sft_grpo"]["click_accuracy"]["mean"] > 0.9   # it finds the black box ...
    assert st["arms"]["sft_grpo_blind"]["click_accuracy"]["mean"] < 0.1  # ... and nothing on a white page
    assert dark["ci95"][0] > 0.5 and dark["mean"] > 0.8
    for arm in ("sft", "random"):  # the same answers whatever the screen: looks 0 in every draw
        assert st["looks"][arm]["mean"] == 0.0 and st["looks"][arm]["ci95"] == [0.0, 0.0], arm
    # the interval is the gain's bootstrap, paired on rows: blind score -> seeing score
    gain = stats.bootstrap_gain(
        {s: report.read_click_rows(blind_check["predictions"][str(s)]["sft_grpo_blind"]) for s in (0, 1)},
        {s: report.read_click_rows(blind_check["predictions"][str(s)]["sft_grpo"]) for s in (0, 1)})
    assert gain == dark


def test_distinct_answers_against_distinct_targets_per_task(blind_check):
    distinct = blind_check["stats"]["distinct"]
    tab = distinct["sft"]["click-tab"]
    assert tab["rows"] == 15 and tab["distinct_targets"] >= 2
    assert tab["distinct_answers"] == 1.0 and tab["distinct_answers_per_seed"] == [1, 1]  # one point for every page
    assert distinct["sft_grpo"]["click-dialog"]["distinct_answers"] > 1
    assert distinct["sft_grpo_blind"]["click-dialog"]["distinct_answers"] == 1.0  # white pages: one answer
    assert sum(t["rows"] for t in distinct["sft"].values()) == blind_check["n_pages"]


def test_the_blind_check_in_the_result_summary_and_tables(blind_check):
    st = blind_check["stats"]
    result = {"seeds": [0, 1], "n_heldout": blind_check["n_pages"], "stats": st, **report.blind_summary(st)}
    for arm in report.ARMS:
        result[arm] = {m: {"mean": 0.5, "std": 0.0, "per_seed": [0.5, 0.5]} for m in report.METRICS}
    summary = report.arm_results(result)
    assert set(summary) == {*report.ARMS, "looks"}
    # notebook 04 reports these as its "miniature"; the pipeline lifts them into summary.json's miniature block
    lifted = pipeline.top_level_summary({"04_grpo_training": {"miniature": summary}})["miniature"]
    assert lifted["looks"]["sft_grpo"]["ci95"][0] > 0.5 and lifted["looks"]["sft"]["ci95"] == [0.0, 0.0]
    assert set(summary["looks"]["sft_grpo"]) == {"mean", "ci95", "per_seed"}
    assert summary["looks"]["sft_grpo"]["ci95"] == st["looks"]["sft_grpo"]["ci95"]
    assert result["distinct_answers"]["sft"]["click-tab"]["distinct_answers"] == 1.0
    table = report.miniature_table(result)
    assert "click accuracy, white screens % [95 % CI]" in table and "looks: seeing − white, points" in table
    sft_grpo = next(line for line in table.splitlines() if line.startswith("| sft_grpo |"))
    assert f"| {100 * st['looks']['sft_grpo']['mean']:+.1f} [" in sft_grpo
    blind_table = report.blind_task_table(result)
    assert blind_table.splitlines()[0].startswith("| task | click rows | distinct targets | random: seeing %")
    assert "| click-tab | 15 |" in blind_table and " (1) |" in blind_table
    assert "blind" not in report.per_task_table(result).splitlines()[0]  # the seeing arms only
    assert report.blind_task_table({"stats": {}}) == "(no blind check in this run)"
    # combine_seeds puts each arm's blind score beside its figures
    per_seed = {s: {"metrics": {a: {m: 0.5 for m in report.METRICS} for a in (*report.ARMS, report.WARM)},
                    "blind_metrics": {a: {m: 0.25 for m in report.METRICS} for a in (*report.ARMS, report.WARM)},
                    "per_task": {a: {} for a in (*report.ARMS, report.WARM)}, "n_eval": 1, "compute": {}, "runs": {},
                    "models": {}, "predictions": blind_check["predictions"][str(s)], "seconds": {"x": 1.0},
                    "skipped": []} for s in (0, 1)}
    combined = report.combine_seeds(per_seed)
    assert combined["sft"]["blind"] == {"click_accuracy": {"mean": 0.25, "std": 0.0, "per_seed": [0.25, 0.25]}}
    assert combined["warm_start"]["blind"]["click_accuracy"]["mean"] == 0.25  # the reference row's too
    del per_seed[1]["blind_metrics"]["sft"]
    assert "blind" not in report.combine_seeds(per_seed)["sft"]  # not scored blind on every seed: no figure


def _interval(lo: float, hi: float) -> dict:
    return {"mean": (lo + hi) / 2, "ci95": [lo, hi], "per_seed": [(lo + hi) / 2]}


def test_what_it_shows_follows_each_interval_s_sign():
    settings = {"warm_steps": 0, "tasks": ["click-color"]}
    result = {"settings": settings, "seeds": [0], "n_heldout": 114,
              "stats": {"looks": {"sft": _interval(-0.02, 0.03), "sft_grpo": _interval(0.06, 0.18)},
                        "gain": {"click_accuracy": _interval(-0.01, 0.06)},
                        "mcnemar": {"0": {"p_value": 0.25, "only_a": 2, "only_b": 5}},
                        "online": {"sft_grpo": {"success": {**_interval(0.0, 0.667), "episodes": [12]}}}}}
    text = report.what_it_shows(result)
    grpo = next(line for line in text.splitlines() if line.startswith("- **GRPO from the base"))
    sft = next(line for line in text.splitlines() if line.startswith("- **SFT from the base"))
    assert "+12.0 [+6.0, +18.0] points" in grpo and "depend on the screenshot" in grpo
    assert "no evidence that it looks" in sft
    assert "do not tell the two apart" in text and "McNemar p per seed: 0.25" in text
    assert "over 12 episodes" in text and "not which arm plays better" in text
    # the same run with other figures reads otherwise: every sentence follows its interval
    result["stats"]["gain"]["click_accuracy"] = _interval(0.02, 0.09)
    result["stats"]["looks"]["sft_grpo"] = _interval(-0.09, -0.01)
    result["stats"]["online"]["sft_grpo"]["success"]["episodes"] = [40]
    text = report.what_it_shows(result)
    assert "GRPO is ahead of SFT" in text and "scores higher on white screens" in text
    assert "not which arm plays better" not in text
