r"""Box geometry of layouts: IoU matrices, element-wise IoU and optimally matched IoU (numpy / scipy).

Boxes are ``[x, y, w, h]`` (left, top, width, height), the convention of the GDB layouts (CSS ``left``, ``top``,
``width``, ``height``) and of lica-gdb's ``iou``. For boxes :math:`a, b`

.. math::

    \mathrm{IoU}(a, b) = \frac{|a \cap b|}{w_a h_a + w_b h_b - |a \cap b|},\qquad
    |a \cap b| = \max(0, \min(x_a + w_a, x_b + w_b) - \max(x_a, x_b))\,\max(0, \ldots)_y ,

and 0 when the boxes do not overlap with positive area or the union is 0 (two zero-area boxes), with lica-gdb's
operations (results agree to the last bit), except that the value is capped at 1: with coordinates far larger
than a box's size, rounding can otherwise give 1 + 1e-10 (lica-gdb does not cap). Precision: a box of size
:math:`s` at coordinate :math:`c` carries a rounding error of order :math:`\epsilon |c| / s` in its IoU
(:math:`\epsilon` = 2.2e-16), in this and any floating-point implementation.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from ._checks import as_boxes

__all__ = ["hungarian_iou", "iou_matrix", "paired_iou", "xyxy_to_xywh"]


def _iou_core(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of broadcast-compatible [..., 4] xywh arrays (no checks)."""
    ax, ay, aw, ah = (a[..., i] for i in range(4))
    bx, by, bw, bh = (b[..., i] for i in range(4))
    x1, y1 = np.maximum(ax, bx), np.maximum(ay, by)
    x2, y2 = np.minimum(ax + aw, bx + bw), np.minimum(ay + ah, by + bh)
    hit = (x2 > x1) & (y2 > y1)
    inter = np.where(hit, (x2 - x1) * (y2 - y1), 0.0)
    union = aw * ah + bw * bh - inter
    ok = hit & (union > 0)
    return np.where(ok, np.minimum(inter / np.where(ok, union, 1.0), 1.0), 0.0)


def iou_matrix(a: object, b: object) -> np.ndarray:
    """IoU of every box of ``a`` with every box of ``b``.

    Parameters
    ----------
    a : array_like, shape (n, 4)
        Boxes ``[x, y, w, h]``.
    b : array_like, shape (m, 4)

    Returns
    -------
    numpy.ndarray, shape (n, m)
        ``out[i, j] = IoU(a[i], b[j])`` in [0, 1] (definition in the module docstring).

    Examples
    --------
    >>> iou_matrix([[0, 0, 2, 2]], [[1, 1, 2, 2], [5, 5, 1, 1]]).round(4).tolist()
    [[0.1429, 0.0]]
    """
    A, B = as_boxes(a, "a"), as_boxes(b, "b")
    return _iou_core(A[:, None, :], B[None, :, :])


def paired_iou(a: object, b: object) -> np.ndarray:
    """IoU of ``a[i]`` with ``b[i]`` for each i.

    Parameters
    ----------
    a, b : array_like, shape (n, 4)
        Boxes ``[x, y, w, h]``, the same number in both.

    Returns
    -------
    numpy.ndarray, shape (n,)

    Examples
    --------
    >>> paired_iou([[0, 0, 1, 1], [0, 0, 2, 1]], [[0, 0, 1, 1], [1, 0, 2, 1]]).tolist()
    [1.0, 0.3333333333333333]
    """
    A, B = as_boxes(a, "a"), as_boxes(b, "b")
    if A.shape != B.shape:
        raise ValueError(f"a and b must hold the same number of boxes, got {len(A)} and {len(B)}")
    return _iou_core(A, B)


def hungarian_iou(pred: object, gt: object) -> dict[str, float]:
    r"""Mean IoU under the one-to-one matching of predicted to true boxes that maximises the total IoU.

    For predictions that carry no identity (a generated layout compared with the original), the matching
    :math:`\pi` maximises :math:`\sum_i \mathrm{IoU}(p_{\pi(i)}, g_i)` (Hungarian algorithm, scipy's
    ``linear_sum_assignment``); true boxes left without a partner (fewer predictions) count IoU 0.

    Parameters
    ----------
    pred : array_like, shape (m, 4)
    gt : array_like, shape (n, 4)

    Returns
    -------
    dict
        ``miou`` (total matched IoU / n; 0 when n = 0 and m > 0, 1 when both are empty),
        ``precision`` and ``recall`` (matched pairs with IoU >= 0.5 over m and over n).

    Examples
    --------
    >>> r = hungarian_iou([[1, 0, 1, 1], [0, 0, 1, 1]], [[0, 0, 1, 1], [1, 0, 1, 1]])
    >>> r["miou"]
    1.0
    """
    P, G = as_boxes(pred, "pred"), as_boxes(gt, "gt")
    if len(G) == 0 or len(P) == 0:
        both = len(G) == 0 and len(P) == 0
        return {"miou": float(both), "precision": float(both), "recall": float(both)}
    M = _iou_core(P[:, None, :], G[None, :, :])
    rows, cols = linear_sum_assignment(M, maximize=True)
    vals = M[rows, cols]
    good = float(np.count_nonzero(vals >= 0.5))
    return {"miou": float(vals.sum() / len(G)), "precision": good / len(P), "recall": good / len(G)}


def xyxy_to_xywh(boxes: object) -> np.ndarray:
    """Convert ``[x1, y1, x2, y2]`` boxes to ``[x, y, w, h]``.

    Parameters
    ----------
    boxes : array_like, shape (n, 4)
        Corners; ``x2 >= x1`` and ``y2 >= y1`` are required.

    Returns
    -------
    numpy.ndarray, shape (n, 4)

    Examples
    --------
    >>> xyxy_to_xywh([[1, 2, 4, 6]]).tolist()
    [[1.0, 2.0, 3.0, 4.0]]
    """
    arr = np.asarray(boxes, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 4:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"boxes: expected shape (n, 4) as [x1, y1, x2, y2], got {arr.shape}")
    out = np.concatenate([arr[:, :2], arr[:, 2:] - arr[:, :2]], axis=1)
    return as_boxes(out, "boxes (x2 < x1 or y2 < y1?)")
