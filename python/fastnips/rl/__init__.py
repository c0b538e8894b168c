r"""Reinforcement learning from demonstrations and preferences, on exact tabular machinery.

* :class:`TabularMDP` -- finite-horizon or discounted; transitions dense ``(S, A, S)`` or sparse CSR
  ``(S * A, S)``; :func:`random_mdp`, :func:`gridworld` (walls, hazard cells).
* :func:`mce_partition_fh`, :func:`mce_occupancy_measures` -- finite-horizon soft (maximum-causal-entropy)
  value iteration and occupancies, imitation's API and conventions; :func:`soft_value_iteration` (discounted),
  :func:`state_action_occupancy`, :func:`sample_trajectories`.
* :class:`IRL` -- maximum-entropy IRL with the plain dual gradient, the local natural gradient, the
  geometry-aware update (convex interpolation toward :math:`\log\pi_E`) and the mirror-descent policy view;
  :mod:`fastnips.rl.fisher` holds the dual, the exact Fisher matrix and its geodesic averages.
* :func:`solve_cmdp`, :func:`cmdp_linprog` -- the entropy-regularised constrained MDP (primal-dual soft value
  iteration) and its exact LP limit; :class:`ConstrainedPbRL` -- reward and cost from Bradley-Terry
  preferences, with implicit hypergradients through the lower level.
"""

from __future__ import annotations

from .cmdp import CMDPSolution, InfeasibleConstraintError, cmdp_linprog, min_cost, solve_cmdp
from .envs import gridworld, random_mdp
from .fisher import Solution, averaged_fisher, dual_objective, fisher_matrix, fisher_vector_product, solve_soft
from .irl import IRL, IRLResult, empirical_occupancy, mirror_descent_step, target_reward
from .mdp import RL_BACKENDS, TabularMDP
from .pbrl import ConstrainedPbRL, PbRLResult, Preferences, synthetic_preferences, trajectory_features
from .soft import (
    mce_occupancy_measures,
    mce_partition_fh,
    sample_trajectories,
    soft_value_iteration,
    state_action_occupancy,
)

__all__ = [
    "IRL",
    "RL_BACKENDS",
    "CMDPSolution",
    "ConstrainedPbRL",
    "IRLResult",
    "InfeasibleConstraintError",
    "PbRLResult",
    "Preferences",
    "Solution",
    "TabularMDP",
    "averaged_fisher",
    "cmdp_linprog",
    "dual_objective",
    "empirical_occupancy",
    "fisher_matrix",
    "fisher_vector_product",
    "gridworld",
    "mce_occupancy_measures",
    "mce_partition_fh",
    "min_cost",
    "mirror_descent_step",
    "random_mdp",
    "sample_trajectories",
    "soft_value_iteration",
    "solve_cmdp",
    "solve_soft",
    "state_action_occupancy",
    "synthetic_preferences",
    "target_reward",
    "trajectory_features",
]
