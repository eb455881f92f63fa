"""Evaluate a policy (or a baseline) on GUI-R1 benchmark files. One job per module, every public
name importable from here:

- `presets.py`: prediction settings under one name (`PRESETS`) and the settings a run resolves;
- `completers.py`: what answers (`Completer`, the oracle and random baselines, `ModelCompleter`);
- `benchmark.py`: the rows to score (`load_benchmark`) and their record ids;
- `predictions.py`: the prediction loop (`predict`) and its records;
- `run.py`: one evaluation run into a run folder (`evaluate`);
- `cli.py`: the command line (`python -m gui_r1_lite.evaluate --data ...`; `gui-r1-lite evaluate`).
"""

from ..runfolder import RUN_FILE, RunFolderMismatch, completer_identity, model_identity
from .benchmark import Benchmark, load_benchmark, report_skipped, row_keys, samples_by_id
from .cli import load_model_completer, main, parse_args, policy_from_args
from .completers import (
    BASELINES,
    GREEDY_FIELDS,
    SAMPLING_FIELDS,
    Completer,
    ModelCompleter,
    OracleBaseline,
    RandomBaseline,
    as_completer,
    completer_pixels,
    make_baseline,
    processor_pixels,
)
from .predictions import PREDICTIONS, make_record, predict, read_records
from .presets import (
    DEFAULT_MAX_NEW_TOKENS,
    DEFAULT_PRESET,
    PRESETS,
    Preset,
    check_settings,
    get_preset,
    prediction_settings,
    require_positive,
)
from .run import (
    BLIND_NOTE,
    METRICS_JSON,
    METRICS_MD,
    RESUME_NOTE,
    evaluate,
    open_run_folder,
    resolve_completer,
    run_about,
    run_record,
)

__all__ = [
    "BASELINES", "BLIND_NOTE", "Benchmark", "Completer", "DEFAULT_MAX_NEW_TOKENS", "DEFAULT_PRESET",
    "GREEDY_FIELDS", "METRICS_JSON", "METRICS_MD", "ModelCompleter", "OracleBaseline", "PREDICTIONS", "PRESETS",
    "Preset", "RESUME_NOTE", "RUN_FILE", "RandomBaseline", "RunFolderMismatch", "SAMPLING_FIELDS", "as_completer",
    "check_settings", "completer_identity", "completer_pixels", "evaluate", "get_preset", "load_benchmark",
    "load_model_completer", "main", "make_baseline", "make_record", "model_identity", "open_run_folder",
    "parse_args", "policy_from_args", "predict", "prediction_settings", "processor_pixels", "read_records",
    "report_skipped", "require_positive", "resolve_completer", "row_keys", "run_about", "run_record", "samples_by_id"
]
