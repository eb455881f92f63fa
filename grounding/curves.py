"""The pretraining attempts side by side: each run's training loss and its held-out click accuracy
seeing vs blind, from the runs' `metrics.jsonl`, as one PNG.

    python -m grounding.curves --out grounding/attempts/curves.png runs/grounding/e1 runs/grounding/e5
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from gui_r1_lite.errors import UsageError, run_cli
from gui_r1_lite.runio import read_jsonl


def draw(runs: list[Path], out: Path, cols: int = 4) -> Path:
    """Two panels per run (loss; seeing and blind click accuracy against the step), `cols` runs a
    row, saved to `out`."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(cols, len(runs))
    rows = 2 * math.ceil(len(runs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.2 * rows), squeeze=False, layout="constrained")
    for ax in axes.flat:
        ax.axis("off")
    for i, run in enumerate(runs):
        log = read_jsonl(run / "metrics.jsonl")
        train = [r for r in log if "loss" in r]
        checks = [r for r in log if "seeing" in r]
        top, bottom = axes[2 * (i // cols), i % cols], axes[2 * (i // cols) + 1, i % cols]
        top.axis("on")
        bottom.axis("on")
        top.plot([r["step"] for r in train], [r["loss"] for r in train], lw=1)
        top.set_yscale("log")
        top.set_title(run.name, fontsize=9)
        top.set_ylabel("loss (answer)", fontsize=8)
        for key, colour, style in (("seeing", "C2", "-"), ("blind", "0.4", "--")):
            bottom.plot([r["step"] for r in checks], [100 * r[key] for r in checks], style, marker=".",
                        color=colour, label=key)
        bottom.set_ylim(0, 100)
        bottom.set_xlabel("step", fontsize=8)
        bottom.set_ylabel("held-out click %", fontsize=8)
        bottom.legend(fontsize=7, frameon=False)
        for a in (top, bottom):
            a.tick_params(labelsize=7)
            a.grid(alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=70)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grounding.curves", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="PNG to write")
    p.add_argument("runs", nargs="+", type=Path, help="run folders of python -m grounding.pretrain")
    args = p.parse_args(argv)
    for run in args.runs:
        if not (run / "metrics.jsonl").is_file():
            raise UsageError(f"{run}: no metrics.jsonl there ({os.path.abspath(run)}); pass run folders of "
                             "python -m grounding.pretrain")
    # e2 before e10 (a shell's glob puts e10 first)
    runs = sorted(args.runs, key=lambda r: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", r.name)])
    print(draw(runs, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m grounding.curves"))
