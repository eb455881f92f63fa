"""Grounding pages drawn here, in unlimited variety, that cannot be solved blind: several elements
at random places, the target told apart from the others by colour, shape, label text or its place
beside another element, so only a policy that looks at the page can click it. Each page is a
`gui_r1_lite.data.Sample` (GUI-R1 schema, box in the page's pixels), so it goes through the same
prompt, answer and training path as the shipped data."""

from __future__ import annotations

import io
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from gui_r1_lite.actions import NO_TEXT
from gui_r1_lite.data import Sample

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 60, 220), "yellow": (230, 200, 0),
    "purple": (140, 40, 170), "orange": (245, 130, 0), "black": (20, 20, 20), "cyan": (0, 190, 210),
}
SHAPES = ("square", "circle", "triangle")
LABELS = ("ok", "no", "yes", "next", "back", "submit", "cancel", "save", "open", "close", "login", "search")
#: The kinds of page, each a way of telling the target from the others.
KINDS = ("colour", "shape", "colour_shape", "button", "beside")


@dataclass(frozen=True)
class Element:
    """One drawn element: what it is and its box (x1, y1, x2, y2) in page pixels."""

    shape: str          # square, circle, triangle or button
    colour: str
    box: tuple[int, int, int, int]
    label: str = ""


@dataclass(frozen=True)
class PageSettings:
    """How pages are drawn: size in pixels, element size and count, and where targets may sit.
    `grid` > 0 puts every element's centre on a grid of that many cells a side (coarse positions,
    the start of a curriculum); 0 places them anywhere."""

    width: int = 112
    height: int = 112
    size: int = 18            # side of a shape in pixels (buttons are wider)
    min_elements: int = 2
    max_elements: int = 4
    grid: int = 0
    kinds: tuple[str, ...] = ("colour",)
    gradient: float = 0.0     # strength (0..1) of a background that darkens left to right and top to bottom
    header: bool = False      # a yellow band across the top with the instruction, as on MiniWoB++ task pages
    tint: float = 0.0         # strength (0..1) of a tint over the whole page, elements included (a diagnostic)
    high: float = 0.0         # share of pages posed as a step of a multi-step task (see `page_sample`)

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown or not self.kinds:
            raise ValueError(f"kinds must be a non-empty subset of {KINDS}, got {self.kinds!r}")
        if not 0.0 <= self.high <= 1.0:
            raise ValueError(f"high must be a share between 0 and 1, got {self.high!r}")
        if not 1 <= self.min_elements <= self.max_elements:
            raise ValueError(f"need 1 <= min_elements <= max_elements, got {self.min_elements}, {self.max_elements}")


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def _overlaps(box: Sequence[int], others: Sequence[Element], gap: int = 3) -> bool:
    x1, y1, x2, y2 = box
    return any(not (x2 + gap <= o.box[0] or o.box[2] + gap <= x1 or y2 + gap <= o.box[1] or o.box[3] + gap <= y1)
               for o in others)


def header_height(st: PageSettings) -> int:
    """Height of the instruction band (0 without one): MiniWoB++'s 50 of 210 pixels, scaled."""
    return round(st.height * 50 / 210) if st.header else 0


def _place(rng: random.Random, st: PageSettings, w: int, h: int, placed: Sequence[Element],
           tries: int = 200) -> tuple[int, int, int, int] | None:
    """A free box of w x h inside the page below any header (on the grid's cell centres when
    `grid`), or None."""
    top = header_height(st)
    for _ in range(tries):
        if st.grid:
            cx = int((rng.randrange(st.grid) + 0.5) * st.width / st.grid)
            cy = int((rng.randrange(st.grid) + 0.5) * st.height / st.grid)
            x, y = cx - w // 2, cy - h // 2
            if x < 0 or y < top or x + w > st.width or y + h > st.height:
                continue
        else:
            x, y = rng.randint(1, st.width - w - 1), rng.randint(top + 1, st.height - h - 1)
        box = (x, y, x + w, y + h)
        if not _overlaps(box, placed):
            return box
    return None


def _draw(draw: ImageDraw.ImageDraw, e: Element, font) -> None:
    x1, y1, x2, y2 = e.box
    fill = COLOURS[e.colour]
    if e.shape == "square":
        draw.rectangle(e.box, fill=fill)
    elif e.shape == "circle":
        draw.ellipse(e.box, fill=fill)
    elif e.shape == "triangle":
        draw.polygon([((x1 + x2) / 2, y1), (x2, y2), (x1, y2)], fill=fill)
    else:  # a button: a grey box with a dark border and its label
        draw.rectangle(e.box, fill=(225, 225, 225), outline=(90, 90, 90))
        draw.text(((x1 + x2) / 2, (y1 + y2) / 2), e.label, fill=(0, 0, 0), font=font, anchor="mm")


def _distinct(rng: random.Random, pool: Sequence[str], n: int) -> list[str]:
    return rng.sample(list(pool), n)


def _elements(rng: random.Random, st: PageSettings, kind: str, n: int, font) -> tuple[list[Element], str] | None:
    """The page's elements (target first) and the instruction, or None when they do not fit."""
    s = st.size
    if kind == "button":
        labels = _distinct(rng, LABELS, n)
        specs = [("button", "black", lab) for lab in labels]
        instruction = f'Click on the "{labels[0]}" button.'
    elif kind == "colour":
        shape = rng.choice(SHAPES)
        specs = [(shape, c, "") for c in _distinct(rng, COLOURS, n)]
        instruction = f"Click on the {specs[0][1]} {shape}."
    elif kind == "shape":
        colour = rng.choice(list(COLOURS))
        n = min(n, len(SHAPES))
        specs = [(sh, colour, "") for sh in _distinct(rng, SHAPES, n)]
        instruction = f"Click on the {specs[0][0]}."
    elif kind == "colour_shape":
        # Distractors share the target's colour or its shape, so neither alone names it.
        shape, colour = rng.choice(SHAPES), rng.choice(list(COLOURS))
        specs, seen = [(shape, colour, "")], {(shape, colour)}
        while len(specs) < n:
            spec = (rng.choice(SHAPES), colour, "") if rng.random() < 0.5 else (shape, rng.choice(list(COLOURS)), "")
            if spec[:2] not in seen:
                seen.add(spec[:2])
                specs.append(spec)
        instruction = f"Click on the {colour} {shape}."
    else:  # beside: the square just left of / right of / above / below a named anchor
        return _beside(rng, st, font)
    placed: list[Element] = []
    for shape, colour, label in specs:
        w = max(s, int(font.getlength(label)) + 8) if shape == "button" else s
        h = s
        box = _place(rng, st, w, h, placed)
        if box is None:
            return None
        placed.append(Element(shape, colour, box, label))
    return placed, instruction


_SIDES = {"left of": (-1, 0), "right of": (1, 0), "above": (0, -1), "below": (0, 1)}


def _beside(rng: random.Random, st: PageSettings, font) -> tuple[list[Element], str] | None:
    """A circle of a named colour with squares on two of its sides; the target is the one on the
    named side. Both squares share a colour, so only their place tells them apart."""
    s = st.size
    anchor_colour, square_colour = _distinct(rng, COLOURS, 2)
    sides = _distinct(rng, _SIDES, 2)
    step = s + 4
    for _ in range(100):
        top = header_height(st)
        ax = rng.randint(step + 1, st.width - 2 * step - 1)
        ay = rng.randint(top + step + 1, st.height - 2 * step - 1)
        anchor = Element("circle", anchor_colour, (ax, ay, ax + s, ay + s))
        squares = []
        for side in sides:
            dx, dy = _SIDES[side]
            x, y = ax + dx * step, ay + dy * step
            squares.append(Element("square", square_colour, (x, y, x + s, y + s)))
        if all(0 <= v <= lim for e in squares for v, lim in zip(e.box, (st.width, st.height) * 2, strict=True)):
            return [squares[0], squares[1], anchor], f"Click on the square {sides[0]} the {anchor_colour} circle."
    return None


def _background(rng: random.Random, st: PageSettings) -> Image.Image:
    """A near-white page; with `gradient`, one that darkens to the right (red falls) and downward
    (blue falls), so every patch's colour says where it is (a scaffold for learning to read places)."""
    shade = rng.randint(235, 255)
    image = Image.new("RGB", (st.width, st.height), (shade, shade, shade))
    if st.gradient > 0:
        import numpy as np

        amp = 160 * st.gradient
        xs = np.linspace(0, amp, st.width)[None, :]
        ys = np.linspace(0, amp, st.height)[:, None]
        arr = np.full((st.height, st.width, 3), float(shade))
        arr[..., 0] -= xs
        arr[..., 2] -= ys
        image = Image.fromarray(arr.clip(0, 255).astype("uint8"))
    return image


def render_page(rng: random.Random, st: PageSettings, kind: str) -> tuple[Image.Image, Element, str]:
    """One page of `kind`: (image, target element, instruction)."""
    font = _font(max(8, st.size // 2))
    n = rng.randint(max(st.min_elements, 1 if kind == "colour" else 2), st.max_elements)
    for _ in range(50):
        got = _elements(rng, st, kind, n, font)
        if got is not None:
            break
    else:
        raise ValueError(f"no {kind} page of {n} elements fits in {st.width}x{st.height} (size {st.size})")
    elements, instruction = got
    image = _background(rng, st)
    draw = ImageDraw.Draw(image)
    if st.header:
        draw.rectangle((0, 0, st.width - 1, header_height(st) - 1), fill=(255, 255, 0))
        draw.text((2, 2), instruction, fill=(0, 0, 0), font=_font(8))
    for e in elements:
        _draw(draw, e, font)
    if st.tint > 0:
        image = _tinted(image, st.tint)
    return image, elements[0], instruction


def _tinted(image: Image.Image, strength: float) -> Image.Image:
    """`image` with red fading to the right and blue fading downward over every pixel, elements
    included, so the target's own pixels say where it is: a diagnostic that separates finding the
    target from knowing where a found thing is."""
    import numpy as np

    arr = np.asarray(image, dtype=float)
    h, w = arr.shape[:2]
    arr[..., 0] *= 1 - 0.8 * strength * np.linspace(0, 1, w)[None, :]
    arr[..., 2] *= 1 - 0.8 * strength * np.linspace(0, 1, h)[:, None]
    return Image.fromarray(arr.clip(0, 255).astype("uint8"))


def page_sample(rng: random.Random, st: PageSettings, kind: str, sample_id: str) -> Sample:
    """One generated page as a GUI-R1 click step. A low-level task (the click action space) unless
    `st.high` draws it as a step of a high-level one: the full action space in the prompt and, on half
    of those, a one-step history naming some element, as MiniWoB++'s multi-step tasks are written
    (`Step 1: click 'ONE'.`); the answer is the same click. With `high` 0 the random stream, and so
    every page, is what it was before the setting existed."""
    image, target, instruction = render_page(rng, st, kind)
    task_type, history = "low", ""
    if st.high > 0 and rng.random() < st.high:
        task_type = "high"
        if rng.random() < 0.5:
            history = f"Step 1: click the {rng.choice(list(COLOURS))} {rng.choice(SHAPES)}."
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return Sample(id=sample_id, image_bytes=buf.getvalue(), image_size=image.size, instruction=instruction,
                  history=history, gt_action="click", gt_bbox=tuple(float(v) for v in target.box),
                  gt_input_text=NO_TEXT, task_type=task_type, group=kind, ui_type=target.shape,
                  platform="generated", space=task_type, source="grounding.pages")


def generate(st: PageSettings, n: int, seed: int, prefix: str = "gen") -> Iterator[Sample]:
    """`n` pages drawn with `seed` (kinds in turn), ids `<prefix>/<kind>/<seed>/<i>`: the same
    arguments give the same pages; another seed gives other pages."""
    rng = random.Random(seed)
    for i in range(n):
        kind = st.kinds[i % len(st.kinds)]
        yield page_sample(rng, st, kind, f"{prefix}/{kind}/{seed}/{i}")


def kind_counts(samples: Sequence[Sample]) -> dict[str, int]:
    """Rows per kind (the data report)."""
    return dict(sorted(Counter(s.group or "" for s in samples).items()))
