"""Synthetic templates with known sibling groups and layer orders, for tests, the baselines' evaluation and the
demo (the GDB data is a user download; nothing here stands in for its numbers).

A template draws a canvas (one of five aspect ratios, 1080 px wide), a full-canvas background image, 0-2 shapes,
1-3 images (a crop shape each, sometimes rotated) and 2-5 text boxes, a heading and a body font (sometimes an
accent font) from a pool whose popularity is Zipf-like (so unrelated templates share fonts, as real ones do) and a
three-colour palette. The paint order is background, shapes, images, text, with random adjacent swaps. A
variant jitters positions and text sizes, re-picks a font with probability ``font_change``, drops an element with
probability ``drop`` and recolours with probability 1/2. Every layout is built as GDB layout JSON (plus a
``crop`` key on images) and read back with :meth:`Layout.from_gdb`.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_k
from .layout import Layout

__all__ = ["ASPECT_RATIOS", "CROP_SHAPES", "FONT_POOL", "ratio_label", "synthetic_templates"]

ASPECT_RATIOS = {"1:1": (1, 1), "4:5": (4, 5), "9:16": (9, 16), "16:9": (16, 9), "3:4": (3, 4)}
CROP_SHAPES = ("rectangle", "circle", "rounded")
FONT_POOL = ("Montserrat", "Open Sans", "Roboto", "Lato", "Poppins", "Arimo", "League Spartan", "Playfair Display",
             "Cinzel", "Rufina", "Oswald", "Raleway", "Merriweather", "Nunito", "Bebas Neue", "Lora",
             "Source Sans Pro", "Work Sans", "Pacifico", "Dancing Script", "Abril Fatface", "Anton", "Quicksand",
             "Josefin Sans", "Libre Baskerville", "Cormorant", "Karla", "Rubik", "DM Serif Display", "Archivo")


def _color(rng: np.random.Generator) -> str:
    r, g, b = rng.integers(0, 256, 3)
    return f"rgb({r}, {g}, {b})"


def _pick_font(rng: np.random.Generator) -> str:
    w = 1.0 / np.arange(1, len(FONT_POOL) + 1) ** 0.8
    return FONT_POOL[int(rng.choice(len(FONT_POOL), p=w / w.sum()))]


def _template(rng: np.random.Generator) -> dict:
    ratio = list(ASPECT_RATIOS)[int(rng.integers(len(ASPECT_RATIOS)))]
    fonts = [_pick_font(rng), _pick_font(rng)] + ([_pick_font(rng)] if rng.random() < 0.3 else [])
    elems = [{"type": "IMAGE", "rel": [0.0, 0.0, 1.0, 1.0], "crop": "rectangle", "rot": 0.0}]
    for _ in range(int(rng.integers(0, 3))):
        w, h = rng.uniform(0.2, 0.6, 2)
        elems.append({"type": "GROUP", "rel": [rng.uniform(0, 1 - w), rng.uniform(0, 1 - h), w, h]})
    for _ in range(int(rng.integers(1, 4))):
        w, h = rng.uniform(0.15, 0.5, 2)
        rot = float(rng.choice([-15.0, -10.0, -5.0, 5.0, 10.0, 15.0, 90.0])) if rng.random() < 0.15 else 0.0
        elems.append({"type": "IMAGE", "rel": [rng.uniform(0, 1 - w), rng.uniform(0, 1 - h), w, h],
                      "crop": CROP_SHAPES[int(rng.integers(3))], "rot": rot})
    for t in range(int(rng.integers(2, 6))):
        w, h = rng.uniform(0.3, 0.9), rng.uniform(0.08, 0.14) if t == 0 else rng.uniform(0.03, 0.07)
        font = fonts[0] if t == 0 else fonts[1 + (len(fonts) == 3 and rng.random() < 0.4)]
        elems.append({"type": "TEXT", "rel": [rng.uniform(0, 1 - w), rng.uniform(0, 1 - h), w, h], "font": font,
                      "align": str(rng.choice(["left", "center", "right"]))})
    order = list(range(len(elems)))
    for _ in range(int(rng.integers(0, 3))):  # a few adjacent swaps above the background
        i = int(rng.integers(1, len(order) - 1))
        order[i], order[i + 1] = order[i + 1], order[i]
    return {"ratio": ratio, "elems": [elems[i] for i in order], "palette": [_color(rng) for _ in range(3)]}


def _variant(tpl: dict, rng: np.random.Generator, jitter: float, font_change: float, drop: float) -> dict:
    rw, rh = ASPECT_RATIOS[tpl["ratio"]]
    W, H = 1080.0, 1080.0 * rh / rw
    palette = tpl["palette"] if rng.random() < 0.5 else [_color(rng) for _ in range(3)]
    fonts = sorted({e["font"] for e in tpl["elems"] if e.get("font")})  # sorted: set order varies by process
    new_font = {f: _pick_font(rng) for f in fonts if rng.random() < font_change}
    elems = list(tpl["elems"])
    if len(elems) > 3 and rng.random() < drop:
        del elems[int(rng.integers(1, len(elems)))]
    comps = []
    for e in elems:
        x, y, w, h = e["rel"]
        if e is not tpl["elems"][0] or w < 1.0:
            x, y = x + rng.normal(0, jitter), y + rng.normal(0, jitter)
        c = {"type": e["type"], "left": f"{x * W:.3f}px", "top": f"{y * H:.3f}px", "width": f"{w * W:.3f}px",
             "height": f"{h * H:.3f}px", "transform": f"rotate({e.get('rot', 0.0)}deg)"}
        if e["type"] == "TEXT":
            c.update(fontFamily=f"{new_font.get(e['font'], e['font'])}--400",
                     fontSize=f"{round(h * H * 0.75 * rng.uniform(0.95, 1.05))}px",
                     color=palette[1 + int(rng.integers(2))], textAlign=e["align"])
        elif e["type"] == "IMAGE":
            c["crop"] = e["crop"]
        else:
            c["backgroundColor"] = palette[2]
        comps.append(c)
    return {"width": W, "height": H, "background": palette[0], "components": comps}


def ratio_label(width: float, height: float) -> str:
    """The label of :data:`ASPECT_RATIOS` nearest to ``width / height`` (in log ratio).

    Examples
    --------
    >>> ratio_label(1080, 1350)
    '4:5'
    """
    if not (width > 0 and height > 0):
        raise ValueError(f"width and height must be positive, got {width!r}, {height!r}")
    r = np.log(width / height)
    return min(ASPECT_RATIOS, key=lambda k: abs(np.log(ASPECT_RATIOS[k][0] / ASPECT_RATIOS[k][1]) - r))


def synthetic_templates(n_templates: int = 20, variants: int = 5, *, seed: int = 0, jitter: float = 0.02,
                        font_change: float = 0.1, drop: float = 0.1) -> list[Layout]:
    """Sibling variants of random templates (module docstring).

    Parameters
    ----------
    n_templates : int
        Templates (sibling groups).
    variants : int
        Layouts per template.
    seed : int
        Everything is a function of the seed.
    jitter : float
        Standard deviation of the position noise, as a fraction of the canvas.
    font_change, drop : float in [0, 1]
        Per variant: the probability that a template font is replaced, that an element is dropped.

    Returns
    -------
    list of Layout
        ``n_templates * variants`` layouts, template by template; ``template_id`` ``"t000"``,
        ``layout_id`` ``"t000_v0"``; the GDB layout JSON in ``Layout.source``.

    Examples
    --------
    >>> lays = synthetic_templates(3, 2, seed=0)
    >>> len(lays), lays[0].template_id == lays[1].template_id != lays[2].template_id
    (6, True)
    """
    n, v = check_k(n_templates, "n_templates"), check_k(variants, "variants")
    for name, p in (("jitter", jitter), ("font_change", font_change), ("drop", drop)):
        if not (np.isfinite(p) and 0 <= p <= 1):
            raise ValueError(f"{name} must be in [0, 1], got {p!r}")
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        tpl = _template(rng)
        for j in range(v):
            obj = _variant(tpl, rng, jitter, font_change, drop)
            out.append(Layout.from_gdb(obj, layout_id=f"t{t:03d}_v{j}", template_id=f"t{t:03d}"))
    return out
