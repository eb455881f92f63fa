"""The recipe probe: where the CPU miniature's GRPO departs from the GPU recipe and from GUI-R1 (`beta`,
`loss_type`, answers a group, prompts an update), each departure measured rather than assumed. From each
seed's warm start, the GRPO arm is trained with the miniature's settings and then with one recipe value
swapped in at a time, every run on the same prompt visits (`extra_prompts`), scored on the validation
seeds only; `recipe_probe.json` holds every run's validation click accuracy and training CPU seconds, and
the copy the departures table cites ships as `docs/results/recipe_probe.json`.

The rule, fixed before the probe ran: the miniature keeps its own value unless the recipe's scores higher
by more than `NOISE_ROWS` (two) validation rows with a box a seed (`noise`: 2/55 on the layout tasks, 2/37
on the seeing tasks); a smaller difference is noise at this size, and the miniature's learning rate and
temperature were tuned with its own values. Values adopted
one by one are then run together (`together`), and taken unless together they score below the miniature's.

    python -m study.recipe runs/recipe --seeds 0,1 --results docs/results
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from gui_r1_lite.errors import run_cli
from gui_r1_lite.evaluate import require_positive
from gui_r1_lite.runio import read_json, write_json_atomic
from harness.miniature.__main__ import parse_seeds
from harness.miniature.parallel import default_workers
from harness.miniature.runner import check_same_settings, run_record
from harness.miniature.settings import DEFAULT_TRAIN, MiniatureSettings
from harness.miniature.splits import prepared_data
from harness.miniature.stages import STAGE_FILE

from .results import ship_results
from .sweep import config_job, run_phase, warm_job

PROBE_FILE = "recipe_probe.json"
#: The validation rows with a box a seed that a recipe value must score above the miniature's to replace it.
NOISE_ROWS = 2


def noise(data: dict) -> float:
    """The difference in mean validation click accuracy a recipe value must exceed: `NOISE_ROWS` of the
    rows with a box each seed is scored on (`data["n_heldout_click"]`, the split's own count)."""
    return NOISE_ROWS / data["n_heldout_click"]
#: One recipe value at a time (GPU recipe and GUI-R1 agree on each), named by the setting it swaps in,
#: against the miniature's own (`{}`).
#: Every run has the same prompt visits; a group of 5 samples fewer answers, 4 prompts an update takes
#: half the updates.
VARIANTS: dict[str, dict] = {
    "miniature": {},
    "loss_type": {"loss_type": "dapo"},
    "beta": {"beta": 0.01},
    "num_generations": {"num_generations": 5},
    "grpo_prompts_per_step": {"grpo_prompts_per_step": 4},
}


def run_probe(out_dir: str, seeds: Sequence[int] = (0, 1), *, workers: int | None = None,
              train_data: str = str(DEFAULT_TRAIN), **overrides) -> dict:
    """Train and score every variant for every seed (cached runs reused) and write `out_dir/recipe_probe.json`:
    per variant, the per-seed validation click accuracy and GRPO training CPU seconds, their means, and the
    difference from the miniature's own settings. `overrides` replace settings of every run (tests)."""
    settings, out = MiniatureSettings.from_overrides(None, **overrides).validate(), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_same_settings(out, run_record(settings, train_data, train_data, True))  # its cached runs are these settings'
    t0 = time.perf_counter()
    data = prepared_data(out, train_data, train_data, settings, validate=True)
    seeds = [int(s) for s in seeds]
    jobs = {(s, name): (str(out), s, settings, data, "sft_grpo", config, None)
            for name, config in VARIANTS.items() for s in seeds}
    n = default_workers(settings.threads, len(jobs)) if workers is None else max(1, int(workers))
    run_phase(warm_job, {s: (str(out), s, settings, data) for s in seeds}, n, settings.threads)
    runs = run_phase(config_job, jobs, n, settings.threads)
    variants = {name: _scored(runs, name, config, seeds) for name, config in VARIANTS.items()}
    base, threshold = variants["miniature"], noise(data)
    for v in variants.values():
        _compare(v, base)
        v["adopt"] = v["vs_miniature"]["click_accuracy"] > threshold
    adopted = {k: value for v in variants.values() if v["adopt"] for k, value in v["config"].items()}
    together = None
    if len(adopted) > 1:  # the values adopted one by one, run together before the miniature takes them
        runs = run_phase(config_job, {(s, "together"): (str(out), s, settings, data, "sft_grpo", adopted, None)
                                   for s in seeds}, n, settings.threads)
        together = _compare(_scored(runs, "together", adopted, seeds), base)
        together["adopt"] = together["vs_miniature"]["click_accuracy"] >= 0
    result = {"rule": f"a recipe value replaces the miniature's when its mean validation click accuracy is "
                      f"higher by more than {NOISE_ROWS} rows a seed ({threshold:.4f}); several such values are "
                      "taken together unless, run "
                      "together, they score below the miniature's settings",
              "seeds": seeds, "validation_rows_per_seed": data["n_heldout"], "noise": threshold,
              "settings": settings.to_dict(),
              "variants": variants, "together": together, "workers": n,
              "wall_seconds": round(time.perf_counter() - t0, 2)}
    write_json_atomic(out / PROBE_FILE, result)
    return result


def _scored(runs: dict, name: str, config: dict, seeds: list[int]) -> dict:
    """One variant's validation click accuracy and training CPU seconds, per seed and their means."""
    acc = [runs[(s, name)]["metrics"]["click_accuracy"] for s in seeds]
    # CPU seconds of the training process: the wall clock depends on what else ran on the machine
    sec = [read_json(Path(runs[(s, name)]["folder"]) / "sft_grpo_train" / STAGE_FILE)["train_cpu_seconds"]
           for s in seeds]
    return {"config": config, "click_accuracy": acc, "train_cpu_seconds": sec,
            "mean_click_accuracy": statistics.fmean(acc), "mean_train_cpu_seconds": statistics.fmean(sec)}


def _compare(variant: dict, base: dict) -> dict:
    variant["vs_miniature"] = {
        "click_accuracy": variant["mean_click_accuracy"] - base["mean_click_accuracy"],
        "train_cpu_seconds_ratio": variant["mean_train_cpu_seconds"] / base["mean_train_cpu_seconds"]}
    return variant


def probe_table(result: dict) -> str:
    """The probe as a Markdown table: each variant's mean validation click accuracy, its difference from
    the miniature's settings, its training CPU seconds relative to them, and whether the rule adopted it."""
    lines = ["| GRPO variant | validation click accuracy | vs miniature | training CPU seconds vs miniature "
             "| adopted |",
             "|---|---:|---:|---:|---|"]
    for v in [*result["variants"].values(), *([result["together"]] if result.get("together") else [])]:
        swapped = ", ".join(f"{key} {value}" for key, value in v["config"].items()) or "the miniature's settings"
        lines.append(f"| {swapped} | {100 * v['mean_click_accuracy']:.1f} % | "
                     f"{100 * v['vs_miniature']['click_accuracy']:+.1f} | "
                     f"x{v['vs_miniature']['train_cpu_seconds_ratio']:.2f} | {'yes' if v['adopt'] else 'no'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.recipe", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the probe's run folder (finished runs in it are reused)")
    ap.add_argument("--seeds", help="warm starts to probe from (default 0,1)")
    ap.add_argument("--workers", type=int, help="runs side by side (default: one a core)")
    ap.add_argument("--results", metavar="DIR", help=f"then copy {PROBE_FILE} into DIR (docs/results: the "
                    "copy the departures table cites)")
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds, (0, 1))
    require_positive({"--workers": args.workers})
    result = run_probe(args.out, seeds, workers=args.workers)
    print(probe_table(result))
    if args.results:
        for copy in ship_results(args.out, [PROBE_FILE], args.results):
            print(f"wrote {copy}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m study.recipe"))
