r"""Tabular MDPs: the :class:`TabularMDP` type, its checks, and the transition products every solver uses.

An MDP has :math:`S` states, :math:`A` actions, transitions :math:`P(s' \mid s, a)`, a reward
:math:`r(s)` or :math:`r(s, a)`, an optional cost :math:`c(s)` or :math:`c(s, a)` (for constrained
problems), an initial distribution :math:`p_0`, and either a finite horizon :math:`H` or none (discounted,
infinite horizon, discount :math:`\gamma < 1`).

Choices, and why:

* **Two storages of P.** Dense, shape ``(S, A, S)`` -- the layout of ``imitation``'s ``transition_matrix``,
  so a dense :class:`TabularMDP` can be handed to ``imitation.algorithms.mce_irl`` as is -- or sparse CSR of
  shape ``(S * A, S)`` with row ``s * A + a``. A 300 x 300 gridworld has :math:`9 \cdot 10^4` states; its
  dense tensor would take 259 GB, its CSR matrix about 20 MB.
* **Sparse products go through** :func:`fastnips.ops.spmm` (backend ``cpp`` where built); dense ones through
  numpy's BLAS. The transpose needed by the forward (occupancy) pass is built once per MDP and cached.
* **Attribute names follow imitation/seals** (``transition_matrix``, ``reward_matrix``,
  ``initial_state_dist``, ``horizon``, ``state_dim``, ``action_dim``).
* **Checks** (all before any solve): row sums of P equal 1 within ``1e-8``, no negative or non-finite
  probability, matching shapes, :math:`p_0` a distribution, horizon a positive int or None, discount in
  (0, 1] and < 1 without a horizon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import _backend

__all__ = ["RL_BACKENDS", "TabularMDP"]

# "reference": readable numpy/scipy (fastnips.rl.reference); "cpp": the fast path, whose sparse products run in
# the compiled spmm (dense products use numpy's BLAS on either).
RL_BACKENDS = ("reference", "cpp")

ROW_SUM_TOL = 1e-8


@dataclass(frozen=True, eq=False)
class TabularMDP:
    r"""A tabular MDP, finite-horizon or discounted.

    Parameters
    ----------
    transition_matrix : ndarray (S, A, S) or scipy.sparse matrix (S * A, S)
        :math:`P(s' \mid s, a)`; in the sparse form row ``s * A + a`` holds the distribution of the next state.
        Stored as given (float64; sparse as CSR).
    reward_matrix : ndarray (S,) or (S, A)
        Reward per state or per state-action.
    initial_state_dist : ndarray (S,)
        :math:`p_0`, non-negative, sums to 1.
    horizon : int or None
        Number of decisions :math:`H` (finite horizon), or None for the discounted infinite-horizon problem.
    discount : float, default 1.0
        :math:`\gamma \in (0, 1]`; must be < 1 when ``horizon`` is None.
    cost_matrix : ndarray (S,) or (S, A), optional
        Cost of a constrained MDP (e.g. 1 on hazard cells).
    n_actions : int, optional
        Needed only for an empty sparse matrix; otherwise ``shape[0] // shape[1]``.
    meta : mapping, optional
        Free information about the instance (a gridworld stores its layout here).

    Raises
    ------
    ValueError
        Naming the argument: wrong shapes, negative or non-finite probabilities, rows of P or ``p0`` not
        summing to 1, a bad horizon or discount.

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.rl import TabularMDP
    >>> P = np.full((2, 2, 2), 0.5)
    >>> mdp = TabularMDP(P, np.array([0.0, 1.0]), np.array([1.0, 0.0]), horizon=3)
    >>> mdp.n_states, mdp.n_actions, mdp.is_sparse
    (2, 2, False)
    """

    transition_matrix: Any
    reward_matrix: np.ndarray
    initial_state_dist: np.ndarray
    horizon: int | None = None
    discount: float = 1.0
    cost_matrix: np.ndarray | None = None
    n_actions: int | None = None
    meta: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        P, S, A = _check_transitions(self.transition_matrix, self.n_actions)
        object.__setattr__(self, "transition_matrix", P)
        object.__setattr__(self, "n_actions", A)
        object.__setattr__(self, "reward_matrix", check_reward(self.reward_matrix, S, A, "reward_matrix"))
        if self.cost_matrix is not None:
            object.__setattr__(self, "cost_matrix", check_reward(self.cost_matrix, S, A, "cost_matrix"))
        object.__setattr__(self, "initial_state_dist", _check_distribution(self.initial_state_dist, S))
        object.__setattr__(self, "horizon", _check_horizon(self.horizon))
        object.__setattr__(self, "discount", check_discount(self.discount, self.horizon))

    @property
    def n_states(self) -> int:
        """Number of states S."""
        return int(self.transition_matrix.shape[1] if self.is_sparse else self.transition_matrix.shape[0])

    @property
    def state_dim(self) -> int:
        """S (imitation's name)."""
        return self.n_states

    @property
    def action_dim(self) -> int:
        """A (imitation's name)."""
        return int(self.n_actions)

    @property
    def is_sparse(self) -> bool:
        """Whether the transitions are stored as a CSR matrix of shape (S * A, S)."""
        return sp.issparse(self.transition_matrix)

    @cached_property
    def transitions_csr(self) -> sp.csr_matrix:
        """P as a CSR matrix of shape (S * A, S) (a view of the dense tensor's data is converted once)."""
        if self.is_sparse:
            return self.transition_matrix
        return sp.csr_matrix(self.transition_matrix.reshape(-1, self.n_states))

    @cached_property
    def transitions_csr_t(self) -> sp.csr_matrix:
        """:math:`P^\\top` as CSR of shape (S, S * A), for the forward (occupancy) pass; built once."""
        return self.transitions_csr.T.tocsr()

    def with_reward(self, reward: np.ndarray) -> TabularMDP:
        """The same MDP with another reward (checked; the transitions and their cached transposes are shared).

        Parameters
        ----------
        reward : ndarray (S,) or (S, A)

        Returns
        -------
        TabularMDP
        """
        new = TabularMDP.__new__(TabularMDP)
        new.__dict__.update(self.__dict__)
        object.__setattr__(new, "reward_matrix", check_reward(reward, self.n_states, self.action_dim, "reward"))
        return new


# ---------------------------------------------------------------------------------------------------
# checks


def _check_transitions(P, n_actions):
    if sp.issparse(P):
        P = sp.csr_matrix(P, dtype=np.float64)
        rows, S = P.shape
        if n_actions is None:
            if S == 0 or rows % S:
                raise ValueError(f"transition_matrix: a sparse matrix must have shape (S * A, S); got {P.shape}")
            n_actions = rows // S
        if rows != S * n_actions:
            raise ValueError(f"transition_matrix: shape {P.shape} is not (S * A, S) with A = {n_actions}")
        data, sums = P.data, np.asarray(P.sum(axis=1)).ravel()
    else:
        P = np.asarray(P, dtype=np.float64)
        if P.ndim != 3 or P.shape[0] != P.shape[2]:
            raise ValueError(f"transition_matrix: expected a dense (S, A, S) array or a sparse (S * A, S) matrix, "
                             f"got shape {P.shape}")
        if n_actions is not None and n_actions != P.shape[1]:
            raise ValueError(f"n_actions={n_actions} disagrees with transition_matrix.shape[1]={P.shape[1]}")
        S, n_actions = P.shape[0], P.shape[1]
        data, sums = P.ravel(), P.sum(axis=2).ravel()
    if S == 0 or n_actions == 0:
        raise ValueError("transition_matrix: the MDP needs at least one state and one action")
    if not np.isfinite(data).all():
        raise ValueError("transition_matrix: contains NaN or inf")
    if (data < 0).any():
        raise ValueError(f"transition_matrix: negative probability {data.min():.3g}")
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"transition_matrix: P(. | s={r // n_actions}, a={r % n_actions}) sums to {sums[r]:.6g}, "
                         f"not 1 ({bad.size} such rows)")
    return P, S, int(n_actions)


def check_reward(r, S: int, A: int, name: str) -> np.ndarray:
    """A reward or cost as float64 of shape (S,) or (S, A), finite; else a ValueError naming ``name``."""
    r = np.asarray(r, dtype=np.float64)
    if r.shape not in ((S,), (S, A)):
        raise ValueError(f"{name}: expected shape ({S},) or ({S}, {A}), got {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError(f"{name}: contains NaN or inf")
    return r


def _check_distribution(p, S: int) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (S,):
        raise ValueError(f"initial_state_dist: expected shape ({S},), got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("initial_state_dist: must be finite and non-negative")
    if abs(p.sum() - 1.0) > ROW_SUM_TOL:
        raise ValueError(f"initial_state_dist: sums to {p.sum():.6g}, not 1")
    return p


def _check_horizon(h):
    if h is None:
        return None
    if isinstance(h, bool) or not isinstance(h, int | np.integer) or h < 1:
        raise ValueError(f"horizon: expected a positive int or None, got {h!r}")
    return int(h)


def check_discount(g, horizon) -> float:
    """The discount as a float in (0, 1] (< 1 without a horizon); else a ValueError."""
    if isinstance(g, bool) or not isinstance(g, int | float | np.floating | np.integer) or not 0.0 < g <= 1.0:
        raise ValueError(f"discount: expected a number in (0, 1], got {g!r}")
    if horizon is None and g >= 1.0:
        raise ValueError("discount: must be < 1 for an infinite-horizon (horizon=None) MDP")
    return float(g)


def check_temperature(tau) -> float:
    """The entropy temperature as a positive finite float; else a ValueError."""
    if isinstance(tau, bool) or not isinstance(tau, int | float | np.floating | np.integer) or not (
            np.isfinite(tau) and tau > 0):
        raise ValueError(f"temperature: expected a positive number, got {tau!r}")
    return float(tau)


def as_state_action(r: np.ndarray, A: int) -> np.ndarray:
    """(S,) or (S, A) -> (S, A) (a state reward is the same for every action)."""
    return np.repeat(r[:, None], A, axis=1) if r.ndim == 1 else r


def resolve_backend(backend: str, op: str) -> str:
    """``backend="auto"`` -> ``cpp`` where the compiled core is built, else ``reference``."""
    return _backend.resolve(backend, op=op, supported=RL_BACKENDS)


# ---------------------------------------------------------------------------------------------------
# transition products of the fast path


def p_times(mdp: TabularMDP, V: np.ndarray) -> np.ndarray:
    r""":math:`(P V)(s, a) = \sum_{s'} P(s' \mid s, a) V(s')`; V of shape (S,) or (S, k) -> (S, A) or (S, A, k)."""
    S, A = mdp.n_states, mdp.action_dim
    if mdp.is_sparse:
        from ..ops import spmm

        out = spmm(mdp.transition_matrix, np.ascontiguousarray(V))
    else:
        out = mdp.transition_matrix.reshape(S * A, S) @ V
    return out.reshape((S, A, *V.shape[1:]))


def pt_times(mdp: TabularMDP, x: np.ndarray) -> np.ndarray:
    r""":math:`(P^\top x)(s') = \sum_{s, a} P(s' \mid s, a) x(s, a)`; x of shape (S, A) or (S, A, k)."""
    S, A = mdp.n_states, mdp.action_dim
    flat = np.ascontiguousarray(x.reshape((S * A, *x.shape[2:])))
    if mdp.is_sparse:
        from ..ops import spmm

        return spmm(mdp.transitions_csr_t, flat)
    return mdp.transition_matrix.reshape(S * A, S).T @ flat
