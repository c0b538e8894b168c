"""GraphicDesignBench metrics and the font-Jaccard baseline, on synthetic templates or on your local GDB copy.

    python examples/designbench_metrics.py [--gdb PATH/TO/gdb-dataset]

Without ``--gdb`` the layouts are synthetic (known sibling groups); with it, the layouts of your local copy of
the GDB dataset (the folder that holds ``lica-data/``; nothing is downloaded).
"""

from __future__ import annotations

import argparse

import numpy as np

import fastnips.designbench as db


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gdb", help="a local GDB copy (the folder holding lica-data/)")
    args = ap.parse_args(argv)
    if args.gdb:
        lays = list(db.load_gdb(args.gdb, limit=500).layouts.values())
        print(f"{len(lays)} layouts from {args.gdb}")
    else:
        lays = db.synthetic_templates(20, 5, seed=0)
        print(f"{len(lays)} SYNTHETIC layouts, 20 templates")

    # sibling clustering with the font-Jaccard baseline (the number of templates given, as GDB's prompt does)
    truth = [x.template_id for x in lays]
    pred = db.FontJaccardBaseline().cluster(lays, n_clusters=len(set(truth)))
    print("font-Jaccard clustering:", {k: round(v, 3) for k, v in db.clustering_scores(pred, truth).items()})

    # layer order: the area heuristic against the true paint order
    r = db.layer_order_scores([db.area_depth(x) for x in lays], [x.z for x in lays], [x.boxes for x in lays])
    print("area-rule layer order:", {k: round(v, 3) for k, v in r.items()})

    # detection: each layout's components "detected" from a sibling's boxes
    by_t: dict[str, list] = {}
    for x in lays:
        by_t.setdefault(x.template_id, []).append(x)
    dets = lambda x: [{"bbox": b.tolist(), "label": t, "score": 1.0} for b, t in zip(x.boxes, x.types)]
    sib = [next((y for y in by_t[x.template_id] if y is not x), x) for x in lays]
    m = db.detection_map([dets(s) for s in sib], [dets(x) for x in lays])
    print("sibling-copy detection:", {k: round(v, 3) for k, v in m.items() if k.startswith("mAP")})
    print("IoU, first boxes of layouts 0 and 1:", np.round(db.iou_matrix(lays[0].boxes[:2], lays[1].boxes[:2]), 3))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
