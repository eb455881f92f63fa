"""The miniature's research harness, beside the package: the validation sweep that chose the
miniature's settings (`sweep`; what it found ships as `sweep_evidence.json`, beside this file), the
full study's orchestration (`orchestrate`: its parts, `study.json`, `study.md`) and the tables only the
study's report shows (`tables`). It imports `gui_r1_lite`; the package never imports it: what notebook
04 and `make run` need (settings, splits, stages, runner, statistics, the report's tables) stays there.

    python -m study --study runs/study     # the full study (or: make study); --report rewrites study.md
    python -m study --sweep runs/sweep     # tune both arms on the validation split
"""

from .orchestrate import STUDY_FILE, STUDY_ONLINE_EPISODES, STUDY_SEEDS, rewrite_report, run_study, study_markdown
from .sweep import SHIPPED_EVIDENCE, SWEEP_FILE, run_sweep, sweep_table

__all__ = ["SHIPPED_EVIDENCE", "STUDY_FILE", "STUDY_ONLINE_EPISODES", "STUDY_SEEDS", "SWEEP_FILE", "rewrite_report",
           "run_study", "run_sweep", "study_markdown", "sweep_table"]
