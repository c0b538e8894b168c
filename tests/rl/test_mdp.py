"""fastnips.rl.mdp / soft / envs: soft value iteration and occupancies against the reference, a brute-force
oracle, imitation's own functions, and closed forms; bad input refused."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips.rl import (
    TabularMDP,
    gridworld,
    mce_occupancy_measures,
    mce_partition_fh,
    random_mdp,
    sample_trajectories,
    soft_value_iteration,
    state_action_occupancy,
)

from .conftest import brute_force_fh_value


def test_partition_matches_reference(small_fh, backend):
    got = mce_partition_fh(small_fh, backend=backend, temperature=0.7, discount=0.95)
    want = mce_partition_fh(small_fh, backend="reference", temperature=0.7, discount=0.95)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)


def test_partition_equals_brute_force_enumeration(backend):
    # deterministic transitions: then the causal-entropy value is log sum over all trajectories of exp(return)
    mdp = random_mdp(3, 2, horizon=3, seed=0, branching=1)
    V, _, pi = mce_partition_fh(mdp, backend=backend)
    np.testing.assert_allclose(V[0], brute_force_fh_value(mdp, mdp.reward_matrix), atol=1e-12)
    np.testing.assert_allclose(pi.sum(-1), 1.0, atol=1e-14)


def test_occupancy_matches_reference_and_conserves_mass(small_fh, backend):
    D, Dcum = mce_occupancy_measures(small_fh, backend=backend, discount=0.9)
    D_ref, Dcum_ref = mce_occupancy_measures(small_fh, backend="reference", discount=0.9)
    np.testing.assert_allclose(D, D_ref, atol=1e-14)
    np.testing.assert_allclose(Dcum, Dcum_ref, atol=1e-13)
    np.testing.assert_allclose(D.sum(1), 1.0, atol=1e-13)
    assert Dcum.sum() == pytest.approx(sum(0.9**t for t in range(small_fh.horizon + 1)), abs=1e-12)


def test_state_action_occupancy_is_reward_gradient(small_fh, backend):
    """d p0.V_0 / d r(s, a) = sum_t gamma^t D_t(s) pi_t(a|s): central differences on the soft value."""
    g = 0.95
    _, _, pi = mce_partition_fh(small_fh, discount=g, backend=backend)
    rho = state_action_occupancy(small_fh, pi, discount=g, backend=backend)
    r0 = small_fh.reward_matrix
    fd = np.zeros_like(rho)
    for idx in np.ndindex(*rho.shape):
        e = np.zeros_like(r0)
        e[idx] = 1e-6
        vp = small_fh.initial_state_dist @ mce_partition_fh(small_fh, reward=r0 + e, discount=g)[0][0]
        vm = small_fh.initial_state_dist @ mce_partition_fh(small_fh, reward=r0 - e, discount=g)[0][0]
        fd[idx] = (vp - vm) / 2e-6
    np.testing.assert_allclose(rho, fd, atol=1e-8)


@pytest.mark.parametrize("tau", [1.0, 0.3])
def test_discounted_value_iteration_matches_policy_iteration(storage, backend, tau):
    mdp = random_mdp(7, 3, discount=0.9, seed=5, branching=3, sparse=storage == "sparse")
    V, Q, pi = soft_value_iteration(mdp, backend=backend, temperature=tau, tol=1e-12)
    V_ref, _Q_ref, pi_ref = soft_value_iteration(mdp, backend="reference", temperature=tau)
    np.testing.assert_allclose(V, V_ref, atol=1e-10)
    np.testing.assert_allclose(pi, pi_ref, atol=1e-10)
    # the soft Bellman equation itself, written out
    P = mdp.transitions_csr.toarray().reshape(7, 3, 7)
    np.testing.assert_allclose(Q, mdp.reward_matrix + 0.9 * P @ V, atol=1e-10)
    np.testing.assert_allclose(V, tau * np.log(np.exp(Q / tau).sum(1)), atol=1e-10)


def test_discounted_occupancy_solves_flow_equations(small_grid, backend):
    _, _, pi = soft_value_iteration(small_grid, tol=1e-12)
    rho = state_action_occupancy(small_grid, pi, backend=backend)
    P = small_grid.transitions_csr.toarray().reshape(25, 4, 25)
    lhs = rho.sum(1)
    rhs = small_grid.initial_state_dist + 0.9 * np.einsum("sa,sat->t", rho, P)
    np.testing.assert_allclose(lhs, rhs, atol=1e-10)
    assert rho.sum() == pytest.approx(1 / (1 - 0.9), abs=1e-9)


def test_dense_and_sparse_storage_agree():
    sparse = gridworld(4, 6, walls=[(1, 1), (2, 4)], hazards=[(0, 3)], horizon=12, slip=0.3)
    dense = gridworld(4, 6, walls=[(1, 1), (2, 4)], hazards=[(0, 3)], horizon=12, slip=0.3, sparse=False)
    assert sparse.is_sparse
    assert not dense.is_sparse
    for a, b in zip(mce_partition_fh(sparse), mce_partition_fh(dense), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-13)


def test_gridworld_dynamics_by_hand():
    mdp = gridworld(3, 3, walls=[(1, 1)], slip=0.2, horizon=2, sparse=False)
    P = mdp.transition_matrix
    # from the centre-left cell (1, 0) = state 3, moving right hits the wall at (1, 1): stay
    # right intended: 0.8 + 0.05 stay (blocked) ; up -> (0,0) 0.05 ; down -> (2,0) 0.05 ; left -> off grid: stay 0.05
    np.testing.assert_allclose(P[3, 3, [0, 3, 6]], [0.05, 0.9, 0.05])
    # no probability ever enters the wall
    assert P[:, :, 4].sum() == 0.0
    assert mdp.reward_matrix[8] == 1.0
    assert mdp.initial_state_dist[0] == 1.0


def test_big_gridworld_fits_and_conserves_mass():
    mdp = gridworld(300, 300, walls=0.1, hazards=0.05, horizon=3)
    assert mdp.transition_matrix.nnz <= 4 * 4 * 300 * 300
    D, _ = mce_occupancy_measures(mdp)
    np.testing.assert_allclose(D.sum(1), 1.0, atol=1e-12)


def test_sampled_trajectories_match_occupancy():
    mdp = gridworld(3, 3, slip=0.3, horizon=4)
    _, _, pi = mce_partition_fh(mdp)
    D, _ = mce_occupancy_measures(mdp, pi=pi)
    obs, _acts = sample_trajectories(mdp, pi, 40_000, seed=1)
    emp = np.stack([np.bincount(obs[:, t], minlength=9) / 40_000 for t in range(5)])
    # 4 sigma of a binomial proportion with n = 40000: 4 * 0.5 / 200 = 0.01
    np.testing.assert_allclose(emp, D, atol=0.01)
    again, _ = sample_trajectories(mdp, pi, 40_000, seed=1)
    assert np.array_equal(obs, again)


# ---------------------------------------------------------------------------------------------------
# the peer: imitation's own functions on the same MDP (the dense TabularMDP carries imitation's attribute names)


def test_agrees_with_imitation():
    mce = pytest.importorskip("imitation.algorithms.mce_irl",
                              reason="imitation (MCE-IRL) not installed: it pulls stable-baselines3, gymnasium, "
                                     "sacred and datasets, so it is not a test dependency")
    mdp = random_mdp(8, 3, horizon=10, seed=2, state_reward=True)
    for g in (1.0, 0.9):
        V, Q, pi = mce_partition_fh(mdp, discount=g)
        Vi, Qi, pii = mce.mce_partition_fh(mdp, discount=g)
        for a, b in ((V, Vi), (Q, Qi), (pi, pii)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
        D, Dcum = mce_occupancy_measures(mdp, pi=pi, discount=g)
        Di, Dcumi = mce.mce_occupancy_measures(mdp, pi=pi, discount=g)
        np.testing.assert_allclose(D, Di, rtol=0, atol=1e-10)
        np.testing.assert_allclose(Dcum, Dcumi, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------------------
# bad input


def _P():
    return np.full((2, 2, 2), 0.5)


@pytest.mark.parametrize(("P", "match"), [
    (np.full((2, 2, 2), 0.6), r"P\(. \| s=0, a=0\) sums to 1.2"),
    (np.array([[[1.5, -0.5]] * 2] * 2), "negative probability"),
    (np.full((2, 2, 3), 1 / 3), r"\(S, A, S\)"),
    (sp.csr_matrix(np.full((3, 2), 0.5)), r"\(S \* A, S\)"),
    (np.full((2, 2, 2), np.nan), "NaN"),
])
def test_bad_transitions(P, match):
    with pytest.raises(ValueError, match=f"transition_matrix: .*{match}|{match}"):
        TabularMDP(P, np.zeros(2), np.array([1.0, 0.0]), horizon=2)


@pytest.mark.parametrize(("kw", "match"), [
    ({"reward_matrix": np.zeros(3)}, r"reward_matrix: expected shape \(2,\) or \(2, 2\)"),
    ({"initial_state_dist": np.array([0.5, 0.6])}, "initial_state_dist: sums to 1.1"),
    ({"initial_state_dist": np.array([1.5, -0.5])}, "initial_state_dist: must be finite and non-negative"),
    ({"horizon": 0}, "horizon: expected a positive int"),
    ({"horizon": None, "discount": 1.0}, "discount: must be < 1"),
    ({"discount": 1.5}, r"discount: expected a number in \(0, 1\]"),
    ({"cost_matrix": np.ones((2, 3))}, "cost_matrix: expected shape"),
])
def test_bad_mdp_arguments(kw, match):
    args = {"transition_matrix": _P(), "reward_matrix": np.zeros(2), "initial_state_dist": np.array([1.0, 0.0]),
            "horizon": 2} | kw
    with pytest.raises(ValueError, match=match):
        TabularMDP(**args)


def test_bad_solver_arguments():
    fh = gridworld(3, 3, horizon=4)
    inf = gridworld(3, 3, discount=0.9)
    with pytest.raises(ValueError, match="mdp: this function needs a finite horizon"):
        mce_partition_fh(inf)
    with pytest.raises(ValueError, match="mdp: soft_value_iteration solves the infinite-horizon"):
        soft_value_iteration(fh)
    with pytest.raises(ValueError, match="temperature: expected a positive number"):
        mce_partition_fh(fh, temperature=0.0)
    with pytest.raises(ValueError, match=r"reward: expected shape \(9,\)"):
        mce_partition_fh(fh, reward=np.zeros(4))
    with pytest.raises(ValueError, match=r"pi: expected shape \(4, 9, 4\)"):
        mce_occupancy_measures(fh, pi=np.full((9, 4), 0.25))
    with pytest.raises(ValueError, match="pi: every"):
        mce_occupancy_measures(fh, pi=np.full((4, 9, 4), 0.3))
    with pytest.raises(ValueError, match="unknown backend"):
        mce_partition_fh(fh, backend="gpu")
    with pytest.raises(TypeError, match=r"mdp: expected a fastnips\.rl\.TabularMDP"):
        mce_partition_fh("grid")
    with pytest.raises(ValueError, match="horizon: expected a positive int"):
        sample_trajectories(inf, np.full((9, 4), 0.25), 3)
    with pytest.raises(ValueError, match="walls: cell outside"):
        gridworld(3, 3, walls=[(5, 5)])
    with pytest.raises(ValueError, match="slip: expected a probability"):
        gridworld(3, 3, slip=2.0)
    with pytest.raises(ValueError, match=r"sparse=False: a dense \(90000, 4, 90000\) array would take 241 GiB"):
        gridworld(300, 300, sparse=False)
    with pytest.raises(ValueError, match="branching=None: a dense"):
        random_mdp(30_000, 4, sparse=True)
