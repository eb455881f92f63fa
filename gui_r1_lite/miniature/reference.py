"""`make run`'s figures against the ones shipped in `docs/results/make_run_reference.json`.

The miniature pins its threads and the math libraries' dispatch (`parallel`), so a `cpu-mini` run with
the default settings should give every per-seed figure of the reference to the digit on any x86-64
machine. A figure is every value of a `per_seed` list under the summary's `miniature`, `gain` and
`online` blocks, compared as a percentage with one decimal, as the README reports it.

    python -m gui_r1_lite.miniature.reference RUN_DIR [--write]   # compare a run (or write the reference)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..runio import read_json, write_json_atomic

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "results" / "make_run_reference.json"
BLOCKS = ("miniature", "gain", "online")


def reference_of(summary: Mapping) -> dict:
    """What a reference keeps of a run's summary.json: its profile name, the `BLOCKS`, and, as a record
    (not compared), its seconds and the machine they were measured on."""
    return {"profile": (summary.get("profile") or {}).get("name"),
            **{k: summary[k] for k in BLOCKS if summary.get(k) is not None},
            "seconds": summary.get("seconds"), "total_seconds": summary.get("total_seconds"),
            "machine": machine()}


def machine() -> dict:
    """The CPU and core count a run's seconds were measured on."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        cpuinfo = []
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), None)
    return {"cpu": model or platform.processor() or platform.machine(), "cores": os.cpu_count()}


def figures(block: Any, path: tuple = ()) -> Iterator[tuple[str, float | None]]:
    """(`a/b/c[seed index]`, value as a percentage with one decimal) for every per-seed value."""
    if isinstance(block, Mapping):
        for key, value in block.items():
            if key == "per_seed" and isinstance(value, list):
                for i, v in enumerate(value):
                    yield f"{'/'.join(path)}[{i}]", None if v is None else round(100 * float(v), 1)
            else:
                yield from figures(value, (*path, str(key)))


def compare(run: Mapping, reference: Mapping) -> dict:
    """`{"figures": n, "differ": [(name, run's, reference's)], "missing": [names in one only]}`."""
    mine = dict(figures({k: run.get(k) for k in BLOCKS}))
    theirs = dict(figures({k: reference.get(k) for k in BLOCKS}))
    differ = [(n, mine[n], theirs[n]) for n in sorted(set(mine) & set(theirs)) if mine[n] != theirs[n]]
    return {"figures": len(set(mine) & set(theirs)), "differ": differ,
            "missing": sorted(set(mine) ^ set(theirs))}


def verdict(summary: Mapping, reference_path: Path = REFERENCE) -> str:
    """One line (more when figures moved) saying whether a run's figures match the reference."""
    if not reference_path.exists():
        return f"no reference figures at {reference_path}: nothing to compare"
    reference = read_json(reference_path)
    if reference.get("profile") != (summary.get("profile") or {}).get("name"):
        return f"not comparable with {reference_path.name}: another profile"
    c = compare(summary, reference)
    if not c["figures"]:
        return f"not comparable with {reference_path.name}: no per-seed figure in common (other seeds or settings?)"
    if not c["differ"] and not c["missing"]:
        return f"matches {reference_path.name} to the digit ({c['figures']} per-seed figures)"
    lines = [f"differs from {reference_path.name} in {len(c['differ'])} of {c['figures']} per-seed figures"
             + (f"; {len(c['missing'])} figures in only one of the two" if c["missing"] else "")]
    lines += [f"  {name}: {a} here, {b} in the reference" for name, a, b in c["differ"][:12]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, help="a pipeline run folder (holds summary.json)")
    ap.add_argument("--write", action="store_true", help=f"write its figures as the reference ({REFERENCE})")
    args = ap.parse_args(argv)
    summary = read_json(args.run_dir / "summary.json")
    if args.write:
        if summary.get("status") != "ok":
            print(f"{args.run_dir}/summary.json: status {summary.get('status')!r}, not a finished run",
                  file=sys.stderr)
            return 1
        write_json_atomic(REFERENCE, reference_of(summary))
        print(f"wrote {REFERENCE}")
        return 0
    print(verdict(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
