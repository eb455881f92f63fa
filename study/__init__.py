"""The miniature's study, beside the packages: the validation sweep that chose the
miniature's settings (`sweep`; what it found ships as `docs/results/sweep_evidence.json`), the
full study's orchestration (`orchestrate`: its parts, `study.json`, `study.md`) and the tables only the
study's report shows (`tables`). It imports `gui_r1_lite` and `harness`; neither imports it: what notebook
04 and `make run` need (settings, splits, stages, runner, statistics, the report's tables) is `harness.miniature`.

    python -m study --study runs/study --results docs/results/study   # the full study (or: make study)
    python -m study --sweep runs/sweep --seeds 0,1 --results docs/results   # tune both arms on validation

`--results DIR` copies the result files out of the (git-ignored) run folder into the shipped
`docs/results/` (`results`); `--report` rewrites a finished study's study.md.
"""

from .orchestrate import STUDY_FILE, STUDY_ONLINE_EPISODES, STUDY_SEEDS, rewrite_report, run_study, study_markdown
from .results import RESULTS, ship_results, study_result_files
from .sweep import SHIPPED_EVIDENCE, SWEEP_FILE, run_sweep, sweep_table

__all__ = ["RESULTS", "SHIPPED_EVIDENCE", "STUDY_FILE", "STUDY_ONLINE_EPISODES", "STUDY_SEEDS", "SWEEP_FILE",
           "rewrite_report", "run_study", "run_sweep", "ship_results", "study_markdown", "study_result_files",
           "sweep_table"]
