"""Baselines of the GDB tasks on synthetic templates (labelled synthetic: no GDB data, no model).

    python bench/designbench/eval_baselines.py [--quick] [--templates 40] [--variants 5] [--seeds 3] [--out DIR]

Data: :func:`fastnips.designbench.synthetic_templates` (known sibling groups, layer orders, fonts, crops,
rotations). Each seed draws its own templates. For each task, the floors a model should beat: chance or
majority predictors, the heuristics of :mod:`fastnips.designbench.baselines`, a sibling-copy predictor (what
knowing the template is worth) and, for the template tasks, the font-Jaccard baseline of the GDB abstract next
to a box-structure similarity (Hungarian mIoU of canvas-relative boxes). Tables: mean ± std over seeds. Writes
``results.json`` and ``results.md`` to ``--out`` (default bench/designbench/results).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

import fastnips.designbench as db

TYPES = ["image", "group", "text"]


def _rel(lay):
    return lay.boxes / np.array([lay.width, lay.height, lay.width, lay.height])


def _structure(a, b) -> float:
    return 0.5 * (db.hungarian_iou(_rel(a), _rel(b))["miou"] + db.hungarian_iou(_rel(b), _rel(a))["miou"])


def _groups(lays):
    out: dict[str, list] = {}
    for lay in lays:
        out.setdefault(lay.template_id, []).append(lay)
    return list(out.values())


def _sib(lay, groups_by_t, rng):
    others = [x for x in groups_by_t[lay.template_id] if x is not lay]
    return others[int(rng.integers(len(others)))] if others else None


def _dets(lay, keep=lambda i: True):
    return [{"bbox": b.tolist(), "label": t, "score": 1.0} for i, (b, t) in enumerate(zip(lay.boxes, lay.types))
            if keep(i)]


def spatial_understanding(lays, by_t, rng) -> dict:
    """Tasks 1-8: label / count / rotation floors, detection, layer order."""
    res: dict = {}
    ratios = [db.ratio_label(x.width, x.height) for x in lays]
    maj = Counter(ratios).most_common(1)[0][0]
    res["aspect_ratio"] = {"majority": db.label_scores([maj] * len(lays), ratios),
                           "uniform random": db.label_scores(list(rng.choice(list(db.ASPECT_RATIOS), len(lays))),
                                                             ratios)}
    counts = [len(x) for x in lays]
    sibs = [_sib(x, by_t, rng) for x in lays]
    res["component_count"] = {"median": db.count_scores([float(np.median(counts))] * len(lays), counts),
                              "sibling count": db.count_scores([len(s) for s in sibs], counts)}
    tp, tt, shape = [], [], []
    for x in lays:
        for b, t in zip(_rel(x), x.types):
            tt.append(t)
            shape.append("text" if b[2] > 3 * b[3] * x.height / x.width else "image")
    tp = [Counter(tt).most_common(1)[0][0]] * len(tt)
    res["component_type"] = {"majority": db.label_scores(tp, tt, labels=TYPES),
                             "box-shape rule": db.label_scores(shape, tt, labels=TYPES)}
    gt = [_dets(x) for x in lays]
    res["component_detection"] = {
        "type prior": db.detection_map([db.prior_detections(x, [y for y in lays if y.template_id != x.template_id])
                                        for x in lays], gt),
        "sibling copy": db.detection_map([_dets(s) for s in sibs], gt)}
    frame = lambda x: lambda i: x.types[i] == "image" and i > 0
    gtf = [_dets(x, frame(x)) for x in lays]
    prior = [[d for d in db.prior_detections(x, [y for y in lays if y.template_id != x.template_id])
              if d["label"] == "image"] for x in lays]
    res["frame_detection"] = {"type prior": db.detection_map(prior, gtf),
                              "sibling copy": db.detection_map([_dets(s, frame(s)) for s in sibs], gtf)}
    rand = [rng.permutation(len(x)).astype(float) for x in lays]
    res["layer_order"] = {
        "random": db.layer_order_scores(rand, [x.z for x in lays], [x.boxes for x in lays]),
        "area rule": db.layer_order_scores([db.area_depth(x) for x in lays], [x.z for x in lays],
                                           [x.boxes for x in lays])}
    imgs = [(x, i) for x in lays for i, t in enumerate(x.types) if t == "image" and i > 0]
    rot = [x.rotations[i] for x, i in imgs]
    res["image_rotation"] = {"always 0": db.rotation_scores([0.0] * len(rot), rot)}
    crops = [x.source["components"][i]["crop"] for x, i in imgs]
    res["crop_shape"] = {"majority": db.label_scores([Counter(crops).most_common(1)[0][0]] * len(crops), crops),
                         "uniform random": db.label_scores(list(rng.choice(db.CROP_SHAPES, len(crops))), crops)}
    return res


def spatial_generation(lays, by_t, rng) -> dict:
    """Tasks 9, 10, 12: whole-layout generation, partial completion (single / multi), insertion placement."""
    res: dict = {}
    means = db.type_mean_boxes(lays)
    sibs = [_sib(x, by_t, rng) for x in lays]
    other = [lays[int(rng.integers(len(lays)))] for _ in lays]
    res["intent_to_layout"] = {
        name: {"hungarian_miou": float(np.mean([db.hungarian_iou(_rel(p), _rel(x))["miou"]
                                                for p, x in zip(src, lays)]))}
        for name, src in (("random layout", other), ("sibling copy", sibs))}
    for task, k in (("partial_completion_single", 1), ("partial_completion_multi", 3), ("layer_aware_insertion", 1)):
        preds = {"canvas centre": [], "type mean": [], "sibling copy": []}
        gts = []
        for x, s in zip(lays, sibs):
            keys = db.component_keys(x)
            pool = [i for i in range(1, len(x)) if task != "layer_aware_insertion" or x.types[i] == "image"]
            hide = [keys[i] for i in rng.choice(pool, min(k, len(pool)), replace=False)] if pool else []
            gts.append({kk: x.boxes[keys.index(kk)].tolist() for kk in hide})
            preds["canvas centre"].append(db.sibling_placements(x, None, hide))
            preds["type mean"].append(db.sibling_placements(x, None, hide, means))
            preds["sibling copy"].append(db.sibling_placements(x, s, hide, means))
        res[task] = {n: db.completion_metrics(p, gts) for n, p in preds.items()}
    return res


def _cluster_by(S, k):
    D = 1.0 - 0.5 * (S + S.T)
    np.fill_diagonal(D, 0.0)
    return fcluster(linkage(squareform(np.clip(D, 0, None), checks=False), "average"), k, "maxclust")


def template_understanding(lays, by_t, rng) -> dict:
    """Tasks 13-15: sibling matching, retrieval, clustering."""
    fj = db.FontJaccardBaseline()
    n = len(lays)
    S_font = db.font_jaccard_matrix(lays)
    S_box = np.array([[_structure(a, b) for b in lays] for a in lays])
    S_rand = rng.random((n, n))
    same = np.array([[a.template_id == b.template_id for b in lays] for a in lays])
    iu = np.triu_indices(n, 1)
    pos = [p for p in zip(*iu) if same[p]]
    neg = [p for p in zip(*iu) if not same[p]]
    neg = [neg[i] for i in rng.choice(len(neg), min(len(neg), len(pos)), replace=False)]
    pairs, y = pos + neg, [1] * len(pos) + [0] * len(neg)
    res: dict = {"template_matching": {}, "template_retrieval": {}, "template_clustering": {}}
    for name, S, thr in (("font-Jaccard", S_font, fj.threshold), ("box structure", S_box, 0.5),
                         ("random", S_rand, 0.5)):
        sc = [float(S[i, j]) for i, j in pairs]
        res["template_matching"][name] = db.matching_scores([int(s >= thr) for s in sc], y, scores=sc)
        ranked, rel = [], []
        for q in range(n):
            cand = [j for j in range(n) if j != q]
            ranked.append(sorted(cand, key=lambda j: -S[q, j]))
            rel.append([j for j in cand if same[q, j]])
        res["template_retrieval"][name] = db.retrieval_scores(ranked, rel, ks=(1, 5))
        scores = []
        groups = _groups(lays)
        for lo in range(0, len(groups), 5):  # problems of 5 templates, as GDB's clustering prompts
            idx = [lays.index(x) for g in groups[lo:lo + 5] for x in g]
            k = len(groups[lo:lo + 5])
            pred = fj.cluster([lays[i] for i in idx], k) if name == "font-Jaccard" else \
                _cluster_by(S[np.ix_(idx, idx)], k)
            scores.append(db.clustering_scores(pred, [lays[i].template_id for i in idx]))
        res["template_clustering"][name] = {k: float(np.mean([s[k] for s in scores])) for k in ("ari", "nmi", "ami")}
    return res


def _restyle(target: dict, style_from: dict | None, default: dict) -> dict:
    out = {"background": (style_from or default).get("background", ""), "components": []}
    src = (style_from or {}).get("components", [])
    for j, c in enumerate(target["components"]):
        new = {k: v for k, v in c.items() if k not in ("fontFamily", "fontSize", "color", "textAlign")}
        if c["type"] == "TEXT":
            donor = next((d for d in src[j:] + src[:j] if d.get("type") == "TEXT"), None) or default
            new.update({k: donor[k] for k in ("fontFamily", "fontSize", "color", "textAlign") if k in donor})
        out["components"].append(new)
    return out


def template_generation(lays, by_t, rng) -> dict:
    """Tasks 16-17: style completion of a sibling skeleton, colour transfer to a target palette."""
    texts = [c for x in lays for c in x.source["components"] if c["type"] == "TEXT"]
    default = {k: Counter(c[k] for c in texts).most_common(1)[0][0] for k in ("fontFamily", "fontSize", "color",
                                                                              "textAlign")}
    default["background"] = Counter(x.source["background"] for x in lays).most_common(1)[0][0]
    sibs = [_sib(x, by_t, rng) for x in lays]
    gts = [x.source for x in lays]
    res = {"style_completion": {
        "global majority": db.template_generation_metrics([_restyle(g, None, default) for g in gts], gts,
                                                          "style_completion"),
        "sibling style copy": db.template_generation_metrics(
            [_restyle(g, s.source if s else None, default) for g, s in zip(gts, sibs)], gts, "style_completion")}}
    bundles, keep, mapped = [], [], []
    for x, s in zip(lays, sibs):
        des = (s or x).source
        palette = [x.source["background"], *sorted({c["color"] for c in x.source["components"] if "color" in c})]
        bundles.append({"designated_layout": des, "target_palette": [{"color": c} for c in palette]})
        keep.append(des)
        rgb = np.array([db.parse_color(c) for c in palette])
        remap = lambda c, pal=palette, rgb=rgb: pal[int(np.argmin(db.delta_e(db.parse_color(c), rgb)))]
        mapped.append({**des, "background": palette[0], "components": [
            {**c, **{k: remap(c[k]) for k in ("color", "backgroundColor") if k in c}} for c in des["components"]]})
    res["color_transfer"] = {n: db.template_generation_metrics(p, bundles, "color_transfer")
                             for n, p in (("keep colours", keep), ("nearest palette colour", mapped))}
    return res


STAGES = (spatial_understanding, spatial_generation, template_understanding, template_generation)


GENERATOR = {"jitter": 0.05, "font_change": 0.15, "drop": 0.2}  # harder than the defaults: variants move


def run(seed: int, n_templates: int, variants: int) -> dict:
    lays = db.synthetic_templates(n_templates, variants, seed=seed, **GENERATOR)
    by_t = {g[0].template_id: g for g in _groups(lays)}
    rng = np.random.default_rng(10_000 + seed)
    out: dict = {}
    for stage in STAGES:
        out.update(stage(lays, by_t, rng))
    return out


COLUMNS = {"style_completion": ("font_exact_match", "color_exact_match", "font_size_mae", "text_align_accuracy",
                                 "color_palette_adherence", "font_adherence"),
           "color_transfer": ("color_palette_adherence", "palette_coverage", "bg_color_distance", "position_fidelity"),
           "component_type": ("accuracy", "f1", "f1_text", "f1_image", "f1_group")}


def table(results: list[dict]) -> str:
    lines = []
    for task in results[0]:
        lines += [f"#### {task} (synthetic)", ""]
        rows = results[0][task]
        keys = list(COLUMNS.get(task, ())) or [k for k in next(iter(rows.values()))
                                               if not k.startswith(("AP@", "n_", "evaluated"))][:6]
        lines += ["| baseline | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        for name in rows:
            cells = []
            for k in keys:
                v = np.array([r[task][name].get(k, np.nan) for r in results], dtype=float)
                cells.append(f"{np.nanmean(v):.3f} ± {np.nanstd(v):.3f}" if np.isfinite(v).any() else "n/a")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 seed, 10 templates x 3 variants (smoke test)")
    ap.add_argument("--templates", type=int, default=40)
    ap.add_argument("--variants", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results"))
    args = ap.parse_args(argv)
    if min(args.templates, args.variants, args.seeds) < 1 or args.variants < 2:
        ap.error("--templates and --seeds must be >= 1, --variants >= 2")
    seeds, nt, nv = (1, 10, 3) if args.quick else (args.seeds, args.templates, args.variants)
    results = [run(s, nt, nv) for s in range(seeds)]
    md = (f"SYNTHETIC templates ({nt} templates x {nv} variants per seed, {seeds} seeds, mean ± std; generator "
          f"{GENERATOR}); no GDB data and no model: floors and heuristics only\n\n" + table(results))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    (args.out / "results.md").write_text(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
