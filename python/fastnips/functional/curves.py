r"""Irregularly sampled curves in one packed (CSR-like) form, and the checks every entry point makes.

Curve :math:`i` is observed at times :math:`t_{i1} < \dots < t_{im_i}` with values :math:`x_{ij}`. Millions of
curves are held as three flat arrays, like the rows of a CSR matrix: ``offsets`` (length ``n + 1``, int64,
``offsets[0] = 0``, non-decreasing), ``t`` and ``x`` (length ``offsets[-1]``, float64); curve ``i`` is
``t[offsets[i]:offsets[i + 1]]``. :func:`pack_curves` builds it from a list of ``(t_i, x_i)`` pairs;
:func:`as_packed` also takes scikit-fda's ``FDataGrid`` and ``FDataIrregular``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeAlias

import numpy as np

# What every entry point accepts as curves: PackedCurves, an (offsets, t, x) tuple, a sequence of (t_i, x_i)
# pairs, or scikit-fda's FDataGrid / FDataIrregular (typed Any: scikit-fda is optional).
CurvesLike: TypeAlias = "PackedCurves | tuple[np.ndarray, np.ndarray, np.ndarray] | Sequence[tuple[Any, Any]] | Any"

__all__ = ["CurvesLike", "PackedCurves", "as_packed", "check_curves", "check_structure", "pack_curves"]


class PackedCurves(NamedTuple):
    """Curves in CSR-like form: curve ``i`` is ``(t[offsets[i]:offsets[i+1]], x[offsets[i]:offsets[i+1]])``."""

    offsets: np.ndarray
    t: np.ndarray
    x: np.ndarray

    @property
    def n_curves(self) -> int:
        """The number of curves."""
        return len(self.offsets) - 1

    @property
    def counts(self) -> np.ndarray:
        """Samples per curve, ``(n_curves,)``."""
        return np.diff(self.offsets)

    def curve(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Curve ``i`` as ``(t_i, x_i)`` views."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return self.t[lo:hi], self.x[lo:hi]

    def subset(self, idx: np.ndarray | slice | Sequence[int]) -> PackedCurves:
        """The curves ``idx`` (indices or a boolean mask), packed anew."""
        idx = np.arange(self.n_curves)[idx]
        return pack_curves([self.curve(i) for i in idx], check=False)


def pack_curves(curves: Sequence[tuple[Any, Any]], *, check: bool = True) -> PackedCurves:
    """Pack a list of ``(t_i, x_i)`` pairs (1-D arrays of equal length) into :class:`PackedCurves`.

    Parameters
    ----------
    curves : sequence of (array, array)
        Times and values of each curve.
    check : bool
        Run :func:`check_curves` (sorted distinct finite times, finite values, no empty curve).

    Returns
    -------
    PackedCurves

    Examples
    --------
    >>> p = pack_curves([(np.array([0.0, 0.5]), np.array([1.0, 2.0])), (np.array([0.2]), np.array([3.0]))])
    >>> p.offsets.tolist(), p.n_curves
    ([0, 2, 3], 2)
    """
    ts, xs = [], []
    try:
        n = len(curves)
    except TypeError:
        raise TypeError(f"curves must be a sequence of (t, x) pairs, got {type(curves).__name__}") from None
    for i in range(n):
        item = curves[i]
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ValueError(f"curve {i}: expected a (t, x) pair of 1-D arrays, got {type(item).__name__}")
        t, x = (np.asarray(a, dtype=np.float64) for a in item)
        if t.ndim != 1 or x.ndim != 1 or t.shape != x.shape:
            raise ValueError(f"curve {i}: t and x must be 1-D arrays of one length, got shapes {t.shape} and {x.shape}")
        ts.append(t)
        xs.append(x)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(t) for t in ts], out=offsets[1:])
    packed = PackedCurves(offsets, np.concatenate(ts) if ts else np.zeros(0), np.concatenate(xs) if xs else np.zeros(0))
    if check:
        check_curves(packed)
    return packed


def _from_skfda(obj) -> PackedCurves | None:
    kind = type(obj).__name__
    if kind == "FDataGrid":
        if obj.dim_domain != 1 or obj.dim_codomain != 1:
            raise ValueError("an FDataGrid must have a 1-D domain and codomain (scalar curves of one variable)")
        grid = np.asarray(obj.grid_points[0], dtype=np.float64)
        values = np.asarray(obj.data_matrix[..., 0], dtype=np.float64)
        n, m = values.shape
        return PackedCurves(np.arange(n + 1, dtype=np.int64) * m, np.tile(grid, n), values.ravel().copy())
    if kind == "FDataIrregular":
        if obj.dim_domain != 1 or obj.dim_codomain != 1:
            raise ValueError("an FDataIrregular must have a 1-D domain and codomain (scalar curves of one variable)")
        starts = np.asarray(obj.start_indices, dtype=np.int64)
        t = np.asarray(obj.points, dtype=np.float64).reshape(-1)
        x = np.asarray(obj.values, dtype=np.float64).reshape(-1)
        return PackedCurves(np.append(starts, len(t)), t, x)
    return None


def as_packed(curves: CurvesLike, *, check: bool = True) -> PackedCurves:
    """Normalise any supported input to :class:`PackedCurves`.

    Accepts :class:`PackedCurves`, an ``(offsets, t, x)`` tuple of three arrays, a list of ``(t_i, x_i)`` pairs,
    or scikit-fda's ``FDataGrid`` / ``FDataIrregular`` (one-dimensional domain and codomain).
    """
    if isinstance(curves, PackedCurves):
        packed = curves
    elif (p := _from_skfda(curves)) is not None:
        packed = p
    elif isinstance(curves, tuple) and len(curves) == 3 and all(np.ndim(a) == 1 for a in curves):
        packed = PackedCurves(*curves)
    else:
        return pack_curves(curves, check=check)
    offsets = np.asarray(packed.offsets)
    if offsets.ndim != 1 or offsets.size < 1 or (offsets.size and offsets.dtype.kind not in "iu"):
        raise ValueError("offsets must be a 1-D integer array of length n_curves + 1")
    packed = PackedCurves(np.ascontiguousarray(offsets, dtype=np.int64),
                          np.ascontiguousarray(packed.t, dtype=np.float64),
                          np.ascontiguousarray(packed.x, dtype=np.float64))
    if check:
        check_curves(packed)
    return packed


def check_structure(curves: PackedCurves) -> None:
    """Raise ``ValueError`` unless ``offsets`` starts at 0, is 1-D and non-decreasing and ends at ``len(t) ==
    len(x)`` (the packed structure; the per-sample checks are :func:`check_curves`)."""
    off, t, x = curves
    if off.ndim != 1 or off.size < 1 or off[0] != 0:
        raise ValueError("offsets must be a 1-D array starting at 0 (length n_curves + 1)")
    if t.ndim != 1 or x.ndim != 1 or len(t) != len(x) or off[-1] != len(t):
        raise ValueError(f"t and x must be 1-D of length offsets[-1] = {off[-1]}, got {t.shape} and {x.shape}")
    if (bad := np.flatnonzero(np.diff(off) < 0)).size:
        raise ValueError(f"offsets must be non-decreasing; they decrease at curve {bad[0]}")


def check_curves(curves: PackedCurves, domain_range: tuple[float, float] | None = None, *,
                 first_index: int = 0) -> None:
    """Raise ``ValueError`` naming the first offending curve unless every curve is non-empty, its times finite,
    strictly increasing (sorted, no duplicates) and inside ``domain_range`` (when given), and its values finite.

    The packed structure is checked first (:func:`check_structure`). ``first_index`` is added to the curve
    indices in the messages (when ``curves`` is a slice of a larger set).
    """
    check_structure(curves)
    off, t, x = curves
    counts = np.diff(off)

    def where(k):  # (curve, sample within it) of the flat sample k
        i = int(np.searchsorted(off, k, side="right")) - 1
        return i + first_index, k - off[i]

    if (bad := np.flatnonzero(counts == 0)).size:
        raise ValueError(f"curve {bad[0] + first_index} is empty (no samples)")
    for name, arr in (("times", t), ("values", x)):
        if (bad := np.flatnonzero(~np.isfinite(arr))).size:
            i, j = where(bad[0])
            raise ValueError(f"curve {i}: {name} must be finite, got {arr[bad[0]]} at sample {j}")
    step = np.diff(t)
    inner = np.ones(len(step), dtype=bool)
    inner[off[1:-1] - 1] = False  # the step from one curve's last sample to the next curve's first
    if (bad := np.flatnonzero(inner & (step <= 0))).size:
        i, j = where(bad[0])
        what = "duplicate" if step[bad[0]] == 0 else "unsorted"
        raise ValueError(f"curve {i}: times must be strictly increasing, got {what} times {t[bad[0]]} and "
                         f"{t[bad[0] + 1]} at samples {j} and {j + 1}")
    if domain_range is not None and t.size:
        a, b = domain_range
        if (bad := np.flatnonzero((t < a) | (t > b))).size:
            i, _ = where(bad[0])
            raise ValueError(f"curve {i}: time {t[bad[0]]} lies outside the basis domain [{a}, {b}]")
