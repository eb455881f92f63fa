"""Generated pages as the miniature's data files: a task mix where the blind policy is weak, written in
the GUI-R1 schema with row ids `generated/<kind>/seed<N>/step<k>`, so the miniature's split (training
seeds 0-24, validation 25-29, held-out seeds 1000 and up) and per-task tables read them like the
MiniWoB++ captures.

    python -m grounding.tasks --out data/generated --width 168 --height 224 --size 28 --header \\
        --pages 8:1:3:colour --train-per-seed 40 --heldout-seeds 15 --heldout-per-seed 14

Each kind of `--pages GRID:MIN:MAX:KINDS` is a task; `data_report.json` records the rows per task and each
task's best blind score on the held-out rows (always answering the centre of that task's most common target
box: what a policy that ignores the page can at best reach by place alone).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from gui_r1_lite.data import Sample, write_gui_r1
from gui_r1_lite.errors import UsageError, run_cli
from gui_r1_lite.evaluate import require_positive
from gui_r1_lite.geometry import point_in_box
from gui_r1_lite.runio import write_json_atomic

from .pages import KINDS, PageSettings, page_sample
from .pretrain import parse_stage

TRAIN_SEEDS = range(0, 30)   # 0-24 training, 25-29 validation (the miniature's split)
HELDOUT_SEED_START = 1000


def pages(st: PageSettings, seeds: Sequence[int], per_seed: int) -> list[Sample]:
    """`per_seed` pages of each kind for every seed, drawn from (seed, kind) alone: the same arguments
    give the same pages, and no page of one seed depends on another seed."""
    rows = []
    for seed in seeds:
        for kind in st.kinds:
            rng = random.Random(f"{seed}/{kind}")
            rows += [page_sample(rng, st, kind, f"generated/{kind}/seed{seed}/step{k}") for k in range(per_seed)]
    return rows


def best_blind(rows: Sequence[Sample]) -> dict[str, float]:
    """Per task (kind), the click accuracy of always answering the centre of its most common target box."""
    out = {}
    for kind in sorted({s.group for s in rows}):
        own = [s for s in rows if s.group == kind]
        x1, y1, x2, y2 = Counter(s.gt_bbox for s in own).most_common(1)[0][0]
        point = ((x1 + x2) / 2, (y1 + y2) / 2)
        out[kind] = sum(point_in_box(point, s.gt_bbox, inclusive=True) for s in own) / len(own)
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m grounding.tasks", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for train.parquet, heldout.parquet and data_report.json")
    p.add_argument("--pages", required=True, help="GRID:MIN:MAX:KINDS (GRID 0: anywhere); kinds: " + ",".join(KINDS))
    p.add_argument("--width", type=int, default=168)
    p.add_argument("--height", type=int, default=224)
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--header", action="store_true", help="a MiniWoB++-like instruction band across the top")
    p.add_argument("--train-per-seed", type=int, default=40, help="pages per kind and training/validation seed")
    p.add_argument("--heldout-seeds", type=int, default=15)
    p.add_argument("--heldout-per-seed", type=int, default=14)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    require_positive({"--width": args.width, "--height": args.height, "--size": args.size,
                      "--train-per-seed": args.train_per_seed, "--heldout-seeds": args.heldout_seeds,
                      "--heldout-per-seed": args.heldout_per_seed})
    base = PageSettings(width=args.width, height=args.height, size=args.size, header=args.header)
    if args.pages.count(":") != 3:
        raise UsageError(f"--pages {args.pages!r}: expected GRID:MIN:MAX:KINDS")
    try:  # the pretraining's stage format, without its step count
        st = parse_stage(f"0:{args.pages}", base).settings
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--pages {args.pages!r}: {exc}") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = pages(st, TRAIN_SEEDS, args.train_per_seed)
    heldout = pages(st, range(HELDOUT_SEED_START, HELDOUT_SEED_START + args.heldout_seeds), args.heldout_per_seed)
    write_gui_r1(train, out / "train.parquet", schema="train")
    write_gui_r1(heldout, out / "heldout.parquet", schema="benchmark")
    write_json_atomic(out / "data_report.json", {
        "pages": {k: getattr(st, k) for k in ("width", "height", "size", "header", "grid", "min_elements",
                                              "max_elements", "kinds")},
        "train_rows_per_task": dict(Counter(s.group for s in train)),
        "heldout_rows_per_task": dict(Counter(s.group for s in heldout)),
        "best_blind_heldout": best_blind(heldout), "best_blind_train": best_blind(train)})
    print(f"{len(train)} training rows, {len(heldout)} held-out rows in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m grounding.tasks"))
