r"""Scalar and label metrics of the layout-understanding tasks: aspect ratio (``layout-4``), component count
(``layout-5``), component type (``layout-6``), image rotation, crop shape.

* Labels: accuracy and the macro mean of per-label precision, recall and F1; the labels are those in either
  list (lica-gdb's aspect-ratio task) or a given ``labels`` set (its component-type task, which then reports
  ``f1_<label>`` too); an undefined ratio is 0.
* Counts: MAE and MSE over the samples where both values parse as numbers (lica-gdb skips the others).
* Rotation: no published pipeline. Choice: the circular error :math:`\min(d, 360 - d)` with
  :math:`d = |\hat\theta - \theta| \bmod 360` in degrees (a 359 degree answer for 1 degree is off by 2), its
  mean, and the fraction within ``tolerance`` degrees.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import as_finite, same_length

__all__ = ["count_scores", "label_scores", "rotation_scores"]


def label_scores(pred: Sequence, gt: Sequence, labels: Sequence | None = None) -> dict[str, float]:
    """Accuracy and macro precision / recall / F1 of predicted labels (compared as strings).

    Parameters
    ----------
    pred, gt : sequence
        Predicted and true labels, same length.
    labels : sequence, optional
        The label set of the macro means (each gets an ``f1_<label>`` entry); default every label in either list.

    Returns
    -------
    dict
        ``accuracy``, ``precision``, ``recall``, ``f1`` (macro) and, with ``labels``, ``f1_<label>``.

    Examples
    --------
    >>> r = label_scores(["16:9", "1:1", "1:1"], ["16:9", "1:1", "4:5"])
    >>> round(r["accuracy"], 4), round(r["f1"], 4)
    (0.6667, 0.5556)
    """
    same_length(pred, gt, "pred", "gt")
    P, G = np.array([str(p) for p in pred], dtype=object), np.array([str(g) for g in gt], dtype=object)
    labs = sorted(set(P) | set(G)) if labels is None else [str(x) for x in labels]
    out = {"accuracy": float(np.mean(P == G)) if len(G) else 0.0}
    prec, rec, f1 = [], [], []
    for lab in labs:
        tp = float(np.sum((P == lab) & (G == lab)))
        fp = float(np.sum((P == lab) & (G != lab)))
        fn = float(np.sum((P != lab) & (G == lab)))
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        prec.append(p)
        rec.append(r)
        f1.append(2 * p * r / (p + r) if p + r else 0.0)
        if labels is not None:
            out[f"f1_{lab}"] = f1[-1]
    n = max(len(labs), 1)
    out.update(precision=sum(prec) / n, recall=sum(rec) / n, f1=sum(f1) / n)
    return out


def _as_float(v: object) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def count_scores(pred: Sequence, gt: Sequence) -> dict[str, float]:
    """MAE and MSE of predicted counts over the samples where both parse as finite numbers.

    Parameters
    ----------
    pred, gt : sequence
        Predicted and true counts (numbers or numeric strings), same length.

    Returns
    -------
    dict
        ``mae``, ``mse`` (0 when nothing parses, as lica-gdb) and ``n_scored``.

    Examples
    --------
    >>> count_scores([3, "5", "many"], [4, 5, 6])
    {'mae': 0.5, 'mse': 0.5, 'n_scored': 2}
    """
    same_length(pred, gt, "pred", "gt")
    pairs = [(p, g) for p, g in ((_as_float(a), _as_float(b)) for a, b in zip(pred, gt))
             if p is not None and g is not None]
    if not pairs:
        return {"mae": 0.0, "mse": 0.0, "n_scored": 0}
    d = np.array([p - g for p, g in pairs])
    return {"mae": float(np.abs(d).mean()), "mse": float((d * d).mean()), "n_scored": len(pairs)}


def rotation_scores(pred_deg: Sequence, gt_deg: Sequence, tolerance: float = 5.0) -> dict[str, float]:
    """Circular angle error of predicted rotations, in degrees (module docstring).

    Parameters
    ----------
    pred_deg, gt_deg : sequence of float
        Predicted and true rotations in degrees, same length.
    tolerance : float, default 5
        Error (degrees) still counted as correct.

    Returns
    -------
    dict
        ``mae_deg`` and ``accuracy@<tolerance>``.

    Examples
    --------
    >>> rotation_scores([359.0, 90.0], [1.0, 0.0])
    {'mae_deg': 46.0, 'accuracy@5': 0.5}
    """
    p, g = as_finite(pred_deg, "pred_deg"), as_finite(gt_deg, "gt_deg")
    same_length(p, g, "pred_deg", "gt_deg")
    tol = float(tolerance)
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tolerance must be a non-negative number of degrees, got {tolerance!r}")
    d = np.abs(p - g) % 360.0
    err = np.minimum(d, 360.0 - d)
    key = f"accuracy@{tol:g}"
    if not len(err):
        return {"mae_deg": 0.0, key: 0.0}
    return {"mae_deg": float(err.mean()), key: float(np.mean(err <= tol))}
