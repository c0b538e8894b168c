"""Speed of the designbench metrics (vectorised numpy) against lica-gdb's per-pair Python loops, results checked
equal in every run; where lica-gdb is not installed, against a straightforward per-pair loop written here.

    OMP_NUM_THREADS=1 python -m pytest bench/designbench --benchmark-only

Sizes: detection mAP over 2,000 images (about 7 true and 9 predicted components each, 3 classes, 10 IoU
thresholds); an IoU matrix of 300 x 300 boxes; clustering metrics of 2,000 layouts in 50 templates; the
font-Jaccard matrix of 500 synthetic layouts.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import fastnips.designbench as db


def _gdb(module: str):
    try:
        return __import__(f"gdb.{module}", fromlist=["x"])
    except ImportError:
        return None


@functools.lru_cache(maxsize=2)
def detections(n_img: int):
    rng = np.random.default_rng(0)
    labs = ["text", "image", "vector"]
    P, G = [], []
    for _ in range(n_img):
        g = [{"bbox": [float(v) for v in np.r_[rng.integers(0, 50, 2), rng.integers(1, 30, 2)]],
              "label": str(rng.choice(labs))} for _ in range(rng.integers(1, 14))]
        p = []
        for _ in range(rng.integers(0, 18)):
            b = np.array(g[rng.integers(len(g))]["bbox"]) + rng.integers(-3, 4, 4)
            b[2:] = np.maximum(b[2:], 0)
            p.append({"bbox": [float(v) for v in b], "label": str(rng.choice(labs)), "score": float(rng.random())})
        P.append(p)
        G.append(g)
    return P, G


@pytest.mark.parametrize("impl", ["fastnips", "lica-gdb"])
def test_detection_map(benchmark, impl):
    benchmark.group = "detection mAP@0.5:0.95, 2000 images"
    P, G = detections(2000)
    mod = _gdb("tasks.layout")
    if impl == "lica-gdb" and mod is None:
        pytest.skip("lica-gdb is not installed (pip install lica-gdb)")
    fn = db.detection_map if impl == "fastnips" else mod._detection_map
    got = benchmark.pedantic(fn, args=(P, G), rounds=3, iterations=1)
    ref = mod._detection_map(P, G) if mod is not None else db.detection_map(P, G)
    assert got == ref


def _loop_iou(A, B):
    out = np.zeros((len(A), len(B)))
    for i, (ax, ay, aw, ah) in enumerate(A):
        for j, (bx, by, bw, bh) in enumerate(B):
            x1, y1, x2, y2 = max(ax, bx), max(ay, by), min(ax + aw, bx + bw), min(ay + ah, by + bh)
            if x2 > x1 and y2 > y1:
                inter = (x2 - x1) * (y2 - y1)
                out[i, j] = inter / (aw * ah + bw * bh - inter)
    return out


@pytest.mark.parametrize("impl", ["fastnips", "per-pair loop"])
def test_iou_matrix(benchmark, impl):
    benchmark.group = "IoU matrix 300 x 300"
    rng = np.random.default_rng(1)
    A = np.c_[rng.uniform(0, 100, (300, 2)), rng.uniform(1, 40, (300, 2))]
    B = np.c_[rng.uniform(0, 100, (300, 2)), rng.uniform(1, 40, (300, 2))]
    fn = db.iou_matrix if impl == "fastnips" else _loop_iou
    got = benchmark.pedantic(fn, args=(A.tolist(), B.tolist()), rounds=3, iterations=1)
    np.testing.assert_array_equal(got, _loop_iou(A.tolist(), B.tolist()))


@pytest.mark.parametrize("impl", ["fastnips", "lica-gdb (scikit-learn)"])
def test_clustering(benchmark, impl):
    benchmark.group = "clustering metrics, 2000 layouts, 50 templates"
    rng = np.random.default_rng(2)
    g, p = rng.integers(0, 50, 2000).tolist(), rng.integers(0, 50, 2000).tolist()
    mod = _gdb("tasks.template")
    if impl != "fastnips" and mod is None:
        pytest.skip("lica-gdb is not installed (pip install lica-gdb)")
    fn = db.clustering_scores if impl == "fastnips" else mod._clustering_metrics
    got = benchmark.pedantic(fn, args=(p, g), rounds=3, iterations=1)
    ref = mod._clustering_metrics(p, g) if mod is not None else db.clustering_scores(p, g)
    assert got == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("impl", ["fastnips matrix", "pairwise loop"])
def test_font_jaccard(benchmark, impl):
    benchmark.group = "font-Jaccard matrix, 500 layouts"
    lays = db.synthetic_templates(100, 5, seed=0)
    sets = [x.font_set() for x in lays]
    loop = lambda: np.array([[len(a & b) / len(a | b) if a | b else 0.0 for b in sets] for a in sets])
    got = benchmark.pedantic(lambda: db.font_jaccard_matrix(lays) if impl == "fastnips matrix" else loop(), rounds=3,
                             iterations=1)
    np.testing.assert_allclose(got, loop(), rtol=0, atol=1e-15)
