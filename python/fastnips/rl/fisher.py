r"""The geometry of maximum-causal-entropy IRL: the dual, its gradient, the Fisher matrix and its averages.

For a reward :math:`r_\theta = \Phi\theta` (features :math:`\Phi`, shape (S, A, d); tabular rewards are
:math:`\Phi = I`), the dual of maximum-causal-entropy IRL is

.. math:: L(\theta) = \mathbb{E}_{p_0}[V^\theta_0] - \theta^\top \mu_E, \qquad
          \nabla L = \mu(\theta) - \mu_E, \qquad \nabla^2 L = F(\theta),

with :math:`\mu(\theta) = \sum_{s,a} \rho_\theta(s,a) \phi(s,a)` the (discounted) feature expectation of the
soft-optimal policy and :math:`F` the Fisher matrix, i.e. :math:`\Phi^\top J \Phi` with :math:`J = \partial\rho /
\partial r` (times :math:`1/\tau` at temperature :math:`\tau`). :math:`F` is symmetric PSD; it is computed here
exactly, by forward-mode differentiation of the soft backward pass and of the occupancy forward pass (finite
horizon: unrolled; discounted: two sparse LU solves with :math:`I - \gamma P_\pi`), ``k`` directions at a time.

**The interpolation identity.** Along the reward line :math:`\theta_t = \theta + t(\theta^\star - \theta)`,
:math:`\bar F_e (\theta^\star - \theta) = \mu(\theta^\star) - \mu(\theta)` with
:math:`\bar F_e = \int_0^1 F(\theta_t)\,dt` (fundamental theorem of calculus), so if :math:`\mu(\theta^\star) =
\mu_E`, :math:`\theta - \eta \bar F_e^{-1} \nabla L(\theta) = (1-\eta)\theta + \eta\theta^\star` exactly. Along the
occupancy line :math:`\mu_t = \mu(\theta) + t(\mu_E - \mu(\theta))`,
:math:`\theta^\star - \theta = [\int_0^1 F(\theta(\mu_t))^{-1} dt](\mu_E - \mu(\theta))` (:math:`\theta(\mu_t)` is
found by Newton's method on the dual with target :math:`\mu_t`). In information-geometric terms the reward line
is the *e*-geodesic and the occupancy line the *m*-geodesic (the abstract of the paper calls the occupancy line
the e-geodesic; both are implemented). Integrals use Gauss-Legendre quadrature (``n_quad`` nodes).

**Gauge.** Tabular rewards are shaping-invariant, so :math:`F` is singular; inverses here are Moore-Penrose
pseudo-inverses (eigenvalues below ``1e-10`` times the largest are dropped), so identities hold modulo the null
space, i.e. for the policies and occupancies the rewards induce.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .mdp import TabularMDP, p_times, pt_times
from .soft import _forward, mce_partition_fh, soft_value_iteration, state_action_occupancy

__all__ = ["Solution", "averaged_fisher", "dual_objective", "fisher_matrix", "fisher_vector_product",
           "pinv_solve", "solve_soft"]

PINV_RCOND = 1e-10


@dataclass
class Solution:
    """The soft-optimal policy of one reward and what the IRL geometry needs of it.

    Attributes
    ----------
    pi : ndarray (H, S, A) or (S, A)
    rho : ndarray (S, A)
        Discounted state-action occupancy (the gradient of ``value`` w.r.t. the reward).
    value : float
        :math:`\\mathbb{E}_{p_0}[V_0]`.
    D : ndarray (H + 1, S) or (S,)
        State occupancy per step (finite horizon) or the discounted state occupancy.
    V : ndarray (S,) or None
        The soft value (discounted; a warm start for the next solve).
    """

    pi: np.ndarray
    rho: np.ndarray
    value: float
    D: np.ndarray
    V: np.ndarray | None = None


def solve_soft(mdp: TabularMDP, reward: np.ndarray, *, temperature: float = 1.0, V0: np.ndarray | None = None,
               backend: str = "auto") -> Solution:
    """Soft-optimal policy, occupancy and value of ``reward`` (finite horizon or discounted, by the MDP).

    Parameters
    ----------
    mdp : TabularMDP
    reward : ndarray (S,) or (S, A)
    temperature : float, default 1.0
    V0 : ndarray (S,), optional
        Warm start of discounted value iteration.
    backend : {"auto", "reference", "cpp"}

    Returns
    -------
    Solution
    """
    if mdp.horizon is not None:
        V, _, pi = mce_partition_fh(mdp, reward=reward, temperature=temperature, backend=backend)
        D = _forward(mdp, pi)
        rho = np.einsum("t,ts,tsa->sa", mdp.discount ** np.arange(mdp.horizon), D[:-1], pi)
        return Solution(pi, rho, float(mdp.initial_state_dist @ V[0]), D)
    V, _, pi = soft_value_iteration(mdp, reward=reward, temperature=temperature, tol=1e-12, V0=V0, backend=backend)
    rho = state_action_occupancy(mdp, pi, backend=backend)
    return Solution(pi, rho, float(mdp.initial_state_dist @ V), rho.sum(1), V)


def _lu_pair(mdp: TabularMDP, pi: np.ndarray):
    """A sparse LU of I - gamma P_pi, P_pi[s, s'] = sum_a pi(a|s) P(s'|s, a)."""
    S, A = pi.shape
    Pi = sp.csr_matrix((pi.ravel(), (np.repeat(np.arange(S), A), np.arange(S * A))), shape=(S, S * A))
    M = sp.identity(S, format="csc") - mdp.discount * (Pi @ mdp.transitions_csr).tocsc()
    return spla.splu(M.tocsc())


def _jvp_rho(mdp: TabularMDP, sol: Solution, U: np.ndarray, tau: float) -> np.ndarray:
    """d rho / d r applied to reward directions U of shape (S, A, k)."""
    g = mdp.discount
    if mdp.horizon is not None:
        H = mdp.horizon
        pi, D = sol.pi, sol.D
        dpi = np.empty((H, *U.shape))
        dV = None
        for t in reversed(range(H)):
            dQ = U if t == H - 1 else U + g * p_times(mdp, dV)
            dV = np.einsum("sa,sak->sk", pi[t], dQ)
            dpi[t] = pi[t][:, :, None] * (dQ - dV[:, None, :]) / tau
        dD = np.zeros((mdp.n_states, U.shape[2]))
        out = np.zeros(U.shape)
        for t in range(H):
            dx = dD[:, None, :] * pi[t][:, :, None] + D[t][:, None, None] * dpi[t]
            out += g**t * dx
            dD = pt_times(mdp, dx)
        return out
    pi, rho_s = sol.pi, sol.D
    lu = _lu_pair(mdp, pi)
    dV = lu.solve(np.einsum("sa,sak->sk", pi, U))
    dQ = U + g * p_times(mdp, dV)
    dpi = pi[:, :, None] * (dQ - dV[:, None, :]) / tau
    drho_s = lu.solve(g * pt_times(mdp, rho_s[:, None, None] * dpi), trans="T")
    return drho_s[:, None, :] * pi[:, :, None] + rho_s[:, None, None] * dpi


def fisher_vector_product(mdp: TabularMDP, sol: Solution, features: np.ndarray, V: np.ndarray, *,
                          temperature: float = 1.0) -> np.ndarray:
    r""":math:`F(\theta) V = \Phi^\top (\partial\rho/\partial r) \Phi V`, exactly, for ``k`` directions at once.

    Parameters
    ----------
    mdp : TabularMDP
    sol : Solution
        :func:`solve_soft` at :math:`r_\theta`.
    features : ndarray (S, A, d)
    V : ndarray (d,) or (d, k)
    temperature : float, default 1.0

    Returns
    -------
    ndarray (d,) or (d, k)
    """
    V = np.asarray(V, dtype=np.float64)
    W = V[:, None] if V.ndim == 1 else V
    U = np.einsum("sad,dk->sak", features, W)
    out = np.einsum("sad,sak->dk", features, _jvp_rho(mdp, sol, U, temperature))
    return out[:, 0] if V.ndim == 1 else out


def fisher_matrix(mdp: TabularMDP, theta: np.ndarray, features: np.ndarray, *, temperature: float = 1.0,
                  sol: Solution | None = None) -> np.ndarray:
    r"""The Fisher matrix :math:`F(\theta) = \nabla^2 L(\theta)` (d x d, symmetric PSD), exactly.

    Parameters
    ----------
    mdp : TabularMDP
    theta : ndarray (d,)
    features : ndarray (S, A, d)
    temperature : float, default 1.0
    sol : Solution, optional
        :func:`solve_soft` at :math:`\Phi\theta`, if already computed.

    Returns
    -------
    ndarray (d, d)
    """
    if sol is None:
        sol = solve_soft(mdp, features @ theta, temperature=temperature)
    F = fisher_vector_product(mdp, sol, features, np.eye(features.shape[2]), temperature=temperature)
    return (F + F.T) / 2


def dual_objective(mdp: TabularMDP, theta: np.ndarray, features: np.ndarray, mu_E: np.ndarray, *,
                   temperature: float = 1.0) -> tuple[float, np.ndarray, Solution]:
    r"""The MCE-IRL dual :math:`L(\theta) = \mathbb{E}_{p_0}[V_0^\theta] - \theta^\top\mu_E` and its gradient
    :math:`\mu(\theta) - \mu_E`.

    Parameters
    ----------
    mdp : TabularMDP
    theta : ndarray (d,)
    features : ndarray (S, A, d)
    mu_E : ndarray (d,)
        Expert feature expectation.
    temperature : float, default 1.0

    Returns
    -------
    value : float
    grad : ndarray (d,)
    sol : Solution
    """
    sol = solve_soft(mdp, features @ theta, temperature=temperature)
    mu = np.einsum("sa,sad->d", sol.rho, features)
    return sol.value - float(theta @ mu_E), mu - mu_E, sol


def pinv_solve(F: np.ndarray, g: np.ndarray) -> np.ndarray:
    """:math:`F^+ g` for a symmetric PSD ``F`` (eigenvalues below ``1e-10`` of the largest dropped).

    Parameters
    ----------
    F : ndarray (d, d)
    g : ndarray (d,)

    Returns
    -------
    ndarray (d,)
    """
    w, Q = np.linalg.eigh(F)
    keep = w > PINV_RCOND * max(w.max(), 0.0)
    return Q[:, keep] @ ((Q[:, keep].T @ g) / w[keep])


def _theta_of_mu(mdp, features, mu_target, theta0, temperature, iters: int = 50, tol: float = 1e-13):
    """theta with mu(theta) = mu_target by Newton's method on the dual (minimum-norm steps)."""
    theta = theta0.copy()
    for _ in range(iters):
        _, grad, sol = dual_objective(mdp, theta, features, mu_target, temperature=temperature)
        if np.abs(grad).max() <= tol * max(1.0, np.abs(mu_target).max()):
            break
        theta = theta - pinv_solve(fisher_matrix(mdp, theta, features, temperature=temperature, sol=sol), grad)
    return theta


def averaged_fisher(mdp: TabularMDP, theta: np.ndarray, features: np.ndarray, *, theta_target: np.ndarray | None = None,
                    mu_target: np.ndarray | None = None, line: str = "e", n_quad: int = 32,
                    temperature: float = 1.0) -> np.ndarray:
    r"""The average Fisher of the geometry-aware step, along the reward line or the occupancy line.

    ``line="e"``: :math:`\bar F_e = \int_0^1 F(\theta + t(\theta^\star - \theta))\,dt` (needs ``theta_target``);
    the step :math:`\theta - \eta \bar F_e^{+} \nabla L` is returned as :math:`\bar F_e`.
    ``line="m"``: :math:`\bar G_m = \int_0^1 F(\theta(\mu_t))^{+}\,dt`, :math:`\mu_t = \mu(\theta) + t(\mu^\star
    - \mu(\theta))` (needs ``mu_target``); the step is :math:`\theta - \eta \bar G_m \nabla L`, so this returns the
    already-inverted average. See the module docstring for the identities.

    Parameters
    ----------
    mdp : TabularMDP
    theta : ndarray (d,)
    features : ndarray (S, A, d)
    theta_target : ndarray (d,), optional
    mu_target : ndarray (d,), optional
    line : {"e", "m"}
    n_quad : int, default 32
        Gauss-Legendre nodes on [0, 1].
    temperature : float, default 1.0

    Returns
    -------
    ndarray (d, d)
        :math:`\bar F_e` for ``"e"``, :math:`\bar G_m` (an inverse-Fisher average) for ``"m"``.
    """
    x, w = np.polynomial.legendre.leggauss(int(n_quad))
    ts, ws = (x + 1) / 2, w / 2
    d = features.shape[2]
    out = np.zeros((d, d))
    if line == "e":
        if theta_target is None:
            raise ValueError("theta_target: needed for line='e'")
        for t, wt in zip(ts, ws, strict=True):
            out += wt * fisher_matrix(mdp, theta + t * (theta_target - theta), features, temperature=temperature)
        return out
    if line != "m":
        raise ValueError(f"line: expected 'e' or 'm', got {line!r}")
    if mu_target is None:
        raise ValueError("mu_target: needed for line='m'")
    sol = solve_soft(mdp, features @ theta, temperature=temperature)
    mu0 = np.einsum("sa,sad->d", sol.rho, features)
    th = theta.copy()
    for t, wt in sorted(zip(ts, ws, strict=True)):
        th = _theta_of_mu(mdp, features, mu0 + t * (mu_target - mu0), th, temperature)
        F = fisher_matrix(mdp, th, features, temperature=temperature)
        out += wt * np.column_stack([pinv_solve(F, e) for e in np.eye(d)])
    return out
