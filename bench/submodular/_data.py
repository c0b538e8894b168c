"""Shared data of the submodular benchmarks: scikit-learn's bundled digits as PCA embeddings (no download),
jittered copies when more candidates than the 1,797 digits are needed, and the similarity kernel."""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=4)
def digits_embedding(n: int, dims: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(embedding (n, dims) float64, labels (n,)): the PCA of the 8x8 digits, whitened to unit variance; for
    n > 1797 the digits are cycled with Gaussian jitter (0.1 of the unit scale) on the copies."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    X, y = load_digits(return_X_y=True)
    Z = PCA(dims, whiten=True, random_state=0).fit_transform(X)
    rng = np.random.default_rng(seed)
    idx = np.concatenate([rng.permutation(len(Z)) for _ in range(-(-n // len(Z)))])[:n]
    out = Z[idx].copy()
    copies = np.arange(n) >= len(Z)
    out[copies] += 0.1 * rng.standard_normal((int(copies.sum()), dims))
    return out, y[idx]


def rbf_similarity(Z: np.ndarray, ref: np.ndarray | None = None) -> np.ndarray:
    """exp(-|z_a - z_v|^2 / (2 median^2)) between the rows of Z and of ref (default Z), float64."""
    ref = Z if ref is None else ref
    d2 = (Z * Z).sum(1)[:, None] + (ref * ref).sum(1)[None] - 2.0 * Z @ ref.T
    np.maximum(d2, 0.0, out=d2)
    scale = np.median(d2[: min(len(Z), 500), : min(len(ref), 500)])
    d2 *= -0.5 / scale
    return np.exp(d2, out=d2)


def nonneg_features(Z: np.ndarray) -> np.ndarray:
    """The embedding min-max scaled to [0, 1] per column (the features of feature-based functions; submodlib
    scales its features this way itself, so all three libraries see the same numbers)."""
    lo, hi = Z.min(0), Z.max(0)
    return np.ascontiguousarray((Z - lo) / np.where(hi > lo, hi - lo, 1.0))
