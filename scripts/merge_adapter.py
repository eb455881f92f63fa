#!/usr/bin/env python
"""Merge a trained LoRA adapter into its base model and save one folder that loads with
`AutoModelForImageTextToText.from_pretrained` (no PEFT needed at inference).

    python scripts/merge_adapter.py --base Qwen/Qwen2.5-VL-3B-Instruct --adapter runs/grpo/adapter \\
        --out runs/grpo/merged [--dtype bfloat16] [--dequantize]

A QLoRA adapter (quantization: 4bit) was trained against the NF4-rounded base weights. Without
--dequantize it is merged into the full-precision base, which differs slightly from the model that
was trained; --dequantize loads the base in 4-bit as training did, dequantizes it and merges into
those weights (needs bitsandbytes). To evaluate exactly what was trained, load the 4-bit base with
the adapter instead of merging.

The work is `gui_r1_lite.training.merge_adapter`; this file only reads the command line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before torch loads, a --base that is neither a model folder nor a hub id and an --adapter
    folder without its adapter_config.json."""
    from gui_r1_lite.hub import is_hub_id

    base = Path(args.base).expanduser()
    if base.is_dir():
        if not (base / "config.json").is_file():
            ap.error(f"--base {args.base}: no config.json there; pass a saved model folder or a hub id")
    elif base.exists():
        ap.error(f"--base {args.base}: is a file; pass a saved model folder or a hub id")
    elif not is_hub_id(args.base):
        ap.error(f"--base {args.base}: no such folder ({os.path.abspath(base)}), and not a hub id of the form "
                 "owner/name either")
    if not (Path(args.adapter).expanduser() / "adapter_config.json").is_file():
        where = "no adapter_config.json there" if Path(args.adapter).is_dir() else "no such folder"
        ap.error(f"--adapter {args.adapter}: {where}; pass the adapter folder training saved "
                 "(<output_dir>/adapter or a checkpoint)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/merge_adapter.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True,
                    help="base model: hub id or local folder (the one the adapter was trained on)")
    ap.add_argument("--adapter", required=True, help="LoRA adapter folder (e.g. <output_dir>/adapter or a checkpoint)")
    ap.add_argument("--out", required=True, help="folder to write the merged model and processor into")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                    help="dtype of the merged weights (default float32)")
    ap.add_argument("--dequantize", action="store_true",
                    help="for a QLoRA adapter: merge into the dequantized NF4 base it was trained against, "
                         "not the full-precision base (the default)")
    args = ap.parse_args(argv)
    _check_args(ap, args)

    from gui_r1_lite.training import merge_adapter

    try:
        out = merge_adapter(args.base, args.adapter, args.out, dtype=args.dtype, dequantize=args.dequantize)
    except (OSError, ValueError, ImportError) as exc:
        print(f"[merge] {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    base = f"{args.base} dequantized from NF4" if args.dequantize else args.base
    print(f"[merge] wrote {out} ({base} + {args.adapter}, {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
