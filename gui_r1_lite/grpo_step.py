"""One GRPO update written out by hand, so that notebook 04 can show every part of it.

Training runs TRL's `GRPOTrainer` (`training/`); this module does not replace it. It exists because
`trainer.train()` hides the ratio, the clip, the KL estimate and how the loss is averaged, and those
choices are what GRPO is. Each function is one step of the update, on the policy loaded as the GPU
recipe loads Qwen2.5-VL-3B (4-bit NF4 + LoRA), following TRL 1.16's `GRPOTrainer._compute_loss` term
for term; `tests/test_grpo_by_hand.py` holds the loss and its LoRA gradients equal to TRL's.

The update, for one prompt and its group of G sampled answers o_1..o_G:

    A_i       = (r_i - mean(r)) / (std(r) + 1e-4)                      group-relative advantage
    ratio_i,t = exp(log pi(o_i,t) - log pi_old(o_i,t))                 per token (importance_sampling_level "token")
    term_i,t  = -min(ratio * A_i, clip(ratio, 1 - eps, 1 + eps_high) * A_i) + beta * KL_i,t * ratio
    KL_i,t    = exp(ref - logp) - (ref - logp) - 1                     "k3", >= 0, reference = adapter off
    loss      = grpo: mean over answers of (mean over that answer's tokens)
                dapo: sum over every token / number of answer tokens of the whole update's batch

On-policy (TRL's default: one optimiser step per generation) pi_old is pi itself, detached: the ratio is
exactly 1 and the clip never acts; its gradient is still the gradient of log pi. GUI-R1 (EasyR1/verl)
averages over every answer token of an update's batch ("token mean"): TRL's `dapo`. TRL 1.16 also
multiplies the KL term by the ratio by default (`use_bias_correction_kl`): same value on-policy, another
gradient; verl adds the plain k3 term.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rewards import gui_r1_score

#: The GPU recipe that trains Qwen2.5-VL-3B in 4-bit with LoRA (the settings this step follows).
RECIPE = Path(__file__).resolve().parents[1] / "configs" / "grpo_qwen2_5_vl_3b_qlora.yaml"
#: How TRL's loss types average the per-token terms that this module writes out.
LOSS_TYPES = ("grpo", "dapo")


def recipe_config(model: str | Path, recipe: str | Path = RECIPE, **overrides: Any):
    """The recipe's `training.TrainConfig` with `model` (e.g. the stand-in's folder) in place of the 3B,
    on the CPU; `overrides` change any other setting (pixels, answer length) by its recipe name."""
    from .training import TrainConfig

    return TrainConfig.from_yaml(recipe, **{"model": str(model), "device": "cpu", "output_dir": "runs/grpo_step",
                                            **overrides})


def load_like_recipe(cfg):
    """The policy as a training run of `cfg` loads it (quantisation, LoRA, seeded initialisation)."""
    from .training.trainer import load_model

    return load_model(cfg, cfg.trainer_args())[0]


def sampling_settings(cfg) -> dict[str, Any]:
    """The generation settings TRL's trainer samples a group with under `cfg`."""
    names = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")
    return {"num_generations": cfg.get("num_generations"), "max_new_tokens": cfg.get("max_completion_length"),
            **{n: cfg.get(n) for n in names}}


@dataclass
class Batch:
    """Answers to prompts as the trainer batches them: prompts padded on the left, answers on the right
    (each up to and including its end-of-turn token), one screenshot per row."""

    prompt_ids: Any
    prompt_mask: Any
    completion_ids: Any
    completion_mask: Any
    vision: dict = field(default_factory=dict)   # pixel_values, image_grid_thw (and mm_token_type_ids)
    texts: list[str] = field(default_factory=list)

    def model_inputs(self) -> dict[str, Any]:
        """The forward pass's inputs: prompt and answer side by side, the screenshots' tensors."""
        import torch

        vision = dict(self.vision)
        if "mm_token_type_ids" in vision:  # the answer holds no image token
            vision["mm_token_type_ids"] = torch.cat(
                [vision["mm_token_type_ids"], torch.zeros_like(self.completion_ids)], dim=1)
        return {"input_ids": torch.cat([self.prompt_ids, self.completion_ids], dim=1),
                "attention_mask": torch.cat([self.prompt_mask, self.completion_mask], dim=1), **vision}


def prompt_inputs(processor, rows: list[dict]) -> dict[str, Any]:
    """The processor's tensors for training rows: chat template with the generation prompt, the
    screenshot resized within the processor's pixel bounds."""
    texts = [processor.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False) for r in rows]
    return processor(text=texts, images=[r["image"] for r in rows], padding=True, return_tensors="pt")


def eos_ids(policy) -> list[int]:
    """Every token that ends an answer, as TRL counts them (the model's eos ids and the tokenizer's)."""
    ids = policy.model.generation_config.eos_token_id
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    eos = policy.processor.tokenizer.eos_token_id
    return ids if eos in ids else [eos, *ids]


def make_batch(policy, rows: list[dict], answers: list[list[int]]) -> Batch:
    """A `Batch` of `answers` (token ids, each already cut after its first end token) to `rows` (one row
    per answer: repeat a row G times for its group)."""
    import torch

    inputs = prompt_inputs(policy.processor, rows)
    pad = policy.processor.tokenizer.pad_token_id
    width = max(len(a) for a in answers)
    ids = torch.tensor([a + [pad] * (width - len(a)) for a in answers])
    mask = torch.tensor([[1] * len(a) + [0] * (width - len(a)) for a in answers])
    vision = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    texts = policy.processor.batch_decode(ids, skip_special_tokens=True)
    return Batch(inputs["input_ids"], inputs["attention_mask"], ids, mask, vision, texts)


def answer_ids(policy, text: str) -> list[int]:
    """A written answer as the policy would emit it: its tokens, then the end-of-turn token."""
    return policy.processor.tokenizer(text, add_special_tokens=False)["input_ids"] + [eos_ids(policy)[-1]]


def sample_group(policy, row: dict, settings: dict[str, Any], seed: int = 0) -> list[list[int]]:
    """G answers to `row` sampled with `settings` (`sampling_settings`), as TRL samples them: every field
    given (the model's own generation config would refill a missing one), image tokens suppressed,
    each answer cut after its first end token."""
    import torch
    from transformers import GenerationConfig

    tok = policy.processor.tokenizer
    config = GenerationConfig(
        do_sample=True, max_new_tokens=settings["max_new_tokens"], temperature=settings["temperature"],
        top_p=settings["top_p"], top_k=settings["top_k"], min_p=settings["min_p"],
        repetition_penalty=settings["repetition_penalty"], pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id, eos_token_id=eos_ids(policy),
        suppress_tokens=[policy.model.config.image_token_id])
    inputs = prompt_inputs(policy.processor, [row] * settings["num_generations"]).to(policy.device)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = policy.model.generate(**inputs, generation_config=config)
    ends = set(eos_ids(policy))
    answers = []
    for seq in out[:, inputs["input_ids"].shape[1]:].tolist():
        cut = next((i + 1 for i, t in enumerate(seq) if t in ends), len(seq))
        answers.append(seq[:cut])
    return answers


def score(texts: list[str], row: dict, compat: str = "official") -> list[dict[str, float]]:
    """The GUI-R1 reward of each answer to `row`: format, accuracy and reward (0.8 acc + 0.2 format)."""
    return [gui_r1_score(t, row["gt_action"], row["gt_bbox"], row["gt_input_text"], compat) for t in texts]


def token_logps(model, batch: Batch, temperature: float):
    """log pi(token) of every answer token: the logits that predict it, divided by the sampling
    temperature (TRL scores answers at the temperature they were sampled at), log-softmax, the token's
    entry. Shape (answers, longest answer); padding positions hold values that masks discard."""
    import torch

    logits = model(**batch.model_inputs(), use_cache=False).logits
    width = batch.completion_ids.shape[1]
    logits = logits[:, -width - 1:-1].float() / temperature  # position t predicts token t + 1
    return torch.log_softmax(logits, dim=-1).gather(-1, batch.completion_ids.unsqueeze(-1)).squeeze(-1)


def reference_logps(model, batch: Batch, temperature: float):
    """The same log-probabilities under the reference policy: the same model with its LoRA adapter
    switched off (the starting weights), so the reference costs no second copy of the model."""
    import torch

    with torch.no_grad(), model.disable_adapter():
        return token_logps(model, batch, temperature)


@dataclass
class LossParts:
    """Every intermediate of the loss, per token (answers x tokens), and the loss itself."""

    ratio: Any          # pi / pi_old
    clipped: Any        # the ratio clipped to [1 - eps, 1 + eps_high]
    kl: Any             # k3 estimate of KL(pi || ref); zeros when beta is 0
    per_token: Any      # -min(ratio A, clipped A) + beta KL
    loss: Any           # averaged as `loss_type` says


def grpo_loss(logps, advantages, mask, *, old_logps=None, ref_logps=None, beta: float = 0.0,
              loss_type: str = "dapo", epsilon: float = 0.2, epsilon_high: float | None = None,
              kl_times_ratio: bool = True, tokens_in_batch: int | None = None) -> LossParts:
    """GRPO's clipped objective with TRL's KL estimate, averaged as TRL's `loss_type` averages it.

    `old_logps`: the policy that sampled the answers (None: on-policy, `logps` detached, ratio 1).
    `kl_times_ratio`: TRL 1.16's `use_bias_correction_kl` (its default: True) multiplies the KL term by the
    ratio; on-policy that leaves its value but changes its gradient (the unbiased reverse-KL gradient).
    GUI-R1's verl adds the plain k3 term (False).
    `tokens_in_batch`: `dapo` only, the answer tokens of the whole update's batch across its
    accumulation steps (None: this batch's); a micro-batch's share then sums to the update's mean."""
    import torch

    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    old = logps.detach() if old_logps is None else old_logps
    adv = advantages.unsqueeze(1)
    ratio = torch.exp(logps - old)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + (epsilon if epsilon_high is None else epsilon_high))
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl = torch.zeros_like(logps)
    if beta != 0.0:
        kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
        per_token = per_token + beta * (kl * ratio if kl_times_ratio else kl)
    return LossParts(ratio, clipped, kl, per_token, average(per_token, mask, loss_type, tokens_in_batch))


def average(per_token, mask, loss_type: str, tokens_in_batch: int | None = None):
    """`grpo`: each answer's mean over its own tokens, then the mean over answers (a short answer's
    tokens weigh more). `dapo`: the sum over every token divided by the batch's answer tokens (each
    token weighs the same: GUI-R1's token mean)."""
    mask = mask.to(per_token.dtype)
    if loss_type == "grpo":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    total = mask.sum() if tokens_in_batch is None else per_token.new_tensor(float(tokens_in_batch))
    return (per_token * mask).sum() / total.clamp(min=1.0)


def trainable(model) -> dict[str, Any]:
    """The weights an update may change (the LoRA matrices), by name."""
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def optimiser_step(model, cfg) -> dict[str, Any]:
    """One step of the trainer's optimiser (AdamW, `cfg`'s learning rate, betas, epsilon and weight decay,
    gradients clipped to `max_grad_norm`) on the gradients `backward()` left; returns the gradient norm
    and, per trainable weight that moved, how many of its entries changed and by how much at most."""
    import torch

    params = trainable(model)
    before = {n: p.detach().clone() for n, p in params.items()}
    norm = torch.nn.utils.clip_grad_norm_(list(params.values()), cfg.get("max_grad_norm"))
    opt = torch.optim.AdamW(list(params.values()), lr=cfg.get("learning_rate"), weight_decay=cfg.get("weight_decay"),
                            betas=(cfg.get("adam_beta1"), cfg.get("adam_beta2")), eps=cfg.get("adam_epsilon"))
    opt.step()
    opt.zero_grad()
    moved = {}
    for n, p in params.items():
        delta = (p.detach() - before[n]).abs()
        if delta.max() > 0:
            moved[n] = {"changed": int((delta > 0).sum()), "of": delta.numel(), "max_change": float(delta.max())}
    return {"grad_norm": float(norm), "moved": moved, "unchanged": sorted(set(params) - set(moved))}
