"""Per-curve basis coefficients: every backend against the reference, against scikit-fda's ``to_basis`` on a
regular grid, the error's fall with the samples per curve, the input forms, and the refusals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastnips import _backend
from fastnips.functional import (
    BSplineBasis,
    FourierBasis,
    PackedCurves,
    as_packed,
    curve_coefficients,
    gaussian_process_curves,
    pack_curves,
)

BASES = {
    "cubic": BSplineBasis(10, (0.0, 1.0)),
    "quadratic": BSplineBasis(8, (0.0, 1.0), order=3),
    "fourier": FourierBasis(7, (0.0, 1.0)),
    "fourier-period": FourierBasis(9, (0.0, 1.0), period=0.7),
}


@pytest.mark.parametrize("smoothing", [0.0, 1e-3])
@pytest.mark.parametrize("name", list(BASES))
def test_backend_matches_reference(backend, irregular, name, smoothing):
    ref = curve_coefficients(irregular, BASES[name], smoothing=smoothing, backend="reference")
    got = curve_coefficients(irregular, BASES[name], smoothing=smoothing, backend=backend)
    assert got.shape == (irregular.n_curves, BASES[name].n_basis)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * max(1.0, np.abs(ref).max()))


def test_threads_do_not_change_the_result():
    if _backend.why_unavailable("cpp"):
        pytest.skip(f"backend 'cpp' not available: {_backend.why_unavailable('cpp')}")
    # 6000 curves: above the kernel's one-thread threshold (4096 curves), so two threads really split the work
    curves, _ = gaussian_process_curves(6000, samples=(20, 40), seed=5)
    one = curve_coefficients(curves, BASES["cubic"], smoothing=1e-4, backend="cpp", n_threads=1)
    two = curve_coefficients(curves, BASES["cubic"], smoothing=1e-4, backend="cpp", n_threads=2)
    np.testing.assert_array_equal(one, two)
    ref = curve_coefficients(curves.subset(np.arange(5500, 6000)), BASES["cubic"], smoothing=1e-4,
                             backend="reference")
    np.testing.assert_allclose(two[5500:], ref, rtol=0, atol=1e-10)


def _skfda_coefficients(t, X, basis, smoothing):
    skfda = pytest.importorskip("skfda", reason="scikit-fda is the peer whose to_basis we must equal")
    from skfda.misc.operators import LinearDifferentialOperator
    from skfda.misc.regularization import L2Regularization
    from skfda.representation.basis import BSplineBasis as SkB
    from skfda.representation.basis import FourierBasis as SkF

    if isinstance(basis, BSplineBasis):
        sk = SkB(basis.domain_range, n_basis=basis.n_basis, order=basis.order)
    else:
        sk = SkF(basis.domain_range, n_basis=basis.n_basis, period=basis.period)
    kw = {} if smoothing == 0 else {"smoothing_parameter": smoothing,
                                    "regularization": L2Regularization(LinearDifferentialOperator(2))}
    return skfda.FDataGrid(X, t).to_basis(sk, **kw).coefficients


@pytest.mark.parametrize("smoothing", [0.0, 1e-3])
@pytest.mark.parametrize("basis", [BSplineBasis(12, (0.0, 2.0)), BSplineBasis(9, (0.0, 2.0), order=3),
                                   FourierBasis(11, (0.0, 2.0)), FourierBasis(7, (0.0, 2.0), period=1.5)],
                         ids=["cubic", "quadratic", "fourier", "fourier-period"])
def test_equals_skfda_to_basis_on_a_regular_grid(backend, grid_data, basis, smoothing):
    t, X = grid_data
    want = _skfda_coefficients(t, X, basis, smoothing)
    got = curve_coefficients([(t, x) for x in X], basis, smoothing=smoothing, backend=backend)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


def test_accepts_skfda_objects(backend, grid_data):
    skfda = pytest.importorskip("skfda", reason="scikit-fda's FDataGrid / FDataIrregular are accepted inputs")
    from skfda.representation.irregular import FDataIrregular

    t, X = grid_data
    basis = BSplineBasis(8, (0.0, 2.0))
    want = curve_coefficients([(t, x) for x in X], basis, backend="reference")
    np.testing.assert_allclose(curve_coefficients(skfda.FDataGrid(X, t), basis, backend=backend), want, atol=1e-12)
    # irregular: every other curve keeps only its even samples
    keep = [np.arange(60) if i % 2 else np.arange(0, 60, 2) for i in range(len(X))]
    starts = np.cumsum([0] + [len(k) for k in keep[:-1]])
    irr = FDataIrregular(start_indices=starts, points=np.concatenate([t[k] for k in keep]),
                         values=np.concatenate([X[i, k] for i, k in enumerate(keep)]))
    want = curve_coefficients([(t[k], X[i, k]) for i, k in enumerate(keep)], basis, backend="reference")
    np.testing.assert_allclose(curve_coefficients(irr, basis, backend=backend), want, atol=1e-12)


def test_packed_and_list_forms_agree(backend, irregular):
    as_list = [irregular.curve(i) for i in range(irregular.n_curves)]
    basis = BASES["cubic"]
    a = curve_coefficients(as_list, basis, backend=backend)
    b = curve_coefficients(tuple(irregular), basis, backend=backend)
    c = curve_coefficients(pack_curves(as_list), basis, backend=backend)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_error_falls_with_samples_per_curve(backend):
    """Curves in the span of the basis plus noise: least squares is unbiased and the coefficient RMSE is
    sigma sqrt(tr (Phi^T Phi)^-1) ~ m^(-1/2); four times the samples halves it."""
    basis = BSplineBasis(8, (0.0, 1.0))
    rng = np.random.default_rng(7)
    truth = rng.standard_normal((400, 8))
    rmse = []
    for m in (20, 80, 320):
        curves = []
        for c in truth:
            t = (np.arange(m) + rng.uniform(0, 1, m)) / m  # one time per cell: irregular, never a gap
            curves.append((t, basis.evaluate(t) @ c + 0.3 * rng.standard_normal(m)))
        est = curve_coefficients(curves, basis, backend=backend)
        rmse.append(float(np.sqrt(np.mean((est - truth) ** 2))))
    ratios = np.array(rmse[1:]) / np.array(rmse[:-1])
    assert np.all((ratios > 0.35) & (ratios < 0.65)), (rmse, ratios)


def test_gp_curve_error_falls_towards_the_truncation_floor(backend):
    """Gaussian-process curves (not in the span): the L2 error of the fitted curve falls as m grows."""
    from fastnips.functional.synthetic import kl_basis

    basis = BSplineBasis(15, (0.0, 1.0))
    grid = np.linspace(0, 1, 401)
    errs = []
    for m in (25, 50, 100, 400):
        curves, Z = gaussian_process_curves(300, samples=(m, m), noise=0.1, seed=11)
        fit = curve_coefficients(curves, basis, smoothing=1e-7, backend=backend) @ basis.evaluate(grid).T
        errs.append(float(np.sqrt(np.mean((fit - Z @ kl_basis(grid, Z.shape[1]).T) ** 2))))
    assert all(b < 0.85 * a for a, b in itertools.pairwise(errs)), errs


BAD = [
    ("empty", lambda t, x: (t[:0], x[:0]), "curve 1 is empty"),
    ("unsorted", lambda t, x: (t[[0, 2, 1, *range(3, len(t))]], x),
     "curve 1: times must be strictly increasing, got unsorted"),
    ("duplicate", lambda t, x: (np.r_[t[:3], t[2], t[4:]], x),
     "curve 1: times must be strictly increasing, got duplicate"),
    ("nan value", lambda t, x: (t, np.r_[x[:4], np.nan, x[5:]]), "curve 1: values must be finite, got nan at sample 4"),
    ("inf time", lambda t, x: (np.r_[t[:-1], np.inf], x), "curve 1: times must be finite"),
    ("outside", lambda t, x: (t + 0.5, x), "curve 1: time .* lies outside the basis domain"),
    ("too few", lambda t, x: (t[:5], x[:5]), "curve 1 has 5 samples, fewer than the 10 basis functions"),
    ("singular", lambda t, x: (t[:12] * 0.3, x[:12]), "curve 1: the least-squares system is singular"),
]


@pytest.mark.parametrize(("name", "make", "match"), BAD, ids=[b[0] for b in BAD])
def test_bad_curves_are_refused_by_index(backend, name, make, match):
    t = np.linspace(0, 1, 30)
    curves = [(t, np.sin(t)), make(t, np.cos(t)), (t, t)]
    with pytest.raises(ValueError, match=match):
        curve_coefficients(curves, BASES["cubic"], backend=backend)


def test_a_penalty_rescues_short_curves(backend):
    t = np.linspace(0, 1, 30)
    curves = [(t, np.sin(t)), (t[:5], np.cos(t[:5])), (t[:12] * 0.3, t[:12])]
    c = curve_coefficients(curves, BASES["cubic"], smoothing=1e-4, backend=backend)
    assert np.all(np.isfinite(c))


@pytest.mark.parametrize(("kwargs", "err", "match"), [
    ({"smoothing": -1.0}, ValueError, "smoothing must be a finite number >= 0"),
    ({"smoothing": float("nan")}, ValueError, "smoothing"),
    ({"derivative": 1.5}, ValueError, "derivative must be an integer"),
    ({"n_threads": -2}, ValueError, "n_threads"),
    ({"backend": "cuda"}, ValueError, "curve_coefficients has no 'cuda' backend"),
])
def test_bad_arguments(kwargs, err, match):
    t = np.linspace(0, 1, 30)
    with pytest.raises(err, match=match):
        curve_coefficients([(t, t)], BASES["cubic"], **kwargs)


def test_bad_bases_and_forms():
    t = np.linspace(0, 1, 30)
    with pytest.raises(TypeError, match="basis must be a BSplineBasis or FourierBasis"):
        curve_coefficients([(t, t)], "bspline")
    with pytest.raises(ValueError, match="odd"):
        FourierBasis(6)
    with pytest.raises(ValueError, match="n_basis must be an integer in \\[order=4"):
        BSplineBasis(3)
    with pytest.raises(ValueError, match="domain_range"):
        BSplineBasis(8, (1.0, 0.0))
    with pytest.raises(ValueError, match="curve 0: t and x must be 1-D arrays of one length"):
        pack_curves([(t, t[:-1])])
    with pytest.raises(ValueError, match="curve 1: expected a \\(t, x\\) pair"):
        pack_curves([(t, t), t])
    with pytest.raises(ValueError, match="offsets must be non-decreasing"):
        as_packed(PackedCurves(np.array([0, 5, 3, 30]), t, t))
    with pytest.raises(ValueError, match="t and x must be 1-D of length offsets\\[-1\\]"):
        as_packed((np.array([0, 40]), t, t))


def test_equals_skfda_irregular_to_basis(backend, irregular):
    """scikit-fda's FDataIrregular.to_basis solves the same per-curve penalised problem: equal to 1e-8."""
    pytest.importorskip("skfda", reason="scikit-fda is the peer whose to_basis we must equal")
    from skfda.misc.operators import LinearDifferentialOperator
    from skfda.misc.regularization import L2Regularization
    from skfda.representation.basis import BSplineBasis as SkB
    from skfda.representation.irregular import FDataIrregular

    irr = FDataIrregular(start_indices=irregular.offsets[:-1], points=irregular.t, values=irregular.x)
    want = irr.to_basis(SkB((0.0, 1.0), n_basis=12), smoothing_parameter=1e-4,
                        regularization=L2Regularization(LinearDifferentialOperator(2))).coefficients
    got = curve_coefficients(irregular, BSplineBasis(12, (0.0, 1.0)), smoothing=1e-4, backend=backend)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


def test_sample_problems_are_reported_before_singular_solves(backend):
    """The reference checks every curve's samples before any solve; the cpp backend reports in the same order."""
    t = np.linspace(0, 1, 30)
    curves = [(t, t), (t[:5], t[:5]), (t, t), (t, np.r_[t[:-1], np.nan])]
    with pytest.raises(ValueError, match="curve 3: values must be finite"):
        curve_coefficients(curves, BASES["cubic"], backend=backend)


def test_native_binding_refuses_malformed_arguments():
    """The binding checks what the Python layer normally guarantees (shapes, dtypes, knots, finite matrices)."""
    why = _backend.why_unavailable("cpp")
    if why:
        pytest.skip(f"backend 'cpp' not available: {why}")
    C = _backend.native()
    b = BASES["cubic"]
    off, t, x = np.array([0, 3], dtype=np.int64), np.array([0.1, 0.5, 0.9]), np.ones(3)
    P, none = 1e-3 * np.eye(10), np.zeros((0, 0))

    def call(**kw):
        args = {"offsets": off, "t": t, "x": x, "kind": 0, "params": b.knots, "order": 4, "n_basis": 10, "a": 0.0,
                "b": 1.0, "penalty": P, "projection": none, "mean": np.zeros(0), **kw}
        return C.functional_coefficients(**args)

    coef, codes = call()
    assert codes.tolist() == [0]
    assert coef.shape == (1, 10)
    with pytest.raises(ValueError, match="offsets must start at 0 and end at len"):
        call(offsets=np.array([0, 4], dtype=np.int64))
    with pytest.raises(TypeError, match="offsets must be int64"):
        call(offsets=np.array([0, 3], dtype=np.int32))
    with pytest.raises(ValueError, match="params must hold the n_basis \\+ order = 14 knots"):
        call(params=b.knots[:-1])
    with pytest.raises(ValueError, match="strictly increasing"):
        call(params=np.r_[b.knots[:5], b.knots[4], b.knots[6:]])
    with pytest.raises(ValueError, match="penalty must have shape"):
        call(penalty=np.eye(9))
    with pytest.raises(ValueError, match="mean must be finite"):
        call(mean=np.full(10, np.nan))
    with pytest.raises(ValueError, match="projection must be finite"):
        call(projection=np.full((10, 2), np.inf), penalty=np.eye(2))
    with pytest.raises(ValueError, match="odd n_basis"):
        call(kind=1, params=np.array([1.0]))
    with pytest.raises(ValueError, match="n_threads"):
        call(n_threads=-1)
