"""Box IoU, element-wise and Hungarian-matched IoU: hand-computed values, a brute-force matching, lica-gdb's
``iou`` on random boxes, and the refusals of bad boxes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastnips.designbench import hungarian_iou, iou_matrix, paired_iou, xyxy_to_xywh


def test_iou_by_hand():
    # [0,0,2,2] vs [1,1,2,2]: intersection 1, union 4 + 4 - 1 = 7
    M = iou_matrix([[0, 0, 2, 2]], [[1, 1, 2, 2], [0, 0, 2, 2], [2, 0, 1, 1], [0, 0, 0, 5]])
    assert M.shape == (1, 4)
    assert M[0, 0] == pytest.approx(1 / 7, abs=1e-15)
    assert M[0, 1] == 1.0
    assert M[0, 2] == 0.0  # touching edges: no positive-area overlap
    assert M[0, 3] == 0.0  # zero-area box
    assert iou_matrix([[0, 0, 0, 0]], [[0, 0, 0, 0]])[0, 0] == 0.0  # union 0: defined as 0, as lica-gdb does
    assert paired_iou([[0, 0, 4, 1]], [[1, 0, 2, 1]]).tolist() == [0.5]
    assert iou_matrix(np.zeros((0, 4)), [[0, 0, 1, 1]]).shape == (0, 1)


def test_iou_equals_lica_gdb_bitwise(gdb_iou):
    rng = np.random.default_rng(0)
    A = np.c_[rng.uniform(-5, 50, (60, 2)), rng.uniform(0, 30, (60, 2))]
    B = np.c_[rng.uniform(-5, 50, (70, 2)), rng.uniform(0, 30, (70, 2))]
    B[:5, 2] = 0.0  # degenerate boxes too
    M = iou_matrix(A, B)
    ref = np.array([[gdb_iou(list(a), list(b)) for b in B] for a in A])
    assert np.array_equal(M, ref)


def test_hungarian_against_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(30):
        n, m = (int(v) for v in rng.integers(1, 5, 2))
        G = np.c_[rng.uniform(0, 10, (n, 2)), rng.uniform(1, 6, (n, 2))]
        P = np.c_[rng.uniform(0, 10, (m, 2)), rng.uniform(1, 6, (m, 2))]
        M = iou_matrix(P, G)
        best = 0.0
        k = min(n, m)
        for rows in itertools.permutations(range(m), k):  # every injective assignment of k predictions
            for cols in itertools.combinations(range(n), k):
                best = max(best, sum(M[r, c] for r, c in zip(rows, cols)))
        assert hungarian_iou(P, G)["miou"] == pytest.approx(best / n, abs=1e-12)


def test_hungarian_by_hand():
    r = hungarian_iou([[0, 0, 2, 1]], [[0, 0, 1, 1], [0, 0, 2, 1]])  # the one prediction takes the exact box
    assert r == {"miou": 0.5, "precision": 1.0, "recall": 0.5}
    assert hungarian_iou([], []) == {"miou": 1.0, "precision": 1.0, "recall": 1.0}
    assert hungarian_iou([], [[0, 0, 1, 1]])["miou"] == 0.0


def test_xyxy_conversion():
    assert xyxy_to_xywh([[1, 2, 4, 6], [0, 0, 0, 0]]).tolist() == [[1, 2, 3, 4], [0, 0, 0, 0]]
    with pytest.raises(ValueError, match="negative width"):
        xyxy_to_xywh([[4, 0, 1, 1]])


@pytest.mark.parametrize(("bad", "match"), [
    ([[0, 0, 1]], r"shape \(n, 4\)"),
    ([[0, np.nan, 1, 1]], "NaN or infinite"),
    ([[0, 0, np.inf, 1]], "NaN or infinite"),
    ([[0, 0, -1, 1]], "negative width or height"),
    ([["a", 0, 1, 1]], "could not convert"),
])
def test_bad_boxes_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        iou_matrix(bad, [[0, 0, 1, 1]])
    with pytest.raises(ValueError, match="must hold the same number"):
        paired_iou([[0, 0, 1, 1]], [[0, 0, 1, 1]] * 2)


# coordinates up to 1e4 and sizes from 1e-2: the rounding of x + w - x stays below 1e-9 relative (IoU carries an
# error of order eps * |x| / w, for any implementation in floating point)
_coord = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)
_size = st.one_of(st.just(0.0), st.floats(1e-2, 1e4, allow_nan=False, allow_infinity=False))
_box = st.tuples(_coord, _coord, _size, _size)


@settings(max_examples=150, deadline=None)
@given(st.lists(_box, min_size=1, max_size=6), st.lists(_box, min_size=1, max_size=6))
def test_iou_properties(a, b):
    M = iou_matrix(a, b)
    assert np.all((M >= 0) & (M <= 1))
    np.testing.assert_array_equal(M, iou_matrix(b, a).T)  # symmetric, bit for bit
    A = np.array(a)
    diag = np.diag(iou_matrix(a, a))
    positive = (A[:, 2] > 0) & (A[:, 3] > 0)
    assert np.all(diag[positive] == pytest.approx(1.0, abs=1e-9))
    assert np.all(diag[~positive] == 0.0)
