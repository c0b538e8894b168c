"""fastnips.rl.fisher / irl: the dual gradient and Fisher against finite differences, the interpolation identity
for both geodesic averages (1e-6), the bandit mirror-descent identity (exact), geometric convergence at rate
(1 - eta), and the trainer on demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.rl import (
    gridworld,
    mce_partition_fh,
    random_mdp,
    sample_trajectories,
    soft_value_iteration,
    state_action_occupancy,
)
from fastnips.rl.fisher import averaged_fisher, dual_objective, fisher_matrix, pinv_solve, solve_soft
from fastnips.rl.irl import IRL, empirical_occupancy, mirror_descent_step, target_reward


def _problem(horizon):
    """6 states, 3 actions, stochastic P, d = 4 features; the expert is soft-optimal for theta_star."""
    kw = {"horizon": 8, "discount": 1.0} if horizon else {"discount": 0.9}
    mdp = random_mdp(6, 3, seed=11, branching=3, **kw)
    rng = np.random.default_rng(4)
    Phi = rng.standard_normal((6, 3, 4))
    theta, theta_star = rng.standard_normal(4), rng.standard_normal(4)
    mu_E = np.einsum("sa,sad->d", solve_soft(mdp, Phi @ theta_star).rho, Phi)
    return mdp, Phi, theta, theta_star, mu_E


@pytest.mark.parametrize("horizon", [True, False], ids=["finite", "discounted"])
def test_dual_gradient_and_fisher_equal_finite_differences(horizon):
    mdp, Phi, theta, _, mu_E = _problem(horizon)
    _L, grad, sol = dual_objective(mdp, theta, Phi, mu_E)
    E, h = np.eye(4), 1e-5
    fd = np.array([(dual_objective(mdp, theta + h * e, Phi, mu_E)[0] - dual_objective(mdp, theta - h * e, Phi, mu_E)[0])
                   / (2 * h) for e in E])
    np.testing.assert_allclose(grad, fd, atol=1e-7)
    F = fisher_matrix(mdp, theta, Phi, sol=sol)
    fdF = np.column_stack([(dual_objective(mdp, theta + h * e, Phi, mu_E)[1]
                            - dual_objective(mdp, theta - h * e, Phi, mu_E)[1]) / (2 * h) for e in E])
    np.testing.assert_allclose(F, fdF, atol=1e-7)
    assert np.linalg.eigvalsh(F).min() > 0  # PSD (here definite: 4 generic features)


@pytest.mark.parametrize("horizon", [True, False], ids=["finite", "discounted"])
def test_e_line_average_fisher_step_is_the_interpolation(horizon):
    mdp, Phi, theta, theta_star, mu_E = _problem(horizon)
    _, grad, _ = dual_objective(mdp, theta, Phi, mu_E)
    Fbar = averaged_fisher(mdp, theta, Phi, theta_target=theta_star, line="e", n_quad=32)
    for eta in (0.1, 0.5, 1.0):
        step = theta - eta * np.linalg.solve(Fbar, grad)
        np.testing.assert_allclose(step, (1 - eta) * theta + eta * theta_star, atol=1e-6)
    # the local Fisher is not the right preconditioner: its step misses the target by O(1)
    local = theta - np.linalg.solve(fisher_matrix(mdp, theta, Phi), grad)
    assert np.abs(local - theta_star).max() > 1e-2


def test_m_line_average_inverse_fisher_step_is_the_interpolation():
    mdp, Phi, theta, theta_star, mu_E = _problem(True)
    _, grad, _ = dual_objective(mdp, theta, Phi, mu_E)
    G = averaged_fisher(mdp, theta, Phi, mu_target=mu_E, line="m", n_quad=32)
    for eta in (0.25, 1.0):
        np.testing.assert_allclose(theta - eta * G @ grad, (1 - eta) * theta + eta * theta_star, atol=1e-6)


def test_tabular_identity_holds_modulo_the_gauge():
    """Tabular rewards (F singular): the pseudo-inverse e-line step lands on a reward with the target's policy."""
    mdp = random_mdp(4, 2, discount=0.8, seed=2, branching=2)
    Phi = np.eye(8).reshape(4, 2, 8)
    rng = np.random.default_rng(0)
    theta, theta_star = rng.standard_normal(8), rng.standard_normal(8)
    mu_E = solve_soft(mdp, Phi @ theta_star).rho.ravel()
    _, grad, _ = dual_objective(mdp, theta, Phi, mu_E)
    assert np.linalg.eigvalsh(fisher_matrix(mdp, theta, Phi)).min() < 1e-10  # singular: shaping directions
    Fbar = averaged_fisher(mdp, theta, Phi, theta_target=theta_star, line="e", n_quad=32)
    for eta in (0.3, 1.0):
        step = theta - eta * pinv_solve(Fbar, grad)
        want = solve_soft(mdp, Phi @ ((1 - eta) * theta + eta * theta_star)).pi
        np.testing.assert_allclose(solve_soft(mdp, Phi @ step).pi, want, atol=1e-6)


def test_bandit_interpolated_reward_is_entropic_mirror_descent():
    rng = np.random.default_rng(1)
    bandit = random_mdp(1, 5, horizon=1, seed=0)
    r, pi_E = rng.standard_normal(5), rng.dirichlet(np.ones(5))
    pi = mce_partition_fh(bandit, reward=r[None])[2][0, 0]
    for eta in (0.1, 0.5, 0.9, 1.0):
        r_new = (1 - eta) * r + eta * target_reward(pi_E[None], smoothing=0.0)[0]
        got = mce_partition_fh(bandit, reward=r_new[None])[2][0, 0]
        closed = pi ** (1 - eta) * pi_E**eta / (pi ** (1 - eta) * pi_E**eta).sum()
        np.testing.assert_allclose(got, closed, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(mirror_descent_step(pi, pi_E, eta), closed, rtol=1e-14, atol=1e-15)


def _expert(mdp, tau=0.3):
    return state_action_occupancy(mdp, soft_value_iteration(mdp, temperature=tau, tol=1e-12)[2])


def test_geometric_update_converges_at_rate_one_minus_eta():
    mdp = gridworld(4, 4, walls=[(1, 1)], hazards=[(2, 1)], discount=0.9, slip=0.2)
    rho_E = _expert(mdp)
    for eta in (0.3, 0.6):
        res = IRL(mdp, method="geometric", eta=eta, tol=1e-9, max_iter=200, smoothing=0.0).fit(expert_occupancy=rho_E)
        assert res.converged
        gap = res.history["feature_gap"]
        ratios = gap[-6:] / gap[-7:-1]  # late iterations: the linearised rate
        np.testing.assert_allclose(ratios, 1 - eta, rtol=2e-2)
        np.testing.assert_allclose(res.occupancy, rho_E, atol=1e-8)
        assert res.history["kl"][-1] < 1e-12


@pytest.mark.parametrize("method", ["gradient", "natural", "geometric", "mirror"])
def test_every_method_reduces_the_gap_and_dual(method):
    mdp = gridworld(3, 3, hazards=[(1, 1)], discount=0.8, slip=0.2)
    rho_E = _expert(mdp, tau=0.5)
    res = IRL(mdp, method=method, eta=0.5, max_iter=30, tol=1e-6).fit(expert_occupancy=rho_E)
    gap = res.history["feature_gap"]
    assert gap[-1] < 0.05 * gap[0]
    if method in ("gradient", "natural"):  # descent methods with line search: the dual never increases
        assert np.all(np.diff(res.history["dual"]) <= 1e-10)
    assert res.reward.shape == (9, 4)
    assert res.policy.shape == (9, 4)


def test_fit_from_demonstrations_with_state_features():
    mdp = gridworld(4, 4, hazards=[(1, 2), (2, 1)], horizon=10, slip=0.1)
    feats = np.stack([mdp.reward_matrix, mdp.cost_matrix, np.ones(16)], axis=1)  # goal, hazard, bias (S, 3)
    true_theta = np.array([2.0, -1.5, 0.0])
    pi = mce_partition_fh(mdp, reward=feats @ true_theta)[2]
    demos = sample_trajectories(mdp, pi, 4000, seed=0)
    res = IRL(mdp, features=feats, method="natural", eta=1.0, max_iter=30, tol=1e-8).fit(demos)
    assert res.converged
    # the bias is unidentifiable (constant reward); goal and hazard weights are recovered within sampling error
    np.testing.assert_allclose(res.theta[:2] - res.theta[2] * 0, true_theta[:2], atol=0.25)
    np.testing.assert_allclose(empirical_occupancy(mdp, *demos).sum(), 10.0)


def test_bad_input():
    mdp = gridworld(3, 3, discount=0.9)
    with pytest.raises(ValueError, match=r"eta: expected a step in \(0, 1\]"):
        IRL(mdp, eta=1.5)
    with pytest.raises(ValueError, match=r"eta: expected a step in \(0, 1\]"):
        IRL(mdp, eta=0.0)
    with pytest.raises(ValueError, match="method: expected one of"):
        IRL(mdp, method="adam")
    with pytest.raises(ValueError, match="features: expected finite"):
        IRL(mdp, features=np.ones((4, 2)))
    with pytest.raises(ValueError, match="fit: pass exactly one"):
        IRL(mdp).fit()
    with pytest.raises(ValueError, match="expert_occupancy: expected a non-negative"):
        IRL(mdp).fit(expert_occupancy=-np.ones((9, 4)))
    with pytest.raises(ValueError, match="obs, acts: states must lie"):
        empirical_occupancy(mdp, np.array([[0, 99]]), np.array([[0]]))
    with pytest.raises(ValueError, match=r"mirror.*tabular"):
        IRL(mdp, method="mirror", features=np.ones((9, 2)))
