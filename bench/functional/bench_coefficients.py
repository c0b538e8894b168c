"""Per-curve basis coefficients of irregular curves: fastnips (cpp, reference) vs scikit-fda, results checked equal.

Curves: times one per cell of a regular partition of [0, 1] (stratified: irregular, never a gap), m_i drawn
uniformly from [20, 200]; values = a random walk; cubic B-splines, K = 12, second-derivative penalty
lambda = 1e-4 (the same problem for every row). Groups:

* ``coefficients n=1000``: ``fastnips-cpp`` (:func:`fastnips.functional.curve_coefficients`, C++, OpenMP over
  curves), ``fastnips-reference`` (numpy, one curve at a time), ``skfda-loop`` (what a scikit-fda user writes for
  curves on different grids: ``FDataGrid(x_i, t_i).to_basis(basis, ...)`` per curve) and ``skfda-irregular``
  (one ``FDataIrregular(...).to_basis(...)`` call on all curves).
* ``coefficients n=1e5`` and ``coefficients n=1e6``: ``fastnips-cpp`` alone (the peers would take minutes to
  hours), checked against the reference on the first 500 curves.

Every row is checked against the reference to 1e-8 (max abs).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fastnips import _backend
from fastnips.functional import BSplineBasis, PackedCurves, curve_coefficients

BASIS = BSplineBasis(12, (0.0, 1.0))
LAMBDA = 1e-4
SIZES = {"n=1000": 1_000, "n=1e5": 100_000, "n=1e6": 1_000_000}
AGREE = 1e-8


def _block(rng: np.random.Generator, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(m) + 1, dtype=np.int64)
    np.cumsum(m, out=offsets[1:])
    curve_of = np.repeat(np.arange(len(m)), m)
    t = (np.arange(offsets[-1]) - offsets[curve_of] + rng.uniform(0.0, 1.0, offsets[-1])) / m[curve_of]
    x = np.cumsum(rng.standard_normal(offsets[-1]))
    x -= np.repeat(np.r_[0.0, x[offsets[1:-1] - 1]], m)  # a random walk per curve
    return t, x / np.sqrt(m[curve_of])


@functools.lru_cache(maxsize=1)
def curves(n: int) -> PackedCurves:
    """n stratified irregular curves with 20-200 samples each (generated in blocks of 10^5 curves)."""
    rng = np.random.default_rng(0)
    m = rng.integers(20, 201, size=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(m, out=offsets[1:])
    t, x = np.empty(offsets[-1]), np.empty(offsets[-1])
    for c0 in range(0, n, 100_000):
        c1 = min(c0 + 100_000, n)
        t[offsets[c0]:offsets[c1]], x[offsets[c0]:offsets[c1]] = _block(rng, m[c0:c1])
    return PackedCurves(offsets, t, x)


@functools.lru_cache(maxsize=2)
def oracle(n: int) -> np.ndarray:
    c = curves(n)
    head = c if n <= 1000 else c.subset(np.arange(500))
    return curve_coefficients(head, BASIS, smoothing=LAMBDA, backend="reference")


def _skfda():
    skfda = pytest.importorskip("skfda", reason="scikit-fda is the peer (pip install scikit-fda)")
    from skfda.misc.operators import LinearDifferentialOperator
    from skfda.misc.regularization import L2Regularization
    from skfda.representation.basis import BSplineBasis as SkB

    kw = {"smoothing_parameter": LAMBDA, "regularization": L2Regularization(LinearDifferentialOperator(2))}
    return skfda, SkB((0.0, 1.0), n_basis=12), kw


def skfda_loop(c: PackedCurves) -> np.ndarray:
    skfda, basis, kw = _skfda()
    out = np.empty((c.n_curves, 12))
    for i in range(c.n_curves):
        t, x = c.curve(i)
        out[i] = skfda.FDataGrid(x[None, :], t).to_basis(basis, **kw).coefficients[0]
    return out


def skfda_irregular(c: PackedCurves) -> np.ndarray:
    _, basis, kw = _skfda()
    from skfda.representation.irregular import FDataIrregular

    fd = FDataIrregular(start_indices=c.offsets[:-1], points=c.t, values=c.x)
    return fd.to_basis(basis, **kw).coefficients


IMPLS = {
    "fastnips-cpp": lambda c: curve_coefficients(c, BASIS, smoothing=LAMBDA, backend="cpp"),
    "fastnips-reference": lambda c: curve_coefficients(c, BASIS, smoothing=LAMBDA, backend="reference"),
    "skfda-loop": skfda_loop,
    "skfda-irregular": skfda_irregular,
}


@pytest.mark.parametrize("impl", list(IMPLS))
def test_coefficients_1000(machine_facts, impl):
    if impl == "fastnips-cpp" and _backend.why_unavailable("cpp"):
        pytest.skip(f"backend 'cpp' not available: {_backend.why_unavailable('cpp')}")
    c = curves(SIZES["n=1000"])
    machine_facts.group = "coefficients n=1000 m=20-200 K=12"
    machine_facts.extra_info.update(samples=int(c.offsets[-1]))
    got = machine_facts.pedantic(IMPLS[impl], args=(c,), rounds=3 if impl.startswith("fastnips") else 1,
                                 warmup_rounds=0)
    np.testing.assert_allclose(got, oracle(SIZES["n=1000"]), rtol=0, atol=AGREE)


@pytest.mark.parametrize("size", ["n=1e5", "n=1e6"])
def test_coefficients_at_scale(machine_facts, size):
    why = _backend.why_unavailable("cpp")
    if why:
        pytest.skip(f"backend 'cpp' not available: {why}")
    n = SIZES[size]
    c = curves(n)
    machine_facts.group = f"coefficients {size} m=20-200 K=12"
    machine_facts.extra_info.update(samples=int(c.offsets[-1]))
    got = machine_facts.pedantic(IMPLS["fastnips-cpp"], args=(c,), rounds=3, warmup_rounds=0)
    np.testing.assert_allclose(got[:500], oracle(n), rtol=0, atol=AGREE)
