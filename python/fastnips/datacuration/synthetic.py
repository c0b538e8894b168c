r"""Synthetic recipe spaces with a known exponent: random search on a smooth optimum in d dimensions.

Recipes are uniform in :math:`[-1, 1]^d` and a recipe's quality is :math:`q^* - \|x\|^2` (plus optional
Gaussian evaluation noise, the seed-to-seed noise of a real ablation run). The gap tail is
:math:`P(\|x\|^2 \le \varepsilon) = V_d\varepsilon^{d/2}/2^d` (:func:`~fastnips.datacuration.quadratic_tail`),
so the best-of-N curve follows :math:`q^* - bN^{-2/d}` (:func:`~fastnips.datacuration.expected_best`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["random_search_curves"]


def random_search_curves(d: int, n_runs: int, n_searches: int, *, optimum: float = 0.0, noise: float = 0.0,
                         seed: int = 0) -> np.ndarray:
    r"""Best-so-far qualities of independent random searches on the quadratic recipe space.

    Parameters
    ----------
    d : int
        Recipe dimensions (>= 1); the exponent of the expected best is :math:`2/d`.
    n_runs : int
        Runs per search (>= 1).
    n_searches : int
        Independent searches (>= 1).
    optimum : float, default 0.0
        :math:`q^*`.
    noise : float, default 0.0
        Standard deviation of Gaussian noise added to each run's measured quality (>= 0).
    seed : int, default 0

    Returns
    -------
    numpy.ndarray, shape (n_searches, n_runs)
        Entry ``[s, n - 1]`` is the best measured quality among the first n runs of search s.

    Examples
    --------
    >>> from fastnips.datacuration import random_search_curves
    >>> random_search_curves(2, 64, 3, seed=0).shape
    (3, 64)
    """
    for name, v in (("d", d), ("n_runs", n_runs), ("n_searches", n_searches)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be finite and >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    out = np.empty((n_searches, n_runs))
    step = max(1, 2_000_000 // (n_runs * d))  # bounded memory: searches in chunks
    for s in range(0, n_searches, step):
        m = min(step, n_searches - s)
        q = optimum - (rng.uniform(-1.0, 1.0, size=(m, n_runs, d)) ** 2).sum(axis=2)
        if noise > 0:
            q = q + noise * rng.standard_normal(q.shape)
        out[s:s + m] = np.maximum.accumulate(q, axis=1)
    return out
