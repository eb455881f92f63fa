"""What made a run folder, and whether a new run may use it. Every run writes `run.json` into its
folder: what its results depend on (model sources, data files by content, settings) and a short
fingerprint. A rerun with the same record resumes the folder; any other run is refused with what
differs, in words, and how to start fresh. While a run writes its folder it holds the folder's lock
(`hold_folder`), so a second process writing the same folder is refused at once."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn, Protocol

from .errors import UsageError, on_stop
from .runio import is_main_process, iter_jsonl, read_json, write_json_atomic

RUN_FILE = "run.json"
#: The lock a run holds on its folder; it records the holder's pid (the lock itself is the kernel's).
LOCK_FILE = ".lock"
#: With `cheap`, files above this size are hashed by size, first and last MiB: retraining changes
#: weights everywhere, and reading a 7 GB checkpoint to resume an evaluation would cost minutes.
WHOLE_HASH_LIMIT = 64 * 2**20
_CHUNK = 2**20
#: Differences a refusal lists; the rest are counted.
SHOWN = 6


class RunFolderMismatch(UsageError):
    """The folder holds results made by another run (other policy, data or settings)."""


class FolderInUse(UsageError):
    """Another live process is writing the folder."""


def _file_digest(path: Path, cheap: bool) -> str:
    size = path.stat().st_size
    h = hashlib.sha256()
    with path.open("rb") as fh:
        if cheap and size > WHOLE_HASH_LIMIT:
            h.update(f"{size}:".encode())
            h.update(fh.read(_CHUNK))
            fh.seek(size - _CHUNK)
            h.update(fh.read(_CHUNK))
        else:
            for block in iter(lambda: fh.read(_CHUNK), b""):
                h.update(block)
    return h.hexdigest()


def digest(paths: str | os.PathLike | Iterable[str | os.PathLike], cheap: bool = False) -> str:
    """SHA-256 of one file's content (what `sha256sum` prints); of several files, or of a folder's
    files in name order, one hash of each file's name and digest."""
    if isinstance(paths, (str, os.PathLike)):
        path = Path(paths)
        if path.is_file():
            return _file_digest(path, cheap)
        files = sorted(p for p in path.iterdir() if p.is_file())
    else:
        files = [Path(p) for p in paths]
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\0{_file_digest(f, cheap)}\0".encode())
    return h.hexdigest()


def as_stored(value: Any) -> Any:
    """`value` as a JSON file gives it back (tuples as lists, other objects as text), so that a
    record made now compares equal to the one read from `run.json`."""
    return json.loads(json.dumps(value, default=str))


def fingerprint(record: dict) -> str:
    """A short hash of `record` (its `fingerprint` left out): a quick way to see two runs are one."""
    rest = {k: v for k, v in record.items() if k != "fingerprint"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode()).hexdigest()[:16]


def with_fingerprint(record: dict) -> dict:
    return {**{k: v for k, v in record.items() if k != "fingerprint"}, "fingerprint": fingerprint(record)}


def read_record(folder: str | os.PathLike, name: str = RUN_FILE) -> dict | None:
    """The record in `folder`'s `run.json` (or file `name`); None when missing, torn or not an object."""
    try:
        value = read_json(Path(folder) / name)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def phrase(name: str, old: Any, new: Any) -> str:
    """One difference in words: "compat: 'official' there, 'strict' now"."""
    return f"{name}: {_show(old)} there, {_show(new)} now"


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """One `phrase` per key whose value differs (keys of `new` in order, then those only in `old`)."""
    keys = [k for k in new if old.get(k) != new[k]] + [k for k in old if k not in new]
    return [phrase(f"{prefix}{k}", old.get(k), new.get(k)) for k in keys]


def refuse(folder: str | os.PathLike, holds: str, diffs: Sequence[str] | None, *, fresh: str, resume: str,
           error: type[UsageError] = RunFolderMismatch) -> NoReturn:
    """Raise `error`: `folder` holds `holds` made otherwise, as `diffs` list (the first `SHOWN`), or,
    with `diffs` None, by a run its `run.json` cannot name. `fresh` and `resume` say how to start
    fresh and how to resume, in the caller's own flags."""
    if diffs is None:
        why = f"{holds} but no readable {RUN_FILE} saying what made them, so nothing tells whether they are this run's"
    else:
        more = f"; and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else ""
        why = f"{holds} made otherwise: {'; '.join(diffs[:SHOWN])}{more}"
    raise error(f"{folder} holds {why}. {fresh}; {resume}")


def writable_folder(folder: str | os.PathLike, flag: str = "--out", error: type[UsageError] = UsageError) -> Path:
    """`folder`, made if missing, once a file could be written in it; else `error` naming `flag`.
    Checked before any model loads, so a bad path costs nothing."""
    path = Path(folder).expanduser()
    probe = path / f".write-check-{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise error(f"{flag} {folder}: cannot be written ({exc.strerror or exc}); "
                    "pass a folder you can write to") from None
    return path


#: Folders this process holds: resolved path -> (lock file descriptor, how many `hold_folder` deep).
_HELD: dict[Path, tuple[int, int]] = {}


def _lock(path: Path, flag: str) -> int:
    import fcntl

    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.read(fd, 32).decode("utf-8", "replace").strip() or "unknown"
        os.close(fd)
        raise FolderInUse(f"{flag} {path} is being written by another process (pid {pid}, which holds "
                          f"{path / LOCK_FILE}); wait for it to end or stop it, or pass another {flag}") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


@contextmanager
def hold_folder(folder: str | os.PathLike, then: str, *, flag: str = "--out",
                error: type[UsageError] = UsageError) -> Iterator[Path]:
    """Hold `folder` (made if missing, `writable_folder`) for this process while inside: its
    `LOCK_FILE` is locked (`fcntl.flock`) and records this pid, so a second process that would write
    the same folder is refused at once (`FolderInUse`, a usage error naming the folder, `flag` and
    the other pid; a folder that cannot be written is `error`). The kernel drops the lock when the
    process ends, however it ends: a killed run leaves the file but no lock, and never blocks its
    rerun. Holding a held folder again nests; the other ranks of a multi-process run write the main
    one's folder and hold nothing. A stop inside (SIGTERM, Ctrl-C, a full disk) says that what is
    finished is kept in `folder`, and `then`."""
    path = writable_folder(folder, flag, error)
    key = path.resolve()
    if not is_main_process() or os.name != "posix":
        yield path
        return
    fd, depth = _HELD.get(key) or (_lock(path, flag), 0)
    _HELD[key] = (fd, depth + 1)
    try:
        with on_stop(f"what it finished is kept in {path}; {then}"):
            yield path
    finally:
        fd, depth = _HELD.pop(key)
        if depth > 1:
            _HELD[key] = (fd, depth - 1)
        else:
            os.close(fd)  # closing the last descriptor releases the lock


def open_run_folder(out_dir: str | os.PathLike, made_by: dict, *, results: Sequence[str], holds: str, resume: str,
                    clear: Sequence[str] = (), overwrite: bool = False, about: dict | None = None) -> Path:
    """Make `out_dir` the folder of the run `made_by` describes, before anything is computed: resumed
    when its `run.json` records the same `made_by`; refused (`RunFolderMismatch`) when one of the
    JSONL files `results` holds records made otherwise or by an unrecorded run; else, or with
    `overwrite`, `results` and `clear` are deleted and `run.json` written. `about` (paths, names)
    is stored beside `made_by`, not compared."""
    out = writable_folder(out_dir, "--out")
    old = read_record(out)
    if old is not None and old.get("made_by") == made_by:
        return out
    if not overwrite and any(any(True for _ in iter_jsonl(out / name)) for name in results):
        diffs = differences(old["made_by"], made_by) if isinstance((old or {}).get("made_by"), dict) else None
        refuse(out, holds, diffs, resume=f"{resume} (see {out / RUN_FILE})",
               fresh=f"To start fresh, pass another --out, delete {out}, or pass --overwrite (overwrite=True)")
    for name in (*results, *clear):
        if (out / name).is_dir():
            shutil.rmtree(out / name)
        else:
            (out / name).unlink(missing_ok=True)
    write_json_atomic(out / RUN_FILE, {"made_by": made_by, "fingerprint": fingerprint(made_by), **(about or {}),
                                       "created": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return out


# --- what makes a policy's answers (evaluation, the closed loop) ------------------------------------

#: The files of a model or adapter folder that loading reads (run files beside them, such as
#: logs, metrics or stage records, change without changing the model).
MODEL_FILES = ("config.json", "generation_config.json", "adapter_config.json", "preprocessor_config.json",
               "video_preprocessor_config.json", "processor_config.json", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.json",
               "chat_template.jinja")
WEIGHT_SUFFIXES = (".safetensors", ".safetensors.index.json", ".bin")
_NOT_WEIGHTS = ("training_args.bin", "optimizer.bin", "scheduler.bin")


def _is_model_file(name: str) -> bool:
    return name in MODEL_FILES or (name.endswith(WEIGHT_SUFFIXES) and name not in _NOT_WEIGHTS)


def source_identity(source: str | os.PathLike) -> dict:
    """A model or adapter source as a run folder compares it: a local folder by a hash of its
    weight and configuration files (not its path, so a moved folder still resumes), anything else
    by its hub id."""
    path = Path(source).expanduser()
    if not path.is_dir():
        return {"hub_id": os.fspath(source)}
    files = sorted(p for p in path.iterdir() if p.is_file() and _is_model_file(p.name))
    return {"folder_sha256": digest(files, cheap=True)}


def model_identity(model: str | os.PathLike, adapter: str | os.PathLike | None = None,
                   quantization: str | None = None, *, do_sample: bool = False, temperature: float = 1.0,
                   top_p: float = 1.0, num_return_sequences: int = 1, repetition_penalty: float = 1.0) -> dict:
    """What makes a model policy's answers: the model and adapter, the quantisation and
    `evaluate.ModelCompleter`'s decoding settings."""
    generation: dict[str, Any] = {"do_sample": do_sample, "num_return_sequences": num_return_sequences,
                                  "repetition_penalty": float(repetition_penalty)}
    if do_sample:
        generation.update(temperature=temperature, top_p=top_p)
    return {"model": source_identity(model), "adapter": None if adapter is None else source_identity(adapter),
            "quantization": quantization, "generation": generation}


def completer_identity(completer: Any) -> dict:
    """What makes a completer's answers: its `identity()` when it has one, else its class and name."""
    identity = getattr(completer, "identity", None)
    if callable(identity):
        return identity()
    return {"class": f"{type(completer).__module__}.{type(completer).__qualname__}", "name": completer.name}


# --- what makes a training run ---------------------------------------------------------------------

#: Settings a resumed run may change: they decide how long the run goes on, where it is, how it
#: is recorded and how fast it computes, not what it learns at each step. max_steps and
#: num_train_epochs may grow because extending a run is what resuming is for (a decaying
#: learning-rate schedule then stretches to the new end; the recipes' schedule is constant).
#: device, gradient_checkpointing and cuda_alloc_conf (the CUDA allocator's settings) change where
#: and how the same step is computed.
#: monitor_rewards and validation_* only add records to metrics.jsonl.
MAY_CHANGE = frozenset({
    "output_dir", "resume", "max_steps", "num_train_epochs",
    "save_steps", "save_strategy", "save_total_limit", "save_only_model",
    "logging_steps", "logging_strategy", "logging_first_step", "logging_dir", "log_level", "log_level_replica",
    "report_to", "run_name", "project", "trackio_space_id", "disable_tqdm",
    "push_to_hub", "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo", "hub_always_push",
    "device", "gradient_checkpointing", "cuda_alloc_conf", "dataloader_num_workers", "dataloader_pin_memory",
    "dataloader_persistent_workers", "dataloader_prefetch_factor",
    "monitor_rewards", "validation_data", "validation_split", "validation_steps", "validation_limit",
    "validation_max_new_tokens",
})
#: Settings that name the base model or the data: what they name is compared instead (a model's
#: build arguments or config, a data file's bytes), so a moved folder resumes and a changed one does not.
NAMED_BY_IDENTITY = frozenset({"model", "tiny", "tiny_seed", "init_adapter", "train_data", "train_split"})


class TrainingSettings(Protocol):
    """What a training run's record reads of its settings (`training.TrainConfig`)."""

    method: str
    model: str
    tiny: dict
    tiny_seed: int
    init_adapter: str | None

    def get(self, name: str) -> Any: ...

    def setting_names(self) -> set[str]: ...

    def default_of(self, name: str) -> Any: ...


def run_settings(cfg: TrainingSettings) -> dict[str, Any]:
    """The settings that decide what a run learns, by name, as the run uses them."""
    names = cfg.setting_names() - MAY_CHANGE - NAMED_BY_IDENTITY
    return {k: as_stored(cfg.get(k)) for k in sorted(names) if "token" not in k}


def _hub_config_sha(repo_id: str) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo_id, "config.json")
    return digest(cached) if isinstance(cached, str) else None


def _check_hub_model(repo_id: str, config_sha: str | None, error: type[UsageError]) -> None:
    from .hub import hub_offline, hub_reachable, is_hub_id

    if not is_hub_id(repo_id):
        raise error(f"model {repo_id!r}: no such folder, and not a hub id 'owner/name' either")
    if config_sha is None and (hub_offline() or not hub_reachable()):
        raise error(f"model {repo_id!r}: no such local folder ({os.path.abspath(repo_id)}), and as a hub id it "
                    "is neither in the local cache nor reachable (the hub does not answer or HF_HUB_OFFLINE is "
                    "set). Fix the path, or download it where the hub is reachable (`huggingface-cli download "
                    f"{repo_id} --local-dir DIR`) and pass model: DIR")


def base_identity(cfg: TrainingSettings, check: bool = True, error: type[UsageError] = UsageError) -> dict[str, Any]:
    """What a training run starts from: the tiny model's build arguments, a folder's path and config
    hash, or a hub id and its config hash (None until cached); and the adapter it goes on training.
    `check` refuses a hub id that cannot be had. Not `source_identity`: this is checked before the
    tiny model is built or a hub model downloaded, so those are named by what will make them."""
    from .tiny import build_arguments

    if cfg.model == "tiny":
        try:
            ident: dict[str, Any] = {"tiny": as_stored(build_arguments(cfg.tiny_seed, **cfg.tiny))}
        except ValueError as exc:
            raise error(f"tiny: {exc}") from None
    elif Path(cfg.model).expanduser().is_dir():
        folder = Path(cfg.model).expanduser().resolve()
        config = folder / "config.json"
        ident = {"folder": str(folder), "config_sha256": digest(config) if config.is_file() else None}
    else:
        ident = {"hub_id": cfg.model, "config_sha256": _hub_config_sha(cfg.model)}
        if check:
            _check_hub_model(cfg.model, ident["config_sha256"], error)
    if cfg.init_adapter:
        adapter = Path(cfg.init_adapter).expanduser().resolve()
        files = sorted(f for f in adapter.glob("*") if f.is_file()) if adapter.is_dir() else []
        ident["init_adapter"] = {"folder": str(adapter), "sha256": digest(files) if files else None}
    return ident


def data_identity(files: Iterable[Path]) -> list[dict[str, Any]]:
    """The data files a run reads, by name, size and content hash."""
    return [{"name": f.name, "bytes": f.stat().st_size, "sha256": digest(f)} for f in files]


def run_identity(cfg: TrainingSettings, data_files: Iterable[Path], error: type[UsageError] = UsageError) -> dict:
    """A training run's `run.json`: its settings, base model and data, and one fingerprint of them."""
    return with_fingerprint({"method": cfg.method, "settings": run_settings(cfg),
                             "base_model": base_identity(cfg, error=error), "data": data_identity(data_files)})


def _setting_differences(old: dict, new: dict, cfg: TrainingSettings) -> list[str]:
    def value(record: dict, name: str) -> Any:
        if name in record:
            return record[name]
        try:  # a setting not recorded had its default then
            return as_stored(cfg.default_of(name))
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


def run_differences(old: dict, new: dict, cfg: TrainingSettings) -> list[str]:
    """What differs between two training records, one phrase each; a setting one record lacks
    counts as its default for `cfg`'s method."""
    old_settings = {**old.get("settings", {}), "method": old.get("method")}
    new_settings = {**new["settings"], "method": new["method"]}
    out = _setting_differences(old_settings, new_settings, cfg)
    out += _base_differences(old.get("base_model", {}), new["base_model"])
    if old.get("data") != new["data"]:
        names = [[f.get("name") for f in rec.get("data") or []] for rec in (old, new)]
        out.append(f"data: files {names[0]} there, {names[1]} now (compared by content)")
    return out


def check_training_folder(out: Path, cfg: TrainingSettings, identity: dict, found: Sequence[str], resume: bool,
                          error: type[UsageError] = UsageError) -> None:
    """Refuse `out` when it holds another training run (`found`: its run files): always without
    `resume`, and with it unless its `run.json` records the same run."""
    if not found:
        return
    fresh = "To start fresh, pass another --output_dir or delete the folder"
    if not resume:
        raise error(f"{out} holds another run ({', '.join(found[:6])}); training into it would overwrite it. "
                    f"{fresh}; to continue that run, pass --resume (with that run's settings)")
    old = read_record(out)
    if old is None:
        refuse(out, f"run files ({', '.join(found[:6])})", None, fresh=fresh,
               resume=f"--resume continues only a run whose {RUN_FILE} matches", error=error)
    diffs = run_differences(old, identity, cfg)
    if diffs:
        refuse(out, "a run", diffs, fresh=fresh, error=error,
               resume=f"to resume that run, pass its own settings (--config {out / 'train_config.yaml'} --resume)")


def record_base_model(cfg: TrainingSettings, out: Path, identity: dict) -> None:
    """Once the model has loaded, record a hub model's config hash that was not cached before."""
    base = base_identity(cfg, check=False)
    if is_main_process() and base != identity["base_model"]:
        write_json_atomic(out / RUN_FILE, with_fingerprint({**identity, "base_model": base}))
