"""Evaluation speed: metric computation (records/s over synthetic prediction records) and
`evaluate.predict` throughput (rows/s) of the tiny model on CPU at several batch sizes.

    python benchmarks/bench_eval.py [--records 100000] [--rows 32] [--max-new-tokens 32]

Metrics: median of `--rounds` passes of `metrics.summarize`. Predict: one run per batch size;
the median over batches of rows/s of generation alone, and the run's overall rows/s (image
resizing, generation, parsing and writing included).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gui_r1_lite import evaluate, metrics  # noqa: E402


def synthetic_records(n: int, seed: int = 0) -> list[dict]:
    """A mix like an action benchmark's: clicks on boxes, long presses on points, typing,
    scrolling, plain actions; a tenth unreadable."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        w, h = rng.choice([(1080, 2400), (1920, 1080), (1280, 800)])
        kind = rng.random()
        if kind < 0.5:
            x, y = rng.uniform(0, w - 100), rng.uniform(0, h - 50)
            gt_action, box, text = "click", [x, y, x + rng.uniform(10, 100), y + rng.uniform(10, 50)], "no input text"
        elif kind < 0.6:
            gt_action, box, text = "long_press", [rng.uniform(0, w), rng.uniform(0, h)], "no input text"
        elif kind < 0.75:
            gt_action, box, text = "type", [-100.0, -100.0], rng.choice(["hello world", "pizza near me", "Berlin"])
        elif kind < 0.85:
            gt_action, box, text = "scroll", [-100.0, -100.0], rng.choice(["up", "down"])
        else:
            gt_action, box, text = rng.choice(["press_back", "wait", "complete"]), [-100.0, -100.0], "no input text"
        unreadable = rng.random() < 0.1
        out.append({
            "id": str(i), "group": rng.choice(["android", "web", "desktop"]), "ui_type": rng.choice(["text", "icon"]),
            "gt_action": gt_action, "gt_bbox": box, "image_size": [w, h], "gt_input_text": text,
            "pred_action": None if unreadable else rng.choice([gt_action, "click", "type"]),
            "pred_coord": None if unreadable else [rng.uniform(0, w), rng.uniform(0, h)],
            "pred_input_text": None if unreadable else rng.choice([text, "hello", "no input text"]),
            "parse_error": "not exactly <think>…</think> <answer>…</answer>" if unreadable else None,
        })
    return out


class Timed:
    """Wraps a completer and keeps the seconds of each `complete` call."""

    def __init__(self, inner):
        self.inner, self.name, self.seconds = inner, inner.name, []

    def complete(self, rows, images, keys, max_new_tokens):
        t0 = time.perf_counter()
        out = self.inner.complete(rows, images, keys, max_new_tokens)
        self.seconds.append((time.perf_counter() - t0, len(rows)))
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=32, help="rows per predict run")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--batch-sizes", default="1,4,16")
    args = ap.parse_args()
    counts = {"--records": args.records, "--rounds": args.rounds, "--rows": args.rows,
              "--max-new-tokens": args.max_new_tokens}
    for flag, value in counts.items():
        if value < 1:
            ap.error(f"{flag} must be at least 1, got {value}")
    try:
        batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        batch_sizes = []
    if not batch_sizes or min(batch_sizes) < 1:
        ap.error(f"--batch-sizes must be whole numbers of at least 1 separated by commas (e.g. 1,4,16), "
                 f"got {args.batch_sizes!r}")

    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    records = synthetic_records(args.records)
    rates = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        metrics.summarize(records, "synthetic")
        rates.append(len(records) / (time.perf_counter() - t0))
    print(f"metrics.summarize: {statistics.median(rates):,.0f} records/s "
          f"(median of {args.rounds} passes over {len(records):,} synthetic records)")

    from gui_r1_lite.data import load_gui_r1, to_eval_rows
    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS, build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = ROOT / "data_samples" / "test"
        if not list(data.glob("*.parquet")):
            from tests.helpers import write_benchmark_files

            data = tmp / "data"
            write_benchmark_files(data)
        samples = load_gui_r1(data).samples
        samples = (samples * (args.rows // max(1, len(samples)) + 1))[: args.rows]
        rows = to_eval_rows(samples, TINY_MIN_PIXELS, TINY_MAX_PIXELS)
        sizes = sorted({r.model_size for r in rows})
        print(f"predict: {len(rows)} rows from {data}, model frames {sizes[:3]}{'…' if len(sizes) > 3 else ''}, "
              f"max_new_tokens {args.max_new_tokens}, tiny Qwen2.5-VL on CPU, greedy")
        policy = load_policy(build_tiny_model(tmp / "tiny"), lora=None, min_pixels=TINY_MIN_PIXELS,
                             max_pixels=TINY_MAX_PIXELS, device="cpu")
        warm = evaluate.ModelCompleter(policy)
        evaluate.predict(warm, rows[:2], tmp / "warm.jsonl", batch_size=2, max_new_tokens=4, progress=False)
        for bs in batch_sizes:
            timed = Timed(evaluate.ModelCompleter(policy))
            t0 = time.perf_counter()
            # a wrapped completer does not expose the processor: pass its bounds
            evaluate.predict(timed, rows, tmp / f"bs{bs}.jsonl", batch_size=bs, max_new_tokens=args.max_new_tokens,
                      min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS, progress=False)
            total = time.perf_counter() - t0
            per_batch = statistics.median(n / s for s, n in timed.seconds)
            print(f"  batch {bs:>2}: {per_batch:6.1f} rows/s generating (median of {len(timed.seconds)} batches), "
                  f"{len(rows) / total:6.1f} rows/s overall")


if __name__ == "__main__":
    main()
