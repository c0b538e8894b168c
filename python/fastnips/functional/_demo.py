"""``fastnips demo`` rows of the functional package: the per-curve coefficients on every backend present (agreement
with the numpy reference and speed), and the bottleneck against the equal-width network on a two-index model
(deterministic: fixed data, seeds and epoch budget)."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["demo_functional"]


def _coefficient_row(seed: int) -> dict:
    from .. import _backend
    from . import BSplineBasis, curve_coefficients, gaussian_process_curves

    curves, _ = gaussian_process_curves(20_000, samples=(20, 200), noise=0.1, seed=seed)
    basis = BSplineBasis(12, (0.0, 1.0))
    head = curves.subset(np.arange(500))
    curve_coefficients(head.subset(np.arange(5)), basis, smoothing=1e-4, backend="reference")  # imports, caches
    t0 = time.perf_counter()
    ref = curve_coefficients(head, basis, smoothing=1e-4, backend="reference")
    ref_us = (time.perf_counter() - t0) / head.n_curves * 1e6
    b = "cpp" if not _backend.why_unavailable("cpp") else "reference"
    t0 = time.perf_counter()
    got = curve_coefficients(curves if b == "cpp" else head, basis, smoothing=1e-4, backend=b)
    n = curves.n_curves if b == "cpp" else head.n_curves
    us = (time.perf_counter() - t0) / n * 1e6
    err = float(np.max(np.abs(got[:500] - ref)))
    return {"task": "functional coefficients", "backend": b, "measure": "agreement; µs/curve ↓",
            "result": f"{'agrees' if err < 1e-10 else 'DIFFERS'}, {us:.2f} µs/curve",
            "detail": f"cubic B-splines K=12, lambda=1e-4, {n:,} irregular curves of 20-200 samples; max abs diff vs "
                      f"the numpy reference {err:.1e} (first 500 curves); reference {ref_us:.0f} µs/curve",
            "values": {"max_abs_error": err, "us_per_curve": us, "reference_us_per_curve": ref_us, "curves": n}}


def _regression_row(seed: int, epochs: int) -> dict:
    from . import FunctionalRegressor, gaussian_process_curves, multiple_index_response

    curves, Z = gaussian_process_curves(700, samples=(15, 40), noise=0.1, seed=seed)
    y, _ = multiple_index_response(Z, noise=0.1, seed=seed)
    X = [curves.curve(i) for i in range(curves.n_curves)]
    mse, t0 = {}, time.perf_counter()
    for arch in ("equal_width", "bottleneck"):
        est = FunctionalRegressor(architecture=arch, domain_range=(0.0, 1.0), epochs=epochs, seed=seed)
        est.fit(X[:200], y[:200])
        mse[arch] = float(np.mean((est.predict(X[200:]) - y[200:]) ** 2))
    return {"task": "functional regression", "backend": "torch", "measure": "test MSE ↓ equal-width/bottleneck",
            "result": f"{mse['equal_width']:.3f} / {mse['bottleneck']:.3f}",
            "detail": f"two-index model y = sin(2 u1) + u2^2/2 - 1/2 + noise (floor 0.01) on Gaussian-process curves "
                      f"with 15-40 random times each; 200 train / 500 test, {epochs} epochs max "
                      f"({time.perf_counter() - t0:.1f} s); var(y) = {np.var(y[200:]):.2f}",
            "values": {"mse_equal_width": mse["equal_width"], "mse_bottleneck": mse["bottleneck"],
                       "var_y": float(np.var(y[200:]))}}


def demo_functional(seed: int, epochs: int = 200) -> list[dict]:
    """Two rows: the coefficient kernel (agreement with the reference, µs per curve) and the two networks' test MSE
    on a functional two-index model."""
    return [_coefficient_row(seed), _regression_row(seed, epochs)]
