"""The pretraining attempts side by side: each run's training loss and its held-out click accuracy
seeing vs blind, from the runs' `metrics.jsonl`, as one PNG.

    python -m grounding.curves --out grounding/attempts/curves.png runs/grounding/e1 runs/grounding/e5
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gui_r1_lite.runio import read_jsonl


def draw(runs: list[Path], out: Path) -> Path:
    """Two panels per run (loss; seeing and blind click accuracy against the step) saved to `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(runs), figsize=(3.2 * len(runs), 5.0), squeeze=False, layout="constrained")
    for col, run in enumerate(runs):
        log = read_jsonl(run / "metrics.jsonl")
        train = [r for r in log if "loss" in r]
        checks = [r for r in log if "seeing" in r]
        ax = axes[0, col]
        ax.plot([r["step"] for r in train], [r["loss"] for r in train], lw=1)
        ax.set_yscale("log")
        ax.set_title(run.name, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("loss (answer tokens)", fontsize=8)
        ax = axes[1, col]
        for key, colour in (("seeing", "C2"), ("blind", "0.5")):
            ax.plot([r["step"] for r in checks], [100 * r[key] for r in checks], marker=".", color=colour, label=key)
        ax.set_ylim(0, 100)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("held-out click acc. %", fontsize=8)
        ax.legend(fontsize=7, frameon=False)
        for a in axes[:, col]:
            a.tick_params(labelsize=7)
            a.grid(alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grounding.curves", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="PNG to write")
    p.add_argument("runs", nargs="+", type=Path, help="run folders of python -m grounding.pretrain")
    args = p.parse_args(argv)
    print(draw(args.runs, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
