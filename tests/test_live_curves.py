"""The live training chart follows the stage that trains, GRPO and SFT alike, and shows each what it is
watched by: GRPO's reward, reward spread, zero-spread groups, KL (or that β = 0 computes none) and answer
length; SFT's loss and learning rate. The trainer's end-of-training totals are never drawn. The records are
those TRL 1.16 writes, as `MetricsJsonl` appends them (lines of a miniature run, numbers kept)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt

from gui_r1_lite import viz
from gui_r1_lite.runio import append_jsonl, write_json_atomic
from harness import experiments

# One GRPO step as TRL 1.16 logs it (a miniature's sft_grpo_train, β = 0: no "kl" key).
GRPO_STEP = {
    "epoch": 0.0109, "step_seconds": 5.896, "loss": 7.449e-05, "grad_norm": 4.13e-05, "learning_rate": 0.0001,
    "num_tokens": 6129.0, "completions/mean_length": 20.5625, "completions/min_length": 5.0,
    "completions/max_length": 37.0, "completions/clipped_ratio": 0.0, "completions/mean_terminated_length": 20.5625,
    "completions/min_terminated_length": 5.0, "completions/max_terminated_length": 37.0,
    "rewards/gui_r1/mean": 0.1, "rewards/gui_r1/std": 0.1033, "rewards/format/mean": 0.5,
    "rewards/format/std": 0.5164, "rewards/accuracy/mean": 0.0, "rewards/accuracy/std": 0.0, "reward": 0.1,
    "reward_std": 0.1033, "frac_reward_zero_std": 0.5, "entropy": 0.0444, "clip_ratio/low_mean": 0.0,
    "clip_ratio/high_mean": 0.0, "clip_ratio/region_mean": 0.0, "clip_ratio/low_min": 0.0,
    "clip_ratio/high_max": 0.0, "step_time": 5.856}
# One SFT step, and the record the trainer logs once when a run ends (its totals; step_seconds over no step).
SFT_STEP = {"epoch": 0.0417, "step_seconds": 2.1486, "loss": 1.668, "grad_norm": 8.43, "learning_rate": 0.0003,
            "entropy": 0.0798, "mean_token_accuracy": 0.8221, "num_tokens": 2973.0}
END = {"step_seconds": 0.107, "train_runtime": 36.3727, "train_samples_per_second": 4.399,
       "train_steps_per_second": 0.55, "total_flos": 547760209920.0, "train_loss": 1.0249}


def grpo_log(steps: int, kl: bool = False, end: bool = True) -> list[dict]:
    log = [{"step": s, **GRPO_STEP, "reward": 0.1 * s, "completions/mean_length": 20.0 + s,
            **({"kl": 0.001 * s} if kl else {})} for s in range(1, steps + 1)]
    return log + ([{"step": steps, "epoch": 0.5, **END}] if end else [])


def sft_log(steps: int, end: bool = True) -> list[dict]:
    log = [{"step": s, **SFT_STEP, "loss": 1.6 / s} for s in range(1, steps + 1)]
    return log + ([{"step": steps, "epoch": 0.5, **END}] if end else [])


def write_run(folder: Path, log: list[dict], method: str, beta: float | None = None) -> Path:
    """A training run's folder as the trainer leaves it: run.json (method, settings) and metrics.jsonl."""
    settings = {"learning_rate": 1e-4, **({"beta": beta} if beta is not None else {})}
    write_json_atomic(folder / "run.json", {"method": method, "settings": settings})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    return folder / "metrics.jsonl"


def panels(fig) -> dict[str, str]:
    """Panel title -> "curve" (a line of at least two points) or the text written in it."""
    out = {}
    for ax in fig.axes:
        if not ax.axison:
            continue
        if ax.lines:
            assert all(len(line.get_xdata()) >= 2 for line in ax.lines), ax.get_title()
            out[ax.get_title()] = "curve"
        else:
            out[ax.get_title()] = " ".join(t.get_text() for t in ax.texts).replace("\n", " ")
    return out


def test_a_grpo_stage_shows_reward_spread_zero_std_kl_and_length(tmp_path):
    live = viz.LiveCurves(smooth=3)
    live.draw(write_run(tmp_path / "sft_grpo_train", grpo_log(6), "grpo", beta=0.0))
    shown = panels(live.figure)
    assert list(shown) == ["reward", "reward_std", "frac_reward_zero_std", "kl", "completions/mean_length"]
    assert shown["kl"].startswith("not computed: beta = 0")
    assert all(shown[k] == "curve" for k in shown if k != "kl")
    assert live.figure._suptitle.get_text() == "sft_grpo_train (GRPO): step 6"
    # the trainer's totals are no step: none of them, nor its step_seconds, is drawn
    reward = next(ax for ax in live.figure.axes if ax.get_title() == "reward")
    assert list(reward.lines[0].get_xdata()) == [1, 2, 3, 4, 5, 6]


def test_a_grpo_stage_with_beta_draws_its_kl(tmp_path):
    live = viz.LiveCurves()
    live.draw(write_run(tmp_path / "grpo", grpo_log(4, kl=True), "grpo", beta=0.04))
    shown = panels(live.figure)
    assert shown["kl"] == "curve" and set(shown) == {"reward", "reward_std", "frac_reward_zero_std", "kl",
                                                     "completions/mean_length"}


def test_a_grpo_run_without_run_json_is_known_by_its_reward(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in grpo_log(3)))
    live = viz.LiveCurves()
    live.draw(tmp_path / "metrics.jsonl")
    assert "not logged yet" in panels(live.figure)["kl"] and "(GRPO)" in live.figure._suptitle.get_text()


def test_an_sft_stage_shows_loss_and_learning_rate_not_the_run_s_totals(tmp_path):
    live = viz.LiveCurves()
    live.draw(write_run(tmp_path / "sft_train", sft_log(5), "sft"))
    shown = panels(live.figure)
    assert list(shown) == ["loss", "learning_rate", "grad_norm", "mean_token_accuracy", "entropy"]
    assert set(shown.values()) == {"curve"}


def test_no_panel_is_one_point_and_the_end_of_training_record_is_never_a_panel(tmp_path):
    # before: every numeric key got a panel, the totals (train_runtime, total_flos, ...) each one dot
    for log in (grpo_log(5), sft_log(5)):
        fig = viz.training_curves(log)
        titles = set(panels(fig))
        assert not titles & {"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos",
                             "train_loss"}, titles
        step_seconds = next(ax for ax in fig.axes if ax.get_title() == "step_seconds")
        assert list(step_seconds.lines[0].get_ydata()) == [r["step_seconds"] for r in log[:-1]]
        plt.close(fig)
    # a stage's first step: its panels say so, with no dot on an axis made up around it
    live = viz.LiveCurves()
    live.draw(write_run(tmp_path / "first", grpo_log(1, end=False), "grpo", beta=0.0))
    shown = panels(live.figure)
    assert shown["reward"] == "one value so far: 0.1 at step 1" and not any(ax.lines for ax in live.figure.axes)


def test_each_run_gets_its_own_figure_and_none_is_left_for_the_inline_backend(tmp_path, monkeypatch):
    """A new log starts a new figure (the last stage's stays); each drawn figure is closed, so a notebook's
    inline backend does not show it once more when the cell ends."""
    import IPython
    import IPython.display

    shown: list = []

    class Handle:
        def __init__(self, fig):
            self.figs = [fig]
            shown.append(self)

        def update(self, fig):
            self.figs.append(fig)

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda fig, display_id=False: Handle(fig))
    open_before = plt.get_fignums()
    live = viz.LiveCurves()
    grpo = write_run(tmp_path / "sft_grpo_train", grpo_log(3, end=False), "grpo", beta=0.0)
    sft = write_run(tmp_path / "sft_train", sft_log(3), "sft")
    live.draw(grpo)
    live.draw(grpo)
    live.draw(sft)
    assert [len(h.figs) for h in shown] == [2, 1]
    assert "GRPO" in shown[0].figs[-1]._suptitle.get_text() and "SFT" in shown[1].figs[-1]._suptitle.get_text()
    assert plt.get_fignums() == open_before


def test_the_watch_follows_the_seed_into_grpo_and_keeps_each_stage_as_it_ended(tmp_path):
    """Seeds side by side: the stage in training is the one without stage.json (GRPO, then SFT); when the
    seed moves on, the stage left is drawn once more, as it ended; `final` draws the last one as it ended."""
    drawn: list[tuple[str, int]] = []

    class Live:
        every = 3600.0  # only a move between stages, or the final call, draws within the hour

        def draw(self, path):
            drawn.append((path.parent.name, len(path.read_text().splitlines())))

    seed = tmp_path / "seed0"
    watch = experiments.follow_first_seed(Live(), seed)
    grpo = seed / "sft_grpo_train" / "metrics.jsonl"
    for rec in grpo_log(2, end=False):
        append_jsonl(grpo, rec)
    watch()
    append_jsonl(grpo, grpo_log(3, end=False)[-1])
    append_jsonl(grpo, {"step": 3, **END})
    write_json_atomic(grpo.parent / "stage.json", {"steps": 3})  # GRPO finished
    watch()  # throttled: nothing new is drawn
    sft = seed / "sft_train" / "metrics.jsonl"
    append_jsonl(sft, sft_log(1, end=False)[0])
    os.utime(grpo, (sft.stat().st_mtime - 5,) * 2)
    watch()
    append_jsonl(sft, {"step": 2, **SFT_STEP})
    watch(final=True)
    assert drawn == [("sft_grpo_train", 2), ("sft_grpo_train", 4), ("sft_train", 1), ("sft_train", 2)]


def test_the_notebook_s_callback_draws_each_stage_it_trains(tmp_path):
    """In one process (`workers = 1`) the TrainerCallback draws each stage, GRPO included, from its log."""
    live = viz.LiveCurves(every=0.0)
    cb = live.callback()
    state = SimpleNamespace(is_world_process_zero=True)
    for name, log, method in (("sft_grpo_train", grpo_log(3), "grpo"), ("sft_train", sft_log(3), "sft")):
        write_run(tmp_path / name, log, method, beta=0.0)
        cb.on_log(SimpleNamespace(output_dir=str(tmp_path / name)), state, None)
        if name == "sft_grpo_train":
            assert "reward_std" in panels(live.figure)
    assert "learning_rate" in panels(live.figure) and "reward" not in panels(live.figure)
