"""A run folder knows what made it: `run.json` records a run's settings, base model and data
(by content, not by path), so that training refuses a folder holding another run, and `--resume`
continues only the same run. Checked, with the folder's writability, before any model loads. What is
generic (hashing, records, differences in words, refusals) is `gui_r1_lite.runfolder`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..runfolder import (
    RUN_FILE,
    as_stored,
    differences,
    digest,
    phrase,
    read_record,
    refuse,
    with_fingerprint,
    writable_folder,
)
from ..runio import is_main_process, write_json_atomic
from .checkpoints import checkpoints
from .config import ConfigError, TrainConfig

#: What a training run writes into its folder besides `checkpoint-N`: any of them means a run was there.
#: (`base_model`, the built tiny model, is a cache checked by its build arguments; other files, such
#: as the miniature's log.txt, belong to whoever put them there.)
RUN_FILES = (RUN_FILE, "train_config.yaml", "data_report.json", "metrics.jsonl", "adapter", "ranks")

#: Settings a resumed run may change: they decide how long the run goes on, where it is, how it
#: is recorded and how fast it computes, not what it learns at each step. max_steps and
#: num_train_epochs may grow because extending a run is what resuming is for (a decaying
#: learning-rate schedule then stretches to the new end; the recipes' schedule is constant).
#: device and gradient_checkpointing change where and how the same step is computed.
#: monitor_rewards and validation_* only add records to metrics.jsonl.
MAY_CHANGE = frozenset({
    "output_dir", "resume", "max_steps", "num_train_epochs",
    "save_steps", "save_strategy", "save_total_limit", "save_only_model",
    "logging_steps", "logging_strategy", "logging_first_step", "logging_dir", "log_level", "log_level_replica",
    "report_to", "run_name", "project", "trackio_space_id", "disable_tqdm",
    "push_to_hub", "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo", "hub_always_push",
    "device", "gradient_checkpointing", "dataloader_num_workers", "dataloader_pin_memory",
    "dataloader_persistent_workers", "dataloader_prefetch_factor",
    "monitor_rewards", "validation_data", "validation_split", "validation_steps", "validation_limit",
    "validation_max_new_tokens",
})
#: Settings that name the base model or the data: what they name is compared instead (a model's
#: build arguments or config, a data file's bytes), so a moved folder resumes and a changed one does not.
NAMED_BY_IDENTITY = frozenset({"model", "tiny", "tiny_seed", "init_adapter", "train_data", "train_split"})


def run_settings(cfg: TrainConfig) -> dict[str, Any]:
    """The settings that decide what a run learns, by name, as the run uses them."""
    from .config import trl_defaults

    names = {f.name for f in cfg.own_fields()} | set(cfg.trl_args) | set(trl_defaults(cfg.method))
    return {k: as_stored(cfg.get(k)) for k in sorted(names - MAY_CHANGE - NAMED_BY_IDENTITY) if "token" not in k}


def _hub_config_sha(repo_id: str) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo_id, "config.json")
    return digest(cached) if isinstance(cached, str) else None


def _check_hub_model(repo_id: str, config_sha: str | None) -> None:
    from ..data import hub_offline, hub_reachable, is_hub_id

    if not is_hub_id(repo_id):
        raise ConfigError(f"model {repo_id!r}: no such folder, and not a hub id 'owner/name' either")
    if config_sha is None and (hub_offline() or not hub_reachable()):
        raise ConfigError(f"model {repo_id!r}: no such local folder ({os.path.abspath(repo_id)}), and as a hub id it "
                          "is neither in the local cache nor reachable (the hub does not answer or HF_HUB_OFFLINE is "
                          "set). Fix the path, or download it where the hub is reachable (`huggingface-cli download "
                          f"{repo_id} --local-dir DIR`) and pass model: DIR")


def base_identity(cfg: TrainConfig, check: bool = True) -> dict[str, Any]:
    """What the run starts from: the tiny model's build arguments, a folder's path and config hash,
    or a hub id and its config hash (None until it is in the local cache); and the adapter it
    goes on training, by its files' hash. `check` refuses a hub id that cannot be had."""
    from ..tiny import build_arguments

    if cfg.model == "tiny":
        try:
            ident: dict[str, Any] = {"tiny": as_stored(build_arguments(cfg.tiny_seed, **cfg.tiny))}
        except ValueError as exc:
            raise ConfigError(f"tiny: {exc}") from None
    elif Path(cfg.model).expanduser().is_dir():
        folder = Path(cfg.model).expanduser().resolve()
        config = folder / "config.json"
        config_sha = digest(config) if config.is_file() else None
        ident = {"folder": str(folder), "config_sha256": config_sha}
    else:
        ident = {"hub_id": cfg.model, "config_sha256": _hub_config_sha(cfg.model)}
        if check:
            _check_hub_model(cfg.model, ident["config_sha256"])
    if cfg.init_adapter:
        adapter = Path(cfg.init_adapter).expanduser().resolve()
        files = sorted(f for f in adapter.glob("*") if f.is_file()) if adapter.is_dir() else []
        ident["init_adapter"] = {"folder": str(adapter), "sha256": digest(files) if files else None}
    return ident


def data_identity(files: Iterable[Path]) -> list[dict[str, Any]]:
    """The data files a run reads, by name, size and content hash."""
    return [{"name": f.name, "bytes": f.stat().st_size, "sha256": digest(f)} for f in files]


def run_identity(cfg: TrainConfig, data_files: Iterable[Path]) -> dict[str, Any]:
    """`run.json`'s record: the settings, base model and data of a run, and one fingerprint of them."""
    return with_fingerprint({"method": cfg.method, "settings": run_settings(cfg), "base_model": base_identity(cfg),
                             "data": data_identity(data_files)})


def _setting_differences(old: dict, new: dict, method: str) -> list[str]:
    blank = TrainConfig(method=method)  # type: ignore[arg-type]

    def value(record: dict, name: str) -> Any:
        if name in record:
            return record[name]
        try:  # a setting not recorded had its default then
            return as_stored(blank.get(name))
        except KeyError:
            return None

    names = sorted(set(old) | set(new), key=lambda k: (k != "method", k))
    return differences({k: value(old, k) for k in names}, {k: value(new, k) for k in names})


def _base_differences(old: dict, new: dict) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            # a hash not known on one side (a hub model not yet cached) is not a difference
            diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k) and None not in (a.get(k), b.get(k))]
            out += [phrase(f"base model: {key} {k}", a.get(k), b.get(k)) for k in diff]
        elif a != b and (key != "config_sha256" or None not in (a, b)):
            out.append(phrase(f"base model: {key}", a, b))
    return out


def run_differences(old: dict, new: dict) -> list[str]:
    """What differs between two `run.json` records, one phrase each ("method: 'grpo' there, 'sft' now")."""
    old_settings = {**old.get("settings", {}), "method": old.get("method")}
    new_settings = {**new["settings"], "method": new["method"]}
    out = _setting_differences(old_settings, new_settings, new["method"])
    out += _base_differences(old.get("base_model", {}), new["base_model"])
    if old.get("data") != new["data"]:
        names = [[f.get("name") for f in rec.get("data") or []] for rec in (old, new)]
        out.append(f"data: files {names[0]} there, {names[1]} now (compared by content)")
    return out


def run_files(out: Path) -> list[str]:
    """The files and folders of a training run in `out` (checkpoints too)."""
    found = [name for name in RUN_FILES if (out / name).exists()]
    return found + [d.name for _, d in checkpoints(out)]


def check_run_folder(out: Path, identity: dict, resume: bool) -> None:
    """Refuse `out` when it holds another run: always without `resume`, and with it unless its
    `run.json` records the same run. The message says how to start fresh or resume."""
    found = run_files(out)
    if not found:
        return
    fresh = "To start fresh, pass another --output_dir or delete the folder"
    if not resume:
        raise ConfigError(f"{out} holds another run ({', '.join(found[:6])}); training into it would overwrite it. "
                          f"{fresh}; to continue that run, pass --resume (with that run's settings)")
    old = read_record(out)
    if old is None:
        refuse(out, f"run files ({', '.join(found[:6])})", None, fresh=fresh,
               resume=f"--resume continues only a run whose {RUN_FILE} matches", error=ConfigError)
    diffs = run_differences(old, identity)
    if diffs:
        refuse(out, "a run", diffs, fresh=fresh, error=ConfigError,
               resume=f"to resume that run, pass its own settings (--config {out / 'train_config.yaml'} --resume)")


def prepare_run_folder(cfg: TrainConfig, out: Path) -> dict:
    """Before any model loads: `out` can be written, the data files exist, and `out` holds no other
    run (the main process checks and writes `run.json`). Returns the run's record."""
    from ..data import resolve_files

    writable_folder(out, "output_dir", error=ConfigError)
    identity = run_identity(cfg, resolve_files(cfg.train_data, cfg.train_split))
    if is_main_process():
        check_run_folder(out, identity, cfg.resume)
        write_json_atomic(out / RUN_FILE, identity)
    return identity


def record_base_model(cfg: TrainConfig, out: Path, identity: dict) -> None:
    """Once the model has loaded, record a hub model's config hash that was not cached before."""
    base = base_identity(cfg, check=False)
    if is_main_process() and base != identity["base_model"]:
        write_json_atomic(out / RUN_FILE, with_fingerprint({**identity, "base_model": base}))
