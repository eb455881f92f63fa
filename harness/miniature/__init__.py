"""GUI-R1 in miniature: does GRPO with the GUI-R1 rule-based reward beat SFT on the same samples,
measured on held-out MiniWoB++ pages, with a tiny Qwen2.5-VL on two CPU cores in minutes?

Design (docs/miniature.md has the details and the figures):

- Data: training on episode seeds 0-24 of `miniwob_train.parquet`; seeds 25-29 are the validation
  split every choice was made on (`--validate`); the held-out file (seeds 1000-1014) is read only by
  the final run. Task mix: `DEFAULT_TASKS`.
- Arms, per seed: `random`, `sft` and `sft_grpo`. Both trained arms start from the same SFT warm
  start, then get the same extra budget (`fair`: prompt visits, or the GRPO arm's seconds): `sft`
  continues SFT, `sft_grpo` runs GRPO. Tuned settings: `SWEEP_GRID`; fixed ones: `FIXED_A_PRIORI`.
- Metrics on the held-out rows: format rate, click accuracy, strict step success; the gain of
  SFT -> GRPO over SFT with a 95 % bootstrap interval (seeds, then episodes) and McNemar's test.
- The blind check: every scored arm again with every screenshot white; an arm that scores as well
  blind answers from the instruction and the layout, not from the screen.
- Reproducible to the digit: every stage runs on `threads` torch threads with deterministic
  algorithms; the seeds run side by side, a process each (`--workers`).

Everything lands under `--out`: `data/`, `seed<N>/<stage>/` (each with `stage.json` when finished:
a rerun skips it) and `miniature.json`.

    python -m harness.miniature --out runs/miniature [--seeds 0,1,2] [--validate] [--workers 2]

The validation sweep and the full study live beside the packages, in `study/`: `python -m study`.
"""

from .report import ARMS, METRICS, WARM, aggregate, arm_results, blind_task_table, miniature_table, per_task_table
from .runner import RESULT_FILE, TRAINED, SeedRun, run_miniature, run_seed, stage_names
from .settings import (
    ALL_TASKS,
    BLIND_CEILING,
    DEFAULT_HELDOUT,
    DEFAULT_TASKS,
    DEFAULT_TRAIN,
    FAIR_MODES,
    FIXED_A_PRIORI,
    LAYOUT_TASKS,
    ONLINE_ARMS,
    RECIPE_PROBE,
    SEEING_TASKS,
    SWEEP_GRID,
    MiniatureSettings,
)
from .splits import best_blind_score, prepare_data, prepared_data, seed_of, select_rows, task_mix, task_of
from .stages import STAGE_FILE, arm_metrics, per_task_click_accuracy

__all__ = [
    "ALL_TASKS", "ARMS", "BLIND_CEILING", "DEFAULT_HELDOUT", "DEFAULT_TASKS", "DEFAULT_TRAIN", "FAIR_MODES",
    "FIXED_A_PRIORI", "LAYOUT_TASKS", "METRICS", "ONLINE_ARMS", "RECIPE_PROBE", "RESULT_FILE", "SEEING_TASKS",
    "STAGE_FILE", "SWEEP_GRID", "TRAINED", "WARM", "MiniatureSettings", "SeedRun", "aggregate", "arm_metrics",
    "arm_results", "best_blind_score", "blind_task_table", "miniature_table", "per_task_click_accuracy",
    "per_task_table", "prepare_data", "prepared_data", "run_miniature", "run_seed", "seed_of", "select_rows",
    "stage_names", "task_mix", "task_of",
]
