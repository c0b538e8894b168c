r"""Readable numpy/scipy versions of the tabular solvers: the oracle of the tests and the ``reference`` backend.

Finite horizon (Ziebart 2010, recurrences 9.1-9.3; the conventions of ``imitation``'s ``mce_partition_fh``):

.. math:: Q_{H-1} = r, \quad Q_t = r + \gamma P V_{t+1}, \quad
          V_t(s) = \tau \log \sum_a e^{Q_t(s, a) / \tau}, \quad \pi_t = e^{(Q_t - V_t) / \tau}.

Occupancies: :math:`D_0 = p_0`, :math:`D_{t+1}(s') = \sum_{s,a} D_t(s) \pi_t(a|s) P(s'|s,a)` for
:math:`t < H` (``H + 1`` rows, as imitation), :math:`D_{cum} = \sum_{t=0}^{H} \gamma^t D_t`.

Discounted (infinite horizon): the fixed point of the same backup, found here by *soft policy iteration* with
exact linear solves -- another algorithm than the fast path's value iteration, so the two check each other:
:math:`V^\pi = (I - \gamma P_\pi)^{-1} \sum_a \pi (r - \tau \log \pi)`, then
:math:`\pi \leftarrow \mathrm{softmax}((r + \gamma P V^\pi)/\tau)`. The discounted occupancy is
:math:`\rho(s, a) = \pi(a|s) [(I - \gamma P_\pi^\top)^{-1} p_0](s)`.

All products use scipy's CSR matrix of P, so the reference also runs on sparse MDPs.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import logsumexp

from .mdp import TabularMDP, as_state_action

__all__ = ["discounted_occupancy_reference", "mce_occupancy_measures_reference", "mce_partition_fh_reference",
           "soft_value_iteration_reference", "state_action_occupancy_reference"]


def _P(mdp: TabularMDP) -> sp.csr_matrix:
    return mdp.transitions_csr


def mce_partition_fh_reference(mdp: TabularMDP, reward: np.ndarray, discount: float, temperature: float = 1.0):
    """(V, Q, pi) of shapes (H, S), (H, S, A), (H, S, A) by the backward recurrence above."""
    S, A, H = mdp.n_states, mdp.action_dim, mdp.horizon
    r = as_state_action(reward, A)
    V = np.zeros((H, S))
    Q = np.zeros((H, S, A))
    for t in reversed(range(H)):
        Q[t] = r if t == H - 1 else r + discount * (_P(mdp) @ V[t + 1]).reshape(S, A)
        V[t] = temperature * logsumexp(Q[t] / temperature, axis=1)
    pi = np.exp((Q - V[:, :, None]) / temperature)
    return V, Q, pi


def mce_occupancy_measures_reference(mdp: TabularMDP, pi: np.ndarray, discount: float):
    """(D, Dcum): state occupancy per step, shape (H + 1, S), and its discounted sum, shape (S,)."""
    S, H = mdp.n_states, mdp.horizon
    D = np.zeros((H + 1, S))
    D[0] = mdp.initial_state_dist
    for t in range(H):
        x = D[t][:, None] * pi[t]
        D[t + 1] = _P(mdp).T @ x.reshape(-1)
    Dcum = sum(discount**t * D[t] for t in range(H + 1))
    return D, Dcum


def state_action_occupancy_reference(mdp: TabularMDP, pi: np.ndarray, discount: float) -> np.ndarray:
    r""":math:`\sum_{t<H} \gamma^t D_t(s) \pi_t(a|s)` (finite horizon, pi (H, S, A)), or the discounted
    :math:`\rho(s, a)` (pi (S, A), no horizon)."""
    if mdp.horizon is None:
        return discounted_occupancy_reference(mdp, pi, discount)
    D, _ = mce_occupancy_measures_reference(mdp, pi, discount)
    return sum(discount**t * D[t][:, None] * pi[t] for t in range(mdp.horizon))


def _policy_matrix(pi: np.ndarray) -> sp.csr_matrix:
    """Pi of shape (S, S * A) with Pi[s, s * A + a] = pi(a|s), so that P_pi = Pi @ P."""
    S, A = pi.shape
    rows = np.repeat(np.arange(S), A)
    return sp.csr_matrix((pi.ravel(), (rows, np.arange(S * A))), shape=(S, S * A))


def discounted_occupancy_reference(mdp: TabularMDP, pi: np.ndarray, discount: float) -> np.ndarray:
    r""":math:`\rho(s, a) = \sum_t \gamma^t \Pr(s_t = s, a_t = a)` by one sparse linear solve."""
    S = mdp.n_states
    P_pi = (_policy_matrix(pi) @ _P(mdp)).tocsc()
    rho_s = spla.spsolve((sp.identity(S, format="csc") - discount * P_pi.T).tocsc(), mdp.initial_state_dist)
    return np.asarray(rho_s)[:, None] * pi


def soft_value_iteration_reference(mdp: TabularMDP, reward: np.ndarray, discount: float, temperature: float = 1.0,
                                   tol: float = 1e-13, max_iter: int = 500):
    """(V, Q, pi) of the discounted soft Bellman equation, shapes (S,), (S, A), (S, A), by soft policy iteration."""
    S, A = mdp.n_states, mdp.action_dim
    r = as_state_action(reward, A)
    pi = np.full((S, A), 1.0 / A)
    I = sp.identity(S, format="csc")
    V = np.zeros(S)
    for _ in range(max_iter):
        P_pi = (_policy_matrix(pi) @ _P(mdp)).tocsc()
        ent = np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1.0)), 0.0)
        V_new = spla.spsolve((I - discount * P_pi).tocsc(), (pi * r).sum(1) - temperature * ent.sum(1))
        Q = r + discount * (_P(mdp) @ V_new).reshape(S, A)
        pi = np.exp((Q - temperature * logsumexp(Q / temperature, axis=1)[:, None]) / temperature)
        done = np.max(np.abs(V_new - V)) <= tol * max(1.0, np.max(np.abs(V_new)))
        V = V_new
        if done:
            break
    V = temperature * logsumexp(Q / temperature, axis=1)
    return V, Q, pi
