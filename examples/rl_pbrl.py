"""Constrained bi-level preference-based RL on gridworlds with hazards (``fastnips.rl``).

A synthetic labeler knows the true reward (1 on the goal) and cost (1 on hazard cells) and labels 600 pairs of
25-step trajectories on a training layout (half "which is better", half "which is safer"). CB-PbRL learns a
reward and a cost from them (implicit hypergradients through the constrained lower level), then acts on three
held-out layouts under the budget; the cost-blind baseline learns only a reward and ignores the budget.

Also: the lower level against the exact occupancy LP (scipy linprog) as the entropy temperature goes to 0.

Run: ``python examples/rl_pbrl.py`` (numpy, scipy; about 20 seconds). Seeded: the numbers repeat.
"""

from __future__ import annotations

import numpy as np

from fastnips.rl import (
    ConstrainedPbRL,
    cmdp_linprog,
    gridworld,
    solve_cmdp,
    state_action_occupancy,
    synthetic_preferences,
)

BUDGET, TAU = 0.15, 0.1


def cells(mdp):
    return np.stack([mdp.reward_matrix, mdp.cost_matrix], axis=1)  # (goal, hazard): the same on every layout


# the lower level vs the LP
g = gridworld(4, 4, hazards=[(1, 1), (2, 2), (1, 2)], discount=0.9)
Jr, Jc, _ = cmdp_linprog(g, budget=0.05)
for tau in (1e-2, 1e-4, 1e-6):
    out = solve_cmdp(g, budget=0.05, temperature=tau)
    print(f"tau={tau:.0e}: return {out.reward_value:.6f} (LP {Jr:.6f}), cost {out.cost_value:.6f} (LP {Jc:.6f}), "
          f"lambda* {out.lam:.4f}")

train = gridworld(6, 6, walls=0.1, hazards=0.2, discount=0.9, slip=0.1, seed=1)
truth = solve_cmdp(train, budget=BUDGET, temperature=TAU)
prefs = synthetic_preferences(train, train.reward_matrix, train.cost_matrix, truth.lam, 600, horizon=25, seed=0)
F = cells(train)
print(f"\ntrue weights: reward (goal 1, hazard 0), cost (goal 0, hazard 1); budget {BUDGET}")
for mode in ("constrained", "cost_blind"):
    model = ConstrainedPbRL(train, F, F, BUDGET, mode=mode, temperature=TAU, lr=2.0, n_iter=40)
    res = model.fit(prefs)
    print(f"{mode}: reward weights {np.round(res.reward_weights, 3)}, cost weights {np.round(res.cost_weights, 3)}")
    for seed in (21, 22, 23):
        test = gridworld(6, 6, walls=0.1, hazards=0.2, discount=0.9, slip=0.1, seed=seed)
        rho = state_action_occupancy(test, model.policy_on(test, cells(test), cells(test), res)).sum(1)
        cost = float(rho @ test.cost_matrix)
        print(f"  held-out layout {seed}: return {float(rho @ test.reward_matrix):.3f}, cost {cost:.3f} "
              f"({'within' if cost <= BUDGET * (1 + 1e-6) else 'OVER'} budget)")
