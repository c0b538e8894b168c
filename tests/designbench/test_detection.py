"""Detection AP / mAP: hand-computed precision-recall cases (the VOC duplicate rule, 11-point and all-point
interpolation), and lica-gdb's ``_detection_map`` on random detections (equal bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.designbench import GDB_IOU_THRESHOLDS, average_precision, detection_map


def _box(x, y, w, h, label="text", score=None):
    d = {"bbox": [x, y, w, h], "label": label}
    if score is not None:
        d["score"] = score
    return d


def test_ap_by_hand_with_a_duplicate():
    gt = [[_box(0, 0, 10, 10), _box(50, 50, 10, 10)]]
    pr = [[_box(0, 0, 10, 10, score=0.9), _box(0, 0, 10, 10, score=0.8), _box(50, 50, 10, 10, score=0.7)]]
    # ranked: TP, FP (duplicate of the first box), TP -> precision 1, 1/2, 2/3; recall 1/2, 1/2, 1
    # 11-point: r in {0, .., .5} -> max precision 1 (6 points); r in {.6, .., 1} -> 2/3 (5 points)
    r = detection_map(pr, gt)
    assert r["mAP@0.5"] == pytest.approx((6 + 5 * 2 / 3) / 11, abs=1e-15)
    assert r["AP@0.5_text"] == r["mAP@0.5"]
    # all-point: 1/2 * 1 + 1/2 * 2/3
    assert detection_map(pr, gt, interpolation="all")["mAP@0.5"] == pytest.approx(0.5 + 1 / 3, abs=1e-15)


def test_voc_rule_no_redirect_to_the_second_best_box():
    # both predictions prefer the first box (IoU 1 and 0.9), the second box is IoU 0.72 with the second one:
    # it is still a false positive (the rule takes the best box only), so recall stops at 1/2
    gt = [[_box(0, 0, 10, 10), _box(0, 1, 10, 8)]]
    pr = [[_box(0, 0, 10, 10, score=0.9), _box(0, 0, 10, 9, score=0.8)]]
    # precision 1, 1/2 at recall 1/2, 1/2: 6 points of precision 1, the rest 0
    assert detection_map(pr, gt, iou_thresholds=[0.5])["mAP@0.5"] == pytest.approx(6 / 11, abs=1e-15)


def test_classes_images_and_thresholds():
    gt = [[_box(0, 0, 10, 10, "text")], [_box(0, 0, 10, 10, "image")], []]
    pr = [[_box(0, 0, 10, 10, "image", 0.9)],  # right place, wrong class: no hit for either class
          [_box(0, 0, 10, 8, "image", 0.5)],   # IoU 0.8: a hit up to t = 0.8
          [_box(0, 0, 1, 1, "logo", 1.0)]]     # a class no true component has: ignored
    r = detection_map(pr, gt)
    assert set(r) == {"mAP@0.5", "mAP@0.5:0.95", "AP@0.5_image", "AP@0.5_text"}
    assert r["AP@0.5_text"] == 0.0
    # image: the wrong-class prediction of image 0 is an "image" false positive scored 0.9, ranked first:
    # precision 0, 1/2 at recall 0, 1 -> 11-point AP 1/2 at every threshold with a hit
    assert r["AP@0.5_image"] == pytest.approx(0.5, abs=1e-15)
    hits = sum(t <= 0.8 for t in GDB_IOU_THRESHOLDS)  # 0.5 ... 0.8: 7 thresholds
    assert r["mAP@0.5:0.95"] == pytest.approx(hits * 0.25 / len(GDB_IOU_THRESHOLDS), abs=1e-15)
    assert detection_map([[]], [[]]) == {"mAP@0.5": 0.0, "mAP@0.5:0.95": 0.0}


def _random_case(rng, n_img):
    labs = ["text", "image", "vector"]
    P, G = [], []
    for _ in range(n_img):
        g = [_box(*[float(v) for v in np.r_[rng.integers(0, 50, 2), rng.integers(0, 30, 2)]],
                  str(rng.choice(labs))) for _ in range(rng.integers(0, 8))]
        p = []
        for _ in range(rng.integers(0, 10)):
            if g and rng.random() < 0.6:
                b = np.array(g[rng.integers(len(g))]["bbox"]) + rng.integers(-3, 4, 4)
                b[2:] = np.maximum(b[2:], 0)
            else:
                b = np.r_[rng.integers(0, 50, 2), rng.integers(0, 30, 2)]
            p.append(_box(*[float(v) for v in b], str(rng.choice([*labs, "logo"])), float(rng.integers(0, 5)) / 4))
        P.append(p)
        G.append(g)
    return P, G


def test_equals_lica_gdb_on_random_detections(gdb_layout):
    rng = np.random.default_rng(0)
    for _ in range(150):  # integer boxes and tied scores: every tie-break rule is exercised
        P, G = _random_case(rng, int(rng.integers(1, 10)))
        ours, ref = detection_map(P, G), gdb_layout._detection_map(P, G)
        assert ours.keys() == ref.keys()
        assert all(ours[k] == ref[k] for k in ref), (ours, ref)


def test_average_precision_helper():
    assert average_precision([0.1, 0.9], [True, False], 1, interpolation="all") == 0.5  # ranked: FP, TP
    assert average_precision([], [], 3) == 0.0
    with pytest.raises(ValueError, match="smaller than the number of hits"):
        average_precision([1.0, 0.5], [True, True], 1)


def test_refusals():
    gt = [[_box(0, 0, 1, 1)]]
    with pytest.raises(ValueError, match="same images"):
        detection_map([], gt)
    with pytest.raises(ValueError, match="'bbox' and 'label'"):
        detection_map([[{"bbox": [0, 0, 1, 1]}]], gt)
    with pytest.raises(ValueError, match=r"predictions\[1\]\[0\]: bad 'bbox'.*NaN"):
        detection_map([[_box(0, 0, 1, 1, score=1.0)], [_box(0, 0, 1, np.nan, score=1.0)]], gt + gt)
    with pytest.raises(ValueError, match=r"ground_truth\[0\]\[1\]: bad 'bbox'"):
        detection_map(gt, [[_box(0, 0, 1, 1), {"bbox": [0, 0, 1], "label": "text"}]])
    with pytest.raises(ValueError, match="score is NaN"):
        detection_map([[_box(0, 0, 1, 1, score=float("nan"))]], gt)
    with pytest.raises(ValueError, match=r"iou_thresholds must be in \(0, 1\]"):
        detection_map(gt, gt, iou_thresholds=[0.0])
    with pytest.raises(ValueError, match="interpolation"):
        detection_map(gt, gt, interpolation="coco")


def test_non_numeric_and_non_finite_scores_are_refused():
    gt = [[_box(0, 0, 1, 1)]]
    with pytest.raises(ValueError, match=r"predictions\[0\]\[0\]: score must be a number"):
        detection_map([[_box(0, 0, 1, 1, score="high")]], gt)
    with pytest.raises(ValueError, match="scores contains NaN"):  # was a silent AP of 0.5
        average_precision([np.nan, 1.0], [True, False], 1)
