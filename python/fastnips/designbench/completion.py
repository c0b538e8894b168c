r"""Layout completion and adaptation metrics (GDB's ``layout-2`` partial completion, single and multi-element;
``layout-3`` aspect-ratio adaptation), on the boxes a model places for known components.

For a sample with true components :math:`g_1, \ldots, g_n` (keyed by component id) and predicted boxes, each
true component takes the prediction with its key, else (lica-gdb's fallback) the prediction at its position in
the prediction order, else none. Then

.. math::

    \mathrm{mIoU} = \frac1n \sum_i \mathrm{IoU}(p_i, g_i)\ (0 \text{ if none}),\quad
    \mathrm{coverage} = \frac{\#\{i: p_i \text{ exists}\}}{n},\quad
    \mathrm{hallucination} = \frac{\max(m - \#\text{matched}, 0)}{\max(m, 1)},

with :math:`m` the number of predicted boxes; dataset values are means over samples with at least one true
component (lica-gdb's aggregation). The image-quality scores lica-gdb adds (CLIP, DINO, LPIPS, FID of rendered
layouts) need rendered assets and neural models and are not computed here. For predictions without ids, use
:func:`~fastnips.designbench.hungarian_iou`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ._checks import as_boxes, box_ok
from .geometry import _iou_core

__all__ = ["completion_metrics", "completion_scores"]


def _items(x: object, name: str) -> tuple[list, np.ndarray]:
    """(keys or None per entry, boxes) of a mapping key -> box or a sequence of boxes."""
    if isinstance(x, Mapping):
        keys = list(x.keys())
        bad = next((k for k in keys if not box_ok(x[k])), None)
        if bad is not None:
            raise ValueError(f"{name}[{bad!r}]: expected a box [x, y, w, h] of finite numbers with w, h >= 0, got "
                             f"{x[bad]!r}")
        return keys, as_boxes([x[k] for k in keys], name) if keys else np.zeros((0, 4))
    boxes = as_boxes(x, name) if len(x) else np.zeros((0, 4))
    return [None] * len(boxes), boxes


def completion_scores(pred: object, gt: object) -> dict[str, float]:
    """Keyed mIoU, coverage and hallucination rate of one sample (module docstring).

    Parameters
    ----------
    pred : mapping id -> [x, y, w, h], or sequence of boxes
        The predicted placements (a sequence is matched by position).
    gt : mapping id -> [x, y, w, h], or sequence of boxes
        The true placements of the components asked for.

    Returns
    -------
    dict
        ``miou``, ``coverage``, ``hallucination`` (NaN for all three when ``gt`` is empty).

    Examples
    --------
    >>> completion_scores({"logo": [0, 0, 10, 10]}, {"logo": [0, 0, 10, 5], "title": [0, 20, 50, 10]})
    {'miou': 0.25, 'coverage': 0.5, 'hallucination': 0.0}
    """
    gk, G = _items(gt, "gt")
    pk, P = _items(pred, "pred")
    n, m = len(G), len(P)
    if n == 0:
        return {"miou": float("nan"), "coverage": float("nan"), "hallucination": float("nan")}
    where = {k: i for i, k in enumerate(pk) if k is not None}
    idx = np.array([where.get(k, i if i < m else -1) if k is not None else (i if i < m else -1)
                    for i, k in enumerate(gk)], dtype=np.int64)
    has = idx >= 0
    ious = np.zeros(n)
    if has.any():
        ious[has] = _iou_core(P[idx[has]], G[has])
    matched = int(has.sum())
    return {"miou": float(ious.sum() / n), "coverage": matched / n,
            "hallucination": max(m - matched, 0) / max(m, 1)}


def completion_metrics(preds: Sequence, gts: Sequence) -> dict[str, float]:
    """Means of :func:`completion_scores` over samples with at least one true component.

    Parameters
    ----------
    preds, gts : sequence
        Per sample, the predicted and true placements (see :func:`completion_scores`).

    Returns
    -------
    dict
        ``miou``, ``component_coverage``, ``hallucination_rate`` (NaN when no sample counts) and
        ``evaluated_samples``.

    Examples
    --------
    >>> completion_metrics([{"a": [0, 0, 1, 1]}, {}], [{"a": [0, 0, 1, 1]}, {"b": [0, 0, 1, 1]}])["miou"]
    0.5
    """
    if len(preds) != len(gts):
        raise ValueError(f"preds and gts must list the same samples, got {len(preds)} and {len(gts)}")
    rows = [completion_scores(p, g) for p, g in zip(preds, gts) if len(g)]
    if not rows:
        return {"miou": float("nan"), "component_coverage": float("nan"), "hallucination_rate": float("nan"),
                "evaluated_samples": 0.0}
    mean = lambda k: float(sum(r[k] for r in rows) / len(rows))
    return {"miou": mean("miou"), "component_coverage": mean("coverage"),
            "hallucination_rate": mean("hallucination"), "evaluated_samples": float(len(rows))}
