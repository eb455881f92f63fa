"""`make run`'s figures against the ones shipped in `docs/results/make_run_reference.json`.

The miniature pins its threads and the math libraries' dispatch (`parallel`), so a `cpu-mini` run with
the default settings gives every per-seed figure of a reference to the digit on the processor that made
it. Processors differ in their float kernels, and GRPO's sampling turns a last-bit difference into other
answers (an AMD EPYC gave other GRPO figures than the Intel Xeon that made the first reference, the SFT
arms' the same), so each processor model has its own reference: `make_run_reference.json` (the one the
docs quote) and `make_run_reference.<processor>.json` beside it. A figure is every value of a `per_seed`
list under the summary's `miniature`, `gain` and `online` blocks, compared as a percentage with one
decimal, as the README reports it.

    python -m harness.miniature.reference RUN_DIR [--write]   # compare a run (or write the reference)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gui_r1_lite.errors import RunFailed, UsageError, run_cli
from gui_r1_lite.runio import read_json, write_json_atomic

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "results" / "make_run_reference.json"
#: Where a reference made on another processor than `REFERENCE`'s goes: `make_run_reference.<slug>.json`.
PROCESSOR_REFERENCES = "make_run_reference.*.json"
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


def reference_for(cpu: str, main: Path | None = None) -> Path | None:
    """The reference made on processor `cpu` (`main`, default `REFERENCE`, or one beside it), or None."""
    main = main or REFERENCE
    for path in [main, *sorted(main.parent.glob(PROCESSOR_REFERENCES))]:
        if path.exists() and (read_json(path).get("machine") or {}).get("cpu") == cpu:
            return path
    return None


def reference_path_to_write(cpu: str, main: Path | None = None) -> Path:
    """Where `--write` puts a reference made on `cpu`: the one already made there, `main` when it is not
    there yet, else a new `make_run_reference.<slug of cpu>.json` beside it."""
    main = main or REFERENCE
    if (found := reference_for(cpu, main)) is not None or not main.exists():
        return found or main
    slug = "".join(c if c.isalnum() else "-" for c in cpu.lower()).strip("-")
    return main.parent / f"make_run_reference.{slug}.json"


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


def verdict(summary: Mapping, reference_path: Path | None = None) -> str:
    """One line (more when figures moved) saying whether a run's figures match the reference made on this
    processor (or `reference_path`)."""
    if reference_path is None:
        cpu = machine()["cpu"]
        reference_path = reference_for(cpu)
        if reference_path is None:
            return (f"no reference made on this processor ({cpu}) to compare with: figures match to the digit "
                    f"only on the processor that made them (float kernels differ); write one with "
                    f"`python -m harness.miniature.reference RUN_DIR --write`")
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
    ap = argparse.ArgumentParser(prog="python -m harness.miniature.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, help="a pipeline run folder (holds summary.json)")
    ap.add_argument("--write", action="store_true",
                    help=f"write its figures as this processor's reference ({REFERENCE.name}, or one beside it)")
    args = ap.parse_args(argv)
    if not (args.run_dir / "summary.json").is_file():
        raise UsageError(f"{args.run_dir}: no summary.json there ({os.path.abspath(args.run_dir)}); pass the "
                         "folder of a pipeline run (make run's --out)")
    summary = read_json(args.run_dir / "summary.json")
    if args.write:
        if summary.get("status") != "ok":
            raise RunFailed(f"{args.run_dir}/summary.json: status {summary.get('status')!r}, not a finished run")
        path = reference_path_to_write(machine()["cpu"])
        write_json_atomic(path, reference_of(summary))
        print(f"wrote {path}")
        return 0
    print(verdict(summary))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m harness.miniature.reference"))
