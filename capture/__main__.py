"""Command line: regenerate the shipped samples from real software.

    python -m capture web|mobile|desktop|miniwob|all --out data_samples
    python -m capture miniwob --out DIR --seeds 0-29 --test-seeds 1000-1014
    python -m capture check data_samples      # validate the files in a folder
    python -m capture preview data_samples/test/realgui_test.parquet --out DIR

(from the repository root)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import CaptureDependencyError, check_file, draw_box, read_rows


def parse_seeds(text: str) -> list[int]:
    """"0-29", "3,5,7" or "0-9,100-104" -> a sorted list of ints."""
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise argparse.ArgumentTypeError(f"empty seed range {part!r}")
            seeds.update(range(lo, hi + 1))
        else:
            seeds.add(int(part))
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}")
    return sorted(seeds)


def _run_source(source: str, args) -> dict:
    if source == "web" or source == "mobile":
        from . import web

        return web.write(args.out, source)
    if source == "desktop":
        from . import desktop

        return desktop.write(args.out)
    if source == "miniwob":
        from . import miniwob

        return miniwob.write(args.out, tasks=args.tasks, train_seeds=args.seeds or miniwob.TRAIN_SEEDS,
                             test_seeds=args.test_seeds or miniwob.TEST_SEEDS)
    raise ValueError(source)


def _check_args(p: argparse.ArgumentParser, args) -> None:
    """Refuse, naming it, what the command would fail on later or silently ignore: a `--limit` below 1,
    paths given to a capture, a preview without files, a path that is not there, a folder to check
    without parquet files, unknown MiniWoB tasks, training seeds that are held-out seeds too."""
    if args.limit < 1:
        p.error(f"--limit must be at least 1 (rows per file to preview), got {args.limit}")
    if args.source not in ("check", "preview"):
        if args.paths:
            p.error(f"{args.source} takes no paths, got {' '.join(args.paths)} (the output folder is --out)")
    elif args.source == "preview" and not args.paths:
        p.error("preview needs parquet files to draw, e.g. data_samples/test/realgui_test.parquet")
    paths = args.paths or (["data_samples"] if args.source == "check" else [])
    missing = [path for path in paths if not Path(path).exists()]
    if missing:
        p.error(f"no such file or folder: {', '.join(missing)}")
    if args.source == "preview":
        folders = [path for path in paths if not Path(path).is_file()]
        if folders:
            p.error(f"preview draws parquet files, not folders: {', '.join(folders)}")
    if args.source == "check":
        for path in map(Path, paths):
            if path.is_dir() and not any(path.rglob("*.parquet")):
                p.error(f"{path}: no parquet files to check")
    if args.source in ("miniwob", "all"):
        from . import miniwob

        unknown = [t for t in args.tasks or [] if t not in miniwob.TASKS]
        if unknown:
            p.error(f"--tasks: unknown MiniWoB tasks {' '.join(unknown)}; known: {' '.join(sorted(miniwob.TASKS))}")
        train, test = args.seeds or miniwob.TRAIN_SEEDS, args.test_seeds or miniwob.TEST_SEEDS
        overlap = sorted(set(train) & set(test))
        if overlap:
            p.error(f"--seeds and --test-seeds overlap ({', '.join(map(str, overlap[:10]))}): a held-out episode "
                    "must not be a training one")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m capture", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", choices=["web", "mobile", "desktop", "miniwob", "all", "check", "preview"])
    p.add_argument("paths", nargs="*", help="check: folders or files to validate; preview: parquet files")
    p.add_argument("--out", default="data_samples", help="output folder (gets train/ and test/)")
    p.add_argument("--seeds", type=parse_seeds, help="miniwob training seeds, e.g. 0-29")
    p.add_argument("--test-seeds", type=parse_seeds, help="miniwob held-out seeds, e.g. 1000-1014")
    p.add_argument("--tasks", nargs="+", help="miniwob tasks (default: all in harness.online.miniwob.TASKS)")
    p.add_argument("--limit", type=int, default=12, help="preview: rows per file")
    args = p.parse_args(argv)
    _check_args(p, args)

    if args.source == "check":
        files = []
        for path in map(Path, args.paths or ["data_samples"]):
            files += sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
        problems = [m for f in files for m in check_file(f)]
        for m in problems:
            print(m, file=sys.stderr)
        print(f"checked {len(files)} files: {len(problems)} problems")
        return 1 if problems else 0
    if args.source == "preview":
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for f in map(Path, args.paths):
            for r in read_rows(f)[: args.limit]:
                box = r["gt_bbox"] if len(r["gt_bbox"]) == 4 else None
                if box is not None and f.parent.name == "train":
                    from .common import png_size

                    w, h = png_size(r["image"]["bytes"])
                    box = [box[0] * w, box[1] * h, box[2] * w, box[3] * h]
                name = r["id"].replace("/", "_") + ".png"
                draw_box(r["image"]["bytes"], box, f"{r['gt_action']}: {r['instruction']}").save(out / name)
        print(f"previews in {out}")
        return 0

    sources = ["web", "mobile", "desktop", "miniwob"] if args.source == "all" else [args.source]
    try:
        for source in sources:
            report = _run_source(source, args)
            print(json.dumps({source: report}, indent=1, default=str))
    except CaptureDependencyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
