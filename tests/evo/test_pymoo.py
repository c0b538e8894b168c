"""The pymoo adapter and a differential test against pymoo's MOEAD (skipped where pymoo is not installed)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.evo import MOEAD, fixed_weight_optima, lotz, one_min_max, pymoo_moead, run, to_pymoo

pytest.importorskip("pymoo", reason="pymoo is not installed (pip install pymoo): the peer of fastnips.evo")


@pytest.mark.parametrize("problem", [lotz(9, "exp2", "exp3"), one_min_max(7, "square"), lotz(1)], ids=str)
def test_adapter_matches_the_problem(problem):
    rng = np.random.default_rng(0)
    X = rng.random((200, problem.n)) < rng.random((200, 1))  # strings of every density
    X[0], X[1] = True, False
    F = to_pymoo(problem).evaluate(X)
    expected = -np.array([problem.evaluate(x.astype(int)) for x in X])
    np.testing.assert_array_equal(F, expected)


@pytest.mark.parametrize(("problem", "expected"), [(lotz(6, "square"), [0, 4, 5, 6]),
                                                   (lotz(8, "exp3"), [0, 1, 3, 5, 7, 8])], ids=str)
def test_classic_moead_agrees_with_pymoo(problem, expected):
    """Both populations end on the fixed-weight Tchebycheff optima (N = n, T = 3, 2000 evaluations): pymoo's
    MOEAD (its own RNG, random visiting order, strict replacement) and fastnips' classic MOEA/D."""
    F = pymoo_moead(problem, 2000, seed=1, n_neighbors=3)
    assert F.shape == (problem.n + 1, 2)
    assert all(problem.front_points(f) for f in F)  # every subproblem of pymoo holds a Pareto point
    assert problem.front_points(F) == expected == fixed_weight_optima(problem).tolist()
    ours = run(problem, MOEAD(n_neighbors=3), 2000, 1, stop_on_full=False)
    assert np.flatnonzero(ours.final_population).tolist() == expected


def test_adapter_refuses_non_problems():
    with pytest.raises(TypeError, match=r"problem must be a fastnips\.evo Problem"):
        to_pymoo("lotz")


def test_front_points():
    p = lotz(3, "square")
    F = np.array([[0, 3], [9, 0], [1, 1], [4, 1], [9, 0]])  # (1, 1) is off the front
    assert p.front_points(F) == [0, 2, 3]


@pytest.mark.parametrize(("kwargs", "err", "match"), [
    ({"budget": 0}, ValueError, "budget must be an int >= 1"),
    ({"budget": 2.5}, ValueError, "budget must be an int >= 1"),
    ({"n_neighbors": 0}, ValueError, "n_neighbors must be an int >= 1"),
    ({"seed": -1}, ValueError, "seed must be an int >= 0"),
])
def test_pymoo_moead_refuses_bad_arguments(kwargs, err, match):
    """budget=0 used to end in a ZeroDivisionError inside pymoo, n_neighbors=0 in numpy's 'a cannot be empty'."""
    args = {"budget": 100, "seed": 0, **kwargs}
    with pytest.raises(err, match=match):
        pymoo_moead(lotz(4), args.pop("budget"), args.pop("seed"), **args)
