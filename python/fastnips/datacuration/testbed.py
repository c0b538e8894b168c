r"""A real, small recipe-ablation testbed: scikit-learn models on bundled datasets with injected defects.

Paper 19 (datascale) tunes data recipes -- filter thresholds, deduplication strength, mixing ratios -- with
small ablation training runs. This module reproduces that loop at laptop scale, with no download:

* **Data.** A bundled scikit-learn dataset (``digits``, ``breast_cancer``, ``wine``), standardised and split
  into a training pool and a clean evaluation set (stratified, 70 / 30).
* **Defects** injected into the pool: class imbalance (class k kept with probability
  :math:`\rho^{k/(K-1)}`), label noise (a fraction of labels moved to a random other class), and
  duplicates (a fraction of examples copied several times, noisy examples twice as likely to be copied: junk
  is what gets repeated on the web).
* **Quality signal.** Out-of-fold probabilities of each example's given label from a logistic regression,
  folds grouped by duplicate group so copies cannot vouch for each other (the role of DCLM's quality
  classifier).
* **Recipe** :math:`(t, s, m) \in [0, 0.9]\times[0,1]^2`: keep examples whose score is at least ``t``
  (noise-filter threshold; stricter keeps less: the quality-quantity trade-off), keep
  :math:`\lceil g^{1-s}\rceil` of each duplicate group of size g (dedup strength), and weight classes towards
  :math:`(1-m)\,\hat p + m\,\mathrm{uniform}` (class-mix ratio).
* **Ablation run**: a logistic regression (C = 0.1, 200 L-BFGS iterations, a fixed budget) on the curated
  data; its quality is the accuracy on the clean evaluation set.

Random search draws recipes uniformly; :func:`run_searches` returns the best-so-far curves that
:func:`~fastnips.datacuration.fit_power_law` fits. Needs scikit-learn (imported on first use).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["RECIPE_BOUNDS", "Testbed", "curate", "evaluate_recipe", "make_testbed", "run_searches", "sample_recipes"]

RECIPE_BOUNDS = (("filter_threshold", 0.0, 0.9), ("dedup_strength", 0.0, 1.0), ("class_mix", 0.0, 1.0))
_DATASETS = ("digits", "breast_cancer", "wine")


@dataclass(frozen=True, eq=False)
class Testbed:
    """A corrupted training pool, its quality scores and a clean evaluation set (:func:`make_testbed`).

    Attributes
    ----------
    name : str
        The dataset.
    X, y : numpy.ndarray
        The corrupted training pool (duplicates included), shapes (n, p) and (n,).
    score : numpy.ndarray
        Out-of-fold probability of each pool example's given label, shape (n,).
    group : numpy.ndarray
        Duplicate group of each pool example (copies share it), shape (n,).
    noisy : numpy.ndarray of bool
        Whether the pool label was corrupted (for diagnostics; recipes never see it).
    X_eval, y_eval : numpy.ndarray
        The clean evaluation set.
    n_classes : int
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    score: np.ndarray
    group: np.ndarray
    noisy: np.ndarray
    X_eval: np.ndarray
    y_eval: np.ndarray
    n_classes: int


def _sklearn():
    try:
        import sklearn  # noqa: F401
    except ModuleNotFoundError as e:  # pragma: no cover - the test extra installs it
        raise ModuleNotFoundError("fastnips.datacuration.testbed needs scikit-learn: pip install scikit-learn") from e


def _model():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=0.1, max_iter=200)


def _fit(X, y, w=None):
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # the fixed iteration budget is part of the ablation run
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _model().fit(X, y, sample_weight=w)


def _corrupt(X, y, K, rng, label_noise, duplicate_frac, copies, imbalance):
    keep = rng.random(y.size) < imbalance ** (y / max(K - 1, 1))
    X, y = X[keep], y[keep].copy()
    noisy = rng.random(y.size) < label_noise
    y[noisy] = (y[noisy] + rng.integers(1, K, noisy.sum())) % K
    p = np.where(noisy, 2.0, 1.0)
    dup = rng.choice(y.size, size=round(duplicate_frac * y.size), replace=False, p=p / p.sum())
    idx = np.concatenate([np.arange(y.size), np.repeat(dup, copies)])
    return X[idx], y[idx], noisy[idx], idx


def make_testbed(dataset: str = "digits", *, label_noise: float = 0.35, duplicate_frac: float = 0.2,
                 copies: int = 6, imbalance: float = 0.4, seed: int = 0) -> Testbed:
    r"""Build the corrupted pool, its quality scores and the clean evaluation set.

    Parameters
    ----------
    dataset : {"digits", "breast_cancer", "wine"}
        A scikit-learn bundled dataset (no download).
    label_noise : float, default 0.35
        Fraction of pool labels moved to a random other class, in [0, 1).
    duplicate_frac : float, default 0.2
        Fraction of pool examples that get ``copies`` extra copies, in [0, 1].
    copies : int, default 6
        Extra copies of each duplicated example (>= 1).
    imbalance : float, default 0.4
        Class k is kept with probability ``imbalance ** (k / (K - 1))``, in (0, 1].
    seed : int, default 0

    Returns
    -------
    Testbed
    """
    if dataset not in _DATASETS:
        raise ValueError(f"dataset must be one of {_DATASETS}, got {dataset!r}")
    for name, v, lo, hi in (("label_noise", label_noise, 0.0, 0.999), ("duplicate_frac", duplicate_frac, 0.0, 1.0),
                            ("imbalance", imbalance, 1e-9, 1.0)):
        if not (math.isfinite(float(v)) and lo <= float(v) <= hi):
            raise ValueError(f"{name} must be in [{lo:g}, {hi:g}], got {v!r}")
    if isinstance(copies, bool) or not isinstance(copies, int | np.integer) or copies < 1:
        raise ValueError(f"copies must be a positive integer, got {copies!r}")
    _sklearn()
    from sklearn import datasets
    from sklearn.model_selection import GroupKFold, cross_val_predict, train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    K = int(y.max()) + 1
    Xp, Xe, yp, ye = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    rng = np.random.default_rng(seed)
    Xc, yc, noisy, group = _corrupt(Xp, yp, K, rng, label_noise, duplicate_frac, copies, imbalance)
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        proba = cross_val_predict(_model(), Xc, yc, cv=GroupKFold(5), groups=group, method="predict_proba")
    classes = np.unique(yc)
    score = proba[np.arange(yc.size), np.searchsorted(classes, yc)]
    return Testbed(name=dataset, X=Xc, y=yc, score=score, group=group, noisy=noisy, X_eval=Xe, y_eval=ye,
                   n_classes=K)


def _check_recipe(recipe) -> tuple[float, float, float]:
    r = np.asarray(recipe, dtype=np.float64)
    if r.shape != (3,) or not np.isfinite(r).all():
        raise ValueError("recipe must be 3 finite numbers (filter_threshold, dedup_strength, class_mix), "
                         f"got {recipe!r}")
    for v, (name, lo, hi) in zip(r, RECIPE_BOUNDS, strict=True):
        if not lo <= v <= hi:
            raise ValueError(f"{name} must be in [{lo:g}, {hi:g}], got {v:g}")
    return float(r[0]), float(r[1]), float(r[2])


def curate(tb: Testbed, recipe: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""Apply a recipe to the pool: (indices kept, sample weights).

    Parameters
    ----------
    tb : Testbed
    recipe : array_like, shape (3,)
        (filter_threshold in [0, 0.9], dedup_strength in [0, 1], class_mix in [0, 1]).

    Returns
    -------
    tuple of numpy.ndarray
        Kept pool indices, and weights (mean 1) moving the class mix a fraction ``class_mix`` to uniform.
    """
    t, s, m = _check_recipe(recipe)
    kept = np.flatnonzero(tb.score >= t)
    if kept.size == 0:
        return kept, np.empty(0)
    _, inv, sizes = np.unique(tb.group[kept], return_inverse=True, return_counts=True)
    rank = np.empty(kept.size, dtype=np.int64)  # position of each copy within its group (pool order)
    order = np.argsort(inv, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank[order] = np.arange(kept.size) - np.repeat(starts, sizes)
    kept = kept[rank < np.ceil(sizes[inv] ** (1.0 - s))]
    counts = np.bincount(tb.y[kept], minlength=tb.n_classes).astype(np.float64)
    present = counts > 0
    emp = counts / counts.sum()
    target = (1 - m) * emp + m * present / present.sum()
    w = (target / np.where(present, emp, 1.0))[tb.y[kept]]
    return kept, w / w.mean()


def evaluate_recipe(tb: Testbed, recipe: ArrayLike) -> tuple[float, int]:
    """One ablation run: (accuracy on the clean evaluation set, number of training examples kept).

    Parameters
    ----------
    tb : Testbed
    recipe : array_like, shape (3,)
        See :func:`curate`.

    Returns
    -------
    tuple
        Accuracy in [0, 1] (a constant majority guess when fewer than two classes survive) and the kept count.
    """
    kept, w = curate(tb, recipe)
    labels = np.unique(tb.y[kept])
    if labels.size < 2:
        guess = labels[0] if labels.size else -1
        return float(np.mean(tb.y_eval == guess)), int(kept.size)
    model = _fit(tb.X[kept], tb.y[kept], w)
    return float(model.score(tb.X_eval, tb.y_eval)), int(kept.size)


def sample_recipes(n: int, seed: int) -> np.ndarray:
    """``n`` recipes drawn uniformly from the box :data:`RECIPE_BOUNDS`, shape (n, 3)."""
    rng = np.random.default_rng(seed)
    lo = np.array([b[1] for b in RECIPE_BOUNDS])
    hi = np.array([b[2] for b in RECIPE_BOUNDS])
    return lo + (hi - lo) * rng.random((n, 3))


def run_searches(tb: Testbed, n_searches: int, n_runs: int, *, seed: int = 0) -> dict:
    """Independent random searches: every search draws its own ``n_runs`` recipes and runs each once.

    Parameters
    ----------
    tb : Testbed
    n_searches, n_runs : int
        Searches and runs per search (>= 1 each); ``n_searches * n_runs`` ablation runs in all.
    seed : int, default 0
        Recipes of search s come from ``seed * 100003 + s``.

    Returns
    -------
    dict
        ``recipes`` (S, n_runs, 3), ``quality`` (S, n_runs), ``kept`` (S, n_runs) and ``best``
        (S, n_runs): best quality among the first n runs of each search.
    """
    for name, v in (("n_searches", n_searches), ("n_runs", n_runs)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    recipes = np.stack([sample_recipes(n_runs, seed * 100003 + s) for s in range(n_searches)])
    out = np.array([[evaluate_recipe(tb, r) for r in rs] for rs in recipes])
    quality = out[..., 0]
    return {"recipes": recipes, "quality": quality, "kept": out[..., 1].astype(np.int64),
            "best": np.maximum.accumulate(quality, axis=1)}
