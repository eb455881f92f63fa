"""GUI-R1 in miniature: does GRPO with the GUI-R1 rule-based reward beat SFT on the same samples,
measured on held-out MiniWoB++ pages, with a tiny Qwen2.5-VL on two CPU cores in minutes?

Design (the README's miniature section has the figures):

- Data (`splits`): MiniWoB++ training pages (`miniwob_train.parquet`, seeds 0-29). Training uses
  seeds `train_seeds` (0-24); seeds 25-29 are the validation split every choice below was made on
  (`--validate`); the held-out file (seeds 1000-1014) is read only by the final run.
- Task mix: `DEFAULT_TASKS`, see its comment for which tasks and why.
- Arms, per seed (the seed sets the tiny model's weights and tokenizer and the training order):
  `random` (`evaluate.RandomBaseline`), `sft` and `sft_grpo`. Both trained arms start from the
  SAME SFT warm start (`warm`, `warm_steps` steps), then each gets the same extra budget on the
  same training rows: `sft` continues SFT, `sft_grpo` runs GRPO with the `rewards` of
  `rewards.REWARDS`. Each arm's learning rate is its best on the validation split
  (`VALIDATION_RUNS`); the held-out file played no part in any choice.
- Fair compute (`fair`): "visits" (default) gives both arms the same number of prompt visits
  after the warm start (`extra_prompts`; a GRPO visit is one prompt with `num_generations`
  sampled answers, an SFT visit one prompt with its target answer), i.e. both see the same
  training rows equally often, as in the paper's SFT-vs-RFT comparison on one data set. "seconds"
  instead gives SFT continuation as many steps as fit in the GRPO arm's measured training time
  (GRPO steps cost more: they generate). Both arms' prompt visits and seconds are recorded
  either way (`compute` in the result).
- Metrics on the held-out rows (`report`): `format_rate` (completions whose answer parses),
  `click_accuracy` (`metrics.grounding_metrics` overall: point strictly inside the box, over
  rows with a box target) and `strict_step_success` (`metrics.action_metrics`); mean, sample
  std (ddof 1) and per-seed values over the seeds.

Everything lands under `out_dir`: `data/` (the filtered files), `seed<N>/<arm>_train/` (models,
`metrics.jsonl`) and `seed<N>/<arm>_eval/` (predictions), each with `stage.json` when the stage
finished (`stages`), and `miniature.json`. A rerun skips every stage whose `stage.json` exists; an
interrupted training stage starts over.

    python -m gui_r1_lite.miniature --out runs/miniature [--seeds 0,1,2] [--validate]
"""

from .report import ARMS, METRICS, WARM, aggregate, arm_results, miniature_table
from .runner import RESULT_FILE, TRAINED, SeedRun, run_miniature, run_seed
from .settings import (
    ALL_TASKS,
    DEFAULT_HELDOUT,
    DEFAULT_TASKS,
    DEFAULT_TRAIN,
    FAIR_MODES,
    LAYOUT_TASKS,
    VALIDATION_RUNS,
    MiniatureSettings,
)
from .splits import prepare_data, seed_of, select_rows, task_mix, task_of
from .stages import STAGE_FILE, arm_metrics, per_task_click_accuracy

__all__ = [
    "ALL_TASKS", "ARMS", "DEFAULT_HELDOUT", "DEFAULT_TASKS", "DEFAULT_TRAIN", "FAIR_MODES", "LAYOUT_TASKS",
    "METRICS", "RESULT_FILE", "STAGE_FILE", "TRAINED", "VALIDATION_RUNS", "WARM", "MiniatureSettings", "SeedRun",
    "aggregate", "arm_metrics", "arm_results", "miniature_table", "per_task_click_accuracy", "prepare_data",
    "run_miniature", "run_seed", "seed_of", "select_rows", "task_mix", "task_of",
]
