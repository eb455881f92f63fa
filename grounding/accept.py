"""The base's acceptance: click accuracy seeing minus blind, paired on rows, with a 95 % bootstrap
interval, on held-out generated pages of the kind it trained on and on the held-out MiniWoB++ file.
Accepted where the interval lies above +10 points.

    OMP_NUM_THREADS=1 python -m grounding.accept --model grounding/base --out grounding/base/acceptance.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gui_r1_lite.data import DataError, load_gui_r1, resolve_files
from gui_r1_lite.errors import UsageError, run_cli
from gui_r1_lite.evaluate import require_positive
from gui_r1_lite.runio import read_json, write_json_atomic

from .pages import PageSettings, generate, kind_counts
from .pretrain import pixels_for

#: Acceptance pages are drawn from seeds no training run or training-time check uses.
ACCEPT_SEED = 2_000_000
MINIWOB_TEST = "data_samples/test/miniwob_test.parquet"


def _settings(model_dir: Path) -> PageSettings:
    """The last stage's page settings recorded beside the model (`pretrain_report.json`)."""
    stage = read_json(model_dir / "pretrain_report.json")["stages"][-1]
    return PageSettings(**{k: tuple(v) if k == "kinds" else v for k, v in stage.items() if k != "steps"})


def _args(argv: list[str] | None) -> argparse.Namespace:
    """The flags, checked before torch loads: a count below 1, a model folder without its pretraining
    record, a MiniWoB++ file that is not there: a usage error naming it."""
    p = argparse.ArgumentParser(prog="python -m grounding.accept", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, type=Path, help="a base folder written by grounding.pretrain")
    p.add_argument("--out", required=True, type=Path, help="JSON file for the figures")
    p.add_argument("--rows", type=int, default=200, help="held-out generated pages")
    p.add_argument("--miniwob", default=MINIWOB_TEST, help="the held-out MiniWoB++ file (only evaluated)")
    args = p.parse_args(argv)
    require_positive({"--rows": args.rows})
    if not (args.model / "pretrain_report.json").is_file():
        raise UsageError(f"--model {args.model}: no pretrain_report.json there ({os.path.abspath(args.model)}); "
                         "pass a base folder written by python -m grounding.pretrain (its model/)")
    try:
        resolve_files(args.miniwob)
    except DataError as exc:
        raise UsageError(f"--miniwob {exc}") from None
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    import torch

    from gui_r1_lite.modeling import load_policy

    from .check import looks

    torch.set_num_threads(1)
    st = _settings(args.model)
    pixels = pixels_for(st.width, st.height)
    policy = load_policy(args.model, lora=None, min_pixels=pixels[0], max_pixels=pixels[1], device="cpu")
    pages = list(generate(st, args.rows, ACCEPT_SEED, prefix="accept"))
    generated, _ = looks(policy, pages, pixels)
    clicks = [s for s in load_gui_r1(args.miniwob).samples if s.gt_action == "click" and len(s.gt_bbox) == 4]
    # min_pixels = max_pixels cannot hold a 160x210 page in multiples of 28 (the processor and
    # geometry.model_image_size then disagree); up to 1.5x the area puts it on the base's token grid
    # (56x56 for the 56 px base).
    miniwob_pixels = (pixels[0], pixels[0] * 3 // 2)
    policy = load_policy(args.model, lora=None, min_pixels=miniwob_pixels[0], max_pixels=miniwob_pixels[1],
                         device="cpu")
    miniwob, _ = looks(policy, clicks, miniwob_pixels)
    result = {"model": str(args.model), "pixels": list(pixels),
              "generated": {"rows_per_kind": kind_counts(pages), **generated},
              "miniwob_test": {"file": args.miniwob, "click_rows": len(clicks), "pixels": list(miniwob_pixels),
                               **miniwob}}
    for part in ("generated", "miniwob_test"):
        result[part]["accepted"] = result[part]["looks"]["ci95"][0] > 0.10
    write_json_atomic(args.out, result)
    for part in ("generated", "miniwob_test"):
        r = result[part]
        lo, hi = (100 * v for v in r["looks"]["ci95"])
        print(f"{part}: seeing {100 * r['seeing']:.1f} %, blind {100 * r['blind']:.1f} %, looks "
              f"{100 * r['looks']['mean']:+.1f} [{lo:+.1f}, {hi:+.1f}] "
              f"(n {r['looks']['n']}), accepted: {r['accepted']}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m grounding.accept"))
