"""The pymoo adapter and a differential test against pymoo's MOEAD (skipped where pymoo is not installed)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.evo import MOEAD, fixed_weight_optima, lotz, one_min_max, run, to_pymoo

pytest.importorskip("pymoo", reason="pymoo is not installed (pip install pymoo): the peer of fastnips.evo")


@pytest.mark.parametrize("problem", [lotz(9, "exp2", "exp3"), one_min_max(7, "square"), lotz(1)], ids=str)
def test_adapter_matches_the_problem(problem):
    rng = np.random.default_rng(0)
    X = rng.random((200, problem.n)) < rng.random((200, 1))  # strings of every density
    X[0], X[1] = True, False
    F = to_pymoo(problem).evaluate(X)
    expected = -np.array([problem.evaluate(x.astype(int)) for x in X])
    np.testing.assert_array_equal(F, expected)


def _pymoo_moead(problem, n_neighbors: int, budget: int, seed: int):
    from pymoo.algorithms.moo.moead import MOEAD as PymooMOEAD
    from pymoo.decomposition.tchebicheff import Tchebicheff
    from pymoo.operators.crossover.pntx import TwoPointCrossover
    from pymoo.operators.mutation.bitflip import BitflipMutation
    from pymoo.operators.sampling.rnd import BinaryRandomSampling
    from pymoo.optimize import minimize
    from pymoo.util.ref_dirs import get_reference_directions

    n = problem.n
    algo = PymooMOEAD(ref_dirs=get_reference_directions("uniform", 2, n_partitions=n), n_neighbors=n_neighbors,
                      decomposition=Tchebicheff(), prob_neighbor_mating=1.0, sampling=BinaryRandomSampling(),
                      crossover=TwoPointCrossover(prob=0.0),  # mutation only, as in fastnips' MOEAD
                      mutation=BitflipMutation(prob=1.0, prob_var=1.0 / n))
    res = minimize(to_pymoo(problem), algo, ("n_eval", budget), seed=seed)
    return -res.algorithm.pop.get("F")


@pytest.mark.parametrize(("problem", "expected"), [(lotz(6, "square"), [0, 4, 5, 6]),
                                                   (lotz(8, "exp3"), [0, 1, 3, 5, 7, 8])], ids=str)
def test_classic_moead_agrees_with_pymoo(problem, expected):
    """Both populations end on the fixed-weight Tchebycheff optima (N = n, T = 3, 2000 evaluations): pymoo's
    MOEAD (its own RNG, random visiting order, strict replacement) and fastnips' classic MOEA/D."""
    F = _pymoo_moead(problem, 3, 2000, seed=1)
    front = problem.front()
    on_front = [int(np.flatnonzero((front == f).all(axis=1))[0]) for f in F if (front == f).all(axis=1).any()]
    assert len(on_front) == problem.n + 1  # every subproblem of pymoo holds a Pareto point
    assert sorted(set(on_front)) == expected == fixed_weight_optima(problem).tolist()
    ours = run(problem, MOEAD(n_neighbors=3), 2000, 1, stop_on_full=False)
    assert np.flatnonzero(ours.final_population).tolist() == expected


def test_adapter_refuses_non_problems():
    with pytest.raises(TypeError, match=r"problem must be a fastnips\.evo Problem"):
        to_pymoo("lotz")
