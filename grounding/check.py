"""Does the base look? Click accuracy on the same rows with their pages and with white pages of the
same size (`gui_r1_lite.blind`), answers read by the package's own parser and scored by its
ScreenSpot hit test, and the paired difference with a 95 % bootstrap interval over rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gui_r1_lite.blind import blind_rows
from gui_r1_lite.data import EvalRow, Sample, model_view, to_eval_rows
from gui_r1_lite.evaluate import ModelCompleter, make_record
from gui_r1_lite.metrics import grounding_hit

#: Seed of the bootstrap's draws: the same hits always give the same interval.
BOOTSTRAP_SEED = 0


def answer_records(policy, rows: Sequence[EvalRow], pixels: tuple[int, int], batch_size: int = 16,
                   max_new_tokens: int = 48) -> list[dict]:
    """Greedy answers to `rows` as the package's evaluation records (one per row, in order)."""
    completer = ModelCompleter(policy)
    records = []
    for lo in range(0, len(rows), batch_size):
        batch = rows[lo:lo + batch_size]
        images = [model_view(r.sample, *pixels)[0] for r in batch]
        texts = completer.generate([r.messages for r in batch], images, [r.model_size for r in batch],
                                   [r.sample.id for r in batch], max_new_tokens)
        records += [make_record(r, r.sample.id, t) for r, t in zip(batch, texts, strict=True)]
    return records


def hits(records: Sequence[dict]) -> list[int]:
    """1 where the answer's point is strictly inside the target box, else 0 (clicks with boxes only)."""
    return [int(bool(grounding_hit(r))) for r in records if grounding_hit(r) is not None]


def paired_interval(seeing: Sequence[int], blind: Sequence[int], n_boot: int = 2000) -> dict:
    """Mean of seeing - blind over paired rows and its 95 % percentile bootstrap interval (rows drawn
    with replacement, both scores of a row together)."""
    import numpy as np

    if len(seeing) != len(blind) or not seeing:
        raise ValueError(f"need equal, non-empty paired hit lists, got {len(seeing)} and {len(blind)}")
    diff = np.asarray(seeing, dtype=float) - np.asarray(blind, dtype=float)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"mean": float(diff.mean()), "ci95": [float(lo), float(hi)], "n": len(diff)}


def distinct_points(records: Sequence[dict]) -> int:
    """How many different points the answers name (1: the same click whatever the page shows)."""
    return len(Counter(tuple(r["pred_coord_model"] or ()) for r in records))


def looks(policy, samples: Sequence[Sample], pixels: tuple[int, int],
          batch_size: int = 16) -> tuple[dict, list[dict]]:
    """(summary, seeing records): seeing and blind click accuracy on `samples`, their paired
    difference with its interval, per-group accuracies, and how many distinct answers each gives."""
    rows = to_eval_rows(samples, *pixels)
    seeing = answer_records(policy, rows, pixels, batch_size)
    blank = answer_records(policy, blind_rows(rows), pixels, batch_size)
    h_see, h_blind = hits(seeing), hits(blank)
    groups: dict[str, list[tuple[int, int]]] = {}
    for r, a, b in zip(seeing, h_see, h_blind, strict=True):
        groups.setdefault(r["group"], []).append((a, b))
    return {
        "seeing": sum(h_see) / len(h_see), "blind": sum(h_blind) / len(h_blind),
        "looks": paired_interval(h_see, h_blind),
        "format_ok": sum(bool(r["format_ok"]) for r in seeing) / len(seeing),
        "distinct_seeing": distinct_points(seeing), "distinct_blind": distinct_points(blank),
        "by_group": {g: {"n": len(v), "seeing": sum(a for a, _ in v) / len(v), "blind": sum(b for _, b in v) / len(v)}
                     for g, v in sorted(groups.items())},
    }, seeing
