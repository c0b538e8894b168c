"""Input validation shared by the designbench metrics: boxes, label sequences, scores (numpy only)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def as_boxes(boxes: object, name: str, *, allow_empty: bool = True) -> np.ndarray:
    """``boxes`` as a float64 array of shape (n, 4) in ``[x, y, w, h]`` (left, top, width, height).

    Refuses (ValueError naming ``name``): a shape other than (n, 4) (a single box of shape (4,) is accepted as
    (1, 4)), NaN or infinite coordinates, a negative width or height. Zero-area boxes are accepted: their IoU with
    anything is 0, as in lica-gdb's ``iou``.
    """
    try:
        arr = np.asarray(boxes, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: expected numbers [x, y, w, h] per box, could not convert ({e})") from None
    if arr.ndim == 1 and arr.size == 4:
        arr = arr[None, :]
    if arr.size == 0 and allow_empty:
        return np.zeros((0, 4))
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name}: expected boxes of shape (n, 4) as [x, y, w, h], got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr))[0, 0])
        raise ValueError(f"{name}: box {bad} has a NaN or infinite coordinate: {arr[bad].tolist()}")
    if np.any(arr[:, 2:] < 0):
        bad = int(np.argwhere(arr[:, 2:] < 0)[0, 0])
        raise ValueError(f"{name}: box {bad} has a negative width or height (boxes are [x, y, w, h]): "
                         f"{arr[bad].tolist()}")
    return arr


def box_ok(b: object) -> bool:
    """Whether ``b`` is one valid box: 4 finite numbers with non-negative width and height."""
    try:
        v = np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return v.shape == (4,) and bool(np.all(np.isfinite(v))) and bool(np.all(v[2:] >= 0))


def as_finite(values: object, name: str, *, ndim: int = 1) -> np.ndarray:
    """``values`` as a finite float64 array of ``ndim`` dimensions, else a ValueError naming ``name``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: expected numbers, could not convert ({e})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-d array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


def same_length(a: Sequence, b: Sequence, name_a: str, name_b: str) -> None:
    """ValueError unless ``len(a) == len(b)``."""
    if len(a) != len(b):
        raise ValueError(f"{name_a} and {name_b} must have the same length, got {len(a)} and {len(b)}")


def check_k(k: int, name: str = "k") -> int:
    """A positive int, else ValueError."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k!r}")
    return int(k)


def check_unit(x: float, name: str, *, closed_low: bool = True) -> float:
    """A float in [0, 1] (or (0, 1] when ``closed_low`` is False), else ValueError."""
    v = float(x)
    if not np.isfinite(v) or v > 1 or v < 0 or (not closed_low and v == 0):
        lo = "[0" if closed_low else "(0"
        raise ValueError(f"{name} must be in {lo}, 1], got {x!r}")
    return v
