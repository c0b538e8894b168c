"""Greedy k = 100 of n = 10^4 candidates: fastnips (cpp, lazy) vs apricot vs submodlib, one group per function.

Data: the digits embedding of ``_data.py`` (PCA-16 of scikit-learn's digits, cycled with jitter to 10^4).

* ``facility``: facility location on the dense RBF similarity (10^4 x 10^4 float64, built once, outside the
  timing) handed to all three as a precomputed kernel: ``fastnips.submodular.FacilityLocation`` +
  :func:`~fastnips.submodular.greedy`; apricot ``FacilityLocationSelection(k, metric="precomputed",
  optimizer="lazy").fit(K)``; submodlib ``FacilityLocationFunction(mode="dense", sijs=K).maximize(budget=k,
  optimizer="LazyGreedy")`` (only ``maximize`` timed: submodlib copies the kernel into C++ in the constructor).
* ``feature-sqrt``: :math:`\\sum_d \\sqrt{\\sum_{a \\in S} X_{ad}}` on the embedding min-max scaled to [0, 1];
  apricot ``FeatureBasedSelection(k, concave_func="sqrt", optimizer="lazy")``; submodlib
  ``FeatureBasedFunction(mode=FeatureBased.squareRoot)`` (same scaling).

Every run checks that the peer selects the same elements and reaches the same value (relative 1e-6: submodlib
computes in float32). apricot's numba kernels are compiled in a warm-up round before timing.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _data import digits_embedding, nonneg_features, rbf_similarity

from fastnips.submodular import FacilityLocation, FeatureBased, greedy

# scipy deprecations raised inside submodlib's constructor (peer code; nothing to act on here)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N, K = 10_000, 100
IMPLS = ["fastnips-cpp", "apricot", "submodlib"]
AGREE = 1e-6


@functools.lru_cache(maxsize=1)
def kernel() -> np.ndarray:
    return rbf_similarity(digits_embedding(N)[0])


@functools.lru_cache(maxsize=1)
def features() -> np.ndarray:
    return nonneg_features(digits_embedding(N)[0])


def run(impl: str, func: str):
    """(selection, value) of one library, or a runner to time."""
    if impl == "fastnips-cpp":
        fn = FacilityLocation(kernel()) if func == "facility" else FeatureBased(features(), concave="sqrt")
        return lambda: (lambda r: (r.selected.tolist(), r.value))(greedy(fn, K, backend="cpp"))
    if impl == "apricot":
        apricot = pytest.importorskip("apricot", reason="apricot-select is optional (pip install apricot-select)")
        if func == "facility":
            sel = apricot.FacilityLocationSelection(K, metric="precomputed", optimizer="lazy")
            data = kernel()
        else:
            sel = apricot.FeatureBasedSelection(K, concave_func="sqrt", optimizer="lazy")
            data = features()
        return lambda: (lambda s: (s.ranking.tolist(), float(np.sum(s.gains))))(sel.fit(data))
    submodlib = pytest.importorskip("submodlib", reason="submodlib-py is optional (pip install submodlib-py)")
    if func == "facility":
        obj = submodlib.FacilityLocationFunction(n=N, mode="dense", sijs=kernel(), separate_rep=False)
    else:
        from submodlib_cpp import FeatureBased as Mode

        X = features()
        obj = submodlib.FeatureBasedFunction(n=N, features=X.tolist(), numFeatures=X.shape[1], sparse=False,
                                             mode=Mode.squareRoot)

    def go():
        out = obj.maximize(budget=K, optimizer="LazyGreedy", stopIfZeroGain=False, stopIfNegativeGain=False,
                           verbose=False, show_progress=False)
        return [int(i) for i, _ in out], float(sum(g for _, g in out))

    return go


@functools.lru_cache(maxsize=2)
def ours(func: str):
    return run("fastnips-cpp", func)()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("func", ["facility", "feature-sqrt"])
def test_greedy(machine_facts, impl, func):
    benchmark = machine_facts
    benchmark.group = f"greedy {func} n={N} k={K}"
    go = run(impl, func)
    go()  # warm-up (apricot compiles its numba kernels)
    sel, value = benchmark.pedantic(go, rounds=3, iterations=1)
    ref_sel, ref_value = ours(func)
    assert sel == ref_sel
    assert value == pytest.approx(ref_value, rel=AGREE)
