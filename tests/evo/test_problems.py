"""The benchmarks, the distortion checks and the exact hole table of fixed decomposition weights."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastnips.evo import distortion_table, fixed_weight_optima, lotz, one_min_max, uniform_weights

NOTES = {  # (h1, h2): reachable points of 31 at n = 30: Tchebycheff N=30, Tchebycheff N=120, weighted sum N=30
    ("id", "id"): (31, 31, 31),
    ("square", "id"): (8, 15, 2),
    ("exp2", "id"): (2, 2, 2),
    ("exp3", "exp3"): (13, 21, 2),
}


def test_lotz_and_one_min_max_values():
    p = lotz(6)
    assert p.raw([1, 1, 0, 1, 0, 0]) == (2, 2)
    assert p.raw([1] * 6) == (6, 0)
    assert p.raw([0] * 6) == (0, 6)
    assert p.raw([0, 1, 1, 1, 1, 1]) == (0, 0)
    q = one_min_max(5, h1="square")
    assert q.raw([1, 0, 1, 1, 0]) == (2, 3)
    assert q.evaluate([1, 0, 1, 1, 0]) == (4.0, 3.0)
    assert lotz(4, h1="exp2", h2="exp3").evaluate([1, 1, 1, 0]) == (8.0, math.exp(1 / 3))
    np.testing.assert_array_equal(lotz(3, h1="square").front(), [[0, 3], [1, 2], [4, 1], [9, 0]])


@pytest.mark.parametrize("key", list(NOTES))
def test_hole_table_of_the_notes(key):
    """The exact table (n = 30, ties count as optimal, z* = the ideal point): a deterministic computation."""
    p = lotz(30, *key)
    got = (len(fixed_weight_optima(p, 30)), len(fixed_weight_optima(p, 120)),
           len(fixed_weight_optima(p, 30, "weighted_sum")))
    assert got == NOTES[key]


def test_hole_sets_by_hand():
    # 2^v / id: only the two extremes (z1* - f1 is huge for every point but the last)
    assert fixed_weight_optima(lotz(30, h1="exp2")).tolist() == [0, 30]
    # n = 2, h1 = v^2: front (0, 2), (1, 1), (4, 0), z* = (4, 2). lambda = (0, 1) -> point 0;
    # (1/2, 1/2): g = max(4, 0), max(3, 1), max(0, 2) / 2 -> point 2; (1, 0) -> point 2. Point 1 is a hole.
    assert fixed_weight_optima(lotz(2, h1="square"), 2).tolist() == [0, 2]
    # convex front under the weighted sum: only the extremes
    assert fixed_weight_optima(lotz(10, h1="square"), 10, "weighted_sum").tolist() == [0, 10]
    # the linear front: every point is optimal for the weight (1/2, 1/2) (ties)
    assert fixed_weight_optima(one_min_max(10), 10, "weighted_sum").tolist() == list(range(11))


def test_uniform_weights():
    np.testing.assert_array_equal(uniform_weights(4), [[0, 1], [0.25, 0.75], [0.5, 0.5], [0.75, 0.25], [1, 0]])


def test_distortion_tables():
    np.testing.assert_array_equal(distortion_table("exp2", 4), [1, 2, 4, 8, 16])
    np.testing.assert_array_equal(distortion_table(lambda v: 3 * v + 1, 3), [1, 4, 7, 10])
    np.testing.assert_array_equal(distortion_table([0, 0.5, 7], 2), [0, 0.5, 7])
    assert not distortion_table(None, 2).flags.writeable


@pytest.mark.parametrize(("h", "match"), [
    (lambda v: (v - 2) ** 2, r"h1 must be strictly increasing on 0..5.*h1\(0\) = 4.0 >= h1\(1\) = 1.0"),
    (lambda v: 1.0, "strictly increasing"),
    ([0, 1, 1, 2, 3, 4], r"h1\(1\) = 1.0 >= h1\(2\) = 1.0"),
    ([0, 1, 2], r"shape \(6,\)"),
    (lambda v: math.inf if v == 5 else v, r"h1 must be finite on 0..5; h1\(5\) = inf"),
    ([0, 1, 2, float("nan"), 4, 5], "finite"),
    ("cube", "unknown distortion 'cube'"),
    (lambda v: "x", "must map the integers"),
])
def test_bad_distortions_refused(h, match):
    with pytest.raises(ValueError, match=match):
        lotz(5, h1=h)


@pytest.mark.parametrize(("n", "err"), [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError),
                                        (10**6, ValueError)])
def test_bad_n_refused(n, err):
    with pytest.raises(err, match="n must be"):
        lotz(n)


def test_bad_hole_table_arguments():
    with pytest.raises(ValueError, match="decomposition must be"):
        fixed_weight_optima(lotz(4), decomposition="pbi")
    with pytest.raises(ValueError, match="n_weights must be"):
        fixed_weight_optima(lotz(4), 0)
    with pytest.raises(TypeError, match="problem must be"):
        fixed_weight_optima("lotz")
    with pytest.raises(ValueError, match="x must be 4 bits"):
        lotz(4).raw([1, 0, 2, 0])
