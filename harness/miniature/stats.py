"""How sure the miniature's comparison is: click accuracy, per task, paired per-seed gains, McNemar's
exact test, and a two-level bootstrap interval (model seeds, then held-out episodes) of a level or a
gain. Pure functions over prediction records.

Why two levels: an arm's figure moves with the model seed and with the held-out set, a sample of
pages. The held-out rows come in episodes (the steps of one page share its layout and instruction),
so episodes, not rows, are resampled; every seed and both arms are scored on the same episodes, so
one draw of episodes serves them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gui_r1_lite.metrics import grounding_hit

from ..online.results import UNPARSABLE_END
from .splits import seed_of, task_of

#: Bootstrap draws: with this many the interval's ends move by under 0.2 points between generator seeds.
N_BOOT = 10_000
#: Seed of the bootstrap's generator: the same records always give the same interval.
BOOT_SEED = 0


@dataclass(frozen=True)
class ClickRow:
    """One scored row with a click target: its id, task and episode (`<task>/seed<N>`), whether the
    predicted point hit the box and whether the answer parsed."""

    id: str
    task: str
    episode: str
    hit: bool
    parsed: bool


def episode_of(sample_id: str) -> str:
    """The episode a MiniWoB++ row belongs to: `<task>/seed<N>`."""
    return f"{task_of(sample_id)}/seed{seed_of(sample_id)}"


def click_rows(records: Iterable[Mapping]) -> list[ClickRow]:
    """The prediction records that have a click target (`metrics.grounding_hit` not None), in order."""
    out = []
    for r in records:
        hit = grounding_hit(r)
        if hit is not None:
            out.append(ClickRow(r["id"], task_of(r["id"]), episode_of(r["id"]), bool(hit), not r.get("parse_error")))
    return out


def episode_rows(episodes: Iterable[Mapping], tasks: Iterable[str], seeds: Iterable[int]) -> list[ClickRow]:
    """The closed-loop episodes (`episodes.jsonl` records) of `tasks` x `seeds` as rows, one per episode:
    `hit` is the episode solved, `parsed` that it did not end on an unparsable answer. Two arms that
    played the same pages get the same ids, so `bootstrap_gain` pairs them. The last record of an
    episode counts; an episode without a record is an error."""
    wanted = [(t, int(s)) for t in tasks for s in seeds]
    last = {(e["task"], int(e["seed"])): e for e in episodes}
    missing = [f"{t}/seed{s}" for t, s in wanted if (t, s) not in last]
    if missing:
        raise ValueError(f"no episode record for {len(missing)} of {len(wanted)} episodes ({', '.join(missing[:3])})")
    return [ClickRow(f"{t}/seed{s}", t, f"{t}/seed{s}", bool(last[t, s]["success"]),
                     last[t, s].get("end") != UNPARSABLE_END) for t, s in wanted]


def accuracy(rows: Sequence[ClickRow], parsed_only: bool = False) -> float | None:
    """The fraction of `rows` that hit (of those that parsed when `parsed_only`); None when none counts."""
    counted = [r for r in rows if r.parsed or not parsed_only]
    return sum(r.hit for r in counted) / len(counted) if counted else None


def per_task(rows_by_seed: Mapping[int, Sequence[ClickRow]]) -> dict[str, dict]:
    """Click accuracy per task: `{task: {"rows", "episodes", "accuracy", "per_seed"}}`, counting the
    task's distinct rows and episodes; `accuracy` is the mean over seeds."""
    tasks = sorted({r.task for rows in rows_by_seed.values() for r in rows})
    out = {}
    for task in tasks:
        mine = {s: [r for r in rows if r.task == task] for s, rows in rows_by_seed.items()}
        per_seed = [accuracy(rows) for rows in mine.values()]
        scored = [v for v in per_seed if v is not None]
        out[task] = {"rows": len({r.id for rows in mine.values() for r in rows}),
                     "episodes": len({r.episode for rows in mine.values() for r in rows}),
                     "accuracy": sum(scored) / len(scored) if scored else None, "per_seed": per_seed}
    return out


def _point(value: Sequence[float] | None) -> tuple[float, ...] | None:
    """A point or box as a key (rounded to 0.1 px: the same answer on pages of one size is one key)."""
    return None if not value else tuple(round(float(v), 1) for v in value)


def distinct_answers(records_by_seed: Mapping[int, Iterable[Mapping]]) -> dict[str, dict]:
    """Per task, over the click rows, how many different points an arm answers (mean over seeds; an
    answer without a point is not one) against how many different targets: a policy that answers one
    point for every page of a task is not reading the page, whatever its accuracy. `no_point` counts
    the rows answered without a point, summed over seeds."""
    by_task: dict[str, dict[int, list[Mapping]]] = {}
    for seed, records in records_by_seed.items():
        for r in records:
            if grounding_hit(r) is not None:
                by_task.setdefault(task_of(r["id"]), {}).setdefault(seed, []).append(r)
    out = {}
    for task in sorted(by_task):
        mine = by_task[task]
        targets = {r["id"]: _point(r["gt_bbox"]) for recs in mine.values() for r in recs}
        answers = [len({_point(r.get("pred_coord")) for r in mine.get(s, [])} - {None}) for s in records_by_seed]
        out[task] = {"rows": len(targets), "distinct_targets": len(set(targets.values())),
                     "distinct_answers": sum(answers) / len(answers), "distinct_answers_per_seed": answers,
                     "no_point": sum(1 for recs in mine.values() for r in recs if not r.get("pred_coord"))}
    return out


def paired(a: Sequence[ClickRow], b: Sequence[ClickRow]) -> tuple[list[ClickRow], list[ClickRow]]:
    """The rows of `a` and of `b` that share an id, in `a`'s order (two arms scored on the same rows)."""
    by_id = {r.id: r for r in b}
    shared = [r for r in a if r.id in by_id]
    return shared, [by_id[r.id] for r in shared]


def paired_differences(a: Mapping[int, Sequence[ClickRow]], b: Mapping[int, Sequence[ClickRow]],
                       parsed_only: bool = False) -> dict[int, float | None]:
    """Per seed, arm `b`'s click accuracy minus arm `a`'s on the rows both scored; None where either
    arm has no row to count."""
    out = {}
    for seed in a:
        if seed not in b:
            continue
        ra, rb = paired(a[seed], b[seed])
        acc_a, acc_b = accuracy(ra, parsed_only), accuracy(rb, parsed_only)
        out[seed] = None if acc_a is None or acc_b is None else acc_b - acc_a
    return out


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: under "the arms are alike" each discordant row (hit by one arm
    only) is arm b's with probability 1/2, so p = 2 P(X ≤ min), X binomial, at most 1.

    Example:
    >>> mcnemar_exact(1, 9)  # 2 * (1 + 10) / 2**10
    0.021484375
    >>> mcnemar_exact(0, 0)
    1.0
    """
    n = only_a + only_b
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**n)


def mcnemar(a: Sequence[ClickRow], b: Sequence[ClickRow]) -> dict:
    """McNemar's exact test of two arms on the rows both scored (one seed): the 2 × 2 counts and `p_value`."""
    ra, rb = paired(a, b)
    pairs = list(zip((r.hit for r in ra), (r.hit for r in rb), strict=True))
    table = {"both": pairs.count((True, True)), "only_a": pairs.count((True, False)),
             "only_b": pairs.count((False, True)), "neither": pairs.count((False, False))}
    return {"n": len(pairs), **table, "p_value": mcnemar_exact(table["only_a"], table["only_b"])}


def _tables(rows_by_seed: Sequence[Sequence[ClickRow]], episodes: Sequence[str],
            parsed_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """(hits, counted rows), each seeds × episodes."""
    col = {e: j for j, e in enumerate(episodes)}
    hits, counts = np.zeros((2, len(rows_by_seed), len(episodes)))
    for i, rows in enumerate(rows_by_seed):
        for r in rows:
            if r.parsed or not parsed_only:
                hits[i, col[r.episode]] += r.hit
                counts[i, col[r.episode]] += 1
    return hits, counts


def _statistic(tables: Sequence[tuple[np.ndarray, np.ndarray]], signs: Sequence[float], seed_w: np.ndarray,
               episode_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(statistic per draw, per seed per draw): each seed's accuracy on the episodes drawn (an episode
    drawn k times counts k times) combined over arms with `signs`, then averaged over the seeds
    drawn. A seed with no counted row in a draw is left out of that draw (NaN when all are)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per_seed = sum(s * (episode_w @ h.T) / (episode_w @ c.T) for (h, c), s in zip(tables, signs, strict=True))
        weights = np.where(np.isfinite(per_seed), seed_w, 0)
        stat = (np.where(weights > 0, per_seed, 0) * weights).sum(axis=1) / weights.sum(axis=1)
    return stat, per_seed


def _interval(arms: Sequence[Mapping[int, Sequence[ClickRow]]], signs: Sequence[float], parsed_only: bool,
              n_boot: int, seed: int) -> dict:
    """The two-level bootstrap of `sum(sign × accuracy)` over `arms` (seed -> rows, the same seeds)."""
    seeds = list(arms[0])
    episodes = sorted({r.episode for arm in arms for rows in arm.values() for r in rows})
    tables = [_tables([arm[s] for s in seeds], episodes, parsed_only) for arm in arms]
    n_s, n_e = len(seeds), len(episodes)
    point, per_seed = _statistic(tables, signs, np.ones((1, n_s)), np.ones((1, n_e)))
    rng = np.random.default_rng(seed)
    seed_w = _draw_counts(rng, n_s, n_boot)  # seeds drawn with replacement
    episode_w = _draw_counts(rng, n_e, n_boot)  # then held-out episodes
    draws, _ = _statistic(tables, signs, seed_w, episode_w)
    draws = draws[np.isfinite(draws)]
    ci = [float(v) for v in np.quantile(draws, [0.025, 0.975])] if draws.size else None
    return {"mean": _float(point[0]), "ci95": ci, "per_seed": [_float(v) for v in per_seed[0]], "seeds": seeds}


def _draw_counts(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """`n_boot` draws of `n` out of `n` items with replacement, as counts: n_boot × n."""
    picks = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None]
    return np.bincount(picks.ravel(), minlength=n_boot * n).reshape(n_boot, n)


def _float(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def bootstrap_accuracy(rows_by_seed: Mapping[int, Sequence[ClickRow]], parsed_only: bool = False,
                       n_boot: int = N_BOOT, seed: int = BOOT_SEED) -> dict:
    """One arm's click accuracy over seeds, `{"mean", "ci95": [lo, hi], "per_seed", "seeds"}`, with a
    95 % bootstrap interval that draws seeds, then held-out episodes (None when no row counts)."""
    return _interval([rows_by_seed], [1.0], parsed_only, n_boot, seed)


def bootstrap_gain(a: Mapping[int, Sequence[ClickRow]], b: Mapping[int, Sequence[ClickRow]],
                   parsed_only: bool = False, n_boot: int = N_BOOT, seed: int = BOOT_SEED) -> dict:
    """Arm `b`'s click accuracy minus arm `a`'s, as `bootstrap_accuracy`, paired: per seed both arms on
    the rows both scored, and in each draw the same seeds and episodes for both. `parsed_only`: each
    arm on its own parsed rows (a gain not made by answering in format more often)."""
    seeds = [s for s in a if s in b]
    pairs = {s: paired(a[s], b[s]) for s in seeds}
    return _interval([{s: p[0] for s, p in pairs.items()}, {s: p[1] for s, p in pairs.items()}], [-1.0, 1.0],
                     parsed_only, n_boot, seed)


def online_counts(result: Mapping) -> dict[str, tuple[int, int]]:
    """`{task: (episodes solved, episodes)}` of one online evaluation (`online.json`'s object)."""
    return {t: (round(float(v["success"]) * int(v["episodes"])), int(v["episodes"]))
            for t, v in sorted(result["tasks"].items()) if int(v["episodes"])}


def bootstrap_success(counts_by_seed: Mapping[int, Mapping[str, tuple[int, int]]], n_boot: int = N_BOOT,
                      seed: int = BOOT_SEED) -> dict:
    """Closed-loop success over seeds (`{seed: online_counts(...)}`) as `bootstrap_accuracy`, plus each
    seed's `episodes`: seeds drawn, then each seed's episodes of each task (a binomial draw at its
    rate). Only counts are kept, so episodes are drawn within each seed rather than shared across
    seeds: the interval is, if anything, wider. No figures when a seed has no episode."""
    seeds = list(counts_by_seed)
    tasks = sorted({t for c in counts_by_seed.values() for t in c})
    if not tasks or not all(sum(e for _, e in c.values()) for c in counts_by_seed.values()):
        return {"mean": None, "ci95": None, "per_seed": [], "seeds": seeds, "episodes": []}
    solved, n = (np.array([[counts_by_seed[s].get(t, (0, 0))[k] for t in tasks] for s in seeds], dtype=float)
                 for k in (0, 1))
    per_seed = solved.sum(axis=1) / n.sum(axis=1)
    rng = np.random.default_rng(seed)
    seed_w = _draw_counts(rng, len(seeds), n_boot)
    rate = np.divide(solved, n, out=np.zeros_like(solved), where=n > 0)
    drawn = rng.binomial(n.astype(int), rate, size=(n_boot, *n.shape)).sum(axis=2) / n.sum(axis=1)
    draws = (drawn * seed_w).sum(axis=1) / seed_w.sum(axis=1)
    return {"mean": float(per_seed.mean()), "ci95": [float(v) for v in np.quantile(draws, [0.025, 0.975])],
            "per_seed": [float(v) for v in per_seed], "seeds": seeds, "episodes": [int(v) for v in n.sum(axis=1)]}
