"""Charts: a training run's curves (from its metrics log, or redrawn live while it trains), the rows
of each curation stage, and the miniature's arms and gain as bars with their seeds and intervals."""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..runfolder import read_record
from ..runio import read_jsonl
from .style import HIT_COLOR, MISS_COLOR, readable, readable_points, rgb

_FIRST_KEYS = ("reward", "rewards/gui_r1/mean", "rewards/accuracy/mean", "rewards/format/mean",
               "validation/click_accuracy", "validation/format_rate", "validation/reward",
               "frac_reward_zero_std", "completions/mean_length", "kl", "loss")
_X_KEYS = ("step", "global_step", "epoch")
#: The trainer's end-of-training record (its totals, logged once when a run ends) holds these; it is
#: no training step, so neither they nor its `step_seconds` (measured over no step) are ever drawn.
SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos", "train_loss")
#: What a live chart shows of a run, by its method: for GRPO the reward, its spread within a group,
#: the groups whose answers all scored alike (they teach nothing), the KL to the reference and the
#: answers' length; for SFT the loss and what drives it. Validation scores where the run has them.
LIVE_KEYS = {
    "grpo": ("reward", "reward_std", "frac_reward_zero_std", "kl", "completions/mean_length",
             "validation/click_accuracy"),
    "sft": ("loss", "learning_rate", "grad_norm", "mean_token_accuracy", "entropy", "validation/click_accuracy"),
}


def read_log(log: str | Path | Iterable[dict]) -> list[dict]:
    """A run's `metrics.jsonl` (path; bad or torn lines skipped) or a list of dicts -> list of dicts."""
    if isinstance(log, (str, Path)):
        if not Path(log).exists():
            raise FileNotFoundError(f"{log}: no such metrics log")
        return read_jsonl(log)
    return [dict(r) for r in log]


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def step_records(log: Sequence[dict]) -> list[dict]:
    """The records of a log that are training steps (or validations at a step): not the trainer's
    end-of-training record (`SUMMARY_KEYS`)."""
    return [r for r in log if not any(k in r for k in SUMMARY_KEYS)]


def _points(log: Sequence[dict], key: str) -> int:
    return sum(1 for r in log if _is_num(r.get(key)))


def series_keys(log: Sequence[dict], min_points: int = 2) -> list[str]:
    """`numeric_keys` of the log's steps (`step_records`) that have a value at `min_points` steps or more:
    the series a curve can show."""
    steps = step_records(log)
    return [k for k in numeric_keys(steps) if _points(steps, k) >= min_points]


def numeric_keys(log: Sequence[dict]) -> list[str]:
    """Numeric keys of a log but the step counters: the rewards (their means), validation, zero-std
    groups, completion length, KL and loss first, then the rest as they come."""
    seen = dict.fromkeys(k for rec in log for k, v in rec.items() if k not in _X_KEYS and _is_num(v))
    first = [k for k in _FIRST_KEYS if k in seen]
    means = [k for k in seen if k.startswith("rewards/") and k.endswith("/mean") and k not in first]
    at = sum(1 for k in first if k == "reward" or k.startswith("rewards/"))
    first[at:at] = means  # after the reward and its known parts
    return first + [k for k in seen if k not in first]


def training_curves(log, keys: Sequence[str] | None = None, cols: int = 3, limit: int = 12, smooth: int = 0,
                    notes: dict[str, str] | None = None):
    """One panel per key against the training step (or the line number): by default each series of at
    least two steps (`series_keys`); the end-of-training record is never drawn. `smooth` > 1 adds a
    running mean over that many points; `notes` (key -> text) are written in a key's panel instead."""
    log = step_records(read_log(log))
    keys = list(keys) if keys is not None else series_keys(log)[:limit]
    notes = dict(notes or {})
    n = max(1, len(keys))
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    xkey = next((k for k in _X_KEYS if any(k in r for r in log)), None)
    with readable(4 * cols):
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.9 * rows + 0.5), squeeze=False, layout="constrained")
        for ax in axes.flat[n:]:
            ax.axis("off")
        for ax, key in zip(axes.flat, keys, strict=False):
            _curve(ax, log, key, xkey, smooth, notes.get(key))
        if smooth > 1 and any(ax.lines for ax in axes.flat):
            fig.legend(handles=[Line2D([], [], lw=1, color="C0", alpha=0.6, label="each logged value"),
                                Line2D([], [], lw=2, color="C1", label=f"running mean of {smooth}")],
                       loc="outside lower center", ncols=2, frameon=False)
    return fig


def _curve(ax, log: Sequence[dict], key: str, xkey: str | None, smooth: int, note: str | None = None) -> None:
    pts = [(r.get(xkey, i) if xkey else i, r[key]) for i, r in enumerate(log) if _is_num(r.get(key))]
    if note is None and len(pts) == 1:  # one value: its number, not a dot on an axis made up around it
        note = f"one value so far: {pts[0][1]:.4g}" + (f" at step {pts[0][0]}" if xkey else "")
    if note is None and pts:
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, lw=1, color="C0", marker="." if len(xs) < 50 else None, alpha=0.6 if smooth > 1 else 1.0)
        if smooth > 1 and len(ys) >= smooth:
            run = [sum(ys[i - smooth + 1:i + 1]) / smooth for i in range(smooth - 1, len(ys))]
            ax.plot(xs[smooth - 1:], run, lw=2, color="C1")
    else:
        ax.text(0.5, 0.5, "\n".join(textwrap.wrap(note or "no values", 28)), ha="center", va="center",
                transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
    ax.set_title(key)
    ax.set_xlabel({"step": "training step", "global_step": "training step", "epoch": "epoch"}.get(xkey, "log line"))
    ax.grid(alpha=0.3)


def run_method(log: Sequence[dict], record: dict | None = None) -> str | None:
    """"grpo" or "sft": what the run's `run.json` (`record`) says, else what its log shows (GRPO logs a
    reward every step, SFT a loss and no reward); None for a log of neither."""
    method = (record or {}).get("method")
    if method in LIVE_KEYS:
        return method
    if any("reward" in r for r in log):
        return "grpo"
    return "sft" if any("loss" in r for r in step_records(log)) else None


def live_keys(log: Sequence[dict], method: str | None = None, beta: float | None = None,
              keys: Sequence[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The panels of a live chart of a `method` run (see `LIVE_KEYS`) and what the panels without a curve
    say: a GRPO run's KL is computed only with `beta` > 0, so with β = 0 its panel says so. Only keys the
    run logs at its steps are drawn, never the end-of-training totals; a run of no known method, or with
    `keys` given, gets those of them that have two steps or more."""
    steps = step_records(log)
    if keys is None and method in LIVE_KEYS:
        keys = [k for k in LIVE_KEYS[method] if _points(steps, k) or (method == "grpo" and k == "kl")]
    elif keys is None:
        return series_keys(steps)[:12], {}
    else:
        keys = [k for k in keys if _points(steps, k) >= 2]
    notes = {}
    if "kl" in keys and not _points(steps, "kl"):
        notes["kl"] = ("not computed: beta = 0, no reference model" if beta == 0
                       else "not logged yet (TRL computes it only when beta > 0)")
    return keys, notes


def stage_counts(stages: dict[str, Sequence], by: Sequence[str] = ("platform", "gt_action"),
                 rates: Sequence[float] | None = None) -> plt.Figure:
    """Rows per group (`by` fields of each sample) at each curation stage as grouped bars, and,
    when `rates` are given, the histogram of difficulty success rates beside them."""
    counts = {name: Counter("/".join(str(getattr(s, f) or "unknown") for f in by) for s in samples)
              for name, samples in stages.items()}
    groups = sorted(set().union(*counts.values())) or ["(none)"]
    panels = 2 if rates is not None else 1
    width_in = max(6.0, 0.9 * len(groups) + 2) + 4 * (panels - 1)
    with readable(width_in):
        fig, axes = plt.subplots(1, panels, figsize=(width_in, 4.2), squeeze=False, layout="constrained",
                                 gridspec_kw={"width_ratios": [3, 1][:panels]})
        _stage_bars(axes[0, 0], counts, groups, by)
        if rates is not None:
            ax = axes[0, 1]
            ax.hist(list(rates), bins=[i / 10 for i in range(11)], color="0.4", edgecolor="white")
            ax.set_xlabel("success rate of k samples")
            ax.set_ylabel("curated rows")
            ax.set_title("difficulty")
    return fig


def _stage_bars(ax, counts: dict, groups: list[str], by: Sequence[str]) -> None:
    width = 0.8 / max(1, len(counts))
    for i, (name, c) in enumerate(counts.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [c.get(g, 0) for g in groups], width, label=f"{name} ({sum(c.values())})")
    ax.set_xticks([g + width * (len(counts) - 1) / 2 for g in range(len(groups))], groups, rotation=30, ha="right")
    ax.set_ylabel("rows")
    sizes = [v for c in counts.values() for v in c.values() if v]
    if sizes and max(sizes) > 20 * min(sizes):
        ax.set_yscale("log")  # a big group must not flatten the small ones
        ax.set_ylabel("rows (log scale)")
    ax.set_title("rows per " + " / ".join(by) + " at each stage")
    ax.legend(title="stage (rows)")


def miniature_bars(result: dict, arms: Sequence[str] = ("random", "sft", "sft_grpo"),
                   metrics: Sequence[str] = ("format_rate", "click_accuracy", "strict_step_success")):
    """`miniature.run_miniature`'s result (or `arm_results` plus `seeds`) as bars: each arm's mean with
    its seeds as dots and its 95 % interval where `stats` has one, its blind score (white screenshots)
    hatched beside its click accuracy, and beside them the gain of SFT → GRPO over SFT."""
    stats = result.get("stats") or {}
    gain = stats.get("gain")
    width_in = 2.4 + 1.9 * len(metrics) + (3.4 if gain else 0.0)
    with readable(width_in):
        fig, axes = plt.subplots(1, 2 if gain else 1, figsize=(width_in, 4.2), layout="constrained", squeeze=False,
                                 width_ratios=[len(metrics), 1.8] if gain else None)
        _arm_bars(axes[0, 0], result, arms, metrics, stats.get("arms") or {})
        if gain:
            _gain_bars(axes[0, 1], gain, stats)
    return fig


#: The metric an arm's blind score is drawn beside, and the share of its slot the blind bar takes.
BLIND_METRIC, _BLIND_SHARE = "click_accuracy", 0.42


def blind_score(result: dict, arm: str) -> dict | None:
    """An arm's blind click accuracy (`{"mean", "per_seed", ...}`), or None where the run has none."""
    return (((result.get(arm) or {}).get("blind") or {}).get(BLIND_METRIC) or None)


def _arm_bars(ax, result: dict, arms: Sequence[str], metrics: Sequence[str], intervals: dict) -> None:
    width = 0.8 / len(arms)
    any_blind = False
    for j, arm in enumerate(arms):
        xs = [i + (j - (len(arms) - 1) / 2) * width for i in range(len(metrics))]
        for i, (x, m) in enumerate(zip(xs, metrics, strict=True)):
            blind = blind_score(result, arm) if m == BLIND_METRIC else None
            # with a blind score, the arm's bar takes the left of its slot and the blind bar the right
            bar_w = width * (1 - _BLIND_SHARE) if blind else width
            bar_x = x - width * _BLIND_SHARE / 2 if blind else x
            ax.bar([bar_x], [100 * result[arm][m]["mean"]], bar_w, color=f"C{j}", label=None if i else arm)
            seeds = result[arm][m]["per_seed"]
            ax.scatter([bar_x] * len(seeds), [100 * v for v in seeds], s=10, color="black", zorder=3)
            _whisker(ax, bar_x, ((intervals.get(arm) or {}).get(m) or {}).get("ci95"))
            if blind:
                any_blind = True
                blind_x = x + width * (1 - _BLIND_SHARE) / 2
                ax.bar([blind_x], [100 * blind["mean"]], width * _BLIND_SHARE, facecolor="white", edgecolor=f"C{j}",
                       hatch="///", linewidth=1.0)
                blind_seeds = [100 * v for v in blind.get("per_seed") or []]
                ax.scatter([blind_x] * len(blind_seeds), blind_seeds, s=10, color="black", zorder=3)
    ax.scatter([], [], s=10, color="black", label="one seed")
    handles = sorted(ax.get_legend_handles_labels()[0], key=lambda h: h.get_label() not in arms)  # arms first
    if any_blind:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", label="blind (white screens)"))
    ax.set_xticks(range(len(metrics)), [m.replace("_", " ") for m in metrics])
    ax.set_ylabel("% of held-out rows")
    ax.set_ylim(0, 118)  # room above the 100 % bars for the legend, which would hide them
    ax.set_yticks(range(0, 101, 20))
    ax.legend(handles=handles, loc="upper center", ncol=len(handles), columnspacing=1.0, handletextpad=0.4)
    seeds = len(result.get("seeds") or [])
    ax.set_title(f"held-out rows, mean over {seeds} seeds" + ("; whisker: 95 % interval" if intervals else ""))


def _whisker(ax, x: float, ci: Sequence[float] | None) -> None:
    if ci:
        lo, hi = 100 * ci[0], 100 * ci[1]
        ax.errorbar([x], [(lo + hi) / 2], yerr=[(hi - lo) / 2], fmt="none", color="black", capsize=4, linewidth=1.2,
                    zorder=4)


def _gain_bars(ax, gain: dict, stats: dict) -> None:
    """Click accuracy on all rows and on parsed rows and, when both arms played in the live page,
    closed-loop success, each with its seeds and interval."""
    labels = {"click_accuracy": "click,\nall rows", "click_accuracy_parsed": "click,\nparsed rows"}
    shown = [(labels[k], gain[k]) for k in labels if (gain.get(k) or {}).get("mean") is not None]
    if (stats.get("online_gain") or {}).get("mean") is not None:
        shown.append(("closed\nloop", stats["online_gain"]))
    for i, (_, g) in enumerate(shown):
        mean = 100 * g["mean"]
        ax.bar([i], [mean], 0.6, color=rgb(HIT_COLOR if mean >= 0 else MISS_COLOR))
        seeds = [100 * v for v in g["per_seed"] if v is not None]
        ax.scatter([i] * len(seeds), seeds, s=10, color="black", zorder=3)
        _whisker(ax, i, g.get("ci95"))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(shown)), [label for label, _ in shown])
    ax.set_xlim(-0.7, len(shown) - 0.3)
    ax.set_ylabel("gain, points")
    ax.set_title(f"{stats.get('arm', 'sft_grpo')} − {stats.get('vs', 'sft')}")


def save_figure_atomic(fig, path: str | Path, dpi: int = 80) -> Path:
    """Save `fig` through a temporary file and a rename: a reader (or a kill mid-write) never meets a
    half-written image."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        fig.savefig(tmp, dpi=dpi, format=p.suffix.lstrip(".") or "png")
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p


class LiveCurves:
    """Training curves redrawn in place while a run trains (`training.train(cfg, callbacks=[live.callback()])`):
    on a log, at most every `every` seconds, and at the end. Each run (metrics log) gets a figure of its
    own, showing what its method is watched by (`live_keys`: GRPO's reward, spread, zero-spread groups,
    KL and length; SFT's loss and rate), or `keys`. The latest figure is `self.figure`."""

    def __init__(self, keys: Sequence[str] | None = None, every: float = 5.0, smooth: int = 0,
                 save_to: str | None = None):
        self.keys, self.every, self.smooth, self.save_to = keys, every, smooth, save_to
        self.figure = None
        self.draws = 0
        self._last = float("-inf")
        self._handle = None
        self._path: Path | None = None

    def draw(self, metrics_path: str | Path) -> None:
        """Redraw the curves from `metrics_path` (nothing while the file does not exist yet); a log other
        than the last one drawn starts a new figure below the last, which keeps the other run's curves."""
        path = Path(metrics_path)
        if not path.exists():
            return
        log = read_log(path)
        record = read_record(path.parent) or {}  # run.json: the run's method and settings
        method = run_method(log, record)
        keys, notes = live_keys(log, method, (record.get("settings") or {}).get("beta"), self.keys)
        fig = training_curves(log, keys=keys, smooth=self.smooth, notes=notes)
        steps = [r["step"] for r in step_records(log) if _is_num(r.get("step"))]
        fig.suptitle(f"{path.parent.name}{f' ({method.upper()})' if method else ''}: step {max(steps, default=0)}",
                     fontsize=readable_points(fig.get_figwidth()))
        if self.save_to:
            save_figure_atomic(fig, self.save_to)
        if self._path is not None and path != self._path:
            self._handle = None
        self._path = path
        with contextlib.suppress(ImportError):  # no IPython: no notebook to show it in
            from IPython import get_ipython
            from IPython.display import display

            if get_ipython() is not None:
                if self._handle is None:
                    self._handle = display(fig, display_id=True)
                else:
                    self._handle.update(fig)
        # shown through its display (or not at all): closed, so that the notebook's inline backend does not
        # show it once more when the cell ends; a closed figure still draws and saves
        plt.close(fig)
        self.figure = fig
        self.draws += 1
        self._last = time.monotonic()

    def callback(self):
        """A `transformers.TrainerCallback` that calls `draw` (main process only)."""
        from transformers import TrainerCallback

        live = self

        class _Live(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):
                if state.is_world_process_zero and time.monotonic() - live._last >= live.every:
                    live.draw(Path(args.output_dir) / "metrics.jsonl")

            def on_train_end(self, args, state, control, **kw):
                if state.is_world_process_zero:
                    live.draw(Path(args.output_dir) / "metrics.jsonl")
                    live._handle = None  # the next run gets its own figure, even in the same folder

        return _Live()
