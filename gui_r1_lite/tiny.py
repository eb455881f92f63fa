"""The stand-in for Qwen2.5-VL-3B-Instruct, built without a download: the real model's shipped
configuration with the sizes scaled down, random weights, and a BPE tokenizer trained on this
project's prompts with Qwen's special tokens and chat template. `real_architecture` builds the
full-size architecture with random weights, for measurements."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .actions import ACTION_SPACES, NO_TEXT, POINT_ACTIONS, SCROLL_DIRECTIONS, TEXT_ACTIONS, Action, format_answer
from .errors import RunFailed
from .geometry import NO_POINT
from .prompts import NO_HISTORY, prompt_text
from .reference import qwen2_5_vl_3b_config, qwen2_5_vl_3b_generation_config, qwen2_5_vl_3b_preprocessor_config
from .runio import is_main_process, rank, read_json, write_json_atomic

if TYPE_CHECKING:
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLProcessor

    from .modeling import Policy

REAL_MODEL_ID = "Qwen/Qwen2.5-VL-3B-Instruct"

# Special tokens in Qwen2.5-VL's order, after the BPE vocabulary as in the released tokenizer, and
# whether it marks them special (the tool-call tags and the fim/repo tokens are plain added tokens).
SPECIAL_TOKENS: tuple[tuple[str, bool], ...] = tuple((tok, True) for tok in (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
)) + tuple((tok, False) for tok in (
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
))
# The tokenizer's `additional_special_tokens` in the released Qwen2.5-VL tokenizer_config.
ADDITIONAL_SPECIAL = tuple(tok for tok, _ in SPECIAL_TOKENS[1:14])
# <|endoftext|>'s id in the released tokenizer: its BPE vocabulary has 151,643 entries and the
# special tokens follow in SPECIAL_TOKENS' order (<|im_end|> 151645, <|image_pad|> 151655, ...).
QWEN_FIRST_SPECIAL_ID = 151_643

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

#: Resize bounds small enough for CPU steps (at most 256 visual tokens a screenshot); the built
#: model's processor has the real model's, so CPU callers pass these to `load_policy`.
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
    answers and the chat template's fixed words."""
    rng = random.Random(seed)
    corpus = [DEFAULT_SYSTEM, "system\nuser\nassistant\n", NO_HISTORY, "0123456789"]
    for space_name, space in ACTION_SPACES.items():
        task_type = "low" if space == ("click",) else "high"
        for _ in range(n_per_space):
            corpus.append(prompt_text(_instruction(rng), _history(rng), task_type, space_name))
            actions = [_random_action(rng, space) for _ in range(rng.choice((1, 1, 1, 2)))]
            corpus.append(format_answer(actions, rng.choice(_THOUGHTS)))
    return corpus


def build_tokenizer(seed: int = 0, vocab_size: int = 1024):
    """A byte-level BPE of at most `vocab_size` entries, trained on `tokenizer_corpus(seed)` with
    Qwen2's pre-tokenizer, as a `Qwen2Tokenizer` with Qwen2.5-VL's special tokens and chat template."""
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

    tok = Qwen2Tokenizer(tokenizer_object=raw, unk_token=None, bos_token=None, eos_token="<|im_end|>",
                         pad_token="<|endoftext|>", extra_special_tokens=list(ADDITIONAL_SPECIAL), errors="replace",
                         model_max_length=131072, split_special_tokens=False, clean_up_tokenization_spaces=False)
    tok.chat_template = CHAT_TEMPLATE
    for i, (tok_text, _) in enumerate(SPECIAL_TOKENS):
        got = tok.convert_tokens_to_ids(tok_text)
        if got != base + i:
            raise RuntimeError(f"special token {tok_text} got id {got}, expected {base + i}")
    return tok


def remap_token_ids(values: dict, tokenizer) -> dict:
    """`values` (a shipped config, nested dicts included) with every `*_token_id` field's special-token
    id (or list of them) turned into `tokenizer`'s id of the same token."""
    first = tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS[0][0])

    def one(key: str, value):
        if isinstance(value, list):
            return [one(key, v) for v in value]
        if value is None:
            return None
        if not QWEN_FIRST_SPECIAL_ID <= value < QWEN_FIRST_SPECIAL_ID + len(SPECIAL_TOKENS):
            raise ValueError(f"{key}: {value} is not one of Qwen2.5-VL's special-token ids")
        return first + value - QWEN_FIRST_SPECIAL_ID

    return {k: remap_token_ids(v, tokenizer) if isinstance(v, dict) else one(k, v) if k.endswith("_token_id") else v
            for k, v in values.items()}


def mrope_section(head_dim: int) -> list[int]:
    """The real model's (temporal, height, width) split of `head_dim / 2` rotary frequencies,
    [16, 24, 24] of 64, scaled to `head_dim` ([4, 6, 6] for 32)."""
    real = qwen2_5_vl_3b_config()["rope_scaling"]["mrope_section"]
    half, total = head_dim // 2, sum(real)
    t, h = round(real[0] * half / total), round(real[1] * half / total)
    return [t, h, half - t - h]


def full_attention_blocks(depth: int) -> list[int]:
    """The vision blocks with full attention (the others attend within 112-pixel windows). The real
    tower (depth 32: blocks 7, 15, 23, 31) ends each of 4 equal groups with one; a shallower tower has
    min(4, depth // 2) groups: depth 2 -> [1], 4 -> [1, 3], 8 -> [1, 3, 5, 7]."""
    if depth < 2:
        raise ValueError(f"vision depth must be at least 2 (a windowed and a full-attention block), got {depth}")
    groups = min(len(qwen2_5_vl_3b_config()["vision_config"]["fullatt_block_indexes"]), depth // 2)
    return [(i + 1) * depth // groups - 1 for i in range(groups)]


def standin_config(tokenizer, *, hidden_size: int | None = None, num_layers: int | None = None,
                   num_heads: int | None = None, num_kv_heads: int | None = None,
                   intermediate_size: int | None = None, vision_depth: int | None = None,
                   vision_hidden: int | None = None, vision_heads: int | None = None,
                   vision_intermediate: int | None = None, vocab_size: int | None = None,
                   tie_word_embeddings: bool | None = None) -> Qwen2_5_VLConfig:
    """Qwen2.5-VL-3B-Instruct's shipped `config.json` with the sizes given (None keeps the real one)
    and `tokenizer`'s special-token ids; the mrope split follows the head size, the full-attention
    blocks the depth, the vision output the text hidden size."""
    from transformers import Qwen2_5_VLConfig

    raw = qwen2_5_vl_3b_config()
    text = {"hidden_size": hidden_size, "num_hidden_layers": num_layers, "num_attention_heads": num_heads,
            "num_key_value_heads": num_kv_heads, "intermediate_size": intermediate_size, "vocab_size": vocab_size,
            "tie_word_embeddings": tie_word_embeddings}
    vision = {"depth": vision_depth, "hidden_size": vision_hidden, "num_heads": vision_heads,
              "intermediate_size": vision_intermediate}
    raw.update({k: v for k, v in text.items() if v is not None})
    raw["vision_config"].update({k: v for k, v in vision.items() if v is not None})
    raw["rope_scaling"]["mrope_section"] = mrope_section(raw["hidden_size"] // raw["num_attention_heads"])
    raw["vision_config"]["fullatt_block_indexes"] = full_attention_blocks(raw["vision_config"]["depth"])
    raw["vision_config"]["out_hidden_size"] = raw["hidden_size"]
    return Qwen2_5_VLConfig.from_dict(remap_token_ids(raw, tokenizer))


def standin_generation_config(tokenizer) -> GenerationConfig:
    """Qwen2.5-VL-3B-Instruct's published generation settings with `tokenizer`'s special-token ids."""
    from transformers import GenerationConfig

    return GenerationConfig(**remap_token_ids(qwen2_5_vl_3b_generation_config(), tokenizer))


def standin_processor(tokenizer, min_pixels: int | None = None, max_pixels: int | None = None) -> Qwen2_5_VLProcessor:
    """A `Qwen2_5_VLProcessor` of `tokenizer` with the published preprocessing; `min_pixels` /
    `max_pixels` replace its resize bounds."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    settings = qwen2_5_vl_3b_preprocessor_config()
    for name in ("image_processor_type", "processor_class"):  # the class names, not settings
        settings.pop(name, None)
    settings.update({k: v for k, v in {"min_pixels": min_pixels, "max_pixels": max_pixels}.items() if v is not None})
    if not 0 < settings["min_pixels"] <= settings["max_pixels"]:
        raise ValueError(f"need 0 < min_pixels <= max_pixels, got {settings['min_pixels']}, {settings['max_pixels']}")
    return Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(**settings), tokenizer=tokenizer,
                               video_processor=Qwen2VLVideoProcessor(**settings), chat_template=CHAT_TEMPLATE)


def _tiny_heads(hidden_size: int, num_heads: int | None, num_kv_heads: int | None, vision_hidden: int,
                vision_heads: int | None) -> tuple[int, int, int]:
    """(text heads, KV heads, vision heads), defaults filled in, checked."""
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
    return num_heads, num_kv_heads, vision_heads


def build_tiny_model(out_dir: str | Path, seed: int = 0, *, hidden_size: int = 64, num_layers: int = 2,
                     num_heads: int | None = None, num_kv_heads: int | None = None,
                     intermediate_size: int | None = None, vision_depth: int = 2, vision_hidden: int = 64,
                     vision_heads: int | None = None, vision_intermediate: int | None = None,
                     vocab_size: int = 1024, min_pixels: int | None = None, max_pixels: int | None = None,
                     tie_word_embeddings: bool = True) -> Path:
    """Build and save the stand-in into `out_dir`; same arguments -> byte-identical files. Everything
    but the sizes is Qwen2.5-VL-3B-Instruct's shipped configuration (generation settings, resize
    bounds unless given, 112-pixel vision windows, `bfloat16` in config.json).

    Default heads: one per 32 text channels (half as many KV heads), one per 16 vision channels;
    intermediate 4 x hidden (text), 2 x hidden (vision). Keep every Linear's input size a multiple of
    64 and output size a multiple of 32: bitsandbytes' 4-bit CPU kernel (eval mode, AVX512-BF16 CPUs)
    repacks weights in those blocks and fails otherwise."""
    import copy

    import torch
    from transformers import AutoModelForImageTextToText

    num_heads, num_kv_heads, vision_heads = _tiny_heads(hidden_size, num_heads, num_kv_heads, vision_hidden,
                                                        vision_heads)
    tokenizer = build_tokenizer(seed, vocab_size)
    processor = standin_processor(tokenizer, min_pixels, max_pixels)
    config = standin_config(
        tokenizer, hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads, num_kv_heads=num_kv_heads,
        intermediate_size=intermediate_size or 4 * hidden_size, vision_depth=vision_depth,
        vision_hidden=vision_hidden, vision_heads=vision_heads,
        vision_intermediate=vision_intermediate or 2 * vision_hidden, vocab_size=len(tokenizer),
        tie_word_embeddings=tie_word_embeddings)
    shipped = copy.deepcopy(config)  # from_config below writes float32 into the config it is given

    # Weights made and stored in fp32, so the CPU path loads exactly what was initialised; config.json
    # still says the real model's bfloat16, which a load with dtype "auto" gets, as from the real model.
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    model.generation_config = standin_generation_config(tokenizer)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    shipped.save_pretrained(out)  # over the config.json save_pretrained wrote with the weights' float32
    processor.save_pretrained(out)
    return out


def real_architecture(model_id: str = REAL_MODEL_ID, *, random_weights: bool = True,
                      device: str | torch.device | None = "cpu", dtype: str | torch.dtype | None = None,
                      text_layers: int | None = None, vision_depth: int | None = None, seed: int = 0) -> Policy:
    """The full architecture of `model_id` with random weights, built on `device` ("meta": shapes
    only), nothing downloaded: for measuring memory and speed. A `modeling.Policy` in eval mode whose
    processor (the stand-in's tokenizer, the published preprocessing) takes real screenshots.

    `dtype` None picks what `load_policy` would; `text_layers` / `vision_depth` None keep 36 / 32.
    The vocabulary stays 151,936 rows (the stand-in tokenizer decodes ids beyond its own as nothing).
    Full size: about 3.75 B parameters (0.67 B the vision tower), 7.5 GB in bf16."""
    import torch
    from transformers import AutoModelForImageTextToText

    from .modeling import Policy, resolve_device, resolve_dtype, vision_tower

    if model_id != REAL_MODEL_ID:
        raise ValueError(f"only {REAL_MODEL_ID}'s configuration is shipped (gui_r1_lite/reference), got {model_id!r}")
    if not random_weights:
        raise ValueError(f"real_architecture builds random weights only; {model_id}'s real weights come from "
                         f"from_pretrained: modeling.load_policy({model_id!r}, ...)")
    dev = torch.device("meta") if str(device) == "meta" else resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    tokenizer = build_tokenizer()
    config = standin_config(tokenizer, num_layers=text_layers, vision_depth=vision_depth)
    torch.manual_seed(seed)
    with dev:
        model = AutoModelForImageTextToText.from_config(config, dtype=torch_dtype)
    model.generation_config = standin_generation_config(tokenizer)
    if torch_dtype == torch.float16:
        vision_tower(model).float()  # Qwen2.5-VL's vision MLP overflows in fp16
    processor = standin_processor(tokenizer)
    processor.tokenizer.padding_side = "left"  # as load_policy sets it: batched generation
    return Policy(model=model.eval(), processor=processor, device=dev, dtype=torch_dtype,
                  source=f"{model_id} (architecture, random weights)")


#: The file in a built tiny model's folder that records the arguments it was built with.
BUILD_FILE = "tiny_build.json"
#: Changes whenever the same arguments build a different model, so that no cached build of an
#: older stand-in is taken for the current one (2: built from the shipped Qwen2.5-VL-3B configuration;
#: 3: its generation settings as published now, temperature 1e-06 without top_k / top_p).
STANDIN_VERSION = 3


def build_arguments(seed: int = 0, **build_kwargs) -> dict:
    """Every argument of `build_tiny_model`, defaults filled in, and the `STANDIN_VERSION`: equal for
    two calls that build the same model."""
    import inspect

    try:
        bound = inspect.signature(build_tiny_model).bind("<folder>", seed, **build_kwargs)
    except TypeError as exc:
        raise ValueError(f"build_tiny_model: {exc}") from None
    bound.apply_defaults()
    return {"standin_version": STANDIN_VERSION, **{k: v for k, v in bound.arguments.items() if k != "out_dir"}}


def built_with(folder: str | os.PathLike) -> dict | None:
    """The build arguments recorded in a tiny model's folder; None when there are none."""
    try:
        return read_json(Path(folder) / BUILD_FILE)
    except (OSError, ValueError):
        return None


def ensure_tiny_model(folder: str | os.PathLike, *, seed: int = 0, wait_seconds: float = 600.0,
                      **build_kwargs) -> str:
    """The tiny model in `folder`, built there unless one built with the same arguments is already
    there (a cache must never stand in for a model it is not); returns the folder as a string.

    The main process builds into a temporary sibling and renames it into place, so `folder` exists
    only complete; the other processes wait for the model of their arguments, at most `wait_seconds`."""
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
