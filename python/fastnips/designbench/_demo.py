"""``fastnips demo`` rows of designbench: the detection metric against lica-gdb (agreement and speed, when it is
installed), and the font-Jaccard baseline and the layer-order heuristic on synthetic templates (labelled as such;
the GDB data is a user download)."""

from __future__ import annotations

import time

__all__ = ["demo_designbench"]


def _timed(fn) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def demo_designbench(seed: int) -> list[dict]:
    """Three rows, each a second or less: ``designbench mAP`` (sibling-copy detections on 300 synthetic layouts,
    fastnips vs lica-gdb's loop: largest difference and speed-up, or fastnips alone without lica-gdb),
    ``designbench font-Jaccard`` (sibling matching AUC and clustering ARI of the GDB abstract's baseline) and
    ``designbench layer order`` (Kendall tau of the area rule vs a random order). Deterministic for a seed.

    Parameters
    ----------
    seed : int

    Returns
    -------
    list of dict
        ``{"task", "backend", "measure", "result", "detail", "values"}`` rows (``fastnips._demo_rows`` format).

    Examples
    --------
    >>> [r["task"] for r in demo_designbench(0)]  # doctest: +SKIP
    ['designbench mAP', 'designbench font-Jaccard', 'designbench layer order']
    """
    import numpy as np

    from . import (
        FontJaccardBaseline,
        area_depth,
        clustering_scores,
        detection_map,
        layer_order_scores,
        matching_scores,
        synthetic_templates,
    )

    lays = synthetic_templates(60, 5, seed=seed, jitter=0.05, font_change=0.15, drop=0.2)
    rng = np.random.default_rng(seed)
    dets = lambda x: [{"bbox": b.tolist(), "label": t, "score": 1.0} for b, t in zip(x.boxes, x.types)]
    gt = [dets(x) for x in lays]
    pred = [dets(lays[i - 1 if i % 5 else i + 1]) for i in range(len(lays))]  # a sibling's boxes
    ours, t_ours = _timed(lambda: detection_map(pred, gt))
    try:
        from gdb.tasks.layout import _detection_map
    except ImportError:
        row = {"result": f"{ours['mAP@0.5:0.95']:.3f}, {t_ours * 1e3:.0f} ms",
               "detail": "mAP@0.5:0.95 of sibling-copy detections, 300 synthetic layouts (lica-gdb not installed)",
               "values": {"map": ours["mAP@0.5:0.95"], "ms": t_ours * 1e3}}
    else:
        ref, t_ref = _timed(lambda: _detection_map(pred, gt))
        diff = max(abs(ours[k] - ref[k]) for k in ref)
        row = {"result": f"{'agrees' if diff < 1e-9 else 'DIFFERS'}, {t_ref / t_ours:.0f}x",
               "detail": f"mAP@0.5:0.95 {ours['mAP@0.5:0.95']:.3f} of sibling-copy detections on 300 synthetic "
                         f"layouts; max |fastnips - lica-gdb| {diff:.0e}, {t_ours * 1e3:.0f} vs {t_ref * 1e3:.0f} ms",
               "values": {"map": ours["mAP@0.5:0.95"], "max_abs_diff": diff, "speedup": t_ref / t_ours}}
    rows = [{"task": "designbench mAP", "backend": "reference", "measure": "agreement; speed-up ↑", **row}]

    fj = FontJaccardBaseline()
    n = len(lays)
    i, j = rng.integers(0, n, (2, 4000))
    keep = i != j
    i, j = i[keep], j[keep]
    labels, scores = fj.match([lays[k] for k in i], [lays[k] for k in j])
    y = [int(lays[a].template_id == lays[b].template_id) for a, b in zip(i, j)]
    m = matching_scores(labels, y, scores=scores)
    block = lays[:25]  # 5 templates, as GDB's clustering problems
    ari = clustering_scores(fj.cluster(block, 5), [x.template_id for x in block])["ari"]
    rows.append({"task": "designbench font-Jaccard", "backend": "reference", "measure": "AUC ↑, ARI ↑",
                 "result": f"AUC {m['auc_roc']:.2f}, ARI {ari:.2f}",
                 "detail": f"SYNTHETIC templates: sibling matching AUC over {len(y)} random pairs, clustering ARI of 5 "
                           "templates x 5 variants (higher is better)",
                 "values": {"auc_roc": m["auc_roc"], "ari": ari}})
    z = [x.z for x in lays]
    area = layer_order_scores([area_depth(x) for x in lays], z)["kendall_tau"]
    rand = layer_order_scores([rng.permutation(len(x)).astype(float) for x in lays], z)["kendall_tau"]
    rows.append({"task": "designbench layer order", "backend": "reference", "measure": "Kendall tau ↑",
                 "result": f"tau {area:.2f} vs {rand:.2f}",
                 "detail": "SYNTHETIC templates: Kendall tau of the area rule vs a random order (1 = exact order)",
                 "values": {"tau_area_rule": area, "tau_random": rand}})
    return rows
