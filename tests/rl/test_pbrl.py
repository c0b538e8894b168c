"""fastnips.rl.cmdp / pbrl: the primal-dual inner solver against the occupancy LP, the implicit hypergradient
against finite differences, learning from synthetic preferences, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.rl import gridworld, random_mdp, state_action_occupancy
from fastnips.rl.cmdp import InfeasibleConstraintError, cmdp_linprog, min_cost, solve_cmdp
from fastnips.rl.pbrl import ConstrainedPbRL, Preferences, bt_loss_and_grad, synthetic_preferences


def _instances():
    return [random_mdp(5, 3, discount=0.9, seed=1, branching=3),
            gridworld(4, 4, hazards=[(1, 1), (2, 2), (1, 2)], discount=0.9, slip=0.1)]


@pytest.mark.parametrize("k", [0, 1], ids=["random", "gridworld"])
@pytest.mark.parametrize("frac", [0.3, 0.7])
def test_inner_solution_equals_occupancy_lp(k, frac):
    mdp = _instances()[k]
    c_min, c_free = min_cost(mdp), cmdp_linprog(mdp, budget=1e9)[1]
    b = c_min + frac * (c_free - c_min)  # an active constraint
    Jr, Jc, _ = cmdp_linprog(mdp, budget=b)
    out = solve_cmdp(mdp, budget=b, temperature=1e-6)
    assert out.lam > 0
    assert out.reward_value == pytest.approx(Jr, abs=1e-4)
    assert out.cost_value == pytest.approx(Jc, abs=1e-4)
    assert out.cost_value <= b + 1e-9
    # the returned occupancy is the policy's (checked by the independent reference solve)
    np.testing.assert_allclose(state_action_occupancy(mdp, out.pi, backend="reference"), out.rho, atol=1e-9)


def test_inactive_constraint_gives_zero_multiplier():
    mdp = _instances()[1]
    out = solve_cmdp(mdp, budget=1e3, temperature=0.1, lam0=5.0)
    assert out.lam == 0.0
    assert out.cost_value < 1e3


def test_kkt_of_the_regularised_problem():
    """At tau > 0: lam* > 0, J_c = b, and pi is soft-optimal for r - lam* c (checked against a plain solve)."""
    from fastnips.rl.fisher import solve_soft

    mdp = _instances()[0]
    b = 0.5 * (min_cost(mdp) + cmdp_linprog(mdp, budget=1e9)[1])
    out = solve_cmdp(mdp, budget=b, temperature=0.5, tol=1e-11)
    assert out.cost_value == pytest.approx(b, abs=1e-10)
    ref = solve_soft(mdp, mdp.reward_matrix - out.lam * mdp.cost_matrix, temperature=0.5, backend="reference")
    np.testing.assert_allclose(out.pi, ref.pi, atol=1e-9)


def _five_state_problem():
    mdp = random_mdp(5, 3, discount=0.9, seed=7, branching=3)
    rng = np.random.default_rng(0)
    Fr, Fc = rng.standard_normal((5, 3, 3)), np.abs(rng.standard_normal((5, 3, 2)))
    b = 0.5 * (min_cost(mdp, Fc @ np.ones(2)) + cmdp_linprog(mdp, reward=Fr @ np.ones(3), cost=Fc @ np.ones(2),
                                                            budget=1e9)[1])
    prefs = synthetic_preferences(mdp, Fr @ np.ones(3), Fc @ np.ones(2), 0.5, 60, horizon=8, seed=3)
    return mdp, Fr, Fc, b, prefs


def test_hypergradient_equals_finite_differences():
    mdp, Fr, Fc, b, prefs = _five_state_problem()
    model = ConstrainedPbRL(mdp, Fr, Fc, b, temperature=0.3, reg=0.01)
    phi, psi = np.array([0.8, 1.1, 0.9]), np.array([1.2, 0.7])
    _loss, g_phi, g_psi, low = model.objective(phi, psi, prefs)
    assert low.lam > 0  # the implicit term is exercised
    h = 1e-5
    fd_phi = [(model.objective(phi + h * e, psi, prefs)[0] - model.objective(phi - h * e, psi, prefs)[0]) / (2 * h)
              for e in np.eye(3)]
    fd_psi = [(model.objective(phi, psi + h * e, prefs)[0] - model.objective(phi, psi - h * e, prefs)[0]) / (2 * h)
              for e in np.eye(2)]
    np.testing.assert_allclose(g_phi, fd_phi, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g_psi, fd_psi, rtol=1e-5, atol=1e-7)
    # without the implicit term the gradient is wrong: the term matters
    model_blind = ConstrainedPbRL(mdp, Fr, Fc, b, temperature=0.3, reg=0.01)
    model_blind._dlam = lambda low, psi: (np.zeros(3), np.zeros(2))
    assert np.abs(model_blind.objective(phi, psi, prefs)[2] - fd_psi).max() > 1e-4


def test_fit_descends_and_acts_on_a_pessimistic_cost():
    mdp, Fr, Fc, b, prefs = _five_state_problem()
    res = ConstrainedPbRL(mdp, Fr, Fc, b, temperature=0.3, lr=1.0, n_iter=6).fit(prefs)
    assert np.all(np.diff(res.history["loss"]) <= 1e-12)  # steps are halved until the loss does not rise
    assert np.all(res.cost_weights >= 0)  # projected
    assert np.all(res.cost_weights_safe > res.cost_weights)  # psi + z sd, z > 0
    off = ConstrainedPbRL(mdp, Fr, Fc, b, temperature=0.3, lr=1.0, n_iter=6, confidence=None).fit(prefs)
    assert off.cost_weights_safe is None
    np.testing.assert_allclose(off.cost_weights, res.cost_weights)


def test_bt_loss_gradient():
    z, y = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.0, 0.5])
    loss, g = bt_loss_and_grad(z, y)
    want = -np.mean(y * np.log(1 / (1 + np.exp(-z))) + (1 - y) * np.log(1 / (1 + np.exp(z))))
    assert loss == pytest.approx(want, abs=1e-14)
    fd = [(bt_loss_and_grad(z + 1e-6 * e, y)[0] - bt_loss_and_grad(z - 1e-6 * e, y)[0]) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, atol=1e-9)


def _cell_features(mdp):
    return np.stack([mdp.reward_matrix, mdp.cost_matrix], axis=1)  # is_goal, is_hazard: shared by layouts


@pytest.mark.slow
def test_learned_policy_satisfies_true_constraint_on_held_out_gridworlds():
    train = gridworld(5, 5, walls=0.1, hazards=0.2, discount=0.9, seed=1)
    b, tau = 0.15, 0.1
    truth = solve_cmdp(train, budget=b, temperature=tau)
    prefs = synthetic_preferences(train, train.reward_matrix, train.cost_matrix, truth.lam, 600, horizon=25, seed=0)
    F = _cell_features(train)
    model = ConstrainedPbRL(train, F, F, b, temperature=tau, lr=2.0, n_iter=40)
    res = model.fit(prefs)
    assert res.history["loss"][-1] < res.history["loss"][0]
    for seed in range(2, 6):
        test = gridworld(5, 5, walls=0.1, hazards=0.2, discount=0.9, seed=seed)
        pi = model.policy_on(test, _cell_features(test), _cell_features(test), res)
        rho = state_action_occupancy(test, pi)
        assert (rho * test.cost_matrix[:, None]).sum() <= b * 1.05, seed


def test_bad_input():
    mdp = _instances()[1]
    with pytest.raises(InfeasibleConstraintError, match="budget: the constraint is infeasible: the least cost"):
        solve_cmdp(mdp, budget=-1.0)
    with pytest.raises(ValueError, match="budget: the constraint is infeasible"):
        cmdp_linprog(mdp, budget=-1.0)
    with pytest.raises(ValueError, match="mdp: the constrained problem is solved for discounted MDPs"):
        solve_cmdp(gridworld(3, 3, horizon=5), budget=1.0)
    with pytest.raises(ValueError, match="budget: expected a finite number"):
        solve_cmdp(mdp, budget=float("nan"))
    o, a = np.zeros((2, 6), dtype=int), np.zeros((2, 5), dtype=int)
    with pytest.raises(ValueError, match="trajectory pairs must have equal length, got T=5 and T=3"):
        Preferences((o, a), (o[:, :4], a[:, :3]), np.ones(2), np.zeros(2))
    with pytest.raises(ValueError, match=r"label: expected 2 probabilities in \[0, 1\]"):
        Preferences((o, a), (o, a), np.array([0.5, 2.0]), np.zeros(2))
    F = _cell_features(mdp)
    with pytest.raises(ValueError, match=r"prefs: states must lie in \[0, 16\)"):
        ConstrainedPbRL(mdp, F, F, 0.1).fit(Preferences((o + 99, a), (o, a), np.ones(2), np.zeros(2)))
    with pytest.raises(ValueError, match="mode: expected one of"):
        ConstrainedPbRL(mdp, F, F, 0.1, mode="safe")
    with pytest.raises(ValueError, match=r"confidence: expected None or a probability in \[0.5, 1\)"):
        ConstrainedPbRL(mdp, F, F, 0.1, confidence=1.5)
    with pytest.raises(ValueError, match="reward_features: expected finite"):
        ConstrainedPbRL(mdp, np.ones((3, 2)), F, 0.1)
