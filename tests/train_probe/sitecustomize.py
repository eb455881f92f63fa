"""A probe for training runs launched as subprocesses (`python -m gui_r1_lite.train`, `torchrun`):
put this folder on the child's PYTHONPATH and Python imports it at start-up. It leaves the
package untouched and adds one `TrainerCallback` to every Trainer the child builds:

- `GUI_R1_PROBE_STEP_SLEEP=<seconds>`: sleep that long at the end of every optimiser step, so a
  test can reliably kill a run between two steps whatever the machine's speed;
- `GUI_R1_PROBE_DIR=<folder>`: write `begin-rank{R}.json` there when training starts (the step it
  starts from and the fingerprint of the trainable weights before any update of this process).

Importing transformers here would slow every Python process given this path (a `torchrun`
launcher too), so the callback is added only when `transformers.trainer` is first imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import time
from pathlib import Path

_SLEEP = float(os.environ.get("GUI_R1_PROBE_STEP_SLEEP") or 0)
_DIR = os.environ.get("GUI_R1_PROBE_DIR")


def _install(trainer_module) -> None:
    from transformers import TrainerCallback

    class Probe(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            if not _DIR:
                return
            from gui_r1_lite.runio import rank, write_json_atomic
            from gui_r1_lite.training import trainable_fingerprint

            write_json_atomic(Path(_DIR) / f"begin-rank{rank()}.json", {
                "rank": rank(), "global_step": state.global_step,
                "trainable_fingerprint": trainable_fingerprint(model) if model is not None else None})

        def on_step_end(self, args, state, control, **kw):
            if _SLEEP > 0:
                time.sleep(_SLEEP)

    trainer_module.DEFAULT_CALLBACKS.append(Probe)


class _AfterTrainerImport(importlib.abc.MetaPathFinder):
    """Finds `transformers.trainer` as usual, then runs `_install` on the loaded module."""

    def find_spec(self, name, path, target=None):
        if name != "transformers.trainer":
            return None
        sys.meta_path.remove(self)  # let the ordinary finders locate the module (and never recurse)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_install(module) -> None:
            exec_module(module)
            _install(module)

        spec.loader.exec_module = exec_and_install
        return spec


if _SLEEP > 0 or _DIR:
    sys.meta_path.insert(0, _AfterTrainerImport())
