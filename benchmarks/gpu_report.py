"""What bench_gpu_recipe.py's runs say: whether each passed, why not in one line, the log line and the summary
table. A run passes when it trained every step with gradients that are finite and not zero and every GRPO
completion ran to full length; a run out of memory never passes (as a T4: it does not fit).

    python benchmarks/gpu_report.py OUT_DIR      # one line per run that failed; exit 1 when one did
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gui_r1_lite.runio import read_json, write_text_atomic  # noqa: E402

#: How a run that ran out of memory as a T4 is reported.
DOES_NOT_FIT = "does not fit"


def per_step(steps: list[dict]) -> dict:
    """Medians over the steps after the first (CUDA and allocator warm-up); over every step when one ran."""
    kept = steps[1:] if len(steps) > 1 else steps
    keys = ("step_s", "generation_s", "forward_backward_s", "rest_s")
    medians = {k: round(statistics.median(s[k] for s in kept), 4) for k in keys} if kept else {}
    return {**medians, "steps": len(kept), "first_step_included": len(kept) == len(steps)}


def _number(value) -> float | None:
    """A recorded grad_norm as a float (JSON's NaN and Infinity, or their text), None when absent."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def gradient_problem(result: dict) -> str | None:
    """Why a run's gradients cannot be trusted, in one line, or None. Each step it recorded must have logged a
    grad_norm (a stopped run's last step may lack it) that is finite and not exactly 0 (0: nothing reached the
    trained weights). A non-finite one is allowed only on a step the fp16 loss scaler skipped (it does while it
    finds its scale) and only when some step went through."""
    steps = len(result.get("steps") or [])
    logged = {r.get("step"): r for r in result.get("gradients") or []}
    must = steps if result.get("status") == "ok" else steps - 1
    applied = 0
    for step in range(1, steps + 1):
        record = logged.get(step, {})
        norm = _number(record.get("grad_norm"))
        if norm is None:
            if step <= must:
                return f"step {step}: no grad_norm logged"
            continue
        if norm == 0.0:
            return f"step {step}: grad_norm 0.0 (no gradient reached the trained weights)"
        if not math.isfinite(norm):
            if not record.get("skipped"):
                return f"step {step}: grad_norm {norm} and the step was applied"
            continue
        applied += 1
    if steps and logged and not applied:
        return f"every step's grad_norm is not finite (each skipped by the fp16 loss scaler, {steps} step(s))"
    return None


def failure(result: dict) -> str | None:
    """Why the run failed, in one line; None when it passed or was stopped from outside without a fault."""
    status = result.get("status")
    mem = result.get("memory", {}).get("at_failure") or {}
    if status == "out_of_memory":
        where = (f"{mem['peak_reserved_gib']} GiB reserved at the failure" if "peak_reserved_gib" in mem
                 else "out of memory")
        if result.get("t4"):
            return f"{DOES_NOT_FIT} a T4: {where}, under a cap of {result.get('memory_limit_gib')} GiB"
        return f"out of memory on {result.get('environment', {}).get('gpu', 'the GPU')}: {where}"
    if status == "error":
        lines = [line for line in (result.get("error") or "").strip().splitlines() if line.strip()]
        return f"error: {lines[-1].strip() if lines else 'unknown'}"
    problem = gradient_problem(result)
    if problem:
        return problem
    lengths = result.get("completion_lengths", {"full_length": True})
    if status == "ok" and not (lengths and lengths["full_length"]):
        got = f"{lengths['min']}-{lengths['max']}" if lengths else "none logged"
        return f"completions of {got} tokens, not all {lengths['expected'] if lengths else 'the full length'}"
    return None


def passed(result: dict) -> bool:
    """A run passes when it trained every step without a `failure`."""
    return result.get("status") == "ok" and failure(result) is None


def status_text(result: dict) -> str:
    """The run's status; a run still `loading` or `running` in its JSON was stopped from outside (a time limit)."""
    if result["status"] == "loading":
        return "stopped while loading"
    if result["status"] == "running":
        n = len(result.get("steps") or [])
        return f"stopped after {n} step{'' if n == 1 else 's'}"
    if result["status"] == "out_of_memory" and result.get("t4"):
        return f"{DOES_NOT_FIT} (out of memory)"
    return result["status"]


def describe(result: dict) -> str:
    """One line per run for the log."""
    s = result.get("per_step") or per_step(result.get("steps") or [])
    mem = result["memory"].get("training") or result["memory"].get("at_failure") or {}
    why = failure(result)
    line = f"{result['run']}: {status_text(result)}"
    line += "" if result.get("passed") else f" (FAILED{': ' + why if why else ''})"
    if s.get("steps"):
        line += (f"; step {s['step_s']:.2f} s = generation {s['generation_s']:.2f} + forward/backward "
                 f"{s['forward_backward_s']:.2f} + rest {s['rest_s']:.2f} (median of {s['steps']})")
    if "peak_allocated_gib" in mem:
        line += f"; peak allocated {mem['peak_allocated_gib']} GiB, reserved {mem['peak_reserved_gib']} GiB"
    lengths = result.get("completion_lengths")
    if lengths:
        line += f"; completions {lengths['min']}-{lengths['max']} tokens of {lengths['expected']}"
    return line


def memory_cell(result: dict) -> str:
    """Peak allocated / reserved GiB while training (or when it failed), and the loading peak in brackets."""
    mem = result["memory"].get("training") or result["memory"].get("at_failure") or {}
    if "peak_allocated_gib" in mem:
        loading = result["memory"].get("loading", {}).get("peak_allocated_gib", "-")
        return f"{mem['peak_allocated_gib']} / {mem['peak_reserved_gib']} ({loading})"
    return f"CPU: peak resident {mem['peak_rss_gib']}" if "peak_rss_gib" in mem else "-"


def summary_table(results: list[dict]) -> str:
    """The runs as a Markdown table (summary.md)."""
    lines = ["| run | status | GPU | weights | peak allocated / reserved GiB (loading) | seconds a step = generation "
             "+ forward/backward + rest | completion tokens | grad_norm |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, lengths = r.get("per_step") or per_step(r.get("steps") or []), r.get("completion_lengths")
        gpu = r["environment"].get("gpu", "cpu") + (f" capped at {r['memory_limit_gib']} GiB" if r["t4"] else "")
        seconds = (f"{s['step_s']:.1f} = {s['generation_s']:.1f} + {s['forward_backward_s']:.1f} + {s['rest_s']:.1f}"
                   f" ({s['steps']} step{'s' if s['steps'] != 1 else ''})" if s.get("steps") else "-")
        tokens = f"{lengths['min']:.0f}-{lengths['max']:.0f} of {lengths['expected']}" if lengths else "-"
        norms = ", ".join(f"{_number(g.get('grad_norm')):.3g}" + (" (skipped)" if g.get("skipped") else "")
                          for g in r.get("gradients") or [] if _number(g.get("grad_norm")) is not None) or "-"
        weights, status = r.get("precision", {}).get("text_embedding", "?").replace("torch.", ""), status_text(r)
        status += "" if passed(r) or r["status"] in ("loading", "running") else " (FAILED)"
        lines.append(f"| {r['run']} | {status} | {gpu} | {weights} | {memory_cell(r)} | {seconds} | {tokens} | "
                     f"{norms} |")
    return "\n".join(lines) + "\n"


def results_in(out: Path) -> list[dict]:
    """The benchmark runs' JSON files in `out`."""
    results = [read_json(p) for p in sorted(out.glob("*.json"))]
    return [r for r in results if isinstance(r, dict) and "run" in r and "environment" in r]


def summarize(out: Path) -> int:
    """Write `out`/summary.md from the runs' JSON files there, and print it."""
    results = results_in(out)
    if not results:
        print(f"{out}: no benchmark results", file=sys.stderr)
        return 1
    text = summary_table(results)
    write_text_atomic(out / "summary.md", text)
    print(text, end="")
    return 0


def verdict(out: Path) -> int:
    """One line per run in `out` that failed (`FAIL: run: why`) or was stopped; 1 when one failed, else 0."""
    results = results_in(out)
    if not results:
        print(f"FAIL: {out}: no benchmark results")
        return 1
    failed = 0
    for r in results:
        why = failure(r)
        if why:
            failed += 1
            print(f"FAIL: {r['run']}: {why}")
        elif r["status"] in ("loading", "running"):
            print(f"stopped: {r['run']}: {status_text(r)} (by its time limit; its steps so far are sound)")
    print(f"benchmark verdict: {len(results) - failed} of {len(results)} runs without a fault")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, metavar="OUT_DIR", help="the --out folder of bench_gpu_recipe.py")
    args = ap.parse_args(argv)
    if not args.out.is_dir():
        ap.error(f"{args.out}: no such folder (pass the --out folder of bench_gpu_recipe.py)")
    return verdict(args.out)


if __name__ == "__main__":
    sys.exit(main())
