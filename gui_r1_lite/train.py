"""The training command line; the work is `gui_r1_lite.training`.

    python -m gui_r1_lite.train --config configs/grpo_qwen2_5_vl_3b_qlora.yaml --max_steps 50
    accelerate launch --config_file configs/accelerate/ddp.yaml -m gui_r1_lite.train --config ...

Metrics of every logging step go to `<output_dir>/metrics.jsonl`; checkpoints hold the LoRA
adapter and optimiser state, so `--resume` continues a run that was killed.
"""

from __future__ import annotations

import sys

from .runio import is_main_process
from .training import ConfigError, TrainConfig, train


def main(argv: list[str] | None = None) -> int:
    try:
        cfg = TrainConfig.from_cli(argv)
        result = train(cfg)
    except ConfigError as exc:
        print(f"[train] configuration error: {exc}", file=sys.stderr)
        return 2
    if is_main_process():
        print(f"[train] done: {result.global_step} steps; adapter in {result.adapter_dir}; "
              f"metrics in {result.metrics_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
