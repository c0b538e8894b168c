"""The layout record the metrics and baselines share, and its reader for GDB's layout JSON.

A GDB layout (``lica-data/layouts/<template_id>/<layout_id>.json``) is ``{"width", "height", "background",
"components": [...]}``; each component has a ``type`` (``TEXT``, ``IMAGE``, ``GROUP``, ...), CSS-like ``left``,
``top``, ``width``, ``height`` strings (``"121.9px"``), a ``transform`` (``"rotate(-5.2deg)"``), and for text a
``fontFamily`` (``"Cinzel--400"``: family and weight). The component list is the paint order, so a layer's
depth is its position in it; layouts in the same template folder are siblings (variants of one template).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._checks import as_boxes

__all__ = ["Layout", "normalize_font"]

_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ROT = re.compile(r"rotate\(\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(deg|rad|turn)?\s*\)")
_WEIGHT = re.compile(r"--\d+$")


def _num(v: object, default: float = 0.0) -> float:
    if v is None:
        return default
    if isinstance(v, int | float):
        return float(v)
    m = _NUM.search(str(v))
    return float(m.group()) if m else default


def _rotation(transform: object) -> float:
    m = _ROT.search(str(transform or ""))
    if not m:
        return 0.0
    unit = {"rad": 180.0 / np.pi, "turn": 360.0}.get(m.group(2) or "deg", 1.0)
    return float(m.group(1)) * unit


def normalize_font(name: object, *, strip_weight: bool = True) -> str:
    """A font family name in a comparable form: trimmed, lower-case, single spaces.

    Parameters
    ----------
    name : str
        ``fontFamily`` as a layout stores it (GDB: ``"League Spartan--400"``).
    strip_weight : bool, default True
        Drop GDB's ``--<weight>`` suffix, so the weights of one family count as one font (the choice of the
        font-Jaccard baseline here: a template's variants often change a weight, rarely a family).

    Returns
    -------
    str

    Examples
    --------
    >>> normalize_font("  League  Spartan--700 ")
    'league spartan'
    """
    s = " ".join(str(name).split()).lower()
    return _WEIGHT.sub("", s).strip() if strip_weight else s


@dataclass(frozen=True, eq=False)
class Layout:
    """One layout: its layers (boxes, types, fonts, depths, rotations), canvas and identity.

    Parameters
    ----------
    boxes : array_like, shape (n, 4)
        Layer boxes ``[x, y, w, h]`` in canvas pixels.
    types : sequence of str, length n
        Layer types, lower-case (``"text"``, ``"image"``, ``"group"``, ...).
    fonts : sequence of str or None, length n
        Font family of text layers as stored (None for other layers).
    z : array_like, shape (n,), optional
        Depths (larger = on top); default the list position.
    width, height : float
        Canvas size; must be positive.
    rotations : array_like, shape (n,), optional
        Rotation of each layer in degrees; default 0.
    layout_id, template_id : str
        Identity; layouts with the same ``template_id`` are siblings.
    source : dict, optional
        The layout JSON it was read from (:meth:`from_gdb`), for the style and colour metrics.

    Examples
    --------
    >>> lay = Layout.from_gdb({"width": 100, "height": 50, "components": [
    ...     {"type": "IMAGE", "width": "100px", "height": "50px"},
    ...     {"type": "TEXT", "left": "10px", "top": "5px", "width": "80px", "height": "10px",
    ...      "fontFamily": "Cinzel--400"}]})
    >>> lay.boxes.tolist(), lay.font_set()
    ([[0.0, 0.0, 100.0, 50.0], [10.0, 5.0, 80.0, 10.0]], frozenset({'cinzel'}))
    """

    boxes: np.ndarray
    types: tuple
    fonts: tuple
    z: np.ndarray = None
    width: float = 1.0
    height: float = 1.0
    rotations: np.ndarray = None
    layout_id: str = ""
    template_id: str = ""
    source: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        B = as_boxes(self.boxes, "Layout.boxes")
        n = len(B)
        object.__setattr__(self, "boxes", B)
        object.__setattr__(self, "types", tuple(str(t).lower() for t in self.types))
        object.__setattr__(self, "fonts", tuple(None if f is None else str(f) for f in self.fonts))
        z = np.arange(n, dtype=np.float64) if self.z is None else np.asarray(self.z, dtype=np.float64)
        rot = np.zeros(n) if self.rotations is None else np.asarray(self.rotations, dtype=np.float64)
        object.__setattr__(self, "z", z)
        object.__setattr__(self, "rotations", rot)
        for name, seq in (("types", self.types), ("fonts", self.fonts), ("z", z), ("rotations", rot)):
            if len(seq) != n:
                raise ValueError(f"Layout.{name} must have one entry per box ({n}), got {len(seq)}")
        if not (np.all(np.isfinite(z)) and np.all(np.isfinite(rot))):
            raise ValueError("Layout.z and Layout.rotations must be finite")
        if not (np.isfinite(self.width) and np.isfinite(self.height) and self.width > 0 and self.height > 0):
            raise ValueError(f"Layout canvas must be positive, got width={self.width!r}, height={self.height!r}")

    def __len__(self) -> int:
        return len(self.boxes)

    def font_set(self, *, strip_weight: bool = True) -> frozenset:
        """The set of normalised font families of the text layers (:func:`normalize_font`)."""
        return frozenset(normalize_font(f, strip_weight=strip_weight) for f in self.fonts if f)

    @property
    def aspect_ratio(self) -> float:
        """Canvas width / height."""
        return float(self.width / self.height)

    @classmethod
    def from_gdb(cls, obj: Mapping, *, layout_id: str = "", template_id: str = "") -> Layout:
        """Read a GDB layout JSON object (module docstring); missing ``left`` / ``top`` are 0.

        Parameters
        ----------
        obj : mapping
            The parsed JSON: ``components`` (a list of dicts), ``width`` and ``height``.
        layout_id, template_id : str
            Identity to record.

        Returns
        -------
        Layout
        """
        if not isinstance(obj, Mapping) or not isinstance(obj.get("components"), Sequence):
            raise ValueError(f"layout {layout_id or '?'}: expected a JSON object with a 'components' list")
        comps = [c for c in obj["components"] if isinstance(c, Mapping)]
        boxes = [[_num(c.get("left")), _num(c.get("top")), max(_num(c.get("width")), 0.0),
                  max(_num(c.get("height")), 0.0)] for c in comps]
        return cls(boxes=np.array(boxes).reshape(-1, 4), types=tuple(str(c.get("type", "")) for c in comps),
                   fonts=tuple(c.get("fontFamily") or None for c in comps),
                   width=_num(obj.get("width"), 1.0) or 1.0, height=_num(obj.get("height"), 1.0) or 1.0,
                   rotations=np.array([_rotation(c.get("transform")) for c in comps]),
                   layout_id=layout_id, template_id=template_id, source=dict(obj))
