"""Deep scalar-on-function regression on irregularly sampled curves (fastnips.functional, paper 14).

Every subject has its own sampling times; the curves become cubic B-spline coefficients (C++ backend when built),
then an equal-width or a bottleneck network predicts the response. Runs in a few seconds on one core.

    python examples/functional_sofr.py
"""

from __future__ import annotations

import torch
from sklearn.model_selection import cross_val_score

from fastnips.functional import (
    BSplineBasis,
    FunctionalRegressor,
    curve_coefficients,
    gaussian_process_curves,
    multiple_index_response,
)

torch.set_num_threads(1)

# 500 Gaussian-process curves, each observed at 15-40 random times of its own
curves, Z = gaussian_process_curves(500, samples=(15, 40), irregularity=1.0, noise=0.1, seed=0)
y, _ = multiple_index_response(Z, noise=0.1, seed=0)  # y = g(<beta1, X>, <beta2, X>) + noise
X = [curves.curve(i) for i in range(curves.n_curves)]  # a list of (t_i, x_i) pairs

# the coefficients alone: one penalised least-squares fit per curve
C = curve_coefficients(curves, BSplineBasis(12, (0.0, 1.0)), smoothing=1e-4)
print("coefficients", C.shape)

for arch in ("equal_width", "bottleneck"):
    est = FunctionalRegressor(architecture=arch, domain_range=(0.0, 1.0), epochs=200)
    r2 = cross_val_score(est, X[:300], y[:300], cv=3)
    print(f"{arch:12s} 3-fold R^2 {r2.mean():.3f} +/- {r2.std():.3f}")
