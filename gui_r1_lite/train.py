"""The training command line; the work is `gui_r1_lite.training`.

    python -m gui_r1_lite.train --config configs/grpo_qwen2_5_vl_3b_qlora.yaml --max_steps 50
    accelerate launch --config_file configs/accelerate/ddp.yaml -m gui_r1_lite.train --config ...

Metrics go to `<output_dir>/metrics.jsonl`; `--resume` continues a killed run from its newest
checkpoint. A settings error is one line on stderr and exit code 2; `--debug` adds the traceback.
"""

from __future__ import annotations

import sys

from .errors import run_cli
from .runio import is_main_process
from .training import TrainConfig, train


def run(argv: list[str] | None = None) -> int:
    """Parse the command line, train, and say where the results are."""
    result = train(TrainConfig.from_cli(argv))
    if is_main_process():
        print(f"[train] done: {result.global_step} steps; adapter in {result.adapter_dir}; "
              f"metrics in {result.metrics_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`run` with errors a person can act on as one line (exit 2: the settings, 1: a failed run)."""
    return run_cli(run, argv, prog="train")


if __name__ == "__main__":
    sys.exit(main())
