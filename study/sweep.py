"""The validation sweep: each arm's continuation tuned with the same number of configurations
(`settings.SWEEP_GRID`), every one trained from the seed's own warm start and scored on the validation
seeds of the training file only, and again with every screenshot white (reported beside each score, never
chosen by); every run lands in `sweep.json`, with the configuration each arm takes.

The SFT configurations are run once per compute budget (`fair_modes`: matched on prompt visits, and on
the GRPO arm's training seconds), against the same GRPO runs: each comparison of the study then has its
SFT arm tuned with as many configurations as the GRPO arm, for the budget it gets."""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gui_r1_lite.errors import UsageError
from gui_r1_lite.runfolder import as_stored
from gui_r1_lite.runio import write_json_atomic
from harness.miniature.parallel import default_workers, pinned_threads, run_parallel
from harness.miniature.report import WARM
from harness.miniature.runner import SeedRun, check_same_settings, run_record
from harness.miniature.settings import DEFAULT_TRAIN, FAIR_MODES, SWEEP_GRID, MiniatureSettings
from harness.miniature.splits import prepared_data
from harness.miniature.stages import policy_of

from .results import RESULTS

SWEEP_FILE = "sweep.json"
#: The sweep's choices and every configuration's mean (`evidence`), written beside `sweep.json`; the
#: copy the package's settings were chosen by ships in `docs/results/` (`SHIPPED_EVIDENCE`).
EVIDENCE_FILE = "sweep_evidence.json"
SHIPPED_EVIDENCE = RESULTS / EVIDENCE_FILE
#: What the sweep ranks configurations by: mean validation click accuracy over the seeds.
SWEEP_METRIC = "click_accuracy"
#: Where the same metric with every validation screenshot white is recorded: each configuration's mean
#: (`means[...]["blind"][SWEEP_METRIC]`) and the warm start's (`warm_start_blind`). A configuration that scores
#: as much blind does not look at the page.
BLIND = "blind"


def configurations(grid: Mapping[str, Mapping[str, Sequence]] = SWEEP_GRID) -> dict[str, list[dict]]:
    """Every configuration of each arm (the product of its values, in the grid's order); UsageError
    unless both arms have the same number (the same tuning budget)."""
    configs = {arm: [dict(zip(knobs, values, strict=True)) for values in itertools.product(*knobs.values())]
               for arm, knobs in grid.items()}
    if set(configs) != {"sft", "sft_grpo"} or len(configs["sft"]) != len(configs["sft_grpo"]):
        raise UsageError(f"the sweep tunes sft and sft_grpo with as many configurations each, got "
                         f"{ {a: len(c) for a, c in configs.items()} }")
    return configs


def config_name(arm: str, config: Mapping[str, Any], fair: str = "visits") -> str:
    """The folder of one configuration's run, e.g. `sft_grpo-grpo_lr=0.0001-temperature=0.7`; an SFT
    run matched on seconds ends in `-fair=seconds`."""
    suffix = [f"fair={fair}"] if arm == "sft" and fair != "visits" else []
    return "-".join([arm, *(f"{k}={v}" for k, v in config.items()), *suffix])


def _basis(settings: MiniatureSettings, grpo_configs: list[dict]) -> dict:
    """The GRPO configuration whose seconds budget the SFT configurations get under `fair="seconds"`:
    the settings' own when the grid has it, else the grid's first."""
    own = {k: getattr(settings, k) for k in grpo_configs[0]}
    return own if own in grpo_configs else grpo_configs[0]


def _warm(run: SeedRun) -> dict:
    """The seed's warm start (trained in the first phase, read back after)."""
    s = run.settings
    return run.train(WARM, "sft", steps=s.warm_steps, lr=s.sft_lr, scheduler=s.warm_scheduler)


def warm_job(out: str, seed: int, settings: MiniatureSettings, data: dict) -> dict:
    """A seed's warm start, trained once for all its configurations, and its validation scores, seeing
    (`metrics`) and with every screenshot white (`blind_metrics`)."""
    run = SeedRun(Path(out), seed, settings, data)
    with pinned_threads(settings.threads) as runtime:
        run.runtime = runtime
        _warm(run)
        return {"metrics": run.evaluate(WARM)["metrics"], "blind_metrics": run.evaluate(WARM, blind=True)["metrics"]}


def config_job(out: str, seed: int, settings: MiniatureSettings, data: dict, arm: str, config: dict,
               basis: dict | None, fair: str = "visits") -> dict:
    """One configuration of `arm` for one seed: trained from the seed's warm start (read back from
    `out/seed<N>/warm_train`) and scored on the validation rows, seeing and blind. An `sft` run gets the budget `fair`
    says; under "seconds", that of `basis`, the GRPO configuration whose training time sets it (read
    back from its run, trained here only if it is missing)."""
    s = MiniatureSettings.from_overrides(settings, **config, **({"fair": fair} if arm == "sft" else {}))
    base = SeedRun(Path(out), seed, settings, data)
    run = SeedRun(Path(out) / config_name(arm, config, fair), seed, s, data)
    with pinned_threads(s.threads) as runtime:
        base.runtime = run.runtime = runtime
        warm = _warm(base)
        run.stages["warm_train"], start = warm, policy_of(s, warm)
        if arm == "sft_grpo":
            trained = run.train(arm, "grpo", steps=s.grpo_steps, lr=s.grpo_lr, scheduler=s.extra_scheduler,
                                start=start)
        else:
            if s.fair == "seconds":
                b = MiniatureSettings.from_overrides(settings, **basis)
                grpo_run = SeedRun(Path(out) / config_name("sft_grpo", basis), seed, b, data, runtime=runtime)
                run.stages["sft_grpo_train"] = grpo_run.train("sft_grpo", "grpo", steps=b.grpo_steps, lr=b.grpo_lr,
                                                              scheduler=b.extra_scheduler, start=start)
            budget = run.sft_budget()
            trained = run.train(arm, "sft", steps=budget["steps"], lr=s.sft_extra_lr, scheduler=s.extra_scheduler,
                                start=start, record={"budget": budget}, cpu_seconds=budget.get("cpu_seconds"))
        scored, blind = run.evaluate(arm), run.evaluate(arm, blind=True)
    return {"seed": seed, "arm": arm, "config": config, "fair": s.fair if arm == "sft" else None,
            "metrics": scored["metrics"], "blind_metrics": blind["metrics"], "n": scored["n"],
            "steps": trained["steps"],
            "train_seconds": trained["seconds"], "eval_seconds": scored["seconds"], "folder": str(run.folder)}


def choose(runs: Sequence[dict], configs: Mapping[str, list[dict]]) -> dict[str, dict]:
    """Each arm's configuration with the best mean validation click accuracy over the seeds (the
    first in grid order on a tie, the tie recorded), with every configuration's mean, seeing and, where
    its runs were scored blind, with every screenshot white (`BLIND`; the choice never reads it)."""
    chosen = {}
    for arm, arm_configs in configs.items():
        of = [[r for r in runs if r["arm"] == arm and r["config"] == c] for c in arm_configs]
        means = [statistics.fmean(r["metrics"][SWEEP_METRIC] for r in rs) for rs in of]
        blind = [{SWEEP_METRIC: statistics.fmean(r["blind_metrics"][SWEEP_METRIC] for r in rs)}
                 if all("blind_metrics" in r for r in rs) else None for rs in of]
        best = max(means)
        chosen[arm] = {"config": arm_configs[means.index(best)], SWEEP_METRIC: best,
                       "ties": [c for c, m in zip(arm_configs, means, strict=True) if m == best][1:],
                       "means": [{"config": c, SWEEP_METRIC: m, BLIND: b}
                                 for c, m, b in zip(arm_configs, means, blind, strict=True)]}
    return chosen


def _for_budget(runs: Sequence[dict], fair: str) -> list[dict]:
    """The runs of one comparison: every GRPO run and the SFT runs of budget `fair`."""
    return [r for r in runs if r["arm"] == "sft_grpo" or r.get("fair", "visits") == fair]


def run_sweep(out_dir: str | os.PathLike, seeds: Sequence[int] = (0,), *,
              train_data: str | os.PathLike = DEFAULT_TRAIN, settings: MiniatureSettings | None = None,
              grid: Mapping[str, Mapping[str, Sequence]] = SWEEP_GRID, workers: int | None = None,
              fair_modes: Sequence[str] = FAIR_MODES, **overrides: Any) -> dict:
    """Tune both arms on the validation split and write `out_dir/sweep.json`.

    Args:
        out_dir: the sweep's folder; finished runs in it are reused by a rerun with the same settings.
        seeds: a warm start per seed; every configuration is trained and scored for each.
        train_data: the MiniWoB++ training parquet: trained on `train_seeds`, scored on `validation_seeds`.
        settings: the base settings (default `MiniatureSettings()`), `overrides` replacing fields; each
            configuration replaces the fields it names.
        grid: `{arm: {setting: values}}`, the same number of configurations for each arm.
        workers: runs side by side, each in a process of its own (default: one per `threads` cores).
        fair_modes: the SFT budgets each SFT configuration is run under (`settings.FAIR_MODES`); the
            settings' own `fair` plays no part.

    Returns:
        `sweep.json`'s object: `grid`, `seeds`, `fair_modes`, `settings`, `data`, `warm_start` and
        `warm_start_blind` (each seed's validation metrics, seeing and blind), `runs` (every
        configuration for every seed and budget), `chosen`
        (per budget, per arm), `seconds_per_configuration` (per budget, per arm: mean of training +
        scoring), `seconds_basis`, `workers`, `wall_seconds`.
    """
    settings = MiniatureSettings.from_overrides(settings, **overrides).validate()
    fair_modes = tuple(fair_modes)
    if not fair_modes or not set(fair_modes) <= set(FAIR_MODES):
        raise UsageError(f"fair_modes must be among {FAIR_MODES}, got {fair_modes}")
    configs, seeds, out = configurations(grid), [int(s) for s in seeds], Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_same_settings(out, {**run_record(settings, train_data, train_data, True), "grid": as_stored(grid)})
    t0 = time.perf_counter()
    data = prepared_data(out, train_data, train_data, settings, validate=True)
    basis = _basis(settings, configs["sft_grpo"])
    jobs = [{s: (str(out), s, settings, data) for s in seeds},
            {(s, "sft_grpo", i): (str(out), s, settings, data, "sft_grpo", c, None)
             for s in seeds for i, c in enumerate(configs["sft_grpo"])},
            {(s, "sft", f, i): (str(out), s, settings, data, "sft", c, basis, f)
             for f in fair_modes for s in seeds for i, c in enumerate(configs["sft"])}]
    n = default_workers(settings.threads, len(jobs[1])) if workers is None else max(1, int(workers))
    warm = run_phase(warm_job, jobs[0], n, settings.threads)
    runs = [r for phase in jobs[1:] for r in run_phase(config_job, phase, n, settings.threads).values()]
    result = {"grid": {a: {k: list(v) for k, v in knobs.items()} for a, knobs in grid.items()}, "seeds": seeds,
              "fair_modes": list(fair_modes), "settings": settings.to_dict(), "data": data, "metric": SWEEP_METRIC,
              "seconds_basis": basis if "seconds" in fair_modes else None,
              "warm_start": {str(s): warm[s]["metrics"] for s in seeds},
              "warm_start_blind": {str(s): warm[s]["blind_metrics"] for s in seeds}, "runs": runs,
              "chosen": {f: choose(_for_budget(runs, f), configs) for f in fair_modes},
              "seconds_per_configuration": {f: {a: statistics.fmean(r["train_seconds"] + r["eval_seconds"]
                                                                    for r in _for_budget(runs, f) if r["arm"] == a)
                                                 for a in configs} for f in fair_modes},
              "workers": n, "wall_seconds": round(time.perf_counter() - t0, 2)}
    write_json_atomic(out / SWEEP_FILE, result)
    write_json_atomic(out / EVIDENCE_FILE, evidence(result))
    return result


def evidence(result: Mapping[str, Any]) -> dict:
    """What the settings' choices rest on, from a sweep's result: the seeds, validation rows a seed,
    the warm start's score (seeing, and blind: `warm_start_blind`), each budget's chosen configuration
    per arm with every configuration's means, seconds a configuration, workers and wall time."""
    def per_budget(key: str) -> dict:
        return {f: {arm: pick[key] for arm, pick in chosen.items()} for f, chosen in result["chosen"].items()}

    return {"seeds": list(result["seeds"]), "validation_rows_per_seed": result["data"]["n_heldout"],
            "metric": result["metric"], "grid": result["grid"],
            "warm_start": statistics.fmean(m[SWEEP_METRIC] for m in result["warm_start"].values()),
            "warm_start_blind": statistics.fmean(m[SWEEP_METRIC] for m in result["warm_start_blind"].values()),
            "chosen": per_budget("config"), "means": per_budget("means"), "ties": per_budget("ties"),
            "seconds_per_configuration": result["seconds_per_configuration"], "workers": result["workers"],
            "wall_seconds": result["wall_seconds"]}


def run_phase(fn, jobs: dict, workers: int, threads: int) -> dict:
    """`fn(*args)` for each job, side by side when `workers` > 1, else here, in order."""
    if workers == 1 or len(jobs) == 1:
        return {key: fn(*args) for key, args in jobs.items()}
    return run_parallel(fn, jobs, workers=min(workers, len(jobs)), threads=threads,
                        name=lambda key: f"sweep run {key}")


def sweep_table(result: dict) -> str:
    """Markdown tables of the sweep, one per SFT budget: every configuration's mean validation click
    accuracy, seeing and with every screenshot white, the chosen marked, and each arm's mean seconds a
    configuration."""
    titles = {"visits": "SFT matched on prompt visits", "seconds": "SFT matched on the GRPO arm's training seconds"}
    lines = []
    for fair, chosen in result["chosen"].items():
        seconds = result["seconds_per_configuration"][fair]
        lines += [f"{titles.get(fair, fair)}:", "",
                  f"| arm | configuration | validation {SWEEP_METRIC} % (mean of seeds {result['seeds']}) "
                  "| white screens % |",
                  "|---|---|---:|---:|"]
        for arm, pick in chosen.items():
            for row in pick["means"]:
                mark = " **chosen**" if row["config"] == pick["config"] else ""
                config = ", ".join(f"{k} {v}" for k, v in row["config"].items())
                blind = row.get(BLIND)
                white = "–" if blind is None else f"{100 * blind[SWEEP_METRIC]:.1f}"
                lines.append(f"| {arm} | {config} | {100 * row[SWEEP_METRIC]:.1f}{mark} | {white} |")
        lines += ["", "seconds a configuration (training + scoring, mean): "
                  + ", ".join(f"{arm} {s:.0f} s" for arm, s in seconds.items()), ""]
    warm = statistics.fmean(m[SWEEP_METRIC] for m in result["warm_start"].values())
    blind = [m[SWEEP_METRIC] for m in result.get("warm_start_blind", {}).values()]
    white = f" ({100 * statistics.fmean(blind):.1f} % with white screens)" if blind else ""
    lines += [f"warm start alone: {100 * warm:.1f} %{white}; n = {result['data']['n_heldout']} validation rows a seed"]
    return "\n".join(lines)
