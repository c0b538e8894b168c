"""How many recipe ablations before the final run? Fit the power law of the best recipe on a few random
searches, check it on held-out larger searches, and split a compute budget (paper 19, datascale).

    python examples/datacuration_powerlaw.py            # synthetic recipe space (numpy only, ~1 s)
    python examples/datacuration_powerlaw.py --sklearn  # the scikit-learn testbed (~10 s on one core)
"""

from __future__ import annotations

import sys

import numpy as np

from fastnips.datacuration import extrapolate, fit_power_law, quality_quantity_frontier, random_search_curves


def main(argv: list[str]) -> None:
    N = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    if "--sklearn" in argv:
        from fastnips.datacuration.testbed import make_testbed, run_searches

        tb = make_testbed("breast_cancer", seed=0)  # 35% label noise, duplicates, class imbalance
        best = run_searches(tb, 8, 128, seed=1)["best"][:, N - 1]  # 8 independent random searches
        kw = {"upper": 1.0}  # an accuracy cannot exceed 1
    else:
        best = random_search_curves(3, 128, 64, seed=0)[:, N - 1]  # quadratic optimum in 3-D: c = 2/3
        kw = {}
    ex = extrapolate(N, best, fit_max=32, n_boot=1000, **kw)
    f = ex.fit
    print(f"fit on N <= 32: best(N) = {f.a:.4f} - {f.b:.4f} N^-{f.c:.3f}  (c 95% CI {f.c_ci[0]:.3f}-{f.c_ci[1]:.3f})")
    for n, obs, pred, lo, hi in zip(ex.N, ex.observed, ex.predicted, ex.low, ex.high, strict=True):
        print(f"  N={n:4.0f}: predicted {pred:.4f} [{lo:.4f}, {hi:.4f}], observed {obs:.4f}")
    fr = quality_quantity_frontier(f, [1e3, 1e4, 1e5], run_cost=1.0, final_law=(0.5, 0.5))
    for C, n, share in zip(fr.budgets, fr.n_runs, fr.ablation_share, strict=True):
        print(f"  budget {C:8.0f} runs: {n} ablations ({share:.1%}), the rest on the final run (assumed law)")
    full = fit_power_law(N, best, n_boot=0, **kw)
    print(f"fit on all N: c = {full.c:.3f}, R^2 of the log-gap line {full.r2:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
