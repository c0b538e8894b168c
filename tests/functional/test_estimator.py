"""The networks and the scikit-learn estimator: sklearn conventions (clone, pipelines, cross_val_score), the
input forms, reproducibility, the functional linear model against scikit-fda's LinearRegression and the
bottleneck network against the equal-width one on a multiple-index model."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the networks are torch modules")

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from fastnips.functional import (  # noqa: E402
    BottleneckNet,
    EqualWidthNet,
    FunctionalRegressor,
    functional_linear_response,
    gaussian_process_curves,
    multiple_index_response,
)
from fastnips.functional.estimator import CurveCoefficients  # noqa: E402

torch.set_num_threads(1)  # tiny models: one thread is the fastest on a shared machine and reproducible


def _data(n, seed, response=functional_linear_response, samples=(15, 40)):
    curves, Z = gaussian_process_curves(n, samples=samples, seed=seed)
    y, _ = response(Z, noise=0.1, seed=seed)
    return [curves.curve(i) for i in range(n)], y, curves


def test_networks_shapes_and_bottleneck_rank():
    net = BottleneckNet(12, n_index=2, width=8, depth=2)
    c = torch.randn(5, 12)
    assert net(c).shape == (5,)
    assert net.index(c).shape == (5, 2)
    # the prediction depends on c only through the 2 indices: moving c in the null space of A changes nothing
    A = net.bottleneck.weight.detach()
    null = torch.linalg.svd(A, full_matrices=True).Vh[2:]
    np.testing.assert_allclose(net(c + null[0]).detach(), net(c).detach(), atol=1e-5)
    assert EqualWidthNet(12, width=8, depth=3)(c).shape == (5,)
    with pytest.raises(ValueError, match="width must be an integer >= 1"):
        EqualWidthNet(12, width=0)


def test_sklearn_conventions():
    X, y, _ = _data(80, 0)
    est = FunctionalRegressor(epochs=3, width=8, domain_range=(0.0, 1.0))
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(X)
    a = est.fit(X, y).predict(X)
    b = clone(est).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)  # seeded: the same fit twice
    assert np.isfinite(est.score(X, y))
    scores = cross_val_score(FunctionalRegressor(epochs=3, width=8), X, y, cv=3)
    assert scores.shape == (3,)
    assert np.all(np.isfinite(scores))


def test_pipeline_of_coefficients_and_a_linear_model():
    X, y, _ = _data(150, 1)
    pipe = make_pipeline(CurveCoefficients(n_basis=10), StandardScaler(), Ridge(alpha=1e-3))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert np.all(scores > 0.9), scores  # the functional linear model: R^2 near 1


def test_inputs_multiple_predictors_and_skfda(backend):
    X, y, curves = _data(60, 2)
    est = FunctionalRegressor(epochs=2, width=8, domain_range=(0.0, 1.0), backend=backend).fit(X, y)
    assert est.predict(curves).shape == (60,)  # PackedCurves directly
    two = [[xi, xi] for xi in X]  # two predictors per subject
    est2 = FunctionalRegressor(epochs=2, width=8, domain_range=(0.0, 1.0), backend=backend).fit(two, y)
    assert est2.n_features_coef_ == 24
    with pytest.raises(ValueError, match="X has 1 functional predictors, the fit had 2"):
        est2.predict(X)
    skfda = pytest.importorskip("skfda", reason="FDataGrid / FDataIrregular inputs need scikit-fda")
    from skfda.representation.irregular import FDataIrregular

    irr = FDataIrregular(start_indices=curves.offsets[:-1], points=curves.t, values=curves.x)
    np.testing.assert_allclose(est.predict(irr), est.predict(X), atol=1e-6)
    grid = np.linspace(0.01, 0.99, 30)
    fd = skfda.FDataGrid(np.array([np.interp(grid, t, x) for t, x in X]), grid)
    assert est.predict(fd).shape == (60,)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"architecture": "wide"}, "architecture must be"),
    ({"epochs": 0}, "epochs must be an integer >= 1"),
    ({"validation_fraction": 0.7}, "validation_fraction"),
    ({"basis": "wavelet"}, "basis must be one of"),
])
def test_bad_parameters(kwargs, match):
    X, y, _ = _data(20, 0)
    with pytest.raises(ValueError, match=match):
        FunctionalRegressor(**kwargs).fit(X, y)


def test_bad_data():
    X, y, _ = _data(20, 0)
    with pytest.raises(ValueError, match="X has 20 subjects but y has 19"):
        FunctionalRegressor(epochs=1).fit(X, y[:-1])
    with pytest.raises(ValueError, match="y must be finite"):
        FunctionalRegressor(epochs=1).fit(X, np.r_[y[:-1], np.nan])
    t, x = X[4]
    with pytest.raises(ValueError, match="curve 4: values must be finite"):
        FunctionalRegressor(epochs=1).fit([*X[:4], (t, x * np.nan), *X[5:]], y)


def test_fpca_features():
    X, y, _ = _data(120, 4)
    est = FunctionalRegressor(basis="fpca", n_components=4, epochs=3, width=8, domain_range=(0.0, 1.0)).fit(X, y)
    assert est.n_features_coef_ == 4
    assert est.predict(X).shape == (120,)


def test_linear_model_matches_skfda_linear_regression():
    """y = <beta, X> + eps: the net's test MSE is within 1.5x of scikit-fda's functional LinearRegression (fitted on
    the same per-curve coefficients), and both explain > 95 % of the variance."""
    skfda = pytest.importorskip("skfda", reason="scikit-fda's LinearRegression is the peer")
    from skfda.ml.regression import LinearRegression
    from skfda.representation.basis import BSplineBasis as SkB

    X, y, _ = _data(400, 0)
    tr, te = slice(0, 300), slice(300, 400)
    est = FunctionalRegressor(domain_range=(0.0, 1.0), epochs=300).fit(X[tr], y[tr])
    ours = float(np.mean((est.predict(X[te]) - y[te]) ** 2))
    C = est.coefficients_.transform(X)
    fd = skfda.FDataBasis(SkB((0.0, 1.0), n_basis=12), C)
    lin = LinearRegression().fit(fd[tr], y[tr])
    peer = float(np.mean((lin.predict(fd[te]) - y[te]) ** 2))
    assert ours < 1.5 * peer, (ours, peer)
    assert max(ours, peer) < 0.05 * np.var(y), (ours, peer, np.var(y))


@pytest.mark.slow
def test_bottleneck_beats_equal_width_on_a_multiple_index_model():
    """y = sin(2 u1) + u2^2 / 2 - 1/2 with two functional indices, n = 200 training curves: over seeds 0-4 the
    bottleneck (d = 2) has the lower test MSE on average and in at least 4 of 5 seeds."""
    mse = {"equal_width": [], "bottleneck": []}
    for seed in range(5):
        X, y, _ = _data(700, seed, multiple_index_response)
        for arch in mse:
            est = FunctionalRegressor(architecture=arch, domain_range=(0.0, 1.0), epochs=400, seed=seed)
            est.fit(X[:200], y[:200])
            mse[arch].append(float(np.mean((est.predict(X[200:]) - y[200:]) ** 2)))
    ew, bn = np.array(mse["equal_width"]), np.array(mse["bottleneck"])
    assert bn.mean() < ew.mean(), mse
    assert np.sum(bn < ew) >= 4, mse
