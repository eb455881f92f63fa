"""What a miniature run reports: each arm's metrics over seeds (mean, sample std, per seed), the
arms alone as `summary.json` holds them, and the Markdown table."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

ARMS: tuple[str, ...] = ("random", "sft", "sft_grpo")
#: The SFT warm start both trained arms begin from, scored as a reference beside the arms.
WARM = "warm"
METRICS: tuple[str, ...] = ("format_rate", "click_accuracy", "strict_step_success")
METRIC_NAMES = {"format_rate": "format rate %", "click_accuracy": "click accuracy %",
                "strict_step_success": "strict step success %"}


def aggregate(values: Sequence[float]) -> dict[str, Any]:
    """Mean, sample standard deviation (ddof 1; 0 for one value) and the values themselves."""
    vals = [float(v) for v in values]
    return {"mean": statistics.fmean(vals) if vals else None,
            "std": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "per_seed": vals}


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None (None when there are none)."""
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def combine_seeds(per_seed: dict[int, dict]) -> dict[str, Any]:
    """The seeds' results (`runner.run_seed` outputs, by seed) as one: every arm's and the warm
    start's metrics over seeds, per-task click accuracy, and each seed's compute, folders and seconds."""
    seeds = list(per_seed)
    result: dict[str, Any] = {arm: {m: aggregate([per_seed[s]["metrics"][arm][m] for s in seeds]) for m in METRICS}
                              for arm in ARMS}
    tasks = sorted({t for s in seeds for t in per_seed[s]["per_task"]["sft"]})
    per_task = {arm: {t: mean_or_none([per_seed[s]["per_task"][arm].get(t) for s in seeds]) for t in tasks}
                for arm in ARMS + (WARM,)}
    result.update({
        "seeds": seeds,
        "warm_start": {m: aggregate([per_seed[s]["metrics"][WARM][m] for s in seeds]) for m in METRICS},
        "per_task_click_accuracy": per_task,
        "n_heldout": per_seed[seeds[0]]["n_eval"],
    })
    for key in ("compute", "runs", "models", "predictions", "seconds"):
        result[key] = {str(s): per_seed[s][key] for s in seeds}
    result["seconds_total"] = round(sum(sum(per_seed[s]["seconds"].values()) for s in seeds), 2)
    result["skipped_stages"] = {str(s): per_seed[s]["skipped"] for s in seeds}
    return result


def arm_results(result: dict) -> dict:
    """The arms' metrics alone (`{"random"|"sft"|"sft_grpo": {metric: {"mean", "std", "per_seed"}}}`),
    as `summary.json` reports them under "miniature"."""
    return {arm: result[arm] for arm in ARMS}


def miniature_table(result: dict) -> str:
    """A Markdown table of `run_miniature`'s result: arm x metric, mean ± std in percent."""
    lines = [f"| arm | {' | '.join(METRIC_NAMES[m] for m in METRICS)} |", "|---|" + "---:|" * len(METRICS)]
    for arm in ARMS:
        cells = [f"{100 * result[arm][m]['mean']:.1f} ± {100 * result[arm][m]['std']:.1f}" for m in METRICS]
        lines.append(f"| {arm} | {' | '.join(cells)} |")
    seeds = result.get("seeds")
    if seeds is not None:
        lines += ["", f"mean ± std over seeds {', '.join(map(str, seeds))}; "
                      f"n = {result.get('n_heldout')} evaluation rows"]
    return "\n".join(lines)
