"""GPU memory and seconds of a GRPO QLoRA step of Qwen2.5-VL-3B, and of one `generate` of notebook 01's
curation, by arithmetic from the model's shipped configuration (gui_r1_lite/reference): an estimate, not a
measurement (bench_gpu_recipe.py measures). The one home of the T4's figures; docs/gpu.md quotes the tables
this prints.

    python benchmarks/gpu_estimate.py            # the Markdown tables docs/gpu.md quotes

Memory = what stays (weights, LoRA with its gradients and Adam's two moments) + the largest of the phases of a
step: sampling (`generate`: the vision tower over every sequence's copy of the screenshot, then the prefill and
the KV cache), the reference forward of the KL term (no gradients) and the loss step (gradient checkpointing: each
decoder layer's input kept, one layer recomputed for its backward) + workspaces and the allocator's slack.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gui_r1_lite.profiles import PROFILES, Profile  # noqa: E402
from gui_r1_lite.reference import qwen2_5_vl_3b_config  # noqa: E402
from gui_r1_lite.training import TrainConfig  # noqa: E402

GIB = 1024**3
CONFIGS = ROOT / "configs"
T4_RECIPE = CONFIGS / "grpo_qwen2_5_vl_3b_t4.yaml"
L4_RECIPE = CONFIGS / "grpo_qwen2_5_vl_3b_qlora.yaml"
#: The text of a GUI-R1 prompt around its screenshot (system prompt, instruction, history), in Qwen2.5's tokens:
#: about 200 (docs/gpu.md's first estimate counted 1,800 prompt tokens, 1,605 of them the screenshot).
PROMPT_TEXT_TOKENS = 200
#: NF4 with double quantisation: 4 bits a weight, one 8-bit scale per 64 weights, one fp32 scale per 256 scales.
NF4_BYTES = 4 / 8 + 1 / 64 + 4 / (64 * 256)
#: LoRA weights in fp32, their gradients, and Adam's two moments: 4 fp32 numbers a trainable weight.
LORA_BYTES = 4 * 4
#: The tile the fused log-prob head of TRL (1.16) projects at once: 4,096 tokens x 32,768 vocabulary rows, fp32.
LOGPROB_TILE = 4096 * 32768 * 4
#: cuBLAS' workspace, bitsandbytes' dequantised weight of the largest layer, kernels' scratch.
WORKSPACE_GIB = 0.25
#: Freed blocks of the caching allocator not reusable for the next request, as a share of the largest phase
#: (expandable segments make it small; without them it can be several times this).
SLACK = 0.10


@dataclass(frozen=True)
class Card:
    """A GPU as the estimate needs it."""

    name: str
    total_gib: float           # the memory torch reports (`get_device_properties(0).total_memory`)
    context_gib: float         # the CUDA context and libraries' handles: outside torch's allocator
    native_bf16: bool
    decode_s_per_token: float  # one decoding step of `generate` on the 4-bit 3B, a few sequences at once
    fp32_tflops: float         # sustained, for the vision tower (fp32 where bf16 is not native)
    half_tflops: float         # sustained fp16 / bf16 with tensor cores, for the text decoder

    @property
    def usable_gib(self) -> float:
        """What torch's allocator can have: the total less the context."""
        return self.total_gib - self.context_gib


#: A 16 GB T4 (Colab's free GPU): 15,360 MiB of which ECC keeps some, so torch reports 14.75 GiB ("14.75 GiB
#: total capacity" in its out-of-memory messages); the CUDA context takes ~0.35 GiB of it. Peak 8.1 TFLOPS
#: fp32 and 65 fp16: half of each sustained. Decoding: 40-80 ms a token measured by others on an L4 for the
#: 4-bit 3B (bitsandbytes' dequantisation and `generate`'s per-token overhead, bound by memory and the CPU);
#: a T4 has the L4's memory bandwidth and a slower CPU beside it on Colab: 100 ms a token, the top of that.
T4 = Card("T4", total_gib=14.75, context_gib=0.35, native_bf16=False, decode_s_per_token=0.10,
          fp32_tflops=4.0, half_tflops=30.0)
#: The estimated peak a T4 recipe may reach: the rest of the usable memory is the margin for this estimate.
T4_TARGET_GIB = 12.0


@dataclass(frozen=True)
class Sizes:
    """Qwen2.5-VL-3B-Instruct's sizes, from its configuration."""

    hidden: int
    layers: int
    intermediate: int
    kv_dim: int
    vocab: int
    vision_hidden: int
    vision_intermediate: int
    vision_depth: int
    patch: int
    merge: int

    @classmethod
    def shipped(cls) -> Sizes:
        c = qwen2_5_vl_3b_config()
        v = c["vision_config"]
        return cls(hidden=c["hidden_size"], layers=c["num_hidden_layers"], intermediate=c["intermediate_size"],
                   kv_dim=c["num_key_value_heads"] * c["hidden_size"] // c["num_attention_heads"],
                   vocab=c["vocab_size"], vision_hidden=v["hidden_size"], vision_intermediate=v["intermediate_size"],
                   vision_depth=v["depth"], patch=v["patch_size"], merge=v["spatial_merge_size"])

    def text_linear(self) -> int:
        """Weights of the decoder's linear layers (what NF4 quantises): q, k, v, o and the gated MLP."""
        h, i, kv = self.hidden, self.intermediate, self.kv_dim
        return self.layers * (h * h + 2 * h * kv + h * h + 3 * h * i)

    def embedding(self) -> int:
        return self.vocab * self.hidden  # tied with lm_head: one copy

    def vision(self) -> int:
        """The vision tower: patch embedding, blocks (qkv, proj, gated MLP, with biases; norms) and the merger."""
        h, i, m = self.vision_hidden, self.vision_intermediate, self.merge**2 * self.vision_hidden
        block = (h * 3 * h + 3 * h) + (h * h + h) + 3 * h * i + 2 * i + h + 2 * h
        return (3 * 2 * self.patch**2 * h + self.vision_depth * block + h + (m * m + m)
                + (m * self.hidden + self.hidden))

    def lora(self, r: int) -> int:
        """LoRA weights of rank `r` on every projection of the decoder (A: r x in, B: out x r)."""
        h, i, kv = self.hidden, self.intermediate, self.kv_dim
        return self.layers * r * ((h + h) + 2 * (h + kv) + (h + h) + 2 * (h + i) + (i + h))

    # bytes per token / patch of the passing activations (what is alive at the widest point of a layer)

    def vision_bytes_per_patch(self, element: int) -> int:
        """At a block's MLP: the residual, its norm, gate, up, the activation and the product."""
        return (2 * self.vision_hidden + 4 * self.vision_intermediate) * element

    def prefill_bytes_per_token(self) -> int:
        """A decoder layer without gradients, 16-bit: hidden, norm, attention output; gate, up, activation, product."""
        return (3 * self.hidden + 4 * self.intermediate) * 2

    def kv_bytes_per_token(self) -> int:
        return self.layers * 2 * self.kv_dim * 2

    def checkpoint_bytes_per_token(self) -> int:
        """Gradient checkpointing keeps each decoder layer's 16-bit input."""
        return self.layers * self.hidden * 2

    def layer_backward_bytes_per_token(self) -> int:
        """One decoder layer recomputed for its backward, 16-bit: what autograd saves (the two norms' fp32
        inputs 8H; q, k, v and the 4-bit layers' inputs, the key/value heads repeated, attention output 14H;
        LoRA's casts of each projection's input 12H, down's 2I; gate, activation, up, product 8I) and the
        gradients in flight at the MLP (6I + 4H)."""
        h, i = self.hidden, self.intermediate
        return (34 * h + 10 * i) + (6 * i + 4 * h)

    def vision_flops_per_patch(self) -> int:
        return 2 * self.vision()

    def text_flops_per_token(self) -> int:
        return 2 * self.text_linear()


SIZES = Sizes.shipped()


def patches(max_pixels: int, sizes: Sizes = SIZES) -> int:
    """Patches of 14 x 14 pixels of the largest screenshot `max_pixels` lets through."""
    return max_pixels // sizes.patch**2


def prompt_tokens(max_pixels: int, sizes: Sizes = SIZES) -> int:
    """A prompt's tokens: the screenshot's (patches merged 2 x 2) and the text around it."""
    return patches(max_pixels, sizes) // sizes.merge**2 + PROMPT_TEXT_TOKENS


def weights(card: Card, lora_r: int | None, sizes: Sizes = SIZES) -> dict[str, float]:
    """GiB of what stays on the GPU: the 4-bit decoder, the 16-bit embedding, the vision tower (fp32 without
    native bf16), and LoRA with its gradients and Adam's moments when `lora_r`."""
    parts = {"decoder, NF4": sizes.text_linear() * NF4_BYTES / GIB,
             "embedding = lm_head, 16-bit": sizes.embedding() * 2 / GIB,
             f"vision tower, {'bf16' if card.native_bf16 else 'fp32'}": sizes.vision() * vision_element(card) / GIB}
    if lora_r:
        parts[f"LoRA r {lora_r} + gradients + Adam"] = sizes.lora(lora_r) * LORA_BYTES / GIB
    return parts


def vision_element(card: Card) -> int:
    """Bytes of a vision tower number: bf16 where native, else fp32 (its MLP overflows in fp16)."""
    return 2 if card.native_bf16 else 4


def vision_tflops(card: Card) -> float:
    return card.half_tflops if card.native_bf16 else card.fp32_tflops


def generation(card: Card, sequences: int, max_pixels: int, new_tokens: int, sizes: Sizes = SIZES) -> dict:
    """GiB of one `generate` of `sequences` (each with its copy of the screenshot) and its seconds."""
    n_patches, prompt = sequences * patches(max_pixels, sizes), prompt_tokens(max_pixels, sizes)
    vision = n_patches * sizes.vision_bytes_per_patch(vision_element(card)) / GIB
    pixels = n_patches * 3 * 2 * sizes.patch**2 * 4 / GIB  # the processor's fp32 pixel values
    kv = sequences * (prompt + new_tokens) * sizes.kv_bytes_per_token() / GIB
    prefill = sequences * prompt * sizes.prefill_bytes_per_token() / GIB
    seconds = (n_patches * sizes.vision_flops_per_patch() / vision_tflops(card) / 1e12
               + sequences * prompt * sizes.text_flops_per_token() / card.half_tflops / 1e12
               + new_tokens * card.decode_s_per_token)
    return {"pixel values": pixels, "vision tower": vision, "prefill + KV cache": prefill + kv,
            "peak": pixels + max(vision, prefill + kv), "seconds": seconds}


@dataclass(frozen=True)
class GrpoShape:
    """What decides a GRPO step's memory, as the training code reads it from a recipe."""

    max_pixels: int
    max_completion_length: int
    num_generations: int
    generation_batch: int      # sequences one `generate` samples
    micro_batch: int           # sequences of one forward/backward
    micro_batches: int         # a step's forward/backwards (gradient accumulation)
    lora_r: int
    beta: float

    @classmethod
    def of_recipe(cls, path: Path) -> GrpoShape:
        """The recipe's shape, through the project's own config (TRL's defaults where the recipe is silent)."""
        cfg = TrainConfig.from_yaml(path)
        micro, accumulation = cfg.get("per_device_train_batch_size"), cfg.get("gradient_accumulation_steps")
        steps = cfg.get("steps_per_generation") or accumulation
        batch = cfg.get("generation_batch_size") or micro * steps
        return cls(max_pixels=cfg.get("max_pixels"), max_completion_length=cfg.get("max_completion_length"),
                   num_generations=cfg.get("num_generations"), generation_batch=batch, micro_batch=micro,
                   micro_batches=accumulation, lora_r=cfg.get("lora_r"), beta=cfg.get("beta"))


def grpo_step(card: Card, shape: GrpoShape, sizes: Sizes = SIZES) -> dict:
    """GiB of one GRPO step on `card` by part and phase, the peak and the margin left, and seconds."""
    stays = weights(card, shape.lora_r, sizes)
    gen = generation(card, shape.generation_batch, shape.max_pixels, shape.max_completion_length, sizes)
    tokens = shape.micro_batch * (prompt_tokens(shape.max_pixels, sizes) + shape.max_completion_length)
    micro_patches = shape.micro_batch * patches(shape.max_pixels, sizes)
    micro_vision = micro_patches * sizes.vision_bytes_per_patch(vision_element(card)) / GIB
    tile = LOGPROB_TILE / GIB
    checkpoints = tokens * sizes.checkpoint_bytes_per_token() / GIB
    layer = tokens * sizes.layer_backward_bytes_per_token() / GIB
    reference = max(micro_vision, tokens * sizes.prefill_bytes_per_token() / GIB + tile) if shape.beta else 0.0
    phases = {  # the buffered pixel values of the whole generation batch stay through the step
        "sampling (generate)": gen["peak"],
        "reference forward": gen["pixel values"] + reference,
        "loss forward/backward": gen["pixel values"] + max(micro_vision, checkpoints + layer + tile)}
    largest = max(phases.values())
    extra = {"workspaces": WORKSPACE_GIB, f"allocator slack ({SLACK:.0%} of the largest phase)": SLACK * largest}
    peak = sum(stays.values()) + largest + sum(extra.values())
    # a micro-batch: the vision tower once for the loss and once for the reference; the decoder's forward,
    # recomputation and backward (~8 passes' FLOPs) and the reference forward (2)
    forwards = 2 if shape.beta else 1
    vision_s = forwards * micro_patches * sizes.vision_flops_per_patch() / vision_tflops(card) / 1e12
    text_s = (8 + 2 * (forwards - 1)) * tokens * sizes.text_flops_per_token() / card.half_tflops / 1e12
    generates = shape.micro_batches * shape.micro_batch // shape.generation_batch
    return {"stays": stays, "phases": phases, "loss step": {"layer inputs (checkpoints)": checkpoints,
                                                             "one layer recomputed + its backward": layer,
                                                             "log-prob tile": tile},
            "sampling": gen, "extra": extra, "peak": peak, "margin": card.usable_gib - peak,
            "seconds": generates * gen["seconds"] + shape.micro_batches * (vision_s + text_s)}


def curation(card: Card, profile: Profile, sizes: Sizes = SIZES) -> dict:
    """One `generate` of notebook 01's difficulty scoring under `profile` (no LoRA), and the whole scoring."""
    sequences = profile.difficulty_batch_rows * profile.difficulty_k
    gen = generation(card, sequences, profile.max_pixels, profile.difficulty_max_new_tokens, sizes)
    stays = sum(weights(card, None, sizes).values())
    peak = stays + gen["peak"] + WORKSPACE_GIB + SLACK * gen["peak"]
    generates = -(-profile.difficulty_rows // profile.difficulty_batch_rows)
    return {"sequences": sequences, "peak": peak, "margin": card.usable_gib - peak, "generate_s": gen["seconds"],
            "generates": generates, "total_s": generates * gen["seconds"]}


def _g(value: float) -> str:
    return f"{value:.2f}"


def grpo_table(card: Card = T4, recipes: tuple[Path, ...] = (T4_RECIPE, L4_RECIPE)) -> str:
    """A Markdown table: each recipe's GRPO step on `card`, part by part (GiB)."""
    steps = {p.name: (GrpoShape.of_recipe(p), grpo_step(card, GrpoShape.of_recipe(p))) for p in recipes}
    head = [f"| on a {card.name} ({card.total_gib} GiB, {card.usable_gib:.2f} usable), GiB | "
            + " | ".join(f"`{n}`" for n in steps) + " |", "|---|" + "---|" * len(steps)]
    rows = {"screenshot ≤ pixels (patches)": [f"{s.max_pixels:,} ({patches(s.max_pixels):,})"
                                              for s, _ in steps.values()],
            "completion tokens; sequences a generate / a micro-batch": [
                f"{s.max_completion_length:,}; {s.generation_batch} / {s.micro_batch}" for s, _ in steps.values()]}
    first = next(iter(steps.values()))[1]
    for key in first["stays"]:
        rows[key] = [_g(e["stays"][key]) for _, e in steps.values()]
    for key in first["sampling"]:
        if key not in ("peak", "seconds"):
            rows[f"sampling: {key}"] = [_g(e["sampling"][key]) for _, e in steps.values()]
    for key in first["loss step"]:
        rows[f"loss step: {key}"] = [_g(e["loss step"][key]) for _, e in steps.values()]
    for key in first["phases"]:
        rows[f"phase: {key}"] = [_g(e["phases"][key]) for _, e in steps.values()]
    for key in first["extra"]:
        rows[key] = [_g(e["extra"][key]) for _, e in steps.values()]
    rows["**estimated peak**"] = [f"**{_g(e['peak'])}**" for _, e in steps.values()]
    rows[f"margin to {card.usable_gib:.2f} GiB"] = [_g(e["margin"]) for _, e in steps.values()]
    rows["seconds an optimiser step (estimate)"] = [f"{e['seconds']:.0f}" for _, e in steps.values()]
    return "\n".join(head + [f"| {k} | " + " | ".join(v) + " |" for k, v in rows.items()]) + "\n"


def curation_table(card: Card = T4, profile: Profile = PROFILES["gpu-3b"]) -> str:
    """A Markdown table: notebook 01's scoring under `profile` on `card`, against all rows in one generate."""
    from dataclasses import replace

    cases = {f"`{profile.name}`: {profile.difficulty_batch_rows} row(s) a generate": profile,
             "8 rows a generate (the earlier default)": replace(profile, difficulty_batch_rows=8)}
    lines = [f"| notebook 01 on a {card.name}: {profile.difficulty_rows} rows × {profile.difficulty_k} answers of "
             f"≤ {profile.difficulty_max_new_tokens} tokens, ≤ {profile.max_pixels:,} pixels | sequences a generate "
             "| estimated peak GiB | margin GiB | seconds a generate | minutes in all |", "|---|---|---|---|---|---|"]
    for name, prof in cases.items():
        c = curation(card, prof)
        lines.append(f"| {name} | {c['sequences']} | {_g(c['peak'])} | {_g(c['margin'])} | {c['generate_s']:.0f} | "
                     f"{c['total_s'] / 60:.0f} |")
    return "\n".join(lines) + "\n"


def tables() -> str:
    """What docs/gpu.md quotes, between its markers."""
    return grpo_table() + "\n" + curation_table()


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print(tables(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
