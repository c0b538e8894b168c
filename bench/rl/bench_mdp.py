"""Finite-horizon soft value iteration (MCE partition) and occupancies: fastnips (sparse CSR transitions,
compiled spmm; and the scipy reference) vs imitation's ``mce_partition_fh`` / ``mce_occupancy_measures``
(dense (S, A, S) transitions), on slippery n x n gridworlds with 10% walls, horizon 100.

imitation rows run where imitation is installed (it is not a test dependency: it pulls stable-baselines3,
gymnasium, sacred, datasets) and where its dense tensor fits: n = 100 takes 3.2 GB; n = 300 would take 259 GB,
so that row is fastnips only. Every imitation row is checked against fastnips to 1e-10 on the same MDP.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fastnips.rl import gridworld, mce_occupancy_measures, mce_partition_fh

H = 100
SIZES = [30, 100, 300]
IMPLS = ["fastnips-cpp", "fastnips-reference", "imitation"]
DENSE_LIMIT = 100  # the largest grid whose dense (S, A, S) float64 tensor is built (S = 10^4: 3.2 GB)
SMOKE_DENSE_LIMIT = 30


@functools.cache
def grid(n: int):
    return gridworld(n, n, walls=0.1, hazards=0.05, horizon=H, slip=0.1, seed=n)


def _dense(mdp):
    S, A = mdp.n_states, mdp.action_dim
    return mdp.transitions_csr.toarray().reshape(S, A, S)


def _run(impl, mdp, dense_env):
    if impl == "imitation":
        mce = pytest.importorskip("imitation.algorithms.mce_irl", reason="imitation not installed")
        V, _Q, pi = mce.mce_partition_fh(dense_env)
        D, _Dcum = mce.mce_occupancy_measures(dense_env, pi=pi)
        return V, pi, D
    b = impl.split("-")[1]
    V, _Q, pi = mce_partition_fh(mdp, backend=b)
    D, _Dcum = mce_occupancy_measures(mdp, pi=pi, backend=b)
    return V, pi, D


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", IMPLS)
def test_mce_partition_and_occupancy(benchmark, machine_facts, impl, n):
    mdp = grid(n)
    dense_env = None
    if impl == "imitation":
        pytest.importorskip("imitation.algorithms.mce_irl", reason="imitation not installed")
        limit = SMOKE_DENSE_LIMIT if benchmark.disabled else DENSE_LIMIT
        if n > limit:
            gb = mdp.n_states**2 * mdp.action_dim * 8 / 1e9
            pytest.skip(f"imitation needs the dense (S, A, S) tensor: {gb:.0f} GB at n = {n}")
        dense_env = mdp.with_reward(mdp.reward_matrix)
        object.__setattr__(dense_env, "transition_matrix", _dense(mdp))
    if impl == "fastnips-reference" and n > 100 and benchmark.disabled:
        pytest.skip("smoke run: the reference at n = 300 takes seconds")
    benchmark.group = f"mce_partition_fh + occupancy, gridworld {n}x{n} (S={n * n}), H={H}"
    benchmark.extra_info.update(n_states=mdp.n_states, horizon=H, nnz=int(mdp.transition_matrix.nnz))
    rounds = 1 if impl == "imitation" or n >= 300 else 3
    V, pi, D = benchmark.pedantic(_run, args=(impl, mdp, dense_env), rounds=rounds, iterations=1)
    if impl != "fastnips-cpp":  # results checked equal to fastnips' fast path in every run
        V0, pi0, D0 = _run("fastnips-cpp", mdp, None)
        for a, b in ((V, V0), (pi, pi0), (D, D0)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
