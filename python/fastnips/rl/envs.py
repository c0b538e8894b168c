r"""Test beds that need no network: random tabular MDPs and gridworlds with walls and hazard cells.

Gridworld dynamics (the usual slippery grid): actions 0..3 move up, down, left, right. With probability
``1 - slip`` the intended move happens, with probability ``slip`` a move drawn uniformly from the four (so the
intended one has ``1 - 3 slip / 4``). A move into a wall or off the grid leaves the agent where it is. Walls
are states that can never be entered (they stay in the state space, so that state ids are ``row * width +
col`` on every layout). The reward is per state (``goal_reward`` on the goal cell, ``step_reward``
elsewhere); the cost is ``hazard_cost`` on hazard cells, 0 elsewhere (the constraint of a constrained MDP).
Transitions are built vectorised straight into CSR, at most 4 nonzeros per row, so a 300 x 300 grid
(:math:`9 \cdot 10^4` states) takes about 20 MB.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .mdp import TabularMDP

__all__ = ["gridworld", "random_mdp"]

MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])  # up, down, left, right
DENSE_LIMIT_BYTES = 4 * 2**30  # refuse to build a dense (S, A, S) tensor (or S * A x S draws) above 4 GiB


def _check_dense(S: int, A: int, what: str) -> None:
    gib = S * A * S * 8 / 2**30
    if gib > DENSE_LIMIT_BYTES / 2**30:
        raise ValueError(f"{what}: a dense ({S}, {A}, {S}) array would take {gib:.0f} GiB; use sparse storage")


def _pos_int(x, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < 1:
        raise ValueError(f"{name}: expected a positive int, got {x!r}")
    return int(x)


def random_mdp(n_states: int, n_actions: int, *, horizon: int | None = None, discount: float = 1.0,
               branching: int | None = None, state_reward: bool = False, seed: int = 0,
               sparse: bool = False) -> TabularMDP:
    r"""A random tabular MDP: Dirichlet(1) next-state distributions and standard normal rewards and costs.

    Parameters
    ----------
    n_states, n_actions : int
    horizon : int, optional
        Finite horizon; None for a discounted MDP (then ``discount`` must be < 1).
    discount : float, default 1.0
    branching : int, optional
        Next states per (s, a), drawn without replacement; default all S (dense).
    state_reward : bool, default False
        Reward (and cost) of shape (S,) instead of (S, A).
    seed : int, default 0
    sparse : bool, default False
        Store P as CSR (S * A, S).

    Returns
    -------
    TabularMDP
        With ``cost_matrix`` uniform in [0, 1] and ``p0`` Dirichlet(1).

    Examples
    --------
    >>> from fastnips.rl import random_mdp
    >>> random_mdp(5, 3, horizon=4, seed=1).transition_matrix.shape
    (5, 3, 5)
    """
    S, A = _pos_int(n_states, "n_states"), _pos_int(n_actions, "n_actions")
    k = S if branching is None else _pos_int(branching, "branching")
    if k > S:
        raise ValueError(f"branching: at most n_states={S}, got {k}")
    if k == S or not sparse:
        _check_dense(S, A, "branching=None" if k == S else "sparse=False")
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=S * A)
    cols = np.argsort(rng.random((S * A, S)), axis=1)[:, :k] if k < S else np.tile(np.arange(S), (S * A, 1))
    P = sp.csr_matrix((probs.ravel(), cols.ravel(), np.arange(0, S * A * k + 1, k)), shape=(S * A, S))
    shape = (S,) if state_reward else (S, A)
    reward = rng.standard_normal(shape)
    cost = rng.random(shape)
    p0 = rng.dirichlet(np.ones(S))
    return TabularMDP(P if sparse else P.toarray().reshape(S, A, S), reward, p0, horizon=horizon, discount=discount,
                      cost_matrix=cost, meta={"kind": "random", "seed": seed})


def _mask(x, shape, name: str, rng, keep) -> np.ndarray:
    """A boolean layer of the grid: None, a density in [0, 1), a boolean (h, w) array or a list of (row, col)."""
    if x is None:
        m = np.zeros(shape, dtype=bool)
    elif isinstance(x, float):
        if not 0.0 <= x < 1.0:
            raise ValueError(f"{name}: a density must lie in [0, 1), got {x}")
        m = rng.random(shape) < x
    else:
        a = np.asarray(x)
        if a.dtype == bool:
            if a.shape != shape:
                raise ValueError(f"{name}: a boolean mask must have the grid's shape {shape}, got {a.shape}")
            m = a.copy()
        else:
            cells = a.reshape(-1, 2) if a.size else np.zeros((0, 2), dtype=int)
            if ((cells < 0) | (cells >= np.array(shape))).any():
                raise ValueError(f"{name}: cell outside the {shape[0]} x {shape[1]} grid")
            m = np.zeros(shape, dtype=bool)
            m[cells[:, 0], cells[:, 1]] = True
    for cell in keep:
        m[cell] = False
    return m


def gridworld(height: int, width: int, *, walls: object = None, hazards: object = None,
              goal: tuple[int, int] | None = None,
              start: tuple[int, int] = (0, 0), slip: float = 0.1, horizon: int | None = None,
              discount: float | None = None, goal_reward: float = 1.0, step_reward: float = 0.0,
              hazard_cost: float = 1.0, seed: int = 0, sparse: bool = True) -> TabularMDP:
    r"""A slippery gridworld with walls and hazard cells (see the module docstring for the dynamics).

    Parameters
    ----------
    height, width : int
    walls, hazards : None, float, bool array (height, width) or sequence of (row, col)
        A float is a density: each cell independently with that probability (``seed``). The start and goal
        cells are never walls or hazards.
    goal : (row, col), optional
        Default the bottom-right cell.
    start : (row, col), default (0, 0)
        The initial state (deterministic).
    slip : float in [0, 1], default 0.1
    horizon : int, optional
        Finite horizon, or None for a discounted MDP.
    discount : float, optional
        Default 1.0 with a horizon, 0.95 without.
    goal_reward, step_reward, hazard_cost : float
    seed : int, default 0
        For random walls and hazards.
    sparse : bool, default True
        CSR transitions; False gives a dense (S, A, S) tensor (small grids only).

    Returns
    -------
    TabularMDP
        ``meta`` holds ``shape``, ``walls``, ``hazards`` (boolean grids), ``goal`` and ``start``.

    Examples
    --------
    >>> from fastnips.rl import gridworld
    >>> mdp = gridworld(5, 5, walls=[(2, 2)], hazards=[(1, 3)], horizon=20)
    >>> mdp.n_states, mdp.n_actions, mdp.transition_matrix.shape
    (25, 4, (100, 25))
    """
    h, w = _pos_int(height, "height"), _pos_int(width, "width")
    if not sparse:
        _check_dense(h * w, 4, "sparse=False")
    goal = (h - 1, w - 1) if goal is None else tuple(int(v) for v in goal)
    start = tuple(int(v) for v in start)
    for name, cell in (("goal", goal), ("start", start)):
        if len(cell) != 2 or not (0 <= cell[0] < h and 0 <= cell[1] < w):
            raise ValueError(f"{name}: expected (row, col) inside the {h} x {w} grid, got {cell}")
    if isinstance(slip, bool) or not isinstance(slip, int | float) or not 0.0 <= slip <= 1.0:
        raise ValueError(f"slip: expected a probability in [0, 1], got {slip!r}")
    rng = np.random.default_rng(seed)
    wall = _mask(walls, (h, w), "walls", rng, (goal, start))
    hazard = _mask(hazards, (h, w), "hazards", rng, (goal, start)) & ~wall
    S, A = h * w, 4
    rr, cc = np.divmod(np.arange(S), w)
    # next cell of each state under each of the 4 moves (blocked moves stay)
    nr = rr[:, None] + MOVES[None, :, 0]
    nc = cc[:, None] + MOVES[None, :, 1]
    inside = (nr >= 0) & (nr < h) & (nc >= 0) & (nc < w)
    nxt = np.where(inside, nr.clip(0, h - 1) * w + nc.clip(0, w - 1), np.arange(S)[:, None])
    nxt = np.where(wall.ravel()[nxt], np.arange(S)[:, None], nxt)  # (S, 4 moves)
    # row s*A + a: moves m with probability (1 - slip)[m == a] + slip / 4; repeats sum in the CSR conversion
    prob = (1.0 - slip) * np.eye(A) + slip / A  # (a, m)
    rows = np.repeat(np.arange(S * A), A)
    cols = np.repeat(nxt, A, axis=0).reshape(S, A, A).reshape(-1)  # for each (s, a): the 4 moves' targets
    data = np.tile(prob.ravel(), S)
    P = sp.coo_matrix((data, (rows, cols)), shape=(S * A, S)).tocsr()
    P.sum_duplicates()
    P.eliminate_zeros()
    reward = np.full(S, float(step_reward))
    reward[goal[0] * w + goal[1]] = float(goal_reward)
    cost = np.where(hazard.ravel(), float(hazard_cost), 0.0)
    p0 = np.zeros(S)
    p0[start[0] * w + start[1]] = 1.0
    g = (1.0 if horizon is not None else 0.95) if discount is None else discount
    meta = {"kind": "gridworld", "shape": (h, w), "walls": wall, "hazards": hazard, "goal": goal, "start": start}
    return TabularMDP(P if sparse else P.toarray().reshape(S, A, S), reward, p0, horizon=horizon, discount=g,
                      cost_matrix=cost, meta=meta)
