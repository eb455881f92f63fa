"""Data curation as composable filters (GUI-R1's point: a few thousand well-chosen steps beat
millions). Each filter returns the kept samples and a `FilterReport` of why it dropped the rest.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .actions import Compat
from .data import Dataset, Sample, to_train_rows, with_extras
from .geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS
from .rewards import completion_text, gui_r1_score

#: A policy for difficulty scoring: k completions per TRL train row (the tiny model, Qwen2.5-VL, a stub).
SamplingPolicy = Callable[[list[dict], int], list[list[str]]]


@dataclass
class FilterReport:
    name: str
    rows_in: int
    kept: int
    dropped: Counter = field(default_factory=Counter)  # reason -> rows
    params: dict = field(default_factory=dict)

    def __str__(self) -> str:
        why = ", ".join(f"{k}: {v}" for k, v in self.dropped.most_common()) or "nothing dropped"
        return f"{self.name}: kept {self.kept}/{self.rows_in} ({why})"

    def to_dict(self) -> dict:
        return {"name": self.name, "rows_in": self.rows_in, "kept": self.kept,
                "dropped": dict(self.dropped), "params": self.params}


Filter = Callable[[list[Sample]], tuple[list[Sample], FilterReport]]


def validity(dataset: Dataset) -> tuple[list[Sample], FilterReport]:
    """The loader's validation as a curation step: rows skipped, by the column at fault."""
    rep = dataset.report
    dropped = Counter({f"invalid {k}": v for k, v in rep.by_column().items()})
    return list(dataset.samples), FilterReport("validity", rep.rows_read, rep.rows_kept, dropped)


def _dedup_key(s: Sample) -> tuple[str, str]:
    return hashlib.sha1(s.image_bytes).hexdigest(), " ".join(s.instruction.lower().split())


def deduplicate(samples: Sequence[Sample]) -> tuple[list[Sample], FilterReport]:
    """Keep the first of rows with the same image content and instruction (case and spacing folded):
    a different history or action on the same pair is still a duplicate prompt."""
    seen: set[tuple[str, str]] = set()
    kept, dropped = [], Counter()
    for s in samples:
        key = _dedup_key(s)
        if key in seen:
            dropped["duplicate image + instruction"] += 1
            continue
        seen.add(key)
        kept.append(s)
    return kept, FilterReport("deduplicate", len(samples), len(kept), dropped)


def balance_key(s: Sample, by: Sequence[str] = ("platform", "gt_action")) -> tuple[str, ...]:
    """The group `balance` counts `s` in ("unknown" for an empty field)."""
    return tuple(str(getattr(s, f) or "unknown") for f in by)


def balance(samples: Sequence[Sample], per_group: int | dict[tuple[str, ...], int],
            by: Sequence[str] = ("platform", "gt_action"), seed: int = 0) -> tuple[list[Sample], FilterReport]:
    """At most `per_group` rows (an int, or a target per group key) per combination of `by` fields,
    chosen at random with `seed`, in their original order."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[balance_key(s, by)].append(i)
    rng = random.Random(seed)
    keep: set[int] = set()
    dropped = Counter()
    for key in sorted(groups):
        idx = groups[key]
        target = per_group if isinstance(per_group, int) else per_group.get(key, len(idx))
        chosen = idx if len(idx) <= target else rng.sample(idx, target)
        keep.update(chosen)
        if len(idx) > len(chosen):
            dropped[f"over target {target} for {'/'.join(key)}"] = len(idx) - len(chosen)
    kept = [s for i, s in enumerate(samples) if i in keep]
    params = {"by": list(by), "per_group": per_group if isinstance(per_group, int) else
              {"/".join(k): v for k, v in per_group.items()}, "seed": seed}
    return kept, FilterReport("balance", len(samples), len(kept), dropped, params)


def model_sampler(policy, temperature: float = 1.0, max_new_tokens: int = 64, seed: int = 0,
                  top_p: float = 1.0) -> SamplingPolicy:
    """A `SamplingPolicy` from `modeling.load_policy`'s policy: k answers per row at `temperature`, as GRPO
    draws its groups; seeded once, so a run is reproducible."""
    import torch

    from .evaluate import ModelCompleter

    torch.manual_seed(seed)
    completers: dict[int, ModelCompleter] = {}

    def sample(rows: list[dict], k: int) -> list[list[str]]:
        if k not in completers:
            completers[k] = ModelCompleter(policy, "sampler", do_sample=True, temperature=temperature,
                                           top_p=top_p, num_return_sequences=k)
        flat = completers[k].generate([r["prompt"] for r in rows], [r["image"] for r in rows],
                                      [r["image"].size for r in rows], [r["id"] for r in rows], max_new_tokens)
        return [flat[i * k:(i + 1) * k] for i in range(len(rows))]

    return sample


def success_rates(samples: Sequence[Sample], policy: SamplingPolicy, k: int = 5, compat: Compat = "official",
                  min_pixels: int = GUI_R1_MIN_PIXELS, max_pixels: int = GUI_R1_MAX_PIXELS,
                  batch_size: int = 8) -> list[float]:
    """Per row, the share of `k` sampled answers the GUI-R1 accuracy reward counts right (in the model's frame)."""
    rates: list[float] = []
    for start in range(0, len(samples), batch_size):
        rows = to_train_rows(samples[start:start + batch_size], min_pixels, max_pixels)
        outs = policy(rows, k)
        if len(outs) != len(rows):
            raise ValueError(f"policy returned {len(outs)} completion lists for {len(rows)} rows")
        for row, comps in zip(rows, outs, strict=True):
            if len(comps) != k:
                raise ValueError(f"policy returned {len(comps)} completions for row {row['id']!r}, expected {k}")
            scores = [gui_r1_score(completion_text(c), row["gt_action"], row["gt_bbox"], row["gt_input_text"],
                                   compat)["accuracy"] for c in comps]
            rates.append(sum(scores) / k)
    return rates


def difficulty(samples: Sequence[Sample], policy: SamplingPolicy, k: int = 5,
               band: tuple[float, float] = (0.1, 0.9), compat: Compat = "official",
               min_pixels: int = GUI_R1_MIN_PIXELS, max_pixels: int = GUI_R1_MAX_PIXELS,
               batch_size: int = 8) -> tuple[list[Sample], FilterReport]:
    """Keep rows whose success rate over `k` answers from `policy` lies in `band` (inclusive), the rate
    written into their extras. A row always right or always wrong gives GRPO all-equal rewards in
    its group, hence zero advantage: nothing to learn."""
    lo, hi = band
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"band must satisfy 0 <= lo <= hi <= 1, got {band}")
    rates = success_rates(samples, policy, k, compat, min_pixels, max_pixels, batch_size)
    kept, dropped = [], Counter()
    for s, rate in zip(samples, rates, strict=True):
        s = with_extras(s, success_rate=rate)
        if rate < lo:
            dropped["too hard (success rate below band)" if rate > 0 else "never solved (rate 0)"] += 1
        elif rate > hi:
            dropped["too easy (success rate above band)" if rate < 1 else "always solved (rate 1)"] += 1
        else:
            kept.append(s)
    params = {"k": k, "band": list(band), "compat": compat,
              "rate_histogram": dict(sorted(Counter(round(r, 3) for r in rates).items()))}
    return kept, FilterReport("difficulty", len(samples), len(kept), dropped, params)


@dataclass
class CurationResult:
    samples: list[Sample]
    reports: list[FilterReport]

    def summary(self) -> str:
        return "\n".join(str(r) for r in self.reports)

    def to_dict(self) -> dict:
        return {"rows": len(self.samples), "steps": [r.to_dict() for r in self.reports]}


def curate(dataset: Dataset | Iterable[Sample], steps: Sequence[Filter]) -> CurationResult:
    """Run `steps` in order (each `samples -> (kept, report)`); a `Dataset` first passes `validity`."""
    reports: list[FilterReport] = []
    if isinstance(dataset, Dataset):
        samples, rep = validity(dataset)
        reports.append(rep)
    else:
        samples = list(dataset)
    for step in steps:
        samples, rep = step(samples)
        reports.append(rep)
    return CurationResult(samples, reports)
