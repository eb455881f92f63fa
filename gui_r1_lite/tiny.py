"""Build a tiny, randomly initialised Qwen2.5-VL on local disk (no download): a byte-level BPE
tokenizer trained on this project's own prompts and answers, Qwen's special tokens and chat
template, the Qwen2.5-VL image/video processors and a small config. The saved folder loads with
`AutoProcessor` / `AutoModelForImageTextToText.from_pretrained(folder)` like `Qwen/Qwen2.5-VL-3B-Instruct`.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

from .actions import (
    ACTION_SPACES,
    NO_TEXT,
    POINT_ACTIONS,
    SCROLL_DIRECTIONS,
    TEXT_ACTIONS,
    Action,
    format_answer,
)
from .errors import RunFailed
from .geometry import NO_POINT
from .prompts import NO_HISTORY, prompt_text
from .runio import is_main_process, rank, read_json, write_json_atomic

# Special tokens in Qwen2.5-VL's order; they follow the BPE vocabulary as in the released
# tokenizer. `special` says whether the released tokenizer marks them special (the two tool-call
# tags are plain added tokens there).
SPECIAL_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
)
# The tokenizer's `additional_special_tokens` in the released Qwen2.5-VL tokenizer_config.
ADDITIONAL_SPECIAL = tuple(tok for tok, _ in SPECIAL_TOKENS[1:14])

DEFAULT_SYSTEM = "You are a helpful assistant."

# Qwen2.5-VL-Instruct's chat template (as released).
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\n" + DEFAULT_SYSTEM + "<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: Processor bounds of the tiny model's saved processor: small enough for CPU steps (at most
#: 256 visual tokens a screenshot); `load_policy(min_pixels=, max_pixels=)` overrides them.
TINY_MIN_PIXELS = 56 * 56
TINY_MAX_PIXELS = 256 * 28 * 28

# --- the corpus the tokenizer is trained on ---------------------------------------------------

_VERBS = ("open", "tap", "click", "select", "go to", "search for", "turn on", "turn off", "enable", "disable",
          "add", "delete", "remove", "find", "show", "play", "pause", "share", "save", "send", "set", "change",
          "check", "uncheck", "scroll to", "type", "enter", "buy", "book", "download", "install", "close",
          "view", "sort by", "filter by", "log in to", "sign up for", "reply to", "call", "choose", "create")
_OBJECTS = ("settings", "the search bar", "the wifi toggle", "bluetooth", "the menu", "the home screen",
            "the back button", "the cart", "the checkout button", "the first result", "the second item",
            "the login form", "the password field", "the username field", "notifications", "the camera",
            "the gallery", "a new note", "the calendar", "an alarm", "the timer", "the weather app",
            "the music player", "the playlist", "the video", "the map", "directions", "the address bar",
            "the submit button", "the next page", "the previous page", "the file menu", "the edit menu",
            "the toolbar", "the sidebar", "the tab", "the link", "the checkbox", "the dropdown", "the slider",
            "the dark mode switch", "the language option", "the contacts list", "the message thread",
            "the email", "the inbox", "the draft", "the attachment", "the price filter", "the size option",
            "the blue button", "the red icon", "the top banner", "the bottom bar", "the profile page",
            "the help center", "the privacy policy", "the terms", "the download button", "the share icon")
_PLACES = ("", " in chrome", " in the app", " on the page", " in gmail", " in settings", " in the browser",
           " on amazon", " in youtube", " in the store", " in the file manager", " in the editor")
_TEXTS = ("shanghai shopping mall", "hello world", "weather tomorrow", "cheap flights to paris", "pizza near me",
          "john smith", "meeting at 3 pm", "best headphones", "python tutorial", "new york", "coffee",
          "order status", "password123", "happy birthday", "how to cook rice", "running shoes", "bus 42",
          "alice@example.com", "2024-05-17", "Berlin", "Tokyo", "London", "OK", "yes", "no thanks")
_THOUGHTS = ("", "The target is visible on the screen.", "I need to click the element that matches the command.",
             "The instruction asks me to open the item, so I tap it.", "The search field is at the top.",
             "I should scroll down to find more results.", "Typing the text completes this step.",
             "The task is done, so the action is complete.", "The button is near the bottom of the screen.",
             "First I go back to the previous page.", "The icon on the left opens the menu.")


def _instruction(rng: random.Random) -> str:
    text = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_PLACES)}"
    if rng.random() < 0.2:
        text = text[0].upper() + text[1:] + "."
    return text


def _random_action(rng: random.Random, space: tuple[str, ...]) -> Action:
    name = rng.choice(space)
    if name in POINT_ACTIONS:
        return Action(name, (rng.randint(0, 2000), rng.randint(0, 2000)), NO_TEXT)
    if name == "scroll":
        return Action(name, NO_POINT, rng.choice(SCROLL_DIRECTIONS))
    if name in TEXT_ACTIONS:
        return Action(name, NO_POINT, rng.choice(_TEXTS))
    return Action(name, NO_POINT, NO_TEXT)


def _history(rng: random.Random) -> str | None:
    steps = rng.randint(0, 3)
    if steps == 0:
        return None
    return " ".join(f"Step {i + 1}: {_instruction(rng)}." for i in range(steps))


def tokenizer_corpus(seed: int = 0, n_per_space: int = 40) -> list[str]:
    """Texts the tiny tokenizer is trained on: GUI-R1 prompts over every action space, canonical
    answers and the chat template's fixed words. Deterministic for `seed`."""
    rng = random.Random(seed)
    corpus = [DEFAULT_SYSTEM, "system\nuser\nassistant\n", NO_HISTORY, "0123456789"]
    for space_name, space in ACTION_SPACES.items():
        task_type = "low" if space == ("click",) else "high"
        for _ in range(n_per_space):
            corpus.append(prompt_text(_instruction(rng), _history(rng), task_type, space_name))
            actions = [_random_action(rng, space) for _ in range(rng.choice((1, 1, 1, 2)))]
            corpus.append(format_answer(actions, rng.choice(_THOUGHTS)))
    return corpus


# --- building ---------------------------------------------------------------------------------


def build_tokenizer(seed: int = 0, vocab_size: int = 1024):
    """Train the byte-level BPE on `tokenizer_corpus(seed)` with Qwen2's pre-tokenizer (digits one
    per token) and wrap it as `Qwen2Tokenizer` with Qwen2.5-VL's special tokens and chat template.
    `vocab_size` bounds the BPE vocabulary (the corpus may need fewer); special tokens come after it."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import Qwen2Tokenizer
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    if vocab_size < 300:
        raise ValueError(f"vocab_size must be at least 300 (256 byte symbols + merges), got {vocab_size}")
    # Same model, normaliser, pre-tokeniser and decoder as Qwen2Tokenizer builds.
    raw = Tokenizer(BPE(dropout=None, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                        fuse_unk=False, byte_fallback=False))
    raw.normalizer = normalizers.NFC()
    raw.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    raw.train_from_iterator(tokenizer_corpus(seed), trainer=trainer)
    base = raw.get_vocab_size()
    # Qwen's added tokens follow the BPE vocabulary, in its order (ids base, base + 1, ...).
    for tok_text, special in SPECIAL_TOKENS:
        added = AddedToken(tok_text, special=special, normalized=False, single_word=False, lstrip=False, rstrip=False)
        (raw.add_special_tokens if special else raw.add_tokens)([added])

    tok = Qwen2Tokenizer(
        tokenizer_object=raw,
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=list(ADDITIONAL_SPECIAL),
        errors="replace",
        model_max_length=131072,
        split_special_tokens=False,
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = CHAT_TEMPLATE
    for i, (tok_text, _) in enumerate(SPECIAL_TOKENS):
        got = tok.convert_tokens_to_ids(tok_text)
        if got != base + i:
            raise RuntimeError(f"special token {tok_text} got id {got}, expected {base + i}")
    return tok


def _mrope_section(head_dim: int) -> list[int]:
    # Qwen2.5-VL splits head_dim/2 rotary frequencies into (temporal, height, width) = 1/4, 3/8, 3/8.
    half = head_dim // 2
    t = half // 4
    h = (half - t) // 2
    return [t, h, half - t - h]


def build_tiny_model(
    out_dir: str | Path,
    seed: int = 0,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int | None = None,
    num_kv_heads: int | None = None,
    intermediate_size: int | None = None,
    vision_depth: int = 2,
    vision_hidden: int = 64,
    vision_heads: int | None = None,
    vision_intermediate: int | None = None,
    vocab_size: int = 1024,
    min_pixels: int = TINY_MIN_PIXELS,
    max_pixels: int = TINY_MAX_PIXELS,
    tie_word_embeddings: bool = True,
) -> Path:
    """Build and save a tiny Qwen2.5-VL (tokenizer, processor, config, random weights, generation
    config) into `out_dir`; returns the folder. Same arguments -> byte-identical weights.

    Defaults: text hidden 64 x 2 layers (2 heads, 1 KV head), vision hidden 64 x depth 2, BPE vocab
    <= 1024 + 22 special tokens. Patch size 14, spatial merge 2 and temporal patch 2 are Qwen's, so
    image sizes and token counts follow `geometry.model_image_size` as for the real model.
    Head counts default to one head per 32 text / 16 vision channels.

    Keep every Linear's input size a multiple of 64 and output size a multiple of 32 (true for
    the defaults and for hidden sizes that are multiples of 64): bitsandbytes' 4-bit CPU inference
    kernel (used in eval mode on AVX512-BF16 CPUs) repacks weights in those blocks and fails otherwise.
    """
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    num_heads = num_heads or max(1, hidden_size // 32)
    num_kv_heads = num_kv_heads or max(1, num_heads // 2)
    vision_heads = vision_heads or max(1, vision_hidden // 16)
    if hidden_size % num_heads or (hidden_size // num_heads) % 2:
        raise ValueError(f"hidden_size {hidden_size} must split into {num_heads} heads of even size")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads {num_heads} must be a multiple of num_kv_heads {num_kv_heads}")
    if vision_hidden % vision_heads or (vision_hidden // vision_heads) % 4:
        raise ValueError(f"vision_hidden {vision_hidden} must split into {vision_heads} heads "
                         "of a size divisible by 4")
    if not 0 < min_pixels <= max_pixels:
        raise ValueError(f"need 0 < min_pixels <= max_pixels, got {min_pixels}, {max_pixels}")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer(seed, vocab_size)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t, _ in SPECIAL_TOKENS}
    image_processor = Qwen2VLImageProcessor(min_pixels=min_pixels, max_pixels=max_pixels,
                                            patch_size=14, temporal_patch_size=2, merge_size=2)
    video_processor = Qwen2VLVideoProcessor(min_pixels=min_pixels, max_pixels=max_pixels,
                                            patch_size=14, temporal_patch_size=2, merge_size=2)
    processor = Qwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                    video_processor=video_processor, chat_template=CHAT_TEMPLATE)

    head_dim = hidden_size // num_heads
    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=hidden_size,
            intermediate_size=intermediate_size or 4 * hidden_size,
            num_hidden_layers=num_layers,
            num_attention_heads=num_heads,
            num_key_value_heads=num_kv_heads,
            max_position_embeddings=32768,
            max_window_layers=num_layers,
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "mrope_section": _mrope_section(head_dim),
                             "rope_theta": 1000000.0},
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
            tie_word_embeddings=tie_word_embeddings,
        ),
        vision_config=dict(
            depth=vision_depth,
            hidden_size=vision_hidden,
            intermediate_size=vision_intermediate or 2 * vision_hidden,
            num_heads=vision_heads,
            out_hidden_size=hidden_size,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            tokens_per_second=2,
            window_size=112,
            fullatt_block_indexes=[i for i in range(vision_depth) if i % 4 == 3] or [vision_depth - 1],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=tie_word_embeddings,
    )

    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        do_sample=False,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


#: The file in a built tiny model's folder that records the arguments it was built with.
BUILD_FILE = "tiny_build.json"


def build_arguments(seed: int = 0, **build_kwargs) -> dict:
    """Every argument of `build_tiny_model(folder, seed, **build_kwargs)`, defaults filled in: equal
    for two calls that build the same model (`{}` and `{"hidden_size": 64}` alike)."""
    import inspect

    try:
        bound = inspect.signature(build_tiny_model).bind("<folder>", seed, **build_kwargs)
    except TypeError as exc:
        raise ValueError(f"build_tiny_model: {exc}") from None
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k != "out_dir"}


def built_with(folder: str | os.PathLike) -> dict | None:
    """The build arguments recorded in a tiny model's folder; None when there are none (not
    built by `ensure_tiny_model`, or cut short)."""
    try:
        return read_json(Path(folder) / BUILD_FILE)
    except (OSError, ValueError):
        return None


def ensure_tiny_model(folder: str | os.PathLike, *, seed: int = 0, wait_seconds: float = 600.0,
                      **build_kwargs) -> str:
    """The tiny model in `folder`, built there (`build_tiny_model(folder, seed, **build_kwargs)`)
    unless one built with the same arguments is already there; returns the folder as a string.

    A model built with other arguments (another seed, other sizes), or without a record of them,
    is rebuilt: a cache must never stand in for a model it is not. The main process builds into a
    temporary sibling and renames it into place, so `folder` exists only complete (a build killed
    half-way leaves a `<name>.tmp-*` that the next build replaces); the other processes of a
    multi-process run wait for the model of their arguments, at most `wait_seconds`."""
    out = Path(folder)
    wanted = build_arguments(seed, **build_kwargs)
    if is_main_process() and built_with(out) != wanted:
        for stale in out.parent.glob(f"{out.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
        build_tiny_model(tmp, seed=seed, **build_kwargs)
        write_json_atomic(tmp / BUILD_FILE, wanted)
        if out.exists():  # an incomplete folder, or a model of other arguments
            shutil.rmtree(out)
        os.replace(tmp, out)
    deadline = time.monotonic() + wait_seconds
    while built_with(out) != wanted:
        if time.monotonic() > deadline:
            raise RunFailed(f"rank {rank()}: the tiny model {out} (built with {wanted}) did not appear within "
                            f"{wait_seconds:.0f} s; did rank 0 fail while building it?")
        time.sleep(0.2)
    return str(out)
