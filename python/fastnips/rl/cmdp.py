r"""The entropy-regularised constrained MDP (the lower level of constrained PbRL) and its exact LP limit.

.. math:: \max_\pi\; J_r(\pi) + \tau \mathcal{H}(\pi) \quad \text{s.t.} \quad J_c(\pi) \le b, \qquad
          J_f(\pi) = \mathbb{E}\Big[\sum_t \gamma^t f(s_t, a_t)\Big] = \langle \rho_\pi, f \rangle

(discounted, causal entropy :math:`\mathcal{H}`). Its Lagrangian dual is one-dimensional and convex,
:math:`g(\lambda) = \mathbb{E}_{p_0}[V^{soft}_{r - \lambda c}] + \lambda b`, :math:`g'(\lambda) = b -
J_c(\pi_\lambda)`, :math:`g''(\lambda) = c^\top (\partial\rho/\partial r)\, c \ge 0`, where :math:`\pi_\lambda` is
the soft-optimal policy of :math:`r - \lambda c` (soft value iteration, warm-started). :func:`solve_cmdp` is this
primal-dual scheme with Newton steps on :math:`\lambda` (exact :math:`g''` by forward-mode differentiation),
safeguarded by bisection inside a bracket; it stops when :math:`|J_c - b| \le` ``tol`` (or :math:`\lambda = 0`
is optimal). Entropy keeps :math:`\pi_\lambda` unique and smooth in :math:`(r, c, \lambda)`, which is what
makes the implicit hypergradient of :mod:`fastnips.rl.pbrl` well defined.

Infeasibility is decided before any dual step: the least achievable cost :math:`\min_\pi J_c(\pi)` (hard value
iteration on :math:`-c`) above the budget raises :class:`InfeasibleConstraintError`. A budget equal to the
minimum is reachable only as :math:`\lambda \to \infty`; it is refused too, with the same message, once
:math:`\lambda` passes ``lambda_max``.

:func:`cmdp_linprog` solves the unregularised problem exactly as a linear program over occupancy measures
(``scipy.optimize.linprog``, HiGHS): the ground truth of the tests as :math:`\tau \to 0`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .fisher import Solution, _jvp_rho, solve_soft
from .mdp import TabularMDP, as_state_action, check_reward, check_temperature, p_times

__all__ = ["CMDPSolution", "InfeasibleConstraintError", "cmdp_linprog", "min_cost", "solve_cmdp"]


class InfeasibleConstraintError(ValueError):
    """The cost budget is below the least cost any policy achieves."""


@dataclass
class CMDPSolution:
    """What :func:`solve_cmdp` returns.

    Attributes
    ----------
    pi : ndarray (S, A)
    rho : ndarray (S, A)
        Discounted occupancy of ``pi``.
    lam : float
        The multiplier :math:`\\lambda^\\star \\ge 0`.
    reward_value, cost_value : float
        :math:`J_r(\\pi)`, :math:`J_c(\\pi)`.
    iterations : int
        Dual steps taken.
    sol : Solution
        The soft solution of :math:`r - \\lambda^\\star c` (for implicit differentiation).
    """

    pi: np.ndarray
    rho: np.ndarray
    lam: float
    reward_value: float
    cost_value: float
    iterations: int
    sol: Solution


def _check(mdp, reward, cost, budget):
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp: expected a fastnips.rl.TabularMDP, got {type(mdp).__name__}")
    if mdp.horizon is not None:
        raise ValueError("mdp: the constrained problem is solved for discounted MDPs (horizon=None)")
    S, A = mdp.n_states, mdp.action_dim
    r = as_state_action(check_reward(mdp.reward_matrix if reward is None else reward, S, A, "reward"), A)
    if cost is None and mdp.cost_matrix is None:
        raise ValueError("cost: the MDP has no cost_matrix; pass cost=")
    c = as_state_action(check_reward(mdp.cost_matrix if cost is None else cost, S, A, "cost"), A)
    if isinstance(budget, bool) or not isinstance(budget, int | float | np.floating) or not np.isfinite(budget):
        raise ValueError(f"budget: expected a finite number, got {budget!r}")
    return r, c, float(budget)


def min_cost(mdp: TabularMDP, cost: np.ndarray | None = None, *, tol: float = 1e-12) -> float:
    r"""The least achievable discounted cost :math:`\min_\pi \mathbb{E}_{p_0}[\sum_t \gamma^t c]` (value iteration).

    Parameters
    ----------
    mdp : TabularMDP
        Discounted.
    cost : ndarray (S,) or (S, A), optional
        Default ``mdp.cost_matrix``.
    tol : float, default 1e-12

    Returns
    -------
    float
    """
    _, c, _ = _check(mdp, None, cost, 0.0)
    g = mdp.discount
    W = np.zeros(mdp.n_states)
    for _ in range(100_000):
        new = (c + g * p_times(mdp, W)).min(1)
        done = np.abs(new - W).max() <= tol * (1 - g) / g
        W = new
        if done:
            break
    return float(mdp.initial_state_dist @ W)


def solve_cmdp(mdp: TabularMDP, *, reward: np.ndarray | None = None, cost: np.ndarray | None = None,
               budget: float, temperature: float = 1.0, tol: float = 1e-10, max_iter: int = 200,
               lambda_max: float = 1e8, lam0: float | None = None, backend: str = "auto") -> CMDPSolution:
    r"""Solve the entropy-regularised constrained MDP by primal-dual soft value iteration (module docstring).

    Parameters
    ----------
    mdp : TabularMDP
        Discounted (``horizon=None``).
    reward, cost : ndarray (S,) or (S, A), optional
        Default ``mdp.reward_matrix`` and ``mdp.cost_matrix``.
    budget : float
        :math:`b` in :math:`J_c(\pi) \le b`.
    temperature : float, default 1.0
        :math:`\tau > 0`.
    tol : float, default 1e-10
        On :math:`|J_c - b|` when the constraint is active.
    max_iter : int, default 200
        Dual steps.
    lambda_max : float, default 1e8
    lam0 : float, optional
        Warm start of the multiplier (e.g. the previous outer iteration's).
    backend : {"auto", "reference", "cpp"}
        Of the soft value iterations.

    Returns
    -------
    CMDPSolution

    Raises
    ------
    InfeasibleConstraintError
        (a ValueError) when no policy meets the budget.

    Examples
    --------
    >>> from fastnips.rl import gridworld
    >>> from fastnips.rl.cmdp import solve_cmdp
    >>> mdp = gridworld(4, 4, hazards=[(1, 1), (2, 2), (1, 2)], discount=0.9)
    >>> out = solve_cmdp(mdp, budget=0.05, temperature=0.1)
    >>> bool(out.cost_value <= 0.05 + 1e-9), out.lam > 0
    (True, True)
    """
    r, c, b = _check(mdp, reward, cost, budget)
    tau = check_temperature(temperature)
    c_min = min_cost(mdp, c)
    if b < c_min - 1e-12 * max(1.0, abs(c_min)):
        raise InfeasibleConstraintError(f"budget: the constraint is infeasible: the least cost any policy achieves "
                                        f"is {c_min:.6g} > budget {b:.6g}")

    def at(lam, V0=None):
        sol = solve_soft(mdp, r - lam * c, temperature=tau, backend=backend, V0=V0)
        return sol, float((sol.rho * c).sum())

    lam = 0.0 if lam0 is None else max(0.0, float(lam0))
    sol, Jc = at(lam)
    if lam > 0 and Jc < b - tol:  # the warm start may be too high: is lambda = 0 optimal?
        sol0, Jc0 = at(0.0, sol.V)
        if Jc0 <= b + tol:
            lam, sol, Jc = 0.0, sol0, Jc0
    lo, hi, it = 0.0, np.inf, 0
    while abs(Jc - b) > tol and not (lam == 0.0 and Jc <= b):
        if it == max_iter:
            warnings.warn(f"solve_cmdp: |J_c - b| = {abs(Jc - b):.3g} > tol after {max_iter} dual steps",
                          RuntimeWarning, stacklevel=2)
            break
        it += 1
        # Newton on the convex dual: h(lam) = Jc - b is non-increasing, h'(lam) = -c.J.c (exact)
        slope = float((_jvp_rho(mdp, sol, c[:, :, None], tau)[:, :, 0] * c).sum())
        if Jc > b:
            lo = lam
        else:
            hi = lam
        step = lam + (Jc - b) / max(slope, 1e-300)
        if hi == np.inf:
            step = min(step, 10 * lo + 1.0)  # expand the bracket geometrically at most
        lam = step if lo < step < hi else (lo + hi) / 2
        if lam > lambda_max:
            raise InfeasibleConstraintError(
                f"budget: the constraint is infeasible at this temperature: {b:.6g} is reached only as "
                f"lambda -> infinity (the least achievable cost is {c_min:.6g})")
        sol, Jc = at(lam, sol.V)
    return CMDPSolution(sol.pi, sol.rho, lam, float((sol.rho * r).sum()), Jc, it, sol)


def cmdp_linprog(mdp: TabularMDP, *, reward: np.ndarray | None = None, cost: np.ndarray | None = None,
                 budget: float) -> tuple[float, float, np.ndarray]:
    r"""The unregularised constrained MDP as a linear program over discounted occupancy measures.

    .. math:: \max_{\rho \ge 0} \langle \rho, r\rangle \;\text{s.t.}\; \sum_a \rho(s', a) - \gamma \sum_{s,a}
              P(s'|s,a)\rho(s,a) = p_0(s')\;\forall s', \quad \langle \rho, c \rangle \le b

    Parameters
    ----------
    mdp : TabularMDP
        Discounted.
    reward, cost : ndarray (S,) or (S, A), optional
    budget : float

    Returns
    -------
    reward_value : float
    cost_value : float
    rho : ndarray (S, A)

    Raises
    ------
    InfeasibleConstraintError
        When the LP is infeasible.
    """
    r, c, b = _check(mdp, reward, cost, budget)
    S, A = mdp.n_states, mdp.action_dim
    E = sp.csr_matrix((np.ones(S * A), (np.repeat(np.arange(S), A), np.arange(S * A))), shape=(S, S * A))
    A_eq = E - mdp.discount * mdp.transitions_csr.T
    res = linprog(-r.ravel(), A_ub=c.reshape(1, -1), b_ub=[b], A_eq=A_eq, b_eq=mdp.initial_state_dist,
                  bounds=(0, None), method="highs")
    if res.status == 2:
        raise InfeasibleConstraintError(f"budget: the constraint is infeasible (LP): no occupancy has cost <= {b:.6g}")
    if res.status != 0:
        raise RuntimeError(f"cmdp_linprog: HiGHS failed: {res.message}")
    rho = res.x.reshape(S, A)
    return float(rho.ravel() @ r.ravel()), float(rho.ravel() @ c.ravel()), rho
