r"""Template-variant generation metrics on layout JSON: style completion (``template-4``) and colour transfer
(``template-5``), lica-gdb's definitions for the metrics its task cards list.

Layouts are GDB layout objects ``{"background", "components": [{"fontFamily", "fontSize", "color",
"backgroundColor", "opacity", "textAlign", "left", "top", "width", "height", ...}]}``. Per predicted layout:

* ``json_valid``: the prediction is a JSON object (1) or not (0); the others need a ``components`` list;
* ``component_count_match``: same number of components as the truth; ``font_adherence``: Jaccard of the raw
  ``fontFamily`` sets; ``font_size_cosine``: cosine of the sorted font sizes, zero-padded to equal length;
* style completion, component by component in order: ``font_exact_match`` (case-insensitive family),
  ``color_exact_match`` (same parsed RGB), ``font_size_mae``, ``opacity_mae``, ``text_align_accuracy``, over the
  true components that define the property; ``color_palette_adherence``: fraction of predicted colours within
  :math:`\Delta E < 10` of a true colour; ``bg_color_distance``: :math:`\Delta E` of the backgrounds;
* colour transfer: ``color_palette_adherence`` and ``palette_coverage`` against the target palette (predicted
  colours near a palette colour; palette colours some predicted colour is near), ``bg_color_distance`` to the
  first palette colour, ``position_fidelity`` (cosine of the flattened ``left, top`` lists) and
  ``area_fidelity`` (cosine of the sorted areas) against the designated layout.

Each metric is averaged over the predictions where it is defined. :math:`\Delta E` is CIEDE2000
(:func:`~fastnips.designbench.delta_e`; ``delta_e="rgb"`` gives lica-gdb's fallback without scikit-image). The
design-quality heuristics lica-gdb also logs (hue-gap harmony, WCAG contrast, size monotonicity) are not
part of the task cards and are left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from .colors import delta_e as _delta_e
from .colors import parse_color

__all__ = ["template_generation_metrics"]

_COLOR_PROPS = ("color", "backgroundColor", "background")


def _num(v: object) -> float | None:
    s = str(v).strip().replace("px", "")
    s = s[:-1] if s.endswith("%") else s
    try:
        return float(s)
    except ValueError:
        return None


def _colors(layout: dict) -> list:
    out = []
    bg = parse_color(layout.get("background", ""))
    if bg:
        out.append(bg)
    for c in layout.get("components", []):
        for prop in _COLOR_PROPS:
            rgb = parse_color(c.get(prop, ""))
            if rgb:
                out.append(rgb)
    return out


def _sizes(layout: dict) -> list[float]:
    out = []
    for c in layout.get("components", []):
        if c.get("fontSize") is not None:
            v = _num(str(c["fontSize"]))
            if v is not None:
                out.append(v)
    return sorted(out)


def _cosine(a: list[float], b: list[float]) -> float:
    if not a and not b:
        return 1.0
    n = max(len(a), len(b))
    x, y = np.zeros(n), np.zeros(n)
    x[: len(a)], y[: len(b)] = a, b
    na, nb = float(np.sqrt(np.dot(x, x))), float(np.sqrt(np.dot(y, y)))
    return float(np.dot(x, y)) / (na * nb) if na >= 1e-12 and nb >= 1e-12 else 0.0


def _positions(layout: dict) -> list[float]:
    out = []
    for c in layout.get("components", []):
        out += [_num(c.get("left", "0")) or 0.0, _num(c.get("top", "0")) or 0.0]
    return out


def _areas(layout: dict) -> list[float]:
    out = []
    for c in layout.get("components", []):
        w, h = _num(c.get("width", "0")), _num(c.get("height", "0"))
        if w is not None and h is not None and w > 0 and h > 0:
            out.append(w * h)
    return sorted(out, reverse=True)


def _near(pred: list, ref: list, de: str) -> np.ndarray:
    """Matrix of DeltaE(pred_i, ref_j) < 10."""
    return _delta_e(np.array(pred)[:, None, :], np.array(ref)[None, :, :], method=de) < 10.0


def _style_completion(pred: dict, gt: dict, acc, de: str) -> None:
    counts = dict.fromkeys(("fm", "ft", "cm", "ct", "am", "at"), 0)
    fse, oe = [], []
    for pc, gc in zip(pred.get("components", []), gt.get("components", [])):
        if gc.get("fontFamily", ""):
            counts["ft"] += 1
            counts["fm"] += str(pc.get("fontFamily", "")).strip().lower() == str(gc["fontFamily"]).strip().lower()
        if gc.get("color", ""):
            counts["ct"] += 1
            g, p = parse_color(gc["color"]), parse_color(pc.get("color", ""))
            counts["cm"] += bool(g and p and g == p)
        for key, bucket, conv in (("fontSize", fse, lambda v: _num(str(v))), ("opacity", oe, _num)):
            if gc.get(key) is not None and pc.get(key) is not None:
                a, b = conv(pc[key]), conv(gc[key])
                if a is not None and b is not None:
                    bucket.append(abs(a - b))
        if gc.get("textAlign", ""):
            counts["at"] += 1
            counts["am"] += pc.get("textAlign", "") == gc["textAlign"]
    for name, m, t in (("font_exact_match", "fm", "ft"), ("color_exact_match", "cm", "ct"),
                       ("text_align_accuracy", "am", "at")):
        if counts[t]:
            acc(name, counts[m] / counts[t])
    if fse:
        acc("font_size_mae", sum(fse) / len(fse))
    if oe:
        acc("opacity_mae", sum(oe) / len(oe))
    pcs, gcs = _colors(pred), list(set(_colors(gt)))
    if gcs and pcs:
        acc("color_palette_adherence", float(_near(pcs, gcs, de).any(1).sum()) / len(pcs))
    pbg, gbg = parse_color(pred.get("background", "")), parse_color(gt.get("background", ""))
    if pbg and gbg:
        acc("bg_color_distance", float(_delta_e(pbg, gbg, method=de)))


def _color_transfer(pred: dict, bundle: dict | None, acc, de: str) -> None:
    if not bundle:
        return
    palette = bundle.get("target_palette", []) or []
    target = list({rgb for e in palette if isinstance(e, dict) and (rgb := parse_color(e.get("color", "")))})
    pcs = _colors(pred)
    if target and pcs:
        acc("color_palette_adherence", float(_near(pcs, target, de).any(1).sum()) / len(pcs))
        acc("palette_coverage", float(_near(list(set(pcs)), target, de).any(0).sum()) / len(target))
    if palette and isinstance(palette[0], dict):
        t, p = parse_color(palette[0].get("color", "")), parse_color(pred.get("background", ""))
        if t and p:
            acc("bg_color_distance", float(_delta_e(p, t, method=de)))


def _truth(gt_raw: object, task: str) -> tuple[dict | None, dict | None]:
    """(layout compared with, colour-transfer bundle) of a ground-truth entry."""
    gt = gt_raw
    if isinstance(gt_raw, str):
        try:
            gt = json.loads(gt_raw)
        except json.JSONDecodeError:
            gt = None
    if not isinstance(gt, dict) or not gt:
        return None, None
    if task == "color_transfer" and ("designated_layout" in gt or "source_layouts" in gt):
        src = gt.get("source_layouts") or [None]
        return gt.get("designated_layout") or src[0], gt
    return gt, None


def template_generation_metrics(predictions: Sequence, ground_truth: Sequence, task: str, *,
                                delta_e: str = "ciede2000") -> dict[str, float]:
    """Style-completion or colour-transfer metrics of predicted layouts (module docstring).

    Parameters
    ----------
    predictions : sequence
        Per sample, a predicted layout dict (or a list of them, each scored; anything else is invalid JSON).
    ground_truth : sequence
        Per sample, the true layout (``style_completion``), or the problem bundle with ``designated_layout``
        and ``target_palette`` (``color_transfer``); dicts or JSON strings.
    task : {"style_completion", "color_transfer"}
    delta_e : {"ciede2000", "rgb"}
        The colour difference (``"rgb"``: lica-gdb without scikit-image).

    Returns
    -------
    dict
        Each metric's mean over the predictions where it is defined.

    Examples
    --------
    >>> gt = {"components": [{"fontFamily": "Arimo", "fontSize": "20px", "textAlign": "left"}]}
    >>> pr = {"components": [{"fontFamily": "arimo", "fontSize": "24px", "textAlign": "center"}]}
    >>> r = template_generation_metrics([pr], [gt], "style_completion")
    >>> r["font_exact_match"], r["font_size_mae"], r["text_align_accuracy"]
    (1.0, 4.0, 0.0)
    """
    if task not in ("style_completion", "color_transfer"):
        raise ValueError(f"task must be 'style_completion' or 'color_transfer', got {task!r}")
    if delta_e not in ("ciede2000", "rgb"):
        raise ValueError(f"delta_e must be 'ciede2000' or 'rgb', got {delta_e!r}")
    if len(predictions) != len(ground_truth):
        raise ValueError(f"predictions and ground_truth must list the same samples, got {len(predictions)} and "
                         f"{len(ground_truth)}")
    sums: dict[str, list[float]] = {}

    def acc(name: str, value: float) -> None:
        if np.isfinite(value):
            sums.setdefault(name, []).append(float(value))

    for pred_raw, gt_raw in zip(predictions, ground_truth):
        preds = pred_raw if isinstance(pred_raw, list) else [pred_raw] if pred_raw else []
        gt, bundle = _truth(gt_raw, task) if gt_raw else (None, None)
        if not preds:
            acc("json_valid", 0.0)
        for pred in preds:
            acc("json_valid", float(isinstance(pred, dict)))
            if not isinstance(pred, dict) or not isinstance(pred.get("components"), list):
                continue
            if gt:
                _shared(pred, gt, task, acc)
            if task == "color_transfer":
                _color_transfer(pred, bundle, acc, delta_e)
            elif gt:
                _style_completion(pred, gt, acc, delta_e)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _shared(pred: dict, gt: dict, task: str, acc) -> None:
    acc("component_count_match", float(len(pred["components"]) == len(gt.get("components", []))))
    pf = {c.get("fontFamily") for c in pred["components"] if c.get("fontFamily")}
    gf = {c.get("fontFamily") for c in gt.get("components", []) if c.get("fontFamily")}
    if pf or gf:
        acc("font_adherence", len(pf & gf) / len(pf | gf))
    ps, gs = _sizes(pred), _sizes(gt)
    if ps and gs:
        acc("font_size_cosine", _cosine(ps, gs))
    if task == "color_transfer":
        pp, gp = _positions(pred), _positions(gt)
        if pp and gp:
            acc("position_fidelity", _cosine(pp, gp))
        pa, ga = _areas(pred), _areas(gt)
        if pa and ga:
            acc("area_fidelity", _cosine(pa, ga))
