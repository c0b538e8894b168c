"""Layer-order metrics: Kendall's tau-b by hand and against scipy (ties included), pairwise accuracy with and
without the overlap restriction, depths from an answer's id list."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from fastnips.designbench import kendall_tau, layer_order_accuracy, layer_order_scores, order_to_depth


def test_tau_by_hand():
    assert kendall_tau([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0
    assert kendall_tau([3, 2, 1, 0], [0, 1, 2, 3]) == -1.0
    assert kendall_tau([0, 1, 2, 3], [0, 1, 3, 2]) == pytest.approx(4 / 6, abs=1e-15)  # 5 concordant, 1 discordant
    # ties: pred (0, 0, 1) vs true (0, 1, 2): pairs (1,2) tied in pred; S = 0 + 1 + 1 = 2,
    # n0 = 3, n1 = 0, n2 = 1 -> 2 / sqrt(3 * 2)
    assert kendall_tau([0, 0, 1], [0, 1, 2]) == pytest.approx(2 / np.sqrt(6), abs=1e-15)
    assert kendall_tau([5], [1]) == 0.0
    assert kendall_tau([1, 1, 1], [0, 1, 2]) == 0.0  # constant prediction: undefined, 0


def test_tau_equals_scipy_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 25))
        p, t = rng.integers(0, 6, n), rng.integers(0, 6, n)
        ref = kendalltau(p, t).statistic
        if np.isnan(ref):
            assert kendall_tau(p, t) == 0.0
        else:
            assert kendall_tau(p, t) == pytest.approx(ref, abs=1e-12)


def test_pairwise_accuracy_by_hand():
    assert layer_order_accuracy([0, 1, 2], [0, 2, 1]) == pytest.approx(2 / 3)
    # only layers 0 and 1 overlap, and their order is right
    boxes = [[0, 0, 9, 9], [0, 0, 1, 1], [50, 50, 1, 1]]
    assert layer_order_accuracy([0, 1, 2], [0, 2, 1], boxes=boxes) == 1.0
    assert layer_order_accuracy([0, 0], [0, 1]) == 0.0  # a tie where the truth has an order is wrong
    assert layer_order_accuracy([0, 1], [1, 1]) == 1.0  # no pair to judge
    r = layer_order_scores([[0, 1, 2], [2, 1, 0]], [[0, 1, 2], [0, 1, 2]], boxes=[boxes, boxes])
    assert r == {"kendall_tau": 0.0, "pairwise_accuracy": 0.5, "overlap_accuracy": 0.5}


def test_order_to_depth():
    assert order_to_depth(["b", "a", "b", "x"], ["a", "b", "c"]).tolist() == [1.0, 0.0, -1.0]


def test_refusals():
    with pytest.raises(ValueError, match="same layers"):
        kendall_tau([0, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau([0, np.nan], [0, 1])
    with pytest.raises(ValueError, match="one box per layer"):
        layer_order_accuracy([0, 1], [0, 1], boxes=[[0, 0, 1, 1]])
    with pytest.raises(ValueError, match="same layouts"):
        layer_order_scores([[0, 1]], [])
