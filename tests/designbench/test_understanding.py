"""Label, count and rotation metrics: hand-computed values and lica-gdb's aspect-ratio, count and component-type
evaluations."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.designbench import count_scores, label_scores, rotation_scores


def test_labels_by_hand():
    r = label_scores(["16:9", "1:1", "1:1"], ["16:9", "1:1", "4:5"])
    # 16:9: P = R = F = 1; 1:1: P = 1/2, R = 1, F = 2/3; 4:5: all 0
    assert r["accuracy"] == pytest.approx(2 / 3)
    assert r["precision"] == pytest.approx(1.5 / 3)
    assert r["recall"] == pytest.approx(2 / 3)
    assert r["f1"] == pytest.approx((1 + 2 / 3) / 3)
    fixed = label_scores(["text"], ["text"], labels=["text", "image"])
    assert fixed["f1_text"] == 1.0
    assert fixed["f1_image"] == 0.0
    assert fixed["f1"] == 0.5


def test_counts_and_rotation_by_hand():
    assert count_scores([3, "5", "many"], [4, 5, 6]) == {"mae": 0.5, "mse": 0.5, "n_scored": 2}
    assert count_scores(["x"], [1]) == {"mae": 0.0, "mse": 0.0, "n_scored": 0}
    r = rotation_scores([359.0, 90.0, -170.0], [1.0, 0.0, 170.0], tolerance=20)
    assert r == {"mae_deg": pytest.approx((2 + 90 + 20) / 3), "accuracy@20": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="tolerance"):
        rotation_scores([0.0], [0.0], tolerance=-1)
    with pytest.raises(ValueError, match="NaN"):
        rotation_scores([np.nan], [0.0])


def test_equals_lica_gdb(gdb_layout):
    rng = np.random.default_rng(0)
    ratios = ["1:1", "4:5", "16:9", "9:16"]
    for _ in range(30):
        n = int(rng.integers(1, 30))
        p, g = list(rng.choice(ratios, n)), list(rng.choice(ratios, n))
        ref = gdb_layout.AspectRatioClassification().evaluate(p, g)
        ours = label_scores(p, g)
        assert all(ours[k] == pytest.approx(ref[k], abs=1e-12) for k in ref)
        types = list(gdb_layout.VALID_COMP_TYPES)
        p, g = list(rng.choice([*types, "logo"], n)), list(rng.choice(types, n))
        ref = gdb_layout.ComponentClassification().evaluate(p, g)
        ours = label_scores(p, g, labels=types)
        assert {k: ours[k if k != "f1_macro" else "f1"] for k in ref} == pytest.approx(ref, abs=1e-12)
        pc, gc = list(rng.integers(0, 20, n)), list(rng.integers(0, 20, n))
        pc[0] = -1 if n > 1 else pc[0]
        ref = gdb_layout.ComponentCount().evaluate(pc, gc)
        ours = count_scores(pc, gc)
        assert ours["mae"] == pytest.approx(ref["mae"], abs=1e-12)
        assert ours["mse"] == pytest.approx(ref["mse"])
