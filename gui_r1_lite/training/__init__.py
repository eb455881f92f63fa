"""Training: a `TrainConfig` (our settings beside TRL's) wired into TRL's `GRPOTrainer` or
`SFTTrainer`; metrics, checkpoints and the merged adapter of a run."""

from .arguments import TrainArguments
from .checkpoints import last_checkpoint
from .config import ConfigError, TrainConfig
from .fingerprint import trainable_fingerprint
from .logs import read_metrics, start_and_end
from .merge import merge_adapter
from .trainer import TrainResult, resolve_model, train

__all__ = ["ConfigError", "TrainArguments", "TrainConfig", "TrainResult", "last_checkpoint", "merge_adapter",
           "read_metrics", "resolve_model", "start_and_end", "train", "trainable_fingerprint"]
