"""Benchmark metrics over prediction records (one dict per step, as `evaluate.predict` writes
them): ScreenSpot-style grounding, the original's Type / GR / SR (spec §5) and our strict step success.

Records hold `group`, `ui_type`, `gt_action`, `gt_bbox` (stored-image pixels, [-100, -100] for no
target), `image_size` [W, H], `gt_input_text`, `pred_action`, `pred_coord`, `pred_input_text`,
`parse_error` and `compat`. An unreadable prediction has its `pred_*` None and misses every test.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from .actions import POINT_ACTIONS, TEXT_ACTIONS
from .geometry import has_target, point_in_box, target_point, within_normalised_distance
from .rewards import text_f1

#: Grounding (GR) tolerance of the original action benchmarks: a normalised distance.
GR_RADIUS = 0.14
TEXT_F1_THRESHOLD = 0.5

Record = Mapping[str, Any]

#: The paper's GUI-R1-3B grounding table (fractions) per benchmark file stem and `group-ui_type`
#: column: ScreenSpot's web and desktop columns (the table has no mobile one) and ScreenSpot-Pro's
#: twelve. Source: the GUI-R1 paper (arXiv 2504.10458) as its repository's README shows it.
PAPER_GUI_R1_3B_COLUMNS: dict[str, dict[str, float]] = {
    "screenspot_test": {"web-text": 0.896, "web-icon": 0.721, "desktop-text": 0.938, "desktop-icon": 0.648},
    "screenspot_pro_test": {"Dev-text": 0.338, "Dev-icon": 0.048, "Creative-text": 0.409, "Creative-icon": 0.056,
                            "CAD-text": 0.264, "CAD-icon": 0.078, "Scientific-text": 0.618, "Scientific-icon": 0.173,
                            "Office-text": 0.536, "Office-icon": 0.170, "OS-text": 0.281, "OS-icon": 0.056},
}


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values)


#: The paper's headline figures for GUI-R1-3B (fractions) per file stem, for comparison tables only.
#: Grounding is the mean of the columns above (ScreenSpot 0.801, ScreenSpot-Pro 0.252), not pooled
#: over rows; Type / GR / SR come from its low- and high-level tables. Same source.
PAPER_GUI_R1_3B: dict[str, dict[str, float]] = {
    "screenspot_test": {"grounding": _mean(PAPER_GUI_R1_3B_COLUMNS["screenspot_test"].values())},
    "screenspot_pro_test": {"grounding": _mean(PAPER_GUI_R1_3B_COLUMNS["screenspot_pro_test"].values())},
    "androidcontrol_low_test": {"type": 0.8368, "gr": 0.8159, "sr": 0.6441},
    "androidcontrol_high_test": {"type": 0.5804, "gr": 0.5624, "sr": 0.4655},
    "guiact_web_test": {"type": 0.8986, "gr": 0.8742, "sr": 0.7631},
    "guiodyssey_test": {"type": 0.5484, "gr": 0.4152, "sr": 0.4133},
    "omniact_web_test": {"type": 0.8858, "gr": 0.7510, "sr": 0.7508},
    "omniact_desktop_test": {"type": 0.9186, "gr": 0.7837, "sr": 0.7831},
}

#: The point GR measures from, by compat. The original's `eval_omni.py` takes `gt_bbox[0]`,
#: `gt_bbox[1]`: the point of a 2-value target, but the top-left corner of a 4-value box.
GR_RULES: dict[str, str] = {
    "official": "gt_bbox[0:2], the original's rule (a 4-value box's top-left corner)",
    "strict": "the target's centre (a 4-value box's centre, a 2-value point itself)",
}


def _box(record: Record) -> list[float]:
    box = record.get("gt_bbox")
    return [float(v) for v in box] if box is not None else []


def _coord(record: Record) -> tuple[float, float] | None:
    p = record.get("pred_coord")
    if p is None or len(p) != 2:
        return None
    return float(p[0]), float(p[1])


def grounding_hit(record: Record) -> bool | None:
    """ScreenSpot hit: the predicted point strictly inside the 4-value `gt_bbox` (the predicted
    action is not checked). None when the record is not a click with a 4-value box."""
    box = _box(record)
    if record.get("gt_action") != "click" or len(box) != 4:
        return None
    p = _coord(record)
    return p is not None and point_in_box(p, box, inclusive=False)


def gr_target(record: Record) -> tuple[float, float] | None:
    """The point GR measures from (`GR_RULES`), None without a target: by default ("official") the
    original's `gt_bbox[0:2]`, a 4-value box's top-left corner; with "strict" the target's centre,
    so that a point anywhere in a small box passes, as it would against a stored point.

    >>> gr_target({"gt_bbox": [100, 40, 300, 60]}), gr_target({"gt_bbox": [100, 40, 300, 60], "compat": "strict"})
    ((100.0, 40.0), (200.0, 50.0))
    """
    box = _box(record)
    if not has_target(box):
        return None
    if record.get("compat", "official") == "official":
        return box[0], box[1]
    return target_point(box)


def gr_hit(record: Record) -> bool | None:
    """The original's GR test (point within 0.14 normalised of `gr_target`; action not checked).
    None unless the ground truth is a point action with a target."""
    if record.get("gt_action") not in POINT_ACTIONS:
        return None
    target = gr_target(record)
    if target is None:
        return None
    p = _coord(record)
    return p is not None and within_normalised_distance(p, target, record["image_size"], GR_RADIUS)


def text_hit(record: Record) -> bool | None:
    """The original's Text test (F1 ≥ 0.5; action not checked). None for other ground truths."""
    if record.get("gt_action") not in TEXT_ACTIONS:
        return None
    pred = record.get("pred_input_text")
    return pred is not None and text_f1(pred, record.get("gt_input_text", "")) >= TEXT_F1_THRESHOLD


def type_hit(record: Record) -> bool:
    pred = record.get("pred_action")
    return pred is not None and pred == record.get("gt_action")


def strict_step_hit(record: Record) -> bool:
    """Our step success: the action type matches (case-insensitive) and, where the ground truth
    has a target point, the point lies inside the 4-value box (edges included) or within 0.14
    normalised of a 2-value point; where it has a text, F1 ≥ 0.5."""
    pred = record.get("pred_action")
    gt = str(record.get("gt_action", "")).strip().lower()
    if pred is None or str(pred).strip().lower() != gt:
        return False
    box = _box(record)
    if gt in POINT_ACTIONS and has_target(box):
        p = _coord(record)
        if p is None:
            return False
        if len(box) == 4:
            if not point_in_box(p, box, inclusive=True):
                return False
        elif not within_normalised_distance(p, box, record["image_size"], GR_RADIUS):
            return False
    if gt in TEXT_ACTIONS:
        text = record.get("pred_input_text")
        if text is None or text_f1(text, record.get("gt_input_text", "")) < TEXT_F1_THRESHOLD:
            return False
    return True


def record_outcome(record: Record) -> dict[str, bool | None]:
    """Every test on one record (None where a test does not apply), and `hit`: the grounding
    result where the step has a target, else the strict step result (what pictures colour by)."""
    out = {"type": type_hit(record), "grounding": grounding_hit(record), "gr": gr_hit(record),
           "text": text_hit(record), "strict": strict_step_hit(record)}
    point_result = out["grounding"] if out["grounding"] is not None else out["gr"]
    out["hit"] = point_result if point_result is not None else out["strict"]
    return out


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def grounding_group(record: Record) -> str:
    """The grounding table's column of a record: `group-ui_type` (as ScreenSpot names them), or the group."""
    group = record.get("group") or "all"
    ui_type = record.get("ui_type")
    return f"{group}-{ui_type}" if ui_type else str(group)


def grounding_metrics(records: Iterable[Record]) -> dict | None:
    """ScreenSpot-style grounding accuracy per `group-ui_type` and pooled (`overall`) over click
    records with 4-value boxes; None without such records."""
    hits: dict[str, int] = defaultdict(int)
    totals: dict[str, int] = defaultdict(int)
    for r in records:
        hit = grounding_hit(r)
        if hit is None:
            continue
        key = grounding_group(r)
        totals[key] += 1
        hits[key] += int(hit)
    n = sum(totals.values())
    if not n:
        return None
    keys = sorted(totals)
    return {
        "overall": sum(hits.values()) / n,
        "n": n,
        "groups": {k: hits[k] / totals[k] for k in keys},
        "counts": {k: {"hits": hits[k], "n": totals[k]} for k in keys},
    }


# (kind, category suffix, test): the original's three per-record tests, each None where it does not apply.
_ACTION_TESTS = (("type", "", type_hit), ("gr", "-grounding", gr_hit), ("text", "-text", text_hit))
_KINDS = frozenset(kind for kind, _, _ in _ACTION_TESTS)


def action_metrics(records: Iterable[Record]) -> dict | None:
    """The original's action-benchmark metrics (spec §5) plus our strict step success.

    - `type`: exact action hits / all records; `grounding` (GR): hits / point-action records;
    - `step_success` (SR): (GR hits + Text hits) / (GR records + Text records): other actions are left out;
    - `categories`: rates per `<group>-<gt_action>` (type), `...-grounding` and `...-text`; `counts`:
      their hits and totals; `gr_rule`: which GR target was used (`GR_RULES`, by the records' compat).

    Rates are None where their denominator is 0; the whole result is None without records.
    """
    records = list(records)
    if not records:
        return None
    hits: Counter[str] = Counter()  # by kind ("type", "gr", "text") and by category
    totals: Counter[str] = Counter()
    strict_hits = 0
    for r in records:
        base = f"{r.get('group') or 'all'}-{r.get('gt_action')}"
        for kind, suffix, test in _ACTION_TESTS:
            hit = test(r)
            if hit is not None:
                for key in (kind, base + suffix):
                    totals[key] += 1
                    hits[key] += hit
        strict_hits += strict_step_hit(r)
    keys = sorted(k for k in totals if k not in _KINDS)
    n_gr, n_text = totals["gr"], totals["text"]
    return {
        "type": hits["type"] / len(records),
        "grounding": _rate(hits["gr"], n_gr),
        "step_success": _rate(hits["gr"] + hits["text"], n_gr + n_text),
        "strict_step_success": strict_hits / len(records),
        "n": len(records),
        "n_grounding": n_gr,
        "n_text": n_text,
        "categories": {k: hits[k] / totals[k] for k in keys},
        "counts": {k: {"hits": hits[k], "n": totals[k]} for k in keys},
        "gr_rule": gr_rule(records),
    }


def gr_rule(records: Iterable[Record]) -> str:
    """Which GR target produced the records' figures (`GR_RULES`), by their compat."""
    compats = sorted({str(r.get("compat", "official")) for r in records}) or ["official"]
    return "; ".join(f"{c}: {GR_RULES.get(c, 'unknown compat')}" if len(compats) > 1 else GR_RULES.get(c, c)
                     for c in compats)


def parse_failures(records: Iterable[Record]) -> int:
    """Records whose completion failed the answer format (`parse_error` set)."""
    return sum(1 for r in records if r.get("parse_error"))


def table_row(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures of one `summarize` result as a flat row (fractions; None where absent)."""
    g, a = summary.get("grounding") or {}, summary.get("action") or {}
    return {"benchmark": summary.get("benchmark"), "n": summary.get("n"),
            "parse_failures": summary.get("parse_failures"),
            "grounding": g.get("overall"), "type": a.get("type"), "gr": a.get("grounding"),
            "sr": a.get("step_success"), "strict_sr": a.get("strict_step_success")}


def summarize(records: Iterable[Record], benchmark: str = "") -> dict:
    """The content of `metrics.json`: benchmark name, row count, parse failures, grounding and
    action metrics (each None where nothing applies)."""
    records = list(records)
    return {
        "benchmark": benchmark,
        "n": len(records),
        "parse_failures": parse_failures(records),
        "grounding": grounding_metrics(records),
        "action": action_metrics(records),
    }


def percent(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def paper_grounding(grounding: Mapping[str, Any] | None, stem: str) -> tuple[float | None, list[str]]:
    """This run's grounding as the paper aggregates it: the mean accuracy over the paper's columns
    (`PAPER_GUI_R1_3B_COLUMNS`, case-insensitive) that the run has, and those columns; else (None, [])."""
    if not grounding:
        return None, []
    groups = {k.lower(): v for k, v in grounding.get("groups", {}).items()}
    used = [c for c in PAPER_GUI_R1_3B_COLUMNS.get(stem, {}) if c.lower() in groups]
    if not used:
        return None, []
    return _mean(groups[c.lower()] for c in used), used


def to_markdown(summary: Mapping[str, Any]) -> str:
    """A Markdown report of `summarize(...)` output (figures in percent)."""
    left_out = summary.get("skipped_rows") or 0  # rows validation refused (evaluate adds it; see its summary)
    rows = f"rows: {summary['n']}" + (f" ({left_out} more left out by validation: `skipped` in metrics.json)"
                                      if left_out else "")
    lines = [f"# {summary.get('benchmark') or 'evaluation'}", "",
             f"{rows}, parse failures: {summary['parse_failures']}", ""]
    g = summary.get("grounding")
    if g:
        lines += ["## Grounding (point strictly inside the box)", "", "| group | n | accuracy % |", "|---|---:|---:|"]
        for k, v in g["groups"].items():
            lines.append(f"| {k} | {g['counts'][k]['n']} | {percent(v)} |")
        lines += [f"| **overall** | {g['n']} | **{percent(g['overall'])}** |", ""]
    a = summary.get("action")
    if a:
        lines += ["## Actions", "", "| metric | n | % |", "|---|---:|---:|",
                  f"| Type | {a['n']} | {percent(a['type'])} |",
                  f"| GR (0.14 radius) | {a['n_grounding']} | {percent(a['grounding'])} |",
                  f"| SR (official) | {a['n_grounding'] + a['n_text']} | {percent(a['step_success'])} |",
                  f"| strict step success | {a['n']} | {percent(a['strict_step_success'])} |", "",
                  f"GR measured from {a.get('gr_rule') or GR_RULES['official']}.", "",
                  "| category | hits / n | % |", "|---|---:|---:|"]
        for k, v in a["categories"].items():
            c = a["counts"][k]
            lines.append(f"| {k} | {c['hits']} / {c['n']} | {percent(v)} |")
        lines.append("")
    per_file = summary.get("per_file")
    if per_file:
        lines += ["## Per file", "", "| file | n | parse failures | grounding % | Type % | GR % | SR % | strict % |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for name, s in per_file.items():
            g, a = s.get("grounding") or {}, s.get("action") or {}
            figures = (g.get("overall"), a.get("type"), a.get("grounding"), a.get("step_success"),
                       a.get("strict_step_success"))
            lines.append(f"| {name} | {s['n']} | {s['parse_failures']} | " + " | ".join(map(percent, figures)) + " |")
        lines.append("")
    return "\n".join(lines)
