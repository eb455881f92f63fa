#!/usr/bin/env python
"""Merge a trained LoRA adapter into its base model and save one folder that loads with
`AutoModelForImageTextToText.from_pretrained` (no PEFT needed at inference).

    python scripts/merge_adapter.py --base Qwen/Qwen2.5-VL-3B-Instruct --adapter runs/grpo/adapter \\
        --out runs/grpo/merged [--dtype bfloat16]

The work is `gui_r1_lite.training.merge_adapter`; this file only reads the command line.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/merge_adapter.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True,
                    help="base model: hub id or local folder (the one the adapter was trained on)")
    ap.add_argument("--adapter", required=True, help="LoRA adapter folder (e.g. <output_dir>/adapter or a checkpoint)")
    ap.add_argument("--out", required=True, help="folder to write the merged model and processor into")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                    help="dtype of the merged weights (default float32)")
    args = ap.parse_args(argv)

    from gui_r1_lite.training import merge_adapter

    try:
        out = merge_adapter(args.base, args.adapter, args.out, dtype=args.dtype)
    except (OSError, ValueError) as exc:
        print(f"[merge] {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(f"[merge] wrote {out} ({args.base} + {args.adapter}, {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
