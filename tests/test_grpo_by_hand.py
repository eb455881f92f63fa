"""The GRPO loss written out by hand (`gui_r1_lite.grpo_step`, notebook 04) equals TRL's.

What is compared: for the same model (the stand-in loaded as the GPU recipe loads the 3B: 4-bit NF4 +
LoRA), the same batch (two training rows of data_samples/train, three written answers each, of different
lengths), the same advantages (GUI-R1 reward, group-relative) and the same sampling policy's
log-probabilities, the scalar loss and the gradient of every LoRA weight from `grpo_step` against those
of `GRPOTrainer.compute_loss` (TRL 1.16), built as `training.trainer.build_trainer` builds it, for
`loss_type` grpo and dapo and beta 0 and 0.01. The LoRA `B` matrices are drawn away from zero first and
the answers are scored against the reference policy as the sampler, so that the ratio moves off 1, the
clip acts on both sides and the KL term has a gradient; at a fresh adapter all three would be trivial.

Tolerance: `LOSS_ATOL` (1e-6, absolute) and `GRAD_RTOL` (1e-5 of each weight's largest gradient entry).
Both sides compute in fp32 on the same weights; TRL scores tokens with its fused, tiled LM head and we
with a plain log-softmax, so sums run in another order (log-probabilities differ by up to 1e-6). Measured
(x86-64, one thread): loss gaps 0 to 2e-8, gradient gaps up to 1.0e-6; a wrong normalisation makes loss
gaps of 0.1 to 0.3, and the other KL term (k3 alone, GUI-R1's and our default, against k3 times the ratio,
TRL 1.16's default `use_bias_correction_kl`) gradient gaps of about 4e-3 (`test_a_wrong_..._is_caught`).

Not compared: TRL's options that this project does not use (vLLM importance-sampling correction,
entropy masks and bonus, sequence-level importance sampling, the other loss types).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("bitsandbytes")

from gui_r1_lite import grpo_step as gs  # noqa: E402
from gui_r1_lite.actions import Action, format_answer, target_action  # noqa: E402
from gui_r1_lite.rewards import group_advantages  # noqa: E402

#: Loss: absolute, since the per-token terms are of order 1 (advantages about +-1, ratios near 1) and the
#: loss is their mean, which cancels to near 0 when the advantages do. Gradients: each LoRA weight's worst
#: entry, relative to that weight's largest gradient entry.
LOSS_ATOL, GRAD_RTOL = 1e-6, 1e-5
PIXELS = {"min_pixels": 56 * 56, "max_pixels": 28 * 28 * 16}  # small screenshots: a fast test


@pytest.fixture(scope="module")
def rows():
    from pathlib import Path

    from gui_r1_lite.data import load_gui_r1, to_train_rows

    data = Path(__file__).resolve().parents[1] / "data_samples" / "train" / "miniwob_train.parquet"
    clicks = [s for s in load_gui_r1(data, limit=40) if s.gt_action == "click"][:2]
    return to_train_rows(clicks, **PIXELS)


def answers(row: dict) -> list[str]:
    """Three answers of different lengths and rewards: right, wrong place, unformatted."""
    x1, y1, _, _ = row["gt_bbox"]
    return [format_answer(target_action("click", row["gt_bbox"]), "The target is there."),
            format_answer(Action("click", (round(x1) + 200, round(y1) + 200)), "It may be lower, on the right."),
            "click"]


def setup(tiny_model_dir, rows, loss_type: str, beta: float, kl_times_ratio: bool = False):
    """(trainer, policy, batch, advantages, sampling log-probs) for one case."""
    import datasets

    from gui_r1_lite.training.trainer import build_trainer

    cfg = gs.recipe_config(tiny_model_dir, **PIXELS, loss_type=loss_type, beta=beta, num_generations=3,
                           per_device_train_batch_size=6, gradient_accumulation_steps=1, max_completion_length=64,
                           use_bias_correction_kl=kl_times_ratio,
                           output_dir=str(tiny_model_dir.parent / f"trl_{loss_type}_{beta}_{kl_times_ratio}"))
    policy = gs.load_like_recipe(cfg)
    trainer = build_trainer(cfg, cfg.trainer_args(), policy, datasets.Dataset.from_list(rows), callbacks=[])
    group = [r for r in rows for _ in range(3)]
    texts = [t for r in rows for t in answers(r)]
    batch = gs.make_batch(policy, group, [gs.answer_ids(policy, t) for t in texts])
    rewards = [s["overall"] for r in rows for s in gs.score(answers(r), r)]
    advantages = torch.tensor(group_advantages(rewards, 3))
    model = policy.model
    model.train()
    sampler = gs.reference_logps(model, batch, cfg.get("temperature"))  # the adapter at zero sampled them
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in gs.trainable(model).items():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return trainer, policy, cfg, batch, advantages, sampler


def trl_inputs(trainer, policy, batch, advantages, sampler, beta: float) -> dict:
    """What `_generate_and_score_completions` hands `compute_loss`, for our batch; the reference
    log-probabilities come from TRL's own scoring with the adapter switched off."""
    from trl.trainer.utils import use_adapter

    inputs = {"prompt_ids": batch.prompt_ids, "prompt_mask": batch.prompt_mask,
              "completion_ids": batch.completion_ids, "completion_mask": batch.completion_mask,
              "advantages": advantages, "old_per_token_logps": sampler, "num_images": [1] * len(advantages),
              "num_items_in_batch": batch.completion_mask.sum()}
    forward = batch.model_inputs()
    inputs.update({k: v for k, v in forward.items() if k not in ("input_ids", "attention_mask")})
    if beta:
        with torch.no_grad(), use_adapter(policy.model, adapter_name=None):
            inputs["ref_per_token_logps"] = trainer._get_per_token_logps_and_entropies(
                policy.model, forward["input_ids"], forward["attention_mask"], batch.completion_ids.shape[1],
                num_images=inputs["num_images"], pixel_values=inputs["pixel_values"],
                image_grid_thw=inputs["image_grid_thw"], mm_token_type_ids=inputs.get("mm_token_type_ids"))[0]
    return inputs


def loss_and_grads(model, loss) -> tuple[float, dict]:
    model.zero_grad()
    loss.backward()
    loss = loss.detach()
    grads = {n: p.grad.detach().clone() for n, p in gs.trainable(model).items()}
    model.zero_grad()
    return float(loss), grads


def hand(policy, cfg, batch, advantages, sampler, loss_type: str | None = None, tokens_in_batch=None):
    model, temperature = policy.model, cfg.get("temperature")
    logps = gs.token_logps(model, batch, temperature)
    ref = gs.reference_logps(model, batch, temperature) if cfg.get("beta") else None
    parts = gs.grpo_loss(logps, advantages, batch.completion_mask, old_logps=sampler, ref_logps=ref,
                         beta=cfg.get("beta"), loss_type=loss_type or cfg.get("loss_type"),
                         epsilon=cfg.get("epsilon"), epsilon_high=cfg.get("epsilon_high"),
                         kl_times_ratio=cfg.get("use_bias_correction_kl"), tokens_in_batch=tokens_in_batch)
    return parts, loss_and_grads(model, parts.loss)


def trl(trainer, policy, batch, advantages, sampler, beta: float):
    trainer.current_gradient_accumulation_steps = 1
    inputs = trl_inputs(trainer, policy, batch, advantages, sampler, beta)
    return loss_and_grads(policy.model, trainer.compute_loss(policy.model, inputs))


def gaps(a: tuple[float, dict], b: tuple[float, dict]) -> tuple[float, float]:
    """(|loss difference|, the worst gradient difference of any weight relative to its largest entry)."""
    grad = max(float((a[1][n] - g).abs().max() / g.abs().max().clamp(min=1e-30)) for n, g in b[1].items())
    return abs(a[0] - b[0]), grad


def close(a: tuple[float, dict], b: tuple[float, dict]) -> bool:
    loss, grad = gaps(a, b)
    return loss <= LOSS_ATOL and grad <= GRAD_RTOL


@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
# the KL term as GUI-R1 adds it (k3 alone, our default) and as TRL 1.16 does by default (times the ratio)
@pytest.mark.parametrize("beta, kl_times_ratio", [(0.0, False), (0.01, False), (0.01, True)])
def test_hand_loss_and_lora_gradients_equal_trl(tiny_model_dir, rows, loss_type, beta, kl_times_ratio):
    trainer, policy, cfg, batch, advantages, sampler = setup(tiny_model_dir, rows, loss_type, beta, kl_times_ratio)
    lengths = batch.completion_mask.sum(-1).tolist()
    assert len(set(lengths)) > 2, lengths  # grpo and dapo differ only when the answers' lengths differ
    assert advantages.abs().min() > 0
    parts, ours = hand(policy, cfg, batch, advantages, sampler)
    mask = batch.completion_mask.bool()
    # the case is not trivial: some ratios clipped from above and from below, the KL positive
    assert (parts.ratio[mask] > 1.2).any() and (parts.ratio[mask] < 0.8).any()
    assert (parts.kl[mask] > 0).any() if beta else not parts.kl.any()
    theirs = trl(trainer, policy, batch, advantages, sampler, beta)
    assert any(g.abs().max() > 0 for g in theirs[1].values())
    assert close(ours, theirs), (ours[0], theirs[0], gaps(ours, theirs))


def test_a_wrong_normalisation_is_caught(tiny_model_dir, rows):
    """The comparison can fail: TRL's dapo against our grpo average (per answer, then over answers),
    against a dapo that divides by the batch's padded size instead of its answer tokens, and against the
    other KL term: k3 times the ratio (TRL 1.16's default) where the trainer adds k3 alone (GUI-R1's, our
    default), or the reverse."""
    trainer, policy, cfg, batch, advantages, sampler = setup(tiny_model_dir, rows, "dapo", 0.01)
    theirs = trl(trainer, policy, batch, advantages, sampler, 0.01)
    _, right = hand(policy, cfg, batch, advantages, sampler)
    _, per_answer = hand(policy, cfg, batch, advantages, sampler, loss_type="grpo")
    _, padded = hand(policy, cfg, batch, advantages, sampler, tokens_in_batch=batch.completion_mask.numel())
    cfg.trl_args["use_bias_correction_kl"] = not cfg.get("use_bias_correction_kl")
    _, other_kl = hand(policy, cfg, batch, advantages, sampler)
    assert close(right, theirs)
    assert not close(per_answer, theirs) and not close(padded, theirs) and not close(other_kl, theirs)


def test_dapo_divides_by_the_tokens_of_the_whole_accumulated_batch(tiny_model_dir, rows):
    """Two accumulation steps of one generation batch (one group each): TRL's dapo divides each by the
    answer tokens of both; `tokens_in_batch` says the same, and the two halves' losses add up to the
    loss of the whole batch in one pass."""
    trainer, policy, cfg, batch, advantages, sampler = setup(tiny_model_dir, rows, "dapo", 0.0)
    total = int(batch.completion_mask.sum())
    trainer.args.steps_per_generation = 2
    halves = []
    for part in (slice(0, 3), slice(3, 6)):
        sub = gs.Batch(batch.prompt_ids[part], batch.prompt_mask[part], batch.completion_ids[part],
                       batch.completion_mask[part], {}, batch.texts[part])
        grid = batch.vision["image_grid_thw"]
        rows_per_image = int(grid[0].prod())
        sub.vision = {"pixel_values": batch.vision["pixel_values"][part.start * rows_per_image:
                                                                    part.stop * rows_per_image],
                      "image_grid_thw": grid[part],
                      **({"mm_token_type_ids": batch.vision["mm_token_type_ids"][part]}
                         if "mm_token_type_ids" in batch.vision else {})}
        inputs = trl_inputs(trainer, policy, sub, advantages[part], sampler[part], 0.0)
        inputs["num_items_in_batch"] = torch.tensor(total)
        trainer.current_gradient_accumulation_steps = 2
        theirs = loss_and_grads(policy.model, trainer.compute_loss(policy.model, inputs))
        _, ours = hand(policy, cfg, sub, advantages[part], sampler[part], tokens_in_batch=total)
        assert close(ours, theirs)
        halves.append(ours[0])
    _, whole = hand(policy, cfg, batch, advantages, sampler)
    assert halves[0] + halves[1] == pytest.approx(whole[0], abs=LOSS_ATOL)
