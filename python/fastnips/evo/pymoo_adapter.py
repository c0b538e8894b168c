"""A :class:`~fastnips.evo.Problem` as a pymoo problem (pymoo is optional)."""

from __future__ import annotations

from .. import _optional
from .problems import Problem

__all__ = ["to_pymoo"]


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
    import numpy as np

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
