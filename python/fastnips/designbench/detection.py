r"""Component detection: per-class average precision and mAP over IoU thresholds (GDB's ``layout-7``).

A detection is ``{"bbox": [x, y, w, h], "label": str, "score": float}``; a ground-truth component
``{"bbox": [x, y, w, h], "label": str}``. For one class and one IoU threshold :math:`t`, lica-gdb's definition:

1. all predictions of the class over all images, sorted by score, highest first (ties keep input order);
2. each prediction takes the true box of its class and image with the highest IoU (the first on ties); it is a
   true positive if that IoU is :math:`\ge t` and that true box has not been taken by an earlier prediction,
   otherwise a false positive (a duplicate is not redirected to its second-best box: the VOC rule);
3. precision :math:`P_k` and recall :math:`R_k` after the k-th prediction; AP is the 11-point interpolated
   precision :math:`\frac{1}{11}\sum_{r \in \{0, 0.1, \ldots, 1\}} \max_{k: R_k \ge r} P_k` (0 if none).

Classes are those of the ground truth (a predicted label no true component has is ignored); mAP@t is the mean
AP over the classes, ``mAP@0.5:0.95`` the mean over :math:`t = 0.5, 0.55, \ldots, 0.95`. Step 2 is vectorised:
the best true box of a prediction does not depend on :math:`t`, so one padded IoU tensor per chunk of images
serves all thresholds, and "not taken earlier" is "first eligible occurrence of its (image, box) key".
``interpolation="all"`` gives the all-point AP (area under the precision envelope, VOC 2010 and later) instead of
the 11 points.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import as_boxes, box_ok, check_unit
from .geometry import _iou_core

__all__ = ["GDB_IOU_THRESHOLDS", "average_precision", "detection_map"]

GDB_IOU_THRESHOLDS = tuple(0.5 + 0.05 * i for i in range(10))  # the same floats lica-gdb compares with
_CHUNK = 4_000_000  # padded IoU entries per chunk of images


def _flatten(items: Sequence, name: str, with_score: bool):
    """Per-object arrays (image index, box, label, score) of a list of per-image detection lists."""
    img, boxes, labels, scores, where = [], [], [], [], []
    for i, objs in enumerate(items):
        if objs is None:
            objs = []
        if not isinstance(objs, list | tuple):
            raise ValueError(f"{name}[{i}]: expected a list of {{'bbox', 'label'}} dicts, got {type(objs).__name__}")
        for k, o in enumerate(objs):
            if not isinstance(o, dict) or "bbox" not in o or "label" not in o:
                raise ValueError(f"{name}[{i}][{k}]: expected a dict with 'bbox' and 'label', got {o!r}")
            img.append(i)
            where.append(f"{name}[{i}][{k}]")
            boxes.append(o["bbox"])
            labels.append(str(o["label"]))
            if with_score:
                try:
                    s = float(o.get("score", 0.0))
                except (TypeError, ValueError):
                    raise ValueError(f"{name}[{i}][{k}]: score must be a number, got {o.get('score')!r}") from None
                if not np.isfinite(s):
                    raise ValueError(f"{name}[{i}][{k}]: score is NaN or infinite")
                scores.append(s)
    try:
        B = as_boxes(boxes, name) if boxes else np.zeros((0, 4))
    except ValueError as e:  # name the detection, not its flat index
        bad = next((w for w, b in zip(where, boxes) if not box_ok(b)), name)
        raise ValueError(f"{bad}: bad 'bbox' ({e})") from None
    return np.asarray(img, dtype=np.int64), B, labels, np.asarray(scores, dtype=np.float64)


def _best_matches(p_img, p_box, p_lab, g_img, g_box, g_lab, n_img):
    """For each prediction: the highest IoU with a true box of its image and class, and that box's index."""
    best = np.zeros(len(p_img))
    arg = np.full(len(p_img), -1, dtype=np.int64)
    if len(p_img) == 0 or len(g_img) == 0:
        return best, arg
    p_ord, g_ord = np.argsort(p_img, kind="stable"), np.argsort(g_img, kind="stable")
    p_cnt, g_cnt = np.bincount(p_img, minlength=n_img), np.bincount(g_img, minlength=n_img)
    p_start, g_start = np.concatenate([[0], np.cumsum(p_cnt)]), np.concatenate([[0], np.cumsum(g_cnt)])
    pmax, gmax = int(p_cnt.max()), int(g_cnt.max())
    step = max(1, _CHUNK // max(1, pmax * gmax))
    for lo in range(0, n_img, step):
        hi = min(n_img, lo + step)
        ims = np.arange(lo, hi)
        pi, pslot = _padded_index(p_start, p_cnt, ims, pmax)
        gi, gslot = _padded_index(g_start, g_cnt, ims, gmax)
        P = np.where(pslot[..., None], p_box[p_ord][np.maximum(pi, 0)], 0.0)
        G = np.where(gslot[..., None], g_box[g_ord][np.maximum(gi, 0)], 0.0)
        M = _iou_core(P[:, :, None, :], G[:, None, :, :])
        same = p_lab[p_ord][np.maximum(pi, 0)][:, :, None] == g_lab[g_ord][np.maximum(gi, 0)][:, None, :]
        M = np.where(same & gslot[:, None, :], M, -1.0)
        j = np.argmax(M, axis=2)  # the first maximum, as a strict ">" scan from the start finds it
        v = np.take_along_axis(M, j[..., None], axis=2)[..., 0]
        sel = pslot
        flat_p = p_ord[pi[sel]]
        best[flat_p] = np.maximum(v[sel], 0.0)
        arg[flat_p] = np.where(v[sel] > 0, g_ord[np.maximum(gi[sel.nonzero()[0], j[sel]], 0)], -1)
    return best, arg


def _padded_index(start, cnt, ims, width):
    """(positions into the image-sorted order, valid mask), shape (len(ims), width)."""
    cols = np.arange(width)
    valid = cols[None, :] < cnt[ims][:, None]
    return np.where(valid, start[ims][:, None] + cols[None, :], -1), valid


def _ap_from_hits(tp: np.ndarray, n_gt: int, interpolation: str) -> float:
    """AP of a ranked list of hit flags against ``n_gt`` true objects."""
    if len(tp) == 0 or n_gt == 0:
        return 0.0
    tp_cum = np.cumsum(tp)
    prec = tp_cum / np.arange(1, len(tp) + 1)
    rec = tp_cum / n_gt
    env = np.maximum.accumulate(prec[::-1])[::-1]  # max precision at recall >= R_k
    if interpolation == "voc11":
        idx = np.searchsorted(rec, np.arange(11) / 10.0, side="left")
        ap = 0.0
        for i in idx:  # summed in order, as lica-gdb does, for bitwise-equal results
            ap += (float(env[i]) if i < len(env) else 0.0) / 11.0
        return ap
    steps = np.diff(np.concatenate([[0.0], rec]))
    return float(np.sum(steps * env))


def average_precision(scores: object, hits: object, n_gt: int, *, interpolation: str = "voc11") -> float:
    """AP of a ranked list: ``scores`` sorted decreasing (stable), ``hits`` the true-positive flags.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Confidence of each prediction.
    hits : array_like of bool, shape (n,)
        Whether each prediction is a true positive.
    n_gt : int
        Number of true objects (recall's denominator); ``sum(hits) <= n_gt``.
    interpolation : {"voc11", "all"}
        11-point interpolated AP (lica-gdb) or all-point AP.

    Returns
    -------
    float

    Examples
    --------
    >>> average_precision([0.9, 0.8, 0.7], [True, False, True], 2, interpolation="all")  # 1 * 1/2 + 2/3 * 1/2
    0.8333333333333333
    """
    s = np.asarray(scores, dtype=np.float64)
    h = np.asarray(hits, dtype=bool)
    if s.shape != h.shape or s.ndim != 1:
        raise ValueError(f"scores and hits must be 1-d of the same length, got {s.shape} and {h.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores contains NaN or infinite values (their rank is undefined)")
    if interpolation not in ("voc11", "all"):
        raise ValueError(f"interpolation must be 'voc11' or 'all', got {interpolation!r}")
    if int(n_gt) < int(h.sum()):
        raise ValueError(f"n_gt={n_gt} is smaller than the number of hits {int(h.sum())}")
    order = np.argsort(-s, kind="stable")
    return _ap_from_hits(h[order].astype(np.int64), int(n_gt), interpolation)


def detection_map(predictions: Sequence, ground_truth: Sequence, *,
                  iou_thresholds: Sequence[float] = GDB_IOU_THRESHOLDS,
                  interpolation: str = "voc11") -> dict[str, float]:
    """mAP of component detections, lica-gdb's ``layout-7`` definition (module docstring).

    Parameters
    ----------
    predictions : list of list of dict
        Per image, the detections ``{"bbox": [x, y, w, h], "label": str, "score": float}`` (score defaults
        to 0, as in lica-gdb).
    ground_truth : list of list of dict
        Per image, the true components ``{"bbox": [x, y, w, h], "label": str}``.
    iou_thresholds : sequence of float in (0, 1]
        The thresholds averaged; the first is reported as ``mAP@<first>`` too.
    interpolation : {"voc11", "all"}

    Returns
    -------
    dict
        ``"mAP@0.5"`` (the first threshold), ``"mAP@0.5:0.95"`` (the mean over all thresholds) and
        ``"AP@0.5_<label>"`` per class; zeros when there is no true component.

    Examples
    --------
    >>> gt = [[{"bbox": [0, 0, 10, 10], "label": "text"}]]
    >>> pr = [[{"bbox": [0, 0, 10, 9], "label": "text", "score": 0.9}]]
    >>> r = detection_map(pr, gt)
    >>> round(r["mAP@0.5"], 12), round(r["mAP@0.5:0.95"], 12)  # IoU 0.9: a hit up to t = 0.9, a miss at 0.95
    (1.0, 0.9)
    """
    if len(predictions) != len(ground_truth):
        raise ValueError(f"predictions and ground_truth must list the same images, got {len(predictions)} and "
                         f"{len(ground_truth)}")
    if interpolation not in ("voc11", "all"):
        raise ValueError(f"interpolation must be 'voc11' or 'all', got {interpolation!r}")
    ths = [check_unit(t, "iou_thresholds", closed_low=False) for t in iou_thresholds]
    if not ths:
        raise ValueError("iou_thresholds must not be empty")
    p_img, p_box, p_lab_s, p_score = _flatten(predictions, "predictions", True)
    g_img, g_box, g_lab_s, _ = _flatten(ground_truth, "ground_truth", False)
    labels = sorted(set(g_lab_s))
    if not labels:
        return {"mAP@0.5": 0.0, "mAP@0.5:0.95": 0.0}
    code = {lab: i for i, lab in enumerate(labels)}
    p_lab = np.array([code.get(s, -1) for s in p_lab_s], dtype=np.int64)
    g_lab = np.array([code[s] for s in g_lab_s], dtype=np.int64)
    best, arg = _best_matches(p_img, p_box, p_lab, g_img, g_box, g_lab, len(ground_truth))
    n_gt = np.bincount(g_lab, minlength=len(labels))
    per_thresh, ap_first = [], {}
    for ti, t in enumerate(ths):
        aps = []
        for c, lab in enumerate(labels):
            sel = np.flatnonzero(p_lab == c)
            order = sel[np.argsort(-p_score[sel], kind="stable")]
            elig = best[order] >= t
            tp = np.zeros(len(order), dtype=np.int64)
            if elig.any():
                _, first = np.unique(arg[order][elig], return_index=True)
                tp[np.flatnonzero(elig)[first]] = 1
            aps.append(_ap_from_hits(tp, int(n_gt[c]), interpolation))
            if ti == 0:
                ap_first[lab] = aps[-1]
        per_thresh.append(sum(aps) / len(aps))
    out = {"mAP@0.5": per_thresh[0], "mAP@0.5:0.95": sum(per_thresh) / len(per_thresh)}
    out.update({f"AP@0.5_{lab}": v for lab, v in ap_first.items()})
    return out
