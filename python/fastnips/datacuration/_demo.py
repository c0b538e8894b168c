"""``fastnips demo`` rows of the datacuration package (paper 19, datascale): the power law of the best recipe on
synthetic recipe spaces (exponent vs theory 2/d) and on the scikit-learn testbed (a fit on few runs predicting a
held-out larger N). Budgeted in runs and searches, never in seconds: a seed gives the same numbers on any load."""

from __future__ import annotations

import time

__all__ = ["demo_datascale"]


def _synthetic_row(seed: int) -> dict:
    import numpy as np

    from . import fit_power_law, random_search_curves

    t0 = time.perf_counter()
    N = np.unique(np.geomspace(32, 2048, 10).astype(int))
    est = {}
    for d in (1, 2, 4):
        est[d] = fit_power_law(N, random_search_curves(d, 2048, 200, seed=seed + d)[:, N - 1], n_boot=200,
                               seed=seed)
    secs = time.perf_counter() - t0
    err = max(abs(f.c * d / 2 - 1) for d, f in est.items())
    return {"task": "datascale", "backend": "numpy", "measure": "exponent c vs theory 2/d",
            "result": ", ".join(f"d={d}: {f.c:.2f} (2/d={2 / d:.2f})" for d, f in est.items()),
            "detail": f"random search on a quadratic optimum in [-1,1]^d, 200 searches x 2048 runs, N = 32..2048, "
                      f"profiled asymptote; max relative error {err:.1%} ({secs:.1f} s)",
            "values": {f"c_d{d}": f.c for d, f in est.items()} | {"max_rel_error": err}}


def _testbed_row(seed: int) -> dict:
    import numpy as np

    from . import fit_power_law
    from .testbed import make_testbed, run_searches

    t0 = time.perf_counter()
    tb = make_testbed("breast_cancer", seed=seed)
    fit_runs, held = 8, 32
    A = run_searches(tb, 8, fit_runs, seed=10 * seed + 1)
    B = run_searches(tb, 8, held, seed=10 * seed + 2)
    N = np.array([1, 2, 3, 4, 6, 8])
    fit = fit_power_law(N, A["best"][:, N - 1], upper=1.0, n_boot=500, seed=seed)
    (lo,), (hi,) = fit.interval([held])
    obs = float(B["best"][:, held - 1].mean())
    secs = time.perf_counter() - t0
    inside = lo <= obs <= hi
    return {"task": "datascale", "backend": "sklearn", "measure": f"predicted best({held}) from N <= {fit_runs}",
            "result": f"{float(fit.predict(held)):.3f} [{lo:.3f}, {hi:.3f}] vs observed {obs:.3f}"
                      f"{'' if inside else ' (outside)'}",
            "detail": f"logistic regression on breast_cancer with 35% label noise and duplicates; recipes (filter "
                      f"threshold, dedup, class mix); 8 searches x {fit_runs} runs fitted, 8 x {held} held out; "
                      f"c = {fit.c:.2f} ({secs:.1f} s)",
            "values": {"predicted": float(fit.predict(held)), "low": float(lo), "high": float(hi), "observed": obs,
                       "inside": bool(inside), "c": fit.c}}


def demo_datascale(seed: int) -> list[dict]:
    """Two rows: the exponent on synthetic recipe spaces, and a held-out prediction on the sklearn testbed."""
    rows = [_synthetic_row(seed)]
    try:
        import sklearn  # noqa: F401
    except ModuleNotFoundError:
        rows.append({"task": "datascale", "backend": "sklearn", "measure": "testbed", "result": "skipped",
                     "detail": "scikit-learn is not installed", "values": {}})
        return rows
    rows.append(_testbed_row(seed))
    return rows
