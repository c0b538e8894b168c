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
    from fractions import Fraction

    np.testing.assert_array_equal(distortion_table([Fraction(0), Fraction(1, 2), 3], 2), [0, 0.5, 3])
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


@pytest.mark.parametrize(("h", "err", "match"), [
    (lambda v: -1 / v, ValueError, r"h1 must map the integers 0\.\.5 to real numbers: .*division by zero"),
    (["a", "b", "c", "d", "e", "f"], TypeError, "h1 must be a callable, a name or an array of n\\+1 real numbers"),
    ({1: 2}, TypeError, "h1 must be a callable, a name or an array of n\\+1 real numbers"),
    ([0, 1j, 2, 3, 4, 5], TypeError, "h1 must be a callable, a name or an array of n\\+1 real numbers"),
])
def test_bad_distortion_values_name_the_argument(h, err, match):
    with pytest.raises(err, match=match):
        lotz(5, h1=h)


@pytest.mark.parametrize(("args", "err", "match"), [
    (("zdt1", 3, np.arange(4.0), np.arange(4.0)), ValueError, "kind must be one of"),
    (("lotz", 3, np.arange(4.0)[::-1].copy(), np.arange(4.0)), ValueError, "h1 must be strictly increasing"),
    (("lotz", 5, np.arange(4.0), np.arange(4.0)), ValueError, r"h1 as values must have shape \(6,\)"),
    (("lotz", 0, np.arange(1.0), np.arange(1.0)), ValueError, "n must be >= 1"),
])
def test_problem_built_directly_is_validated(args, err, match):
    """Problem is public: built by hand (or by dataclasses.replace) it must be refused like lotz(...) refuses,
    not run silently (an unknown kind used to run as OneMinMax on the reference backend)."""
    from fastnips.evo import Problem

    with pytest.raises(err, match=match):
        Problem(*args)


def test_distortions_that_overflow_are_refused():
    """Finite and strictly increasing, but z* - f = 1.7e308 - (-1.7e308) = inf and 0 * inf = NaN: the hole table
    used to answer [2] (point 0 is the unique optimum of lambda = (0, 1)) and classic MOEA/D to cover 2 of 3."""
    with pytest.raises(ValueError, match=r"h1 must lie within \+-2\^1020.*h1\(0\) = -1.7e\+308"):
        lotz(2, h1=[-1.7e308, 0, 1.7e308])
    with pytest.raises(ValueError, match=r"h2 must lie within"):
        one_min_max(2, h2=[0, 1e308, 1.79e308])
    assert distortion_table("exp2", 1020)[-1] == 2.0**1020  # the largest named table still passes


def test_problem_built_directly_runs_like_lotz():
    from fastnips.evo import MOEAD, Problem, run

    p = Problem("lotz", 5, np.arange(6) ** 2, range(6))
    assert repr(p) == "lotz(n=5, h1=custom, h2=custom)"
    assert not p.h1.flags.writeable
    q = lotz(5, "square")
    assert run(p, MOEAD(), 300, 1, stop_on_full=False).same_trajectory(run(q, MOEAD(), 300, 1, stop_on_full=False))


def test_hole_table_refuses_huge_weight_counts_before_work():
    """10^9 weights used to build a 10^9-entry Python list (the process was killed for memory)."""
    with pytest.raises(ValueError, match=r"n_weights.*too many"):
        fixed_weight_optima(lotz(4), 10**9)


def _hole_table_by_hand(problem, n_weights, decomposition):
    """An independent scalar computation of the hole table (plain floats, the formula of the notes)."""
    front = problem.front().tolist()
    z = (front[-1][0], front[0][1])
    hit = set()
    for j in range(n_weights + 1):
        lam = (j / n_weights, 1.0 - j / n_weights)
        if decomposition == "tchebycheff":
            g = [max(lam[0] * (z[0] - a), lam[1] * (z[1] - b)) for a, b in front]
        else:
            g = [-(lam[0] * a + lam[1] * b) for a, b in front]
        best = min(g)
        hit.update(i for i, v in enumerate(g) if v == best)
    return sorted(hit)


@pytest.mark.parametrize("decomposition", ["tchebycheff", "weighted_sum"])
def test_hole_table_matches_a_scalar_computation(decomposition):
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 40):
        for _ in range(4):
            h1, h2 = np.cumsum(rng.random(n + 1) ** 3), np.cumsum(rng.exponential(size=n + 1))
            p = lotz(n, h1, h2)
            for N in (1, 3, n, 3 * n + 1):
                assert fixed_weight_optima(p, N, decomposition).tolist() == _hole_table_by_hand(p, N, decomposition)


@pytest.mark.parametrize("h", ["id", "square", "exp2"])
def test_hole_table_is_exact(h):
    """The table is computed in doubles (what the loops and pymoo use); for rational distortions it equals the
    table in exact arithmetic (weights j/N as Fractions), so no hole or reachable point is a rounding artefact."""
    from fractions import Fraction

    hf = {"id": lambda v: Fraction(v), "square": lambda v: Fraction(v * v), "exp2": lambda v: Fraction(2) ** v}[h]
    for n, N in ((30, 30), (30, 120), (64, 64), (64, 200)):
        front = [(hf(i), Fraction(n - i)) for i in range(n + 1)]
        z = (front[-1][0], front[0][1])
        for decomposition in ("tchebycheff", "weighted_sum"):
            hit = set()
            for j in range(N + 1):
                lam = (Fraction(j, N), 1 - Fraction(j, N))
                g = [max(lam[0] * (z[0] - a), lam[1] * (z[1] - b)) if decomposition == "tchebycheff"
                     else -(lam[0] * a + lam[1] * b) for a, b in front]
                best = min(g)
                hit.update(i for i, v in enumerate(g) if v == best)
            assert fixed_weight_optima(lotz(n, h), N, decomposition).tolist() == sorted(hit), (n, N, decomposition)
