"""The multi-GPU launch files (configs/accelerate/*.yaml) as accelerate itself reads them, and the
`deepspeed` extra that the ZeRO ones need."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((ROOT / "configs" / "accelerate").glob("*.yaml"))
EXPECTED = {"ddp": ("MULTI_GPU", None), "zero2": ("DEEPSPEED", 2), "zero3": ("DEEPSPEED", 3)}


def test_every_launch_file_is_checked():
    assert sorted(p.stem for p in LAUNCH_FILES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.stem)
def test_accelerate_reads_the_launch_file(path):
    # accelerate's own parser: it rejects unknown keys and values that are not its enums
    from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file

    config = load_config_from_file(str(path))
    distributed, stage = EXPECTED[path.stem]
    assert isinstance(config, ClusterConfig)
    assert str(getattr(config.distributed_type, "value", config.distributed_type)) == distributed
    assert config.num_machines == 1 and config.num_processes >= 2 and not config.use_cpu
    if stage is not None:
        assert config.deepspeed_config["zero_stage"] == stage


def test_deepspeed_is_an_extra():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("deepspeed") for req in extras["deepspeed"])
