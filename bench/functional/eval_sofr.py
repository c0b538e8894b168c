"""Scalar-on-function regression on irregular Gaussian-process curves: test MSE (mean +/- std over seeds) of the
equal-width and bottleneck networks of fastnips.functional, scikit-fda's functional LinearRegression and an MLP on
curves linearly interpolated to a regular grid.

    OMP_NUM_THREADS=1 python bench/functional/eval_sofr.py --seeds 5     # the table and figure (~5-10 min, 1 core)
    python bench/functional/eval_sofr.py --quick                         # smoke: 1 seed, 1 setting, short training

Data (:mod:`fastnips.functional.synthetic`): Karhunen-Loeve Gaussian-process curves (25 terms, length scale 0.1),
noise sd 0.1 on the samples; three sampling settings of controlled irregularity: ``dense regular`` (40-60 times,
midpoints of a regular grid), ``medium irregular`` (20-40 uniform random times per curve), ``sparse irregular``
(8-15 uniform random times). Responses (noise sd 0.1, so the best test MSE is 0.01): the functional linear model
``y = <beta, X> + eps`` and the two-index model ``y = sin(2 u1) + u2^2 / 2 - 1/2 + eps``. n = 300 training and 500
test curves per seed; a new draw of curves, responses and network initialisation per seed.

Methods: ``fastnips equal-width`` and ``fastnips bottleneck`` (d = 2): FunctionalRegressor, cubic B-splines K = 12,
lambda = 1e-4, default training; ``fastnips FPCA equal-width``: the same network on 6 FPCA scores (pooled
covariance on the training curves, BLUP scores); ``skfda linear``: ``skfda.ml.regression.LinearRegression`` on
the FDataBasis of the same per-curve coefficients (which equal scikit-fda's own ``FDataIrregular.to_basis``:
tests/functional); ``MLP grid``: each curve interpolated linearly (constant beyond its ends) to 50 regular
points, standardised, then ``sklearn.neural_network.MLPRegressor((64, 64), early_stopping=True)``. Writes
results.json, table.md and sofr_mse.png to --out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from fastnips.functional import (
    FunctionalRegressor,
    functional_linear_response,
    gaussian_process_curves,
    multiple_index_response,
)

SETTINGS = {"dense regular": ((40, 60), 0.0), "medium irregular": ((20, 40), 1.0), "sparse irregular": ((8, 15), 1.0)}
MODELS = {"linear": functional_linear_response, "two-index": multiple_index_response}
METHODS = ("fastnips equal-width", "fastnips bottleneck", "fastnips FPCA equal-width", "skfda linear", "MLP grid")
N_TRAIN, N_TEST, GRID = 300, 500, 50


def grid_features(curves) -> np.ndarray:
    grid = (np.arange(GRID) + 0.5) / GRID
    return np.stack([np.interp(grid, *curves.curve(i)) for i in range(curves.n_curves)])


def skfda_linear(est: FunctionalRegressor, X_tr, y_tr, X_te) -> np.ndarray | None:
    try:
        import skfda
        from skfda.ml.regression import LinearRegression
        from skfda.representation.basis import BSplineBasis
    except ImportError:
        return None
    basis = BSplineBasis((0.0, 1.0), n_basis=12)
    fd_tr = skfda.FDataBasis(basis, est.coefficients_.transform(X_tr))
    fd_te = skfda.FDataBasis(basis, est.coefficients_.transform(X_te))
    return LinearRegression().fit(fd_tr, y_tr).predict(fd_te)


def mlp_grid(curves, y, seed: int, quick: bool) -> np.ndarray:
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    G = grid_features(curves)
    mlp = MLPRegressor(hidden_layer_sizes=(64, 64), early_stopping=True, max_iter=50 if quick else 2000,
                       random_state=seed)
    model = make_pipeline(StandardScaler(), mlp).fit(G[:N_TRAIN], y[:N_TRAIN])
    return model.predict(G[N_TRAIN:])


def one_run(setting: str, model: str, seed: int, quick: bool) -> dict:
    samples, irregularity = SETTINGS[setting]
    curves, Z = gaussian_process_curves(N_TRAIN + N_TEST, samples=samples, irregularity=irregularity, noise=0.1,
                                        seed=seed)
    y, _ = MODELS[model](Z, noise=0.1, seed=seed)
    X = [curves.curve(i) for i in range(curves.n_curves)]
    X_tr, X_te, y_tr, y_te = X[:N_TRAIN], X[N_TRAIN:], y[:N_TRAIN], y[N_TRAIN:]
    out, secs = {}, {}
    kw = {"domain_range": (0.0, 1.0), "seed": seed, "epochs": 20 if quick else 400}
    fpca = {"basis": "fpca", "n_components": 6}
    for name, arch, extra in (("fastnips FPCA equal-width", "equal_width", fpca),
                              ("fastnips equal-width", "equal_width", {}), ("fastnips bottleneck", "bottleneck", {})):
        t0 = time.perf_counter()
        est = FunctionalRegressor(architecture=arch, **kw, **extra).fit(X_tr, y_tr)
        out[name] = float(np.mean((est.predict(X_te) - y_te) ** 2))
        secs[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = skfda_linear(est, X_tr, y_tr, X_te)
    out["skfda linear"] = None if pred is None else float(np.mean((pred - y_te) ** 2))
    secs["skfda linear"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["MLP grid"] = float(np.mean((mlp_grid(curves, y, seed, quick) - y_te) ** 2))
    secs["MLP grid"] = time.perf_counter() - t0
    return {"mse": out, "seconds": secs, "var_y": float(np.var(y_te))}


def table(results: dict, seeds: int) -> str:
    lines = [f"| model | sampling | {' | '.join(METHODS)} |", "|---|---|" + "---|" * len(METHODS)]
    for model in MODELS:
        for setting in SETTINGS:
            runs = results.get(f"{model}/{setting}")
            if not runs:
                continue
            cells = []
            for m in METHODS:
                v = [r["mse"][m] for r in runs if r["mse"][m] is not None]
                cells.append(f"{np.mean(v):.4f} ± {np.std(v):.4f}" if v else "n/a (no scikit-fda)")
            lines.append(f"| {model} | {setting} | {' | '.join(cells)} |")
    lines.append(f"\nTest MSE, mean ± std over {seeds} seed(s); the noise floor is 0.01.")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MODELS), figsize=(11, 3.8))
    for ax, model in zip(axes, MODELS):
        settings = [s for s in SETTINGS if f"{model}/{s}" in results]
        for k, m in enumerate(METHODS):
            vals = [[r["mse"][m] for r in results[f"{model}/{s}"] if r["mse"][m] is not None] for s in settings]
            means = [np.mean(v) if v else np.nan for v in vals]
            stds = [np.std(v) if v else 0.0 for v in vals]
            ax.bar(np.arange(len(settings)) + 0.16 * (k - 2), means, 0.16, yerr=stds, label=m, capsize=2)
        ax.axhline(0.01, color="k", lw=0.8, ls=":")
        ax.set_xticks(np.arange(len(settings)), settings)
        ax.set_yscale("log")
        ax.set_title(f"{model} model: test MSE (log), noise floor dotted")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1 seed, the sparse setting, the linear model, short training")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    seeds = 1 if args.quick else args.seeds
    combos = [("linear", "sparse irregular")] if args.quick else [(m, s) for m in MODELS for s in SETTINGS]
    results: dict = {}
    for model, setting in combos:
        results[f"{model}/{setting}"] = [one_run(setting, model, seed, args.quick) for seed in range(seeds)]
    report = table(results, seeds)
    if not args.quick:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
        (args.out / "table.md").write_text(report + "\n")
        plot(results, args.out / "sofr_mse.png")
    print(report)
    return report


if __name__ == "__main__":
    main()
