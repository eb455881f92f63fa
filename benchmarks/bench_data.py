"""Rows per second for load + validate + resize + convert (TRL training rows) on data_samples/,
one process. Prints the median of several passes.

    python benchmarks/bench_data.py [--data data_samples] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from gui_r1_lite.data import DataError, load_gui_r1, resolve_files, to_train_rows
from gui_r1_lite.profiles import get_profile

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT / "data_samples"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    try:
        resolve_files(args.data)
    except DataError as exc:
        ap.error(f"--data {exc}")
    for profile in ("cpu-mini", "gpu-3b"):
        p = get_profile(profile)
        load_rates, total_rates = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            ds = load_gui_r1(args.data)
            t1 = time.perf_counter()
            rows = to_train_rows(ds.samples, p.min_pixels, p.max_pixels)
            t2 = time.perf_counter()
            load_rates.append(len(ds) / (t1 - t0))
            total_rates.append(len(rows) / (t2 - t0))
        print(f"{profile:8s} pixels [{p.min_pixels:,}, {p.max_pixels:,}]: {len(ds)} rows "
              f"from {len(ds.report.files)} files; "
              f"load+validate {statistics.median(load_rates):7.1f} rows/s; "
              f"load+validate+resize+convert {statistics.median(total_rates):7.1f} rows/s (median of {args.rounds})")


if __name__ == "__main__":
    main()
