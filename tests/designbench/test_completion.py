"""Completion metrics: hand-computed values and a per-component loop with lica-gdb's ``iou`` following its
matching rule (key, else position in the prediction order)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.designbench import completion_metrics, completion_scores


def test_by_hand():
    r = completion_scores({"logo": [0, 0, 10, 10]}, {"logo": [0, 0, 10, 5], "title": [0, 20, 50, 10]})
    assert r == {"miou": 0.25, "coverage": 0.5, "hallucination": 0.0}
    # positional: the second true box has no prediction (coverage 1/2); the one prediction is matched (no hallucination)
    r = completion_scores([[0, 0, 1, 1]], [[0, 0, 1, 1], [5, 5, 1, 1]])
    assert r == {"miou": 0.5, "coverage": 0.5, "hallucination": 0.0}
    r = completion_scores({"x": [0, 0, 1, 1], "y": [0, 0, 1, 1], "a": [0, 0, 2, 2]}, {"a": [0, 0, 2, 2]})
    assert r == {"miou": 1.0, "coverage": 1.0, "hallucination": pytest.approx(2 / 3)}
    # a missing key falls back to the prediction at the same position (lica-gdb's rule)
    assert completion_scores({"z": [0, 0, 2, 2]}, {"a": [0, 0, 2, 2]})["miou"] == 1.0
    m = completion_metrics([{"a": [0, 0, 1, 1]}, {}, {}], [{"a": [0, 0, 1, 1]}, {"b": [0, 0, 1, 1]}, {}])
    assert m == {"miou": 0.5, "component_coverage": 0.5, "hallucination_rate": 0.0, "evaluated_samples": 2.0}
    with pytest.raises(ValueError, match=r"pred\['a'\]: expected a box"):
        completion_scores({"a": [0, 0, np.nan, 1]}, {"a": [0, 0, 1, 1]})
    with pytest.raises(ValueError, match="negative width"):
        completion_scores([[0, 0, 1, 1]], [[0, 0, -1, 1]])


def test_equals_a_loop_with_lica_gdb_iou(gdb_iou):
    rng = np.random.default_rng(0)
    for _ in range(100):
        n, m = int(rng.integers(1, 6)), int(rng.integers(0, 6))
        gt = {f"c{i}": [float(v) for v in np.r_[rng.integers(0, 40, 2), rng.integers(1, 20, 2)]] for i in range(n)}
        keys = list(rng.choice([f"c{i}" for i in range(8)], m, replace=False))
        pred = {k: [float(v) for v in np.r_[rng.integers(0, 40, 2), rng.integers(1, 20, 2)]] for k in keys}
        order = list(pred.values())
        ious, matched = [], 0
        for idx, (k, g) in enumerate(gt.items()):  # lica-gdb's layout-2 loop, written out
            p = pred.get(k) or (order[idx] if idx < len(order) else None)
            if p is None:
                ious.append(0.0)
                continue
            matched += 1
            ious.append(gdb_iou(p, g))
        r = completion_scores(pred, gt)
        assert r["miou"] == pytest.approx(sum(ious) / n, abs=1e-12)
        assert r["coverage"] == matched / n
        assert r["hallucination"] == max(m - matched, 0) / max(m, 1)
