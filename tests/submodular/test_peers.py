"""fastnips.submodular.greedy against the peers' real code where they install: apricot-select
(FacilityLocationSelection, FeatureBasedSelection) and submodlib-py (FacilityLocationFunction,
FeatureBasedFunction). Same selection in the same order, values to 1e-9 (apricot, float64) and 1e-5 relative
(submodlib computes in float32)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.submodular import FacilityLocation, FeatureBased, greedy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # scipy deprecations inside submodlib
N, K = 150, 12


def data(seed: int = 0):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(N, 4))
    sim = np.exp(-((pts[:, None] - pts[None]) ** 2).sum(-1) / 4)
    X = rng.uniform(0, 1, (N, 6))
    X = (X - X.min(0)) / (X.max(0) - X.min(0))  # min-max scaled, as submodlib scales its features itself
    return sim, X


def test_apricot():  # backend auto: cpp where built (cpp = reference is tested in test_greedy.py)
    apricot = pytest.importorskip("apricot", reason="apricot-select is optional (pip install apricot-select)")
    sim, X = data()
    ours = greedy(FacilityLocation(sim), K)
    ap = apricot.FacilityLocationSelection(K, metric="precomputed", optimizer="lazy").fit(sim)
    assert ap.ranking.tolist() == ours.selected.tolist()
    np.testing.assert_allclose(ap.gains, ours.gains, rtol=1e-9)
    ours = greedy(FeatureBased(X, concave="sqrt"), K)  # each concave function costs apricot a numba compile
    ap = apricot.FeatureBasedSelection(K, concave_func="sqrt", optimizer="lazy").fit(X)
    assert ap.ranking.tolist() == ours.selected.tolist()
    np.testing.assert_allclose(ap.gains, ours.gains, rtol=1e-9)


def test_submodlib(backend):
    submodlib = pytest.importorskip("submodlib", reason="submodlib-py is optional (pip install submodlib-py)")
    from submodlib_cpp import FeatureBased as Mode

    sim, X = data(1)
    kw = dict(budget=K, optimizer="LazyGreedy", stopIfZeroGain=False, stopIfNegativeGain=False, verbose=False,
              show_progress=False)
    ours = greedy(FacilityLocation(sim), K, backend=backend)
    got = submodlib.FacilityLocationFunction(n=N, mode="dense", sijs=sim, separate_rep=False).maximize(**kw)
    assert [i for i, _ in got] == ours.selected.tolist()
    np.testing.assert_allclose([g for _, g in got], ours.gains, rtol=1e-5)
    ours = greedy(FeatureBased(X, concave="sqrt"), K, backend=backend)
    fb = submodlib.FeatureBasedFunction(n=N, features=X.tolist(), numFeatures=X.shape[1], sparse=False,
                                        mode=Mode.squareRoot)
    got = fb.maximize(**kw)
    assert [i for i, _ in got] == ours.selected.tolist()
    np.testing.assert_allclose([g for _, g in got], ours.gains, rtol=1e-5)
