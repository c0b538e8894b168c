"""A :class:`~fastnips.evo.Problem` as a pymoo problem (pymoo is optional)."""

from __future__ import annotations

import numpy as np

from .. import _optional
from .problems import Problem

__all__ = ["pymoo_moead", "to_pymoo"]


def to_pymoo(problem: Problem):
    """The problem as a pymoo ``Problem`` on n binary variables with F = (-f1, -f2) (pymoo minimises).

    Vectorised: ``_evaluate`` takes the whole population (pop_size, n) at once; boolean or 0/1 rows.

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    pymoo.core.problem.Problem

    Raises
    ------
    ImportError
        When pymoo is not installed (``pip install pymoo``).

    Examples
    --------
    >>> from fastnips.evo import lotz, to_pymoo
    >>> pp = to_pymoo(lotz(8))                          # doctest: +SKIP
    >>> pp.evaluate(np.ones((1, 8), dtype=bool))        # doctest: +SKIP
    array([[-8., -0.]])
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fastnips.evo Problem, got {type(problem).__name__}")
    _optional.require("pymoo")  # an ImportError saying "pip install pymoo" where it is missing
    from pymoo.core.problem import Problem as PymooProblem
    n, h1, h2 = problem.n, problem.h1, problem.h2

    def raw(X) -> tuple[np.ndarray, np.ndarray]:
        B = np.asarray(X).astype(bool)
        if problem.kind == "oneminmax":
            ones = B.sum(axis=1)
            return n - ones, ones
        lo = np.where(B.all(axis=1), n, np.argmin(B, axis=1))
        tz = np.where(~B.any(axis=1), n, np.argmax(B[:, ::-1], axis=1))
        return lo, tz

    class _Distorted(PymooProblem):
        def __init__(self):
            super().__init__(n_var=n, n_obj=2, xl=0, xu=1, vtype=bool)

        def _evaluate(self, X, out, *args, **kwargs):
            r1, r2 = raw(X)
            out["F"] = np.column_stack([-h1[r1], -h2[r2]])

    return _Distorted()


def pymoo_moead(problem: Problem, budget: int, seed: int = 0, *, n_neighbors: int = 20):
    """Run pymoo's MOEAD configured like :class:`~fastnips.evo.MOEAD`: N = n uniform weights, Tchebycheff,
    mutation only (bit flips with rate 1/n; two-point crossover with probability 0), parents from the
    neighbourhood. pymoo still differs in its random visiting order and in replacing only on strict improvement.

    Parameters
    ----------
    problem : Problem
    budget : int
        Evaluations (pymoo's ``("n_eval", budget)``).
    seed : int
        pymoo's seed.
    n_neighbors : int
        T (pymoo's default 20), capped at n + 1.

    Returns
    -------
    numpy.ndarray
        The final population's objective vectors f (maximised), shape (n + 1, 2).

    Examples
    --------
    >>> F = pymoo_moead(lotz(6, "square"), 2000, seed=1, n_neighbors=3)   # doctest: +SKIP
    >>> lotz(6, "square").front_points(F)                                   # doctest: +SKIP
    [0, 4, 5, 6]
    """
    for name, v, low in (("budget", budget, 1), ("seed", seed, 0), ("n_neighbors", n_neighbors, 1)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
    pp = to_pymoo(problem)
    from pymoo.algorithms.moo.moead import MOEAD as PymooMOEAD
    from pymoo.decomposition.tchebicheff import Tchebicheff
    from pymoo.operators.crossover.pntx import TwoPointCrossover
    from pymoo.operators.mutation.bitflip import BitflipMutation
    from pymoo.operators.sampling.rnd import BinaryRandomSampling
    from pymoo.optimize import minimize
    from pymoo.util.ref_dirs import get_reference_directions

    n = problem.n
    algo = PymooMOEAD(ref_dirs=get_reference_directions("uniform", 2, n_partitions=n),
                      n_neighbors=min(n_neighbors, n + 1), decomposition=Tchebicheff(), prob_neighbor_mating=1.0,
                      sampling=BinaryRandomSampling(), crossover=TwoPointCrossover(prob=0.0),
                      mutation=BitflipMutation(prob=1.0, prob_var=1.0 / n))
    res = minimize(pp, algo, ("n_eval", int(budget)), seed=int(seed))
    return -res.algorithm.pop.get("F")
