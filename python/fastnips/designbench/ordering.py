r"""Layer order (z-order) metrics: Kendall's :math:`\tau` between predicted and true stacking, pairwise accuracy.

A layout's z-order gives each layer a depth :math:`z_i` (larger = drawn later = on top; in a GDB layout JSON the
component list is the paint order, so :math:`z_i` is the list position). For predicted depths :math:`\hat z`,
over the :math:`n(n-1)/2` pairs :math:`i < j`, with :math:`s_{ij} = \operatorname{sign}(z_i - z_j)`,

.. math::

    \tau_b = \frac{\sum_{i<j} s_{ij}\hat s_{ij}}{\sqrt{(n_0 - n_1)(n_0 - n_2)}},

:math:`n_0 = n(n-1)/2`, :math:`n_1, n_2` the pairs tied in :math:`z`, in :math:`\hat z` (scipy's default
``kendalltau``, equal to :math:`\tau_a` for permutations). GDB's layer-order task (``layout-u-5``) has no
published pipeline; the abstract names Kendall's :math:`\tau`. Choices: :math:`\tau_b` so that a prediction
that leaves layers tied is not rewarded; :math:`\tau = 0` when either side is constant or there are fewer than two
layers (no pair to order; scipy returns NaN, which would poison a dataset mean). The pairwise accuracy can be
restricted to overlapping layers (``boxes=``): the order of disjoint layers is invisible in the rendering.
The pair sums are one (n, n) sign-product in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import as_boxes, as_finite
from .geometry import _iou_core

__all__ = ["kendall_tau", "layer_order_accuracy", "layer_order_scores", "order_to_depth"]


def _signs(z: np.ndarray) -> np.ndarray:
    return np.sign(z[:, None] - z[None, :])


def _pair_inputs(pred_z: object, true_z: object) -> tuple[np.ndarray, np.ndarray]:
    p, t = as_finite(pred_z, "pred_z"), as_finite(true_z, "true_z")
    if p.shape != t.shape:
        raise ValueError(f"pred_z and true_z must give a depth to the same layers, got {p.size} and {t.size}")
    return p, t


def kendall_tau(pred_z: object, true_z: object) -> float:
    r"""Kendall's :math:`\tau_b` between predicted and true layer depths (module docstring).

    Parameters
    ----------
    pred_z, true_z : array_like, shape (n,)
        Depth of each layer (any increasing scale: ranks, z-index values).

    Returns
    -------
    float
        In [-1, 1]; 1 for the same order, -1 for the reversed one, 0 when undefined.

    Examples
    --------
    >>> kendall_tau([0, 1, 2, 3], [0, 1, 3, 2])  # one discordant pair of six
    0.6666666666666666
    """
    p, t = _pair_inputs(pred_z, true_z)
    n = p.size
    if n < 2:
        return 0.0
    sp, st = _signs(p), _signs(t)
    iu = np.triu_indices(n, 1)
    s = float(np.sum(sp[iu] * st[iu]))
    n0 = n * (n - 1) / 2
    n1, n2 = float(np.count_nonzero(st[iu] == 0)), float(np.count_nonzero(sp[iu] == 0))
    den = np.sqrt((n0 - n1) * (n0 - n2))
    return float(s / den) if den > 0 else 0.0


def layer_order_accuracy(pred_z: object, true_z: object, boxes: object = None) -> float:
    """Fraction of layer pairs whose predicted order (which one is on top) is right.

    Parameters
    ----------
    pred_z, true_z : array_like, shape (n,)
        Layer depths; pairs tied in ``true_z`` are skipped, a tie in ``pred_z`` on a pair that is not tied in
        ``true_z`` counts as wrong.
    boxes : array_like, shape (n, 4), optional
        Layer boxes ``[x, y, w, h]``: when given, only pairs that overlap with positive area count.

    Returns
    -------
    float
        In [0, 1]; 1.0 when no pair counts.

    Examples
    --------
    >>> layer_order_accuracy([0, 1, 2], [0, 2, 1])
    0.6666666666666666
    >>> layer_order_accuracy([0, 1, 2], [0, 2, 1], boxes=[[0, 0, 9, 9], [0, 0, 1, 1], [5, 5, 1, 1]])
    1.0
    """
    p, t = _pair_inputs(pred_z, true_z)
    n = p.size
    iu = np.triu_indices(n, 1)
    st, sp = _signs(t)[iu], _signs(p)[iu]
    use = st != 0
    if boxes is not None:
        B = as_boxes(boxes, "boxes")
        if len(B) != n:
            raise ValueError(f"boxes must hold one box per layer ({n}), got {len(B)}")
        use &= _iou_core(B[:, None, :], B[None, :, :])[iu] > 0
    k = int(np.count_nonzero(use))
    return float(np.count_nonzero((sp == st) & use)) / k if k else 1.0


def order_to_depth(order: Sequence, layers: Sequence) -> np.ndarray:
    """Depths from a bottom-to-top list of layer ids.

    Parameters
    ----------
    order : sequence
        Layer ids, the bottom layer first (a model's answer); ids not in ``layers`` are ignored, repeated ids keep
        their first position.
    layers : sequence
        All layer ids of the layout.

    Returns
    -------
    numpy.ndarray, shape (len(layers),)
        Depth of each layer of ``layers``: its position in ``order``; layers the answer leaves out share depth
        -1 (below all, tied with each other).

    Examples
    --------
    >>> order_to_depth(["b", "a"], ["a", "b", "c"]).tolist()
    [1.0, 0.0, -1.0]
    """
    pos: dict = {}
    for i, lid in enumerate(order):
        pos.setdefault(lid, i)
    return np.array([pos.get(lid, -1) for lid in layers], dtype=np.float64)


def layer_order_scores(pred_z: Sequence, true_z: Sequence, boxes: Sequence | None = None) -> dict[str, float]:
    """Dataset means of :func:`kendall_tau` and :func:`layer_order_accuracy` over layouts.

    Parameters
    ----------
    pred_z, true_z : sequence of array_like
        Per layout, the predicted and true depths of its layers.
    boxes : sequence of array_like, optional
        Per layout, the layer boxes (for ``overlap_accuracy``).

    Returns
    -------
    dict
        ``kendall_tau``, ``pairwise_accuracy`` and, with ``boxes``, ``overlap_accuracy``.

    Examples
    --------
    >>> layer_order_scores([[0, 1], [1, 0]], [[0, 1], [0, 1]])["kendall_tau"]
    0.0
    """
    if len(pred_z) != len(true_z):
        raise ValueError(f"pred_z and true_z must list the same layouts, got {len(pred_z)} and {len(true_z)}")
    if boxes is not None and len(boxes) != len(true_z):
        raise ValueError(f"boxes must list the same layouts as true_z, got {len(boxes)} and {len(true_z)}")
    n = max(len(true_z), 1)
    out = {"kendall_tau": sum(kendall_tau(p, t) for p, t in zip(pred_z, true_z)) / n,
           "pairwise_accuracy": sum(layer_order_accuracy(p, t) for p, t in zip(pred_z, true_z)) / n}
    if boxes is not None:
        out["overlap_accuracy"] = sum(layer_order_accuracy(p, t, b) for p, t, b in zip(pred_z, true_z, boxes)) / n
    return out
