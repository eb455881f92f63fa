"""Evaluate a policy (or a baseline) on GUI-R1 benchmark files: batched greedy generation with the
training prompts, each completion read by `actions.parse_completion`, its point mapped from the
model's frame back to the stored image's pixels, records appended to a resumable JSONL file, and
the metrics of `metrics.py` written as JSON and Markdown. The output folder's `run.json` records
what made the predictions, so that a folder is only ever resumed by the run that began it.

    python -m gui_r1_lite.evaluate (--data FILE_OR_DIR | --suite DIR) (--model ID_OR_DIR [--adapter DIR]
        [--quantization 4bit] | --baseline oracle|random) --out DIR [--preset paper|fast] [--limit N] [--blind] ...

`--blind` scores the same rows with every screenshot white (`blind`): does the policy look at the screen?

`--preset paper` predicts as the original's inference scripts do (`PRESETS`); `--suite DIR` runs
every GUI-R1 benchmark file in DIR and writes one table beside the paper's figures (`suite`). The
command is `evaluate_cli.main` (also `gui-r1-lite evaluate`): `suite` is built on this module, so
this module's `main` runs one benchmark and the command dispatches.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from .actions import (
    COMPATS,
    NO_TEXT,
    POINT_ACTIONS,
    SCROLL_DIRECTIONS,
    TEXT_ACTIONS,
    Action,
    action_space,
    format_answer,
    parse_completion,
    target_action,
)
from .blind import blind_record, blind_samples
from .data import (
    Dataset,
    EvalRow,
    Sample,
    ValidationReport,
    load_gui_r1,
    model_view,
    resolve_files,
    to_eval_rows,
    to_model_frame,
)
from .errors import RunFailed, UsageError, run_cli
from .geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS, NO_POINT, rescale_pixels
from .metrics import summarize, to_markdown
from .modeling import QUANTIZATIONS
from .runfolder import (  # RUN_FILE and RunFolderMismatch: also evaluate's names, where tests read them
    RUN_FILE,  # noqa: F401
    RunFolderMismatch,  # noqa: F401
    as_stored,
    completer_identity,
    digest,
    model_identity,
    writable_folder,
)
from .runfolder import open_run_folder as open_folder
from .runio import append_jsonl, iter_jsonl, write_json_atomic, write_jsonl_atomic, write_text_atomic

DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_PRESET = "fast"
PREDICTIONS = "predictions.jsonl"
METRICS_JSON = "metrics.json"
METRICS_MD = "metrics.md"
#: What a blind run's Markdown says first (`--blind`): its figures are not the policy's with the screen.
BLIND_NOTE = "Blind check: every screenshot was replaced by a white image of the same size.\n\n"


#: Sampling as GRPO samples its groups (TRL passes top_k=0 and repetition_penalty 1.0): only
#: `temperature` and `top_p` shape the distribution; the other fields hold their no-op values, never
#: None, so none is refilled from the model's own generation config.
SAMPLING_FIELDS: dict[str, Any] = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0,
                                   "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "repetition_penalty": 1.0,
                                   "no_repeat_ngram_size": 0}
#: Greedy decoding without a repetition penalty; the sampling-only fields hold transformers' own
#: defaults, which greedy decoding ignores (and does not warn about).
GREEDY_FIELDS: dict[str, Any] = {"temperature": 1.0, "top_k": 50, "top_p": 1.0, "min_p": None, "typical_p": 1.0,
                                 "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "repetition_penalty": 1.0,
                                 "no_repeat_ngram_size": 0}



@dataclass(frozen=True)
class Preset:
    """Prediction settings under one name: the longest answer, the resize bounds of the screenshots
    and the decoding. `temperature` 0 is greedy decoding (`generate` runs `do_sample=False`, where
    `top_p` has no effect); `repetition_penalty` applies under greedy decoding too."""

    name: str
    max_new_tokens: int
    min_pixels: int
    max_pixels: int
    repetition_penalty: float
    temperature: float
    top_p: float


#: The presets, in one place. `paper`: the original's inference scripts (`guir1/inference/*.py`:
#: vLLM `SamplingParams(temperature=0.0, top_p=0.001, repetition_penalty=1.05, max_tokens=1024)`;
#: the model sees screenshots resized by `qwen_vl_utils.process_vision_info` within its default
#: 3,136 to 12,845,056 pixels, near native; the ScreenSpot script's `processor.max_pixels = 2097152`
#: is set on the processor it uses only to compute the scale back to the screenshot).
#: `fast`: CPU work, as `evaluate` ran before presets (256 tokens, GUI-R1's 1.26 MP training frame).
PRESETS: dict[str, Preset] = {
    "paper": Preset("paper", max_new_tokens=1024, min_pixels=3_136, max_pixels=12_845_056, repetition_penalty=1.05,
                    temperature=0.0, top_p=0.001),
    "fast": Preset("fast", max_new_tokens=DEFAULT_MAX_NEW_TOKENS, min_pixels=GUI_R1_MIN_PIXELS,
                   max_pixels=GUI_R1_MAX_PIXELS, repetition_penalty=1.0, temperature=0.0, top_p=1.0),
}
_PRESET_FIELDS = ("max_new_tokens", "min_pixels", "max_pixels", "repetition_penalty")


def get_preset(preset: str | Preset) -> Preset:
    """The preset called `preset` (`PRESETS`); a `UsageError` listing them for another name."""
    if isinstance(preset, Preset):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise UsageError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}") from None


def prediction_settings(preset: str | Preset | None, *, max_new_tokens: int | None = None,
                        min_pixels: int | None = None, max_pixels: int | None = None,
                        repetition_penalty: float | None = None) -> dict[str, Any]:
    """The settings a run predicts with, as `run.json` and `metrics.json` record them: each value
    given (not None) as it is, the others from `preset` (`PRESETS`), with the preset's name,
    the names of its values that were `overridden`, and its decoding (`temperature`, `top_p`).

    Without a preset only `max_new_tokens` gets a default (`DEFAULT_MAX_NEW_TOKENS`); the pixel
    bounds left None are then the policy's processor's (`evaluate`), and `repetition_penalty` the
    completer's own.

    >>> s = prediction_settings("paper", max_new_tokens=48)
    >>> s["max_new_tokens"], s["max_pixels"], s["repetition_penalty"], s["overridden"]
    (48, 12845056, 1.05, ['max_new_tokens'])
    """
    given = {"max_new_tokens": max_new_tokens, "min_pixels": min_pixels, "max_pixels": max_pixels,
             "repetition_penalty": repetition_penalty}
    if preset is None:
        out: dict[str, Any] = {"preset": None, **given, "temperature": None, "top_p": None, "overridden": []}
        out["max_new_tokens"] = DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else max_new_tokens
        return out
    p = get_preset(preset)
    values = {k: getattr(p, k) if given[k] is None else given[k] for k in _PRESET_FIELDS}
    overridden = [k for k in _PRESET_FIELDS if given[k] is not None and given[k] != getattr(p, k)]
    return {"preset": p.name, **values, "temperature": p.temperature, "top_p": p.top_p, "overridden": overridden}


# --- what produces completions ---------------------------------------------------------------------


class Completer(Protocol):
    """Anything `predict` can ask for completions: a baseline, or `ModelCompleter` around a policy."""

    name: str

    def complete(self, rows: Sequence[EvalRow], images: Sequence[Any], keys: Sequence[str],
                 max_new_tokens: int) -> list[str]:
        """One completion per row: `images` are the rows' screenshots already in the model frame,
        `keys` the rows' record ids, `max_new_tokens` the longest answer."""
        ...


class OracleBaseline:
    """Answers the ground truth, written in the MODEL frame (box centre, rounded), so the whole
    path resize -> answer -> parse -> map back is exercised; it must score 1.0 where the frames
    are right."""

    name = "oracle"

    def complete(self, rows, images, keys, max_new_tokens):
        out = []
        for row in rows:
            s = row.sample
            action = target_action(s.gt_action, to_model_frame(s, row.model_size), s.gt_input_text)
            out.append(format_answer(action, thinking="oracle"))
        return out

    def identity(self) -> dict:
        """What makes its answers (compared when a run folder is resumed)."""
        return {"baseline": "oracle"}


class RandomBaseline:
    """A uniformly random point in the model frame and a random action of the row's action space;
    each row has its own generator seeded by (`seed`, row id), so batches and resumes agree."""

    name = "random"
    TEXT = "random text"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def identity(self) -> dict:
        """What makes its answers (compared when a run folder is resumed)."""
        return {"baseline": "random", "seed": self.seed}

    def complete(self, rows, images, keys, max_new_tokens):
        out = []
        for row, key in zip(rows, keys, strict=True):
            rng = random.Random(f"{self.seed}:{key}")
            name = rng.choice(action_space(row.sample.space))
            w, h = row.model_size
            point = (rng.randrange(w), rng.randrange(h)) if name in POINT_ACTIONS else NO_POINT
            if name == "scroll":
                text = rng.choice(SCROLL_DIRECTIONS)
            elif name in TEXT_ACTIONS:
                text = self.TEXT
            else:
                text = NO_TEXT
            out.append(format_answer(Action(name, point, text), thinking="random"))
        return out


BASELINES = {"oracle": OracleBaseline, "random": RandomBaseline}


def make_baseline(name: str, seed: int = 0) -> Completer:
    """The baseline called `name` ("oracle" or "random"; `seed` seeds the random one)."""
    if name == "oracle":
        return OracleBaseline()
    if name == "random":
        return RandomBaseline(seed)
    raise ValueError(f"unknown baseline {name!r}; expected one of {sorted(BASELINES)}")


def processor_pixels(processor) -> tuple[int | None, int | None]:
    """(min_pixels, max_pixels) the processor's image processor resizes within."""
    size = getattr(getattr(processor, "image_processor", None), "size", None) or {}
    get = size.get if hasattr(size, "get") else (lambda k: getattr(size, k, None))
    return get("shortest_edge"), get("longest_edge")


class ModelCompleter:
    """Batched generation with a loaded policy (`modeling.Policy` or anything with `.model`,
    `.processor` and `.device`), named `name` in the records (default: the policy's source).
    Greedy by default (evaluation); `do_sample=True` samples at `temperature` with nucleus `top_p`
    and draws `num_return_sequences` answers per prompt (difficulty curation, as GRPO samples its
    groups). `repetition_penalty` None means none (1.0) unless `evaluate`'s preset sets one (the
    paper's is 1.05). No decoding setting comes from the model's own generation config."""

    def __init__(self, policy, name: str | None = None, *, do_sample: bool = False, temperature: float = 1.0,
                 top_p: float = 1.0, num_return_sequences: int = 1, repetition_penalty: float | None = None):
        if num_return_sequences < 1:
            raise ValueError(f"num_return_sequences must be at least 1, got {num_return_sequences}")
        if num_return_sequences > 1 and not do_sample:
            raise ValueError("num_return_sequences > 1 needs do_sample=True (greedy answers are all the same)")
        if repetition_penalty is not None and not repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be positive (1.0: none), got {repetition_penalty}")
        self.policy = policy
        self.name = name or str(getattr(policy, "source", "") or "model")
        self.do_sample, self.temperature, self.top_p = do_sample, temperature, top_p
        self.num_return_sequences = num_return_sequences
        self.repetition_penalty = repetition_penalty
        self._generation_config = None

    @property
    def penalty(self) -> float:
        """The repetition penalty `generate` applies (1.0: none)."""
        return 1.0 if self.repetition_penalty is None else float(self.repetition_penalty)

    def with_repetition_penalty(self, value: float) -> ModelCompleter:
        """A copy of this completer (same policy, name and sampling) with `repetition_penalty` `value`."""
        return ModelCompleter(self.policy, self.name, do_sample=self.do_sample, temperature=self.temperature,
                              top_p=self.top_p, num_return_sequences=self.num_return_sequences,
                              repetition_penalty=value)

    def generation_config(self, max_new_tokens: int):
        """The `GenerationConfig` passed to `generate`: the model's special tokens, every decoding
        field set here. `generate` refills each field left None from the model's own
        `generation_config`, and Qwen2.5-VL-3B-Instruct ships near-greedy sampling (temperature
        1e-06, repetition_penalty 1.05), so None would mean greedy."""
        if self._generation_config is None:
            config = copy.deepcopy(self.policy.model.generation_config)
            fields = dict(SAMPLING_FIELDS, temperature=self.temperature, top_p=self.top_p) if self.do_sample \
                else dict(GREEDY_FIELDS)
            fields["repetition_penalty"] = self.penalty
            for name, value in {**fields, "do_sample": self.do_sample, "num_beams": 1,
                                "num_return_sequences": self.num_return_sequences}.items():
                setattr(config, name, value)
            self._generation_config = config
        self._generation_config.max_new_tokens = max_new_tokens
        return self._generation_config

    def generate(self, messages: Sequence[list], images: Sequence[Any], model_sizes: Sequence[tuple[int, int]],
                 ids: Sequence[str], max_new_tokens: int) -> list[str]:
        """Completions for chat `messages` with their model-frame `images`; `num_return_sequences`
        consecutive completions per prompt. Checks the processor sees each image at `model_sizes`
        (else predicted points would be read in the wrong frame)."""
        import torch

        processor = self.policy.processor
        tokenizer = processor.tokenizer
        side, tokenizer.padding_side = tokenizer.padding_side, "left"  # generation continues at the right
        try:
            texts = [processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in messages]
            inputs = processor(text=texts, images=list(images), padding=True, return_tensors="pt")
        finally:
            tokenizer.padding_side = side
        grid = inputs.get("image_grid_thw")
        if grid is not None:
            patch = getattr(processor.image_processor, "patch_size", 14)
            for rid, size, (_, gh, gw) in zip(ids, model_sizes, grid.tolist(), strict=True):
                seen = (int(gw) * patch, int(gh) * patch)
                if seen != tuple(size):
                    raise ValueError(
                        f"row {rid}: the processor resized the image to {seen}, but the rows were made for "
                        f"{tuple(size)}; pass the processor's min_pixels/max_pixels "
                        f"{processor_pixels(processor)} to to_eval_rows / evaluate")
        model = self.policy.model
        inputs = inputs.to(self.policy.device)
        with torch.inference_mode():
            out = model.generate(**inputs, generation_config=self.generation_config(max_new_tokens))
        new = out[:, inputs["input_ids"].shape[1]:]
        return processor.batch_decode(new, skip_special_tokens=True)

    def complete(self, rows, images, keys, max_new_tokens):
        return self.generate([r.messages for r in rows], images, [r.model_size for r in rows],
                             [r.sample.id for r in rows], max_new_tokens)

    def identity(self) -> dict:
        """The model, adapter, quantisation and decoding settings (`model_identity`); not the name."""
        p = self.policy
        return model_identity(p.source, getattr(p, "adapter", None), getattr(p, "quantization", None),
                              do_sample=self.do_sample, temperature=self.temperature, top_p=self.top_p,
                              num_return_sequences=self.num_return_sequences, repetition_penalty=self.penalty)


def as_completer(policy: Any, seed: int = 0) -> Completer:
    """A baseline name, a `Completer`, or a loaded policy -> something `predict` can call."""
    if isinstance(policy, str):
        return make_baseline(policy, seed)
    if hasattr(policy, "complete"):
        return policy
    if hasattr(policy, "model") and hasattr(policy, "processor"):
        return ModelCompleter(policy)
    raise TypeError(f"expected a baseline name {sorted(BASELINES)}, a Completer or a Policy, "
                    f"got {type(policy).__name__}")


# --- what made a run folder -------------------------------------------------------------------------

@dataclass
class Benchmark:
    """Validated benchmark rows (`load_benchmark`): the samples, the validation report of the
    files they came from, the benchmark's name and the files (none for samples given in memory)."""

    samples: list[Sample]
    report: ValidationReport
    name: str
    files: list[Path] = field(default_factory=list)

    @cached_property
    def digest(self) -> list[dict]:
        """Each file's name and content hash (in-memory samples: their count and one hash)."""
        if self.files:
            return [{"file": f.name, "sha256": digest(f)} for f in self.files]
        h = hashlib.sha256()
        for s in self.samples:
            h.update(json.dumps([s.id, s.instruction, s.history, s.gt_action, [float(v) for v in s.gt_bbox],
                                 s.gt_input_text, list(s.image_size)]).encode())
            h.update(hashlib.sha256(s.image_bytes or b"").digest())
        return [{"samples": len(self.samples), "sha256": h.hexdigest()}]

    def require_rows(self) -> None:
        """Raise `RunFailed` with the validation summary (file, row, column, why) when no row is
        usable, or when one of the files gave none (a benchmark silently missing a file would
        score something else)."""
        if not self.samples:
            raise RunFailed(f"nothing to evaluate in {self.name}: no row passed validation\n{self.report.summary()}")
        empty = self.report.empty_files()
        if empty:
            raise RunFailed(f"{len(empty)} of {len(self.report.files)} file(s) in {self.name} gave no usable row "
                            f"({', '.join(empty)}); fix or remove them\n{self.report.summary()}")


def run_about(policy_name: str, bench: Benchmark, settings: dict) -> dict:
    """What `run.json` notes beside the record it compares: the policy's name, the data files and
    every prediction setting with the preset that chose it (`prediction_settings`)."""
    return {"policy_name": policy_name, "data_files": [str(f) for f in bench.files], "settings": settings}


def run_record(bench: Benchmark, policy: dict, compat: str, min_pixels: int, max_pixels: int,
               max_new_tokens: int | None, limit: int | None) -> dict:
    """What a run folder's predictions depend on: the policy's identity (`completer_identity`),
    how completions are read, the resize bounds, the longest answer, the data and the row limit."""
    return as_stored({"policy": policy, "compat": compat, "min_pixels": min_pixels, "max_pixels": max_pixels,
                      "max_new_tokens": max_new_tokens, "data": bench.digest, "limit": limit})


def open_run_folder(out_dir: str | os.PathLike, made_by: dict, *, overwrite: bool = False,
                    about: dict | None = None) -> Path:
    """Make `out_dir` the folder of the run `made_by` describes (`run_record`), before anything is
    predicted (`runfolder.open_run_folder`): resumed when its `run.json` matches, refused with
    `RunFolderMismatch` when it holds predictions made otherwise, unless `overwrite` deletes them."""
    return open_folder(out_dir, made_by, results=[PREDICTIONS], clear=[METRICS_JSON, METRICS_MD],
                       holds=f"predictions ({PREDICTIONS})", resume="to resume that run, run again with the same "
                       "arguments", overwrite=overwrite, about=about)


# --- records ---------------------------------------------------------------------------------------


def row_keys(samples: Iterable[Sample]) -> list[str]:
    """Unique record ids for samples in order: the sample id, with `#2`, `#3`, … on repeats."""
    seen: Counter = Counter()
    keys = []
    for s in samples:
        seen[s.id] += 1
        keys.append(s.id if seen[s.id] == 1 else f"{s.id}#{seen[s.id]}")
    return keys


def make_record(row: EvalRow, key: str, completion: str, compat: str = "official") -> dict:
    """One prediction record: ground truth, sizes, the raw completion and its reading, with the
    predicted point in the stored image's pixels (`pred_coord`) and in the model frame."""
    s = row.sample
    parsed = parse_completion(completion, compat)
    # Without an answer block nothing was read: no action, point or text (every test misses).
    pred = parsed.prediction if parsed.answer is not None else None
    coord = coord_model = None
    if pred is not None and pred.has_point:
        coord_model = [pred.point[0], pred.point[1]]
        coord = rescale_pixels(coord_model, row.model_size, s.image_size)
    return {
        "id": key,
        "benchmark": Path(s.source).stem if s.source else "",
        "group": s.group or s.platform or "",
        "ui_type": s.ui_type or "",
        "instruction": s.instruction,
        "history": s.history,
        "gt_action": s.gt_action,
        "gt_bbox": [float(v) for v in s.gt_bbox],
        "gt_input_text": s.gt_input_text,
        "image_size": list(s.image_size),
        "model_size": list(row.model_size),
        "completion": completion,
        "pred_action": pred.action if pred is not None else None,
        "pred_coord": coord,
        "pred_coord_model": coord_model,
        "pred_input_text": pred.input_text if pred is not None else None,
        "format_ok": parsed.format_ok,
        "parse_error": parsed.error,
        "compat": compat,
    }


def read_records(path: str | os.PathLike) -> list[dict]:
    """Records of a predictions file, in file order; a line cut short by a crash, and any line
    without an "id", is skipped (a missing file has none)."""
    return [r for r in iter_jsonl(path) if "id" in r]


def _clean_file(path: Path) -> dict[str, dict]:
    """Existing records by id; rewrites the file without broken lines so appending stays valid."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    records = read_records(path)
    if len(text.splitlines()) != len(records) or (text and not text.endswith("\n")):
        write_jsonl_atomic(path, records)
    return {r["id"]: r for r in records}


def predict(policy: Any, rows: Sequence[EvalRow], out_path: str | os.PathLike, batch_size: int = 4,
            max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, compat: str = "official", *,
            min_pixels: int | None = None, max_pixels: int | None = None, keys: Sequence[str] | None = None,
            seed: int = 0, progress: bool = True) -> list[dict]:
    """Predict every row and append one record per row to `out_path` (JSONL), flushed per batch.

    Rows whose id is already in the file are skipped (resume after a crash: nothing computed is
    lost, and the finished file equals an uninterrupted run's). Only the compat of those records is
    checked here; `evaluate` checks that its folder was begun by the same policy, data and settings.

    Args:
        policy: what answers: a baseline name ("oracle", "random"), a `Completer`, or a loaded
            policy (`modeling.Policy`), see `as_completer`.
        rows: the rows to predict (`data.to_eval_rows`), made with the same pixel bounds as below.
        out_path: the predictions JSONL file; records already in it are kept and not recomputed.
        batch_size: rows per call of the policy (at least 1).
        max_new_tokens: the longest completion generated.
        compat: how completions are read (`actions.parse_completion`): "official" or "strict";
            resuming a file read with another `compat` is refused.
        min_pixels: the lower resize bound of the images (default: the processor's for a model,
            GUI-R1's for a baseline); it must be the one `rows` were made with.
        max_pixels: the upper resize bound, likewise.
        keys: one unique record id per row (default `row_keys`: the sample ids, `#2`, … on repeats).
        seed: the random baseline's seed when `policy` is "random".
        progress: show a progress bar.

    Returns:
        The records of `rows`, in order (`make_record`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    completer = as_completer(policy, seed)
    lo, hi = _pixels(completer, min_pixels, max_pixels)
    rows = list(rows)
    keys = list(keys) if keys is not None else row_keys(r.sample for r in rows)
    if len(keys) != len(rows) or len(set(keys)) != len(keys):
        raise ValueError("keys must be unique, one per row")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    done = _clean_file(out_path)
    wanted = set(keys)
    other = {r.get("compat") for k, r in done.items() if k in wanted} - {compat}
    if other:
        raise ValueError(f"{out_path} holds records read with compat={sorted(map(str, other))}, not {compat!r}; "
                         "resume with the same compat or write to another file")
    todo = [(k, r) for k, r in zip(keys, rows, strict=True) if k not in done]

    from tqdm.auto import tqdm

    bar = tqdm(total=len(rows), initial=len(rows) - len(todo), desc=f"predict {completer.name}",
               disable=not progress, leave=False)
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            completions = _complete_batch(completer, batch, lo, hi, max_new_tokens)
            records = [make_record(row, key, text, compat)
                       for (key, row), text in zip(batch, completions, strict=True)]
            append_jsonl(out_path, records)  # flushed per batch: a crash loses at most this batch
            done.update((r["id"], r) for r in records)
            bar.update(len(batch))
    finally:
        bar.close()
    return [done[k] for k in keys]


def _complete_batch(completer: Completer, batch: Sequence[tuple[str, EvalRow]], lo: int, hi: int,
                    max_new_tokens: int) -> list[str]:
    """One completion per (key, row) of `batch`, the images resized with the bounds the rows were made for."""
    images = []
    for key, row in batch:
        image, size = model_view(row.sample, lo, hi)
        if tuple(size) != tuple(row.model_size):
            raise ValueError(f"row {key}: model_view gives {size} but the row was made for "
                             f"{tuple(row.model_size)}; use the same min/max pixels for both")
        images.append(image)
    completions = completer.complete([r for _, r in batch], images, [k for k, _ in batch], max_new_tokens)
    if len(completions) != len(batch):
        raise RuntimeError(f"{completer.name} returned {len(completions)} completions for {len(batch)} rows")
    return completions


def _pixels(completer, min_pixels, max_pixels) -> tuple[int, int]:
    lo, hi = min_pixels, max_pixels
    if isinstance(completer, ModelCompleter):
        plo, phi = processor_pixels(completer.policy.processor)
        lo = lo if lo is not None else plo
        hi = hi if hi is not None else phi
    return (lo if lo is not None else GUI_R1_MIN_PIXELS), (hi if hi is not None else GUI_R1_MAX_PIXELS)


# --- benchmarks -------------------------------------------------------------------------------------


def load_benchmark(data: Any, limit: int | None = None) -> Benchmark:
    """The validated rows of a benchmark file, a folder of them (`limit` rows per file), a
    `Dataset` or a list of samples (`limit` rows in all), with the validation report."""
    if isinstance(data, Benchmark):
        return data
    if isinstance(data, Dataset):
        return Benchmark(list(data.samples)[:limit], data.report, "samples")
    if isinstance(data, (list, tuple)):
        n = len(data[:limit])
        return Benchmark(list(data)[:limit], ValidationReport(rows_read=n, rows_kept=n), "samples")
    files = resolve_files(data)
    samples: list[Sample] = []
    reports = []
    for f in files:
        ds = load_gui_r1(f, limit=limit)
        samples += ds.samples
        reports.append(ds.report)
    path = Path(data)
    name = path.stem if path.is_file() else (path.name or str(data))
    return Benchmark(samples, ValidationReport.combine(reports), name, files)


def samples_by_id(data: Any, limit: int | None = None) -> dict[str, Sample]:
    """Record id -> sample, as `evaluate` numbers them (for pictures of predictions)."""
    samples = load_benchmark(data, limit).samples
    return dict(zip(row_keys(samples), samples, strict=True))


def check_settings(limit: int | None, min_pixels: int | None, max_pixels: int | None,
                   flags: dict[str, str] | None = None) -> None:
    """Refuse (`UsageError`) a row limit below 1 and pixel bounds that are not positive or not in
    order; `flags` renames the arguments in the message (e.g. `{"limit": "--limit"}`)."""
    name = {"limit": "limit", "min_pixels": "min_pixels", "max_pixels": "max_pixels", **(flags or {})}
    if limit is not None and limit < 1:
        raise UsageError(f"{name['limit']} must be at least 1 (rows per file; leave it out for all rows), got {limit}")
    for key, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
        if value is not None and value < 1:
            raise UsageError(f"{name[key]} must be a positive number of pixels, got {value}")
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise UsageError(f"{name['min_pixels']} ({min_pixels}) is above {name['max_pixels']} ({max_pixels}); "
                         "swap them or raise the upper bound")


def _report_skipped(bench: Benchmark) -> dict:
    """Print why rows or files were skipped (stderr) and return what metrics.json records of it."""
    report = bench.report
    if report.rows_skipped or report.errors:
        print(f"[evaluate] {report.rows_skipped} row(s) skipped by validation:\n{report.summary()}", file=sys.stderr)
    return {"rows_read": report.rows_read, "rows_kept": report.rows_kept, "rows_skipped": report.rows_skipped,
            "skipped_by_column": report.by_column(), "summary": report.summary()}


def resolve_completer(policy: Any, settings: dict, seed: int = 0) -> tuple[Completer, dict]:
    """The completer for `policy` (`as_completer`) and `settings` (`prediction_settings`) made
    whole: a `ModelCompleter` without a repetition penalty of its own gets the preset's; the pixel
    bounds left None are the processor's for a model, GUI-R1's for a baseline. A preset's pixel
    bounds that the policy's processor does not resize within are refused (`UsageError`): its
    points would be read in another frame."""
    completer = as_completer(policy, seed)
    settings = dict(settings)
    if isinstance(completer, ModelCompleter):
        if completer.repetition_penalty is None and settings["repetition_penalty"] is not None:
            completer = completer.with_repetition_penalty(settings["repetition_penalty"])
        settings["repetition_penalty"] = completer.penalty
        processor = processor_pixels(completer.policy.processor)
        wanted = (settings["min_pixels"], settings["max_pixels"])
        if settings["preset"] is not None and None not in processor and processor != wanted:
            raise UsageError(f"the policy's processor resizes screenshots within {processor[0]}..{processor[1]} "
                             f"pixels, the run asks {wanted[0]}..{wanted[1]} (preset {settings['preset']!r}): load "
                             f"the policy with min_pixels={wanted[0]}, max_pixels={wanted[1]} "
                             "(modeling.load_policy), or pass the processor's bounds")
    else:
        settings["repetition_penalty"] = settings["temperature"] = settings["top_p"] = None
    settings["min_pixels"], settings["max_pixels"] = _pixels(completer, settings["min_pixels"], settings["max_pixels"])
    return completer, settings


def evaluate(data: Any, policy: Any, out_dir: str | os.PathLike, *, benchmark: str | None = None, batch_size: int = 4,
             max_new_tokens: int | None = None, compat: str = "official", min_pixels: int | None = None,
             max_pixels: int | None = None, limit: int | None = None, seed: int = 0, progress: bool = True,
             overwrite: bool = False, preset: str | Preset | None = None, blind: bool = False) -> dict:
    """Predict a benchmark with a policy and write `predictions.jsonl`, `metrics.json` and
    `metrics.md` into `out_dir`; an interrupted run in the same `out_dir` with the same arguments
    resumes (`run.json` records what made the folder, see `open_run_folder`).

    Args:
        data: a benchmark parquet file, a folder of them, a `data.Dataset`, a list of samples or a
            `Benchmark` (`load_benchmark`).
        policy: a loaded policy, a `Completer`, or "oracle"/"random" (see `as_completer`).
        out_dir: the output folder.
        benchmark: the name the metrics carry (default: the file's stem or the folder's name).
        batch_size: rows per call of the policy.
        max_new_tokens: the longest completion generated (None: the preset's, else
            `DEFAULT_MAX_NEW_TOKENS`).
        compat: how completions are read and GR measured: "official" (the original's rules) or
            "strict".
        min_pixels: the lower resize bound (None: the preset's; without one the processor's for a
            model, else GUI-R1's).
        max_pixels: the upper resize bound, likewise.
        limit: at most this many rows per file (None: all; below 1 is refused).
        seed: the random baseline's seed.
        progress: show a progress bar.
        overwrite: when `out_dir` holds predictions made otherwise, delete them and start fresh
            instead of refusing (`RunFolderMismatch`).
        preset: "paper" or "fast" (`PRESETS`): the values above left None, and the repetition
            penalty of a model policy that has none of its own, come from it.
        blind: score the same rows with every screenshot replaced by a white image of the same
            size (`blind`): does the policy look at the screen? The run record and the metrics
            say `blind`; a blind run never resumes a seeing run's folder, nor the reverse.

    Returns:
        The metrics (`metrics.summarize`) plus the policy's name, `compat`, the rows and files
        skipped by validation (`skipped`; `skipped_rows` and `validation` as before), the pixel
        bounds, `max_new_tokens`, and every resolved value with the preset (`settings`);
        `per_file` is added when the rows come from several files.

    Raises:
        RunFailed: no row of `data`, or of one of its files, passed validation (the message
            holds the summary).
    """
    wanted = prediction_settings(preset, max_new_tokens=max_new_tokens, min_pixels=min_pixels, max_pixels=max_pixels)
    completer, settings = resolve_completer(policy, wanted, seed)
    lo, hi, tokens = settings["min_pixels"], settings["max_pixels"], settings["max_new_tokens"]
    check_settings(limit, lo, hi)
    bench = load_benchmark(data, limit)
    bench.require_rows()
    if blind:
        bench = replace(bench, samples=blind_samples(bench.samples))
    validation = _report_skipped(bench)
    rows = to_eval_rows(bench.samples, lo, hi)
    made_by = blind_record(run_record(bench, completer_identity(completer), compat, lo, hi, tokens, limit), blind)
    out = open_run_folder(out_dir, made_by, overwrite=overwrite, about=run_about(completer.name, bench, settings))
    records = predict(completer, rows, out / PREDICTIONS, batch_size, tokens, compat,
                      min_pixels=lo, max_pixels=hi, keys=row_keys(bench.samples), seed=seed, progress=progress)
    summary = summarize(records, benchmark or bench.name)
    summary.update({"policy": completer.name, "compat": compat, "skipped": bench.report.skipped(),
                    "skipped_rows": bench.report.rows_skipped, "validation": validation, "min_pixels": lo,
                    "max_pixels": hi, "max_new_tokens": tokens, "preset": settings["preset"], "settings": settings,
                    "blind": blind})
    stems = sorted({r["benchmark"] for r in records})
    if len(stems) > 1:
        summary["per_file"] = {s: summarize([r for r in records if r["benchmark"] == s], s) for s in stems}
    write_json_atomic(out / METRICS_JSON, summary)
    write_text_atomic(out / METRICS_MD, (BLIND_NOTE if blind else "") + to_markdown(summary) + "\n")
    return summary


# --- command line -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line's flags (`--data` or `--suite`), checked; `evaluate_cli` dispatches on them."""
    ap = argparse.ArgumentParser(prog="gui-r1-lite evaluate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--data", help="benchmark parquet file or folder")
    what.add_argument("--suite", help="folder of GUI-R1's benchmark files: each into OUT/<stem>/, one table")
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--model", help="hub id or local model folder")
    who.add_argument("--baseline", choices=sorted(BASELINES))
    ap.add_argument("--adapter", default=None, help="saved LoRA adapter folder (with --model)")
    ap.add_argument("--quantization", choices=QUANTIZATIONS, default=None)
    ap.add_argument("--out", required=True, help="output folder (resumes a run there made with the same arguments)")
    ap.add_argument("--overwrite", action="store_true",
                    help="when --out holds predictions made otherwise, delete them and start fresh")
    ap.add_argument("--preset", choices=sorted(PRESETS), default=None,
                    help=f"prediction settings: paper (the original's inference scripts) or fast; default "
                         f"{DEFAULT_PRESET}; the flags below override it")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the preset's (paper 1024, fast 256)")
    ap.add_argument("--min-pixels", type=int, default=None, help="default: the preset's (paper 3136, fast 262144)")
    ap.add_argument("--max-pixels", type=int, default=None,
                    help="default: the preset's (paper 12845056, fast 1258291)")
    ap.add_argument("--repetition-penalty", type=float, default=None, help="default: the preset's (paper 1.05)")
    ap.add_argument("--limit", type=int, default=None, help="rows per file (default: all)")
    ap.add_argument("--compat", choices=COMPATS, default="official")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random baseline")
    ap.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: CUDA when available)")
    ap.add_argument("--blind", action="store_true",
                    help="every screenshot replaced by a white image of the same size: does the policy look? "
                         "(compare with a seeing run in another --out)")
    args = ap.parse_args(argv)
    if args.model is None and (args.adapter or args.quantization):
        ap.error("--adapter and --quantization need --model")
    if args.blind and args.suite is not None:
        ap.error("--blind goes with --data (score one benchmark blind, then compare it with its seeing run)")
    for flag, value in (("--batch-size", args.batch_size), ("--max-new-tokens", args.max_new_tokens)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    if args.repetition_penalty is not None and not args.repetition_penalty > 0:
        raise UsageError(f"--repetition-penalty must be positive (1.0: none), got {args.repetition_penalty}")
    args.settings = prediction_settings(args.preset or DEFAULT_PRESET, max_new_tokens=args.max_new_tokens,
                                        min_pixels=args.min_pixels, max_pixels=args.max_pixels,
                                        repetition_penalty=args.repetition_penalty)
    check_settings(args.limit, args.settings["min_pixels"], args.settings["max_pixels"],
                   {"limit": "--limit", "min_pixels": "--min-pixels", "max_pixels": "--max-pixels"})
    return args


def policy_from_args(args: argparse.Namespace) -> tuple[Completer | None, dict, str, dict]:
    """The command line's policy before any model loads: the baseline (None for a model), the
    identity its run folders record (`completer_identity`, `model_identity`), its name, and the
    settings as `evaluate` will resolve them (`resolve_completer`)."""
    if args.model is None:
        baseline, settings = resolve_completer(make_baseline(args.baseline, args.seed), args.settings, args.seed)
        return baseline, completer_identity(baseline), baseline.name, settings
    identity = model_identity(args.model, args.adapter, args.quantization,
                              repetition_penalty=args.settings["repetition_penalty"])
    return None, identity, "+".join(filter(None, (args.model, args.adapter))), args.settings


def load_model_completer(args: argparse.Namespace, name: str) -> ModelCompleter:
    """The command line's model, loaded at the run's pixel bounds with its repetition penalty."""
    from .modeling import load_policy

    s = args.settings
    policy = load_policy(args.model, quantization=args.quantization, lora=None, min_pixels=s["min_pixels"],
                         max_pixels=s["max_pixels"], adapter=args.adapter, device=args.device)
    return ModelCompleter(policy, name=name, repetition_penalty=s["repetition_penalty"])


def main(argv: list[str] | None = None) -> int:
    """The command line: evaluate a model or a baseline on benchmark files and print the metrics
    (`--suite`, every GUI-R1 benchmark file of a folder, runs through `evaluate_cli`, which the
    `gui-r1-lite evaluate` command is). Everything that can be checked without the model (flags,
    --out, the data, what the run folder holds) is checked before the model loads."""
    args = parse_args(argv)
    if args.suite is not None:
        raise UsageError("--suite runs through the command, evaluate_cli.main (python -m gui_r1_lite.evaluate "
                         "--suite DIR ..., gui-r1-lite evaluate --suite DIR ...)")
    writable_folder(args.out, "--out")
    bench = load_benchmark(args.data, args.limit)
    bench.require_rows()
    policy, identity, name, s = policy_from_args(args)
    made_by = blind_record(run_record(bench, identity, args.compat, s["min_pixels"], s["max_pixels"],
                                      s["max_new_tokens"], args.limit), args.blind)
    open_run_folder(args.out, made_by, overwrite=args.overwrite, about=run_about(name, bench, s))
    policy = policy or load_model_completer(args, name)
    summary = evaluate(bench, policy, args.out, batch_size=args.batch_size, compat=args.compat, limit=args.limit,
                       seed=args.seed, preset=s["preset"], max_new_tokens=s["max_new_tokens"],
                       min_pixels=s["min_pixels"], max_pixels=s["max_pixels"], blind=args.blind)
    print((BLIND_NOTE if args.blind else "") + to_markdown(summary))
    print(f"wrote {Path(args.out) / PREDICTIONS}, {METRICS_JSON}, {METRICS_MD}")
    return 0


if __name__ == "__main__":  # the command, --suite included, is evaluate_cli's (it imports this module)
    from .evaluate_cli import main as command

    sys.exit(run_cli(command, prog="gui-r1-lite evaluate"))
