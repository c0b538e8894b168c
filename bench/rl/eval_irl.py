"""Evaluation of the IRL update rules (issue 18, item 2): iterations and wall time to a feature-gap tolerance.

    python bench/rl/eval_irl.py --seeds 5 --png bench/rl/eval_irl.png   # about 3 minutes on one core
    python bench/rl/eval_irl.py --quick                                 # seconds; what tests/rl runs

Methods (fastnips.rl.irl): (a) ``gradient`` -- the plain dual gradient, step 1/lambda_max(F(theta_0)) with
Armijo backtracking; (b) ``natural`` -- local-Fisher natural gradient (eta = 1, i.e. damped Newton) with
backtracking; (c) ``geometric`` -- convex interpolation toward the target reward log pi_E (eta = 0.5);
(d) ``mirror`` -- the policy-side entropic mirror-descent step (eta = 0.5). Tabular rewards throughout.

Problems, new instance per seed: ``random`` -- random MDP, S = 20, A = 4, 5 successors per (s, a), discount
0.9, the expert soft-optimal (temperature 1) for a standard normal reward; ``gridworld`` -- 6 x 6 slippery grid
(slip 0.1), 10% walls and 10% hazards, discount 0.9, the expert soft-optimal at temperature 0.3 for goal reward
minus hazard cost. The expert is given by its exact occupancy. A run succeeds when the relative feature gap
||mu - mu_E||_1 / ||mu_E||_1 falls below ``--tol``; it stops at ``--max-iter`` iterations otherwise.

Prints a markdown table (medians over seeds) and the verdict on the paper's claim (little overhead per
iteration, fewer iterations); ``--png`` writes the median feature gap per iteration (matplotlib).
This file is a script, not a pytest-benchmark file.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

import numpy as np

from fastnips.rl import gridworld, random_mdp, soft_value_iteration, state_action_occupancy
from fastnips.rl.irl import IRL

METHODS = {"gradient": 1.0, "natural": 1.0, "geometric": 0.5, "mirror": 0.5}  # method: eta
PROBLEMS = ("random", "gridworld")


def problem(name: str, seed: int, quick: bool):
    """(mdp, expert occupancy) of one seed."""
    if name == "random":
        S = 8 if quick else 20
        mdp = random_mdp(S, 4, discount=0.9, branching=min(5, S), seed=seed)
        rng = np.random.default_rng(1000 + seed)
        pi = soft_value_iteration(mdp, reward=rng.standard_normal((S, 4)), tol=1e-12)[2]
    else:
        n = 4 if quick else 6
        mdp = gridworld(n, n, walls=0.1, hazards=0.1, discount=0.9, slip=0.1, seed=seed)
        pi = soft_value_iteration(mdp, reward=mdp.reward_matrix - mdp.cost_matrix, temperature=0.3, tol=1e-12)[2]
    return mdp, state_action_occupancy(mdp, pi)


def run(problems, seeds, tol, max_iter, quick, log):
    """{(problem, method): list of (converged, iterations, seconds, gap history)}."""
    out = {}
    for p in problems:
        for seed in seeds:
            mdp, rho_E = problem(p, seed, quick)
            for m, eta in METHODS.items():
                res = IRL(mdp, method=m, eta=eta, tol=tol, max_iter=max_iter).fit(expert_occupancy=rho_E)
                h = res.history
                out.setdefault((p, m), []).append((res.converged, len(h["feature_gap"]) - 1, h["seconds"][-1],
                                                   h["feature_gap"]))
                log(f"{p} seed {seed} {m}: {'ok' if res.converged else 'NOT converged'} in "
                    f"{len(h['feature_gap']) - 1} it, {h['seconds'][-1]:.2f} s")
    return out


def table(out, problems, n_seeds):
    lines = ["| problem | method | converged | median iterations | median wall s | median ms / iteration |",
             "|---|---|---|---|---|---|"]
    summary = {}
    for p in problems:
        for m in METHODS:
            rs = out[(p, m)]
            it = float(np.median([r[1] for r in rs]))
            sec = float(np.median([r[2] for r in rs]))
            per = float(np.median([r[2] / max(r[1], 1) for r in rs])) * 1e3
            ok = sum(r[0] for r in rs)
            summary[(p, m)] = (ok, it, sec, per)
            lines.append(f"| {p} | {m} | {ok}/{n_seeds} | {it:.0f} | {sec:.3f} | {per:.2f} |")
    return "\n".join(lines), summary


def verdict(summary, problems, n_seeds) -> str:
    """The paper's claim, checked per problem: (c) costs little more per iteration than (a) and needs fewer."""
    parts = []
    for p in problems:
        ok_a, it_a, _, per_a = summary[(p, "gradient")]
        ok_c, it_c, _, per_c = summary[(p, "geometric")]
        _, it_b, _, per_b = summary[(p, "natural")]
        good = ok_c == n_seeds and per_c <= 1.5 * per_a and (it_c < it_a or ok_a < n_seeds)
        parts.append(f"{p}: geometric {it_c:.0f} iterations at {per_c:.1f} ms each vs gradient {it_a:.0f} "
                     f"({ok_a}/{n_seeds} converged) at {per_a:.1f} ms and natural {it_b:.0f} at {per_b:.1f} ms "
                     f"-> {'reproduced' if good else 'NOT reproduced'}")
    return "Claim (little overhead per iteration, fewer iterations): " + "; ".join(parts)


def plot(out, problems, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 3.6))
    for ax, p in zip(np.atleast_1d(axes), problems, strict=True):
        for m in METHODS:
            hs = [r[3] for r in out[(p, m)]]
            n = max(len(h) for h in hs)
            M = np.array([np.pad(h, (0, n - len(h)), constant_values=np.nan) for h in hs])
            ax.semilogy(np.nanmedian(M, axis=0), label=m)
        ax.set_title(f"{p}: median over seeds")
        ax.set_xlabel("iteration")
        ax.set_ylabel("relative feature gap")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> str:
    """Run the evaluation; print and return the markdown report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="tiny instances, 1 seed, 8 iterations (CI)")
    ap.add_argument("--png", default=None, help="write the convergence plot here")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    seeds = list(range(1 if args.quick else args.seeds))
    max_iter = 8 if args.quick else args.max_iter

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    out = run(PROBLEMS, seeds, args.tol, max_iter, args.quick, log)
    tab, summary = table(out, PROBLEMS, len(seeds))
    cmd = "python bench/rl/eval_irl.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report = "\n".join([
        f"Command: `{cmd}`; {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; tol {args.tol}, max {max_iter} iterations",
        "", tab, "", verdict(summary, PROBLEMS, len(seeds))])
    if args.png:
        plot(out, PROBLEMS, args.png)
        report += f"\n\nPlot: {args.png}"
    print(report)
    return report


if __name__ == "__main__":
    main()
