"""Fixtures of the rl tests: the backends of the tabular solvers (reference always; cpp where built) and the
small MDPs several modules share."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.rl import RL_BACKENDS, gridworld, random_mdp

from ..helpers import backend_fixture

backend = backend_fixture(*RL_BACKENDS)


@pytest.fixture(params=["dense", "sparse"])
def storage(request):
    return request.param


@pytest.fixture
def small_fh(storage):
    """A 6-state, 3-action finite-horizon MDP with stochastic transitions and (S, A) rewards."""
    return random_mdp(6, 3, horizon=8, seed=3, branching=4, sparse=storage == "sparse")


@pytest.fixture
def small_grid():
    """A 5 x 5 discounted gridworld with a wall and two hazards."""
    return gridworld(5, 5, walls=[(2, 2)], hazards=[(1, 3), (3, 1)], discount=0.9, slip=0.2)


def brute_force_fh_value(mdp, reward):
    """log Z by enumerating every trajectory (tiny MDPs only), an oracle independent of any backward
    recurrence: V_0(s) = log sum_{a_0, s_1, ..., a_{H-1}} prod P exp(sum r). With deterministic transitions this
    is the maximum-causal-entropy soft value (with stochastic ones it is the non-causal, optimistic value)."""
    S, A, H = mdp.n_states, mdp.action_dim, mdp.horizon
    P = mdp.transitions_csr.toarray().reshape(S, A, S)
    r = reward if reward.ndim == 2 else np.repeat(reward[:, None], A, 1)
    import itertools

    out = np.zeros(S)
    for s0 in range(S):
        total = 0.0
        for acts in itertools.product(range(A), repeat=H):
            for states in itertools.product(range(S), repeat=H - 1):
                path = (s0, *states)
                w = np.exp(sum(r[path[t], acts[t]] for t in range(H)))
                for t in range(H - 1):
                    w *= P[path[t], acts[t], path[t + 1]]
                total += w
        out[s0] = np.log(total)
    return out
