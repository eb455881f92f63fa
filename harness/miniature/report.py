"""What a miniature run reports: each arm's metrics over seeds, the statistics of the comparison read
from the prediction files (`stats`), and the Markdown tables."""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gui_r1_lite.errors import UsageError
from gui_r1_lite.runio import read_jsonl

from ..online import EPISODES_FILE
from . import stats
from .splits import select_rows, task_of

ARMS: tuple[str, ...] = ("random", "sft", "sft_grpo")
#: The SFT warm start both trained arms begin from, scored as a reference beside the arms.
WARM = "warm"
METRICS: tuple[str, ...] = ("format_rate", "click_accuracy", "strict_step_success")
#: Where a run's result keeps the warm start's metrics, and its row's name in the tables.
WARM_RESULT, WARM_LABEL = "warm_start", "warm start (reference)"
#: The comparison the study is about: the gain of `GAIN_ARM` over `GAIN_VS` (the SFT continuation).
GAIN_ARM, GAIN_VS = "sft_grpo", "sft"
#: Click accuracy on every row with a click target, and on those of them whose answer parsed.
CLICK_KEYS = ("click_accuracy", "click_accuracy_parsed")
#: The blind check: each scored arm is scored again with every screenshot white (`<arm>_blind_eval`
#: stages, `<arm>_blind` in a result's "predictions"); its `looks` is its click accuracy minus that.
BLIND_SUFFIX = "_blind"


def arm_names(settings: Mapping | None) -> dict[str, str]:
    """Each arm's name in the tables for a run of `settings` (a `MiniatureSettings.to_dict()`): the arms
    start from an SFT warm start, or, with `warm_steps` 0, from the base model itself."""
    if (settings or {}).get("warm_steps") == 0:
        return {"random": "random", WARM: "base (both arms' start)", "sft": "SFT from the base (sft)",
                "sft_grpo": "GRPO from the base (sft_grpo)"}
    return {"random": "random", WARM: WARM_LABEL, "sft": "sft", "sft_grpo": "sft_grpo"}


def blind_arm(arm: str) -> str:
    """The name an arm's blind scoring goes by (`sft` -> `sft_blind`)."""
    return f"{arm}{BLIND_SUFFIX}"


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
    """The seeds' results (`runner.run_seed` outputs, by seed) as one, with the comparison's statistics."""
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
    for arm, figures in [(a, result[a]) for a in ARMS] + [(WARM, result["warm_start"])]:
        blind = [(per_seed[s].get("blind_metrics") or {}).get(arm) for s in seeds]
        if all(blind):
            figures["blind"] = {"click_accuracy": aggregate([b["click_accuracy"] for b in blind])}
    for key in ("compute", "runs", "models", "predictions", "seconds"):
        result[key] = {str(s): per_seed[s][key] for s in seeds}
    if any(per_seed[s].get("online") for s in seeds):
        result["online"] = {str(s): per_seed[s].get("online") or {} for s in seeds}
        result["online_runs"] = {str(s): per_seed[s].get("online_runs") or {} for s in seeds}
    result["seconds_total"] = round(sum(sum(per_seed[s]["seconds"].values()) for s in seeds), 2)
    result["skipped_stages"] = {str(s): per_seed[s]["skipped"] for s in seeds}
    result["stats"] = study_statistics(result["predictions"], result.get("online"),
                                       online_runs=result.get("online_runs"))
    result.update(blind_summary(result["stats"]))
    return result


def lean(value: Mapping) -> dict:
    """An interval's mean, bounds and per-seed values (what summaries keep of it)."""
    return {k: value[k] for k in ("mean", "ci95", "per_seed")}


def blind_summary(st: Mapping) -> dict:
    """What a result keeps of the blind check: `looks` (each arm's click accuracy minus its blind score,
    paired on rows) and `distinct_answers`. Empty without blind stages."""
    out: dict[str, Any] = {}
    if st.get("looks"):
        out["looks"] = {a: lean(v) for a, v in st["looks"].items()}
    if st.get("distinct"):
        out["distinct_answers"] = st["distinct"]
    return out


def read_predictions(eval_folder: str | os.PathLike) -> list[dict]:
    """The prediction records of an evaluation folder."""
    from gui_r1_lite.evaluate import PREDICTIONS, read_records

    return read_records(Path(eval_folder) / PREDICTIONS)


def read_click_rows(eval_folder: str | os.PathLike) -> list[stats.ClickRow]:
    """The click rows (`stats.click_rows`) of an evaluation folder."""
    return stats.click_rows(read_predictions(eval_folder))


def study_statistics(predictions: Mapping[Any, Mapping[str, str]], online: Mapping[Any, Mapping] | None = None,
                     vs: str = GAIN_VS, arm: str = GAIN_ARM, n_boot: int = stats.N_BOOT,
                     seed: int = stats.BOOT_SEED, online_runs: Mapping[Any, Mapping[str, str]] | None = None,
                     ) -> dict[str, Any]:
    """The statistics of a miniature run, from its files (`predictions`: `{seed: {arm: evaluation folder}}`,
    `online`: `{seed: {arm: online.json object}}`, `online_runs`: `{seed: {arm: online folder}}`): `gain`
    (`arm` over `vs`, paired) and `mcnemar`, each scored arm's accuracy and `per_task`, with blind
    scorings `looks` and `distinct`, with online stages each arm's success and `online_gain`."""
    seeds = sorted(int(s) for s in predictions)
    folders = {int(s): f for s, f in predictions.items()}
    seeing = (*ARMS, WARM)
    scored = [a for a in (*seeing, *map(blind_arm, seeing)) if all(a in folders[s] for s in seeds)]
    records = {a: {s: read_predictions(folders[s][a]) for s in seeds} for a in scored}
    rows = {a: {s: stats.click_rows(records[a][s]) for s in seeds} for a in scored}
    out: dict[str, Any] = {"vs": vs, "arm": arm, "seeds": seeds, "n_boot": n_boot}
    if vs in rows and arm in rows:
        out["gain"] = {key: stats.bootstrap_gain(rows[vs], rows[arm], key.endswith("_parsed"), n_boot, seed)
                       for key in CLICK_KEYS}
        out["mcnemar"] = {str(s): stats.mcnemar(rows[vs][s], rows[arm][s]) for s in seeds}
    out["arms"] = {a: _arm_statistics(rows[a], n_boot, seed) for a in scored}
    out["per_task"] = {a: stats.per_task(rows[a]) for a in scored}
    looked = [a for a in seeing if a in rows and blind_arm(a) in rows]
    if looked:
        out["looks"] = {a: stats.bootstrap_gain(rows[blind_arm(a)], rows[a], False, n_boot, seed) for a in looked}
        out["distinct"] = {a: stats.distinct_answers(records[a]) for a in scored}
    if online:
        out["online"] = online_statistics(online, n_boot, seed)
        if online_runs and all(a in (online_runs.get(s) or {}) and a in (online.get(s) or {})
                               for s in online for a in (vs, arm)):
            played = {a: {int(s): _episode_rows(online[s][a], online_runs[s][a]) for s in online} for a in (vs, arm)}
            out["online_gain"] = stats.bootstrap_gain(played[vs], played[arm], False, n_boot, seed)
    return out


def _episode_rows(result: Mapping, folder: str | os.PathLike) -> list[stats.ClickRow]:
    """The episodes an online result counted, read from `folder`'s episodes file."""
    path = Path(folder) / EPISODES_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: the episodes of this online result are not there")
    try:
        return stats.episode_rows(read_jsonl(path), result["tasks"], result["seeds"])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def _arm_statistics(rows: Mapping[int, Sequence[stats.ClickRow]], n_boot: int, seed: int) -> dict[str, Any]:
    """One arm's click accuracy on all and on parsed rows, its click rows per seed and the share that parsed."""
    out: dict[str, Any] = {key: stats.bootstrap_accuracy(rows, key.endswith("_parsed"), n_boot, seed)
                           for key in CLICK_KEYS}
    n = sum(len(r) for r in rows.values())
    out["click_rows"] = [len(r) for r in rows.values()]
    out["parsed_share"] = sum(row.parsed for r in rows.values() for row in r) / n if n else None
    return out


def online_statistics(online: Mapping[Any, Mapping[str, Mapping]], n_boot: int = stats.N_BOOT,
                      seed: int = stats.BOOT_SEED) -> dict[str, dict]:
    """`{arm: {"success": stats.bootstrap_success(...)}}` for every arm that played on every seed."""
    seeds = sorted(online, key=int)
    arms = [a for a in (*ARMS, WARM) if all(a in (online[s] or {}) for s in seeds)]
    return {a: {"success": stats.bootstrap_success({int(s): stats.online_counts(online[s][a]) for s in seeds},
                                                   n_boot, seed)} for a in arms}


def arm_results(result: dict) -> dict:
    """The arms' metrics (with the arms' start, `warm_start`: the base itself when nothing was trained before
    the arms) and `looks`, as `summary.json` reports them under "miniature"."""
    out = {arm: result[arm] for arm in ARMS}
    if result.get(WARM_RESULT):
        out[WARM_RESULT] = result[WARM_RESULT]
    if result.get("looks"):
        out["looks"] = result["looks"]
    return out


def pct(v: float | None, signed: bool = False) -> str:
    return "–" if v is None else f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"


def with_interval(value: Mapping | None, signed: bool = False) -> str:
    """`mean [lo, hi]` in percent (points when `signed`), or `–`."""
    if not value or value.get("mean") is None:
        return "–"
    ci = value.get("ci95")
    return pct(value["mean"], signed) + (f" [{pct(ci[0], signed)}, {pct(ci[1], signed)}]" if ci else "")


def miniature_table(result: dict) -> str:
    """A Markdown table of `run_miniature`'s result, one row per arm (with the blind check and online
    success when the run has them), then the gain of SFT → GRPO over SFT with its interval, each
    seed's paired difference and McNemar test, and what the figures are over."""
    st = result.get("stats") or {}
    arms, online, looks = st.get("arms") or {}, st.get("online") or {}, st.get("looks") or {}
    heads = ["arm", "format rate %", "click accuracy % [95 % CI]", "click accuracy on parsed rows % [95 % CI]",
             "strict step success %"] + (["click accuracy, white screens % [95 % CI]",
                                          "looks: seeing − white, points [95 % CI]"] if looks else []) \
        + (["online success % [95 % CI]"] if online else [])
    lines = [f"| {' | '.join(heads)} |", "|---|" + "---:|" * (len(heads) - 1)]
    names = arm_names(result.get("settings"))
    rows = [(arm, names[arm], result[arm]) for arm in ARMS[:1]]
    rows += [(WARM, names[WARM], result[WARM_RESULT])] if result.get(WARM_RESULT) else []
    rows += [(arm, names[arm], result[arm]) for arm in ARMS[1:]]
    for arm, label, figures in rows:
        click = arms.get(arm) or {}
        cells = [pct(figures["format_rate"]["mean"]),
                 with_interval(click.get("click_accuracy") or figures["click_accuracy"]),
                 with_interval(click.get("click_accuracy_parsed")),
                 pct(figures["strict_step_success"]["mean"])]
        if looks:
            cells += [with_interval((arms.get(blind_arm(arm)) or {}).get("click_accuracy")),
                      with_interval(looks.get(arm), True)]
        cells += [with_interval((online.get(arm) or {}).get("success"))] if online else []
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines + [""] + _gain_lines(st) + [_table_note(result, st)])


def _gain_lines(st: Mapping) -> list[str]:
    """The gain's sentences, with the closed-loop gain when both arms played online (none without a gain)."""
    gain, online = st.get("gain"), st.get("online_gain")
    if not gain:
        return []
    vs, arm, seeds = st["vs"], st["arm"], gain["click_accuracy"]["seeds"]
    tests = ", ".join(f"seed {s} p = {t['p_value']:.3g} ({t['only_a']} rows hit by {vs} only, {t['only_b']} by "
                      f"{arm} only)" for s, t in ((s, st["mcnemar"][str(s)]) for s in seeds))
    lines = [f"gain of {arm} over {vs}, click accuracy: {with_interval(gain['click_accuracy'], True)} points "
             f"(paired, per seed: {_per_seed(seeds, gain['click_accuracy']['per_seed'])}); on each arm's parsed "
             f"rows: {with_interval(gain['click_accuracy_parsed'], True)} points",
             f"McNemar exact test on each seed's held-out click rows: {tests}"]
    if online and online.get("mean") is not None:
        lines.append(f"gain of {arm} over {vs}, closed-loop success: {with_interval(online, True)} points (paired "
                     f"on the same task pages, per seed: {_per_seed(online['seeds'], online['per_seed'])}; "
                     "interval drawing seeds, then episodes)")
    return lines


def _per_seed(seeds: Sequence[int], values: Sequence[float | None]) -> str:
    return ", ".join(f"seed {s} {pct(v, True)}" for s, v in zip(seeds, values, strict=True))


def _table_note(result: Mapping, st: Mapping) -> str:
    """What the table's figures are means and intervals over."""
    seeds = result.get("seeds") or st.get("seeds") or []
    note = (f"means over seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}; "
            f"n = {result.get('n_heldout')} evaluation rows")
    if st.get("arms"):
        rows = next(iter(st["arms"].values()))["click_rows"]
        note += (f", {rows[0] if len(set(rows)) == 1 else rows} with a click target; [lo, hi]: 95 % bootstrap "
                 f"interval drawing seeds, then held-out episodes, with replacement ({st['n_boot']:,} draws)")
    return note


def per_task_table(result: dict) -> str:
    """A Markdown table of click accuracy per task (mean over seeds, %) for every scored arm."""
    per_task = (result.get("stats") or {}).get("per_task")
    if not per_task:
        return "(no per-task statistics: the run's predictions were not read)"
    arms = [a for a in per_task if not a.endswith(BLIND_SUFFIX)]  # the blind scorings: `blind_task_table`
    tasks = sorted({t for a in arms for t in per_task[a]})
    lines = [f"| task | click rows | episodes | {' | '.join(f'{a} %' for a in arms)} |",
             "|---|" + "---:|" * (2 + len(arms))]
    for t in tasks:
        first = next(per_task[a][t] for a in arms if t in per_task[a])
        cells = [pct((per_task[a].get(t) or {}).get("accuracy")) for a in arms]
        lines.append(f"| {t} | {first['rows']} | {first['episodes']} | {' | '.join(cells)} |")
    return "\n".join(lines)


def blind_task_table(result: dict) -> str:
    """A Markdown table of the blind check per task: for every scored arm its click accuracy seeing and
    on white screens and how many distinct points it answers (means over seeds), against the task's
    distinct targets: one answer for many targets is a positional prior, not grounding."""
    st = result.get("stats") or {}
    per_task, distinct = st.get("per_task") or {}, st.get("distinct") or {}
    arms = [a for a in (ARMS[0], WARM, *ARMS[1:]) if a in distinct and blind_arm(a) in per_task]
    if not arms:
        return "(no blind check in this run)"
    tasks = sorted({t for a in arms for t in distinct[a]})
    lines = [f"| task | click rows | distinct targets | "
             f"{' | '.join(f'{a}: seeing % / white % (distinct answers)' for a in arms)} |",
             "|---|" + "---:|" * (2 + len(arms))]
    for t in tasks:
        first = next(distinct[a][t] for a in arms if t in distinct[a])
        cells = [f"{pct((per_task[a].get(t) or {}).get('accuracy'))} / "
                 f"{pct((per_task[blind_arm(a)].get(t) or {}).get('accuracy'))} "
                 f"({round((distinct[a].get(t) or {}).get('distinct_answers', 0), 1):g})" for a in arms]
        lines.append(f"| {t} | {first['rows']} | {first['distinct_targets']} | {' | '.join(cells)} |")
    return "\n".join(lines)


def spread_over_tasks(records: Sequence[dict], k: int) -> list[dict]:
    """Up to `k` of `records`, the tasks taken in turn, so that a gallery of a few shows many tasks.
    Records whose id is not a MiniWoB++ row count as one task.

    Example:
    >>> ids = ["miniwob/a/seed1/step0", "miniwob/a/seed2/step0", "miniwob/b/seed1/step0"]
    >>> [r["id"] for r in spread_over_tasks([{"id": i} for i in ids], 2)]
    ['miniwob/a/seed1/step0', 'miniwob/b/seed1/step0']
    """
    turn: Counter[str] = Counter()
    ranked = []
    for i, r in enumerate(records):
        try:
            task = task_of(r["id"])
        except UsageError:
            task = ""
        ranked.append((turn[task], i))
        turn[task] += 1
    return [records[i] for _, i in sorted(ranked)[:k]]


def transfer_file(source: str | os.PathLike, trained_tasks: Sequence[str] | None, path: str | os.PathLike,
                  per_task: int) -> Path | None:
    """The first `per_task` rows of each task of `source` not in `trained_tasks`, written to `path`:
    how the policy transfers. None when every task of `source` was trained on."""
    from gui_r1_lite.data import load_gui_r1, write_gui_r1

    rows = load_gui_r1(source).samples
    unseen = sorted({task_of(s.id) for s in rows} - set(trained_tasks or {task_of(s.id) for s in rows}))
    if not unseen:
        return None
    picked = [s for t in unseen for s in select_rows(rows, [t])[:per_task]]
    return write_gui_r1(picked, path, schema="benchmark")


def _verdict(value: Mapping | None, above: str, below: str, neither: str) -> str:
    """Which of three readings an interval (points) supports: above 0, below 0, or neither."""
    lo, hi = (value or {}).get("ci95") or (None, None)
    if lo is None:
        return "not measured"
    return above if lo > 0 else below if hi < 0 else neither


def what_it_shows(result: Mapping) -> str:
    """What a miniature run's figures show and do not show, in Markdown sentences read from the figures
    themselves (each sentence's wording follows its interval, so it stays true when the run changes): whether
    each trained arm looks at the screen, the gain of GRPO over SFT, the closed loop's episode count."""
    st = result.get("stats") or {}
    names, looks = arm_names(result.get("settings")), st.get("looks") or {}
    seeds, n = result.get("seeds") or [], result.get("n_heldout")
    lines = []
    for arm in ("sft", "sft_grpo"):
        if arm not in looks:
            continue
        reading = _verdict(looks[arm], "its answers depend on the screenshot: it scores lower on white screens",
                           "it scores higher on white screens than on the screenshots",
                           "no evidence that it looks: its interval includes 0, so it may answer from the "
                           "instruction and the page's usual layout alone")
        lines.append(f"- **{names[arm]}** looks {with_interval(looks[arm], True)} points (seeing − white): {reading}.")
    gain = (st.get("gain") or {}).get("click_accuracy")
    if gain:
        reading = _verdict(gain, "GRPO is ahead of SFT on these rows, beyond the seeds' and pages' noise",
                           "SFT is ahead of GRPO on these rows, beyond the noise",
                           "the interval includes 0: these seeds and rows do not tell the two apart")
        p = [t["p_value"] for t in (st.get("mcnemar") or {}).values()]
        lines.append(f"- The gain of {names[GAIN_ARM]} over {names[GAIN_VS]} is {with_interval(gain, True)} points: "
                     f"{reading}" + (f" (McNemar p per seed: {', '.join(f'{v:.2g}' for v in p)})" if p else "") + ".")
    online = st.get("online") or {}
    if online:
        played = {a: sum(v["success"].get("episodes") or []) for a, v in online.items()}
        few = [a for a, k in played.items() if k < 30]
        lines.append("- Closed loop: " + ", ".join(f"{names.get(a, a)} {with_interval(v['success'])} % over "
                                                   f"{played[a]} episodes" for a, v in online.items())
                     + (". With so few episodes an interval spans tens of points: these bars show the loop "
                        "runs, not which arm plays better." if few else "."))
    lines.append(f"- What this does not show: GUI-R1's benchmark figures. It is a tiny model, {len(seeds)} "
                 f"seed{'s' if len(seeds) != 1 else ''} and {n} held-out rows of the tasks in "
                 f"`settings.tasks`; `make study` runs five seeds, SFT matched on seconds too.")
    return "\n".join(lines)
