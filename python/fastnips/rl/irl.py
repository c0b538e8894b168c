r"""Maximum-causal-entropy IRL with geometry-aware updates: the :class:`IRL` trainer.

Four update rules for the dual :math:`L(\theta) = \mathbb{E}_{p_0}[V^\theta_0] - \theta^\top\mu_E`
(:mod:`fastnips.rl.fisher`):

* ``"gradient"`` (a): :math:`\theta \leftarrow \theta - \alpha (\mu(\theta) - \mu_E)`, the plain dual gradient
  (Ziebart 2010; imitation's MCE-IRL), step :math:`\alpha` = ``lr`` (default :math:`1/\lambda_{max}(F(\theta_0))`).
* ``"natural"`` (b): :math:`\theta \leftarrow \theta - \eta F(\theta)^{+} \nabla L` with the *local* Fisher.
  (a) and (b) halve their step until the dual decreases (Armijo); without that, (b) diverges from far starts on
  gridworlds, because the local Fisher badly underestimates the curvature along the path (a choice the paper
  leaves open; it makes the baselines stronger, and their extra solves count in the wall time).
* ``"geometric"`` (c): :math:`\theta \leftarrow (1-\eta)\theta + \eta\theta^\star` -- the natural step with the
  Fisher *averaged along the geodesic* to the target, which is exactly this convex interpolation (the identity
  of :mod:`fastnips.rl.fisher`, tested both for the reward-line and the occupancy-line average). It needs no
  Fisher at all, so it costs one soft solve per iteration, like (a).
* ``"mirror"`` (d): the policy-side view, :math:`\pi_{k+1} \propto \pi_k^{1-\eta}\pi_E^{\eta}` per state (one
  entropic mirror-descent step), with reward :math:`\log \pi_{k+1}`. In a bandit this *is* (c) (tested exactly);
  in an MDP the two differ by the future soft values in Q, so (d) is the "approximate entropic MD" reading.

**Target reward.** With tabular rewards :math:`r^\star = \tau \log \pi_E`, :math:`\pi_E(a|s) = \rho_E(s,a) /
\sum_{a'} \rho_E(s,a')`, makes :math:`\pi_E` soft-optimal with :math:`V \equiv 0` (discounted MDPs; exact, so
(c) converges to the expert's occupancy, geometrically at rate :math:`1-\eta`). Choices the paper leaves open:
states the expert never visits get the uniform policy, and :math:`\rho_E` is smoothed by ``smoothing`` (times
the mean visited mass) so that empirical occupancies with zero counts give finite targets. With a finite
horizon the expert policy is time-dependent but :math:`\rho_E` only gives its time average, so :math:`r^\star`
is then an approximation (stated in the history: the gap stalls). With linear features the target is the
:math:`\rho_E`-weighted least-squares projection of :math:`\tau \log\pi_E` on the features (exact when it lies in
their span).

**Gauge.** Tabular rewards are determined only up to potential shaping, so :math:`F` is singular; (b) uses the
pseudo-inverse (minimum-norm steps) and rewards should be compared through their policies or occupancies.

**History** per iteration: the dual objective, the feature gap :math:`\|\mu(\theta) - \mu_E\|_1 / \|\mu_E\|_1`,
the expert-occupancy-weighted KL between the state-conditional action distributions of :math:`\rho_E` and
:math:`\rho_\theta`, and the wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .fisher import Solution, dual_objective, fisher_matrix, pinv_solve
from .mdp import TabularMDP, check_temperature

__all__ = ["IRL", "METHODS", "IRLResult", "empirical_occupancy", "mirror_descent_step", "target_reward"]

METHODS = ("gradient", "natural", "geometric", "mirror")


@dataclass
class IRLResult:
    """What :meth:`IRL.fit` returns.

    Attributes
    ----------
    reward : ndarray (S, A)
    theta : ndarray (d,)
        Reward weights (the flattened reward for tabular rewards).
    policy : ndarray (H, S, A) or (S, A)
    occupancy : ndarray (S, A)
    history : dict of ndarray
        ``dual``, ``feature_gap``, ``kl``, ``seconds`` per iteration (entry 0 is the start).
    converged : bool
        Whether ``feature_gap <= tol`` was reached.
    """

    reward: np.ndarray
    theta: np.ndarray
    policy: np.ndarray
    occupancy: np.ndarray
    history: dict = field(default_factory=dict)
    converged: bool = False


def _check_eta(eta) -> float:
    if isinstance(eta, bool) or not isinstance(eta, int | float | np.floating) or not 0.0 < eta <= 1.0:
        raise ValueError(f"eta: expected a step in (0, 1], got {eta!r}")
    return float(eta)


def empirical_occupancy(mdp: TabularMDP, obs: np.ndarray, acts: np.ndarray) -> np.ndarray:
    r"""Empirical discounted state-action occupancy of demonstrations: :math:`\frac1n \sum_i \sum_{t<T}
    \gamma^t [s^i_t = s, a^i_t = a]` (:math:`T \le H`).

    Parameters
    ----------
    mdp : TabularMDP
    obs : ndarray of int (n, T + 1) or (n, T)
    acts : ndarray of int (n, T)

    Returns
    -------
    ndarray (S, A)

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.rl import gridworld
    >>> from fastnips.rl.irl import empirical_occupancy
    >>> empirical_occupancy(gridworld(2, 2, horizon=2), np.array([[0, 1, 3]]), np.array([[3, 1]])).sum()
    np.float64(2.0)
    """
    obs, acts = np.asarray(obs), np.asarray(acts)
    if acts.ndim != 2 or obs.ndim != 2 or obs.shape[0] != acts.shape[0] or obs.shape[1] < acts.shape[1]:
        raise ValueError(f"obs, acts: expected shapes (n, T + 1) and (n, T), got {obs.shape} and {acts.shape}")
    T = acts.shape[1] if mdp.horizon is None else min(acts.shape[1], mdp.horizon)
    S, A = mdp.n_states, mdp.action_dim
    if ((obs < 0) | (obs >= S)).any() or ((acts < 0) | (acts >= A)).any():
        raise ValueError(f"obs, acts: states must lie in [0, {S}) and actions in [0, {A})")
    w = np.broadcast_to(mdp.discount ** np.arange(T), (obs.shape[0], T))
    rho = np.zeros(S * A)
    np.add.at(rho, (obs[:, :T] * A + acts[:, :T]).ravel(), w.ravel())
    return rho.reshape(S, A) / obs.shape[0]


def _conditional(rho: np.ndarray, smoothing: float) -> np.ndarray:
    """pi(a|s) = rho(s, a) / rho(s), smoothed; uniform on unvisited states."""
    eps = smoothing * (rho[rho > 0].mean() if (rho > 0).any() else 1.0)
    r = rho + eps
    tot = r.sum(1, keepdims=True)
    return np.where(tot > 0, r / np.where(tot > 0, tot, 1.0), 1.0 / rho.shape[1])


def target_reward(rho_E: np.ndarray, *, temperature: float = 1.0, smoothing: float = 1e-8) -> np.ndarray:
    r"""The target reward :math:`r^\star = \tau\log\pi_E` of the geometry-aware update (tabular).

    Parameters
    ----------
    rho_E : ndarray (S, A)
        Expert state-action occupancy.
    temperature : float, default 1.0
    smoothing : float, default 1e-8
        Added to :math:`\rho_E` (relative to its mean nonzero entry) before normalising.

    Returns
    -------
    ndarray (S, A)

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.rl.irl import target_reward
    >>> np.round(np.exp(target_reward(np.array([[3.0, 1.0]]))), 6)
    array([[0.75, 0.25]])
    """
    return check_temperature(temperature) * np.log(_conditional(np.asarray(rho_E, dtype=np.float64), smoothing))


def mirror_descent_step(pi: np.ndarray, pi_E: np.ndarray, eta: float) -> np.ndarray:
    r"""One entropic mirror-descent step on the policy simplex of every state:
    :math:`\pi' \propto \pi^{1-\eta}\pi_E^{\eta}`.

    Parameters
    ----------
    pi, pi_E : ndarray (..., A)
        Action distributions (last axis).
    eta : float in (0, 1]

    Returns
    -------
    ndarray (..., A)

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.rl.irl import mirror_descent_step
    >>> mirror_descent_step(np.array([0.5, 0.5]), np.array([0.9, 0.1]), 1.0)
    array([0.9, 0.1])
    """
    eta = _check_eta(eta)
    logp = (1 - eta) * np.log(pi) + eta * np.log(pi_E)
    logp -= logp.max(-1, keepdims=True)
    p = np.exp(logp)
    return p / p.sum(-1, keepdims=True)


def _kl(rho_E, rho, smoothing) -> float:
    pE, p = _conditional(rho_E, smoothing), _conditional(rho, smoothing)
    w = rho_E.sum(1) / rho_E.sum()
    return float(w @ (pE * (np.log(pE) - np.log(p))).sum(1))


class IRL:
    r"""Maximum-causal-entropy IRL on a known tabular MDP, with the update rules of the module docstring.

    Parameters
    ----------
    mdp : TabularMDP
        Finite-horizon or discounted.
    features : ndarray (S, A, d) or (S, d), optional
        Linear reward :math:`r = \Phi\theta`; default tabular (:math:`\Phi = I`, d = S A).
    method : {"gradient", "natural", "geometric", "mirror"}, default "geometric"
    eta : float in (0, 1], default 0.5
        Step of (b), (c), (d).
    lr : float, optional
        Step of (a); default :math:`1/\lambda_{max}(F(\theta_0))`.
    temperature : float, default 1.0
    max_iter : int, default 200
    tol : float, default 1e-6
        Stop when the relative feature gap is at most ``tol``.
    smoothing : float, default 1e-8
        See :func:`target_reward`.
    backend : {"auto", "reference", "cpp"}

    Examples
    --------
    >>> from fastnips.rl import gridworld, soft_value_iteration, state_action_occupancy
    >>> from fastnips.rl.irl import IRL
    >>> mdp = gridworld(4, 4, discount=0.9)
    >>> rho_E = state_action_occupancy(mdp, soft_value_iteration(mdp, temperature=0.3)[2])
    >>> res = IRL(mdp, method="geometric", eta=0.5).fit(expert_occupancy=rho_E)
    >>> res.converged, bool(res.history["feature_gap"][-1] < 1e-6)
    (True, True)
    """

    def __init__(self, mdp: TabularMDP, *, features: np.ndarray | None = None, method: str = "geometric",
                 eta: float = 0.5, lr: float | None = None, temperature: float = 1.0, max_iter: int = 200,
                 tol: float = 1e-6, smoothing: float = 1e-8, backend: str = "auto") -> None:
        if not isinstance(mdp, TabularMDP):
            raise TypeError(f"mdp: expected a fastnips.rl.TabularMDP, got {type(mdp).__name__}")
        if method not in METHODS:
            raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
        S, A = mdp.n_states, mdp.action_dim
        if features is None:
            features = np.eye(S * A).reshape(S, A, S * A)
        features = np.asarray(features, dtype=np.float64)
        if features.ndim == 2 and features.shape[0] == S:
            features = np.repeat(features[:, None, :], A, axis=1)
        if features.ndim != 3 or features.shape[:2] != (S, A) or not np.isfinite(features).all():
            raise ValueError(f"features: expected finite (S, A, d) = ({S}, {A}, d) or (S, d), got {features.shape}")
        if method == "mirror" and features.shape[2] != S * A:
            raise ValueError("method: 'mirror' updates the policy itself, so it needs tabular rewards (features=None)")
        self.mdp, self.features, self.method = mdp, features, method
        self.eta = _check_eta(eta)
        if lr is not None and not (isinstance(lr, int | float) and lr > 0):
            raise ValueError(f"lr: expected a positive step, got {lr!r}")
        self.lr, self.temperature = lr, check_temperature(temperature)
        self.max_iter, self.tol, self.smoothing, self.backend = int(max_iter), float(tol), float(smoothing), backend

    def _target_theta(self, rho_E: np.ndarray) -> np.ndarray:
        r_star = target_reward(rho_E, temperature=self.temperature, smoothing=self.smoothing)
        d = self.features.shape[2]
        Phi = self.features.reshape(-1, d)
        if d == r_star.size and np.array_equal(Phi, np.eye(d)):
            return r_star.ravel()
        w = np.sqrt(rho_E.ravel() + 1e-12 * rho_E.max())
        return np.linalg.lstsq(Phi * w[:, None], r_star.ravel() * w, rcond=None)[0]

    def fit(self, demonstrations: tuple[np.ndarray, np.ndarray] | None = None, *,
            expert_occupancy: np.ndarray | None = None, theta0: np.ndarray | None = None) -> IRLResult:
        """Run the updates from ``theta0`` (default 0) until the feature gap is below ``tol`` or ``max_iter``.

        Parameters
        ----------
        demonstrations : (obs, acts), optional
            Integer arrays of shapes (n, T + 1) and (n, T) (see :func:`fastnips.rl.sample_trajectories`).
        expert_occupancy : ndarray (S, A), optional
            The expert's discounted state-action occupancy (instead of demonstrations).
        theta0 : ndarray (d,), optional

        Returns
        -------
        IRLResult
        """
        if (demonstrations is None) == (expert_occupancy is None):
            raise ValueError("fit: pass exactly one of demonstrations=(obs, acts) or expert_occupancy=")
        mdp, Phi = self.mdp, self.features
        if demonstrations is not None:
            rho_E = empirical_occupancy(mdp, *demonstrations)
        else:
            rho_E = np.asarray(expert_occupancy, dtype=np.float64)
            if rho_E.shape != (mdp.n_states, mdp.action_dim) or not np.isfinite(rho_E).all() or (rho_E < 0).any():
                raise ValueError(f"expert_occupancy: expected a non-negative ({mdp.n_states}, {mdp.action_dim}) array")
        mu_E = np.einsum("sa,sad->d", rho_E, Phi)
        d = Phi.shape[2]
        theta = np.zeros(d) if theta0 is None else np.asarray(theta0, dtype=np.float64).reshape(d)
        target = self._target_theta(rho_E) if self.method == "geometric" else None
        pi_E = _conditional(rho_E, self.smoothing)
        hist = {k: [] for k in ("dual", "feature_gap", "kl", "seconds")}
        t0 = time.perf_counter()
        lr = self.lr
        converged = False
        L, grad, sol = dual_objective(mdp, theta, Phi, mu_E, temperature=self.temperature)
        for k in range(self.max_iter + 1):
            gap = float(np.abs(grad).sum() / max(np.abs(mu_E).sum(), 1e-300))
            for key, v in (("dual", L), ("feature_gap", gap), ("kl", _kl(rho_E, sol.rho, self.smoothing)),
                           ("seconds", time.perf_counter() - t0)):
                hist[key].append(v)
            if gap <= self.tol:
                converged = True
                break
            if k == self.max_iter:
                break
            if self.method in ("gradient", "natural"):
                theta, L, grad, sol, lr = self._descent_step(theta, L, grad, sol, mu_E, lr)
            else:
                theta = self._target_step(theta, sol, target, pi_E)
                L, grad, sol = dual_objective(mdp, theta, Phi, mu_E, temperature=self.temperature)
        reward = (Phi @ theta)
        return IRLResult(reward, theta, sol.pi, sol.rho, {k: np.asarray(v) for k, v in hist.items()}, converged)

    def _descent_step(self, theta, L, grad, sol, mu_E, lr):
        """(a) or (b) with Armijo backtracking on the dual (halving from the full step)."""
        F = fisher_matrix(self.mdp, theta, self.features, temperature=self.temperature, sol=sol) \
            if self.method == "natural" or lr is None else None
        if self.method == "gradient":
            lr = 1.0 / max(np.linalg.eigvalsh(F).max(), 1e-12) if lr is None else lr
            p = -lr * grad
        else:
            p = -self.eta * pinv_solve(F, grad)
        t = 1.0
        for _ in range(40):
            new = dual_objective(self.mdp, theta + t * p, self.features, mu_E, temperature=self.temperature)
            if new[0] <= L + 1e-4 * t * float(grad @ p):
                break
            t /= 2
        return (theta + t * p, *new, lr)

    def _target_step(self, theta: np.ndarray, sol: Solution, target, pi_E) -> np.ndarray:
        """(c): convex interpolation toward the target; (d): the mirror step on the policy, reward log pi."""
        if self.method == "geometric":
            return (1 - self.eta) * theta + self.eta * target
        pi = sol.pi if sol.pi.ndim == 2 else (sol.rho / np.maximum(sol.rho.sum(1, keepdims=True), 1e-300))
        pi = np.clip(pi, 1e-300, None)
        return self.temperature * np.log(mirror_descent_step(pi, pi_E, self.eta)).ravel()
