"""The pretraining loop: plain supervised fine-tuning of every weight on generated pages, drawn fresh
each step. It makes the same rows as `gui_r1_lite.train --method sft` (`data.to_train_rows`, the
GUI-R1 prompt, `training.trainer.sft_completion` as the target, loss on the answer only), but draws
new pages every step instead of reading a parquet file, so no page is ever seen twice and the
curriculum (page settings per stage) can change while it runs."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence

from gui_r1_lite.data import Sample, to_train_rows
from gui_r1_lite.training.trainer import sft_completion


def encode_batch(processor, samples: Sequence[Sample], pixels: tuple[int, int], short_prompt: bool = False) -> dict:
    """Model inputs and labels for `samples`: the chat template of prompt + SFT answer, labels -100
    on the prompt and padding (TRL's `completion_only_loss`). `short_prompt` keeps only the
    instruction as the user's text (an early curriculum stage: fewer tokens between page and answer)."""
    rows = to_train_rows(samples, *pixels)
    if short_prompt:
        for r, s in zip(rows, samples, strict=True):
            r["prompt"] = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": s.instruction}]}]
    full, prompts = [], []
    for r in rows:
        full.append(processor.apply_chat_template(r["prompt"] + sft_completion(r), tokenize=False))
        prompts.append(processor.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True))
    tok = processor.tokenizer
    side, tok.padding_side = tok.padding_side, "right"
    try:
        inputs = processor(text=full, images=[r["image"] for r in rows], padding=True, return_tensors="pt")
        prompt_lens = [len(x) for x in processor(text=prompts, images=[r["image"] for r in rows])["input_ids"]]
    finally:
        tok.padding_side = side
    labels = inputs["input_ids"].clone()
    for i, n in enumerate(prompt_lens):
        labels[i, :n] = -100
    labels[inputs["attention_mask"] == 0] = -100
    inputs["labels"] = labels
    return dict(inputs)


def _is_vision_block(name: str) -> bool:
    """A parameter of the vision tower other than its merger (patch embedding, blocks)."""
    return ".visual." in f".{name}" and ".merger." not in name


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up to `peak` over `warmup` steps, then cosine to a tenth of it at `total`."""
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def train_loop(model, processor, draw: Callable[[int, random.Random], list[Sample]], *, steps: int,
               lr: float, warmup: int, weight_decay: float, pixels: tuple[int, int], seed: int,
               log: Callable[[dict], None], evaluate: Callable[[int], dict] | None = None,
               eval_every: int = 0, log_every: int = 25, short_until: int = 0,
               vision_lr_scale: float = 1.0) -> None:
    """`steps` AdamW steps on `draw(step, rng)`'s batches; `log` gets the loss every `log_every`
    steps and `evaluate(step)`'s figures every `eval_every` steps; the first `short_until` steps use
    `short_prompt` rows; the vision tower's patch embedding and blocks learn at `vision_lr_scale` x
    the rate (0: frozen)."""
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in named]
    # The vision tower's own blocks (not the merger) may learn slower: with the page's content still
    # unused by the decoder, their gradients are noise, and full-rate steps on noise grow a constant
    # part of every image token that drowns the content (measured: `image_spread`).
    groups = []
    for vision in (False, True):
        for decays in (True, False):
            members = [p for n, p in named if (p.ndim >= 2) == decays and _is_vision_block(n) == vision]
            if members:
                groups.append({"params": members, "weight_decay": weight_decay if decays else 0.0,
                               "scale": vision_lr_scale if vision else 1.0})
    opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98))
    start, losses = time.monotonic(), []
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr, warmup) * group["scale"]
        batch = encode_batch(processor, draw(step, rng), pixels, short_prompt=step < short_until)
        loss = model(**batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
        done = step + 1
        if done % log_every == 0 or done == steps:
            log({"step": done, "loss": sum(losses) / len(losses), "lr": opt.param_groups[0]["lr"],
                 "seconds": round(time.monotonic() - start, 1)})
            losses = []
        if evaluate is not None and eval_every and (done % eval_every == 0 or done == steps):
            model.eval()
            log({"step": done, "seconds": round(time.monotonic() - start, 1), **evaluate(done)})
            model.train()
