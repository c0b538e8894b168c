"""Does the best data recipe follow a power law in the number of ablation runs, on real (small) training runs?

    OMP_NUM_THREADS=1 python bench/datacuration/eval_recipes.py          # full: 2 data sets, 2560 runs each
    python bench/datacuration/eval_recipes.py --quick                     # smoke: breast_cancer, 96 runs

Testbed (fastnips.datacuration.testbed): scikit-learn's digits and breast_cancer, a 70/30 split into a training
pool and a clean evaluation set; the pool gets class imbalance (rho = 0.4), 35% label noise and duplicates (20%
of examples copied 6 times, noisy ones twice as likely). A recipe (noise-filter threshold, dedup strength,
class-mix ratio) is drawn uniformly; an ablation run trains a logistic regression on the curated pool and scores
accuracy on the clean set. Independent random searches: 16 searches of 32 runs (the fit sees only these,
N <= 32), and 16 fresh searches of 128 runs (held out). fit_power_law (profiled asymptote, accuracy ceiling 1,
2000 bootstraps over whole searches) predicts the expected best(128) with a 95% interval; the observed value is
the mean over the held-out searches. The naive free least-squares fit (scipy curve_fit of a - b N^-c on the mean
curve) is the baseline.
The frontier panel uses the fitted curve and an *assumed* final-run law (shortfall 0.5 F^-0.5, F in units of
one ablation run). Writes results.json, table.md and datascale.png to --out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.optimize import curve_fit

from fastnips.datacuration import fit_power_law, quality_quantity_frontier
from fastnips.datacuration.testbed import make_testbed, run_searches

DATA = ("digits", "breast_cancer")
FINAL_LAW = (0.5, 0.5)  # assumed shortfall B * F**-beta of the final run (F in ablation-run units)
BUDGETS = np.geomspace(50, 1e6, 25)


def grid(n: int) -> np.ndarray:
    """Distinct N on a log grid from 1 to n."""
    return np.unique(np.round(np.geomspace(1, n, 12)).astype(int))


def naive_prediction(N: np.ndarray, ybar: np.ndarray, at: int) -> float:
    """scipy curve_fit of a - b N^-c on the mean curve (the fit the notes warn about), evaluated at ``at``."""
    try:
        (a, b, c), _ = curve_fit(lambda n, a, b, c: a - b * n**-c, N.astype(float), ybar,
                                 p0=(ybar[-1] + 0.01, ybar[-1] - ybar[0] + 0.01, 0.5), maxfev=20000)
    except RuntimeError:
        return float("nan")
    return float(a - b * at**-c)


def run_one(name: str, fit_runs: int, fit_searches: int, held_runs: int, held_searches: int, seed: int,
            n_boot: int = 2000) -> dict:
    t0 = time.perf_counter()
    tb = make_testbed(name, seed=seed)
    A = run_searches(tb, fit_searches, fit_runs, seed=10 * seed + 1)
    B = run_searches(tb, held_searches, held_runs, seed=10 * seed + 2)
    NA = grid(fit_runs)
    fit = fit_power_law(NA, A["best"][:, NA - 1], upper=1.0, n_boot=n_boot, seed=seed)  # resamples searches
    lo, hi = fit.interval([held_runs])
    obs = B["best"][:, held_runs - 1]
    NB = grid(held_runs)
    full = fit_power_law(NB, B["best"][:, NB - 1], upper=1.0, n_boot=n_boot, seed=seed)
    few = fit_power_law(NA, A["best"][:4, NA - 1], upper=1.0, n_boot=n_boot, seed=seed)  # 4 searches only
    (flo,), (fhi,) = few.interval([held_runs])
    fr = quality_quantity_frontier(fit, BUDGETS, 1.0, FINAL_LAW)
    return {
        "dataset": name, "runs": int(A["quality"].size + B["quality"].size), "pool": int(tb.y.size),
        "c": fit.c, "c_ci": fit.c_ci, "a": fit.a, "a_ci": fit.a_ci, "r2": fit.r2, "at_bound": fit.at_bound,
        "predicted": float(fit.predict(held_runs)), "low": float(lo[0]), "high": float(hi[0]),
        "observed": float(obs.mean()), "observed_se": float(obs.std(ddof=1) / np.sqrt(obs.size)),
        "inside": bool(lo[0] <= obs.mean() <= hi[0]),
        "few": {"predicted": float(few.predict(held_runs)), "low": float(flo), "high": float(fhi), "c": few.c,
                "inside": bool(flo <= obs.mean() <= fhi), "at_bound": few.at_bound},
        "naive": naive_prediction(NA, A["best"][:, NA - 1].mean(axis=0), held_runs),
        "held_c": full.c, "held_c_ci": full.c_ci, "held_r2": full.r2,
        "fit_N": NA.tolist(), "fit_mean": A["best"][:, NA - 1].mean(axis=0).tolist(),
        "held_N": NB.tolist(), "held_mean": B["best"][:, NB - 1].mean(axis=0).tolist(),
        "quality": np.concatenate([A["quality"].ravel(), B["quality"].ravel()]).tolist(),
        "kept": np.concatenate([A["kept"].ravel(), B["kept"].ravel()]).tolist(),
        "boot": fit.boot[:400].tolist(), "held_runs": held_runs,
        "frontier": {"budgets": fr.budgets.tolist(), "n_runs": fr.n_runs.tolist(),
                     "share": fr.ablation_share.tolist(), "predicted": fr.predicted.tolist()},
        "seconds": time.perf_counter() - t0,
    }


def bound(where: str) -> str:
    """A table note when the profiled asymptote sits at a bound."""
    return f" (a at {where})" if where else ""


def table(results: list[dict]) -> str:
    fmt = "{:.3f}".format
    lines = ["| dataset | runs | fit on N <= | c (95% CI) | a (95% CI) | predicted best(N_h) [95%] | observed "
             "(mean +- se) | inside | naive free fit | 4 searches only: predicted [95%], inside "
             "| c on held-out N <= N_h "
             "| s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        f = r["few"]
        lines.append(
            f"| {r['dataset']} | {r['runs']} | {r['fit_N'][-1]} | {fmt(r['c'])} ({fmt(r['c_ci'][0])}-"
            f"{fmt(r['c_ci'][1])}) | {fmt(r['a'])} ({fmt(r['a_ci'][0])}-{fmt(r['a_ci'][1])}) | N_h={r['held_runs']}: "
            f"{fmt(r['predicted'])} [{fmt(r['low'])}, {fmt(r['high'])}] | {fmt(r['observed'])} +- "
            f"{fmt(r['observed_se'])} | {'yes' if r['inside'] else 'NO'}{bound(r['at_bound'])} | {fmt(r['naive'])} | "
            f"{fmt(f['predicted'])} [{fmt(f['low'])}, {fmt(f['high'])}], {'yes' if f['inside'] else 'NO'}"
            f"{bound(f['at_bound'])} | {fmt(r['held_c'])} "
            f"({fmt(r['held_c_ci'][0])}-{fmt(r['held_c_ci'][1])}), R2 {r['held_r2']:.3f} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 3, figsize=(13, 3.6 * len(results)), squeeze=False)
    for (ax1, ax2, ax3), r in zip(axes, results, strict=True):
        N = np.geomspace(1, r["held_runs"], 100)
        boot = np.array(r["boot"])
        curves = boot[:, :1] - boot[:, 1:2] * N[None, :] ** -boot[:, 2:3]
        ax1.fill_between(N, *np.quantile(curves, [0.025, 0.975], axis=0), alpha=0.25, label="95% band")
        ax1.plot(N, r["a"] - (r["a"] - r["predicted"]) * (N / r["held_runs"]) ** -r["c"], "C0",
                 label=f"fit N<={r['fit_N'][-1]}: c={r['c']:.2f}")
        ax1.plot(r["fit_N"], r["fit_mean"], "o", color="C0", label="fitted searches")
        ax1.plot(r["held_N"], r["held_mean"], "s", mfc="none", color="C3", label="held-out searches")
        ax1.axhline(r["a"], color="gray", lw=0.8, ls=":")
        ax1.set(xscale="log", xlabel="ablation runs N", ylabel="mean best accuracy", title=r["dataset"])
        ax1.legend(fontsize=7)
        q, k = np.array(r["quality"]), np.array(r["kept"])
        ax2.scatter(k, q, s=4, alpha=0.4)
        order = np.argsort(-k)
        ax2.step(k[order], np.maximum.accumulate(q[order]), "C3", where="post", label="best at >= this size")
        ax2.set(xlabel="training examples kept", ylabel="accuracy", title="quality vs quantity of recipes")
        ax2.legend(fontsize=7)
        f = r["frontier"]
        ax3.plot(f["budgets"], f["share"], "C0", label="ablation share of budget")
        ax3.set(xscale="log", xlabel="budget (ablation-run units)", ylabel="share", title="compute frontier")
        ax3b = ax3.twinx()
        ax3b.plot(f["budgets"], f["predicted"], "C2", label="predicted final quality")
        ax3b.set_ylabel("predicted quality (assumed final law)")
        ax3.legend(fontsize=7, loc="upper left")
        ax3b.legend(fontsize=7, loc="lower right")
    fig.subplots_adjust(left=0.06, right=0.93, bottom=0.08, top=0.95, wspace=0.42, hspace=0.32)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="breast_cancer only, 4 x 8 fitted and 4 x 16 held-out runs")
    p.add_argument("--data", nargs="+", choices=DATA, default=list(DATA))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="where to write (full run: bench/datacuration/results)")
    a = p.parse_args(argv)
    if a.quick:
        results = [run_one("breast_cancer", 8, 4, 16, 4, a.seed, n_boot=300)]
    else:
        results = [run_one(name, 32, 16, 128, 16, a.seed) for name in a.data]
    report = table(results)
    print(report)
    out = a.out if a.out is not None or a.quick else Path(__file__).parent / "results"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results, indent=1))
        (out / "table.md").write_text(report + "\n")
        plot(results, out / "datascale.png")
    return report


if __name__ == "__main__":
    main()
