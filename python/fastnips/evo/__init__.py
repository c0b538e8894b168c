"""Evolutionary multi-objective optimisation: classic and self-adjusting MOEA/D on monotone distortions of
LOTZ (paper 9 of the table in README.md: a self-adjusting decomposition with an O(n^4) runtime guarantee).

* :func:`lotz`, :func:`one_min_max` -- the bi-objective benchmarks under monotone distortions
  (:data:`DISTORTIONS`, or any strictly increasing map);
* :class:`MOEAD` -- classic MOEA/D with fixed uniform Tchebycheff or weighted-sum weights, optional external
  archive; :class:`SelfAdjustingMOEAD` -- subproblems rebuilt from the front found so far;
* :func:`run` -- one run, the whole loop in C++ (``backend="cpp"``) or in readable Python (``"reference"``),
  returning the coverage of the front over time (:class:`RunResult`);
* :func:`fixed_weight_optima` -- the Pareto points fixed weights can reach (the holes of the front);
* :func:`to_pymoo` -- the problem as a pymoo ``Problem``; :func:`pymoo_moead` -- pymoo's MOEAD set up like
  :class:`MOEAD` (the peer of the tests and benchmarks).

:mod:`fastnips.evo.reference` holds the readable loops, the oracle of the native core.
"""

from ._run import EVO_BACKENDS, run
from .algorithms import MOEAD, RunResult, SelfAdjustingMOEAD
from .problems import DISTORTIONS, Problem, distortion_table, fixed_weight_optima, lotz, one_min_max, uniform_weights
from .pymoo_adapter import pymoo_moead, to_pymoo

__all__ = ["DISTORTIONS", "EVO_BACKENDS", "MOEAD", "Problem", "RunResult", "SelfAdjustingMOEAD", "distortion_table",
           "fixed_weight_optima", "lotz", "one_min_max", "pymoo_moead", "run", "to_pymoo",
           "uniform_weights"]
