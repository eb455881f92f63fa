"""GUI-R1 in miniature: does GRPO with the GUI-R1 rule-based reward beat SFT on the same samples,
measured on held-out MiniWoB++ pages, with a tiny Qwen2.5-VL on two CPU cores in minutes?

Design (docs/miniature.md has the figures):

- Data (`splits`): MiniWoB++ training pages (`miniwob_train.parquet`, seeds 0-29). Training uses
  seeds `train_seeds` (0-24); seeds 25-29 are the validation split every choice below was made on
  (`--validate`); the held-out file (seeds 1000-1014) is read only by the final run.
- Task mix: `DEFAULT_TASKS`, see its comment for which tasks and why.
- Arms, per seed (the seed sets the tiny model's weights and tokenizer and the training order):
  `random` (`evaluate.RandomBaseline`), `sft` and `sft_grpo`. Both trained arms start from the
  SAME SFT warm start (`warm`, `warm_steps` steps), then each gets the same extra budget on the
  same training rows: `sft` continues SFT, `sft_grpo` runs GRPO with the `rewards` of
  `rewards.REWARDS`. Each arm's continuation settings are its best on the validation split
  (`VALIDATION_RUNS`; the sweep, `python -m study --sweep`, tunes both arms with the same number of
  configurations, SFT over learning rate and stopping point, GRPO over learning rate and temperature:
  `SWEEP_GRID`); the settings not tuned are listed with their reasons in `FIXED_A_PRIORI`. The
  held-out file played no part in any choice.
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
- How sure (`stats`, `report.study_statistics`, `stats` in the result): click accuracy on all rows
  and on the rows whose answer parsed (a gain made by answering in format shows as such), each
  arm's level and the SFT -> GRPO gain with a 95 % bootstrap interval that draws seeds, then
  held-out episodes (the steps of one page move together; both arms see the same draws), the
  paired gain per seed, McNemar's exact test per seed, per-task accuracy with row counts, and
  closed-loop success with its interval (`online_episodes`). The std over seeds is the spread of
  each arm's level, which both arms share; the interval of the gain is what the comparison rests on.
- The blind check (`blind`, a standard stage `<arm>_blind_eval` for every scored arm): the same rows
  and settings with every screenshot white. `looks` is an arm's click accuracy minus its blind score,
  paired on rows with the gain's bootstrap; `distinct_answers` counts, per task, the distinct points
  an arm answers against the distinct targets. An arm that scores as well blind answers from the
  instruction and the task's usual layout, not from the screen.

Reproducible to the digit: every stage runs on `threads` torch threads (1 by default) with
deterministic algorithms (`parallel.pinned_threads`), so a seed's figures depend on its seed and the
settings, not on the machine's load or on how many seeds ran beside it; the seeds run side by side,
a process each (`workers`, default one per core). Under `fair="seconds"` the SFT steps resolved from
measured seconds are kept (`seed<N>/sft_budget.json`) and reused by a rerun.

Everything lands under `out_dir`: `data/` (the filtered files, made once), `seed<N>/<arm>_train/`
(models, `metrics.jsonl`), `seed<N>/<arm>_eval/` and `seed<N>/<arm>_blind_eval/` (predictions) and,
with `online_episodes`, `seed<N>/<arm>_online/` (episodes in the live page), each with `stage.json`
when the stage finished (`stages`), and `miniature.json`. A rerun skips every stage whose `stage.json`
exists; an interrupted training stage starts over.

    python -m gui_r1_lite.miniature --out runs/miniature [--seeds 0,1,2] [--validate] [--workers 2]

The research harness of the study (the validation sweep, the full study's orchestration and its
report's own tables) lives beside the package, in the top-level `study/` folder (`python -m study`,
or `make study`); it imports this package, which never imports it.
"""

from .report import (
    ARMS,
    METRICS,
    WARM,
    aggregate,
    arm_results,
    blind_task_table,
    miniature_table,
    per_task_table,
)
from .runner import RESULT_FILE, TRAINED, SeedRun, run_miniature, run_seed, stage_names
from .settings import (
    ALL_TASKS,
    DEFAULT_HELDOUT,
    DEFAULT_TASKS,
    DEFAULT_TRAIN,
    FAIR_MODES,
    FIXED_A_PRIORI,
    LAYOUT_TASKS,
    ONLINE_ARMS,
    SWEEP_GRID,
    VALIDATION_RUNS,
    MiniatureSettings,
)
from .splits import prepare_data, prepared_data, seed_of, select_rows, task_mix, task_of
from .stages import STAGE_FILE, arm_metrics, per_task_click_accuracy

__all__ = [
    "ALL_TASKS", "ARMS", "DEFAULT_HELDOUT", "DEFAULT_TASKS", "DEFAULT_TRAIN", "FAIR_MODES", "FIXED_A_PRIORI",
    "LAYOUT_TASKS", "METRICS", "ONLINE_ARMS", "RESULT_FILE", "STAGE_FILE", "SWEEP_GRID", "TRAINED", "VALIDATION_RUNS",
    "WARM", "MiniatureSettings", "SeedRun", "aggregate", "arm_metrics", "arm_results", "blind_task_table",
    "miniature_table", "per_task_click_accuracy", "per_task_table", "prepare_data", "prepared_data", "run_miniature",
    "run_seed", "seed_of", "select_rows", "stage_names", "task_mix", "task_of",
]
