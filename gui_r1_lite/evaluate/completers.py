"""What produces completions: the `Completer` protocol `predict` calls, the oracle and random
baselines, and `ModelCompleter` (batched generation with a loaded policy)."""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any, Protocol

from ..actions import (
    NO_TEXT,
    POINT_ACTIONS,
    SCROLL_DIRECTIONS,
    TEXT_ACTIONS,
    Action,
    action_space,
    format_answer,
    target_action,
)
from ..data import EvalRow, to_model_frame
from ..geometry import GUI_R1_MAX_PIXELS, GUI_R1_MIN_PIXELS, NO_POINT
from ..runfolder import model_identity

#: Sampling as GRPO samples its groups (TRL passes top_k=0 and repetition_penalty 1.0): only
#: `temperature` and `top_p` shape the distribution; the other fields hold their no-op values, never
#: None, so none is refilled from the model's own generation config.
SAMPLING_FIELDS: dict[str, Any] = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0,
                                   "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "repetition_penalty": 1.0,
                                   "no_repeat_ngram_size": 0}
#: Greedy decoding without a repetition penalty; the sampling-only fields hold transformers' own
#: defaults, which greedy decoding ignores (and does not warn about).
GREEDY_FIELDS: dict[str, Any] = {**SAMPLING_FIELDS, "top_k": 50, "min_p": None}


class Completer(Protocol):
    """Anything `predict` can ask for completions: a baseline, or `ModelCompleter` around a policy."""

    name: str

    def complete(self, rows: Sequence[EvalRow], images: Sequence[Any], keys: Sequence[str],
                 max_new_tokens: int) -> list[str]:
        """One completion per row; `images` are the rows' screenshots already in the model frame,
        `keys` the rows' record ids."""
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
        return {"baseline": "oracle"}


class RandomBaseline:
    """A uniformly random point in the model frame and a random action of the row's action space;
    each row has its own generator seeded by (`seed`, row id), so batches and resumes agree."""

    name = "random"
    TEXT = "random text"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def identity(self) -> dict:
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
    """The baseline called `name`; `seed` seeds the random one."""
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
    Greedy by default; `do_sample=True` samples `num_return_sequences` answers per prompt as GRPO
    samples its groups (difficulty curation). `repetition_penalty` None means none (1.0) unless
    `evaluate`'s preset sets one. No decoding setting comes from the model's own generation config."""

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
        """The repetition penalty `generate` applies."""
        return 1.0 if self.repetition_penalty is None else float(self.repetition_penalty)

    def with_repetition_penalty(self, value: float) -> ModelCompleter:
        """A copy of this completer with `repetition_penalty` `value`."""
        return ModelCompleter(self.policy, self.name, do_sample=self.do_sample, temperature=self.temperature,
                              top_p=self.top_p, num_return_sequences=self.num_return_sequences,
                              repetition_penalty=value)

    def generation_config(self, max_new_tokens: int):
        """The model's `generation_config` with every decoding field set here: `generate` refills
        each field left None from it, and Qwen2.5-VL-3B-Instruct ships near-greedy sampling
        (temperature 1e-06, repetition_penalty 1.05)."""
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
        """`num_return_sequences` consecutive completions per chat of `messages`. Checks the processor
        sees each image at `model_sizes` (else predicted points would be read in the wrong frame)."""
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
        """The model, adapter, quantisation and decoding settings (`model_identity`), not the name."""
        p = self.policy
        return model_identity(p.source, getattr(p, "adapter", None), getattr(p, "quantization", None),
                              do_sample=self.do_sample, temperature=self.temperature, top_p=self.top_p,
                              num_return_sequences=self.num_return_sequences, repetition_penalty=self.penalty)


def as_completer(policy: Any, seed: int = 0) -> Completer:
    """A baseline name, a `Completer` or a loaded policy, as something `predict` can call."""
    if isinstance(policy, str):
        return make_baseline(policy, seed)
    if hasattr(policy, "complete"):
        return policy
    if hasattr(policy, "model") and hasattr(policy, "processor"):
        return ModelCompleter(policy)
    raise TypeError(f"expected a baseline name {sorted(BASELINES)}, a Completer or a Policy, "
                    f"got {type(policy).__name__}")


def completer_pixels(completer, min_pixels, max_pixels) -> tuple[int, int]:
    """The resize bounds a run asks with: each one given, else a model's processor's, else GUI-R1's."""
    lo, hi = processor_pixels(completer.policy.processor) if isinstance(completer, ModelCompleter) else (None, None)
    lo = min_pixels if min_pixels is not None else lo
    hi = max_pixels if max_pixels is not None else hi
    return (lo if lo is not None else GUI_R1_MIN_PIXELS), (hi if hi is not None else GUI_R1_MAX_PIXELS)
