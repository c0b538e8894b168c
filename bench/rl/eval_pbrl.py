"""Evaluation of constrained bi-level PbRL (issue 18, item 3) against unconstrained PbRL and a cost-blind baseline.

    python bench/rl/eval_pbrl.py --seeds 5 --png bench/rl/eval_pbrl.png   # a few minutes on one core
    python bench/rl/eval_pbrl.py --quick                                   # seconds; what tests/rl runs

Per seed: a training gridworld (6 x 6, slip 0.1, 10% walls, 20% hazards, discount 0.9) and ``--held-out``
other layouts of the same kind. A synthetic labeler knows the true reward (1 on the goal) and cost (1 on
hazards) and labels 600 trajectory pairs (length 25) of the training layout: half on the overall channel
(Bradley-Terry on R - lambda* C, lambda* the true problem's multiplier), half on the safety channel (BT on -C).
Features are the cell types (goal, hazard), shared by every layout, so learned weights transfer.

Methods (fastnips.rl.pbrl): ``constrained`` (CB-PbRL: reward and cost, CMDP lower level with the budget, acting on
the pessimistic cost at confidence 0.95; ``constrained-mle``: the same fit acting on the fitted cost; the
preference accuracy of both uses the fitted cost),
``unconstrained`` (one reward from all labels, no constraint), ``cost_blind`` (reward from the overall labels,
no cost, no constraint), and ``oracle`` (the true r and c in the CMDP: the best one can do). Metrics on the
held-out layouts, mean over seeds x layouts: the true discounted return, the true discounted cost, the rate of
violations (true cost > budget, and > 1.05 budget), and the accuracy of each model's predicted preference on
400 fresh pairs per layout against the noiseless true preference. ``--png`` plots min_{k<=K} ||hypergradient||^2 of the
constrained runs against K, with a K^(-1/2) reference line. A script, not a pytest-benchmark file.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

import numpy as np

from fastnips.rl import gridworld, state_action_occupancy
from fastnips.rl.cmdp import min_cost, solve_cmdp
from fastnips.rl.pbrl import MODES, ConstrainedPbRL, synthetic_preferences, trajectory_features

BUDGET, TAU = 0.15, 0.1
METHODS = ("constrained", "constrained-mle", "unconstrained", "cost_blind", "oracle")


def layout(seed: int, n: int):
    """A layout whose least achievable cost is at most half the budget (hazards can wall off the goal): the
    first of seeds seed, seed + 7919, ... that qualifies."""
    while True:
        mdp = gridworld(n, n, walls=0.1, hazards=0.2, discount=0.9, slip=0.1, seed=seed)
        if min_cost(mdp) <= BUDGET / 2:
            return mdp
        seed += 7919


def cells(mdp):
    return np.stack([mdp.reward_matrix, mdp.cost_matrix], axis=1)


def pref_accuracy(model, res, mdp, lam_model, seed):
    """Share of fresh pairs on which the model's preference agrees with the noiseless true one."""
    truth = solve_cmdp(mdp, budget=BUDGET, temperature=TAU)
    prefs = synthetic_preferences(mdp, mdp.reward_matrix, mdp.cost_matrix, truth.lam, 400, horizon=25, seed=seed)
    F = np.repeat(cells(mdp)[:, None, :], mdp.action_dim, axis=1)
    g = mdp.discount
    d = trajectory_features(F, *prefs.first, g) - trajectory_features(F, *prefs.second, g)  # (n, 2): dR, dC
    over = prefs.channel == 0
    true_z = np.where(over, d[:, 0] - truth.lam * d[:, 1], -d[:, 1])
    if res is None:  # oracle
        z = true_z
    elif model.mode == "constrained":
        dR, dC = d @ res.reward_weights, d @ res.cost_weights
        z = np.where(over, dR - lam_model * dC, -dC)
    else:
        z = d @ res.reward_weights
    keep = true_z != 0
    return float(np.mean(np.sign(z[keep]) == np.sign(true_z[keep])))


def run_seed(seed, n, n_pairs, n_iter, held_out):
    train = layout(seed, n)
    truth = solve_cmdp(train, budget=BUDGET, temperature=TAU)
    prefs = synthetic_preferences(train, train.reward_matrix, train.cost_matrix, truth.lam, n_pairs, horizon=25,
                                  seed=seed)
    F = cells(train)
    rows = {m: [] for m in METHODS}
    curves = None
    fits = {}
    for m in MODES:
        model = ConstrainedPbRL(train, F, F, BUDGET, mode=m, temperature=TAU, lr=2.0, n_iter=n_iter)
        fits[m] = (model, model.fit(prefs))
        if m == "constrained":
            curves = fits[m][1].history["grad_norm2"]
    for j in range(held_out):
        test = layout(10_000 + 100 * seed + j, n)
        for m in METHODS:
            if m == "oracle":
                pi, lam_model, res, model = solve_cmdp(test, budget=BUDGET, temperature=TAU).pi, 0.0, None, None
            else:
                model, res = fits[m.split("-")[0]]
                Ft = cells(test)
                if m.startswith("constrained"):
                    w = res.cost_weights if m == "constrained-mle" else res.cost_weights_safe
                    low = solve_cmdp(test, reward=Ft @ res.reward_weights, cost=Ft @ w, budget=BUDGET,
                                     temperature=TAU)
                    pi, lam_model = low.pi, low.lam
                else:
                    pi, lam_model = model.policy_on(test, Ft, Ft, res), 0.0
            rho = state_action_occupancy(test, pi)
            Jr, Jc = float((rho.sum(1) * test.reward_matrix).sum()), float((rho.sum(1) * test.cost_matrix).sum())
            acc = pref_accuracy(model, res, test, lam_model, seed=7 + j)
            rows[m].append((Jr, Jc, Jc > BUDGET * (1 + 1e-6), acc))
    return rows, curves


def main(argv=None) -> str:
    """Run the evaluation; print and return the markdown report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--held-out", type=int, default=4)
    ap.add_argument("--iters", type=int, default=60, help="outer iterations K")
    ap.add_argument("--quick", action="store_true", help="1 seed, 4 x 4 grids, 150 pairs, 5 iterations (CI)")
    ap.add_argument("--png", default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    seeds = [0] if args.quick else list(range(args.seeds))
    n, n_pairs, n_iter, held = (4, 150, 5, 1) if args.quick else (6, 600, args.iters, args.held_out)
    allrows, curves = {m: [] for m in METHODS}, []
    for s in seeds:
        rows, curve = run_seed(s, n, n_pairs, n_iter, held)
        for m in METHODS:
            allrows[m] += rows[m]
        curves.append(curve)
        if not args.quiet:
            print(f"seed {s} done", file=sys.stderr, flush=True)
    lines = [f"| method | true return | true cost (budget {BUDGET:.2f}) | violations (cost > b) | "
             "violations (cost > 1.05 b) | preference accuracy |", "|---|---|---|---|---|---|"]
    for m in METHODS:
        a = np.array(allrows[m], dtype=float)
        lines.append(f"| {m} | {a[:, 0].mean():.3f} ± {a[:, 0].std():.3f} | {a[:, 1].mean():.3f} ± "
                     f"{a[:, 1].std():.3f} | {a[:, 2].mean():.2f} | {(a[:, 1] > 1.05 * BUDGET).mean():.2f} | "
                     f"{a[:, 3].mean():.3f} |")
    cmd = "python bench/rl/eval_pbrl.py " + " ".join(sys.argv[1:] if argv is None else argv)
    K = np.arange(1, n_iter + 1)
    best = np.minimum.accumulate(np.array(curves), axis=1)
    slope = float(np.polyfit(np.log(K[K >= 3]), np.log(np.median(best, 0)[K >= 3]), 1)[0]) if n_iter >= 5 else np.nan
    report = "\n".join([
        f"Command: `{cmd}`; {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; {len(seeds)} seeds x {held} held-out layouts",
        "", *lines, "",
        f"Stationarity: median over seeds of min_(k<=K) ||grad||^2 falls with log-log slope {slope:.2f} in K "
        f"(O(1/sqrt(K)) needs <= -0.5: {'yes' if slope <= -0.5 else 'no'})"])
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.6))
        for c in best:
            ax.loglog(K, c, color="C0", alpha=0.4)
        ax.loglog(K, best[:, 0].max() * K**-0.5, "k--", label="K^-1/2")
        ax.set_xlabel("outer iterations K")
        ax.set_ylabel("min_k<=K ||hypergradient||^2")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        plt.close(fig)
        report += f"\n\nPlot: {args.png}"
    print(report)
    return report


if __name__ == "__main__":
    main()
