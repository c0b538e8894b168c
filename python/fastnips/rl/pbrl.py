r"""Constrained bi-level preference-based RL: learn a reward and a cost from preferences, act safely.

**Reconstruction** (the paper's exact losses are not public; these are the choices, and why).

* *Models.* Linear reward and cost, :math:`r = \Phi_r\phi`, :math:`c = \Phi_c\psi` (features shared across
  environments, so what is learned on one layout transfers to held-out ones).
* *Lower level.* :math:`\pi^\star(\phi, \psi)` solves the entropy-regularised CMDP
  :math:`\max_\pi J_r + \tau\mathcal{H}` s.t. :math:`J_c \le b` (:func:`fastnips.rl.cmdp.solve_cmdp`, primal-dual
  soft value iteration); the multiplier :math:`\lambda^\star(\phi, \psi)` is the price of the constraint.
* *Upper level.* Bradley-Terry preferences over trajectory pairs of equal length, two channels:
  *overall* labels "which is better", modelled as :math:`\sigma(\beta[\Delta R_\phi - \lambda^\star\Delta C_\psi])`
  (the labeler trades reward against cost at the constraint's own shadow price, which couples the two levels),
  and *safety* labels "which is safer", :math:`\sigma(-\beta\Delta C_\psi)` (as in preference-based constraint
  inference). :math:`R, C` are discounted sums along the trajectory. Loss: mean binary cross-entropy plus
  :math:`\tfrac{\kappa}{2}\|(\phi,\psi)\|^2`.
* *Hypergradient.* :math:`\lambda^\star` depends on :math:`(\phi, \psi)` through the soft optimality and
  complementary-slackness conditions :math:`h = \langle\rho_{r - \lambda c}, c\rangle - b = 0`; by the implicit
  function theorem :math:`\partial\lambda^\star/\partial\theta = -(\partial h/\partial\theta)/(\partial h/\partial
  \lambda)`, where every term is one forward-mode derivative of the occupancy, :math:`J c` with :math:`J =
  \partial\rho/\partial r` (symmetric: it is the Hessian of the soft value). :math:`\lambda^\star = 0` (inactive
  constraint) has zero derivative. Finite differences of the re-solved problem check it in the tests.
* *Outer loop.* Gradient steps on the hypergradient (``lr``, halved until the loss does not rise: the
  loss grows with :math:`\lambda^\star`, which can jump when the learned cost first binds), the cost weights
  projected onto
  :math:`\psi \ge 0` (with non-negative cost features this keeps the learned cost a cost, as CMDPs assume;
  without it a small negative weight on a rewarding feature lets the policy buy hazard visits with goal visits
  on new layouts). The history keeps the loss, the squared
  hypergradient norm and :math:`\lambda^\star`. Non-convex smooth theory promises
  :math:`\min_{k\le K}\|\nabla\|^2 = O(1/\sqrt K)` (O(1/K) for exact gradients); the evaluation plots it.

Baselines (``mode``): ``"unconstrained"`` -- one reward from *all* labels pooled as reward preferences
(imitation's preference comparisons, tabular), optimised without constraint; ``"cost_blind"`` -- the reward
from the overall labels with :math:`\lambda = 0`, safety labels dropped, no constraint.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .cmdp import CMDPSolution, solve_cmdp
from .fisher import _jvp_rho, solve_soft
from .mdp import TabularMDP, check_temperature

__all__ = ["MODES", "ConstrainedPbRL", "PbRLResult", "Preferences", "bt_loss_and_grad", "synthetic_preferences",
           "trajectory_features"]

MODES = ("constrained", "unconstrained", "cost_blind")


def _feats(F, mdp: TabularMDP, name: str) -> np.ndarray:
    S, A = mdp.n_states, mdp.action_dim
    F = np.asarray(F, dtype=np.float64)
    if F.ndim == 2 and F.shape[0] == S:
        F = np.repeat(F[:, None, :], A, axis=1)
    if F.ndim != 3 or F.shape[:2] != (S, A) or not np.isfinite(F).all():
        raise ValueError(f"{name}: expected finite (S, A, d) = ({S}, {A}, d) or (S, d), got {F.shape}")
    return F


def trajectory_features(features: np.ndarray, obs: np.ndarray, acts: np.ndarray, discount: float) -> np.ndarray:
    r"""Discounted feature sums :math:`\sum_t \gamma^t \phi(s_t, a_t)` of trajectories.

    Parameters
    ----------
    features : ndarray (S, A, d)
    obs : ndarray of int (n, T + 1) or (n, T)
    acts : ndarray of int (n, T)
    discount : float

    Returns
    -------
    ndarray (n, d)
    """
    T = acts.shape[1]
    return np.einsum("t,ntd->nd", discount ** np.arange(T), features[obs[:, :T], acts])


@dataclass
class Preferences:
    """Labelled trajectory pairs.

    Attributes
    ----------
    first, second : (obs, acts)
        Integer arrays (n, T + 1) and (n, T); both trajectories of a pair have the same length T.
    label : ndarray (n,)
        Probability (or 0/1 indicator) that ``first`` is preferred.
    channel : ndarray of int (n,)
        0: overall preference, 1: safety preference ("which is safer").
    """

    first: tuple
    second: tuple
    label: np.ndarray
    channel: np.ndarray

    def __post_init__(self) -> None:
        (o1, a1), (o2, a2) = self.first, self.second
        o1, a1, o2, a2 = (np.asarray(x) for x in (o1, a1, o2, a2))
        if a1.ndim != 2 or a2.ndim != 2 or a1.shape[0] != a2.shape[0]:
            raise ValueError(f"preferences: first and second must hold the same number n of (n, T) action arrays, "
                             f"got {a1.shape} and {a2.shape}")
        if a1.shape[1] != a2.shape[1]:
            raise ValueError(f"preferences: trajectory pairs must have equal length, got T={a1.shape[1]} and "
                             f"T={a2.shape[1]}")
        if o1.shape[0] != a1.shape[0] or o2.shape[0] != a2.shape[0] or min(o1.shape[1], o2.shape[1]) < a1.shape[1]:
            raise ValueError("preferences: obs must have shape (n, T + 1) or (n, T) matching acts")
        n = a1.shape[0]
        label = np.asarray(self.label, dtype=np.float64).reshape(-1)
        channel = np.asarray(self.channel).reshape(-1)
        if label.shape != (n,) or ((label < 0) | (label > 1)).any() or not np.isfinite(label).all():
            raise ValueError(f"label: expected {n} probabilities in [0, 1]")
        if channel.shape != (n,) or not np.isin(channel, (0, 1)).all():
            raise ValueError(f"channel: expected {n} entries in {{0, 1}}")
        self.first, self.second, self.label, self.channel = (o1, a1), (o2, a2), label, channel.astype(np.int64)


def bt_loss_and_grad(z: np.ndarray, label: np.ndarray) -> tuple[float, np.ndarray]:
    r"""Mean Bradley-Terry cross-entropy :math:`-\frac1n\sum y\log\sigma(z) + (1-y)\log\sigma(-z)` and its
    gradient in z.

    Parameters
    ----------
    z : ndarray (n,)
        Logits of "first preferred".
    label : ndarray (n,)

    Returns
    -------
    loss : float
    grad : ndarray (n,)
    """
    n = max(len(z), 1)
    loss = float((np.logaddexp(0, -z) * label + np.logaddexp(0, z) * (1 - label)).sum() / n)
    return loss, (1 / (1 + np.exp(-z)) - label) / n


@dataclass
class PbRLResult:
    """What :meth:`ConstrainedPbRL.fit` returns.

    Attributes
    ----------
    reward_weights, cost_weights : ndarray
        :math:`\\phi`, :math:`\\psi` (cost weights are zeros for the baselines).
    lam : float
        :math:`\\lambda^\\star` on the training MDP (0 for the baselines).
    policy : ndarray (S, A)
        The lower-level policy on the training MDP.
    history : dict of ndarray
        ``loss``, ``grad_norm2``, ``lam`` per outer iteration.
    cost_weights_safe : ndarray or None
        The pessimistic cost weights the policies use (``confidence``; None when it is off or for baselines).
    """

    reward_weights: np.ndarray
    cost_weights: np.ndarray
    lam: float
    policy: np.ndarray
    history: dict = field(default_factory=dict)
    cost_weights_safe: np.ndarray | None = None


class ConstrainedPbRL:
    r"""Constrained bi-level PbRL on a known discounted tabular MDP (see the module docstring).

    Parameters
    ----------
    mdp : TabularMDP
        Discounted training MDP.
    reward_features, cost_features : ndarray (S, A, d) or (S, d)
    budget : float
        :math:`b` of :math:`J_c \le b`, in the units of the true cost.
    mode : {"constrained", "unconstrained", "cost_blind"}, default "constrained"
    temperature : float, default 0.1
        :math:`\tau` of the lower level.
    beta : float, default 1.0
        Bradley-Terry inverse temperature.
    reg : float, default 1e-3
        :math:`\kappa`.
    lr : float, default 0.5
    n_iter : int, default 100
    confidence : float or None, default 0.95
        Act on a pessimistic cost: :math:`\psi + z_{conf}\,\mathrm{sd}(\psi)` with the Laplace (inverse
        Hessian of the summed preference loss, :math:`\lambda^\star` held fixed) standard deviations, one-sided
        per weight. A policy that saturates the budget of the *estimated* cost violates the true one about half
        the time; this margin is what keeps it within (a heuristic, not a joint guarantee). None: act on the MLE.

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.rl import gridworld
    >>> from fastnips.rl.pbrl import ConstrainedPbRL
    >>> mdp = gridworld(4, 4, hazards=[(1, 1), (2, 2)], discount=0.9)
    >>> F = np.stack([mdp.reward_matrix, mdp.cost_matrix], 1)
    >>> model = ConstrainedPbRL(mdp, F, F, budget=0.1, n_iter=2)
    >>> model.mode
    'constrained'
    """

    def __init__(self, mdp: TabularMDP, reward_features: np.ndarray, cost_features: np.ndarray, budget: float, *,
                 mode: str = "constrained", temperature: float = 0.1, beta: float = 1.0, reg: float = 1e-3,
                 lr: float = 0.5, n_iter: int = 100, confidence: float | None = 0.95) -> None:
        if not isinstance(mdp, TabularMDP) or mdp.horizon is not None:
            raise ValueError("mdp: expected a discounted fastnips.rl.TabularMDP (horizon=None)")
        if mode not in MODES:
            raise ValueError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        self.mdp, self.mode = mdp, mode
        self.Fr = _feats(reward_features, mdp, "reward_features")
        self.Fc = _feats(cost_features, mdp, "cost_features")
        if isinstance(budget, bool) or not isinstance(budget, int | float | np.floating) or not np.isfinite(budget):
            raise ValueError(f"budget: expected a finite number, got {budget!r}")
        self.budget, self.tau = float(budget), check_temperature(temperature)
        for name, v in (("beta", beta), ("lr", lr)):
            if not (isinstance(v, int | float) and v > 0):
                raise ValueError(f"{name}: expected a positive number, got {v!r}")
        if not (isinstance(reg, int | float) and reg >= 0):
            raise ValueError(f"reg: expected a non-negative number, got {reg!r}")
        self.beta, self.reg, self.lr, self.n_iter = float(beta), float(reg), float(lr), int(n_iter)
        if confidence is not None and not (isinstance(confidence, float) and 0.5 <= confidence < 1.0):
            raise ValueError(f"confidence: expected None or a probability in [0.5, 1), got {confidence!r}")
        self.confidence = confidence

    # -- the upper objective and its hypergradient ------------------------------------------------------------

    def _diffs(self, prefs: Preferences):
        g = self.mdp.discount
        (o1, a1), (o2, a2) = prefs.first, prefs.second
        dR = trajectory_features(self.Fr, o1, a1, g) - trajectory_features(self.Fr, o2, a2, g)
        dC = trajectory_features(self.Fc, o1, a1, g) - trajectory_features(self.Fc, o2, a2, g)
        return dR, dC

    def lower(self, phi: np.ndarray, psi: np.ndarray, lam0: float | None = None) -> CMDPSolution | None:
        """The lower-level solution at (phi, psi) on the training MDP (None for the unconstrained modes).

        Parameters
        ----------
        phi, psi : ndarray
        lam0 : float, optional
            Warm start of the multiplier.

        Returns
        -------
        CMDPSolution or None
        """
        if self.mode != "constrained":
            return None
        return solve_cmdp(self.mdp, reward=self.Fr @ phi, cost=self.Fc @ psi, budget=self.budget,
                          temperature=self.tau, lam0=lam0)

    def objective(self, phi: np.ndarray, psi: np.ndarray, prefs: Preferences, diffs: tuple | None = None,
                  lam0: float | None = None) -> tuple[float, np.ndarray, np.ndarray, CMDPSolution | None]:
        """Upper loss and its hypergradient at (phi, psi).

        Parameters
        ----------
        phi, psi : ndarray
        prefs : Preferences
        diffs : tuple, optional
            Cached trajectory feature differences.
        lam0 : float, optional
            Warm start of the lower level's multiplier.

        Returns
        -------
        loss : float
        grad_phi, grad_psi : ndarray
        lower : CMDPSolution or None
        """
        dR, dC = self._diffs(prefs) if diffs is None else diffs
        over, safe = prefs.channel == 0, prefs.channel == 1
        b = self.beta
        low = self.lower(phi, psi, lam0)
        if self.mode == "constrained":
            lam = low.lam
            z = np.where(over, b * (dR @ phi - lam * (dC @ psi)), -b * (dC @ psi))
        elif self.mode == "unconstrained":
            lam, z = 0.0, b * (dR @ phi)
        else:  # cost-blind: overall labels only, reward only
            lam, z = 0.0, np.where(over, b * (dR @ phi), 0.0)
        label = prefs.label if self.mode != "cost_blind" else np.where(over, prefs.label, 0.5)
        keep = np.ones(len(z), bool) if self.mode != "cost_blind" else over
        loss, gz = bt_loss_and_grad(z[keep], label[keep])
        gzf = np.zeros(len(z))
        gzf[keep] = gz
        g_phi = b * (gzf * over) @ dR if self.mode == "constrained" else b * gzf @ dR
        g_psi = np.zeros(self.Fc.shape[2])
        if self.mode == "constrained":
            g_psi = -b * lam * ((gzf * over) @ dC) - b * ((gzf * safe) @ dC)
            if lam > 0:
                g_lam = -b * float((gzf * over) @ (dC @ psi))
                dphi, dpsi = self._dlam(low, psi)
                g_phi, g_psi = g_phi + g_lam * dphi, g_psi + g_lam * dpsi
        loss += 0.5 * self.reg * (phi @ phi + psi @ psi)
        return loss, g_phi + self.reg * phi, g_psi + self.reg * psi, low

    def _dlam(self, low: CMDPSolution, psi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""d lambda* / d(phi, psi) by the implicit function theorem on h = <rho(r - lam c), c> - b."""
        c = self.Fc @ psi
        u = _jvp_rho(self.mdp, low.sol, c[:, :, None], self.tau)[:, :, 0]  # J c
        dh_dlam = -float((u * c).sum())
        dh_dphi = np.einsum("sa,sad->d", u, self.Fr)
        dh_dpsi = np.einsum("sa,sad->d", low.rho, self.Fc) - low.lam * np.einsum("sa,sad->d", u, self.Fc)
        return -dh_dphi / dh_dlam, -dh_dpsi / dh_dlam

    def fit(self, prefs: Preferences, *, phi0: np.ndarray | None = None,
            psi0: np.ndarray | None = None) -> PbRLResult:
        """Gradient descent on the upper loss with hypergradients through the lower level.

        Parameters
        ----------
        prefs : Preferences
        phi0, psi0 : ndarray, optional
            Starting weights (default zeros).

        Returns
        -------
        PbRLResult
        """
        if not isinstance(prefs, Preferences):
            raise TypeError(f"prefs: expected a fastnips.rl.pbrl.Preferences, got {type(prefs).__name__}")
        S, A = self.mdp.n_states, self.mdp.action_dim
        for o, a in (prefs.first, prefs.second):
            if (o.size and (o.min() < 0 or o.max() >= S)) or (a.size and (a.min() < 0 or a.max() >= A)):
                raise ValueError(f"prefs: states must lie in [0, {S}) and actions in [0, {A}) for this MDP")
        phi = np.zeros(self.Fr.shape[2]) if phi0 is None else np.asarray(phi0, dtype=np.float64).copy()
        psi = np.zeros(self.Fc.shape[2]) if psi0 is None else np.asarray(psi0, dtype=np.float64).copy()
        if self.mode != "constrained":
            psi = np.zeros(self.Fc.shape[2])
        diffs = self._diffs(prefs)
        hist = {"loss": [], "grad_norm2": [], "lam": []}
        low = None
        state = self.objective(phi, psi, prefs, diffs)
        for _ in range(self.n_iter):
            loss, gp, gq, low = state
            hist["loss"].append(loss)
            hist["grad_norm2"].append(float(gp @ gp + (gq @ gq if self.mode == "constrained" else 0.0)))
            hist["lam"].append(low.lam if low is not None else 0.0)
            phi, psi, state = self._step(phi, psi, state, prefs, diffs)
        low = state[3]
        safe = None
        if low is not None and self.confidence is not None:
            safe = self._pessimistic(phi, psi, low.lam, prefs, diffs)
            low = self.lower(phi, safe, low.lam)
        pi = low.pi if low is not None else solve_soft(self.mdp, self.Fr @ phi, temperature=self.tau).pi
        return PbRLResult(phi, psi, low.lam if low is not None else 0.0, pi,
                          {k: np.asarray(v) for k, v in hist.items()}, safe)

    def _step(self, phi, psi, state, prefs, diffs):
        """One projected gradient step from ``lr``, halved (up to 30 times) until the upper loss does not rise."""
        loss, gp, gq, low = state
        step = self.lr
        for _ in range(30):
            phi_new = phi - step * gp
            psi_new = np.maximum(psi - step * gq, 0.0) if self.mode == "constrained" else psi  # a cost stays >= 0
            new = self.objective(phi_new, psi_new, prefs, diffs, None if low is None else low.lam)
            if new[0] <= loss:
                break
            step /= 2
        return phi_new, psi_new, new

    def _pessimistic(self, phi, psi, lam, prefs: Preferences, diffs) -> np.ndarray:
        """psi + z sd(psi), sd from the inverse Hessian in psi of the summed preference loss (Laplace)."""
        from scipy.stats import norm

        dR, dC = diffs
        over = prefs.channel == 0
        b = self.beta
        z = np.where(over, b * (dR @ phi - lam * (dC @ psi)), -b * (dC @ psi))
        p = 1 / (1 + np.exp(-z))
        Vz = b * np.where(over[:, None], lam * dC, dC)  # |d z / d psi| per pair
        H = (Vz * (p * (1 - p))[:, None]).T @ Vz + len(z) * self.reg * np.eye(len(psi))
        sd = np.sqrt(np.clip(np.diag(np.linalg.pinv(H)), 0, None))
        return psi + norm.ppf(self.confidence) * sd

    def policy_on(self, mdp: TabularMDP, reward_features: np.ndarray, cost_features: np.ndarray,
                  result: PbRLResult) -> np.ndarray:
        """The learned model's policy on another MDP with the same features (held-out layouts).

        Parameters
        ----------
        mdp : TabularMDP
        reward_features, cost_features : ndarray
        result : PbRLResult

        Returns
        -------
        ndarray (S, A)
        """
        r = _feats(reward_features, mdp, "reward_features") @ result.reward_weights
        if self.mode != "constrained":
            return solve_soft(mdp, r, temperature=self.tau).pi
        w = result.cost_weights if result.cost_weights_safe is None else result.cost_weights_safe
        c = _feats(cost_features, mdp, "cost_features") @ w
        return solve_cmdp(mdp, reward=r, cost=c, budget=self.budget, temperature=self.tau).pi


def synthetic_preferences(mdp: TabularMDP, reward: np.ndarray, cost: np.ndarray, lam: float, n_pairs: int, *,
                          horizon: int = 30, safety_fraction: float = 0.5, beta: float = 1.0,
                          seed: int = 0) -> Preferences:
    r"""Preferences from a known (r, c): pairs rolled out by a pool of behaviour policies, labels drawn from the
    model of the module docstring (overall: :math:`\sigma(\beta[\Delta R - \lambda\Delta C])`; safety:
    :math:`\sigma(-\beta\Delta C)`).

    The pool: uniform random; soft-optimal (temperature 0.5) for r, for :math:`r - 2c`, and for a random reward;
    each trajectory of a pair picks one at random.

    Parameters
    ----------
    mdp : TabularMDP
        Discounted.
    reward, cost : ndarray (S,) or (S, A)
        The true reward and cost.
    lam : float
        The labeler's trade-off (e.g. the true problem's :math:`\lambda^\star`).
    n_pairs : int
    horizon : int, default 30
        Trajectory length T.
    safety_fraction : float, default 0.5
        Share of pairs labelled on the safety channel.
    beta : float, default 1.0
    seed : int, default 0

    Returns
    -------
    Preferences
    """
    from .soft import sample_trajectories

    rng = np.random.default_rng(seed)
    S, A = mdp.n_states, mdp.action_dim
    r = np.asarray(reward, dtype=np.float64).reshape(S, -1) * np.ones((1, A))
    c = np.asarray(cost, dtype=np.float64).reshape(S, -1) * np.ones((1, A))
    pool = [np.full((S, A), 1.0 / A)] + [solve_soft(mdp, x, temperature=0.5).pi
                                         for x in (r, r - 2 * c, rng.standard_normal((S, A)))]
    trajs = []
    for k in range(2):
        which = rng.integers(len(pool), size=n_pairs)
        obs = np.empty((n_pairs, horizon + 1), dtype=np.int64)
        acts = np.empty((n_pairs, horizon), dtype=np.int64)
        for j, pi in enumerate(pool):
            idx = np.flatnonzero(which == j)
            if idx.size:
                obs[idx], acts[idx] = sample_trajectories(mdp, pi, idx.size, horizon=horizon,
                                                          seed=int(rng.integers(2**31)) + k)
        trajs.append((obs, acts))
    g = mdp.discount
    dR = trajectory_features(r[:, :, None], *trajs[0], g)[:, 0] - trajectory_features(r[:, :, None], *trajs[1], g)[:, 0]
    dC = trajectory_features(c[:, :, None], *trajs[0], g)[:, 0] - trajectory_features(c[:, :, None], *trajs[1], g)[:, 0]
    channel = (rng.random(n_pairs) < safety_fraction).astype(np.int64)
    z = np.where(channel == 0, beta * (dR - lam * dC), -beta * dC)
    label = (rng.random(n_pairs) < 1 / (1 + np.exp(-z))).astype(np.float64)
    return Preferences(trajs[0], trajs[1], label, channel)
