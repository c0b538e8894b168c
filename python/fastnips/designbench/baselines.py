"""Simple heuristic predictors: the floors a model should beat on layer order, detection and completion.

* :func:`area_depth`: text on top, then larger layers lower (backgrounds first); the z-order heuristic.
* :func:`prior_detections`: per component type, the mean relative box of reference layouts placed on the
  canvas, scored by the type's frequency (a detector that never looks at the image).
* :func:`sibling_placements`: copy each component's box from a sibling layout (the j-th component of a type to
  the sibling's j-th of that type, scaled to the canvas), falling back to the type's mean box: what a model
  gains from knowing the template.
* :func:`component_keys`: the ids these use, ``"<type><j>"`` (j-th component of that type in paint order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .layout import Layout

__all__ = ["area_depth", "component_keys", "prior_detections", "sibling_placements", "type_mean_boxes"]


def component_keys(layout: Layout) -> list[str]:
    """``"<type><j>"`` for each layer: its type and its rank among the layers of that type (paint order).

    Examples
    --------
    >>> from fastnips.designbench import Layout
    >>> component_keys(Layout([[0, 0, 1, 1]] * 3, ["image", "text", "image"], [None] * 3))
    ['image0', 'text0', 'image1']
    """
    seen: dict[str, int] = {}
    out = []
    for t in layout.types:
        out.append(f"{t}{seen.get(t, 0)}")
        seen[t] = seen.get(t, 0) + 1
    return out


def area_depth(layout: Layout) -> np.ndarray:
    """Predicted depths: non-text below text; within each, the larger area lower. Ties keep list order.

    Examples
    --------
    >>> from fastnips.designbench import Layout
    >>> area_depth(Layout([[0, 0, 1, 1], [0, 0, 9, 9], [0, 0, 2, 2]], ["text", "image", "image"], [None] * 3))
    array([2., 0., 1.])
    """
    area = layout.boxes[:, 2] * layout.boxes[:, 3]
    is_text = np.array([t == "text" for t in layout.types])
    order = np.lexsort((np.arange(len(layout)), -area, is_text))
    depth = np.empty(len(layout))
    depth[order] = np.arange(len(layout))
    return depth


def type_mean_boxes(layouts: Sequence[Layout]) -> dict[str, tuple[np.ndarray, float]]:
    """Per type: the mean box relative to the canvas ``[x/W, y/H, w/W, h/H]`` and the type's share of layers."""
    rel: dict[str, list] = {}
    total = 0
    for lay in layouts:
        scale = np.array([lay.width, lay.height, lay.width, lay.height])
        for t, b in zip(lay.types, lay.boxes):
            rel.setdefault(t, []).append(b / scale)
            total += 1
    return {t: (np.mean(v, axis=0), len(v) / max(total, 1)) for t, v in rel.items()}


def prior_detections(layout: Layout, reference: Sequence[Layout], per_type: int = 1) -> list[dict]:
    """Detections of ``layout`` from the reference layouts' type means alone (module docstring).

    Parameters
    ----------
    layout : Layout
        Only its canvas size is used.
    reference : sequence of Layout
        Layouts the prior is estimated on (not ``layout`` itself, for an honest evaluation).
    per_type : int
        Copies of each type's box (identical boxes; a second copy can only add false positives).

    Returns
    -------
    list of dict
        ``{"bbox", "label", "score"}``.
    """
    scale = np.array([layout.width, layout.height, layout.width, layout.height])
    return [{"bbox": (m * scale).tolist(), "label": t, "score": share}
            for t, (m, share) in type_mean_boxes(reference).items() for _ in range(per_type)]


def sibling_placements(layout: Layout, sibling: Layout | None, keys: Sequence[str],
                       means: dict | None = None) -> dict[str, list[float]]:
    """Boxes for the components ``keys`` of ``layout`` copied from ``sibling`` (module docstring).

    Parameters
    ----------
    layout : Layout
        The layout being completed (its canvas size is used).
    sibling : Layout or None
        A sibling variant; None uses the type means only.
    keys : sequence of str
        Component ids (:func:`component_keys`) to place.
    means : dict, optional
        :func:`type_mean_boxes` output for the fallback; default the canvas centre, a quarter of its size.

    Returns
    -------
    dict
        ``key -> [x, y, w, h]`` on ``layout``'s canvas.
    """
    scale = np.array([layout.width, layout.height, layout.width, layout.height])
    sib = {}
    if sibling is not None:
        s_scale = np.array([sibling.width, sibling.height, sibling.width, sibling.height])
        sib = {k: b / s_scale for k, b in zip(component_keys(sibling), sibling.boxes)}
    out = {}
    for k in keys:
        t = k.rstrip("0123456789")
        rel = sib.get(k)
        if rel is None:
            rel = means[t][0] if means and t in means else np.array([0.375, 0.375, 0.25, 0.25])
        out[k] = (rel * scale).tolist()
    return out
