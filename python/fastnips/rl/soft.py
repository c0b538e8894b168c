r"""Soft (maximum-causal-entropy) value iteration and occupancy measures on a :class:`~fastnips.rl.TabularMDP`.

.. math:: Q_t = r + \gamma P V_{t+1}, \qquad V_t(s) = \tau \log \sum_a e^{Q_t(s,a)/\tau}, \qquad
          \pi_t(a \mid s) = e^{(Q_t(s,a) - V_t(s))/\tau}

with :math:`Q_{H-1} = r` for a finite horizon, or the fixed point :math:`Q = r + \gamma P V` when there is
none. The temperature :math:`\tau` weights the entropy bonus (1 in Ziebart's MCE IRL and in ``imitation``).

The finite-horizon functions mirror ``imitation.algorithms.mce_irl``: :func:`mce_partition_fh` returns
``(V, Q, pi)`` indexed ``[t, s(, a)]`` and :func:`mce_occupancy_measures` returns ``(D, Dcum)`` with ``D``
of ``H + 1`` rows; on the same MDP and reward they agree with imitation's to 1e-10 (tested where imitation is
installed). Two differences, both deliberate: a reward may be per state-action ``(S, A)`` as well as per
state ``(S,)``, and when ``pi`` is not given :func:`mce_occupancy_measures` computes it with the *same*
``discount`` it was given (imitation's computes the policy undiscounted whatever ``discount`` says).

Backends: ``reference`` (:mod:`fastnips.rl.reference`: readable, scipy products, and soft *policy* iteration
with exact solves for the discounted problem) and ``cpp`` (this module's loops, sparse products through
:func:`fastnips.ops.spmm`'s compiled kernel). ``auto`` takes ``cpp`` where it is built.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import reference as ref
from .mdp import (
    TabularMDP,
    as_state_action,
    check_discount,
    check_reward,
    check_temperature,
    p_times,
    pt_times,
    resolve_backend,
)

__all__ = ["mce_occupancy_measures", "mce_partition_fh", "sample_trajectories", "soft_value_iteration",
           "state_action_occupancy"]


def _common(mdp, reward, discount, temperature, *, finite: bool | None):
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp: expected a fastnips.rl.TabularMDP, got {type(mdp).__name__}")
    if finite is True and mdp.horizon is None:
        raise ValueError("mdp: this function needs a finite horizon (mdp.horizon is None); "
                         "use soft_value_iteration for the discounted problem")
    if finite is False and mdp.horizon is not None:
        raise ValueError(f"mdp: soft_value_iteration solves the infinite-horizon problem, but mdp.horizon = "
                         f"{mdp.horizon}; use mce_partition_fh")
    r = mdp.reward_matrix if reward is None else check_reward(reward, mdp.n_states, mdp.action_dim, "reward")
    g = mdp.discount if discount is None else check_discount(discount, mdp.horizon)
    return r, g, check_temperature(temperature)


def _soft_max(Q: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """(V, pi) = (tau logsumexp(Q / tau), softmax(Q / tau)) over the last axis, stably."""
    m = Q.max(axis=-1, keepdims=True)
    E = np.exp((Q - m) / tau)
    Z = E.sum(axis=-1, keepdims=True)
    return (m + tau * np.log(Z))[..., 0], E / Z


def mce_partition_fh(mdp: TabularMDP, *, reward: np.ndarray | None = None, discount: float | None = None,
                     temperature: float = 1.0, backend: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Finite-horizon soft Bellman backup: soft values, soft Q-values and the MCE policy.

    .. math:: Q_{H-1} = r,\quad Q_t = r + \gamma P V_{t+1},\quad V_t = \tau \log\textstyle\sum_a e^{Q_t/\tau},
              \quad \pi_t = e^{(Q_t - V_t)/\tau}

    Ziebart (2010), recurrences 9.1-9.3; the signature and indexing of ``imitation``'s function of this name.

    Parameters
    ----------
    mdp : TabularMDP
        With a finite ``horizon`` H.
    reward : ndarray (S,) or (S, A), optional
        Default ``mdp.reward_matrix``.
    discount : float, optional
        :math:`\gamma \in (0, 1]`; default ``mdp.discount``.
    temperature : float, default 1.0
        :math:`\tau > 0`.
    backend : {"auto", "reference", "cpp"}

    Returns
    -------
    V : ndarray (H, S)
    Q : ndarray (H, S, A)
    pi : ndarray (H, S, A)
        ``pi[t, s]`` is the action distribution at step t.

    Examples
    --------
    >>> from fastnips.rl import gridworld, mce_partition_fh
    >>> mdp = gridworld(4, 4, horizon=10)
    >>> V, Q, pi = mce_partition_fh(mdp)
    >>> V.shape, pi.shape
    ((10, 16), (10, 16, 4))
    """
    r, g, tau = _common(mdp, reward, discount, temperature, finite=True)
    if resolve_backend(backend, "mce_partition_fh") == "reference":
        return ref.mce_partition_fh_reference(mdp, r, g, tau)
    S, A, H = mdp.n_states, mdp.action_dim, mdp.horizon
    r = as_state_action(r, A)
    V = np.empty((H, S))
    Q = np.empty((H, S, A))
    pi = np.empty((H, S, A))
    for t in reversed(range(H)):
        if t == H - 1:
            Q[t] = r
        else:
            np.multiply(p_times(mdp, V[t + 1]), g, out=Q[t])
            Q[t] += r
        V[t], pi[t] = _soft_max(Q[t], tau)
    return V, Q, pi


def _forward(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """D of shape (H + 1, S): the state distribution per step under the time-indexed policy pi."""
    D = np.empty((mdp.horizon + 1, mdp.n_states))
    D[0] = mdp.initial_state_dist
    for t in range(mdp.horizon):
        D[t + 1] = pt_times(mdp, D[t][:, None] * pi[t])
    return D


def _check_pi(pi, mdp: TabularMDP, finite: bool) -> np.ndarray:
    S, A = mdp.n_states, mdp.action_dim
    want = (mdp.horizon, S, A) if finite else (S, A)
    return check_policy(pi, want)


def check_policy(pi, want: tuple) -> np.ndarray:
    """pi as float64 of shape ``want`` whose last axis holds distributions; else a ValueError naming ``pi``."""
    pi = np.asarray(pi, dtype=np.float64)
    if pi.shape != want:
        raise ValueError(f"pi: expected shape {want}, got {pi.shape}")
    if not np.isfinite(pi).all() or (pi < 0).any() or np.abs(pi.sum(-1) - 1).max() > 1e-8:
        raise ValueError("pi: every pi[..., s, :] must be a probability distribution over the actions")
    return pi


def mce_occupancy_measures(mdp: TabularMDP, *, reward: np.ndarray | None = None, pi: np.ndarray | None = None,
                           discount: float | None = None, temperature: float = 1.0,
                           backend: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    r"""State occupancy per step and its discounted sum (finite horizon).

    .. math:: D_0 = p_0,\quad D_{t+1}(s') = \sum_{s,a} D_t(s)\,\pi_t(a|s)\,P(s'|s,a),\quad
              D_{cum} = \sum_{t=0}^{H} \gamma^t D_t

    Parameters
    ----------
    mdp : TabularMDP
        With a finite horizon H.
    reward : ndarray (S,) or (S, A), optional
        Used only when ``pi`` is None (then pi is the MCE policy of this reward); default ``mdp.reward_matrix``.
    pi : ndarray (H, S, A), optional
        The policy to roll forward.
    discount : float, optional
        Default ``mdp.discount``.
    temperature : float, default 1.0
        Of the MCE policy computed when ``pi`` is None.
    backend : {"auto", "reference", "cpp"}

    Returns
    -------
    D : ndarray (H + 1, S)
    Dcum : ndarray (S,)

    Examples
    --------
    >>> from fastnips.rl import gridworld, mce_occupancy_measures
    >>> D, Dcum = mce_occupancy_measures(gridworld(4, 4, horizon=10))
    >>> D.shape, round(float(Dcum.sum()), 6)
    ((11, 16), 11.0)
    """
    r, g, tau = _common(mdp, reward, discount, temperature, finite=True)
    b = resolve_backend(backend, "mce_occupancy_measures")
    pi = mce_partition_fh(mdp, reward=r, discount=g, temperature=tau, backend=b)[2] if pi is None else \
        _check_pi(pi, mdp, True)
    if b == "reference":
        return ref.mce_occupancy_measures_reference(mdp, pi, g)
    D = _forward(mdp, pi)
    Dcum = np.polynomial.polynomial.polyval(g, D) if g != 1.0 else D.sum(axis=0)
    return D, Dcum


def soft_value_iteration(mdp: TabularMDP, *, reward: np.ndarray | None = None, discount: float | None = None,
                         temperature: float = 1.0, tol: float = 1e-10, max_iter: int = 100_000,
                         V0: np.ndarray | None = None,
                         backend: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Discounted (infinite-horizon) soft value iteration.

    .. math:: V \leftarrow \tau \log \textstyle\sum_a \exp\big((r + \gamma P V)/\tau\big)

    a :math:`\gamma`-contraction; iteration stops once :math:`\|V_{k+1} - V_k\|_\infty \le
    \mathrm{tol}\,(1-\gamma)/\gamma`, which bounds the error of V by ``tol``.

    Parameters
    ----------
    mdp : TabularMDP
        With ``horizon=None`` and ``discount < 1``.
    reward : ndarray (S,) or (S, A), optional
        Default ``mdp.reward_matrix``.
    discount : float, optional
        Default ``mdp.discount``.
    temperature : float, default 1.0
        :math:`\tau > 0`.
    tol : float, default 1e-10
        Bound on :math:`\|V - V^*\|_\infty` at exit (cpp); the reference stops at relative change 1e-13.
    max_iter : int, default 100000
        A RuntimeWarning is issued if reached.
    V0 : ndarray (S,), optional
        Warm start (cpp).
    backend : {"auto", "reference", "cpp"}

    Returns
    -------
    V : ndarray (S,)
    Q : ndarray (S, A)
    pi : ndarray (S, A)

    Examples
    --------
    >>> from fastnips.rl import gridworld, soft_value_iteration
    >>> V, Q, pi = soft_value_iteration(gridworld(4, 4, discount=0.9))
    >>> pi.shape
    (16, 4)
    """
    r, g, tau = _common(mdp, reward, discount, temperature, finite=False)
    if not (isinstance(tol, float | int) and tol > 0):
        raise ValueError(f"tol: expected a positive number, got {tol!r}")
    if resolve_backend(backend, "soft_value_iteration") == "reference":
        return ref.soft_value_iteration_reference(mdp, r, g, tau)
    S, A = mdp.n_states, mdp.action_dim
    r = as_state_action(r, A)
    V = np.zeros(S) if V0 is None else check_reward(V0, S, A, "V0")
    stop = tol * (1.0 - g) / g
    for _ in range(int(max_iter)):
        Q = r + g * p_times(mdp, V)
        V_new, pi = _soft_max(Q, tau)
        delta = np.max(np.abs(V_new - V))
        V = V_new
        if delta <= stop:
            break
    else:
        warnings.warn(f"soft_value_iteration: no convergence to tol={tol} in {max_iter} iterations "
                      f"(last change {delta:.3g})", RuntimeWarning, stacklevel=2)
    Q = r + g * p_times(mdp, V)
    V, pi = _soft_max(Q, tau)
    return V, Q, pi


def state_action_occupancy(mdp: TabularMDP, pi: np.ndarray, *, discount: float | None = None, tol: float = 1e-12,
                           backend: str = "auto") -> np.ndarray:
    r"""Discounted state-action occupancy: the gradient of the soft value w.r.t. the reward.

    .. math:: \rho(s, a) = \sum_t \gamma^t \Pr(s_t = s, a_t = a), \qquad \mu(\theta) = \sum_{s,a} \rho(s,a)
              \phi(s,a)

    summed over :math:`t < H` for a finite horizon (``pi`` of shape (H, S, A)) or over all :math:`t` for the
    discounted problem (``pi`` of shape (S, A); the cpp backend iterates
    :math:`\rho_S \leftarrow p_0 + \gamma P^\top(\rho_S \pi)` to an L1 error of ``tol``, the reference solves).

    Parameters
    ----------
    mdp : TabularMDP
    pi : ndarray (H, S, A) or (S, A)
    discount : float, optional
        Default ``mdp.discount``.
    tol : float, default 1e-12
    backend : {"auto", "reference", "cpp"}

    Returns
    -------
    rho : ndarray (S, A)

    Examples
    --------
    >>> from fastnips.rl import gridworld, soft_value_iteration, state_action_occupancy
    >>> mdp = gridworld(4, 4, discount=0.9)
    >>> rho = state_action_occupancy(mdp, soft_value_iteration(mdp)[2])
    >>> round(float(rho.sum()), 6)
    10.0
    """
    finite = mdp.horizon is not None
    _, g, _ = _common(mdp, None, discount, 1.0, finite=None)
    pi = _check_pi(pi, mdp, finite)
    if resolve_backend(backend, "state_action_occupancy") == "reference":
        return ref.state_action_occupancy_reference(mdp, pi, g)
    if finite:
        D = _forward(mdp, pi)
        w = g ** np.arange(mdp.horizon)
        return np.einsum("t,ts,tsa->sa", w, D[:-1], pi)
    p0 = mdp.initial_state_dist
    rho = p0.copy()
    stop = tol * (1.0 - g) / g
    for _ in range(100_000):
        new = p0 + g * pt_times(mdp, rho[:, None] * pi)
        delta = np.abs(new - rho).sum()
        rho = new
        if delta <= stop:
            break
    else:
        warnings.warn(f"state_action_occupancy: no convergence to tol={tol} (last change {delta:.3g})",
                      RuntimeWarning, stacklevel=2)
    return rho[:, None] * pi


def sample_trajectories(mdp: TabularMDP, pi: np.ndarray, n: int, *, horizon: int | None = None,
                        seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Roll out ``n`` trajectories of a policy: :math:`s_0 \sim p_0`, :math:`a_t \sim \pi_t(\cdot|s_t)`,
    :math:`s_{t+1} \sim P(\cdot|s_t, a_t)`.

    Parameters
    ----------
    mdp : TabularMDP
    pi : ndarray (H, S, A) or (S, A)
        Time-indexed (finite horizon) or stationary.
    n : int
        Number of trajectories.
    horizon : int, optional
        Steps T; default ``mdp.horizon`` (required when the MDP has none).
    seed : int, default 0

    Returns
    -------
    obs : ndarray of int (n, T + 1)
    acts : ndarray of int (n, T)

    Examples
    --------
    >>> from fastnips.rl import gridworld, mce_partition_fh, sample_trajectories
    >>> mdp = gridworld(4, 4, horizon=6)
    >>> obs, acts = sample_trajectories(mdp, mce_partition_fh(mdp)[2], 3, seed=0)
    >>> obs.shape, acts.shape
    ((3, 7), (3, 6))
    """
    T = mdp.horizon if horizon is None else horizon
    if T is None or isinstance(T, bool) or not isinstance(T, int | np.integer) or T < 1:
        raise ValueError(f"horizon: expected a positive int (the MDP has none), got {T!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a positive int, got {n!r}")
    pi = np.asarray(pi, dtype=np.float64)
    if pi.ndim == 3 and pi.shape[0] < T:
        raise ValueError(f"pi: has {pi.shape[0]} steps, fewer than horizon={T}")
    check_policy(pi[:T] if pi.ndim == 3 else pi, ((T,) if pi.ndim == 3 else ()) + (mdp.n_states, mdp.action_dim))
    rng = np.random.default_rng(seed)
    P = mdp.transitions_csr
    cum = np.cumsum(P.data)
    start = np.concatenate(([0.0], cum))[P.indptr[:-1]]
    end = np.concatenate(([0.0], cum))[P.indptr[1:]]
    A = mdp.action_dim
    obs = np.empty((n, T + 1), dtype=np.int64)
    acts = np.empty((n, T), dtype=np.int64)
    obs[:, 0] = rng.choice(mdp.n_states, size=n, p=mdp.initial_state_dist)
    for t in range(T):
        p = (pi[t] if pi.ndim == 3 else pi)[obs[:, t]]
        a = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(1).clip(0, A - 1)
        row = obs[:, t] * A + a
        u = start[row] + rng.random(n) * (end[row] - start[row])
        pos = np.searchsorted(cum, u, side="right").clip(P.indptr[row], P.indptr[row + 1] - 1)
        acts[:, t] = a
        obs[:, t + 1] = P.indices[pos]
    return obs, acts

