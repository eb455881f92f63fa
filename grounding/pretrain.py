"""Pretrain the miniature's base: the stand-in Qwen2.5-VL (`gui_r1_lite.tiny.build_tiny_model`, the
real configuration with sizes scaled) trained from random weights on generated grounding pages
(`grounding.pages`) in stages (a curriculum), every weight, the vision tower included. Writes the
model folder (loads with the same `from_pretrained` calls as the 3B), `metrics.jsonl` (loss, and
held-out click accuracy seeing vs blind) and `data_report.json`.

    OMP_NUM_THREADS=1 python -m grounding.pretrain --out runs/grounding/base \\
        --stage 400:4:1:3:colour --stage 2000:0:2:4:colour,shape,colour_shape
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from gui_r1_lite.errors import run_cli
from gui_r1_lite.evaluate import require_positive
from gui_r1_lite.runio import write_json_atomic

from .pages import KINDS, PageSettings, generate, kind_counts

#: Seeds of held-out pages start here; training pages are drawn from the run's own seed stream.
HELD_OUT_SEED = 1_000_000


@dataclass(frozen=True)
class Stage:
    """A stretch of the curriculum: `steps` steps of pages with these settings."""

    steps: int
    settings: PageSettings


def parse_stage(text: str, base: PageSettings) -> Stage:
    """`STEPS:GRID:MIN:MAX:KIND[,KIND...][:GRADIENT]` (e.g. `400:4:1:3:colour:0.5`) -> a `Stage` of
    `base`'s page size and header; ArgumentTypeError says what is wrong (the caller names the flag)."""
    parts = text.split(":")
    if len(parts) not in (5, 6):
        raise argparse.ArgumentTypeError("expected STEPS:GRID:MIN:MAX:KINDS[:GRADIENT]")
    try:
        steps, grid, lo, hi = (int(p) for p in parts[:4])
        gradient = float(parts[5]) if len(parts) == 6 else 0.0
        return Stage(steps, replace(base, grid=grid, min_elements=lo, max_elements=hi,
                                    kinds=tuple(parts[4].split(",")), gradient=gradient))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m grounding.pretrain", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for the model, metrics.jsonl and data_report.json")
    p.add_argument("--stage", action="append", default=[],
                   help="STEPS:GRID:MIN:MAX:KINDS, repeatable, in order (GRID 0: anywhere); kinds: " + ",".join(KINDS))
    p.add_argument("--width", type=int, default=112, help="page width in pixels (a multiple of 28)")
    p.add_argument("--height", type=int, default=112, help="page height in pixels (a multiple of 28)")
    p.add_argument("--size", type=int, default=18, help="element side in pixels")
    p.add_argument("--header", action="store_true", help="a MiniWoB++-like instruction band across the top")
    p.add_argument("--tint", type=float, default=0.0,
                   help="diagnostic: tint the whole page, elements included, by place (0: none)")
    p.add_argument("--high", type=float, default=0.0,
                   help="share of pages posed as a step of a multi-step task: the full action space in the "
                        "prompt, half of them with a one-step history (0: none; MiniWoB++'s multi-step tasks)")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vision-hidden", type=int, default=64)
    p.add_argument("--vision-depth", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--vision-lr-scale", type=float, default=1.0,
                   help="learning rate of the vision tower's patch embedding and blocks, times --lr (0: frozen)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--short-prompt-steps", type=int, default=0,
                   help="the first N steps show only the instruction as text (then the GUI-R1 prompt)")
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--eval-rows", type=int, default=60, help="held-out pages per check (kinds of the last stage)")
    p.add_argument("--init", default=None, help="start from this model folder instead of random weights")
    p.add_argument("--merger-scale", type=float, default=1.0,
                   help="multiply the vision merger's output layer by this at the start (louder page content)")
    args = p.parse_args(argv)
    require_positive({f"--{k.replace('_', '-')}": getattr(args, k) for k in (
        "width", "height", "size", "hidden", "layers", "vision_hidden", "vision_depth", "batch", "eval_rows")})
    try:
        pixels_for(args.width, args.height)
    except ValueError as exc:
        p.error(f"--width {args.width} --height {args.height}: {exc}")
    if not 0.0 <= args.high <= 1.0:
        p.error(f"--high must be a share between 0 and 1, got {args.high}")
    base = PageSettings(width=args.width, height=args.height, size=args.size, header=args.header,
                        tint=args.tint, high=args.high)
    args.stages = []
    for text in args.stage:
        try:
            args.stages.append(parse_stage(text, base))
        except argparse.ArgumentTypeError as exc:
            p.error(f"--stage {text!r}: {exc}")
        if args.stages[-1].steps < 1:
            p.error(f"--stage {text!r}: STEPS must be at least 1")
    args.stages = args.stages or [Stage(1000, base)]
    for flag in ("warmup", "eval_every", "short_prompt_steps"):
        if getattr(args, flag) < 0:
            p.error(f"--{flag.replace('_', '-')} must be 0 or more, got {getattr(args, flag)}")
    if args.init is not None and not Path(args.init, "config.json").is_file():
        p.error(f"--init {args.init}: no model folder there ({os.path.abspath(args.init)} holds no config.json)")
    return args


def pixels_for(width: int, height: int) -> tuple[int, int]:
    """Processor resize bounds that keep a `width` x `height` page at its own size (multiples of 28)."""
    if width % 28 or height % 28:
        raise ValueError(f"page size {width}x{height} must be multiples of 28 (the processor's patch x merge)")
    return width * height, width * height


def merger_output(model):
    """The last Linear of the vision merger (what writes the image tokens the decoder reads)."""
    from gui_r1_lite.lora import vision_tower

    return vision_tower(model).merger.mlp[-1]


def image_token_spread(policy, samples, pixels: tuple[int, int]) -> dict:
    """RMS of the image tokens the vision tower hands the decoder, and their spread across tokens:
    a spread near 0 means every image token looks alike (the page's content is lost)."""
    import torch

    from gui_r1_lite.lora import vision_tower

    from .loop import encode_batch

    batch = encode_batch(policy.processor, samples, pixels)
    with torch.no_grad():
        out = vision_tower(policy.model)(batch["pixel_values"], grid_thw=batch["image_grid_thw"])
    tokens = out if torch.is_tensor(out) else out.pooler_output
    return {"image_rms": float(tokens.pow(2).mean().sqrt()), "image_spread": float(tokens.std(0).mean())}


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)  # before torch loads: a bad flag costs nothing
    import torch

    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import build_tiny_model

    from .check import looks
    from .loop import train_loop

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pixels = pixels_for(args.width, args.height)
    source = args.init or build_tiny_model(
        out / "init", args.seed, hidden_size=args.hidden, num_layers=args.layers, vision_hidden=args.vision_hidden,
        vision_depth=args.vision_depth, min_pixels=pixels[0], max_pixels=pixels[1])
    policy = load_policy(source, lora=None, train_vision=True, min_pixels=pixels[0], max_pixels=pixels[1],
                         device="cpu")
    if args.merger_scale != 1.0:
        with torch.no_grad():
            merger_output(policy.model).weight.mul_(args.merger_scale)
    last = args.stages[-1].settings
    held_out = list(generate(last, args.eval_rows, HELD_OUT_SEED, prefix="held-out"))
    bounds, at = [], 0
    for stage in args.stages:
        at += stage.steps
        bounds.append((at, stage.settings))
    counts: dict[str, int] = {}

    def draw(step: int, rng: random.Random):
        st = next(s for end, s in bounds if step < end)
        batch = list(generate(st, args.batch, rng.randrange(HELD_OUT_SEED), prefix="train"))
        for k, v in kind_counts(batch).items():
            counts[k] = counts.get(k, 0) + v
        return batch

    metrics = (out / "metrics.jsonl").open("a")

    def log(rec: dict) -> None:
        metrics.write(json.dumps(rec) + "\n")
        metrics.flush()
        print(json.dumps({k: v for k, v in rec.items() if k not in ("by_group",)}), flush=True)

    def evaluate(step: int) -> dict:
        summary, _ = looks(policy, held_out, pixels)
        return {**summary, **image_token_spread(policy, held_out[:8], pixels)}

    started = time.monotonic()
    train_loop(policy.model, policy.processor, draw, steps=at, lr=args.lr, warmup=args.warmup,
               weight_decay=args.weight_decay, pixels=pixels, seed=args.seed, log=log, evaluate=evaluate,
               eval_every=args.eval_every, short_until=args.short_prompt_steps,
               vision_lr_scale=args.vision_lr_scale)
    model_dir = out / "model"
    # weights stored in bf16: half the bytes of the repository's copy (the GPU check carries the whole tree
    # within 64 MiB); on the CPU they load back as fp32, so only the last bits of each weight are lost
    policy.model.to(torch.bfloat16).save_pretrained(model_dir)
    policy.model.to(torch.float32)
    policy.processor.save_pretrained(model_dir)
    report = {
        "train_rows_per_kind": counts, "train_rows": sum(counts.values()), "steps": at, "batch": args.batch,
        "held_out_rows_per_kind": kind_counts(held_out), "seconds": round(time.monotonic() - started, 1),
        "stages": [{"steps": s.steps, **{k: getattr(s.settings, k) for k in
                                         ("width", "height", "size", "grid", "min_elements", "max_elements", "kinds",
                                          "gradient", "header", "tint", "high")}}
                   for s in args.stages],
        "args": {k: v for k, v in vars(args).items() if k != "stages"}}
    write_json_atomic(out / "data_report.json", report)
    write_json_atomic(model_dir / "pretrain_report.json", report)  # travels with the model (grounding.accept)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="python -m grounding.pretrain"))
